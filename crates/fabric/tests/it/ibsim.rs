//! Real peers: rdmalab's ibsim net files load in Debian's ibsim 0.10, and Debian's
//! `ibnetdiscover` (infiniband-diags 44), run through `libumad2sim.so` against it,
//! discovers exactly the fabric rdmalab generated: same GUIDs, same cabling.
//!
//! How (shared InfiniBand reference §4): `ibsim -s -n <net>` with a unique
//! `IBSIM_SOCKNAME`, then `LD_PRELOAD=libumad2sim.so ibnetdiscover` with the same
//! socket name. The test starts ibsim itself and kills that one process on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fabric::format::{self, Format, ibsim_rate};
use fabric::generate::{FatTree3Params, LeafSpineParams, fat_tree3, leaf_spine};
use fabric::{Fabric, NodeKind};

fn umad2sim() -> PathBuf {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
        "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
        "/usr/lib/umad2sim/libumad2sim.so",
    ];
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("libumad2sim.so not found: install libumad2sim0 (scripts/test does)")
}

/// One ibsim process, killed when dropped.
struct Ibsim {
    child: Child,
    sock: String,
    dir: tempfile::TempDir,
}

impl Ibsim {
    fn start(net: &str, tag: &str, limits: &[&str]) -> Ibsim {
        let dir = tempfile::tempdir().unwrap();
        let net_path = dir.path().join("fabric.net");
        std::fs::write(&net_path, net).unwrap();
        let sock = format!("rdmalab-fabric-{tag}-{}", std::process::id());
        let out = std::fs::File::create(dir.path().join("ibsim.out")).unwrap();
        let err = out.try_clone().unwrap();
        let child = Command::new("ibsim")
            .args(["-s", "-n"])
            .args(limits)
            .arg(&net_path)
            .env("IBSIM_SOCKNAME", &sock)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("cannot run ibsim: install ibsim-utils (scripts/test does)");
        let mut sim = Ibsim { child, sock, dir };
        sim.wait_ready();
        sim
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("ibsim.out")).unwrap_or_default()
    }

    fn wait_ready(&mut self) {
        let t0 = Instant::now();
        loop {
            let log = self.log();
            if log.contains("Network simulator ready") {
                return;
            }
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!("ibsim exited ({st}) before it was ready:\n{log}");
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "ibsim not ready after 30 s:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn ibnetdiscover(&self, args: &[&str]) -> String {
        let out = Command::new("ibnetdiscover")
            .args(args)
            .env("LD_PRELOAD", umad2sim())
            .env("IBSIM_SOCKNAME", &self.sock)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("cannot run ibnetdiscover: install infiniband-diags (scripts/test does)");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "ibnetdiscover failed: {}\n{}\nibsim:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        stdout
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What ibsim 0.10 can show of `f`: the same fabric with rates as it spells them.
fn as_ibsim_sees_it(f: &Fabric) -> Fabric {
    let mut g = f.clone();
    for l in &mut g.links {
        l.rate = ibsim_rate(l.rate);
    }
    g
}

fn check_discovery(f: &Fabric, tag: &str, limits: &[&str], dump_name: &Path) {
    let net = format::write(f, Format::Ibsim).unwrap();
    let sim = Ibsim::start(&net, tag, limits);
    let dump = sim.ibnetdiscover(&[]);
    let _ = std::fs::write(dump_name, &dump);
    let found = fabric::format::parse(
        "ibnetdiscover",
        dump.as_bytes(),
        None,
        None,
        &fabric::ReadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(found.1, Format::Ibnetdiscover);
    let found = found.0;
    let want = as_ibsim_sees_it(f);
    let d = want.diff(&found);
    assert!(
        d.is_empty(),
        "ibnetdiscover found a different fabric:\n{}",
        d.join("\n")
    );
    assert_eq!(want.cabling_signature(), found.cabling_signature());
    assert_eq!(found.count(NodeKind::Switch), f.count(NodeKind::Switch));
    assert_eq!(found.count(NodeKind::Ca), f.count(NodeKind::Ca));
    // Node descriptions travel through ibsim too, and with them the servers.
    for n in &f.nodes {
        let m = found.node(found.by_guid(n.node_guid).unwrap());
        assert_eq!(m.desc, n.desc);
    }
    assert_eq!(found.hosts.len(), f.hosts.len());
    // `-g` (chassis grouping) reads back the same, and the `-p` port report agrees
    // port by port with the generated model.
    let grouped = sim.ibnetdiscover(&["-g"]);
    let g = fabric::format::parse(
        "ibnetdiscover -g",
        grouped.as_bytes(),
        None,
        None,
        &fabric::ReadOptions::default(),
    )
    .unwrap()
    .0;
    assert!(want.diff(&g).is_empty());
    let ports = sim.ibnetdiscover(&["-p"]);
    let rep = fabric::format::parse_ports_report("ibnetdiscover -p", &ports).unwrap();
    let cabled = rep.iter().filter(|r| r.peer.is_some()).count();
    assert_eq!(cabled, 2 * f.links.len());
    let d = fabric::format::check_ports_report(&want, &rep);
    assert!(d.is_empty(), "{}", d[..d.len().min(20)].join("\n"));
}

#[test]
fn ibsim_peer_discovers_generated_648_host_fat_tree() {
    let f = leaf_spine(&LeafSpineParams::default()).unwrap();
    assert_eq!(f.count(NodeKind::Ca), 648);
    let dir = tempfile::tempdir().unwrap();
    check_discovery(&f, "ft648", &[], &dir.path().join("dump.topo"));
}

#[test]
fn ibsim_peer_discovers_generated_2592_host_3_tier_fat_tree() {
    let f = fat_tree3(&FatTree3Params {
        radix: 36,
        pods: Some(8),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(f.count(NodeKind::Ca), 2592);
    let dir = tempfile::tempdir().unwrap();
    // 2,988 nodes, 396 switches and 17,244 port slots exceed ibsim's defaults
    // (2048/256/13312); the file's header says which flags it needs.
    let net = fabric::format::write(&f, Format::Ibsim).unwrap();
    assert!(
        net.contains("# Load with: ibsim -s -N 2988 -S 396 -P 17244 <this file>"),
        "{}",
        &net[..400]
    );
    check_discovery(
        &f,
        "ft2592",
        &["-N", "2988", "-S", "396", "-P", "17244"],
        &dir.path().join("dump.topo"),
    );
}

#[test]
fn ibsim_peer_discovers_rail_pod_torus_and_multi_pod() {
    use fabric::generate::{MultiPodParams, RailParams, TorusParams, multi_pod, rail, torus};
    let dir = tempfile::tempdir().unwrap();
    let rail16x8 = rail(&RailParams::default()).unwrap();
    check_discovery(&rail16x8, "rail", &[], &dir.path().join("rail.topo"));
    // a ring of size 2 puts two parallel cables between the same two switches
    let t = torus(&TorusParams {
        dims: [3, 2, 2],
        hosts_per_switch: 2,
        ..Default::default()
    })
    .unwrap();
    check_discovery(&t, "torus", &[], &dir.path().join("torus.topo"));
    let m = multi_pod(&MultiPodParams {
        pods: 3,
        radix: 8,
        leaves_per_pod: 2,
        hosts_per_leaf: 4,
        spines_per_pod: 2,
        spine_uplinks: 2,
        ..Default::default()
    })
    .unwrap();
    check_discovery(&m, "multipod", &[], &dir.path().join("multipod.topo"));
}

#[test]
fn ibsim_loads_rdmalab_ibnetdiscover_output_too() {
    // ibsim reads ibnetdiscover output; rdmalab's ibnetdiscover writer must be
    // something it loads with the same GUIDs and cabling (HDR: a speed 0.10 knows).
    let p = LeafSpineParams {
        radix: 8,
        rate: fabric::LinkRate::HDR_4X,
        ..Default::default()
    };
    let f = leaf_spine(&p).unwrap();
    let text = format::write(&f, Format::Ibnetdiscover).unwrap();
    let sim = Ibsim::start(&text, "ibnd", &[]);
    let dump = sim.ibnetdiscover(&[]);
    let found = fabric::format::parse(
        "ibnetdiscover",
        dump.as_bytes(),
        None,
        None,
        &fabric::ReadOptions::default(),
    )
    .unwrap()
    .0;
    let d = f.diff(&found);
    assert!(d.is_empty(), "{}", d.join("\n"));
}
