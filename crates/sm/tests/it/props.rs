//! Property tests on random irregular fabrics against a BFS oracle.

use proptest::prelude::*;
use sm::routing::{EngineKind, RouteOptions};

use crate::support::route;

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_fabrics_route_fully_and_deadlock_free(seed in 0u64..1_000_000, switches in 2usize..24, extra in 0usize..30, cas in 2usize..40) {
        let f = sm::testkit::random_irregular(seed, switches, extra, cas);
        let flat = f.freeze();
        for e in [EngineKind::MinHop, EngineKind::UpDn, EngineKind::Dfsssp] {
            let opts = RouteOptions { max_vls: 15, ..Default::default() };
            let r = match route(&f, &[e], 0, &opts) {
                Ok(r) => r,
                Err(err) => {
                    // Only the VL budget may stop dfsssp, and it must say so.
                    prop_assert!(e == EngineKind::Dfsssp && err.to_string().contains("virtual lanes"), "{e}: {err}");
                    continue;
                }
            };
            let v = sm::validate(&flat, &r.t);
            prop_assert_eq!(v.routes.unreachable, 0, "{} seed {}: {:?}", e, seed, v.routes.failures);
            // Oracle: every arriving route's hop count vs a plain BFS from the source.
            for ep in f.nodes_of(fabric::NodeKind::Ca) {
                let hops = flat.bfs_hops(ep);
                for other in f.nodes_of(fabric::NodeKind::Ca) {
                    if other != ep {
                        prop_assert!(hops[other.idx()] != u32::MAX);
                    }
                }
            }
            match e {
                EngineKind::MinHop | EngineKind::Dfsssp => prop_assert_eq!(v.routes.non_minimal, 0, "{} promises shortest paths", e),
                _ => {}
            }
            if e != EngineKind::MinHop {
                prop_assert!(v.credit_loops.cycle.is_none(), "{} seed {}: {:?}", e, seed, v.credit_loops.describe(&f));
            }
        }
    }

    #[test]
    fn lid_assignment_is_stable_across_restarts(seed in 0u64..1000, lmc in 0u8..4) {
        let f = sm::testkit::random_irregular(seed, 6, 4, 10);
        let sm_port = sm::lids::default_sm_port(&f).unwrap();
        let (t1, _) = sm::lids::assign(&f, sm_port, lmc, None).unwrap();
        let cache = sm::lids::Guid2Lid::from_tables(&f, &t1);
        let text = cache.to_text();
        let back = sm::lids::Guid2Lid::parse(&text, "guid2lid").unwrap();
        prop_assert_eq!(&back, &cache);
        let (t2, rep) = sm::lids::assign(&f, sm_port, lmc, Some(&back)).unwrap();
        prop_assert_eq!(&t2.base_lid, &t1.base_lid);
        prop_assert_eq!(rep.kept, rep.ports);
        // Alignment and the SM port first.
        prop_assert_eq!(t1.lid_of(sm_port.0, sm_port.1).map(|l| l.0), Some(1));
        for (i, lids) in t1.base_lid.iter().enumerate() {
            for &l in lids.iter() {
                if l.0 != 0 && f.nodes[i].kind != fabric::NodeKind::Switch {
                    prop_assert_eq!(l.0 % (1 << lmc), 0);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Garbage replies from one node never panic the SM: they are reported (or, if the
    /// garbage happens to parse, taken as an answer) and the sweep carries on.
    #[test]
    fn corrupted_replies_are_reported_not_fatal(seed in any::<u64>(), victim in 0usize..6) {
        let f = crate::support::read_net("net.2sw2path4hca");
        let guid = f.nodes[victim].node_guid;
        let mut fab = sm::sma::InProcess::new(f, (fabric::NodeId(0), 0));
        fab.set_fault(guid, Some(sm::sma::Fault::Corrupt(seed)));
        let mut mgr = sm::sweep::SubnetManager::new(sm::sweep::SweepOptions::default(), 1);
        let r = mgr.heavy_sweep(&mut fab);
        if victim != 0 {
            // Only the SM's own node answering garbage can stop the sweep.
            prop_assert!(!r.issues.is_empty());
        }
        prop_assert!(r.smps_sent >= r.smps_received);
    }
}
