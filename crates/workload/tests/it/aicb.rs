//! AICB/SimAI workload files read into per-rank operations.

use workload::aicb::{Policy, Workload};
use workload::comm::{CommKind, Group, Link, Overlap, Phase};
use workload::iteration::{self, Iteration};
use workload::job::JobSpec;

const LLAMA: &str = include_str!("../data/aicb-llama3-8b-tp8-dp2.txt");
const MOE: &str = include_str!("../data/aicb-moe-ep8-pp2.txt");

fn bytes(ops: &[workload::CommOp], group: Group, kind: CommKind) -> u64 {
    ops.iter()
        .filter(|o| o.group == group && o.kind == kind)
        .map(|o| o.bytes * o.count)
        .sum()
}

#[test]
fn the_llama_file_reads_into_the_operations_it_lists() {
    let w = Workload::parse("aicb-llama3-8b-tp8-dp2.txt", LLAMA).unwrap();
    let h = &w.header;
    assert_eq!(h.policy, Policy::HybridTransformerFwdInBckwd);
    assert_eq!(
        (h.tp, h.ep, h.pp, h.vpp, h.ga, h.all_gpus),
        (Some(8), Some(1), Some(1), Some(32), Some(4), Some(16))
    );
    assert_eq!(w.layers.len(), 67);
    assert_eq!(w.layers[1].name, "attention_layer");
    assert_eq!(w.layers[1].line, 4);

    let ops = w.ops(8).unwrap();
    // per rank, from the file: 1 embedding + 64 layers × 2 all-reduces of 67,108,864 B
    let s_act = 67_108_864u64;
    assert_eq!(bytes(&ops, Group::Tp, CommKind::AllReduce), (1 + 64 * 2) * s_act);
    assert_eq!(bytes(&ops, Group::Dp, CommKind::ReduceScatter), 2_007_565_312);
    assert_eq!(bytes(&ops, Group::Dp, CommKind::AllGather), 2_007_565_312);
    assert_eq!(ops.len(), 1 + 128 + 2);
    // TP of 8 inside an HGX node; DP of all_gpus/(tp·pp) = 2 across the network
    for o in &ops {
        match o.group {
            Group::Tp => assert_eq!((o.ranks, o.link, o.overlap), (8, Link::NvLink, Overlap::Exposed)),
            Group::Dp => assert_eq!(
                (o.ranks, o.link, o.phase, o.overlap),
                (2, Link::Network, Phase::Backward, Overlap::Backward)
            ),
            g => panic!("unexpected group {g:?}"),
        }
    }
    // sent bytes: all-reduce 2(n−1)/n, reduce-scatter and all-gather (n−1)/n
    let sent: f64 = ops.iter().map(|o| o.sent_per_iteration()).sum();
    assert_eq!(
        sent,
        129.0 * 2.0 * 7.0 / 8.0 * s_act as f64 + 2.0 * 0.5 * 2_007_565_312.0
    );

    // the same job generated: its TP all-reduces and DP shard are the file's sizes
    let job = JobSpec::from_toml(
        "name = \"8b\"\nmodel = \"llama3-8b\"\ngpu = \"h100\"\ngpus = 16\nseq_len = 8192\nglobal_batch = 8\n[parallel]\ntp = 8\nsharding = \"zero-1\"\n",
    )
    .unwrap()
    .check(16)
    .unwrap();
    assert_eq!(iteration::activation_bytes(&job), s_act);
    let generated = Iteration::of(&job);
    assert_eq!(generated.micro_batches, 4);
    assert!(
        generated
            .ops
            .iter()
            .filter(|o| o.group == Group::Tp)
            .all(|o| o.bytes == s_act)
    );
    let gen_dp: Vec<u64> = generated
        .ops
        .iter()
        .filter(|o| o.group == Group::Dp)
        .map(|o| o.bytes)
        .collect();
    assert_eq!(gen_dp, [2_007_565_312, 2_007_565_312]);
    // per micro-batch the file has 128 layer all-reduces, the generator 4 per
    // layer: 32 layers × 4 = 128
    let gen_tp: u64 = generated
        .ops
        .iter()
        .filter(|o| o.group == Group::Tp)
        .map(|o| o.count)
        .sum();
    assert_eq!(gen_tp / generated.micro_batches, 128);
}

#[test]
fn the_moe_file_reads_expert_groups_and_pipeline_sends() {
    let w = Workload::parse("aicb-moe-ep8-pp2.txt", MOE).unwrap();
    assert_eq!(w.header.pp_comm, Some(33_554_432));
    let ops = w.ops(8).unwrap();
    let a2a = 67_108_864u64;
    // 16 layers × (dispatch + combine) × (forward + input gradient)
    assert_eq!(bytes(&ops, Group::Ep, CommKind::AllToAll), 16 * 2 * 2 * a2a);
    assert_eq!(bytes(&ops, Group::Dp, CommKind::ReduceScatter), 1_605_636_096);
    assert_eq!(bytes(&ops, Group::ExpertDp, CommKind::ReduceScatter), 5_637_144_576);
    // pp_comm forward and backward for each of ga = 8 micro-batches
    assert_eq!(bytes(&ops, Group::Pp, CommKind::SendRecv), 2 * 8 * 33_554_432);
    let ranks = |g: Group| ops.iter().find(|o| o.group == g).unwrap().ranks;
    // DP = all_gpus / (tp·pp) = 32; expert DP = 32 / ep = 4
    assert_eq!(
        (
            ranks(Group::Ep),
            ranks(Group::Dp),
            ranks(Group::ExpertDp),
            ranks(Group::Pp)
        ),
        (8, 32, 4, 2)
    );
    let ep = ops.iter().find(|o| o.group == Group::Ep).unwrap();
    assert_eq!(ep.link, Link::NvLink);

    // the generator's all-to-all for the same shapes is the file's size
    let job = JobSpec::from_toml(
        "name = \"moe\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = 64\nseq_len = 4096\nglobal_batch = 256\n[parallel]\npp = 2\nep = 8\nsharding = \"zero-1\"\n",
    )
    .unwrap()
    .check(64)
    .unwrap();
    let it = Iteration::of(&job);
    assert!(it.ops.iter().filter(|o| o.group == Group::Ep).all(|o| o.bytes == a2a));
    let dense: Vec<u64> = it
        .ops
        .iter()
        .filter(|o| o.group == Group::Dp && o.kind == CommKind::ReduceScatter)
        .map(|o| o.bytes)
        .collect();
    assert_eq!(dense, [1_605_636_096]);
    let experts: Vec<u64> = it
        .ops
        .iter()
        .filter(|o| o.group == Group::ExpertDp && o.kind == CommKind::ReduceScatter)
        .map(|o| o.bytes)
        .collect();
    assert_eq!(experts, [5_637_144_576]);
}

#[test]
fn malformed_files_are_refused_with_file_and_line() {
    let row = "attention_layer\t-1\t1\tALLREDUCE\t64\t1\tNONE\t0\t1\tNONE\t0\t100";
    let cases = [
        (
            "",
            "read AICB workload w.txt:1: expected a header line, found an empty file",
        ),
        (
            "TRAINING\n0\n",
            "read AICB workload w.txt:1: unknown parallelism policy \"TRAINING\"",
        ),
        (
            "MICRO tensor: 8\n0\n",
            "read AICB workload w.txt:1: unknown header key \"tensor:\"",
        ),
        (
            "MICRO ep: x\n0\n",
            "read AICB workload w.txt:1: ep: expected a number, found \"x\"",
        ),
        (
            "MICRO all_gpus:\n0\n",
            "read AICB workload w.txt:1: header key \"all_gpus\" has no value",
        ),
        (
            "MICRO\n",
            "read AICB workload w.txt:2: expected the number of layer lines, found the end of the file",
        ),
        (
            "MICRO\ntwo\n",
            "read AICB workload w.txt:2: layer count: expected a number, found \"two\"",
        ),
        (
            &format!("MICRO\n2\n{row}\nattention_layer\t-1\t1\tALLREDUCE\t64\n"),
            "read AICB workload w.txt:4: expected 12 columns, found 5",
        ),
        (
            &format!("MICRO\n2\n{row}\n{}\n", row.replace("\t64\t", "\t64B\t")),
            "read AICB workload w.txt:4: fwd_size: expected a number, found \"64B\"",
        ),
        (
            &format!("MICRO\n1\n{}\n", row.replace("ALLREDUCE", "ALLREDUCE_TP")),
            "read AICB workload w.txt:3: fwd_comm: unknown comm type \"ALLREDUCE_TP\"",
        ),
        (
            &format!("MICRO\n1\n{}\n", row.replace("\t1\tNONE\t0\t100", "\t-5\tNONE\t0\t100")),
            "read AICB workload w.txt:3: wg_compute: expected a number, found \"-5\"",
        ),
        (
            &format!("MICRO\n3\n{row}\n{row}\n"),
            "read AICB workload w.txt:4: line 2 declares 3 layers, found 2",
        ),
        (
            &format!("MICRO\n1\n{row}\n{row}\n"),
            "read AICB workload w.txt:4: a line after the declared layers",
        ),
    ];
    // sizes at the edge of their types read and size their groups without overflow
    let w = Workload::parse(
        "w.txt",
        &format!("HYBRID_TRANSFORMER model_parallel_NPU_group: 4294967295 pp: 4294967295 ep: 4294967295 all_gpus: 4294967295\n1\n{}\n", row.replace("\t100", "\t18446744073709551615").replace("ALLREDUCE", "ALLREDUCE_DP_EP")),
    )
    .unwrap();
    assert_eq!(w.compute_ns(), u64::MAX);
    let ops = w.ops(8).unwrap();
    assert_eq!((ops[0].ranks, ops[0].link), (1, Link::Network));
    for (text, want) in cases {
        let e = Workload::parse("w.txt", text).unwrap_err();
        assert_eq!(e.to_string(), want, "{text:?}");
    }
}
