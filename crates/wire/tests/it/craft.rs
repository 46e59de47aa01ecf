//! Crafting from the example specs, decode of what was crafted, and stats.

use wire::craft::{CraftError, craft};
use wire::dump::{Val, describe_record};
use wire::stats::Stats;
use wire::{LinkType, decode};

use crate::support::{example_specs, examples_dir};

#[test]
fn every_example_crafts_and_decodes_clean() {
    let specs = example_specs();
    assert!(specs.len() >= 7, "{specs:?}");
    for p in specs {
        let text = std::fs::read_to_string(&p).unwrap();
        let c = craft(&text, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert!(!c.frames.is_empty());
        for (i, (ts, f)) in c.frames.iter().enumerate() {
            let o = describe_record(i + 1, *ts, f, c.link.frame_link());
            assert_eq!(
                o.get("ok"),
                Some(&Val::B(true)),
                "{}: packet {}: {}",
                p.display(),
                i + 1,
                wire::dump::to_json(&o)
            );
        }
    }
}

#[test]
fn smp_example_carries_every_attribute_and_trap() {
    let p = examples_dir().join("ib_smp.toml");
    let c = craft(&std::fs::read_to_string(&p).unwrap(), "ib_smp.toml").unwrap();
    let mut names = Vec::new();
    let mut traps = Vec::new();
    for (i, (ts, f)) in c.frames.iter().enumerate() {
        let o = describe_record(i + 1, *ts, f, LinkType::Infiniband);
        assert_eq!(o.path("lrh.vl"), Some(&Val::U(15)));
        if let Some(Val::S(n)) = o.path("mad.attr_name") {
            names.push(n.clone());
        }
        if let Some(Val::U(t)) = o.path("mad.attribute.trap_number") {
            traps.push(*t);
        }
    }
    for want in [
        "NodeInfo",
        "NodeDescription",
        "PortInfo",
        "SwitchInfo",
        "LinearForwardingTable",
        "SMInfo",
        "P_KeyTable",
        "SLtoVLMappingTable",
        "VLArbitrationTable",
        "Notice",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    assert_eq!(traps, vec![128, 129, 130, 131, 144]);
    // The PortInfo response reads back its fields.
    let o = describe_record(4, 0, &c.frames[3].1, LinkType::Infiniband);
    assert_eq!(o.path("mad.attribute.lid"), Some(&Val::U(5)));
    assert_eq!(o.path("mad.attribute.port_state"), Some(&Val::U(4)));
    assert_eq!(o.path("mad.attribute.link_speed_ext_active"), Some(&Val::U(4)));
    assert_eq!(o.path("mad.dr.direction"), Some(&Val::U(1)));
}

#[test]
fn stats_find_gaps_retransmissions_naks_cnps_and_pauses() {
    let p = examples_dir().join("roce_v2_loss.toml");
    let c = craft(&std::fs::read_to_string(&p).unwrap(), "roce_v2_loss.toml").unwrap();
    let mut s = Stats::default();
    for (_, f) in &c.frames {
        s.add(decode(f, LinkType::Ethernet).as_ref());
    }
    assert_eq!(s.records, 10);
    assert_eq!(s.psn_gaps(), 1);
    assert_eq!(s.retransmissions(), 1);
    assert_eq!(s.naks.get("PSN sequence error"), Some(&1));
    assert_eq!(s.acks, 1);
    assert_eq!(s.cnps, 1);
    assert_eq!(s.ecn_ce, 1);
    assert_eq!(s.pfc_frames, 2);
    assert_eq!(s.xoff[3], 1);
    assert_eq!(s.xon[3], 1);
    assert_eq!(s.quanta[3], 0xffff);
    let d = s.describe(100.0);
    // 65535 quanta * 512 bit times at 100 Gb/s = 335 539.2 ns.
    assert_eq!(d.path("pause.pfc_pause_ns_total"), Some(&Val::U(335_539)));
}

#[test]
fn spec_errors_name_packet_and_field() {
    let e = craft(
        "[[packet]]\nencap = \"roce_v2_ipv4\"\nopcode = \"RC RDMA_WRITE_FIRST\"\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(
        matches!(&e, CraftError::Field { packet: 1, field, .. } if field == "reth"),
        "{e}"
    );
    let e = craft(
        "[[packet]]\nencap = \"roce_v2_ipv4\"\nopcode = \"RC SEND_ONLY\"\nbogus = 1\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("bogus") && e.to_string().contains("line"), "{e}");
    let e = craft("[[packet]]\nencap = \"roce_v3\"\nopcode = 4\n", "t.toml").unwrap_err();
    assert!(e.to_string().contains("encap"), "{e}");
    let e = craft(
        "[[packet]]\nencap = \"roce_v2_ipv4\"\nopcode = \"RC ACKNOWLEDGE\"\naeth = { syndrome = \"nope\" }\n",
        "t.toml",
    )
    .unwrap_err();
    assert!(e.to_string().contains("aeth.syndrome"), "{e}");
    let mixed = "[[packet]]\nencap = \"ib_local\"\nopcode = 4\n[[packet]]\nencap = \"roce_v1\"\nopcode = 4\n";
    assert!(craft(mixed, "t.toml").unwrap_err().to_string().contains("not both"));
}
