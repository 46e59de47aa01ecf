//! Criterion benches: ICRC over 4 KiB, decode + ICRC check of 4 KiB RoCEv2 packets,
//! header-only parse. Figures are recorded in docs/PERFORMANCE.md.

use criterion::{Criterion, Throughput, black_box, criterion_group, criterion_main};
use wire::Psn;
use wire::crc::{IcrcKind, icrc};
use wire::ib::{Opcode, bth};
use wire::net::{ethernet, ipv4, udp};
use wire::packet::{Encap, ExtHeaders, IbPacket, IpRepr, LinkType, decode};

fn sample_packet(payload: &[u8]) -> Vec<u8> {
    let p = IbPacket {
        encap: Encap::RoceV2 {
            eth: ethernet::Repr {
                dst: [2, 0, 0, 0, 0, 2],
                src: [2, 0, 0, 0, 0, 1],
                vlan: None,
                ethertype: 0,
            },
            ip: IpRepr::V4(ipv4::Repr {
                dscp: 26,
                ecn: 2,
                ident: 1,
                dont_frag: true,
                ttl: 64,
                protocol: 17,
                src: [192, 0, 2, 1],
                dst: [192, 0, 2, 2],
                payload_len: 0,
            }),
            udp: udp::Repr {
                src_port: 49152,
                dst_port: 4791,
                payload_len: 0,
                checksum: 0,
            },
        },
        bth: bth::Repr {
            opcode: Opcode::RcSendMiddle,
            se: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: 0xffff,
            fecn: false,
            becn: false,
            dqpn: 0x11,
            ack_req: false,
            psn: Psn::new(7),
        },
        ext: ExtHeaders::default(),
        payload,
    };
    let mut buf = vec![0u8; p.buffer_len()];
    p.emit(&mut buf).unwrap();
    buf
}

fn benches(c: &mut Criterion) {
    let payload: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
    let frame = sample_packet(&payload);

    let mut g = c.benchmark_group("icrc");
    g.throughput(Throughput::Bytes(4096));
    g.bench_function("roce_v2_ipv4_4KiB_payload", |b| {
        b.iter(|| {
            icrc(
                IcrcKind::RoceV2Ipv4,
                black_box(&frame[14..54]),
                black_box(&frame[54..54 + 4096]),
            )
        })
    });
    // The plain CRC-32 of the same 4 KiB with the crc32fast crate, for comparison.
    g.bench_function("crc32fast_4KiB_baseline", |b| {
        b.iter(|| crc32fast::hash(black_box(&frame[54..54 + 4096])))
    });
    g.finish();

    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(1));
    g.bench_function("roce_v2_4KiB_decode_and_icrc", |b| {
        b.iter(|| {
            let d = decode(black_box(&frame), LinkType::Ethernet).unwrap();
            match d {
                wire::Decoded::Ib { checks, .. } => assert!(checks.icrc.ok()),
                _ => unreachable!(),
            }
        })
    });
    let small = sample_packet(&payload[..0]);
    g.bench_function("roce_v2_empty_decode_and_icrc", |b| {
        b.iter(|| {
            let d = decode(black_box(&small), LinkType::Ethernet).unwrap();
            match d {
                wire::Decoded::Ib { checks, .. } => assert!(checks.icrc.ok()),
                _ => unreachable!(),
            }
        })
    });
    g.bench_function("header_only_bth_parse", |b| {
        b.iter(|| {
            let e = ethernet::Packet::new_checked(black_box(&frame[..])).unwrap();
            let ip = ipv4::Packet::new_checked(&frame[14..]).unwrap();
            let u = udp::Packet::new_checked(&frame[34..]).unwrap();
            let t = bth::Packet::new_checked(&frame[42..]).unwrap();
            (e.ethertype(), ip.dscp(), u.src_port(), t.opcode(), t.dqpn(), t.psn())
        })
    });
    g.finish();
}

criterion_group!(wire_benches, benches);
criterion_main!(wire_benches);
