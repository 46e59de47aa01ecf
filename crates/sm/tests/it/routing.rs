//! Routing engines against validation: reachability, credit loops, balance.

use sm::routing::{EngineKind, RouteOptions};
use sm::testkit;

use crate::support::{read_net, route, routed};

const ALL: [EngineKind; 4] = EngineKind::ALL;

#[test]
fn every_engine_reaches_every_ca_on_the_ibsim_samples() {
    for net in [
        "net",
        "net.2sw2path",
        "net.2sw2path4hca",
        "net.2sw2path4hca2port",
        "credit-loops.converted.net",
    ] {
        let f = read_net(net);
        for e in ALL {
            let r = route(&f, &[e], 0, &RouteOptions::default());
            let r = match r {
                Ok(r) => r,
                Err(err) => {
                    // ftree may refuse non-trees, but must say why.
                    assert_eq!(e, EngineKind::Ftree, "{net} {e}: {err}");
                    continue;
                }
            };
            let v = sm::validate(&r.flat, &r.t);
            assert!(v.routes.pairs > 0, "{net}");
            assert_eq!(
                v.routes.unreachable,
                0,
                "{net} {e}: {:?}",
                v.routes.failures.iter().map(|x| x.describe(&f)).collect::<Vec<_>>()
            );
            if e == EngineKind::MinHop || e == EngineKind::Dfsssp {
                assert_eq!(v.routes.non_minimal, 0, "{net} {e} promises shortest paths");
            }
        }
    }
}

#[test]
fn minhop_has_a_credit_loop_on_the_credit_loops_topology_and_the_others_do_not() {
    let f = read_net("credit-loops.converted.net");
    let (_, v) = routed(&f, EngineKind::MinHop);
    let c = v
        .credit_loops
        .describe(&f)
        .expect("minhop credit loop (reference §3.4)");
    assert!(c.contains("SW_"), "{c}");
    for e in [EngineKind::UpDn, EngineKind::Ftree, EngineKind::Dfsssp] {
        let r = route(&f, &[e], 0, &RouteOptions::default());
        let Ok(r) = r else {
            assert_eq!(e, EngineKind::Ftree);
            continue;
        };
        let v = sm::validate(&r.flat, &r.t);
        assert!(v.credit_loops.cycle.is_none(), "{e}: {:?}", v.credit_loops.describe(&f));
        assert_eq!(v.routes.unreachable, 0);
    }
}

#[test]
fn fat_trees_route_fully_without_loops() {
    for f in [testkit::fat_tree_2(36, 18, 18, 1), testkit::fat_tree_3(4, 6, 6, 6, 3)] {
        for e in ALL {
            let (r, v) = routed(&f, e);
            assert_eq!(v.routes.unreachable, 0, "{e}");
            assert_eq!(v.routes.non_minimal, 0, "{e}: fat-tree routes are shortest");
            assert!(v.credit_loops.cycle.is_none(), "{e}");
            assert_eq!(r.outcome.engine, e);
        }
    }
}

#[test]
fn dfsssp_breaks_minhop_style_cycles_with_vl_layers_and_programs_sl2vl() {
    let f = read_net("credit-loops.converted.net");
    let (r, v) = routed(&f, EngineKind::Dfsssp);
    assert!(r.t.vls_used >= 1 && r.t.vls_used <= 8);
    assert!(v.credit_loops.cycle.is_none());
    assert_eq!(v.routes.non_minimal, 0);
    if r.t.vls_used > 1 {
        assert!(r.t.sl2vl.is_some() && r.t.path_sl.is_some());
        assert!(v.credit_loops.vls_used <= r.t.vls_used && v.credit_loops.vls_used > 1);
    }
    // With a single VL the same routes must be refused, naming the numbers.
    let opts = RouteOptions {
        max_vls: 1,
        ..Default::default()
    };
    if r.t.vls_used > 1 {
        let err = route(&f, &[EngineKind::Dfsssp], 0, &opts)
            .err()
            .expect("1 VL is not enough");
        assert!(err.to_string().contains("not enough virtual lanes"), "{err}");
        // ... and the engine list falls back visibly.
        let r2 = route(&f, &[EngineKind::Dfsssp, EngineKind::UpDn], 0, &opts).unwrap();
        assert_eq!(r2.outcome.engine, EngineKind::UpDn);
        assert_eq!(r2.outcome.fallbacks.len(), 1);
        assert!(r2.outcome.fallbacks[0].1.contains("virtual lanes"));
    }
}

#[test]
fn updn_on_a_torus_needs_no_roots_file_and_stays_loop_free() {
    let f = read_net("torus-5x5x5.generated.net");
    let (_, v) = routed(&f, EngineKind::UpDn);
    assert_eq!(v.routes.unreachable, 0);
    assert!(v.credit_loops.cycle.is_none(), "{:?}", v.credit_loops.describe(&f));
    // OpenSM's dfsssp needs 9 VLs here and gives up (reference §1.7: "Not enough VLs
    // available (avail=8, needed=9)"); path-granular layering fits in the 8 VLs.
    let r = route(&f, &[EngineKind::Dfsssp, EngineKind::UpDn], 0, &RouteOptions::default()).unwrap();
    assert_eq!(r.outcome.engine, EngineKind::Dfsssp, "{:?}", r.outcome.fallbacks);
    assert!(r.t.vls_used > 1 && r.t.vls_used <= 8, "{}", r.t.vls_used);
    // With 4 VLs it cannot, and the list falls back visibly to updn.
    let opts = RouteOptions {
        max_vls: 4,
        ..Default::default()
    };
    let r2 = route(&f, &[EngineKind::Dfsssp, EngineKind::UpDn], 0, &opts).unwrap();
    assert_eq!(r2.outcome.engine, EngineKind::UpDn);
    assert!(
        r2.outcome.fallbacks[0].1.contains("not enough virtual lanes"),
        "{:?}",
        r2.outcome.fallbacks
    );
    let v = sm::validate(&r.flat, &r.t);
    assert_eq!(v.routes.unreachable, 0);
    assert_eq!(v.routes.non_minimal, 0);
    assert!(v.credit_loops.cycle.is_none(), "{:?}", v.credit_loops.describe(&f));
    let (_, v) = routed(&f, EngineKind::MinHop);
    assert!(
        v.credit_loops.cycle.is_some(),
        "minhop loops on a torus (reference §3.4)"
    );
    let err = route(&f, &[EngineKind::Ftree], 0, &RouteOptions::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("not a fat tree"), "{err}");
}

/// Route counts of switch-to-switch ports grouped by (from level, to level).
fn per_tier(f: &fabric::Fabric, v: &sm::Validation) -> std::collections::BTreeMap<(u8, u8), (u64, u64)> {
    let mut m = std::collections::BTreeMap::new();
    for p in v.loads.ports.iter().filter(|p| p.isl) {
        let peer = f.peer(p.node, p.port).unwrap().0.node;
        let key = (f.nodes[p.node.idx()].level.unwrap(), f.nodes[peer.idx()].level.unwrap());
        let e = m.entry(key).or_insert((u64::MAX, 0));
        e.0 = e.0.min(p.routes);
        e.1 = e.1.max(p.routes);
    }
    m
}

#[test]
fn ftree_and_updn_spread_routes_evenly_on_complete_fat_trees() {
    for f in [
        testkit::fat_tree_2(8, 4, 4, 1),
        testkit::fat_tree_3(4, 4, 4, 4, 2),
        testkit::fat_tree_3(4, 6, 6, 6, 3),
    ] {
        for e in [EngineKind::Ftree, EngineKind::UpDn] {
            let (_, v) = routed(&f, e);
            for (tier, (lo, hi)) in per_tier(&f, &v) {
                assert_eq!(lo, hi, "{e}: tier {tier:?} carries {lo}..{hi} routes per port");
            }
        }
    }
}

#[test]
fn generated_648_and_2592_host_fat_trees_route_fully_loop_free_and_even() {
    let ft2 = fabric::leaf_spine(&fabric::LeafSpineParams::default()).unwrap();
    let ft3 = fabric::fat_tree3(&fabric::FatTree3Params {
        pods: Some(8),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(ft2.count(fabric::NodeKind::Ca), 648);
    assert_eq!(ft3.count(fabric::NodeKind::Ca), 2592);
    for f in [&ft2, &ft3] {
        for e in ALL {
            let (r, v) = routed(f, e);
            assert_eq!(v.routes.unreachable, 0, "{e}");
            assert_eq!(v.routes.non_minimal, 0, "{e}");
            assert!(v.credit_loops.cycle.is_none(), "{e}");
            assert_eq!(r.outcome.engine, e);
        }
        // ftree: every leaf up-link carries the same number of routes.
        let (_, v) = routed(f, EngineKind::Ftree);
        let up: Vec<u64> = v
            .loads
            .ports
            .iter()
            .filter(|p| p.isl && f.nodes[p.node.idx()].level == Some(1))
            .map(|p| p.routes)
            .collect();
        assert!(!up.is_empty());
        assert_eq!(
            up.iter().min(),
            up.iter().max(),
            "leaf up-links: {:?}",
            &up[..up.len().min(8)]
        );
    }
}

#[test]
fn root_and_compute_node_guid_lists_steer_updn_and_ftree() {
    let f = read_net("credit-loops.converted.net");
    let guid = |n: &str| f.nodes[f.by_name(n).unwrap().idx()].node_guid;
    let roots: Vec<fabric::Guid> = ["SW_L0_1", "SW_L0_2", "SW_L0_3", "SW_L0_4"]
        .iter()
        .map(|n| guid(n))
        .collect();
    let text: String = roots.iter().map(|g| format!("0x{:016x}\n", g.0)).collect();
    let parsed = sm::run::parse_guid_list(&format!("# roots\n{text}"), "roots.txt").unwrap();
    assert_eq!(parsed, roots);
    assert!(
        sm::run::parse_guid_list("0x12\nnot-a-guid\n", "roots.txt")
            .unwrap_err()
            .starts_with("roots.txt:2:")
    );
    for e in [EngineKind::UpDn, EngineKind::Ftree] {
        let opts = RouteOptions {
            root_guids: roots.clone(),
            ..Default::default()
        };
        let r = route(&f, &[e], 0, &opts).unwrap();
        let v = sm::validate(&r.flat, &r.t);
        assert_eq!(v.routes.unreachable, 0, "{e}");
        assert!(v.credit_loops.cycle.is_none(), "{e}");
    }
    // A GUID that is not in the fabric is an error naming it, not a silent default.
    let opts = RouteOptions {
        root_guids: vec![fabric::Guid(0xdead)],
        ..Default::default()
    };
    let err = route(&f, &[EngineKind::UpDn], 0, &opts).err().unwrap();
    assert!(err.to_string().contains("000000000000dead"), "{err}");
    // Compute nodes: only the hosts under SW_L2_1..4 count; ftree still routes everyone.
    let cns: Vec<fabric::Guid> = ["H-1", "H-2", "H-3", "H-4", "H-5", "H-6", "H-7", "H-8"]
        .iter()
        .map(|n| f.nodes[f.by_name(n).unwrap().idx()].port_guid(1))
        .collect();
    let opts = RouteOptions {
        cn_guids: cns,
        ..Default::default()
    };
    let r = route(&f, &[EngineKind::Ftree], 0, &opts).unwrap();
    let v = sm::validate(&r.flat, &r.t);
    assert_eq!(v.routes.unreachable, 0);
    assert!(v.credit_loops.cycle.is_none());
}

/// Dual ToRs (each NIC cabled to both leaves of its rail's pair): our SM gives
/// every CA port a LID and ftree reaches every pair of them without a credit
/// loop. Two planes (a NIC port on each, the planes' switches never meeting)
/// are two subnets: one SM refuses them, naming a switch of each.
#[test]
fn dual_tors_route_with_ftree_and_planes_are_refused_by_name() {
    use fabric::generate::{SuperPodParams, superpod};
    let p = SuperPodParams {
        sus: 2,
        servers_per_su: 4,
        rails: 4,
        radix: 16,
        dual_tor: true,
        ..SuperPodParams::default()
    };
    let f = superpod(&p).unwrap();
    let o = sm::run::RunOptions {
        engines: vec![EngineKind::Ftree],
        validate: true,
        ..Default::default()
    };
    let (_, report) = sm::run::run(&f, &o).unwrap();
    let v = report.validation.unwrap();
    // 32 NICs × 2 ports
    assert_eq!(v.routes.pairs, 64 * 63);
    assert!(v.ok(), "{:?}", v.routes);
    let planes = superpod(&SuperPodParams {
        dual_tor: false,
        planes: 2,
        ..p
    })
    .unwrap();
    let e = sm::run::run(&planes, &o).unwrap_err().to_string();
    assert!(
        e.contains("2 switch planes") && e.contains("p0-su0-rail0") && e.contains("p1-su0-rail0"),
        "{e}"
    );
}
