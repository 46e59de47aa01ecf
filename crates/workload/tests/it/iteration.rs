//! FLOPs, bytes per GPU of every collective, bubbles and the ideal iteration time,
//! each against a formula written out here from training-workloads.md.

use workload::comm::{CommKind, CommOp, Group, Link, Overlap, Phase};
use workload::iteration::{self, IdealNetwork, Iteration, Network};
use workload::job::{Job, JobSpec};

use crate::close;

const MIB: f64 = (1u64 << 20) as f64;

/// A job of `model` on `gpus` H100s; `parallel` is the TOML body of `[parallel]`.
fn job(model: &str, gpus: u32, seq: u64, batch: u64, parallel: &str) -> Job {
    JobSpec::from_toml(&format!(
        "name = \"t\"\nmodel = \"{model}\"\ngpu = \"h100\"\ngpus = {gpus}\nseq_len = {seq}\nglobal_batch = {batch}\n[parallel]\n{parallel}\n"
    ))
    .unwrap()
    .check(1 << 20)
    .unwrap()
}

fn llama405(parallel: &str) -> Job {
    job("llama3-405b", 8192, 8192, 2048, &format!("tp = 8\npp = 16\n{parallel}"))
}

/// Bytes one GPU sends per iteration in `group` ops of `kind`.
fn sent(it: &Iteration, group: Group, kind: CommKind) -> f64 {
    it.ops
        .iter()
        .filter(|o| o.group == group && o.kind == kind)
        .map(CommOp::sent_per_iteration)
        .sum()
}

#[test]
fn flops_per_iteration_match_the_closed_form() {
    let j = llama405("");
    // PaLM: 6N + 12·L·a·d_h·s per token (training-workloads.md §3.1)
    let n = 405_853_388_800f64;
    let per_token = 6.0 * n + 12.0 * 126.0 * 128.0 * 128.0 * 8192.0;
    close(iteration::flops_per_token(&j), per_token, 0.02);
    close(iteration::flops_per_iteration(&j), per_token * 2048.0 * 8192.0, 0.02);
    // §3.3's worked figures: 2.638×10^12 per token, 4.43×10^19 per iteration
    close(iteration::flops_per_token(&j), 2.638e12, 0.02);
    close(Iteration::of(&j).flops, 4.43e19, 0.02);

    // MoE counts active parameters: Mixtral at 4K
    let x = job("mixtral-8x7b", 64, 4096, 64, "ep = 8");
    let per_token = 6.0 * 12_879_925_248f64 + 12.0 * 32.0 * 32.0 * 128.0 * 4096.0;
    close(iteration::flops_per_token(&x), per_token, 0.02);

    // DeepSeek-V3 with MLA: scores over d_qk = 192 and values over d_v = 128
    let d = job("deepseek-v3", 2048, 4096, 4096, "pp = 16\nep = 64");
    let per_token = 6.0 * 37e9 + 6.0 * 61.0 * 128.0 * 4096.0 * (192.0 + 128.0);
    close(iteration::flops_per_token(&d), per_token, 0.02);
}

#[test]
fn stage_compute_adds_up_to_the_iteration() {
    // 80 layers over 4 stages: 20 each; the stage's share is at least a quarter
    let j = job("llama3-70b", 64, 8192, 128, "tp = 4\npp = 4\ncp = 2");
    let it = Iteration::of(&j);
    assert_eq!(it.stage_layers, 20);
    let stage = it.stage.forward_flops + it.stage.backward_flops;
    close(it.stage.backward_flops, 2.0 * it.stage.forward_flops, 1e-12);
    // per GPU over all micro-batches ≥ the iteration's FLOPs / GPUs
    let per_gpu = stage * it.micro_batches as f64;
    assert!(per_gpu >= it.flops / 64.0 * (1.0 - 1e-12));
    close(per_gpu, it.flops / 64.0, 0.03);
    // compute time at an efficiency: FLOPs / (peak · efficiency)
    let (f, b) = it.compute_per_micro_batch_s(0.5);
    close(f + b, stage / (989e12 * 0.5), 1e-12);
}

#[test]
fn tensor_parallel_bytes_per_gpu() {
    // 405B, TP8: 4 all-reduces per layer and micro-batch of S_act = 1·8192·16384·2
    // = 256 MiB; the busiest stage has ⌈126/16⌉ = 8 layers; m = 32
    let it = Iteration::of(&llama405(""));
    let s_act = 256.0 * MIB;
    let want = 32.0 * 8.0 * 4.0 * 2.0 * 7.0 / 8.0 * s_act;
    close(sent(&it, Group::Tp, CommKind::AllReduce), want, 1e-12);
    close(it.bytes_per_gpu().tp, want, 1e-12);
    assert!(
        it.ops
            .iter()
            .filter(|o| o.group == Group::Tp)
            .all(|o| o.link == Link::NvLink && o.ranks == 8)
    );
    // with sequence parallelism: 4 RS + 6 AG (2 re-gathers), (t−1)/t each: the
    // 10·(t−1)/t·S_act per layer of §4.1
    let sp = Iteration::of(&llama405("sequence_parallel = true"));
    let one = 32.0 * 8.0 * 7.0 / 8.0 * s_act;
    close(sent(&sp, Group::Tp, CommKind::ReduceScatter), 4.0 * one, 1e-12);
    close(sent(&sp, Group::Tp, CommKind::AllGather), 6.0 * one, 1e-12);
    assert_eq!(sent(&sp, Group::Tp, CommKind::AllReduce), 0.0);
}

#[test]
fn pipeline_bytes_per_gpu() {
    // one S_act/t send forward and one backward per micro-batch and chunk:
    // 32 × 256 MiB / 8 = 1 GiB each way (§4.6); ×v interleaved
    let it = Iteration::of(&llama405(""));
    close(sent(&it, Group::Pp, CommKind::SendRecv), 2.0 * 1024.0 * MIB, 1e-12);
    let v4 = Iteration::of(&llama405("schedule = { interleaved = 4 }"));
    close(sent(&v4, Group::Pp, CommKind::SendRecv), 8.0 * 1024.0 * MIB, 1e-12);
    // Megatron's order puts pipeline stages outermost: across the network
    assert!(
        v4.ops
            .iter()
            .filter(|o| o.group == Group::Pp)
            .all(|o| o.link == Link::Network && o.ranks == 2)
    );
}

#[test]
fn data_parallel_bytes_per_gpu_by_sharding() {
    // Ψ·β = 405,853,388,800 / (8·16) · 2 bytes per GPU, over d = 64
    let psi = 405_853_388_800f64 / 128.0 * 2.0;
    let ring = 63.0 / 64.0;
    let dp = |sharding: &str| Iteration::of(&llama405(&format!("sharding = \"{sharding}\"")));
    let it = dp("none");
    close(sent(&it, Group::Dp, CommKind::AllReduce), 2.0 * ring * psi, 1e-12);
    for s in ["zero-1", "zero-2", "fsdp-no-reshard"] {
        let it = dp(s);
        close(sent(&it, Group::Dp, CommKind::ReduceScatter), ring * psi, 1e-12);
        close(sent(&it, Group::Dp, CommKind::AllGather), ring * psi, 1e-12);
    }
    for s in ["zero-3", "fsdp"] {
        let it = dp(s);
        close(sent(&it, Group::Dp, CommKind::ReduceScatter), ring * psi, 1e-12);
        close(sent(&it, Group::Dp, CommKind::AllGather), 2.0 * ring * psi, 1e-12);
        close(it.bytes_per_gpu().dp, 3.0 * ring * psi, 1e-12);
    }
    // §4.6: FSDP (grads RS + params AG) ≈ 2 × 63/64 × 6.34 GB ≈ 12.5 GB
    close(dp("fsdp-no-reshard").bytes_per_gpu().dp, 12.5e9, 0.02);
    let it = dp("zero-1");
    let rs = it.ops.iter().find(|o| o.kind == CommKind::ReduceScatter).unwrap();
    assert_eq!(
        (rs.phase, rs.overlap, rs.link, rs.ranks),
        (Phase::Backward, Overlap::Backward, Link::Network, 64)
    );
    let ag = it.ops.iter().find(|o| o.kind == CommKind::AllGather).unwrap();
    assert_eq!((ag.phase, ag.overlap), (Phase::Forward, Overlap::Forward));
}

#[test]
fn expert_parallel_bytes_per_gpu() {
    // Mixtral, EP8 on 64 GPUs (d = 64), s = 4096, b = 1, m = 1: per MoE layer 4
    // all-to-alls of T·k·h·β = 4096·2·4096·2, (e−1)/e of it sent; 32 MoE layers
    let x = job("mixtral-8x7b", 64, 4096, 64, "ep = 8\nsharding = \"zero-1\"");
    let it = Iteration::of(&x);
    let per_layer = 4.0 * 7.0 / 8.0 * 4096.0 * 2.0 * 4096.0 * 2.0;
    close(sent(&it, Group::Ep, CommKind::AllToAll), 32.0 * per_layer, 1e-12);
    // 8 EP ranks of consecutive GPUs (tp = cp = 1) stay inside one HGX node
    assert!(
        it.ops
            .iter()
            .filter(|o| o.group == Group::Ep)
            .all(|o| o.link == Link::NvLink && o.ranks == 8)
    );
    // a router skew of 1.5 makes the busiest rank send 1.5× as much
    let skewed = JobSpec {
        router_skew: 1.5,
        ..JobSpec::from_toml(
            "name = \"t\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = 64\nseq_len = 4096\nglobal_batch = 64\n[parallel]\nep = 8\n",
        )
        .unwrap()
    }
    .check(64)
    .unwrap();
    close(
        sent(&Iteration::of(&skewed), Group::Ep, CommKind::AllToAll),
        1.5 * 32.0 * per_layer,
        1e-12,
    );
    // expert gradients reduce over dp·cp/e = 8 ranks, dense ones over 64
    let m = workload::Model::preset("mixtral-8x7b").unwrap();
    let experts = m.expert_params() as f64 / 8.0 * 2.0;
    let dense = (m.params() - m.expert_params()) as f64 * 2.0;
    close(
        sent(&it, Group::ExpertDp, CommKind::ReduceScatter),
        7.0 / 8.0 * experts,
        1e-12,
    );
    close(
        sent(&it, Group::Dp, CommKind::ReduceScatter),
        63.0 / 64.0 * dense,
        1e-12,
    );
    let edp = it.ops.iter().find(|o| o.group == Group::ExpertDp).unwrap();
    assert_eq!(edp.ranks, 8);
}

#[test]
fn context_parallel_bytes_per_gpu() {
    // 405B at 128K, CP16 TP8 (Table 4's third row): the KV chunk is
    // 2·b·(s/c)·(g/t)·d_h·β = 2·8192·1·128·2 = 4 MiB; forward gathers 15 chunks
    // (60 MiB, §4.5), backward gathers again and reduce-scatters dK/dV
    let c = job("llama3-405b", 16_384, 131_072, 128, "tp = 8\npp = 16\ncp = 16");
    let it = Iteration::of(&c);
    let chunk = 4.0 * MIB;
    let per_layer_fwd = 15.0 * chunk;
    close(per_layer_fwd, 60.0 * MIB, 1e-12);
    let n = it.micro_batches as f64 * 8.0;
    close(
        sent(&it, Group::Cp, CommKind::AllGather),
        n * 2.0 * per_layer_fwd,
        1e-12,
    );
    close(sent(&it, Group::Cp, CommKind::ReduceScatter), n * per_layer_fwd, 1e-12);
    // the activation is split along the sequence: S_act = b·(s/c)·h·β
    assert_eq!(iteration::activation_bytes(&c), 8192 * 16384 * 2);
}

#[test]
fn bubble_fractions() {
    // 1F1B (p−1)/m and interleaved (p−1)/(v·m): 405B with m = 32
    assert_eq!(Iteration::of(&llama405("")).bubble(), 15.0 / 32.0);
    assert_eq!(
        Iteration::of(&llama405("schedule = { interleaved = 4 }")).bubble(),
        15.0 / 128.0
    );
    // 16,384 GPUs at the same global batch: m = 16
    let b = job(
        "llama3-405b",
        16_384,
        8192,
        2048,
        "tp = 8\npp = 16\nschedule = { interleaved = 2 }",
    );
    assert_eq!(iteration::bubble(&b), 15.0 / 32.0);
}

/// A network that takes twice the ideal time, as a stand-in for a network model.
struct HalfSpeed(IdealNetwork);

impl Network for HalfSpeed {
    fn op_time_s(&self, op: &CommOp) -> f64 {
        2.0 * self.0.op_time_s(op)
    }
}

#[test]
fn ideal_iteration_time_adds_exposed_communication() {
    let j = llama405("sharding = \"fsdp-no-reshard\"");
    let it = Iteration::of(&j);
    let net = IdealNetwork::new(&j.gpu, 50.0);
    // an op takes its sent bytes at the bus bandwidth
    let tp = it.ops.iter().find(|o| o.group == Group::Tp).unwrap();
    close(net.op_time_s(tp), 2.0 * 7.0 / 8.0 * 256.0 * MIB / 450e9, 1e-12);
    let dp = it.ops.iter().find(|o| o.group == Group::Dp).unwrap();
    close(net.op_time_s(dp), dp.sent() / 50e9, 1e-12);

    // written out: slot = t_f + t_b + exposed per micro-batch; the DP collectives
    // hide behind one micro-batch's forward (all-gather) and backward
    // (reduce-scatter) when they fit
    let eff = 0.5;
    let (t_f, t_b) = it.compute_per_micro_batch_s(eff);
    let m = 32.0;
    let tp_s = 32.0 * 8.0 * 4.0 * 2.0 * 7.0 / 8.0 * 256.0 * MIB / 450e9;
    let pp_s = 2.0 * 32.0 * 32.0 * MIB / 50e9;
    let slot = t_f + t_b + (tp_s + pp_s) / m;
    let rs = 63.0 / 64.0 * 405_853_388_800f64 / 128.0 * 2.0 / 50e9;
    let left = (rs - t_b).max(0.0) + (rs - t_f).max(0.0);
    let t = it.time(&net, eff);
    close(t.total_s, m * slot * (1.0 + 15.0 / 32.0) + left, 1e-12);
    close(t.compute_s, m * (t_f + t_b), 1e-12);
    close(t.bubble_s, m * slot * 15.0 / 32.0, 1e-12);
    close(t.compute_s + t.bubble_s + t.exposed_comm_s, t.total_s, 1e-12);
    // a slower network (any `Network`) lengthens only the communication
    let slow = it.time(&HalfSpeed(net), eff);
    assert_eq!(slow.compute_s, t.compute_s);
    close(
        slow.total_s - t.total_s,
        (m * (1.0 + 15.0 / 32.0)) * (tp_s + pp_s) / m + (2.0 * rs - t_b).max(0.0) + (2.0 * rs - t_f).max(0.0) - left,
        1e-9,
    );

    // fitting the efficiency back from the achieved rate recovers it
    let rate = it.tflops_per_gpu(t.total_s);
    close(it.fit_efficiency(&net, rate).unwrap(), eff, 1e-9);
    assert!(
        it.fit_efficiency(&net, 2000.0)
            .unwrap_err()
            .to_string()
            .contains("above the")
    );
}
