//! Real OpenSM over ibsim (Debian `opensm`, `ibsim-utils`, `libumad2sim0`; reference
//! §4): route the same net file with OpenSM and with rdmalab and compare the busiest
//! switch-to-switch port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use sm::routing::EngineKind;

const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

/// ibsim as a child; killed (by its own handle) on drop.
struct Ibsim(Child);

impl Drop for Ibsim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn have_tools() -> bool {
    Path::new("/usr/bin/ibsim").exists() && Path::new("/usr/sbin/opensm").exists() && Path::new(UMAD2SIM).exists()
}

/// Run OpenSM once with `engine` on `net`; returns the `opensm-lfts.dump` text.
fn opensm_lfts(net: &Path, engine: &str, dir: &Path) -> String {
    let sock = format!("rdmalab-sm-{}-{engine}", std::process::id());
    let _sim = Ibsim(
        Command::new("ibsim")
            .args(["-s", "-n", "-N", "4096", "-S", "1024", "-P", "40000"])
            .arg(net)
            .env("IBSIM_SOCKNAME", &sock)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ibsim"),
    );
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    let dump = dir.join("opensm-lfts.dump");
    // ibsim needs a moment to listen; retry OpenSM until it produces its dump.
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let st = Command::new("timeout")
            .args(["60", "opensm", "-o", "-s", "0", "-R", engine, "-D", "0x43", "-f"])
            .arg(dir.join("osm.log"))
            .env("IBSIM_SOCKNAME", &sock)
            .env("LD_PRELOAD", UMAD2SIM)
            .env("OSM_TMP_DIR", format!("{}/", dir.display()))
            .env("OSM_CACHE_DIR", dir.join("cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run opensm");
        if st.success() && dump.exists() {
            return std::fs::read_to_string(&dump).unwrap();
        }
    }
    panic!(
        "OpenSM produced no {} (see {})",
        dump.display(),
        dir.join("osm.log").display()
    );
}

#[test]
fn opensm_over_ibsim_ftree_and_updn_busiest_port_vs_ours() {
    if !have_tools() {
        eprintln!("skipped: ibsim/opensm/libumad2sim not installed (scripts/test installs them)");
        return;
    }
    let net: PathBuf = sm::testkit::shared_formats().join("ibsim-net/fattree-648.generated.net");
    let f = crate::support::read_net("fattree-648.generated.net");
    let tmp = tempfile::tempdir().unwrap();
    for (engine, ours) in [("ftree", EngineKind::Ftree), ("updn", EngineKind::UpDn)] {
        let dir = tmp.path().join(engine);
        let text = opensm_lfts(&net, engine, &dir);
        let theirs = sm::dump::parse_lfts_dump(&f, &text, "opensm-lfts.dump").unwrap();
        let v_theirs = sm::validate(&f.freeze(), &theirs);
        assert_eq!(v_theirs.routes.unreachable, 0, "OpenSM {engine}");
        let (_, v_ours) = crate::support::routed(&f, ours);
        eprintln!(
            "{engine}: ours {} OpenSM {}",
            v_ours.loads.max_routes_isl, v_theirs.loads.max_routes_isl
        );
        assert!(v_ours.loads.max_routes_isl <= v_theirs.loads.max_routes_isl, "{engine}");
        assert!(v_ours.credit_loops.cycle.is_none());
    }
}
