//! Against OpenSM's own dumps in the reference folder's formats/opensm-dumps.

use sm::dump;
use sm::routing::EngineKind;

use crate::support::{read_net, routed};

fn opensm_tables(net: &str, dumpfile: &str) -> (fabric::Fabric, sm::RoutingTables) {
    let f = read_net(net);
    let p = sm::testkit::reference_dir().join("formats/opensm-dumps").join(dumpfile);
    let text = std::fs::read_to_string(&p).unwrap();
    let t = dump::parse_lfts_dump(&f, &text, dumpfile).unwrap();
    (f, t)
}

#[test]
fn opensm_tables_read_back_and_validate_like_ibdmchk() {
    for (dumpfile, lmc) in [
        ("sim-2sw4hca.lmc0.opensm-lfts.dump", 0),
        ("sim-2sw4hca.lmc2.opensm-lfts.dump", 2),
    ] {
        let (f, t) = opensm_tables("net.2sw2path4hca", dumpfile);
        assert_eq!(t.lmc, lmc);
        let v = sm::validate(&f.freeze(), &t);
        // 4 HCAs × 3 others × 2^lmc LIDs.
        assert_eq!(v.routes.pairs, 12 << lmc);
        assert_eq!(v.routes.unreachable, 0);
        assert!(v.credit_loops.cycle.is_none());
    }
    // Reference §3.4 [measured]: OpenSM's minhop tables on credit-loops.topo loop, updn's do not.
    let (f, t) = opensm_tables("credit-loops.converted.net", "credit-loops.minhop.opensm-lfts.dump");
    let v = sm::validate(&f.freeze(), &t);
    assert_eq!(v.routes.unreachable, 0);
    assert!(v.credit_loops.cycle.is_some());
    let (f, t) = opensm_tables("credit-loops.converted.net", "credit-loops.updn.opensm-lfts.dump");
    let v = sm::validate(&f.freeze(), &t);
    assert_eq!(v.routes.unreachable, 0);
    assert!(v.credit_loops.cycle.is_none());
}

#[test]
fn our_busiest_port_is_no_busier_than_opensms() {
    let f = read_net("credit-loops.converted.net");
    let theirs = |d: &str| {
        let (f, t) = opensm_tables("credit-loops.converted.net", d);
        sm::validate(&f.freeze(), &t).loads.max_routes_isl
    };
    let osm_updn = theirs("credit-loops.updn.opensm-lfts.dump");
    let osm_minhop = theirs("credit-loops.minhop.opensm-lfts.dump");
    for (e, osm) in [
        (EngineKind::UpDn, osm_updn),
        (EngineKind::Ftree, osm_updn),
        (EngineKind::MinHop, osm_minhop),
    ] {
        let (_, v) = routed(&f, e);
        eprintln!("{e}: ours {} opensm {osm}", v.loads.max_routes_isl);
        assert!(
            v.loads.max_routes_isl <= osm,
            "{e}: ours {} > OpenSM's {osm}",
            v.loads.max_routes_isl
        );
    }
}

#[test]
fn lfts_dump_round_trips_through_the_reader() {
    let f = read_net("credit-loops.converted.net");
    for lmc in [0u8, 2] {
        let r = crate::support::route(&f, &[EngineKind::MinHop], lmc, &Default::default()).unwrap();
        let text = dump::lfts_dump(&f, &r.t);
        assert!(text.starts_with("Unicast lids [0-"));
        let back = dump::parse_lfts_dump(&f, &text, "ours").unwrap();
        assert_eq!(back.lmc, lmc);
        assert_eq!(back.base_lid, r.t.base_lid);
        for (a, b) in back.lft.iter().zip(&r.t.lft) {
            let n = a.ports.len().max(b.ports.len());
            for l in 1..n {
                assert_eq!(a.get(fabric::Lid(l as u16)), b.get(fabric::Lid(l as u16)));
            }
        }
    }
}
