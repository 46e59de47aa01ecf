//! Routing engines against validation: reachability, credit loops, balance.

use sm::routing::{EngineKind, RouteOptions};
use sm::testkit;

use crate::support::{read_net, route, routed};

const ALL: [EngineKind; 4] = EngineKind::ALL;

#[test]
fn every_engine_reaches_every_ca_on_the_ibsim_samples() {
    for net in ["net", "net.2sw2path", "net.2sw2path4hca", "net.2sw2path4hca2port", "credit-loops.converted.net"] {
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
            assert_eq!(v.routes.unreachable, 0, "{net} {e}: {:?}", v.routes.failures.iter().map(|x| x.describe(&f)).collect::<Vec<_>>());
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
    let c = v.credit_loops.describe(&f).expect("minhop credit loop (reference §3.4)");
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
fn debug_print() {
    let f = read_net("credit-loops.converted.net");
    for e in ALL {
        match route(&f, &[e], 0, &RouteOptions::default()) {
            Ok(r) => {
                let v = sm::validate(&r.flat, &r.t);
                eprintln!("{e}: pairs {} unreach {} nonmin {} hops {:?} loop {:?} max_isl {} vls {}", v.routes.pairs, v.routes.unreachable, v.routes.non_minimal, v.routes.hop_histogram, v.credit_loops.describe(&f), v.loads.max_routes_isl, r.t.vls_used);
            }
            Err(err) => eprintln!("{e}: {err}"),
        }
    }
}
