//! One training iteration of a job as arithmetic: model FLOPs, compute per
//! micro-batch per pipeline stage, the communication as a list of typed
//! operations ([`CommOp`]), the pipeline bubble, and an analytical iteration time
//! behind a [`Network`] trait whose ideal implementation a network model replaces.
//!
//! Conventions (../shared/reference/training-workloads.md §0, §3, §4):
//! - FLOPs are PaLM's model FLOPs (App. B): `6·N_act` per token plus attention
//!   scores `6·L·a·s·(d_qk + d_v)` per token; for `d_qk = d_v = d_h` that is
//!   PaLM's `12·L·a·d_h·s` (the full square, no causal halving). No
//!   recomputation: hardware FLOPs equal model FLOPs.
//! - Activations, gradients and parameters travel as BF16 (`β` = 2 bytes).
//! - The operations are those of one GPU on the busiest pipeline stage
//!   (`⌈L/p⌉` layers; Llama 3 §3.3.2 takes a layer off the first and last stages so
//!   its interior stages are the busiest), which paces the pipeline.
//! - The data-parallel collectives are counted once per iteration, as ZeRO §7
//!   counts them (gradients accumulate over the micro-batches).

use crate::comm::{CommKind, CommOp, Group, Link, Overlap, Phase};
use crate::job::Job;
use crate::parallel::Sharding;

/// Bytes per element on the wire (BF16).
pub const BF16: u64 = 2;

/// Model FLOPs of one token, forward and backward (PaLM convention).
pub fn flops_per_token(job: &Job) -> f64 {
    let m = &job.model;
    let attn = 6.0 * f64::from(m.layers) * f64::from(m.heads) * job.seq_len as f64 * (m.head_qk() + m.head_v()) as f64;
    6.0 * m.active_params() as f64 + attn
}

/// Model FLOPs of one iteration (`global_batch · seq_len` tokens).
pub fn flops_per_iteration(job: &Job) -> f64 {
    flops_per_token(job) * job.tokens() as f64
}

/// The pipeline bubble: idle time over ideal compute time, `(p−1)/m` for 1F1B and
/// `(p−1)/(v·m)` interleaved (Narayanan et al. SC'21 §2.2).
pub fn bubble(job: &Job) -> f64 {
    job.parallel.schedule.bubble(job.parallel.pp, job.micro_batches())
}

/// One activation tensor between layers on one rank, bytes: `b·(s/c)·h·β`.
pub fn activation_bytes(job: &Job) -> u64 {
    job.micro_batch * job.seq_len / u64::from(job.parallel.cp) * job.model.hidden * BF16
}

/// Achieved model TFLOP/s per GPU of `job` at an iteration time.
pub fn tflops_per_gpu(job: &Job, iteration_s: f64) -> f64 {
    flops_per_iteration(job) / f64::from(job.gpus) / iteration_s / 1e12
}

/// What one GPU sends in one iteration, bytes, by the parallelism that sends it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BytesPerGpu {
    /// Tensor parallel.
    pub tp: f64,
    /// Pipeline point-to-point.
    pub pp: f64,
    /// Data parallel, dense and expert.
    pub dp: f64,
    /// Expert parallel (all-to-all).
    pub ep: f64,
    /// Context parallel.
    pub cp: f64,
}

/// Time of one communication operation on some network.
pub trait Network {
    /// Seconds one occurrence of `op` takes, start to finish, for the rank that
    /// issued it.
    fn op_time_s(&self, op: &CommOp) -> f64;
}

/// A network without contention: a rank sends at `net_gbs` across the network
/// and at `nvlink_gbs` inside an NVLink domain, after a fixed latency per
/// operation. An operation takes `latency + sent / bandwidth`, i.e. its bytes at
/// the nccl-tests bus bandwidth (`CommKind::bus_factor`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdealNetwork {
    /// Scale-out bandwidth per GPU and direction, GB/s (10^9 B/s).
    pub net_gbs: f64,
    /// NVLink bandwidth per GPU and direction, GB/s.
    pub nvlink_gbs: f64,
    /// Fixed cost per operation, seconds.
    pub latency_s: f64,
}

impl IdealNetwork {
    /// `net_gbs` per GPU across the network, the GPU's NVLink inside, no latency.
    pub fn new(gpu: &crate::gpu::Gpu, net_gbs: f64) -> IdealNetwork {
        IdealNetwork {
            net_gbs,
            nvlink_gbs: gpu.nvlink_gbs,
            latency_s: 0.0,
        }
    }
}

impl Network for IdealNetwork {
    fn op_time_s(&self, op: &CommOp) -> f64 {
        let gbs = match op.link {
            Link::NvLink => self.nvlink_gbs,
            Link::Network => self.net_gbs,
        };
        self.latency_s + op.sent() / (gbs * 1e9)
    }
}

/// Compute of one micro-batch on one GPU of the busiest stage, FLOPs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StageCompute {
    /// Forward pass (a third of the total: the backward computes two GEMMs per
    /// forward GEMM, input and weight gradients).
    pub forward_flops: f64,
    /// Backward pass.
    pub backward_flops: f64,
}

/// An iteration's time and where it goes, seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IterationTime {
    /// Compute of every micro-batch on the busiest stage.
    pub compute_s: f64,
    /// Pipeline bubble: idle time at fill and drain.
    pub bubble_s: f64,
    /// Communication on the critical path: exposed operations of every
    /// micro-batch, and whatever overlapped operations do not hide.
    pub exposed_comm_s: f64,
    /// The sum.
    pub total_s: f64,
}

/// Why a kernel efficiency could not be fitted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FitError {
    /// A published figure that is not a positive number.
    #[error("fit a kernel efficiency: target {0} TFLOP/s per GPU is not a positive number")]
    BadTarget(f64),
    /// A figure above what the model reaches at 100% efficiency.
    #[error(
        "fit a kernel efficiency: {target} TFLOP/s per GPU is above the {max:.1} the model reaches at 100% efficiency"
    )]
    Unreachable {
        /// The published figure.
        target: f64,
        /// The model's ceiling.
        max: f64,
    },
}

/// One iteration of a job, as one GPU of the busiest stage sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Iteration {
    /// Model FLOPs of the whole job's iteration.
    pub flops: f64,
    /// GPUs of the job.
    pub gpus: u32,
    /// Dense BF16 peak of one GPU, FLOP/s.
    pub peak_flops: f64,
    /// Pipeline stages `p`.
    pub pp: u32,
    /// Model chunks per stage `v`.
    pub virtual_stages: u32,
    /// Micro-batches per pipeline `m`.
    pub micro_batches: u64,
    /// Layers on the busiest stage, `⌈L/p⌉`.
    pub stage_layers: u32,
    /// Compute per micro-batch.
    pub stage: StageCompute,
    /// Communication of one GPU per iteration.
    pub ops: Vec<CommOp>,
}

impl Iteration {
    /// Build the iteration of a checked job.
    pub fn of(job: &Job) -> Iteration {
        let model = &job.model;
        let p = &job.parallel;
        let (t, pp, c) = (u64::from(p.tp), u64::from(p.pp), u64::from(p.cp));
        let m = job.micro_batches();
        let v = p.schedule.virtual_stages();
        let stage_layers = model.layers.div_ceil(p.pp);
        let moe_stage_layers = u64::from(model.moe_layers().div_ceil(p.pp));

        // Compute: the busiest stage runs ⌈L/p⌉ layers, or its share of the
        // whole model when the embeddings outweigh that (p = 1).
        let per_token = flops_per_token(job);
        let outside_layers = 6.0 * (2 * model.vocab * model.hidden + model.hidden) as f64;
        let per_layer = (per_token - outside_layers) / f64::from(model.layers);
        let stage_per_token = (per_layer * f64::from(stage_layers)).max(per_token / pp as f64);
        let per_micro_batch = stage_per_token * (job.micro_batch * job.seq_len) as f64 / (t * c) as f64;
        let stage = StageCompute {
            forward_flops: per_micro_batch / 3.0,
            backward_flops: per_micro_batch * 2.0 / 3.0,
        };

        let mut ops = Vec::new();
        let dp = job.dp();
        let domain = u64::from(job.gpu.nvlink_domain);
        let link = |g: Group| {
            if domain.is_multiple_of(p.span(g, dp)) {
                Link::NvLink
            } else {
                Link::Network
            }
        };
        let layer_ops = m * u64::from(stage_layers);
        let s_act = activation_bytes(job);
        let mut push = |label: &str, kind, group, ranks: u64, bytes: u64, count: u64, phase, overlap| {
            if ranks > 1 && count > 0 && bytes > 0 {
                ops.push(CommOp {
                    label: label.into(),
                    kind,
                    group,
                    // every group size divides the job's GPUs, a u32
                    ranks: ranks as u32,
                    bytes,
                    count,
                    phase,
                    overlap,
                    link: link(group),
                });
            }
        };
        use CommKind::*;
        use Overlap::Exposed;
        use Phase::{Backward, Forward};

        // Tensor parallel, per layer: two all-reduces of an activation forward, two
        // backward (Korthikanti et al. §4.2.1); with sequence parallelism each
        // becomes a reduce-scatter and an all-gather, and backward re-gathers the
        // two sequence-sharded inputs of the column-parallel GEMMs (§4.2.2).
        if p.sequence_parallel {
            push("tp", AllGather, Group::Tp, t, s_act, 2 * layer_ops, Forward, Exposed);
            push(
                "tp",
                ReduceScatter,
                Group::Tp,
                t,
                s_act,
                2 * layer_ops,
                Forward,
                Exposed,
            );
            push("tp", AllGather, Group::Tp, t, s_act, 4 * layer_ops, Backward, Exposed);
            push(
                "tp",
                ReduceScatter,
                Group::Tp,
                t,
                s_act,
                2 * layer_ops,
                Backward,
                Exposed,
            );
        } else {
            push("tp", AllReduce, Group::Tp, t, s_act, 2 * layer_ops, Forward, Exposed);
            push("tp", AllReduce, Group::Tp, t, s_act, 2 * layer_ops, Backward, Exposed);
        }

        // Context parallel, per layer: this rank's K and V chunk is
        // `b·(s/c)·(g/t)·(d_qk + d_v)·β`; forward all-gathers them, backward gathers
        // them again and reduce-scatters dK/dV (Megatron's context-parallel guide;
        // Llama 3 §3.3.2 all-gathers without ring overlap).
        let kv_chunk = job.micro_batch * job.seq_len / c * u64::from(model.kv_heads) / t
            * (model.head_qk() + model.head_v())
            * BF16;
        push(
            "cp-kv",
            AllGather,
            Group::Cp,
            c,
            c * kv_chunk,
            layer_ops,
            Forward,
            Exposed,
        );
        push(
            "cp-kv",
            AllGather,
            Group::Cp,
            c,
            c * kv_chunk,
            layer_ops,
            Backward,
            Exposed,
        );
        push(
            "cp-dkv",
            ReduceScatter,
            Group::Cp,
            c,
            c * kv_chunk,
            layer_ops,
            Backward,
            Exposed,
        );

        // Expert parallel, per MoE layer: dispatch and combine all-to-alls forward,
        // their gradients backward, each of the `T·k·h·β` bytes of the tokens this
        // rank routes (dropless), times the router skew for the busiest rank.
        if let Some(moe) = &model.moe {
            let tokens = job.micro_batch * job.seq_len / c / if p.sequence_parallel { t } else { 1 };
            let bytes = (tokens * u64::from(moe.top_k) * model.hidden * BF16) as f64 * job.router_skew;
            let n = m * moe_stage_layers;
            push(
                "ep",
                AllToAll,
                Group::Ep,
                u64::from(p.ep),
                bytes.round() as u64,
                2 * n,
                Forward,
                Exposed,
            );
            push(
                "ep",
                AllToAll,
                Group::Ep,
                u64::from(p.ep),
                bytes.round() as u64,
                2 * n,
                Backward,
                Exposed,
            );
        }

        // Pipeline: per micro-batch and model chunk, one activation forward and one
        // gradient backward across each stage boundary, split over the TP ranks
        // (SC'21 §4.1 scatter/gather; AICB's `pp_comm` divides by t the same way).
        push(
            "pp",
            SendRecv,
            Group::Pp,
            2u64.min(pp),
            s_act / t,
            m * u64::from(v),
            Forward,
            Exposed,
        );
        push(
            "pp",
            SendRecv,
            Group::Pp,
            2u64.min(pp),
            s_act / t,
            m * u64::from(v),
            Backward,
            Exposed,
        );

        // Data parallel: gradients and parameters of this rank's shard, dense over
        // dp × cp (Megatron's `intra_dp_cp_group`), experts over dp × cp / ep.
        let dp_cp = u64::from(dp) * c;
        let e = u64::from(p.ep);
        let (dense, experts) = if e > 1 {
            (model.params() - model.expert_params(), model.expert_params())
        } else {
            (model.params(), 0)
        };
        let shards = [
            ("dp", Group::Dp, dp_cp, dense * BF16 / (t * pp)),
            ("expert-dp", Group::ExpertDp, dp_cp / e, experts * BF16 / (t * pp * e)),
        ];
        for (label, group, n, bytes) in shards {
            let grads = format!("{label}-grads");
            let params = format!("{label}-params");
            match p.sharding {
                Sharding::None => push(&grads, AllReduce, group, n, bytes, 1, Backward, Overlap::Backward),
                Sharding::Zero1 | Sharding::Zero2 => {
                    push(&grads, ReduceScatter, group, n, bytes, 1, Backward, Overlap::Backward);
                    push(&params, AllGather, group, n, bytes, 1, Forward, Overlap::Forward);
                }
                Sharding::Zero3 | Sharding::Fsdp => {
                    push(&params, AllGather, group, n, bytes, 1, Forward, Overlap::Forward);
                    push(&params, AllGather, group, n, bytes, 1, Backward, Overlap::Backward);
                    push(&grads, ReduceScatter, group, n, bytes, 1, Backward, Overlap::Backward);
                }
                Sharding::FsdpNoReshard => {
                    push(&params, AllGather, group, n, bytes, 1, Forward, Overlap::Forward);
                    push(&grads, ReduceScatter, group, n, bytes, 1, Backward, Overlap::Backward);
                }
            }
        }

        Iteration {
            flops: flops_per_iteration(job),
            gpus: job.gpus,
            peak_flops: job.gpu.bf16_tflops * 1e12,
            pp: p.pp,
            virtual_stages: v,
            micro_batches: m,
            stage_layers,
            stage,
            ops,
        }
    }

    /// Pipeline bubble over ideal compute: `(p − 1) / (v·m)`.
    pub fn bubble(&self) -> f64 {
        if self.micro_batches == 0 {
            return 0.0;
        }
        f64::from(self.pp.saturating_sub(1)) / (f64::from(self.virtual_stages.max(1)) * self.micro_batches as f64)
    }

    /// Bytes one GPU sends per iteration, by parallelism.
    pub fn bytes_per_gpu(&self) -> BytesPerGpu {
        let mut b = BytesPerGpu::default();
        for op in &self.ops {
            let slot = match op.group {
                Group::Tp => &mut b.tp,
                Group::Pp => &mut b.pp,
                Group::Dp | Group::ExpertDp => &mut b.dp,
                Group::Ep => &mut b.ep,
                Group::Cp => &mut b.cp,
            };
            *slot += op.sent_per_iteration();
        }
        b
    }

    /// Forward and backward compute of one micro-batch on the busiest stage at
    /// `efficiency` of the GPU's peak, seconds.
    pub fn compute_per_micro_batch_s(&self, efficiency: f64) -> (f64, f64) {
        let rate = self.peak_flops * efficiency;
        (self.stage.forward_flops / rate, self.stage.backward_flops / rate)
    }

    /// Iteration time at `efficiency` (achieved over peak FLOP/s in the kernels)
    /// with communication priced by `net`:
    ///
    /// ```text
    /// slot  = t_f + t_b + exposed comm of one micro-batch
    /// total = m·slot·(1 + bubble)
    ///       + max(0, backward-overlapped comm − t_b) + max(0, forward-overlapped comm − t_f)
    /// ```
    ///
    /// Exposed operations stretch every micro-batch, and the fill and drain of the
    /// pipeline with it; gradient reduction hides behind the last micro-batch's
    /// backward, parameter gathering behind the first one's forward.
    pub fn time(&self, net: &dyn Network, efficiency: f64) -> IterationTime {
        let m = self.micro_batches.max(1) as f64;
        let (t_f, t_b) = self.compute_per_micro_batch_s(efficiency);
        let (mut exposed, mut behind_b, mut behind_f) = (0.0, 0.0, 0.0);
        for op in &self.ops {
            let s = net.op_time_s(op) * op.count as f64;
            match op.overlap {
                Overlap::Exposed => exposed += s / m,
                Overlap::Backward => behind_b += s,
                Overlap::Forward => behind_f += s,
            }
        }
        let bubble = self.bubble();
        let slot = t_f + t_b + exposed;
        let left = (behind_b - t_b).max(0.0) + (behind_f - t_f).max(0.0);
        IterationTime {
            compute_s: m * (t_f + t_b),
            bubble_s: m * slot * bubble,
            exposed_comm_s: m * exposed + left,
            total_s: m * slot * (1.0 + bubble) + left,
        }
    }

    /// Achieved model TFLOP/s per GPU at an iteration time.
    pub fn tflops_per_gpu(&self, iteration_s: f64) -> f64 {
        self.flops / f64::from(self.gpus) / iteration_s / 1e12
    }

    /// The kernel efficiency at which this iteration reaches `tflops_per_gpu` on
    /// `net` (bisection; the achieved rate rises with efficiency).
    pub fn fit_efficiency(&self, net: &dyn Network, tflops_per_gpu: f64) -> Result<f64, FitError> {
        if !(tflops_per_gpu.is_finite() && tflops_per_gpu > 0.0) {
            return Err(FitError::BadTarget(tflops_per_gpu));
        }
        let rate = |eff: f64| self.tflops_per_gpu(self.time(net, eff).total_s);
        let max = rate(1.0);
        if tflops_per_gpu > max {
            return Err(FitError::Unreachable {
                target: tflops_per_gpu,
                max,
            });
        }
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if rate(mid) < tflops_per_gpu {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;

    fn job(toml: &str) -> Job {
        JobSpec::from_toml(toml).unwrap().check(1 << 20).unwrap()
    }

    #[test]
    fn a_single_gpu_job_has_no_communication_and_no_bubble() {
        let j =
            job("name = \"x\"\nmodel = \"llama3-8b\"\ngpu = \"h100\"\ngpus = 1\nseq_len = 4096\nglobal_batch = 8\n");
        let it = Iteration::of(&j);
        assert!(it.ops.is_empty(), "{:?}", it.ops);
        assert_eq!(it.bubble(), 0.0);
        // the whole model on one GPU: stage compute × micro-batches = the iteration
        let total = (it.stage.forward_flops + it.stage.backward_flops) * it.micro_batches as f64;
        assert!((total / it.flops - 1.0).abs() < 1e-12);
        let t = it.time(&IdealNetwork::new(&j.gpu, 50.0), 0.5);
        assert!((it.tflops_per_gpu(t.total_s) - 989.0 * 0.5).abs() < 1e-9);
    }
}
