//! Chakra execution traces in the upstream format (tests/data/chakra/make.py).

use std::path::{Path, PathBuf};

use workload::chakra::{Error, RankTrace, Trace, Work, critical_path};
use workload::comm::CommKind;

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/chakra")
        .join(rel)
}

/// ASTRA-sim's own 4-NPU, 1 MB all-reduce microbenchmark: the version, the
/// one node and its attributes as the file holds them, and one all-reduce of
/// 1 MiB over 4 ranks (1.5 MiB sent per rank by a ring).
#[test]
fn astra_sims_all_reduce_microbenchmark_reads_as_one_all_reduce() {
    let t = Trace::read(&data("all_reduce_4npus_1MB/all_reduce.2.et")).unwrap();
    assert_eq!(t.ranks.len(), 4);
    let r0 = &t.ranks[0];
    assert_eq!(r0.version, "0.0.4");
    assert_eq!(r0.nodes.len(), 1);
    let n = &r0.nodes[0];
    assert_eq!((n.id, n.name.as_str(), n.r#type), (0, "all_reduce_4npus_1MB", 7));
    let names: Vec<&str> = n.attr.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["is_cpu_op", "comm_type", "comm_size"]);
    let (ops, steps) = t.ops().unwrap();
    assert_eq!(ops.len(), 1);
    assert_eq!(
        (ops[0].kind, ops[0].ranks, ops[0].bytes, ops[0].count),
        (CommKind::AllReduce, 4, 1 << 20, 1)
    );
    assert_eq!(ops[0].sent(), 1.5 * (1 << 20) as f64);
    assert_eq!(steps.len(), 1);
}

/// Eight ranks of compute and four collectives: sizes as ASTRA-sim reads
/// `comm_size` (all-gather: each rank's input, so the buffer is 8 times it),
/// and the critical path through the dependencies (the loss all-reduce runs
/// beside the backward pass).
#[test]
fn a_mixed_trace_gives_its_collectives_and_critical_path() {
    let t = Trace::read(&data("mixed_8npus/mixed.0.et")).unwrap();
    assert_eq!(t.ranks.len(), 8);
    let (ops, steps) = t.ops().unwrap();
    let mib = 1u64 << 20;
    // in dependency order, file order among the ready ones
    let got: Vec<(CommKind, u64)> = ops.iter().map(|o| (o.kind, o.bytes)).collect();
    assert_eq!(
        got,
        [
            (CommKind::AllToAll, 16 * mib),
            (CommKind::ReduceScatter, 64 * mib),
            (CommKind::AllGather, 64 * mib),
            (CommKind::AllReduce, 4 * mib),
        ]
    );
    // 1 s per collective: forward 2 ms, dispatch, backward 4 ms, reduce-scatter, all-gather
    let t_path = critical_path(&steps, |w| match *w {
        Work::Compute(x) => x,
        Work::Comm(_) => 1.0,
        Work::None => 0.0,
    });
    assert!((t_path - (0.006 + 3.0)).abs() < 1e-9, "{t_path}");
}

/// Bad traces are named: a truncated file with the byte where the message
/// broke, a missing rank, a file not named `<prefix>.<rank>.et`.
#[test]
fn bad_traces_are_refused_by_file_and_byte() {
    let bytes = std::fs::read(data("mixed_8npus/mixed.0.et")).unwrap();
    let e = RankTrace::decode("cut.0.et", &bytes[..bytes.len() - 5]).unwrap_err();
    assert!(matches!(e, Error::Decode { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.starts_with("cut.0.et: byte ") && msg.contains("length-prefixed"),
        "{msg}"
    );
    let dir = tempfile::tempdir().unwrap();
    for r in [0, 1, 3] {
        std::fs::write(dir.path().join(format!("t.{r}.et")), &bytes).unwrap();
    }
    let e = Trace::read(&dir.path().join("t.0.et")).unwrap_err().to_string();
    assert!(e.contains("t.2.et is missing") && e.contains("ranks 0..4"), "{e}");
    let e = Trace::read(&dir.path().join("trace.et")).unwrap_err().to_string();
    assert!(e.contains("named <prefix>.<rank>.et"), "{e}");
    // rank 1 of ASTRA-sim's all-reduce with comm_size 2 MiB: its varint 80 80 40
    // (1 MiB, bytes 78-80) becomes 80 80 80 01, so the attribute's length (byte
    // 65) and the Node's (byte 8) grow by one
    let astra = std::fs::read(data("all_reduce_4npus_1MB/all_reduce.0.et")).unwrap();
    assert_eq!(
        (astra[8], astra[65], &astra[78..]),
        (0x48, 0x0f, &[0x80, 0x80, 0x40][..])
    );
    let mut other = astra[..80].to_vec();
    other.extend_from_slice(&[0x80, 0x01]);
    other[8] += 1;
    other[65] += 1;
    for r in 0..4 {
        let b = if r == 1 { &other } else { &astra };
        std::fs::write(dir.path().join(format!("ar.{r}.et")), b).unwrap();
    }
    let t = Trace::read(&dir.path().join("ar.0.et")).unwrap();
    let e = t.ops().unwrap_err().to_string();
    assert!(
        e.contains(
            "ar.1.et: collective 0 (in dependency order) is AllReduce of 2097152 B, rank 0's is AllReduce of 1048576 B"
        ),
        "{e}"
    );
}
