//! `rdmalab calibrate` on the calibrate crate's fixtures (perftest and
//! nccl-tests outputs of both fabrics), its refusals, and `compare
//! --calibration` reading the file back.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::{err, out, rdmalab};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../calibrate/tests/fixtures")
}

/// Every fixture, relative to the fixtures folder.
const ALL: [&str; 13] = [
    "ib-edr/ib_write_lat.txt",
    "ib-edr/ib_send_lat.txt",
    "ib-edr/ib_read_lat.txt",
    "ib-edr/ib_write_bw.txt",
    "ib-hdr/all_reduce_perf.txt",
    "roce/ib_write_lat.txt",
    "roce/ib_send_lat.txt",
    "roce/ib_read_lat.txt",
    "roce/ib_write_bw.txt",
    "roce/all_reduce_perf.txt",
    "roce/all_gather_perf.txt",
    "roce/reduce_scatter_perf.txt",
    "roce/alltoall_perf.txt",
];

/// `rdmalab` run in the fixtures folder, so files are named as given.
fn in_fixtures(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rdmalab"))
        .args(args)
        .current_dir(fixtures())
        .output()
        .expect("run rdmalab")
}

fn calibrate_all(out_file: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["calibrate"];
    args.extend(ALL);
    args.extend(["--fabric", "infiniband", "-o", out_file.to_str().unwrap()]);
    args.extend(extra);
    in_fixtures(&args)
}

#[test]
fn calibrate_prints_every_parameter_with_its_residual() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calibration.toml");
    let o = calibrate_all(&file, &[]);
    assert!(o.status.success(), "{}", err(&o));
    insta::assert_snapshot!(out(&o).replace(&dir.path().display().to_string(), "[OUT]"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# rdmalab calibration"), "{text}");
    let cal = calibrate::Calibration::from_toml("calibration.toml", &text).unwrap();
    assert_eq!(cal.sources.len(), 13);
    // sources are recorded as given on the command line
    assert_eq!(cal.sources[0].path, "ib-edr/ib_write_lat.txt");
}

#[test]
fn calibrate_json_carries_the_calibration_and_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    let o = calibrate_all(&file, &["--json"]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let params = v["calibration"]["parameter"].as_array().unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let cal = calibrate::Calibration::from_toml("c.toml", &text).unwrap();
    assert_eq!(params.len(), cal.parameters.len());
    let rows = v["rows"].as_array().unwrap();
    // 23+23+1+23 + 5 rows × 2 series on InfiniBand; 23+1+1+23 + 4 × 18 × 2 on RoCE
    assert_eq!(rows.len(), 70 + 10 + 48 + 144);
    for r in rows.iter().filter(|r| r.get("excluded").is_none()) {
        assert!(r["error"].as_f64().unwrap().abs() <= 0.05, "{r}");
    }
}

#[test]
fn calibrate_keeps_an_existing_file_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calibration.toml");
    std::fs::write(&file, "my notes\n").unwrap();
    let o = calibrate_all(&file, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("exists; give --force"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "my notes\n");
    let o = calibrate_all(&file, &["--force"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .starts_with("# rdmalab calibration")
    );
    // no temporary file is left beside it
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn calibrate_names_the_line_of_an_unparseable_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixtures().join("ib-edr/ib_write_lat.txt")).unwrap();
    // the 64-byte row gets a word among its numbers
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| l.trim_start().starts_with("64 ")).unwrap();
    let bad = text.replacen(lines[at], &lines[at].replacen("1000", "1000 x", 1), 1);
    let p = dir.path().join("ib_write_lat.txt");
    std::fs::write(&p, bad).unwrap();
    let o = rdmalab(
        &[
            "calibrate",
            p.to_str().unwrap(),
            "-o",
            dir.path().join("c.toml").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains(&format!(
            "{}:{}: expected a latency row of numbers, found \"x\" in",
            p.display(),
            at + 1
        )),
        "{e}"
    );
    assert!(!dir.path().join("c.toml").exists());
    // not a measurement at all
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "hello\n").unwrap();
    let o = rdmalab(
        &[
            "calibrate",
            p.to_str().unwrap(),
            "-o",
            dir.path().join("c.toml").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("not perftest or nccl-tests output"), "{}", err(&o));
}

#[test]
fn calibrate_refuses_a_perftest_tool_it_does_not_read_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixtures().join("ib-edr/ib_write_bw.txt")).unwrap();
    let p = dir.path().join("bw.txt");
    std::fs::write(&p, text.replace("RDMA_Write BW Test", "Send BW Test")).unwrap();
    let o = rdmalab(
        &[
            "calibrate",
            p.to_str().unwrap(),
            "-o",
            dir.path().join("c.toml").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(
        err(&o).trim(),
        format!(
            "rdmalab: error: read {}:2: perftest test \"Send BW Test\" (ib_send_bw) is not a test calibrate reads (it reads ib_write_bw, ib_write_lat, ib_send_lat and ib_read_lat)",
            p.display()
        )
    );
    // an nccl-tests file that does not say its fabric needs --fabric
    let o = in_fixtures(&[
        "calibrate",
        "ib-hdr/all_reduce_perf.txt",
        "-o",
        dir.path().join("c.toml").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("ib-hdr/all_reduce_perf.txt") && err(&o).contains("--fabric"),
        "{}",
        err(&o)
    );
}

#[test]
fn compare_with_a_calibration_says_where_the_endpoints_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("calibration.toml");
    assert!(calibrate_all(&file, &[]).status.success());
    let small = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/small.toml");
    let run = dir.path().join("run");
    let o = rdmalab(
        &[
            "compare",
            small.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
            "--calibration",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    let t = out(&o);
    assert!(
        t.contains(&format!(
            "endpoints: from the calibration file {}: InfiniBand NIC send 993.7 ns, receive 90.9 ns; RoCEv2 NIC send 5582.9 ns, receive 257.1 ns; applied to ib, roce-tuned",
            file.display()
        )),
        "{t}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    assert_eq!(j["calibration"]["source"], file.display().to_string());
    assert_eq!(j["calibration"]["infiniband"]["tx_ps"], 993_670);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("endpoints: from the calibration file"),
        "report.html names the file"
    );
    // a bad field names the file and the field
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replacen("unit = \"ns\"", "unit = \"us\"", 1)).unwrap();
    let o = rdmalab(
        &[
            "compare",
            small.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
            "--calibration",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains(&format!(
            "read {}: [[parameter]] 1 (infiniband endpoint tx_latency): field `unit`: expected \"ns\" for tx_latency, found \"us\"",
            file.display()
        )),
        "{}",
        err(&o)
    );
}
