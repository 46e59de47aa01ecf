//! Bandwidth, latency, READ, UD and determinism on small fabrics, with predictions
//! computed here from first principles (IBA header sizes, link rate, cable delay).

use fabric::{LinkRate, NodeId};
use sim::testutil::{Tie, bfs_routes, cas, one_switch};
use sim::workload::perftest;
use sim::{EngineConfig, Forwarding, IbConfig, Sim, Time};

// IBA vol. 1 §5.4 / §9: header and trailer sizes in bytes.
const LRH: u64 = 8;
const BTH: u64 = 12;
const RETH: u64 = 16;
const ICRC: u64 = 4;
const VCRC: u64 = 2;

fn two_hosts(ib: IbConfig) -> (Sim, NodeId, NodeId) {
    let f = one_switch(2, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let h = cas(&f);
    let sim = Sim::new(&f, &t, ib, EngineConfig::default()).unwrap();
    (sim, h[0], h[1])
}

#[test]
fn write_bandwidth_matches_link_rate_mtu_and_headers() {
    let (mut sim, a, b) = two_hosts(IbConfig::default());
    let size = 65_536u64;
    let mtu = 4096u64;
    let r = perftest::write_bw(&mut sim, a, b, size, 2_000, 128).unwrap();
    // 16 packets: WRITE First carries the RETH, the other 15 do not.
    let pkts = size.div_ceil(mtu);
    let wire = size + pkts * (LRH + BTH + ICRC + VCRC) + RETH;
    let predicted = 100e9 * size as f64 / wire as f64;
    let err = (r.bw_avg_bps - predicted).abs() / predicted;
    assert!(
        err < 0.01,
        "measured {:.4} Gb/s, predicted {:.4} Gb/s",
        r.bw_avg_bps / 1e9,
        predicted / 1e9
    );
    sim.check_ledger().unwrap();
    assert_eq!(sim.ledger().total_dropped(), 0);
    assert_eq!(sim.stats().psn_errors, 0);
    assert_eq!(r.test, "RDMA_Write BW Test");
}

#[test]
fn send_latency_is_serialization_plus_propagation_plus_switch_latency() {
    for fwd in [Forwarding::CutThrough, Forwarding::StoreAndForward] {
        let ib = IbConfig {
            forwarding: fwd,
            ..IbConfig::default()
        };
        let lat = ib.switch_latency_ps;
        let (mut sim, a, b) = two_hosts(ib);
        let size = 64u64;
        let r = perftest::send_lat(&mut sim, a, b, size, 20).unwrap();
        // SEND Only: LRH + BTH + payload + ICRC + VCRC; 100 Gb/s = 80 ps per byte.
        let ser = (LRH + BTH + size + ICRC + VCRC) * 80;
        let prop = 2 * 5_000; // 2 m at 5 ns/m
        let want = match fwd {
            // The switch starts sending once the header is in: one serialization.
            Forwarding::CutThrough => ser + 2 * prop + lat,
            // It waits for the whole packet: two serializations.
            Forwarding::StoreAndForward => 2 * ser + 2 * prop + lat,
        };
        assert_eq!(r.latency.min_ps, want, "{fwd:?}");
        assert_eq!(r.latency.max_ps, want, "{fwd:?}");
        assert_eq!(r.latency.stdev_ps, 0.0);
        sim.check_ledger().unwrap();
        assert_eq!(sim.in_flight(), 0);
    }
}

#[test]
fn read_latency_covers_request_and_response() {
    let ib = IbConfig::default();
    let lat = ib.switch_latency_ps;
    let (mut sim, a, b) = two_hosts(ib);
    let r = perftest::read_lat(&mut sim, a, b, 8, 10).unwrap();
    let req = (LRH + BTH + RETH + ICRC + VCRC) * 80;
    let resp = (LRH + BTH + 4 + 8 + ICRC + VCRC) * 80; // READ Response Only has an AETH
    let want = req + resp + 4 * 10_000 + 2 * lat;
    assert_eq!(r.latency.min_ps, want);
    sim.check_ledger().unwrap();
}

#[test]
fn multi_packet_read_and_send_complete() {
    let (mut sim, a, b) = two_hosts(IbConfig {
        mtu: 1024,
        ..IbConfig::default()
    });
    let (qa, qb) = sim.create_rc_pair(a, b, &sim::QpOptions::default()).unwrap();
    sim.post_read(qa, 10_000, 1).unwrap();
    sim.post_send(qa, 5_000, 2).unwrap();
    sim.post_write(qa, 0, 3).unwrap();
    let mut seen = Vec::new();
    loop {
        match sim.run(Time::NEVER) {
            sim::RunStatus::Idle => break,
            sim::RunStatus::Completion => {
                while let Some(n) = sim.next_cq_event() {
                    while let Some(c) = sim.poll_cq(n) {
                        seen.push((c.op, c.bytes, c.qp == qb));
                    }
                }
            }
            other => panic!("{other:?}"),
        }
    }
    use sim::CqeOp::*;
    assert!(seen.contains(&(Read, 10_000, false)), "{seen:?}");
    assert!(seen.contains(&(Send, 5_000, false)), "{seen:?}");
    assert!(seen.contains(&(Recv, 5_000, true)), "{seen:?}");
    assert!(seen.contains(&(Write, 0, false)), "{seen:?}");
    assert_eq!(sim.qp_rx_bytes(qb), 5_000);
    assert_eq!(sim.stats().psn_errors, 0);
    sim.check_ledger().unwrap();
    assert_eq!(sim.in_flight(), 0);
}

#[test]
fn ud_and_vl15_management_datagrams_arrive() {
    let (mut sim, a, b) = two_hosts(IbConfig::default());
    let o = sim::QpOptions {
        mgmt: true,
        ..sim::QpOptions::default()
    };
    let ua = sim.create_ud(a, &o).unwrap();
    let ub = sim.create_ud(b, &o).unwrap();
    sim.post_ud_send(ua, ub, 256, 9).unwrap();
    assert!(sim.post_ud_send(ua, ub, 257, 9).is_err());
    let mut got = Vec::new();
    while let sim::RunStatus::Completion = sim.run(Time::NEVER) {
        while let Some(n) = sim.next_cq_event() {
            while let Some(c) = sim.poll_cq(n) {
                got.push(c.op);
            }
        }
    }
    assert_eq!(got, vec![sim::CqeOp::UdSend, sim::CqeOp::Recv]);
    sim.check_ledger().unwrap();
}

#[test]
fn vl_arbitration_shares_a_port_by_weight() {
    // Two senders into one receiver, on SL0→VL0 and SL1→VL1; the low-priority
    // table gives VL0 weight 192 and VL1 weight 64 (64-byte units): 3:1.
    let f = one_switch(3, LinkRate::EDR_4X, 2.0);
    let mut t = bfs_routes(&f, Tie::LowestPort);
    let ident: [u8; 16] = std::array::from_fn(|i| (i % 2) as u8);
    t.sl2vl = Some(
        f.nodes
            .iter()
            .map(|n| vec![vec![ident; n.ports.len()]; n.ports.len()])
            .collect(),
    );
    t.vls_used = 2;
    let arb = sim::VlArbConfig {
        high: vec![],
        low: vec![
            sim::config::ArbEntry { vl: 0, weight: 192 },
            sim::config::ArbEntry { vl: 1, weight: 64 },
        ],
        high_limit: 0,
    };
    let ib = IbConfig {
        vl_arb: Some(arb),
        ..IbConfig::default()
    };
    let h = cas(&f);
    let mut sim = Sim::new(&f, &t, ib, EngineConfig::default()).unwrap();
    assert_eq!(sim.num_vls(), 2);
    let (q0, r0) = sim
        .create_rc_pair(
            h[0],
            h[2],
            &sim::QpOptions {
                sl: Some(0),
                ..Default::default()
            },
        )
        .unwrap();
    let (q1, r1) = sim
        .create_rc_pair(
            h[1],
            h[2],
            &sim::QpOptions {
                sl: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    sim.post_write(q0, u64::MAX, 0).unwrap();
    sim.post_write(q1, u64::MAX, 1).unwrap();
    assert_eq!(sim.run(Time::ms(1)), sim::RunStatus::TimeLimit);
    let (b0, b1) = (sim.qp_rx_bytes(r0) as f64, sim.qp_rx_bytes(r1) as f64);
    let ratio = b0 / b1;
    assert!((ratio - 3.0).abs() < 0.15, "VL0:VL1 = {b0}:{b1} = {ratio:.3}");
    // Together they fill the receiver's link.
    let gbps = (b0 + b1) * 8.0 / 1e-3 / 1e9;
    assert!(gbps > 98.0, "{gbps:.2} Gb/s");
    sim.check_ledger().unwrap();
    sim.finish();
    // The losing VL waits on credits at the senders' ports: stall time shows it.
    assert_eq!(sim.ledger().total_dropped(), 0);
}

#[test]
fn samples_show_a_saturated_link_and_its_buffer() {
    // Two hosts write to a third through one switch: its port to the receiver is
    // busy all the time and the input buffers behind it fill.
    let f = one_switch(3, LinkRate::EDR_4X, 2.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let h = cas(&f);
    let eng = EngineConfig {
        sample_interval_ps: 10_000_000,
        ..EngineConfig::default()
    };
    let mut sim = Sim::new(&f, &t, IbConfig::default(), eng).unwrap();
    let (q0, _) = sim.create_rc_pair(h[0], h[2], &sim::QpOptions::default()).unwrap();
    let (q1, _) = sim.create_rc_pair(h[1], h[2], &sim::QpOptions::default()).unwrap();
    sim.post_write(q0, u64::MAX, 0).unwrap();
    sim.post_write(q1, u64::MAX, 1).unwrap();
    assert_eq!(sim.run(Time::us(200)), sim::RunStatus::TimeLimit);
    sim.finish();
    let s = sim.series();
    assert_eq!(s.times_ps.len(), 20); // 10, 20, …, 200 us
    let col = s.ports.iter().position(|p| p == "sw0/3").unwrap();
    // After the first sample, the receiver's link is saturated: each 10 us window
    // holds 30 whole 4,122-byte packets of the 30.3 that fit (bytes are counted
    // when a packet starts), so 0.989 per window and 1.0 on average.
    for row in &s.utilisation[1..] {
        assert!(row[col] > 0.98, "{row:?}");
    }
    let r = sim
        .port_reports()
        .into_iter()
        .find(|p| p.node == "sw0" && p.port == 3)
        .unwrap();
    assert!(r.utilisation > 0.99, "{r:?}");
    let csv = sim.port_csv();
    assert!(csv.lines().next().unwrap().contains("stall_ps_vl0"));
    let sw_in: Vec<_> = sim
        .port_reports()
        .into_iter()
        .filter(|p| p.node == "sw0" && p.port <= 2)
        .collect();
    // Both senders are held back by credits; their input buffers at the switch fill up.
    let stalled: Vec<u64> = sim
        .port_reports()
        .iter()
        .filter(|p| p.node.starts_with('h') && p.node != "h2")
        .map(|p| p.credit_stall_ps[0])
        .collect();
    // Each gets half the link, so it waits for credits about half of the 200 us.
    assert!(
        stalled.iter().all(|&s| s > 80_000_000 && s < 110_000_000),
        "{stalled:?}"
    );
    assert!(sw_in.iter().all(|p| p.peak_buffer_bytes[0] >= 60_000), "{sw_in:?}");
}

/// Two switches joined by one cable. sw0 holds senders a0..a3; sw1 holds the hot
/// receiver H (port 1), the victim receiver V (port 2) and local senders l0, l1.
/// a0..a2 and l0, l1 write to H; a3 writes to V across the same cable.
fn victim_fabric() -> (fabric::Fabric, Vec<NodeId>) {
    use fabric::{Fabric, Guid, NodeSpec};
    let mut f = Fabric::new();
    let s0 = f.add_node(NodeSpec::switch("sw0", Guid(0x1000), 8)).unwrap();
    let s1 = f.add_node(NodeSpec::switch("sw1", Guid(0x1001), 8)).unwrap();
    let mut hosts = Vec::new();
    for (i, (sw, port)) in [(s0, 1), (s0, 2), (s0, 3), (s0, 4), (s1, 1), (s1, 2), (s1, 3), (s1, 4)]
        .into_iter()
        .enumerate()
    {
        let c = f
            .add_node(NodeSpec::ca(format!("c{i}"), Guid(0x10_0000 + 16 * i as u64), 1))
            .unwrap();
        f.connect(sw, port, c, 1, LinkRate::EDR_4X, 2.0).unwrap();
        hosts.push(c);
    }
    f.connect(s0, 8, s1, 8, LinkRate::EDR_4X, 10.0).unwrap();
    (f, hosts)
}

fn victim_goodput(cc: Option<sim::config::CcConfig>) -> (f64, f64, sim::metrics::RunSummary) {
    let (f, h) = victim_fabric();
    let t = bfs_routes(&f, Tie::LowestPort);
    let ib = IbConfig {
        cc,
        ..IbConfig::default()
    };
    let mut sim = Sim::new(&f, &t, ib, EngineConfig::default()).unwrap();
    let (hot, victim) = (h[4], h[5]);
    let mut hot_rx = Vec::new();
    for &src in [h[0], h[1], h[2], h[6], h[7]].iter() {
        let (q, r) = sim.create_rc_pair(src, hot, &sim::QpOptions::default()).unwrap();
        sim.post_write(q, u64::MAX, 0).unwrap();
        hot_rx.push(r);
    }
    let (qv, rv) = sim.create_rc_pair(h[3], victim, &sim::QpOptions::default()).unwrap();
    sim.post_write(qv, u64::MAX, 0).unwrap();
    assert_eq!(sim.run(Time::ms(2)), sim::RunStatus::TimeLimit);
    sim.check_ledger().unwrap();
    let secs = 2e-3;
    let v = sim.qp_rx_bytes(rv) as f64 * 8.0 / secs / 1e9;
    let hot: f64 = hot_rx.iter().map(|&r| sim.qp_rx_bytes(r) as f64).sum::<f64>() * 8.0 / secs / 1e9;
    (v, hot, sim.summary())
}

#[test]
fn ib_congestion_control_frees_the_victim_flow() {
    let (v0, hot0, s0) = victim_goodput(None);
    let (v1, hot1, s1) = victim_goodput(Some(sim::config::CcConfig::default()));
    eprintln!(
        "without CC: victim {v0:.1} Gb/s, hot {hot0:.1} Gb/s; with CC: victim {v1:.1} Gb/s, hot {hot1:.1} Gb/s; FECN {} BECN {}",
        s1.fecn_marked, s1.becn_received
    );
    assert_eq!(s0.fecn_marked, 0);
    assert!(s1.fecn_marked > 0 && s1.becn_received > 0);
    // Without CC the cable's input buffer at sw1 fills with packets for H and the
    // victim gets a share of what H drains; with CC the hot senders back off.
    assert!(v1 > 1.4 * v0, "victim {v0:.1} -> {v1:.1} Gb/s");
    // The hot receiver's link stays nearly full either way.
    assert!(hot0 > 95.0 && hot1 > 90.0, "hot {hot0:.1} / {hot1:.1} Gb/s");
}

#[test]
fn a_switch_sl2vl_entry_past_the_data_vls_is_taken_as_the_last_one() {
    // SL 1 maps to VL 1 at the CAs but to VL 15 (IBA's "drop") at the switch,
    // a table not made for this run: the packets go on the last data VL, and
    // every per-VL counter they touch stays within the two VLs modelled.
    let f = one_switch(3, LinkRate::EDR_4X, 2.0);
    let mut t = bfs_routes(&f, Tie::LowestPort);
    let ca: [u8; 16] = std::array::from_fn(|i| (i % 2) as u8);
    let sw: [u8; 16] = std::array::from_fn(|i| if i % 2 == 1 { 15 } else { 0 });
    t.sl2vl = Some(
        f.nodes
            .iter()
            .map(|n| {
                let m = if n.kind == fabric::NodeKind::Switch { sw } else { ca };
                vec![vec![m; n.ports.len()]; n.ports.len()]
            })
            .collect(),
    );
    t.vls_used = 2;
    let h = cas(&f);
    let mut sim = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
    assert_eq!(sim.num_vls(), 2);
    let (q, r) = sim
        .create_rc_pair(
            h[0],
            h[2],
            &sim::QpOptions {
                sl: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
    sim.post_write(q, 1 << 20, 0).unwrap();
    while let sim::RunStatus::Completion = sim.run(Time::ms(10)) {
        while let Some(n) = sim.next_cq_event() {
            while sim.poll_cq(n).is_some() {}
        }
    }
    assert_eq!(sim.qp_rx_bytes(r), 1 << 20);
    sim.check_ledger().unwrap();
    assert_eq!(sim.ledger().total_dropped(), 0);
    assert_eq!(sim.in_flight(), 0);
    assert!(sim.audit().is_empty(), "{:?}", sim.audit());
    // The switch took both directions in on VL 1 and on nothing else.
    let reports = sim.port_reports();
    for end in [h[0], h[2]] {
        let name = sim.node_name(end.0).to_string();
        let facing = reports
            .iter()
            .find(|p| p.peer == name)
            .expect("the switch port facing it");
        assert_eq!(facing.peak_buffer_bytes.len(), 2);
        assert!(
            facing.peak_buffer_bytes[1] > 0,
            "{name}: {:?}",
            facing.peak_buffer_bytes
        );
        assert_eq!(facing.peak_buffer_bytes[0], 0, "{name}");
    }
}

#[test]
fn a_cable_longer_than_the_simulator_keeps_is_refused_by_name() {
    // 1,000 km of fibre is about 5 ms of delay; a port keeps 32 bits of picoseconds.
    let f = one_switch(2, LinkRate::EDR_4X, 1_000_000.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    let Err(err) = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()) else {
        panic!("a 5 ms cable is accepted");
    };
    let msg = err.to_string();
    assert!(
        msg.contains("cable delay") && msg.contains("4,294,967,295 ps") && msg.contains("sw0/1 - h0/1"),
        "{msg}"
    );
    // 100 km (0.5 ms) is kept.
    let f = one_switch(2, LinkRate::EDR_4X, 100_000.0);
    let t = bfs_routes(&f, Tie::LowestPort);
    assert!(Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).is_ok());
}

#[test]
fn every_example_scenario_loads() {
    // The scenarios under examples/sim are what the README, the benchmark and
    // `scripts/build-pgo` run: each must parse and pass the checks `sim run` makes.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim");
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let s = sim::scenario::Scenario::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert!(s.end().is_some(), "{}: no end time", p.display());
            names.push(p.file_stem().unwrap().to_string_lossy().into_owned());
        }
    }
    names.sort();
    assert!(
        names.contains(&"ft432-permutation-ib".to_string()) && names.contains(&"ft128-permutation-ib".to_string()),
        "{names:?}"
    );
}
