//! The documented exit codes, one command each (code 3, an internal failure such
//! as a ledger imbalance, cannot be provoked from input; `error::tests` checks
//! its mapping on the library errors that carry it).

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
