//! The documented exit codes, asserted exactly, on the real binary (code 3, an
//! internal failure such as a ledger imbalance, cannot be provoked from input;
//! the binary's `error::tests` check its mapping on the library errors that carry
//! it).

use std::path::Path;

use crate::{err, out, rdmalab};

fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
        .display()
        .to_string()
}

#[test]
fn a_run_that_finishes_exits_0() {
    let o = rdmalab(&["sim", "run", &repo("examples/sim/credit-loops-updn.toml")], None);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
}

#[test]
fn a_run_that_deadlocks_exits_1_and_names_the_cycle() {
    let o = rdmalab(&["sim", "run", &repo("examples/sim/credit-loops-minhop.toml")], None);
    assert_eq!(o.status.code(), Some(1), "{}", err(&o));
    assert!(out(&o).contains("deadlock"), "{}", out(&o));
    assert_eq!(err(&o), "", "findings are reported on stdout, not as an error");
}

#[test]
fn a_clean_lint_exits_0() {
    let d = repo("examples/roce/clean");
    let files = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"].map(|f| format!("{d}/{f}"));
    let o = rdmalab(&["lint", "roce", &files[0], &files[1], &files[2]], None);
    assert_eq!(o.status.code(), Some(0), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("0 error(s)"), "{}", out(&o));
}

#[test]
fn a_lint_error_exits_1_with_the_report_on_stdout_only() {
    let d = repo("crates/diag/tests/data/roce/seeded/05-headroom-short");
    let files = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"].map(|f| format!("{d}/{f}"));
    let o = rdmalab(&["lint", "roce", &files[0], &files[1], &files[2]], None);
    assert_eq!(o.status.code(), Some(1), "{}{}", out(&o), err(&o));
    assert!(out(&o).contains("headroom-short"), "{}", out(&o));
    assert_eq!(err(&o), "");
}

#[test]
fn a_malformed_topology_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.net");
    std::fs::write(&p, "Switch\t4 \"sw0\"\n[1]\t\"sw1\"[1]\nbogus line here\n").unwrap();
    let o = rdmalab(&["topo", "info", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.starts_with("rdmalab: error: ") && e.contains("bad.net:3: expected a node record"),
        "{e}"
    );
}

#[test]
fn a_rejected_flag_exits_2() {
    let o = rdmalab(&["wire", "stats", "none.pcap", "--link-gbps", "0"], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert_eq!(
        err(&o),
        "rdmalab: error: --link-gbps must be a positive number, got 0\n"
    );
}

#[test]
fn a_malformed_scenario_exits_2_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(repo("examples/sim/credit-loops-updn.toml"))
        .unwrap()
        .replace("\"updn\"", "\"up-down\"");
    std::fs::write(&p, &text).unwrap();
    let line = text.lines().position(|l| l.contains("up-down")).unwrap() + 1;
    let o = rdmalab(&["sim", "run", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    let e = err(&o);
    assert!(
        e.contains("bad.toml") && e.contains(&format!("line {line}")) && e.contains("unknown variant `up-down`"),
        "{e}"
    );
}

#[test]
fn a_closed_pipe_exits_0_quietly() {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_rdmalab"))
        .args(["scenario", "explain"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // read one byte, then close the pipe while the command may still be writing
    let mut stdout = child.stdout.take().unwrap();
    let mut b = [0u8; 1];
    stdout.read_exact(&mut b).unwrap();
    drop(stdout);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(!err(&o).contains("error"), "{}", err(&o));
}

/// One scenario model, two forms: each command refuses the other's form with
/// exit 2 and names the command that runs it.
#[test]
fn a_scenario_of_the_other_form_exits_2_naming_the_command_for_it() {
    let o = rdmalab(&["sim", "run", &repo("examples/lab/rail-16x8-400g-tcp.toml")], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("is a comparison scenario") && err(&o).contains("rdmalab compare"),
        "{}",
        err(&o)
    );
    let o = rdmalab(&["compare", &repo("examples/sim/ft16-permutation-ib.toml")], None);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        err(&o).contains("is a packet-run scenario") && err(&o).contains("rdmalab sim run"),
        "{}",
        err(&o)
    );
    let o = rdmalab(
        &["scenario", "check", &repo("examples/sim/ft16-permutation-ib.toml")],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("ok (packet run: fat-tree3 radix 4 4xHDR, routing ftree, minhop, workload permutation)"));
}

/// `sim run --engine flow`: the traffic at flow level, the same flows line as the
/// packet level; a perftest workload and --capture are refused (exit 2).
#[test]
fn sim_run_at_flow_level_runs_traffic_and_refuses_what_needs_packets() {
    let o = rdmalab(
        &[
            "sim",
            "run",
            &repo("examples/sim/ft16-permutation-ib.toml"),
            "--engine",
            "flow",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let text = out(&o);
    assert!(
        text.starts_with("scenario ft16-permutation-ib (routing: ftree, flow level)\nflows: 16 of 16 completed;"),
        "{text}"
    );
    assert!(text.contains("flow level validated against the packet level"), "{text}");
    // auto: 16 hosts run packet by packet, and the choice is said
    let o = rdmalab(
        &[
            "sim",
            "run",
            &repo("examples/sim/ft16-permutation-ib.toml"),
            "--engine",
            "auto",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("engine auto: 16 hosts, at most 256: packet level"),
        "{}",
        err(&o)
    );
    assert!(!out(&o).contains("flow level"), "{}", out(&o));
    // auto past 256 hosts: the 432-host fat tree at flow level
    let o = rdmalab(
        &[
            "sim",
            "run",
            &repo("examples/sim/ft432-permutation-ib.toml"),
            "--engine",
            "auto",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(
        err(&o).contains("engine auto: 432 hosts, more than 256: flow level"),
        "{}",
        err(&o)
    );
    assert!(
        out(&o).starts_with("scenario ft432-permutation-ib (routing: ftree, flow level)"),
        "{}",
        out(&o)
    );
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("x.pcap");
    let o = rdmalab(
        &[
            "sim",
            "run",
            &repo("examples/sim/ft16-permutation-ib.toml"),
            "--engine",
            "flow",
            "--capture",
            "leaf0:1",
            "-o",
            pcap.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("need packets"), "{}", err(&o));
}
