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
