//! `rdmalab sm run --umad` end to end through the CLI binary: ibsim (Debian
//! `ibsim-utils`) serves a generated fat tree, the binary runs under
//! `LD_PRELOAD=libumad2sim.so` (`libumad2sim0`), and real `ibnetdiscover`
//! (`infiniband-diags`) reads back the LIDs the CLI reported. `scripts/test` installs
//! all three; the library-level tests of the same driver are in `crates/sm/tests/it`.

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{err, out, rdmalab};

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).exists()))
}

/// The ibsim child, killed (only it) when the test ends.
struct Ibsim(Child);

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_ibsim(dir: &Path, net: &Path, sock: &str) -> Ibsim {
    let log = dir.join("ibsim.out");
    let child = Command::new("ibsim")
        .arg("-s")
        .arg(net)
        .env("IBSIM_SOCKNAME", sock)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ibsim");
    let sim = Ibsim(child);
    let t0 = Instant::now();
    loop {
        let mut s = String::new();
        std::fs::File::open(&log).unwrap().read_to_string(&mut s).unwrap();
        if s.contains("Network simulator ready") {
            return sim;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "ibsim did not start:\n{s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sm_run_umad_ibsim_brings_up_a_generated_fat_tree_and_ibnetdiscover_agrees() {
    let Some(preload) = sm::testkit::umad2sim() else {
        panic!("libumad2sim.so not found: install libumad2sim0 (scripts/test does)");
    };
    assert!(
        on_path("ibsim") && on_path("ibnetdiscover"),
        "ibsim and ibnetdiscover are needed: install ibsim-utils and infiniband-diags (scripts/test does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("ft8.net");
    let g = rdmalab(
        &[
            "topo",
            "gen",
            "fat-tree",
            "--radix",
            "8",
            "--format",
            "ibsim",
            "-o",
            net.to_str().unwrap(),
        ],
        None,
    );
    assert!(g.status.success(), "{}", err(&g));
    let sock = format!("rdmalab-cli-umad-{}", std::process::id());
    let _sim = start_ibsim(dir.path(), &net, &sock);
    let under_sim = |prog: &str| {
        let mut c = Command::new(prog);
        c.env("LD_PRELOAD", &preload)
            .env("IBSIM_SOCKNAME", &sock)
            .env("SIM_HOST", "host00")
            .current_dir(dir.path());
        c
    };

    let o = under_sim(env!("CARGO_BIN_EXE_rdmalab"))
        .args(["sm", "run", "--umad", "--once", "--engine", "ftree", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "sm run --umad failed:\n{}", err(&o));
    let j: serde_json::Value = serde_json::from_str(&out(&o)).expect("JSON on stdout");
    let sw = &j["last_sweep"];
    assert_eq!(sw["subnet_up"], true, "{sw}");
    assert_eq!(sw["engine"], "ftree", "{sw}");
    assert_eq!(
        (sw["switches"].as_u64(), sw["cas"].as_u64()),
        (Some(12), Some(32)),
        "{sw}"
    );
    assert_eq!(sw["issues"].as_array().map(Vec::len), Some(0), "{sw}");
    assert_eq!(sw["validation"]["ok"], true, "{sw}");
    // 12 switch LIDs + 32 CA LIDs, the SM's own port first.
    assert_eq!(sw["lids"]["max_lid"].as_u64(), Some(44), "{sw}");

    // The real ibnetdiscover sees every CA port with a LID in 1..=44, all distinct,
    // and host00 (the SM's port) with LID 1.
    let d = under_sim("ibnetdiscover").output().unwrap();
    assert!(d.status.success(), "ibnetdiscover: {}", err(&d));
    let text = out(&d);
    let mut lids = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("\nCa") || b.starts_with("Ca")) {
        let name = block.lines().find(|l| l.starts_with("Ca")).unwrap_or("");
        let port = block.lines().find(|l| l.starts_with('[')).unwrap_or("");
        let lid: u64 = port
            .split("lid ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no LID on {name:?}: {port:?}"));
        if name.contains("\"host00") {
            assert_eq!(lid, 1, "{block}");
        }
        lids.push(lid);
    }
    assert_eq!(lids.len(), 32, "{text}");
    lids.sort_unstable();
    lids.dedup();
    assert_eq!(lids.len(), 32, "duplicate LIDs in ibnetdiscover:\n{text}");
    assert!(lids.iter().all(|&l| (1..=44).contains(&l)), "{lids:?}");
}
