//! `train`: one iteration of a job on a scalable-unit cluster.

use crate::{err, out, rdmalab};

fn example(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/train")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// The small example on 2 units of 8 servers whose leaves have one uplink:
/// both engines print the same iteration to the microsecond, and the fabric's
/// data-parallel operations take about twice the contention-free time.
#[test]
fn train_prices_an_iteration_alike_with_flows_and_packets() {
    let job = example("small-128.toml");
    let mut totals = Vec::new();
    for engine in ["flow", "packet"] {
        let o = rdmalab(
            &[
                "train",
                &job,
                "--sus",
                "2",
                "--servers-per-su",
                "8",
                "--leaf-uplinks",
                "1",
                "--engine",
                engine,
                "--json",
            ],
            None,
        );
        assert!(o.status.success(), "{}", err(&o));
        let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        assert_eq!(v["engine"], engine);
        assert_eq!(v["servers"], 16);
        let dp = v["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"]["label"] == "dp-grads")
            .unwrap();
        let r = dp["fabric_s"].as_f64().unwrap() / dp["ideal_s"].as_f64().unwrap();
        assert!(r > 1.9 && r < 2.1, "{engine}: dp-grads fabric/ideal {r}");
        totals.push(v["fabric"]["total_s"].as_f64().unwrap());
    }
    assert!((totals[0] / totals[1] - 1.0).abs() < 1e-3, "{totals:?}");
}

#[test]
fn train_prints_the_iteration_table() {
    let o = rdmalab(&["train", &example("llama3-70b-1024.toml")], None);
    assert!(o.status.success(), "{}", err(&o));
    let t = out(&o);
    assert!(
        t.contains("rdmalab train: llama3-70b-1024 (llama3-70b, 1024 GPUs)"),
        "{t}"
    );
    assert!(t.contains("4 unit(s) × 32 servers × 8 GPUs"), "{t}");
    assert!(t.contains("dp-grads"), "{t}");
    assert!(t.contains("on the fabric"), "{t}");
}

#[test]
fn train_names_the_file_and_field_of_a_bad_job() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("model = \"llama3-70b\"", "model = \"llama9\"", "model"),
        ("gpus = 1024", "gpus = 1000", "parallel"),
        ("tp = 8", "tp = 16", "parallel.tp"),
        ("seq_len = 8192", "seq_len = 8192\nseq_length = 1", "seq_length"),
    ];
    let text = std::fs::read_to_string(example("llama3-70b-1024.toml")).unwrap();
    for (from, to, field) in cases {
        let p = dir.path().join("job.toml");
        std::fs::write(&p, text.replace(from, to)).unwrap();
        let o = rdmalab(&["train", p.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(2), "{to}: {}", err(&o));
        let e = err(&o);
        assert!(e.contains(p.to_str().unwrap()), "{to}: {e}");
        assert!(e.contains(field), "{to}: {e}");
    }
    // a job larger than the cluster it is given
    let o = rdmalab(&["train", &example("llama3-70b-1024.toml"), "--sus", "1"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("gpus"), "{}", err(&o));
}

fn aicb(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

/// A SimAI/AICB workload file in the upstream format runs on the fabric, and the
/// bytes one rank sends per group equal what the file lists, summed here from
/// its columns: forward and input-gradient collectives once per micro-batch
/// (`ga`), weight-gradient ones once, the pipeline's sends `ga` times each way;
/// each collective's size times NCCL's ring factor for its group.
#[test]
fn train_runs_an_aicb_workload_and_its_bytes_per_rank_match_the_file() {
    for (file, ga, sizes) in [
        ("aicb-llama3-8b-tp8-dp2.txt", 4u64, [("Tp", 8u32), ("Dp", 2)].as_slice()),
        (
            "aicb-moe-ep8-pp2.txt",
            8,
            [("Ep", 8), ("Dp", 32), ("ExpertDp", 4), ("Pp", 2)].as_slice(),
        ),
    ] {
        let path = aicb(file);
        let o = rdmalab(&["train", &path, "--json"], None);
        assert!(o.status.success(), "{}", err(&o));
        let j: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        // the file's own numbers, column by column
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header = lines.next().unwrap();
        let n: usize = lines.next().unwrap().trim().parse().unwrap();
        let mut want = std::collections::BTreeMap::<String, f64>::new();
        let factor = |kind: &str, n: u32| {
            let n = f64::from(n);
            if kind.starts_with("ALLREDUCE") {
                2.0 * (n - 1.0) / n
            } else {
                (n - 1.0) / n
            }
        };
        let size_of = |g: &str| sizes.iter().find(|(name, _)| *name == g).unwrap().1;
        for l in lines.take(n) {
            let c: Vec<&str> = l.split_whitespace().collect();
            for (col, per_iteration) in [(3, ga), (6, ga), (9, 1)] {
                let (kind, bytes) = (c[col], c[col + 1].parse::<f64>().unwrap());
                if kind == "NONE" {
                    continue;
                }
                let group = if kind.ends_with("_DP_EP") {
                    "ExpertDp"
                } else if kind.ends_with("_EP") {
                    "Ep"
                } else if col == 9 {
                    "Dp"
                } else {
                    "Tp"
                };
                *want.entry(group.into()).or_default() +=
                    (factor(kind, size_of(group)) * bytes).round() * per_iteration as f64;
            }
        }
        if let Some(pp) = header.split("pp_comm: ").nth(1) {
            let b: f64 = pp.split_whitespace().next().unwrap().parse().unwrap();
            *want.entry("Pp".into()).or_default() += 2.0 * ga as f64 * b;
        }
        let got: std::collections::BTreeMap<String, f64> = j["bytes_per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let g = b["group"].as_str().unwrap();
                let name = match g {
                    "tp" => "Tp",
                    "dp" => "Dp",
                    "ep" => "Ep",
                    "expert-dp" => "ExpertDp",
                    "pp" => "Pp",
                    other => panic!("group {other}"),
                };
                (
                    name.to_string(),
                    b["network"].as_f64().unwrap() + b["nvlink"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, want, "{file}");
        assert!(j["fabric"]["total_s"].as_f64().unwrap() > 0.0);
    }
    // a header without all_gpus cannot be placed: the error names the file and key
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("w.txt");
    std::fs::write(
        &p,
        "HYBRID_TRANSFORMER model_parallel_NPU_group: 8 ga: 1\n1\nl -1 1 ALLREDUCE 64 1 NONE 0 1 NONE 0 1\n",
    )
    .unwrap();
    let o = rdmalab(&["train", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("w.txt") && err(&o).contains("all_gpus"), "{}", err(&o));
    // a malformed line names file:line
    std::fs::write(
        &p,
        "HYBRID_TRANSFORMER model_parallel_NPU_group: 8 all_gpus: 16\n1\nl -1 x ALLREDUCE 64\n",
    )
    .unwrap();
    let o = rdmalab(&["train", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("w.txt:3"), "{}", err(&o));
}

/// A misconfigured RoCEv2 hop in `train`: the rail-0 leaf of a 64-GPU MoE job
/// maps the RDMA DSCP to a lossy class. Priced as `compare` prices RoCEv2
/// (hybrid), the iteration goes from 1.50 s to 19.97 s at seed 1 (the expert
/// all-to-all 2.41 → 74.5 ms). A name that is no switch, or a lossy hop on
/// InfiniBand, is refused by name.
#[test]
fn train_prices_a_misconfigured_roce_hop_and_names_a_bad_one() {
    let job = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/moe-64.toml")
        .display()
        .to_string();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "train",
            &job,
            "--servers-per-su",
            "8",
            "--fabric",
            "rocev2",
            "--engine",
            "hybrid",
            "--json",
        ];
        args.extend_from_slice(extra);
        rdmalab(&args, None)
    };
    let total = |o: &std::process::Output| -> f64 {
        assert!(o.status.success(), "{}", err(o));
        let v: serde_json::Value = serde_json::from_str(&out(o)).unwrap();
        v["fabric"]["total_s"].as_f64().unwrap()
    };
    let tuned = total(&run(&[]));
    let lossy = run(&["--lossy-hop", "su0-rail0"]);
    let v: serde_json::Value = serde_json::from_str(&out(&lossy)).unwrap();
    assert!(
        v["cluster"].as_str().unwrap().ends_with("RDMA DSCP lossy on su0-rail0"),
        "{}",
        v["cluster"]
    );
    let mis = total(&lossy);
    assert!((tuned - 1.501).abs() < 0.01, "{tuned}");
    assert!((mis - 19.97).abs() < 0.1, "{mis}");
    let bad = run(&["--lossy-hop", "su9-rail0"]);
    assert!(!bad.status.success());
    assert!(
        err(&bad).contains("\"su9-rail0\" is not a switch of this cluster"),
        "{}",
        err(&bad)
    );
    let ib = rdmalab(
        &["train", &job, "--servers-per-su", "8", "--lossy-hop", "su0-rail0"],
        None,
    );
    assert!(!ib.status.success());
    assert!(
        err(&ib).contains("InfiniBand's credits have no such class"),
        "{}",
        err(&ib)
    );
}

fn chakra(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/chakra")
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

/// Chakra execution traces in the upstream format run on the fabric, and the
/// bytes one rank sends equal what the files list: ASTRA-sim's 4-NPU 1 MB
/// all-reduce (a ring sends 2·3/4 of it), and the eight-rank mixed trace of
/// make.py (all-to-all 16 MiB, reduce-scatter 64 MiB, all-gather 8 MiB from
/// each rank, all-reduce 4 MiB). Its iteration is the critical path: forward
/// 2 ms, dispatch, backward 4 ms, reduce-scatter, all-gather.
#[test]
fn train_runs_chakra_traces_and_their_bytes_per_rank_match_the_files() {
    let mib = f64::from(1u32 << 20);
    for (file, want) in [
        ("all_reduce_4npus_1MB/all_reduce.0.et", 2.0 * 3.0 / 4.0 * mib),
        (
            "mixed_8npus/mixed.5.et",
            7.0 / 8.0 * (16.0 * mib + 64.0 * mib + 8.0 * 8.0 * mib) + 2.0 * 7.0 / 8.0 * 4.0 * mib,
        ),
    ] {
        let o = rdmalab(&["train", &chakra(file), "--fabric", "rocev2", "--json"], None);
        assert!(o.status.success(), "{file}: {}", err(&o));
        let j: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
        let got: f64 = j["bytes_per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["network"].as_f64().unwrap() + b["nvlink"].as_f64().unwrap())
            .sum();
        assert_eq!(got, want, "{file}");
        if file.starts_with("mixed") {
            let op = |label: &str| {
                j["ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["op"]["label"] == label)
                    .unwrap()["fabric_s"]
                    .as_f64()
                    .unwrap()
            };
            let path = 0.002 + op("moe_dispatch") + 0.004 + op("grad_reduce_scatter") + op("param_all_gather");
            let total = j["fabric"]["total_s"].as_f64().unwrap();
            assert!((total - path).abs() < 1e-12, "{total} against {path}");
            assert_eq!(j["gpus"], 8);
        }
    }
    // a rank's file missing is named
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(chakra("mixed_8npus/mixed.0.et")).unwrap();
    std::fs::write(dir.path().join("x.0.et"), &bytes).unwrap();
    std::fs::write(dir.path().join("x.2.et"), &bytes).unwrap();
    let o = rdmalab(&["train", dir.path().join("x.0.et").to_str().unwrap()], None);
    assert!(!o.status.success());
    assert!(err(&o).contains("x.1.et is missing"), "{}", err(&o));
}

/// `--planes` and `--dual-tor`: the NIC's 400 Gb/s over its ports, each plane
/// routed by its own SM, the job on every port; on a non-blocking pod the
/// iteration is the single plane's. The speed must split evenly.
#[test]
fn train_runs_on_planes_and_dual_tors() {
    let job = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/moe-64.toml")
        .display()
        .to_string();
    let run = |extra: &[&str]| {
        let mut args = vec!["train", &job, "--sus", "2", "--servers-per-su", "4", "--json"];
        args.extend_from_slice(extra);
        rdmalab(&args, None)
    };
    let json = |o: &std::process::Output| -> serde_json::Value {
        assert!(o.status.success(), "{}", err(o));
        serde_json::from_str(&out(o)).unwrap()
    };
    let one = json(&run(&[]));
    let four = json(&run(&["--planes", "2", "--dual-tor"]));
    let c = four["cluster"].as_str().unwrap();
    assert!(
        c.contains("each NIC 4 ports of 100 Gb/s (2 plane(s), dual ToRs)"),
        "{c}"
    );
    let r = four["routed_by"].as_str().unwrap();
    assert!(r.contains("on each of 2 planes"), "{r}");
    let (a, b) = (
        one["fabric"]["total_s"].as_f64().unwrap(),
        four["fabric"]["total_s"].as_f64().unwrap(),
    );
    assert!((a / b - 1.0).abs() < 0.005, "{a} {b}");
    // a leaf down: dual ToRs keep the job running, a single ToR loses NICs
    let down = json(&run(&["--dual-tor", "--fail", "su0-rail0-a"]));
    assert!(
        down["cluster"].as_str().unwrap().ends_with("down: su0-rail0-a"),
        "{}",
        down["cluster"]
    );
    assert!(down["fabric"]["total_s"].as_f64().unwrap() > a, "{down}");
    let lost = run(&["--fail", "su0-rail0"]);
    assert!(!lost.status.success());
    assert!(
        err(&lost).contains("gpu0-mlx5_0 (rank 0) on plane 0 has no live port"),
        "{}",
        err(&lost)
    );
    let bad = run(&["--planes", "3"]);
    assert!(!bad.status.success());
    assert!(
        err(&bad).contains("does not split evenly over 3 ports"),
        "{}",
        err(&bad)
    );
}
