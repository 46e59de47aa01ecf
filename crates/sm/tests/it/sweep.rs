//! Heavy and light sweeps over the in-process SMA: discovery by DR SMPs, programming,
//! traps, and bad replies.

use fabric::NodeKind;
use sm::routing::EngineKind;
use sm::sma::{Fault, InProcess};
use sm::sweep::{Issue, SubnetManager, SweepOptions};

use crate::support::read_net;

fn sm_for(engines: &[EngineKind]) -> SubnetManager {
    SubnetManager::new(
        SweepOptions {
            engines: engines.to_vec(),
            ..Default::default()
        },
        1,
    )
}

#[test]
fn heavy_sweep_discovers_programs_and_brings_the_subnet_up() {
    let f = read_net("net.2sw2path4hca");
    let mut fab = InProcess::new(f.clone(), (fabric::NodeId(0), 0));
    let mut sm = sm_for(&[EngineKind::MinHop]);
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.issues.is_empty(), "{:?}", r.issues);
    assert!(r.subnet_up);
    assert_eq!((r.switches, r.cas, r.links), (2, 4, 6));
    assert!(
        r.smps_sent > 20 && r.smps_sent == r.smps_received,
        "{} {}",
        r.smps_sent,
        r.smps_received
    );
    let v = r.validation.as_ref().unwrap();
    assert_eq!(v.routes.unreachable, 0);
    assert_eq!(v.routes.pairs, 12);
    // What the agents hold is what the SM computed: compare by GUID.
    let model = sm.fabric.as_ref().unwrap();
    let t = sm.tables.as_ref().unwrap();
    for (i, n) in f.nodes.iter().enumerate() {
        let mi = model.by_guid(n.node_guid).unwrap();
        if n.kind == NodeKind::Switch {
            let held = fab.lft(fabric::NodeId(i as u32));
            for (lid, &p) in t.lft[mi.idx()].ports.iter().enumerate() {
                assert_eq!(held[lid], p, "switch {} lid {lid}", n.name);
            }
            let (lid, state) = fab.port(fabric::NodeId(i as u32), 0);
            assert_eq!(Some(lid), t.lid_of(mi, 0));
            assert_eq!(state, wire::mad::attr::PortState::Active);
        } else {
            let (lid, state) = fab.port(fabric::NodeId(i as u32), 1);
            assert_eq!(Some(lid), t.lid_of(mi, 1));
            assert_eq!(state, wire::mad::attr::PortState::Active);
        }
    }
    // The SM's switch takes LID 1.
    assert_eq!(t.lid_of(fabric::NodeId(0), 0).map(|l| l.0), Some(1));
    // A second sweep changes nothing and sends no LFT block.
    let r2 = sm.heavy_sweep(&mut fab);
    assert!(r2.changes.is_empty(), "{:?}", r2.changes);
    assert_eq!(r2.lft_blocks_sent, 0);
    assert!(r2.lft_blocks_unchanged > 0);
    assert_eq!(r2.lids.kept, r2.lids.ports);
    // Nothing changed: a light sweep does not ask for a heavy one.
    assert!(sm.poll(&mut fab).is_none());
}

#[test]
fn unplugging_a_cable_raises_trap_128_and_reroutes_around_it() {
    let f = read_net("net.2sw2path4hca");
    let s1 = f.by_name("Switch1").unwrap();
    let mut fab = InProcess::new(f, (s1, 0));
    let mut sm = sm_for(&[EngineKind::MinHop]);
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.subnet_up);
    assert!(fab.unlink(s1, 3));
    let r = sm
        .poll(&mut fab)
        .expect("trap 128 / PortStateChange forces a heavy sweep");
    assert!(r.traps.contains(&128), "{:?}", r.traps);
    assert!(r.changes.iter().any(|c| c.contains("went down")), "{:?}", r.changes);
    assert!(r.lft_blocks_sent > 0 && r.lft_entries_changed > 0);
    let v = r.validation.unwrap();
    assert_eq!(v.routes.unreachable, 0, "the second ISL carries everything");
    // After re-routing nothing is pending.
    assert!(sm.poll(&mut fab).is_none());
    // Plug it back: the link comes up, traffic spreads over both ISLs again.
    let s2 = fab.fabric().by_name("Switch2").unwrap();
    fab.link(s1, 3, s2, 3, fabric::LinkRate::NDR_4X).unwrap();
    let r = sm.poll(&mut fab).expect("trap 128 again");
    assert!(r.changes.iter().any(|c| c.contains("came up")), "{:?}", r.changes);
    let v = r.validation.unwrap();
    assert_eq!(v.routes.unreachable, 0);
    let isl_ports_used = v.loads.ports.iter().filter(|p| p.isl && p.routes > 0).count();
    assert_eq!(isl_ports_used, 4, "both ISLs carry routes in both directions");
}

/// A node to break, how, and the issue the sweep must report for it.
type FaultCase = (&'static str, Fault, fn(&Issue) -> bool);

#[test]
fn bad_replies_are_reported_and_the_sweep_carries_on() {
    let f = read_net("credit-loops.converted.net");
    let guid = |name: &str| f.nodes[f.by_name(name).unwrap().idx()].node_guid;
    let cases: Vec<FaultCase> = vec![
        ("H-5", Fault::Silent, |i| matches!(i, Issue::NoAnswer { .. })),
        ("SW_L2_3", Fault::BadStatus(0x001c), |i| {
            matches!(i, Issue::BadStatus { status: 0x1c, .. })
        }),
        ("H-7", Fault::WrongAttribute, |i| {
            matches!(i, Issue::WrongAttribute { .. })
        }),
        ("H-9", Fault::Truncated, |i| {
            matches!(i, Issue::Truncated { len: 100, .. })
        }),
    ];
    for (name, fault, want) in cases {
        let mut fab = InProcess::new(f.clone(), (fabric::NodeId(0), 0));
        fab.set_fault(guid(name), Some(fault));
        let mut sm = sm_for(&[EngineKind::UpDn]);
        let r = sm.heavy_sweep(&mut fab);
        assert!(r.issues.iter().any(want), "{name} {fault:?}: {:?}", r.issues);
        assert!(
            r.subnet_up,
            "{name}: the rest of the fabric still comes up: {:?}",
            r.issues
        );
        assert!(r.switches >= 19, "{name}: {}", r.switches);
        let v = r.validation.unwrap();
        assert_eq!(
            v.routes.unreachable, 0,
            "{name}: the CAs that were found reach each other"
        );
    }
    // A CA that claims another CA's GUID: reported once, not followed.
    let mut fab = InProcess::new(f.clone(), (fabric::NodeId(0), 0));
    fab.set_fault(guid("H-16"), Some(Fault::Guid(guid("H-1"))));
    let mut sm = sm_for(&[EngineKind::UpDn]);
    let r = sm.heavy_sweep(&mut fab);
    let dups: Vec<_> = r
        .issues
        .iter()
        .filter(|i| matches!(i, Issue::DuplicateGuid { .. }))
        .collect();
    assert_eq!(dups.len(), 1, "{:?}", r.issues);
    assert!(dups[0].to_string().contains("duplicate node GUID"));
    assert_eq!(r.cas, 15);
    assert!(r.subnet_up);
}

#[test]
fn sweep_of_a_648_host_fat_tree_with_ftree() {
    let f = sm::testkit::fat_tree_2(36, 18, 18, 1);
    let mut fab = InProcess::new(f, (fabric::NodeId(0), 0));
    let mut sm = sm_for(&[EngineKind::Ftree, EngineKind::MinHop]);
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.issues.is_empty(), "{:?}", &r.issues[..r.issues.len().min(3)]);
    assert_eq!((r.switches, r.cas), (54, 648));
    assert_eq!(r.outcome.as_ref().unwrap().engine, EngineKind::Ftree);
    let v = r.validation.unwrap();
    assert_eq!(v.routes.unreachable, 0);
    assert!(v.credit_loops.cycle.is_none());
    // 54 switches × 11 blocks (LIDs 0..702).
    assert_eq!(r.lft_blocks_sent, 54 * 11);
}

#[test]
fn a_fabric_too_big_for_the_lid_space_is_refused_with_the_numbers() {
    // 600 switches with 82 CAs each: 49,800 CA ports + 600 switch LIDs > 49,151.
    let mut f = fabric::Fabric::new();
    let mut prev = None;
    let mut ca = 0u64;
    for s in 0..600u64 {
        let sw = f
            .add_node(fabric::NodeSpec::switch(
                format!("s{s}"),
                fabric::Guid(0x200000 + s),
                84,
            ))
            .unwrap();
        for p in 1..=83u8 {
            if p == 83 {
                if let Some(pr) = prev {
                    f.connect(sw, 83, pr, 84, fabric::LinkRate::NDR_4X, 1.0).unwrap();
                }
                continue;
            }
            let c = f
                .add_node(fabric::NodeSpec::ca(
                    format!("h{ca}"),
                    fabric::Guid(0x1_0000_0000 + 2 * ca),
                    1,
                ))
                .unwrap();
            ca += 1;
            f.connect(sw, p, c, 1, fabric::LinkRate::NDR_4X, 1.0).unwrap();
        }
        prev = Some(sw);
    }
    let err = sm::lids::assign(&f, (fabric::NodeId(0), 0), 0, None).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("cannot hold 49800 LIDs") && msg.contains("600 switches"),
        "{msg}"
    );
}

/// Every switch's LFT as its agent holds it equals the SM's tables (matched by GUID).
fn agents_hold_the_tables(fab: &InProcess, sm: &SubnetManager) {
    let model = sm.fabric.as_ref().unwrap();
    let t = sm.tables.as_ref().unwrap();
    for (i, n) in fab.fabric().nodes.iter().enumerate() {
        if n.kind != NodeKind::Switch {
            continue;
        }
        let mi = model.by_guid(n.node_guid).unwrap();
        let want = &t.lft[mi.idx()].ports;
        let held = fab.lft(fabric::NodeId(i as u32));
        assert_eq!(&held[..want.len()], &want[..], "switch {}", n.name);
        assert!(held[want.len()..].iter().all(|&p| p == 0xff), "switch {}", n.name);
    }
}

#[test]
fn lft_blocks_go_out_in_switch_groups_and_only_changed_blocks_are_resent() {
    // 54 switches and a window of 8: the blocks go block-major within 7 groups of
    // switches, produced as the window opens.
    let f = sm::testkit::fat_tree_2(36, 18, 18, 1);
    let leaf = f.by_name("leaf3").unwrap();
    let mut fab = InProcess::new(f, (fabric::NodeId(0), 0));
    let mut sm = SubnetManager::new(
        SweepOptions {
            engines: vec![EngineKind::Ftree, EngineKind::UpDn],
            max_in_flight: 8,
            validate: false,
            ..Default::default()
        },
        1,
    );
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.issues.is_empty(), "{:?}", &r.issues[..r.issues.len().min(3)]);
    assert_eq!(r.lft_blocks_sent, 54 * 11);
    assert_eq!((r.lft_blocks_unchanged, r.lft_entries_changed), (0, 0));
    assert_eq!(r.smps_sent, r.smps_received);
    agents_hold_the_tables(&fab, &sm);
    // Nothing changed: no block is sent again, every block is compared.
    let r = sm.heavy_sweep(&mut fab);
    assert_eq!((r.lft_blocks_sent, r.lft_blocks_unchanged), (0, 54 * 11));
    assert_eq!(r.lft_entries_changed, 0);
    // A leaf loses an uplink: ftree no longer sees an even tree and the SM re-routes;
    // only the blocks that differ from what it programmed go out, and the agents end up
    // holding the new tables.
    let (old_f, old_t) = (sm.fabric.clone().unwrap(), sm.tables.clone().unwrap());
    assert!(fab.unlink(leaf, 19));
    let r = sm.heavy_sweep(&mut fab);
    assert!(r.subnet_up, "{:?}", r.issues);
    assert_eq!(r.lft_blocks_sent + r.lft_blocks_unchanged, 54 * 11);
    agents_hold_the_tables(&fab, &sm);
    // Exactly the blocks (and entries) that differ from the previous tables were sent.
    let (new_f, new_t) = (sm.fabric.as_ref().unwrap(), sm.tables.as_ref().unwrap());
    let (mut blocks, mut entries) = (0u64, 0u64);
    for n in new_f.nodes.iter().filter(|n| n.kind == NodeKind::Switch) {
        let a = &old_t.lft[old_f.by_guid(n.node_guid).unwrap().idx()].ports;
        let b = &new_t.lft[new_f.by_guid(n.node_guid).unwrap().idx()].ports;
        assert_eq!(a.len(), b.len());
        for (x, y) in a.chunks(64).zip(b.chunks(64)) {
            let d = x.iter().zip(y).filter(|(p, q)| p != q).count() as u64;
            blocks += (d > 0) as u64;
            entries += d;
        }
    }
    assert!(blocks > 0);
    assert_eq!((r.lft_blocks_sent, r.lft_entries_changed), (blocks, entries));
}
