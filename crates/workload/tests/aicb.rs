//! AICB / SimAI workload files in their upstream text form: parsed, and the bytes
//! each rank sends match what the file says.

use std::path::Path;

use workload::aicb::{Aicb, Coll, Group};

fn load(name: &str) -> Aicb {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    Aicb::parse(&std::fs::read_to_string(&p).unwrap(), name).unwrap()
}

#[test]
fn the_gpt13b_tp8_workload_reads_and_its_bytes_match_the_file() {
    let w = load("aicb-gpt13b-tp8.txt");
    assert_eq!(w.policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    assert_eq!(w.layers.len(), 81);
    assert_eq!(
        (w.get("model_parallel_NPU_group"), w.get("all_gpus"), w.get("ga")),
        (8, 32, 1)
    );
    assert_eq!((w.group_size(Group::Tp), w.group_size(Group::Dp)), (8, 4));
    let by = w.collective_bytes();
    // 80 lines × (forward + input gradient) × 20,971,520 B in the TP group
    assert_eq!(by[&(Group::Tp, Coll::AllReduce)], 80 * 2 * 20_971_520);
    assert_eq!(by[&(Group::Dp, Coll::ReduceScatter)], 5_615_517_696);
    assert_eq!(by.len(), 2);
    // each rank sends 2·7/8 of the TP all-reduces and 3/4 of the DP reduce-scatter
    let want = 2.0 * 7.0 / 8.0 * (80.0 * 2.0 * 20_971_520.0) + 3.0 / 4.0 * 5_615_517_696.0;
    assert!((w.bytes_per_rank() - want).abs() < 1.0, "{}", w.bytes_per_rank());
    // 20,971,520 = 2,048 tokens × 5,120 hidden × 2 bytes: GPT-13B's activation at s = 2048
    assert_eq!(w.layers[0].fwd.bytes, 2048 * 5120 * 2);
    assert_eq!(w.layers[0].fwd.compute_ns, 752_000);
}

#[test]
fn the_micro_benchmark_form_reads_with_doubling_sizes() {
    let w = load("aicb-micro-allreduce.txt");
    assert_eq!(w.policy, "MICRO");
    let sizes: Vec<u64> = w.layers.iter().map(|l| l.wg.bytes).collect();
    assert_eq!(sizes, (0..8).map(|k| 4096u64 << k).collect::<Vec<_>>());
    assert!(
        w.layers
            .iter()
            .all(|l| l.wg.coll == Coll::AllReduce && l.wg.group == Group::Dp)
    );
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let e = |t: &str| Aicb::parse(t, "w.txt").unwrap_err().to_string();
    assert_eq!(
        e("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 4096\n"),
        "w.txt:3: 11 columns; a layer line has 12 (name, dependency, then compute, collective, size for fwd, ig and wg, then the update time)"
    );
    assert!(
        e("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUSE 4096 1\n")
            .starts_with("w.txt:3: weight gradient: \"ALLREDUSE\" is not a collective")
    );
    assert!(
        e("DATA\n2\nl -1 1 NONE 0 1 NONE 0 1 NONE 0 1\n").contains("line 2 promises 2 layer lines; the file has 1")
    );
    assert!(e("DATA ga: x\n").starts_with("w.txt:1: `ga`: \"x\" is not a whole number"));
    assert!(e("DATA\nmany\n").starts_with("w.txt:2: \"many\" is not the number of layer lines"));
    assert!(
        e("DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 NONE 0 1\nextra line\n")
            .starts_with("w.txt:4: \"extra line\" after the 1 layer lines")
    );
}
