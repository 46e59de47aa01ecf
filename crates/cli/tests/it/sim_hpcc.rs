//! `rdmalab sim hpcc` end to end on ns-3 HPCC's own small example (copies in
//! `crates/ns3/testdata/hpcc`), run under DCTCP (`CC_MODE 8`) and as
//! shipped, under HPCC (`CC_MODE 3`).

use std::path::{Path, PathBuf};

use crate::{err, out, rdmalab};

fn testdata(f: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../ns3/testdata/hpcc")
        .join(f)
}

/// ns-3's `config.txt` with `mix/topology.txt` and `mix/flow.txt` beside it, its
/// CC_MODE replaced.
fn example(dir: &Path, cc_mode: u32) -> PathBuf {
    std::fs::create_dir_all(dir.join("mix")).unwrap();
    for f in ["topology.txt", "flow.txt"] {
        std::fs::copy(testdata(f), dir.join("mix").join(f)).unwrap();
    }
    let cfg = std::fs::read_to_string(testdata("config.txt"))
        .unwrap()
        .replace("CC_MODE 3", &format!("CC_MODE {cc_mode}"));
    let path = dir.join("config.txt");
    std::fs::write(&path, cfg).unwrap();
    path
}

/// `rdmalab sim hpcc --json` for 200 µs of the example under `cc_mode`: the report
/// with the wall-clock time removed (checked positive) and, pretty-printed, with the
/// temporary directory replaced by `[DIR]` for the snapshot.
fn json_report(cc_mode: u32) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    json_report_in(dir.path(), cc_mode, 1)
}

/// [`json_report`] in `dir`, the run split over `threads`.
fn json_report_in(dir: &Path, cc_mode: u32, threads: u32) -> (serde_json::Value, String) {
    let cfg = example(dir, cc_mode);
    let threads = threads.to_string();
    let o = rdmalab(
        &[
            "sim",
            "hpcc",
            cfg.to_str().unwrap(),
            "--until-us",
            "200",
            "--json",
            "--threads",
            &threads,
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    let mut v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let m = v.as_object_mut().unwrap();
    assert!(m.remove("wall_s").unwrap().as_f64().unwrap() > 0.0);
    let text = serde_json::to_string_pretty(&v)
        .unwrap()
        .replace(&dir.display().to_string(), "[DIR]");
    (v, text)
}

/// `--threads 2` on the example under DCQCN (`CC_MODE 1`): the run is split
/// (the report says 2, on a machine of two cores or more) and reports and
/// writes exactly what one thread does:
/// the same JSON but for the thread count, byte-identical fct.txt and pfc.txt.
#[test]
fn sim_hpcc_threads_give_the_same_outputs() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut a, _) = json_report_in(one.path(), 1, 1);
    let (mut b, _) = json_report_in(two.path(), 1, 2);
    // At most the machine's cores run (a one-core machine runs one).
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    assert_eq!(a["threads"], 1, "{a}");
    assert_eq!(b["threads"], 2.min(cores), "{b}");
    assert!(a["hops"].as_u64().unwrap() > 5_000, "{a}");
    a.as_object_mut().unwrap().remove("threads");
    b.as_object_mut().unwrap().remove("threads");
    let text = |v: &serde_json::Value, d: &Path| v.to_string().replace(&d.display().to_string(), "[DIR]");
    assert_eq!(text(&a, one.path()), text(&b, two.path()));
    let mut compared = 0;
    for f in ["mix/fct.txt", "mix/pfc.txt"] {
        let (x, y) = (one.path().join(f), two.path().join(f));
        if x.exists() {
            assert_eq!(std::fs::read(&x).unwrap(), std::fs::read(&y).unwrap(), "{f}");
            compared += 1;
        }
    }
    assert!(compared > 0, "the example writes fct.txt or pfc.txt");
}

/// `--threads 0` is refused by name.
#[test]
fn sim_hpcc_zero_threads_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = example(dir.path(), 1);
    let o = rdmalab(&["sim", "hpcc", cfg.to_str().unwrap(), "--threads", "0"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--threads"), "{}", err(&o));
}

/// The JSON report with the wall-clock time removed and the temporary directory
/// replaced: hops, events, drops, warnings (each with its file:line) and outputs.
#[test]
fn sim_hpcc_dctcp_json_report() {
    let (_, text) = json_report(8);
    assert!(!text.contains("CC_MODE"), "CC_MODE 8 is modelled: {text}");
    insta::assert_snapshot!(text);
}

/// The example as ns-3 ships it (`CC_MODE 3`, HPCC): runs end to end, nothing
/// about CC_MODE, HAS_WIN or VAR_WIN is named (all modelled), the DCQCN keys the
/// file also sets are named as unused; fct.txt is written in ns-3's layout.
#[test]
fn sim_hpcc_hpcc_json_report() {
    let (v, text) = json_report(3);
    assert!(v["hops"].as_u64().unwrap() > 5_000, "{v}");
    for k in ["CC_MODE", "HAS_WIN", "VAR_WIN", "U_TARGET", "FAST_REACT"] {
        assert!(!text.contains(k), "{k} is modelled under HPCC: {text}");
    }
    assert!(
        text.contains("RP_TIMER: DCQCN/DCTCP parameter: unused under HPCC"),
        "{text}"
    );
    insta::assert_snapshot!(text);
}

/// A missing config names the file and exits 2 (bad input).
#[test]
fn sim_hpcc_missing_config_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.txt");
    let o = rdmalab(&["sim", "hpcc", missing.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("nope.txt"), "{}", err(&o));
}
