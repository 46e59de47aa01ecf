//! `sweep --slurm` against a real single-node Slurm (Debian slurm-wlm 22.05 and
//! munge, started in a temporary folder as ../shared/reference/
//! failures-isolation-sweeps.md §4.2–4.4 measured, stopped when the test ends).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{err, out, rdmalab};

/// A running munged, slurmctld and slurmd; stopped on drop, even on failure.
struct Cluster {
    dir: tempfile::TempDir,
    children: Vec<Child>,
}

impl Cluster {
    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    fn start() -> Option<Cluster> {
        if Command::new("slurmctld").arg("-V").output().is_err() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "slurmctld is not installed; scripts/test installs slurm-wlm and munge"
            );
            eprintln!("slurm-wlm is not installed: the Slurm test did not run");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        for d in ["munge", "run", "state", "spool", "log"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(t.join("munge"), std::fs::Permissions::from_mode(0o700)).unwrap();
        for d in [t.to_path_buf(), t.join("run")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let sock = t.join("run/munge.socket.2");
        let ok = Command::new("mungekey")
            .args(["-c", "-k"])
            .arg(t.join("munge/munge.key"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "mungekey");
        let mut c = Cluster {
            dir,
            children: Vec::new(),
        };
        let t = c.dir.path().to_path_buf();
        c.children.push(
            Command::new("munged")
                .arg("-F")
                .arg(format!("--key-file={}", t.join("munge/munge.key").display()))
                .arg(format!("--socket={}", sock.display()))
                .arg(format!("--pid-file={}", t.join("run/munged.pid").display()))
                .arg(format!("--log-file={}", t.join("munge/munged.log").display()))
                .arg(format!("--seed-file={}", t.join("munge/munged.seed").display()))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let host = String::from_utf8(Command::new("hostname").arg("-s").output().unwrap().stdout).unwrap();
        let host = host.trim();
        let conf = format!(
            "ClusterName=rdmalab\nSlurmctldHost={host}\nSlurmUser=root\nAuthType=auth/munge\n\
             AuthInfo=socket={sock}\nCredType=cred/munge\nStateSaveLocation={t}/state\n\
             SlurmdSpoolDir={t}/spool\nSlurmctldPidFile={t}/run/slurmctld.pid\n\
             SlurmdPidFile={t}/run/slurmd.pid\nSlurmctldLogFile={t}/log/slurmctld.log\n\
             SlurmdLogFile={t}/log/slurmd.log\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nMpiDefault=none\n\
             ReturnToService=2\nMailProg=/bin/true\nSlurmdParameters=config_overrides\n\
             NodeName={host} CPUs=4 RealMemory=4000 State=UNKNOWN\n\
             PartitionName=sim Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            sock = sock.display(),
            t = t.display()
        );
        std::fs::write(c.conf(), conf).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        for d in ["slurmctld", "slurmd"] {
            c.children.push(
                Command::new(d)
                    .args(["-D", "-f"])
                    .arg(c.conf())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        // wait for the node to be idle
        let t0 = Instant::now();
        loop {
            let o = Command::new("sinfo")
                .args(["-h", "-o", "%T"])
                .env("SLURM_CONF", c.conf())
                .output();
            if o.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "idle") {
                return Some(c);
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "Slurm did not come up");
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("scontrol")
            .arg("shutdown")
            .env("SLURM_CONF", self.conf())
            .output();
        std::thread::sleep(Duration::from_millis(500));
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn slurm(conf: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rdmalab"));
    cmd.args(args).env("SLURM_CONF", conf);
    cmd.output().unwrap()
}

fn wait_empty(conf: &Path, out: &Path) {
    let t0 = Instant::now();
    loop {
        let st = slurm(conf, &["sweep", "status", out.to_str().unwrap()]);
        if !String::from_utf8_lossy(&st.stdout).contains("in Slurm's queue") {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "{}",
            String::from_utf8_lossy(&st.stdout)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// 200 shards as a job array (8 shards a task), one task cancelled mid-run,
/// `sweep resume --slurm` completes the study, and the merged result equals the
/// same study run with `--local`.
#[test]
fn a_study_on_slurm_survives_a_cancelled_task_and_merges_as_a_local_run() {
    let Some(c) = Cluster::start() else { return };
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/small.toml"),
        d.path().join("base.toml"),
    )
    .unwrap();
    let seeds: Vec<String> = (1..=200).map(|s| s.to_string()).collect();
    let sp = d.path().join("study.toml");
    std::fs::write(
        &sp,
        format!(
            "name = \"s200\"\nscenario = \"base.toml\"\n[grid]\nseed = [{}]\n",
            seeds.join(", ")
        ),
    )
    .unwrap();
    let (sp, conf) = (sp.to_str().unwrap(), c.conf());
    let on = d.path().join("slurm");
    let o = slurm(
        &conf,
        &[
            "sweep",
            "run",
            sp,
            "-o",
            on.to_str().unwrap(),
            "--slurm",
            "--per-task",
            "8",
            "--throttle",
            "4",
        ],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(
        out(&o).contains("199 shards submitted as Slurm job array"),
        "{}",
        out(&o)
    );
    let job = std::fs::read_to_string(on.join("slurm-jobs.txt"))
        .unwrap()
        .trim()
        .to_string();
    // the last task is still pending: cancel it
    let k = Command::new("scancel")
        .arg(format!("{job}_24"))
        .env("SLURM_CONF", &conf)
        .status()
        .unwrap();
    assert!(k.success());
    wait_empty(&conf, &on);
    let st = slurm(&conf, &["sweep", "status", on.to_str().unwrap()]);
    let text = out(&st);
    assert!(text.contains("200 shards, 193 done, 0 failed, 7 missing"), "{text}");
    let r = slurm(
        &conf,
        &["sweep", "resume", on.to_str().unwrap(), "--slurm", "--per-task", "8"],
    );
    assert!(r.status.success(), "{}", err(&r));
    wait_empty(&conf, &on);
    let local = d.path().join("local");
    let l = rdmalab(
        &["sweep", "run", sp, "-o", local.to_str().unwrap(), "--local", "2"],
        None,
    );
    assert!(l.status.success(), "{}", err(&l));
    for dir in [&on, &local] {
        let m = rdmalab(&["sweep", "merge", dir.to_str().unwrap()], None);
        assert!(m.status.success(), "{}", err(&m));
    }
    let a = std::fs::read_to_string(on.join("merged.json")).unwrap();
    let b = std::fs::read_to_string(local.join("merged.json")).unwrap();
    assert!(a.contains("\"done\": 200"), "{a}");
    assert_eq!(a, b);
    drop(c);
}

/// Without a reachable controller, a Slurm study fails with a clear error and
/// keeps the shard it ran here.
#[test]
fn a_study_without_a_reachable_slurm_fails_clearly_and_keeps_what_it_ran() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/small.toml"),
        d.path().join("base.toml"),
    )
    .unwrap();
    let sp = d.path().join("study.toml");
    std::fs::write(
        &sp,
        "name = \"s\"\nscenario = \"base.toml\"\n[grid]\nseed = [1, 2, 3]\n",
    )
    .unwrap();
    let conf = d.path().join("none.conf");
    std::fs::write(&conf, "ClusterName=x\nSlurmctldHost=nowhere-rdmalab\n").unwrap();
    let on = d.path().join("o");
    let o = slurm(
        &conf,
        &[
            "sweep",
            "run",
            sp.to_str().unwrap(),
            "-o",
            on.to_str().unwrap(),
            "--slurm",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("sbatch"), "{}", err(&o));
    assert!(on.join("shards/00000/results.json").is_file());
}
