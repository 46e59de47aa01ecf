//! Every shared sample is read, and what rdmalab writes reads back identical.

use fabric::format::Format;
use fabric::{Guid, IbSpeed, IbWidth, LinkRate, NodeKind};

use super::{data, read, round_trip};

const NET_FAMILY: &[&str] = &[
    "rdma-core-manpage-example.topo",
    "sim-2sw4hca.grouping.topo",
    "sim-2sw4hca.lmc0.topo",
    "sim-2sw4hca.lmc2.topo",
    "net",
    "net.1",
    "net.2sw2path",
    "net.2sw2path4hca",
    "net.2sw2path4hca2port",
    "fattree-648.generated.net",
    "torus-5x5x5.generated.net",
    "credit-loops.converted.net",
];

#[test]
fn every_ibnetdiscover_and_ibsim_sample_round_trips() {
    for name in NET_FAMILY {
        let (f, _) = read(&data(&format!("samples/{name}")));
        assert!(!f.links.is_empty(), "{name}");
        for fmt in [Format::Ibnetdiscover, Format::Ibsim, Format::Json] {
            let g = round_trip(&f, fmt);
            if fmt != Format::Ibnetdiscover {
                // ibsim and JSON keep names too.
                let names: Vec<_> = f.nodes.iter().map(|n| &n.name).collect();
                let mut gn: Vec<_> = g.nodes.iter().map(|n| &n.name).collect();
                let mut fnames = names.clone();
                fnames.sort();
                gn.sort();
                assert_eq!(fnames, gn, "{name} via {fmt}");
            }
            if fmt == Format::Json {
                assert_eq!(f, g, "{name}: JSON is lossless");
            }
        }
    }
}

#[test]
fn formats_are_detected() {
    for (name, fmt) in [
        ("rdma-core-manpage-example.topo", Format::Ibnetdiscover),
        ("sim-2sw4hca.grouping.topo", Format::Ibnetdiscover),
        ("net.2sw2path4hca", Format::Ibsim),
        ("fattree-648.generated.net", Format::Ibsim),
        ("topology.txt", Format::Hpcc),
        ("fat.txt", Format::Hpcc),
    ] {
        assert_eq!(read(&data(&format!("samples/{name}"))).1, fmt, "{name}");
    }
}

#[test]
fn manpage_example_values() {
    let (f, _) = read(&data("samples/rdma-core-manpage-example.topo"));
    assert_eq!(f.count(NodeKind::Switch), 2);
    assert_eq!(f.count(NodeKind::Ca), 4);
    assert_eq!(f.links.len(), 7);
    let isr = f.by_guid(Guid(0x5442ba00003080)).unwrap();
    let n = f.node(isr);
    assert_eq!(n.num_ports(), 24);
    assert_eq!(n.desc, "ISR9024 Voltaire");
    assert!(!n.enhanced_port0);
    assert_eq!(n.ports[0].lid.unwrap().0, 6);
    assert_eq!(n.vendor_id, 0x8f1);
    assert_eq!(n.sys_image_guid, Guid(0x5442ba00003000));
    // [1] "S-005442ba00003080"[10] ... 1xSDR on the Voltaire 8-port switch
    let sw6 = f.by_guid(Guid(0x8f10400410015)).unwrap();
    let (peer, l) = f.peer(sw6, 1).unwrap();
    assert_eq!((peer.node, peer.port), (isr, 10));
    assert_eq!(f.link(l).rate, LinkRate::ib(IbSpeed::Sdr, IbWidth::X1));
    // CA with its ports listed 2 then 1, lmc 1, port GUIDs from the dump
    let ca = f.by_guid(Guid(0x8f10403960558)).unwrap();
    assert_eq!(f.node(ca).port_guid(2), Guid(0x8f1040396055a));
    assert_eq!(f.node(ca).ports[1].lid.unwrap().0, 10);
    assert_eq!(f.node(ca).ports[1].lmc, 1);
}

#[test]
fn measured_2sw4hca_matches_its_ibsim_source() {
    // ibnetdiscover run on ibsim's net.2sw2path4hca gives the same fabric.
    let (a, _) = read(&data("samples/net.2sw2path4hca"));
    for dump in [
        "sim-2sw4hca.lmc0.topo",
        "sim-2sw4hca.lmc2.topo",
        "sim-2sw4hca.grouping.topo",
    ] {
        let (b, _) = read(&data(&format!("samples/{dump}")));
        let d = a.diff(&b);
        assert!(d.is_empty(), "{dump}: {d:?}");
    }
    // two parallel cables between the switches stay two links
    let s1 = a.by_name("Switch1").unwrap();
    let s2 = a.by_name("Switch2").unwrap();
    assert_eq!(
        a.links
            .iter()
            .filter(|l| (l.a.node, l.b.node) == (s1, s2) || (l.a.node, l.b.node) == (s2, s1))
            .count(),
        2
    );
}

#[test]
fn generated_648_sample_matches_our_generator_cabling() {
    // The shared fattree-648 sample and rdmalab's leaf-spine default share their
    // port layout; names and GUIDs differ, so compare by (name-free) structure.
    let (s, _) = read(&data("samples/fattree-648.generated.net"));
    let g = fabric::leaf_spine(&fabric::LeafSpineParams::default()).unwrap();
    assert_eq!(s.count(NodeKind::Switch), g.count(NodeKind::Switch));
    assert_eq!(s.count(NodeKind::Ca), g.count(NodeKind::Ca));
    assert_eq!(s.links.len(), g.links.len());
    let l0 = s.by_name("L0").unwrap();
    let gl0 = g.by_name("leaf00").unwrap();
    for p in 1..=36u8 {
        let a = s.peer(l0, p).unwrap().0;
        let b = g.peer(gl0, p).unwrap().0;
        assert_eq!(a.port, b.port, "leaf port {p}");
        assert_eq!(s.node(a.node).kind, g.node(b.node).kind);
    }
}

#[test]
fn hpcc_samples_round_trip() {
    for name in ["topology.txt", "fat.txt"] {
        let (f, _) = read(&data(&format!("samples/{name}")));
        let g = round_trip(&f, Format::Hpcc);
        assert_eq!(f, g, "{name}: HPCC keeps numbering, rates and delays");
        round_trip(&f, Format::Json);
    }
    let (fat, _) = read(&data("samples/fat.txt"));
    assert_eq!(fat.count(NodeKind::Ca), 320);
    assert_eq!(fat.count(NodeKind::Switch), 56);
    assert_eq!(
        fat.links
            .iter()
            .filter(|l| l.rate == LinkRate::eth(400).unwrap())
            .count(),
        160
    );
    assert_eq!(fat.links[0].delay_ps, 1_000_000);
    // topology.txt declares 65 links and then carries notes: only 65 are read.
    let (t, _) = read(&data("samples/topology.txt"));
    assert_eq!(t.links.len(), 65);
}

#[test]
fn ports_report_sample_agrees_with_the_topology_dump() {
    let (f, _) = read(&data("samples/sim-2sw4hca.lmc0.topo"));
    let text = std::fs::read_to_string(data("samples/sim-2sw4hca.ports-report.txt")).unwrap();
    let rep = fabric::format::parse_ports_report("ports-report", &text).unwrap();
    assert_eq!(rep.len(), 20);
    assert_eq!(rep.iter().filter(|r| r.peer.is_some()).count(), 12);
    let d = fabric::format::check_ports_report(&f, &rep);
    assert!(d.is_empty(), "{d:?}");
    // and a model with one cable moved disagrees
    let mut g = f.clone();
    let s1 = g.by_name("S-0000000000200000").unwrap();
    let l = g.peer(s1, 5).unwrap().1;
    let link = g.disconnect(l).unwrap();
    g.connect(s1, 6, link.b.node, link.b.port, link.rate, link.length_m)
        .unwrap();
    assert!(!fabric::format::check_ports_report(&g, &rep).is_empty());
}

#[test]
fn ibsim_extensions_hcaguids_relative_guids_include_and_module() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hosts.net"),
        "hcaguids=0x7000\nHca\t2 \"H1\"\n[1]\t\"S1\"[1]\n\nhcaguids+0x100\nHca\t1 \"H2\"\n[1]\t\"S1\"[2]\tw=1\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.net"),
        "# main\nswitchguid=0x9000\nSwitch\t4 \"S1\"\n[1]\t\"H1\"[1]\n[2]\t\"H2\"[1]\tw=3\n\ninclude \"hosts.net\"\ndo Verbose\n",
    )
    .unwrap();
    let (f, fmt) = read(&dir.path().join("main.net"));
    assert_eq!(fmt, Format::Ibsim);
    assert_eq!(f.node(f.by_name("S1").unwrap()).node_guid, Guid(0x9000));
    let h1 = f.by_name("H1").unwrap();
    assert_eq!(f.node(h1).node_guid, Guid(0x7000));
    assert_eq!(f.node(h1).port_guid(2), Guid(0x7002));
    // hcaguids+0x100 is relative to the last absolute base (0x7000)
    assert_eq!(f.node(f.by_name("H2").unwrap()).node_guid, Guid(0x7100));
    // w=3 (1x|4x) meets w=1 (1x): the link comes up 1x
    let (_, l) = f.peer(f.by_name("S1").unwrap(), 2).unwrap();
    assert_eq!(f.link(l).rate, LinkRate::ib(IbSpeed::Sdr, IbWidth::X1));
    // an error inside the included file names that file and line
    std::fs::write(
        dir.path().join("hosts.net"),
        "Hca\t1 \"H1\"\n[1]\t\"S1\"[1]\n[2]\t\"S1\"[2]\n",
    )
    .unwrap();
    let e = fabric::format::read_file(&dir.path().join("main.net"), None, &fabric::ReadOptions::default()).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("hosts.net:3:"), "{s}");
    // module= prefixes ids
    let f = super::parse(
        "m",
        "module=\"rack1\"\nSwitch 2 \"S\"\n[1] \"H\"[1]\n\nHca 1 \"H\"\n[1] \"S\"[1]\n",
        Format::Ibsim,
    );
    assert!(f.by_name("rack1#S").is_some() && f.by_name("rack1#H").is_some());
}
