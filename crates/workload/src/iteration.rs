//! One training iteration as arithmetic: FLOPs, the bytes each GPU sends per
//! parallelism, and the pipeline bubble.
//!
//! Conventions (../shared/reference/training-workloads.md §0, §3, §4):
//! - FLOPs are PaLM's model FLOPs: `6·N_act` per token plus attention scores
//!   `6·L·a·s·(d_qk + d_v)` per token (for `d_qk = d_v = d_h` this is PaLM's
//!   `12·L·a·d_h·s`, the full square, no causal halving).
//! - Bytes are what one GPU sends, with NCCL's ring factors: all-reduce of `S`
//!   among `n` sends `2(n−1)/n·S`; reduce-scatter, all-gather and all-to-all
//!   `(n−1)/n·S`; send/recv `S`.
//! - Activations are BF16 (`β` = 2 bytes), as are gradients and parameters on
//!   the wire.

use crate::job::{Job, Schedule, Sharding};

/// Bytes per element on the wire (BF16).
pub const BF16: u64 = 2;

/// Model FLOPs of one token, forward and backward.
pub fn flops_per_token(job: &Job) -> f64 {
    let m = &job.model;
    let attn = 6.0 * f64::from(m.layers) * f64::from(m.heads) * job.seq_len as f64 * (m.head_qk() + m.head_v()) as f64;
    6.0 * m.active_params() as f64 + attn
}

/// Model FLOPs of one iteration (`global_batch · seq_len` tokens).
pub fn flops_per_iteration(job: &Job) -> f64 {
    flops_per_token(job) * (job.global_batch * job.seq_len) as f64
}

/// The pipeline bubble: idle time over ideal compute time, `(p−1)/m` for 1F1B and
/// `(p−1)/(v·m)` interleaved (Narayanan et al. SC'21 §2.2).
pub fn bubble(job: &Job) -> f64 {
    let p = f64::from(job.parallel.pp);
    let m = job.micro_batches() as f64;
    match job.parallel.schedule {
        Schedule::OneFOneB => (p - 1.0) / m,
        Schedule::Interleaved(v) => (p - 1.0) / (f64::from(v) * m),
    }
}

/// What one GPU sends in one iteration, bytes, by parallelism.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BytesPerGpu {
    /// Tensor parallel: 4 all-reduces of one activation per layer and micro-batch
    /// (2 forward, 2 backward; Korthikanti et al. §4.2.2), inside NVLink.
    pub tp: f64,
    /// Pipeline: one activation forward and one gradient backward per micro-batch
    /// at an interior stage boundary, split over the TP ranks (`S_act/t` each);
    /// `v` times that interleaved.
    pub pp: f64,
    /// Data parallel: the gradient and parameter collectives of the sharding.
    pub dp: f64,
    /// Expert parallel: 4 all-to-alls per MoE layer and micro-batch (dispatch and
    /// combine, forward and backward) of `T·k·h` elements.
    pub ep: f64,
    /// Context parallel: K and V chunks gathered in forward and again in
    /// backward, dK/dV reduce-scattered: `3·(c−1)` chunks per layer and micro-batch.
    pub cp: f64,
}

/// One activation tensor between layers on one rank, bytes: `b·(s/c)·h·β`.
pub fn activation_bytes(job: &Job) -> f64 {
    (job.micro_batch * job.seq_len / u64::from(job.parallel.cp) * job.model.hidden * BF16) as f64
}

/// The bytes each GPU sends per iteration.
pub fn bytes_per_gpu(job: &Job) -> BytesPerGpu {
    let p = &job.parallel;
    let m = &job.model;
    let (t, pp, c, e) = (f64::from(p.tp), f64::from(p.pp), f64::from(p.cp), f64::from(p.ep));
    let d = job.dp() as f64;
    let mb = job.micro_batches() as f64;
    let s_act = activation_bytes(job);
    let layers_per_stage = f64::from(m.layers) / pp;
    let tp = if p.tp > 1 {
        mb * layers_per_stage * 4.0 * 2.0 * (t - 1.0) / t * s_act
    } else {
        0.0
    };
    let v = match p.schedule {
        Schedule::OneFOneB => 1.0,
        Schedule::Interleaved(v) => f64::from(v),
    };
    let pp_bytes = if p.pp > 1 { 2.0 * mb * v * s_act / t } else { 0.0 };
    // dense parameters per model-parallel shard; experts are sharded over ep too
    let dense = (m.params() - m.expert_params()) as f64 / (t * pp);
    let experts = m.expert_params() as f64 / (t * pp * e);
    let ring = |n: f64| if n > 1.0 { (n - 1.0) / n } else { 0.0 };
    let factor = match p.sharding {
        Sharding::Ddp | Sharding::Zero1 | Sharding::FsdpNoReshard => 2.0,
        Sharding::Zero3 => 3.0,
    };
    // dense gradients reduce over dp × cp; expert gradients over the expert-data-parallel group
    let dp = factor * ring(d * c) * dense * BF16 as f64 + factor * ring(d * c / e) * experts * BF16 as f64;
    let ep = match &m.moe {
        Some(moe) if p.ep > 1 => {
            let tokens = (job.micro_batch * job.seq_len) as f64 / c;
            mb * (f64::from(m.moe_layers()) / pp)
                * 4.0
                * ring(e)
                * tokens
                * f64::from(moe.top_k)
                * m.hidden as f64
                * BF16 as f64
        }
        _ => 0.0,
    };
    let cp = if p.cp > 1 {
        let kv_heads = f64::from(m.kv_heads) / t;
        let chunk = 2.0 * (job.micro_batch * job.seq_len) as f64 / c * kv_heads * m.head_qk() as f64 * BF16 as f64;
        mb * layers_per_stage * 3.0 * (c - 1.0) * chunk
    } else {
        0.0
    };
    BytesPerGpu {
        tp,
        pp: pp_bytes,
        dp,
        ep,
        cp,
    }
}

/// Iteration time on an ideal network, seconds: compute at `efficiency` of the
/// GPU's peak, stretched by the pipeline bubble, plus the data-parallel and
/// pipeline traffic not hidden behind compute sent at `net_gbs` GB/s per GPU
/// (`exposed` of it; 0 when the network keeps up with overlap). A network model
/// replaces the last term with measured collective times.
pub fn ideal_iteration_s(job: &Job, efficiency: f64, net_gbs: f64, exposed: f64) -> f64 {
    let per_gpu = flops_per_iteration(job) / f64::from(job.gpus);
    let compute = per_gpu / (job.gpu.bf16_tflops * 1e12 * efficiency) * (1.0 + bubble(job));
    let b = bytes_per_gpu(job);
    compute + exposed * (b.dp + b.pp + b.ep + b.cp) / (net_gbs * 1e9)
}

/// Achieved model TFLOP/s per GPU at an iteration time.
pub fn tflops_per_gpu(job: &Job, iteration_s: f64) -> f64 {
    flops_per_iteration(job) / f64::from(job.gpus) / iteration_s / 1e12
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobSpec, Parallelism};

    /// A job of `model` on `gpus` with (tp, pp, cp, ep), `seq` tokens, `batch` sequences.
    fn job(model: &str, gpus: u32, [tp, pp, cp, ep]: [u32; 4], seq: u64, batch: u64) -> Job {
        JobSpec {
            name: "t".into(),
            model: Some(model.into()),
            custom_model: None,
            gpu: "h100".into(),
            gpus,
            parallel: Parallelism {
                tp,
                pp,
                cp,
                ep,
                schedule: Schedule::OneFOneB,
                sharding: Sharding::FsdpNoReshard,
            },
            seq_len: seq,
            global_batch: batch,
            micro_batch: 1,
        }
        .check(1 << 20)
        .unwrap()
    }

    fn close(got: f64, want: f64, tol: f64) {
        assert!(((got - want) / want).abs() <= tol, "got {got:e}, want {want:e}");
    }

    /// Llama 3 405B at 8K, 2,048 sequences: 2.638×10^12 FLOPs per token and
    /// 4.43×10^19 per iteration (training-workloads.md §3.3, PaLM convention).
    #[test]
    fn flops_match_the_closed_form() {
        let j = job("llama3-405b", 8192, [8, 16, 1, 1], 8192, 2048);
        // the closed form, written out: 6N + 12·L·a·d_h·s
        let n = 405_853_388_800f64;
        let closed = 6.0 * n + 12.0 * 126.0 * 128.0 * 128.0 * 8192.0;
        close(flops_per_token(&j), closed, 1e-12);
        close(flops_per_token(&j), 2.638e12, 0.02);
        close(flops_per_iteration(&j), 4.43e19, 0.02);
        // MoE counts active parameters: Mixtral at 4K
        let x = job("mixtral-8x7b", 64, [1, 1, 1, 8], 4096, 64);
        let closed = 6.0 * 12_879_925_248f64 + 12.0 * 32.0 * 32.0 * 128.0 * 4096.0;
        close(flops_per_token(&x), closed, 1e-12);
    }

    #[test]
    fn bubble_of_1f1b_and_interleaved() {
        let mut j = job("llama3-405b", 8192, [8, 16, 1, 1], 8192, 2048);
        assert_eq!(j.micro_batches(), 32);
        close(bubble(&j), 15.0 / 32.0, 1e-12);
        j.parallel.schedule = Schedule::Interleaved(4);
        close(bubble(&j), 15.0 / 128.0, 1e-12);
    }

    /// training-workloads.md §4.6: Llama 3 405B on 8,192 GPUs (TP8 PP16 DP64,
    /// b = 1, m = 32): TP ≈ 441 GiB, PP 1 GiB each way, FSDP ≈ 12.5 GB per GPU.
    #[test]
    fn bytes_per_gpu_match_the_worked_example() {
        let j = job("llama3-405b", 8192, [8, 16, 1, 1], 8192, 2048);
        let b = bytes_per_gpu(&j);
        let gib = (1u64 << 30) as f64;
        // 4 × 2·7/8 × 256 MiB × 7.875 layers × 32
        close(
            b.tp,
            4.0 * 2.0 * 7.0 / 8.0 * 256.0 * (1 << 20) as f64 * 7.875 * 32.0,
            1e-12,
        );
        close(b.tp / gib, 441.0, 0.01);
        close(b.pp / gib, 2.0, 1e-12);
        close(b.dp, 12.5e9, 0.02);
        assert_eq!((b.ep, b.cp), (0.0, 0.0));
        // all-to-all of an MoE layer: 4 × (e−1)/e × tokens·k·h·2 per layer and micro-batch
        let x = job("mixtral-8x7b", 64, [1, 1, 1, 8], 4096, 64);
        let per_layer = 4.0 * 7.0 / 8.0 * 4096.0 * 2.0 * 4096.0 * 2.0;
        close(bytes_per_gpu(&x).ep, per_layer * 32.0 * x.micro_batches() as f64, 1e-12);
        // context parallel: 3·(c−1) KV chunks of 2·b·(s/c)·(g/t)·d_h·2 per layer
        let c = job("llama3-405b", 16_384, [8, 16, 16, 1], 131_072, 128);
        let chunk = 2.0 * 8192.0 * 1.0 * 128.0 * 2.0;
        close(
            bytes_per_gpu(&c).cp,
            c.micro_batches() as f64 * 7.875 * 3.0 * 15.0 * chunk,
            1e-12,
        );
    }

    #[test]
    fn achieved_tflops_is_flops_over_time() {
        let j = job("llama3-405b", 8192, [8, 16, 1, 1], 8192, 2048);
        // 4.43e19 FLOPs over 8,192 GPUs in 12.6 s is the paper's 430 TFLOP/s per GPU (§3.3)
        close(tflops_per_gpu(&j, 12.6), 430.0, 0.02);
        let t = ideal_iteration_s(&j, 0.5, 50.0, 0.0);
        close(tflops_per_gpu(&j, t), 989.0 * 0.5 / (1.0 + 15.0 / 32.0), 1e-9);
    }
}
