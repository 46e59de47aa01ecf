//! Every frame in the reference folder's vectors/wire/vectors.json decodes to its listed fields
//! with the right ICRC/VCRC verdict and re-emits byte-identical.

use serde_json::Value;
use wire::ib::aeth::Syndrome;
use wire::packet::{Encap, IpRepr};
use wire::{Decoded, LinkType, decode};

use crate::support::{hex, unhex, vectors};

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn hexint(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn every_vector_decodes_checks_and_reemits() {
    let all = vectors();
    let packets = all["packets"].as_array().unwrap();
    assert_eq!(packets.len(), 38);
    let mut bad_seen = 0;
    for v in packets {
        let name = v["name"].as_str().unwrap();
        let frame = unhex(v["hex"].as_str().unwrap());
        let link = match u(&v["linktype"]) {
            1 => LinkType::Ethernet,
            197 | 247 => LinkType::Infiniband,
            x => panic!("{name}: linktype {x}"),
        };
        let d = decode(&frame, link).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Decoded::Ib { packet, pad, checks } = d else {
            panic!("{name}: not IB: {d:?}")
        };
        // ICRC verdict and value.
        let icrc = &v["icrc"];
        assert_eq!(
            checks.icrc.computed as u64,
            hexint(&icrc["value"]),
            "{name}: icrc value"
        );
        assert_eq!(
            checks.icrc.ok(),
            icrc["valid"].as_bool().unwrap(),
            "{name}: icrc verdict"
        );
        if !checks.icrc.ok() {
            bad_seen += 1;
            assert_eq!(
                hex(&checks.icrc.found.to_le_bytes()),
                icrc["found_on_wire_hex"].as_str().unwrap()
            );
            continue;
        }
        assert_eq!(
            hex(&checks.icrc.found.to_le_bytes()),
            icrc["wire_hex"].as_str().unwrap(),
            "{name}"
        );
        if let Some(vc) = v.get("vcrc") {
            let c = checks.vcrc.expect("vcrc");
            assert!(c.ok(), "{name}: vcrc");
            assert_eq!(c.computed as u64, hexint(&vc["value"]), "{name}: vcrc value");
        } else {
            assert!(checks.vcrc.is_none());
        }
        assert!(checks.all_ok(), "{name}: {checks:?}");
        assert_eq!(
            packet.encap.name(),
            v["encapsulation"].as_str().unwrap(),
            "{name}: encapsulation"
        );
        // Transport fields.
        let e = &v["expected"];
        let b = &packet.bth;
        assert_eq!(u8::from(b.opcode) as u64, u(&e["opcode"]), "{name}: opcode");
        assert_eq!(
            b.opcode.name(),
            e["opcode_name"].as_str().unwrap(),
            "{name}: opcode name"
        );
        assert_eq!(b.se as u64, u(&e["se"]), "{name}: se");
        assert_eq!(b.migreq as u64, u(&e["migreq"]), "{name}: migreq");
        assert_eq!(b.pad_count as u64, u(&e["padcnt"]), "{name}: padcnt");
        assert_eq!(b.tver as u64, u(&e["tver"]), "{name}");
        assert_eq!(b.pkey as u64, u(&e["pkey"]), "{name}: pkey");
        assert_eq!(b.fecn as u64, u(&e["fecn"]), "{name}");
        assert_eq!(b.becn as u64, u(&e["becn"]), "{name}");
        assert_eq!(b.dqpn as u64, u(&e["dqpn"]), "{name}: dqpn");
        assert_eq!(b.ack_req as u64, u(&e["ackreq"]), "{name}");
        assert_eq!(b.psn.value() as u64, u(&e["psn"]), "{name}: psn");
        assert_eq!(
            hex(packet.payload),
            e["payload_hex"].as_str().unwrap(),
            "{name}: payload"
        );
        assert_eq!(pad.len() as u64, u(&e["pad_bytes"]), "{name}: pad");
        let x = &packet.ext;
        match e.get("reth") {
            Some(r) => {
                let h = x.reth.expect("reth");
                assert_eq!(
                    (h.va, h.rkey as u64, h.dma_len as u64),
                    (u(&r["va"]), u(&r["rkey"]), u(&r["dmalen"])),
                    "{name}"
                );
            }
            None => assert!(x.reth.is_none(), "{name}"),
        }
        match e.get("aeth") {
            Some(r) => {
                let h = x.aeth.expect("aeth");
                assert_eq!(
                    (h.syndrome.to_byte() as u64, h.msn as u64),
                    (u(&r["syndrome"]), u(&r["msn"])),
                    "{name}"
                );
            }
            None => assert!(x.aeth.is_none(), "{name}"),
        }
        match e.get("deth") {
            Some(r) => {
                let h = x.deth.expect("deth");
                assert_eq!(
                    (h.qkey as u64, h.src_qp as u64),
                    (u(&r["qkey"]), u(&r["srcqp"])),
                    "{name}"
                );
            }
            None => assert!(x.deth.is_none(), "{name}"),
        }
        match e.get("immdt") {
            Some(r) => assert_eq!(x.immdt.expect("immdt").imm as u64, u(r), "{name}"),
            None => assert!(x.immdt.is_none(), "{name}"),
        }
        match e.get("atomiceth") {
            Some(r) => {
                let h = x.atomic_eth.expect("atomiceth");
                assert_eq!(
                    (h.va, h.rkey as u64, h.swap_add, h.compare),
                    (u(&r["va"]), u(&r["rkey"]), u(&r["swap_add"]), u(&r["compare"])),
                    "{name}"
                );
            }
            None => assert!(x.atomic_eth.is_none(), "{name}"),
        }
        match e.get("atomicacketh") {
            Some(r) => assert_eq!(x.atomic_ack_eth.expect("atomicacketh").orig, u(&r["orig"]), "{name}"),
            None => assert!(x.atomic_ack_eth.is_none(), "{name}"),
        }
        assert_eq!(
            x.cnp_reserved.is_some(),
            e.get("cnp_reserved_16_bytes").is_some(),
            "{name}"
        );
        // Outer fields.
        let o = &v["outer"];
        match &packet.encap {
            Encap::RoceV2 { ip, udp, .. } => {
                assert_eq!(udp.src_port as u64, u(&o["udp_sport"]), "{name}");
                assert_eq!(udp.dst_port, 4791);
                match &o["udp_checksum"] {
                    Value::String(s) if s == "computed" => {
                        assert_eq!(checks.udp_checksum, wire::packet::UdpChecksum::Valid, "{name}")
                    }
                    z => {
                        assert_eq!(u(z), 0);
                        assert_eq!(checks.udp_checksum, wire::packet::UdpChecksum::Absent, "{name}")
                    }
                }
                assert_eq!(ip.ecn() as u64, u(&o["ecn"]), "{name}: ecn");
                assert_eq!(ip.dscp() as u64, u(&o["dscp"]), "{name}: dscp");
                match ip {
                    IpRepr::V4(r) => {
                        assert_eq!(((r.dscp << 2) | r.ecn) as u64, u(&o["tos"]), "{name}");
                        assert_eq!(r.ttl as u64, u(&o["ttl"]), "{name}");
                        assert_eq!(r.ident as u64, u(&o["ip_id"]), "{name}");
                        assert_eq!(checks.ipv4_checksum, Some(true), "{name}");
                    }
                    IpRepr::V6(r) => {
                        assert_eq!(r.traffic_class as u64, u(&o["tclass"]), "{name}");
                        assert_eq!(r.flow_label as u64, u(&o["flowlabel"]), "{name}");
                        assert_eq!(r.hop_limit as u64, u(&o["hlim"]), "{name}");
                    }
                }
            }
            Encap::RoceV1 { grh, .. } => {
                assert_eq!(grh.tclass as u64, u(&o["tclass"]), "{name}");
                assert_eq!(grh.flow_label as u64, u(&o["flowlabel"]), "{name}");
                assert_eq!(grh.hop_limit as u64, u(&o["hoplmt"]), "{name}");
                assert_eq!(grh.payload_len as u64, u(&o["grh_paylen"]), "{name}");
            }
            Encap::Ib { lrh, grh } => {
                assert_eq!(lrh.vl as u64, u(&o["vl"]), "{name}");
                assert_eq!(lrh.lver as u64, u(&o["lver"]), "{name}");
                assert_eq!(lrh.sl as u64, u(&o["sl"]), "{name}");
                assert_eq!(lrh.lnh.bits() as u64, u(&o["lnh"]), "{name}");
                assert_eq!(lrh.dlid.0 as u64, u(&o["dlid"]), "{name}");
                assert_eq!(lrh.slid.0 as u64, u(&o["slid"]), "{name}");
                assert_eq!(lrh.pkt_len as u64, u(&o["pktlen"]), "{name}");
                if let Some(g) = grh {
                    assert_eq!(g.tclass as u64, u(&o["tclass"]), "{name}");
                    assert_eq!(g.flow_label as u64, u(&o["flowlabel"]), "{name}");
                    assert_eq!(g.hop_limit as u64, u(&o["hoplmt"]), "{name}");
                    assert_eq!(g.payload_len as u64, u(&o["grh_paylen"]), "{name}");
                }
            }
        }
        // The ICRC input the recipe lists equals our masked input (checked through the CRC
        // of that input, which must equal our computed value).
        let input = unhex(icrc["crc_input_hex"].as_str().unwrap());
        assert_eq!(
            crc32fast::hash(&input),
            checks.icrc.computed,
            "{name}: crc of listed input"
        );
        // Re-emit byte-identical.
        let mut out = vec![0xa5u8; packet.buffer_len()];
        let n = packet.emit(&mut out).unwrap_or_else(|e| panic!("{name}: emit: {e}"));
        assert_eq!(hex(&out[..n]), hex(&frame), "{name}: re-emit");
        // Syndrome classification sanity on the NAK vectors.
        if name == "v4_rc_nak_psn_seq_err" {
            assert!(matches!(packet.ext.aeth.unwrap().syndrome, Syndrome::Nak(_)));
        }
    }
    assert_eq!(bad_seen, 1, "exactly one corrupted vector");
}
