//! CLI tests: run the real binary and snapshot what it prints.

mod calibrate;
mod compare;
mod exit_codes;
mod lab_cmds;
mod partitions;
mod perftest;
mod sim_hpcc;
mod sm_umad;
mod sweep;
mod sweep_slurm;
mod train;

use std::process::{Command, Output};

/// Run `rdmalab` with `args` and optional stdin.
pub fn rdmalab(args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rdmalab"));
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn rdmalab");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().expect("wait for rdmalab")
}

/// stdout as text.
pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// stderr as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
