//! Generated fabrics survive every writer and reader.

use fabric::format::{self, Format};
use fabric::generate::*;
use fabric::{Fabric, LinkRate, NodeKind};

use super::{parse, round_trip};

/// Every cable by GUID/port ends with its length and delay, sorted.
fn cables(f: &Fabric) -> Vec<(u64, u8, u64, u8, String, u64)> {
    let mut v: Vec<_> = f
        .links
        .iter()
        .map(|l| {
            let a = (f.node(l.a.node).node_guid.0, l.a.port);
            let b = (f.node(l.b.node).node_guid.0, l.b.port);
            let (x, y) = if a <= b { (a, b) } else { (b, a) };
            (x.0, x.1, y.0, y.1, format!("{}", l.length_m), l.delay_ps)
        })
        .collect();
    v.sort();
    v
}

fn small_fabrics() -> Vec<(&'static str, Fabric)> {
    vec![
        (
            "leaf-spine",
            leaf_spine(&LeafSpineParams {
                radix: 8,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "leaf-spine 3:1",
            leaf_spine(&LeafSpineParams {
                radix: 8,
                oversubscription: 3.0,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "fat-tree3",
            fat_tree3(&FatTree3Params {
                radix: 6,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "fat-tree3 pruned",
            fat_tree3(&FatTree3Params {
                radix: 8,
                pods: Some(3),
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "rail",
            rail(&RailParams {
                servers: 4,
                rails: 4,
                radix: 16,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "superpod-2-tier",
            superpod(&SuperPodParams {
                sus: 4,
                servers_per_su: 4,
                rails: 2,
                radix: 8,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "superpod-3-tier",
            superpod(&SuperPodParams {
                sus: 8,
                servers_per_su: 4,
                rails: 2,
                radix: 8,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "superpod-dual-plane",
            superpod(&SuperPodParams {
                sus: 2,
                servers_per_su: 4,
                rails: 2,
                radix: 8,
                planes: 2,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "superpod-dual-tor",
            superpod(&SuperPodParams {
                sus: 2,
                servers_per_su: 4,
                rails: 2,
                radix: 16,
                dual_tor: true,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "torus",
            torus(&TorusParams {
                dims: [3, 2, 1],
                hosts_per_switch: 2,
                ..Default::default()
            })
            .unwrap(),
        ),
        (
            "multi-pod",
            multi_pod(&MultiPodParams {
                pods: 3,
                radix: 8,
                leaves_per_pod: 2,
                hosts_per_leaf: 4,
                spines_per_pod: 2,
                spine_uplinks: 2,
                ..Default::default()
            })
            .unwrap(),
        ),
    ]
}

#[test]
fn generated_fabrics_round_trip_through_every_ib_format() {
    for (name, f) in small_fabrics() {
        let g = round_trip(&f, Format::Json);
        assert_eq!(f, g, "{name}: JSON is lossless");
        let s = round_trip(&f, Format::Ibsim);
        // ibsim keeps names, lengths and delays (in the rdmalab: note) and, through
        // descriptions, servers.
        assert_eq!(cables(&f), cables(&s), "{name}");
        assert_eq!(f.hosts, s.hosts, "{name}: servers inferred from descriptions");
        let d = round_trip(&f, Format::Ibnetdiscover);
        assert_eq!(d.hosts.len(), f.hosts.len(), "{name}");
    }
}

#[test]
fn ethernet_fabrics_go_to_hpcc_and_json_but_not_ib_formats() {
    let p = LeafSpineParams {
        radix: 8,
        rate: LinkRate::eth(400).unwrap(),
        ..Default::default()
    };
    let f = leaf_spine(&p).unwrap();
    assert!(matches!(
        format::write(&f, Format::Ibsim),
        Err(fabric::WriteError::NotInfiniband { .. })
    ));
    assert!(matches!(
        format::write(&f, Format::Ibnetdiscover),
        Err(fabric::WriteError::NotInfiniband { .. })
    ));
    round_trip(&f, Format::Json);
    let text = format::write(&f, Format::Hpcc).unwrap();
    let h = parse("x", &text, Format::Hpcc);
    assert_eq!(h.count(NodeKind::Switch), f.count(NodeKind::Switch));
    assert_eq!(h.count(NodeKind::Ca), f.count(NodeKind::Ca));
    for (a, b) in f.links.iter().zip(&h.links) {
        assert_eq!(a.rate, b.rate);
        assert_eq!(a.delay_ps, b.delay_ps);
        assert_eq!((a.a.node, a.b.node), (b.a.node, b.b.node));
    }
}

#[test]
fn ibsim_file_spells_ndr_as_hdr_and_keeps_the_truth_in_a_note() {
    let f = leaf_spine(&LeafSpineParams {
        radix: 4,
        ..Default::default()
    })
    .unwrap();
    let text = format::write(&f, Format::Ibsim).unwrap();
    assert!(
        !text.contains(" 4xNDR rdmalab") && text.contains("4xHDR rdmalab: 4xNDR 2m"),
        "{text}"
    );
    assert!(text.contains("switchguid=0x2c90301000000"));
    assert!(text.lines().all(|l| l.len() <= 255));
}
