//! The RoCE linter's findings run through the simulator: a linted configuration as a
//! simulator variant, its measured consequence, and the RoCE trace against the path
//! the simulator takes.

use std::path::{Path, PathBuf};

use diag::roce::{LintOptions, parse_input};

/// The linter's test corpus (seeded misconfigurations), kept beside diag's tests.
fn data(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../diag/tests/data/roce")
        .join(p)
}

fn examples(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/roce")
        .join(p)
}

#[test]
fn linted_configuration_becomes_a_simulator_variant() {
    use diag::roce::{Parsed, lint_parsed};
    use lab::roce_variant::to_sim_config;
    let run = |dir: PathBuf| {
        let files: Vec<(String, Parsed)> = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"]
            .iter()
            .map(|f| {
                let name = dir.join(f).display().to_string();
                let p = parse_input(&name, &std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
                (name, p)
            })
            .collect();
        let refs: Vec<(&str, Parsed)> = files.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
        let report = lint_parsed(&refs, &LintOptions::default());
        to_sim_config(&refs, &report, &sim::roce::net::RoceConfig::default())
    };
    let (cfg, notes) = run(examples("clean"));
    assert!(cfg.pfc.enabled && cfg.switch.ecn && notes.watchdog, "{notes:?}");
    assert_eq!(cfg.switch.red.len(), 1);
    assert_eq!(cfg.switch.red[0].0, 100_000_000_000);
    assert_eq!(
        (cfg.switch.red[0].1.kmin, cfg.switch.red[0].1.kmax),
        (1_048_576, 2_097_152)
    );
    assert!((cfg.switch.red[0].1.pmax - 0.05).abs() < 1e-9);
    assert_eq!(cfg.switch.buffer_bytes, 12_000_000);
    assert_eq!(cfg.nic.mtu, 4096);
    let wd = cfg.switch.watchdog.unwrap();
    assert_eq!(
        (wd.poll, wd.detection, wd.restoration),
        (sim::Time::ms(200), sim::Time::ms(200), sim::Time::ms(200))
    );
    // DSCP 26 in a lossy TC: the variant runs without PFC (and so without a watchdog).
    let (cfg, _) = run(data("seeded/20-switch-maps-rdma-dscp-to-lossy-tc"));
    assert!(!cfg.pfc.enabled && cfg.switch.watchdog.is_none());
    // WRED without ECN: no marking.
    let (cfg, _) = run(data("seeded/17-wred-without-ecn"));
    assert!(cfg.pfc.enabled && !cfg.switch.ecn);
    // Not-ECT ToS: no marking either.
    let (cfg, _) = run(data("seeded/13-tos-not-ect"));
    assert!(!cfg.switch.ecn);
}

#[test]
fn a_lint_finding_becomes_a_measured_consequence() {
    use diag::roce::{Parsed, lint_parsed};
    use lab::roce_variant::to_sim_config;
    use sim::roce::net::{FlowSpec, RoceSim};
    let variant = |dir: PathBuf| {
        let files: Vec<(String, Parsed)> = ["config_db.json", "mlnx_qos.txt", "sysfs.txt"]
            .iter()
            .map(|f| {
                let name = dir.join(f).display().to_string();
                (
                    name.clone(),
                    parse_input(&name, &std::fs::read_to_string(dir.join(f)).unwrap()).unwrap(),
                )
            })
            .collect();
        let refs: Vec<(&str, Parsed)> = files.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
        let report = lint_parsed(&refs, &LintOptions::default());
        to_sim_config(&refs, &report, &sim::roce::net::RoceConfig::default()).0
    };
    let f = leaf_spine_4x4();
    let hosts: Vec<fabric::NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
    // 15-to-1 incast of 1 MB each: more than the 12 MB buffer of the config.
    let flows: Vec<FlowSpec> = hosts[1..]
        .iter()
        .enumerate()
        .map(|(i, &src)| FlowSpec {
            src,
            dst: hosts[0],
            size: 1 << 20,
            messages: 1,
            start: sim::Time::ZERO,
            sport: 0xc000 + i as u16,
            dport: 200,
        })
        .collect();
    let mut out = Vec::new();
    for dir in [examples("clean"), data("seeded/20-switch-maps-rdma-dscp-to-lossy-tc")] {
        let cfg = variant(dir.clone());
        let mut s = RoceSim::new(&f, cfg, &flows).unwrap();
        let st = s.run(sim::Time::ms(50));
        let done = (0..flows.len()).filter_map(|k| s.flow_done(k)).max();
        out.push((format!("{st:?}"), s.ledger.total_dropped(), done, s.ledger_balances()));
    }
    eprintln!("clean vs lossy (status, drops, last completion, ledger ok): {out:?}");
    let (clean, lossy) = (&out[0], &out[1]);
    assert!(clean.3 && lossy.3, "{out:?}");
    assert_eq!(clean.1, 0, "the clean config is lossless: {out:?}");
    assert!(
        lossy.1 > 0,
        "DSCP 26 in a lossy class must drop under a 15:1 incast: {out:?}"
    );
    assert!(clean.2.is_some() && lossy.2.is_some(), "{out:?}");
    assert!(lossy.2 > clean.2, "drops cost go-back-N time: {out:?}");
}

#[test]
fn roce_trace_predicts_the_path_the_simulator_takes() {
    use diag::roce::trace::{HopConfigs, default_hash, trace_roce};
    use sim::roce::net::{FlowSpec, RoceConfig, RoceSim};
    let f = leaf_spine_4x4();
    let hosts: Vec<fabric::NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
    for sport in [0xc000u16, 0xc001, 0xc0de, 0xfffe] {
        let t = trace_roce(
            &f,
            &f.node(hosts[1]).name,
            &f.node(hosts[14]).name,
            sport,
            26,
            default_hash(),
            &HopConfigs::default(),
        )
        .unwrap();
        let flow = FlowSpec {
            src: hosts[1],
            dst: hosts[14],
            size: 64 << 10,
            messages: 1,
            start: sim::Time::ZERO,
            sport,
            dport: 100,
        };
        let mut s = RoceSim::new(&f, RoceConfig::default(), &[flow]).unwrap();
        s.run(sim::Time::ms(10));
        assert!(s.flow_done(0).is_some());
        for h in &t.hops {
            let sw = f.by_name(&h.switch).unwrap();
            for &p in &h.group {
                let bytes = s.tx_bytes(sw, p);
                if p == h.out_port {
                    assert!(
                        bytes >= 64 << 10,
                        "sport {sport:#x}: {} port {p} should carry the flow ({bytes} B)\n{}",
                        h.switch,
                        t.text
                    );
                } else {
                    assert!(
                        bytes < 4096,
                        "sport {sport:#x}: {} port {p} carried {bytes} B, trace says port {}\n{}",
                        h.switch,
                        h.out_port,
                        t.text
                    );
                }
            }
        }
    }
}

/// 4 leaves × 4 spines at 100G, 4 hosts per leaf.
fn leaf_spine_4x4() -> fabric::Fabric {
    fabric::leaf_spine(&fabric::LeafSpineParams {
        radix: 8,
        hosts_per_leaf: Some(4),
        spines: Some(4),
        leaves: Some(4),
        rate: fabric::LinkRate::eth(100).unwrap(),
        ..Default::default()
    })
    .unwrap()
}
