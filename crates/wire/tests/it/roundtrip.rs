//! Property tests: Repr → emit → parse gives the Repr back, for every header,
//! every SMP attribute and whole packets of every encapsulation. Buffers start
//! filled with 0xa5 so a field emit forgets shows up.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use wire::ib::aeth::Syndrome;
use wire::ib::{Opcode, aeth, atomic_ack_eth, atomic_eth, bth, deth, grh, ieth, immdt, lrh, reth};
use wire::mad::attr::{self, node_info, notice, port_info, sm_info, switch_info};
use wire::mad::header::{self as madh, AttrId, Method, MgmtClass};
use wire::mad::smp::{DrRoute, Route, Smp};
use wire::net::{ethernet, ipv4, ipv6, pfc, udp};
use wire::packet::{Encap, ExtHeaders, IbPacket, IpRepr};
use wire::{Decoded, Guid, Lid, LinkType, Psn, decode};

macro_rules! rt {
    ($m:ident, $r:expr) => {{
        let r = $r;
        let mut buf = vec![0xa5u8; r.buffer_len()];
        r.emit(&mut $m::Packet::new_unchecked(&mut buf[..])).unwrap();
        let back = $m::Repr::parse(&$m::Packet::new_checked(&buf[..]).unwrap()).unwrap();
        prop_assert_eq!(back, r);
    }};
}

fn arb_lrh() -> impl Strategy<Value = lrh::Repr> {
    (
        0u8..16,
        0u8..16,
        0u8..16,
        0u8..4,
        any::<u16>(),
        any::<u16>(),
        0u16..0x800,
    )
        .prop_map(|(vl, lver, sl, lnh, d, s, len)| lrh::Repr {
            vl,
            lver,
            sl,
            lnh: lrh::Lnh::from_bits(lnh),
            dlid: Lid(d),
            slid: Lid(s),
            pkt_len: len,
        })
}

fn arb_grh() -> impl Strategy<Value = grh::Repr> {
    (
        any::<u8>(),
        0u32..0x100000,
        any::<u16>(),
        any::<u8>(),
        any::<u8>(),
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
    )
        .prop_map(
            |(tclass, flow_label, payload_len, next_header, hop_limit, sgid, dgid)| grh::Repr {
                ipver: 6,
                tclass,
                flow_label,
                payload_len,
                next_header,
                hop_limit,
                sgid,
                dgid,
            },
        )
}

fn arb_bth() -> impl Strategy<Value = bth::Repr> {
    (
        any::<u8>(),
        any::<[bool; 5]>(),
        0u8..4,
        0u8..16,
        any::<u16>(),
        0u32..0x100_0000,
        0u32..0x100_0000,
    )
        .prop_map(|(op, f, pad_count, tver, pkey, dqpn, psn)| bth::Repr {
            opcode: Opcode::from(op),
            se: f[0],
            migreq: f[1],
            pad_count,
            tver,
            pkey,
            fecn: f[2],
            becn: f[3],
            dqpn,
            ack_req: f[4],
            psn: Psn::new(psn),
        })
}

fn arb_eth() -> impl Strategy<Value = ethernet::Repr> {
    (
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        proptest::option::of((0u8..8, any::<bool>(), 0u16..4096)),
        any::<u16>(),
    )
        .prop_map(|(dst, src, vlan, et)| ethernet::Repr {
            dst,
            src,
            vlan: vlan.map(|(pcp, dei, vid)| ethernet::VlanTag { pcp, dei, vid }),
            // 0x8100 as the inner EtherType would read back as a second tag.
            ethertype: if et == 0x8100 { 0x0800 } else { et },
        })
}

fn arb_ipv4() -> impl Strategy<Value = ipv4::Repr> {
    (
        0u8..64,
        0u8..4,
        any::<u16>(),
        any::<bool>(),
        any::<u8>(),
        any::<u8>(),
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
    )
        .prop_map(|(dscp, ecn, ident, dont_frag, ttl, protocol, src, dst)| ipv4::Repr {
            dscp,
            ecn,
            ident,
            dont_frag,
            ttl,
            protocol,
            src,
            dst,
            payload_len: 0,
        })
}

fn arb_ipv6() -> impl Strategy<Value = ipv6::Repr> {
    (
        any::<u8>(),
        0u32..0x100000,
        any::<u8>(),
        any::<u8>(),
        any::<[u8; 16]>(),
        any::<[u8; 16]>(),
    )
        .prop_map(
            |(traffic_class, flow_label, next_header, hop_limit, src, dst)| ipv6::Repr {
                traffic_class,
                flow_label,
                next_header,
                hop_limit,
                src,
                dst,
                payload_len: 0,
            },
        )
}

fn arb_ext(op: Opcode) -> impl Strategy<Value = ExtHeaders> {
    let l = op.layout().unwrap_or_default();
    (
        any::<(u64, u32, u32)>(),
        any::<(u32, u32)>(),
        any::<(u64, u32, u64, u64)>(),
        any::<(u8, u32)>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<[u8; 16]>(),
    )
        .prop_map(move |(r, d, a, ae, aa, im, ie, cnp)| ExtHeaders {
            reth: l.reth.then_some(reth::Repr {
                va: r.0,
                rkey: r.1,
                dma_len: r.2,
            }),
            deth: l.deth.then_some(deth::Repr {
                qkey: d.0,
                src_qp: d.1 & 0xff_ffff,
            }),
            atomic_eth: l.atomic_eth.then_some(atomic_eth::Repr {
                va: a.0,
                rkey: a.1,
                swap_add: a.2,
                compare: a.3,
            }),
            aeth: l.aeth.then_some(aeth::Repr {
                syndrome: Syndrome::from_byte(ae.0),
                msn: ae.1 & 0xff_ffff,
            }),
            atomic_ack_eth: l.atomic_ack_eth.then_some(atomic_ack_eth::Repr { orig: aa }),
            immdt: l.immdt.then_some(immdt::Repr { imm: im }),
            ieth: l.ieth.then_some(ieth::Repr { rkey: ie }),
            cnp_reserved: l.cnp_reserved.then_some(cnp),
        })
}

fn arb_encap() -> impl Strategy<Value = Encap> {
    prop_oneof![
        (arb_lrh(), proptest::option::of(arb_grh())).prop_map(|(lrh, grh)| Encap::Ib { lrh, grh }),
        (arb_eth(), arb_grh()).prop_map(|(eth, grh)| Encap::RoceV1 { eth, grh }),
        (
            arb_eth(),
            prop_oneof![arb_ipv4().prop_map(IpRepr::V4), arb_ipv6().prop_map(IpRepr::V6)],
            any::<u16>(),
            any::<bool>()
        )
            .prop_map(|(eth, ip, sport, csum)| Encap::RoceV2 {
                eth,
                ip,
                udp: udp::Repr {
                    src_port: sport,
                    dst_port: 4791,
                    payload_len: 0,
                    checksum: csum as u16
                },
            }),
    ]
}

/// Fill in what emit computes so the decoded packet compares equal.
fn normalise(mut p: IbPacket<'_>, got: &IbPacket<'_>) -> bool {
    p.bth.pad_count = p.pad_len() as u8;
    match (&mut p.encap, &got.encap) {
        (Encap::Ib { lrh, grh }, Encap::Ib { lrh: l2, grh: g2 }) => {
            lrh.pkt_len = l2.pkt_len;
            lrh.lnh = l2.lnh;
            if let (Some(g), Some(g2)) = (grh, g2) {
                g.payload_len = g2.payload_len;
                g.next_header = g2.next_header;
            }
        }
        (Encap::RoceV1 { eth, grh }, Encap::RoceV1 { eth: e2, grh: g2 }) => {
            eth.ethertype = e2.ethertype;
            grh.payload_len = g2.payload_len;
            grh.next_header = g2.next_header;
        }
        (
            Encap::RoceV2 { eth, ip, udp },
            Encap::RoceV2 {
                eth: e2,
                ip: i2,
                udp: u2,
            },
        ) => {
            eth.ethertype = e2.ethertype;
            udp.payload_len = u2.payload_len;
            if udp.checksum != 0 {
                udp.checksum = u2.checksum;
            }
            match (ip, i2) {
                (IpRepr::V4(a), IpRepr::V4(b)) => {
                    a.payload_len = b.payload_len;
                    a.protocol = b.protocol;
                }
                (IpRepr::V6(a), IpRepr::V6(b)) => {
                    a.payload_len = b.payload_len;
                    a.next_header = b.next_header;
                }
                _ => return false,
            }
        }
        _ => return false,
    }
    p == *got
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn lrh_round_trip(r in arb_lrh()) { rt!(lrh, r); }
    #[test]
    fn grh_round_trip(r in arb_grh()) { rt!(grh, r); }
    #[test]
    fn bth_round_trip(r in arb_bth()) { rt!(bth, r); }
    #[test]
    fn reth_round_trip(a in any::<(u64, u32, u32)>()) { rt!(reth, reth::Repr { va: a.0, rkey: a.1, dma_len: a.2 }); }
    #[test]
    fn aeth_round_trip(s in any::<u8>(), msn in 0u32..0x100_0000) { rt!(aeth, aeth::Repr { syndrome: Syndrome::from_byte(s), msn }); }
    #[test]
    fn deth_round_trip(q in any::<u32>(), s in 0u32..0x100_0000) { rt!(deth, deth::Repr { qkey: q, src_qp: s }); }
    #[test]
    fn immdt_ieth_round_trip(a in any::<u32>()) { rt!(immdt, immdt::Repr { imm: a }); rt!(ieth, ieth::Repr { rkey: a }); }
    #[test]
    fn atomic_round_trip(a in any::<(u64, u32, u64, u64)>()) {
        rt!(atomic_eth, atomic_eth::Repr { va: a.0, rkey: a.1, swap_add: a.2, compare: a.3 });
        rt!(atomic_ack_eth, atomic_ack_eth::Repr { orig: a.2 });
    }
    #[test]
    fn ethernet_round_trip(r in arb_eth()) { rt!(ethernet, r); }
    #[test]
    fn ipv4_round_trip(mut r in arb_ipv4(), pl in 0u16..1000) {
        r.payload_len = pl;
        let mut buf = vec![0xa5u8; 20 + pl as usize];
        r.emit(&mut ipv4::Packet::new_unchecked(&mut buf[..])).unwrap();
        let p = ipv4::Packet::new_checked(&buf[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(ipv4::Repr::parse(&p).unwrap(), r);
    }
    #[test]
    fn ipv6_round_trip(mut r in arb_ipv6(), pl in 0u16..1000) {
        r.payload_len = pl;
        let mut buf = vec![0xa5u8; 40 + pl as usize];
        r.emit(&mut ipv6::Packet::new_unchecked(&mut buf[..])).unwrap();
        prop_assert_eq!(ipv6::Repr::parse(&ipv6::Packet::new_checked(&buf[..]).unwrap()).unwrap(), r);
    }
    #[test]
    fn udp_round_trip(a in any::<(u16, u16, u16)>(), pl in 0u16..500) {
        let r = udp::Repr { src_port: a.0, dst_port: a.1, payload_len: pl, checksum: a.2 };
        let mut buf = vec![0xa5u8; 8 + pl as usize];
        r.emit(&mut udp::Packet::new_unchecked(&mut buf[..])).unwrap();
        prop_assert_eq!(udp::Repr::parse(&udp::Packet::new_checked(&buf[..]).unwrap()).unwrap(), r);
    }
    #[test]
    fn pfc_round_trip(enable in any::<u8>(), quanta in any::<[u16; 8]>(), q in any::<u16>()) {
        rt!(pfc, pfc::Repr::Pfc { enable, quanta });
        rt!(pfc, pfc::Repr::Pause { quanta: q });
    }
    #[test]
    fn mad_header_round_trip(a in any::<(u8, u8, u8, u8, u16, u16, u64, u16, u32)>()) {
        rt!(madh, madh::Repr {
            base_version: a.0, mgmt_class: MgmtClass::from(a.1), class_version: a.2, method: Method::from(a.3),
            status: a.4, class_specific: a.5, tid: a.6, attr_id: AttrId::from(a.7), attr_mod: a.8,
        });
    }
    #[test]
    fn smp_round_trip(
        m in any::<u8>(), st in any::<u16>(), tid in any::<u64>(), attr in any::<u16>(), am in any::<u32>(), mk in any::<u64>(),
        dr in proptest::option::of((any::<bool>(), any::<u8>(), 0u8..64, any::<u16>(), any::<u16>(), any::<[u8; 32]>())),
        data in any::<[u8; 32]>(),
    ) {
        let route = match dr {
            None => Route::Lid,
            Some((ret, hp, hc, s, d, path)) => {
                let mut ip = [0u8; 64];
                ip[..32].copy_from_slice(&path);
                let mut rp = [0u8; 64];
                rp[32..].copy_from_slice(&path);
                Route::Directed(DrRoute { returning: ret, hop_ptr: hp, hop_cnt: hc, dr_slid: Lid(s), dr_dlid: Lid(d), initial_path: ip, return_path: rp })
            }
        };
        let mut d = [0u8; 64];
        d[..32].copy_from_slice(&data);
        d[32..].copy_from_slice(&data);
        let status = if matches!(route, Route::Lid) { st } else { st & 0x7fff };
        let s = Smp { method: Method::from(m), status, tid, attr_id: AttrId::from(attr), attr_mod: am, m_key: mk, route, data: d };
        let mut buf = [0xa5u8; 256];
        s.to_bytes(&mut buf).unwrap();
        prop_assert_eq!(Smp::from_bytes(&buf).unwrap(), s);
    }
    #[test]
    fn attributes_round_trip(raw in any::<[u8; 32]>(), raw2 in any::<[u8; 32]>()) {
        // Parse arbitrary bytes, emit, parse again: emit must reproduce every field.
        let mut b = [0u8; 64];
        b[..32].copy_from_slice(&raw);
        b[32..].copy_from_slice(&raw2);
        macro_rules! again {
            ($m:ident) => {{
                let r = $m::Repr::from_bytes(&b).unwrap();
                let mut o = [0xa5u8; 64];
                r.to_bytes(&mut o).unwrap();
                prop_assert_eq!($m::Repr::from_bytes(&o).unwrap(), r);
            }};
        }
        again!(node_info);
        again!(port_info);
        again!(switch_info);
        again!(sm_info);
        use attr::{lft, node_description, pkey_table, sl2vl, vl_arb};
        again!(lft);
        again!(node_description);
        again!(pkey_table);
        again!(sl2vl);
        again!(vl_arb);
        let n = notice::Notice::parse(&b).unwrap();
        let mut o = [0xa5u8; 64];
        n.emit(&mut o).unwrap();
        prop_assert_eq!(notice::Notice::parse(&o).unwrap(), n);
    }
    #[test]
    fn node_info_typed_round_trip(g in any::<(u64, u64, u64)>(), np in any::<u8>(), lp in any::<u8>(), vid in 0u32..0x100_0000) {
        let r = node_info::Repr {
            base_version: 1, class_version: 1, node_type: attr::NodeType::Switch, num_ports: np,
            system_image_guid: Guid(g.0), node_guid: Guid(g.1), port_guid: Guid(g.2), partition_cap: 8,
            device_id: 0xd2f0, revision: 0xa0, local_port_num: lp, vendor_id: vid,
        };
        rt!(node_info, r);
    }
    #[test]
    fn whole_packet_round_trip(
        encap in arb_encap(),
        b in arb_bth(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        ext_seed in any::<u64>(),
    ) {
        // Pick an opcode with known layout from the random byte.
        let ops = Opcode::ALL;
        let op = ops[(u8::from(b.opcode) as usize) % ops.len()];
        let l = op.layout().unwrap();
        let payload: &[u8] = if l.payload { &payload } else { &[] };
        let ext = {
            let mut runner = proptest::test_runner::TestRunner::new_with_rng(
                ProptestConfig::default(),
                proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &{
                    let mut s = [0u8; 32];
                    s[..8].copy_from_slice(&ext_seed.to_le_bytes());
                    s
                }),
            );
            arb_ext(op).new_tree(&mut runner).unwrap().current()
        };
        let bth = bth::Repr { opcode: op, ..b };
        let p = IbPacket { encap, bth, ext, payload };
        let mut buf = vec![0xa5u8; p.buffer_len()];
        let n = p.emit(&mut buf).unwrap();
        let link = if matches!(encap, Encap::Ib { .. }) { LinkType::Infiniband } else { LinkType::Ethernet };
        let d = decode(&buf[..n], link).unwrap();
        let Decoded::Ib { packet, checks, .. } = d else { panic!("not IB: {d:?}") };
        prop_assert!(checks.all_ok(), "{:?}", checks);
        prop_assert!(normalise(p, &packet), "{:?}\n!=\n{:?}", p, packet);
    }
}
