//! Real OpenSM over ibsim (Debian `opensm`, `ibsim-utils`, `libumad2sim0`; reference
//! §4): route the same net file with OpenSM and with rdmalab and compare the busiest
//! switch-to-switch port. The ibsim/OpenSM harness is in `support.rs`.

use std::process::Stdio;

use sm::routing::EngineKind;

use crate::support::{Ibsim, require_ibsim_tools};

/// Run OpenSM once (`-o`) with `engine` on `net`; returns the `opensm-lfts.dump` text.
fn opensm_lfts(net: &str, engine: &str) -> String {
    let sim = Ibsim::start(net, &format!("osm-{engine}"));
    let dir = sim.dir.path().join(engine);
    std::fs::create_dir_all(dir.join("cache")).unwrap();
    let dump = dir.join("opensm-lfts.dump");
    let st = sim
        .cmd("timeout", None)
        .args(["60", "opensm", "-o", "-s", "0", "-R", engine, "-D", "0x43", "-f"])
        .arg(dir.join("osm.log"))
        .env("OSM_TMP_DIR", format!("{}/", dir.display()))
        .env("OSM_CACHE_DIR", dir.join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run opensm");
    assert!(
        st.success() && dump.exists(),
        "OpenSM produced no {} ({st}):\n{}",
        dump.display(),
        std::fs::read_to_string(dir.join("osm.log")).unwrap_or_default()
    );
    std::fs::read_to_string(&dump).unwrap()
}

#[test]
fn opensm_over_ibsim_ftree_and_updn_busiest_port_vs_ours() {
    require_ibsim_tools();
    let p = sm::testkit::samples_dir().join("fattree-648.generated.net");
    let net = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let f = crate::support::read_net("fattree-648.generated.net");
    for (engine, ours) in [("ftree", EngineKind::Ftree), ("updn", EngineKind::UpDn)] {
        let text = opensm_lfts(&net, engine);
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
