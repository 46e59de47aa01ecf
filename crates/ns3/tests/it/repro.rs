//! Seeded reproductions of published RoCE behaviour on small fabrics (the large
//! ones are documented runs in docs/VALIDATION.md). Each prints the figure it
//! checks; `cargo nextest run -p rdmalab-ns3 repro --no-capture` shows them. The
//! fabrics and flows come from `sim::roce::fixtures`.

use fabric::{LinkRate, NodeId};
use sim::Time;
use sim::roce::dcqcn::Profile;
use sim::roce::fixtures::*;
use sim::roce::net::{CongestionControl, FlowSpec, RoceConfig, RoceDrop, RoceSim, RoceStatus};
use sim::roce::pfc::{PauseMode, WdAction, WdConfig};
use sim::roce::transport::Recovery;

fn hpcc_cfg() -> RoceConfig {
    RoceConfig {
        nic: sim::roce::net::NicConfig {
            cc: CongestionControl::Dcqcn(Profile::HpccNs3.params(100_000_000_000)),
            ..Default::default()
        },
        ..RoceConfig::default()
    }
}

/// Settings the model cannot hold are refused with the setting named: a
/// static route out of a port the switch does not have or from a host (its
/// port would index the switch's queue and MMU tables), and a buffer over
/// the 32 bits the MMU counts a priority group's bytes in.
#[test]
fn route_override_and_buffer_out_of_range_are_refused_by_name() {
    let (f, sw, h) = star(3);
    let flows = [flow(h[0], h[1], 1 << 20, 1, Time::ZERO, 10000)];
    let field = |cfg: RoceConfig| match RoceSim::new(&f, cfg, &flows) {
        Err(sim::roce::net::RoceError::Config { field, why }) => (field, why),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("accepted"),
    };
    // The star's switch has ports 0..=3 (port 0 unused, 1..=3 hosts).
    let ok = RoceConfig {
        routing: sim::roce::net::RoutingConfig {
            route_overrides: vec![(sw, h[1], 2)],
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    assert!(RoceSim::new(&f, ok, &flows).is_ok());
    for bad in [(sw, h[1], 4), (h[0], h[1], 0)] {
        let (fld, why) = field(RoceConfig {
            routing: sim::roce::net::RoutingConfig {
                route_overrides: vec![bad],
                ..Default::default()
            },
            ..RoceConfig::default()
        });
        assert_eq!(fld, "route_overrides");
        assert!(why.contains(&format!("{} one of its ports", bad.2)), "{why}");
    }
    let (fld, why) = field(RoceConfig {
        switch: sim::roce::net::SwitchConfig {
            buffer_bytes: 1 << 32,
            ..Default::default()
        },
        ..RoceConfig::default()
    });
    assert_eq!(fld, "buffer_bytes");
    assert!(
        why.contains("sw0: buffer_bytes is 4294967296 B") && why.contains("32 bits"),
        "{why}"
    );
}

/// DCQCN paper §3.1 target (a): two flows on one bottleneck converge to a
/// fair share. Flow B joins 2 ms after A has the link; over 20–30 ms each gets
/// half within 10%, the link stays busy, and nothing is dropped.
#[test]
fn two_dcqcn_flows_converge_to_fair_share() {
    let (f, _, h) = star(3);
    let flows = [
        flow(h[0], h[2], 1 << 30, 1, Time::ZERO, 10000),
        flow(h[1], h[2], 1 << 30, 1, Time::ms(2), 10001),
    ];
    let mut sim = RoceSim::new(&f, hpcc_cfg(), &flows).unwrap();
    assert_eq!(sim.run(Time::ms(20)), RoceStatus::TimeLimit);
    let (a0, b0) = (sim.flow_delivered(0), sim.flow_delivered(1));
    assert_eq!(sim.run(Time::ms(30)), RoceStatus::TimeLimit);
    let (a, b) = ((sim.flow_delivered(0) - a0) as f64, (sim.flow_delivered(1) - b0) as f64);
    let gbps = |x: f64| x * 8.0 / 10e-3 / 1e9;
    eprintln!(
        "two flows, hpcc-ns3 DCQCN, 100G: A {:.1} Gb/s, B {:.1} Gb/s over 20-30 ms; rates now {:.1?} / {:.1?} Gb/s; packets sent A {} B {}",
        gbps(a),
        gbps(b),
        sim.flow_rate(0).map(|r| r / 1e9),
        sim.flow_rate(1).map(|r| r / 1e9),
        sim.flow_counters(0).sent,
        sim.flow_counters(1).sent
    );
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(jain > 0.99, "jain {jain}: A {a} B {b}");
    assert!(gbps(a + b) > 85.0, "bottleneck busy: {:.1} Gb/s", gbps(a + b));
    assert_eq!(sim.ledger.total_dropped(), 0);
    assert!(sim.ledger_balances());
}

fn incast(pfc: bool, seed: u64) -> RoceSim {
    let (f, _, h) = star(17);
    let flows = incast_flows(&h[..16], h[16], 1 << 20);
    let cfg = RoceConfig {
        nic: sim::roce::net::NicConfig {
            cc: CongestionControl::None,
            recovery: Recovery::GoBackN,
            rto: Time::us(200),
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            // Shallow shared buffer (2 MiB) so a 16 MB burst cannot hide in it;
            // line-rate senders (no DCQCN) make the burst as sharp as possible.
            buffer_bytes: 2 << 20,
            ecn: false,
            ..Default::default()
        },
        pfc: sim::roce::net::PfcConfig {
            enabled: pfc,
            ..Default::default()
        },
        seed,
        ..RoceConfig::default()
    };
    let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
    let st = sim.run(Time::ms(50));
    assert_eq!(
        st,
        RoceStatus::Done,
        "seed {seed}: incast pfc={pfc} did not finish\n{}",
        sim.state_summary()
    );
    assert!(sim.ledger_balances());
    sim
}

/// A 16:1 incast is lossless with PFC (pauses, no drops) and without PFC
/// drops at the switch and recovers by go-back-N retransmissions.
#[test]
fn incast_16_to_1_lossless_with_pfc_lossy_without() {
    let with = incast(true, 3);
    let without = incast(false, 3);
    let retx = |s: &RoceSim| (0..16).map(|k| s.flow_counters(k).retransmitted).sum::<u64>();
    let pauses = with.pfc.iter().filter(|r| r.pause).count();
    let last = |s: &RoceSim| (0..16).filter_map(|k| s.flow_done(k)).max().unwrap();
    eprintln!(
        "16:1 incast of 1 MiB each, 2 MiB buffer: PFC on: {} drops, {} pause transitions, done {}; PFC off: {} drops ({:?}), {} retransmitted packets, done {}",
        with.ledger.total_dropped(),
        pauses,
        last(&with),
        without.ledger.total_dropped(),
        without.ledger.dropped,
        retx(&without),
        last(&without)
    );
    assert_eq!(with.ledger.total_dropped(), 0);
    assert_eq!(retx(&with), 0);
    assert!(pauses > 0);
    assert!(
        without.ledger.dropped[RoceDrop::ALL
            .iter()
            .position(|r| *r == RoceDrop::LossyOverThreshold)
            .unwrap()]
            > 0
    );
    assert!(retx(&without) > 0);
    assert!(last(&without) > last(&with), "losses cost time");
    // docs/VALIDATION.md §2's table, within 1% (times within 0.01 ms)
    let near = |got: f64, want: f64| (got / want - 1.0).abs() <= 0.01;
    let ms = |t: Time| t.0 as f64 / 1e9;
    assert!(near(pauses as f64, 464.0), "{pauses} pause transitions, documented 464");
    assert!(near(without.ledger.total_dropped() as f64, 279_166.0));
    assert!(near(retx(&without) as f64, 295_376.0));
    assert!((ms(last(&with)) - 1.430).abs() <= 0.01, "{}", last(&with));
    assert!((ms(last(&without)) - 2.946).abs() <= 0.01, "{}", last(&without));
}

/// Guo et al. SIGCOMM'16 §5: a deterministic 1/256 drop rate on 4 MB messages
/// gives go-back-0 zero goodput and leaves go-back-N most of the line.
#[test]
fn go_back_0_zero_goodput_go_back_n_not() {
    let run = |rec: Recovery| {
        let (f, _, h) = star(2);
        let link = f.peer(h[0], 1).unwrap().1;
        let cfg = RoceConfig {
            nic: sim::roce::net::NicConfig {
                recovery: rec,
                cc: CongestionControl::None,
                rto: Time::us(100),
                ..Default::default()
            },
            faults: sim::roce::net::FaultConfig {
                loss_every: vec![(link, 256)],
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        let mut sim = RoceSim::new(&f, cfg, &[flow(h[0], h[1], 4 << 20, 100, Time::ZERO, 10000)]).unwrap();
        sim.run(Time::ms(10));
        let done: u64 = sim.completions.iter().map(|c| c.1.bytes).sum();
        (done as f64 * 8.0 / 10e-3 / 100e9, sim.flow_counters(0))
    };
    let (g0, c0) = run(Recovery::GoBack0);
    let (gn, cn) = run(Recovery::GoBackN);
    eprintln!(
        "1/256 loss, 4 MiB messages, 100G, 10 ms: goodput go-back-0 {g0:.3} of line ({c0:?}); go-back-N {gn:.3} ({cn:?})"
    );
    assert_eq!(c0.completed, 0);
    assert!(gn > 0.6, "{gn}");
    // docs/VALIDATION.md §3's table: goodput within 0.005 of line, counts within 1%
    assert!(g0 == 0.0 && (gn - 0.738).abs() <= 0.005, "{g0} {gn}");
    assert_eq!(cn.completed, 22);
    let near = |got: u64, want: f64| (got as f64 / want - 1.0).abs() <= 0.01;
    assert!(near(c0.sent, 306.0) && near(c0.retransmitted, 117_397.0), "{c0:?}");
    assert!(near(cn.sent, 94_313.0) && near(cn.retransmitted, 23_409.0), "{cn:?}");
}

#[test]
fn same_seed_same_trace() {
    let a = incast(true, 9);
    let b = incast(true, 9);
    assert_eq!(a.trace_hash(), b.trace_hash());
    assert_eq!(a.events, b.events);
}

/// Hu et al. HotNets'16: a cyclic buffer dependency deadlocks only when the
/// flows close the cycle. Each host sends to the host two switches
/// clockwise; three flows make a chain of dependencies and finish; the
/// fourth closes the loop leaf0→spine0→leaf1→spine1→leaf0, every ingress
/// pauses its upstream, nothing moves, and the deadlock is found and named.
#[test]
fn bounce_routes_give_a_pfc_deadlock_only_when_the_cycle_closes() {
    let run = |n: usize| {
        let (f, cfg, flows) = ring4_bounce(n);
        let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
        let st = sim.run(Time::ms(20));
        (st, sim)
    };
    let (st3, s3) = run(3);
    let (st4, s4) = run(4);
    eprintln!(
        "ring of 4 with clockwise bounce routes: 3 flows → {st3:?} at {}; 4 flows → {st4:?}",
        s3.now()
    );
    assert_eq!(st3, RoceStatus::Done);
    assert_eq!(s3.ledger.total_dropped(), 0);
    let RoceStatus::Deadlock(d) = st4 else {
        panic!("4 flows: {st4:?}\n{}", s4.state_summary())
    };
    assert_eq!(d.cycle.len(), 4, "{d}");
    let names: std::collections::BTreeSet<&str> = d.cycle.iter().map(|c| c.0.as_str()).collect();
    assert!(d.cycle.iter().all(|c| c.1 == 2 && c.2 == 3), "{d}");
    assert_eq!(names.len(), 4, "{d}");
    assert_eq!(s4.ledger.total_dropped(), 0, "lossless: a deadlock, not drops");
    assert!(s4.ledger_balances());
}

/// Hu et al., HotNets'16: a link failure makes routes bounce, the bounce
/// builds a cyclic buffer dependency, and PFC turns it into a deadlock. On
/// 2 leaves × 2 spines with destination-based ECMP (5-tuple hash), the
/// spine1–leaf1 link fails. spine1 sees it at once and reroutes traffic for
/// leaf1 down to leaf0 (its only other path, local repair); leaf0 has not
/// converged yet and still hashes that flow up to spine1, so its packets
/// bounce leaf0 → spine1 → leaf0 → spine1 … until leaf0 converges or their
/// TTL runs out. With a fast convergence (2 µs) the bounced packets go
/// round once, then leaf0 sends them to spine0, and every flow finishes with
/// no drop; with 1 ms the two loop queues pause each other and the deadlock
/// outlives the convergence: the detector names both queues.
#[test]
fn link_failure_bounce_loop_gives_a_pfc_deadlock_hotnets16() {
    let (f, leaves, spines, h) = leaf_spine_2x2(2);
    let dead = f.peer(leaves[1], 4).expect("leaf1 → spine1").1;
    let cfg = |conv: Time| RoceConfig {
        nic: sim::roce::net::NicConfig {
            cc: CongestionControl::None,
            rto: Time::us(400),
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            ecn: false,
            buffer_bytes: 2 << 20,
            ..Default::default()
        },
        routing: sim::roce::net::RoutingConfig {
            local_repair: true,
            ecmp_convergence: conv,
            ..Default::default()
        },
        observe: sim::roce::net::ObserveConfig {
            deadlock_check: Time::us(100),
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    // Pick UDP source ports (the ECMP entropy) so that leaf0 hashes flow A
    // to spine1 and flow B to spine0, as two of many flows would fall.
    let cands: Vec<FlowSpec> = (0..64u16)
        .flat_map(|i| {
            [
                flow(h[0][0], h[1][0], 4 << 20, 1, Time::ZERO, 0xc000 + i),
                flow(h[0][1], h[1][1], 4 << 20, 1, Time::ZERO, 0xc000 + i),
            ]
        })
        .collect();
    let probe = RoceSim::new(&f, cfg(Time::ms(1)), &cands).unwrap();
    let pick = |first: usize, port: u8| {
        (0..64)
            .map(|i| 2 * i + first)
            .find(|&k| probe.flow_path(k)[0] == ("leaf0".to_string(), port))
            .map(|k| cands[k])
            .expect("a source port hashing that way")
    };
    let flows = [pick(0, 4), pick(1, 3)];
    let run = |conv: Time| {
        let mut sim = RoceSim::new(&f, cfg(conv), &flows).unwrap();
        let before = sim.flow_path(0);
        sim.fail_link_at(dead, Time::us(50));
        let _ = sim.run(Time::us(51));
        let during = sim.flow_path(0);
        let st = sim.run(Time::ms(30));
        (st, sim, before, during)
    };
    let ttl = RoceDrop::ALL.iter().position(|r| *r == RoceDrop::TtlExpired).unwrap();

    let (st, fast, before, during) = run(Time::us(2));
    eprintln!(
        "flow A before the failure: {before:?}; in the window: {:?} …",
        &during[..5.min(during.len())]
    );
    assert_eq!(
        before,
        vec![
            ("leaf0".to_string(), 4),
            ("spine1".to_string(), 2),
            ("leaf1".to_string(), 1)
        ]
    );
    assert_eq!(
        &during[..4],
        &[
            ("leaf0".to_string(), 4),
            ("spine1".to_string(), 1),
            ("leaf0".to_string(), 4),
            ("spine1".to_string(), 1)
        ]
    );
    eprintln!(
        "convergence 2 µs: {st:?} at {}, TTL drops {}, other drops {}",
        fast.now(),
        fast.ledger.dropped[ttl],
        fast.ledger.total_dropped() - fast.ledger.dropped[ttl]
    );
    assert_eq!(st, RoceStatus::Done, "{}", fast.state_summary());
    assert_eq!(fast.ledger.total_dropped(), 0);
    assert!(fast.ledger_balances());

    let (st, slow, _, _) = run(Time::ms(1));
    let RoceStatus::Deadlock(d) = st else {
        panic!("1 ms convergence: {st:?}\n{}", slow.state_summary())
    };
    eprintln!(
        "convergence 1 ms: {d}; TTL drops {}, other drops {}; flow B done at {:?}, flow A delivered {} of {} B",
        slow.ledger.dropped[ttl],
        slow.ledger.total_dropped() - slow.ledger.dropped[ttl],
        slow.flow_done(1),
        slow.flow_delivered(0),
        4 << 20
    );
    let mut cycle = d.cycle.clone();
    cycle.sort();
    assert_eq!(
        cycle,
        vec![("leaf0".to_string(), 4, 3), ("spine1".to_string(), 1, 3)],
        "{d}"
    );
    assert!(d.at < Time::ms(1), "found inside the convergence window: {d}");
    assert_eq!(slow.ledger.lossless_faults(), 0);
    assert!(slow.ledger_balances());

    // Without the detector: the deadlock outlives the convergence. Flow A
    // delivers nothing more from 2 ms to 10 ms (its packets sit in the paused
    // loop queues and its sender's port on leaf0 stays paused); flow B, hashed
    // to spine0, finishes — the detector found the cycle while B still moved.
    let mut sim = RoceSim::new(
        &f,
        RoceConfig {
            observe: sim::roce::net::ObserveConfig {
                deadlock_check: Time::ZERO,
                ..cfg(Time::ms(1)).observe
            },
            ..cfg(Time::ms(1))
        },
        &flows,
    )
    .unwrap();
    sim.fail_link_at(dead, Time::us(50));
    let _ = sim.run(Time::ms(2));
    let at2 = [sim.flow_delivered(0), sim.flow_delivered(1)];
    let st = sim.run(Time::ms(10));
    let at10 = [sim.flow_delivered(0), sim.flow_delivered(1)];
    eprintln!("no detector: delivered at 2 ms {at2:?}, at 10 ms {at10:?} ({st:?})");
    assert_eq!(at2[0], at10[0]);
    assert!(at10[0] < 4 << 20 && sim.flow_done(0).is_none());
    assert!(sim.flow_done(1).is_some());

    // A loop alone is not a deadlock: eight packets sent into the same bounce
    // (flow A's 5-tuple, 8,000 B starting after the failure) go round until
    // their TTL runs out and are dropped as `TtlExpired`; go-back-N resends
    // them after each timeout, and once leaf0 converges (1.05 ms) they arrive.
    let small = [FlowSpec {
        size: 8_000,
        start: Time::us(60),
        ..flows[0]
    }];
    let mut sim = RoceSim::new(&f, cfg(Time::ms(1)), &small).unwrap();
    sim.fail_link_at(dead, Time::us(50));
    let st = sim.run(Time::ms(10));
    let ttl_drops = sim.ledger.dropped[ttl];
    eprintln!(
        "8 packets into the loop: {st:?} at {}, TTL drops {ttl_drops}, retransmitted {}",
        sim.now(),
        sim.flow_counters(0).retransmitted
    );
    assert_eq!(st, RoceStatus::Done);
    assert!(ttl_drops >= 8 && ttl_drops.is_multiple_of(8), "{ttl_drops}");
    assert_eq!(sim.ledger.total_dropped(), ttl_drops);
    assert!(sim.flow_done(0).unwrap() > Time::ms(1) + Time::us(50));
    assert_eq!(sim.ledger.lossless_faults(), 0);
    assert!(sim.ledger_balances());
    assert_eq!(sim.ledger.lossless_faults(), 0);
    let _ = spines;
}

/// mlx5 `min_time_between_cnps` paces the CNPs of the receiving *port*
/// (NVIDIA's PRM: "minimum time between sending CNPs from the port"): with
/// every packet marked, two senders into one receiver get at most one CNP per
/// 4 µs between them under `nvidia-cx`, where a per-QP limiter sends one per
/// QP per 4 µs, twice as many.
#[test]
fn nvidia_cx_paces_cnps_per_receiving_port() {
    let (f, _, h) = star(3);
    let flows = [
        flow(h[0], h[2], 64 << 20, 1, Time::ZERO, 10000),
        flow(h[1], h[2], 64 << 20, 1, Time::ZERO, 10001),
    ];
    let run = |per_port: bool| {
        let mut p = Profile::NvidiaCx.params(100_000_000_000);
        p.cnp_per_port = per_port;
        // Keep both senders above half the line so the queue, and the
        // marking, never stop: the CNP count is then the limiter's alone.
        p.min_rate_bps = 60e9;
        let cfg = RoceConfig {
            nic: sim::roce::net::NicConfig {
                cc: CongestionControl::Dcqcn(p),
                ..Default::default()
            },
            switch: sim::roce::net::SwitchConfig {
                red: vec![(
                    100_000_000_000,
                    sim::roce::dcqcn::Red {
                        kmin: 0,
                        kmax: 0,
                        pmax: 1.0,
                    },
                )],
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
        sim.run(Time::us(400));
        (sim.cnps_sent, sim.ecn_marks)
    };
    let (port, marks) = run(true);
    let (qp, _) = run(false);
    eprintln!("400 µs, every packet marked ({marks} marks): {port} CNPs paced per port, {qp} per QP");
    assert!((80..=400 / 4 + 1).contains(&port), "{port}");
    assert!(qp > 3 * port / 2, "{qp} vs {port}");
}

/// Pause frames travel on the link and are captured with the data: the
/// switch port facing a sender of a 16:1 incast carries XOFF/XON PFC frames,
/// ACKs and RoCEv2 headers that rdmalab's own decoder and tshark both read.
#[test]
fn tshark_decodes_captured_pfc_and_rocev2_frames() {
    let (f, sw, h) = star(17);
    let flows = incast_flows(&h[..16], h[16], 256 << 10);
    let too_small = RoceConfig {
        switch: sim::roce::net::SwitchConfig {
            buffer_bytes: 1 << 20,
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    let e = RoceSim::new(&f, too_small, &flows).unwrap_err();
    assert!(e.to_string().contains("leaves no shared pool"), "{e}");
    let cfg = RoceConfig {
        nic: sim::roce::net::NicConfig {
            cc: CongestionControl::None,
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            buffer_bytes: 2 << 20,
            ecn: false,
            ..Default::default()
        },
        observe: sim::roce::net::ObserveConfig {
            capture: Some((sw, 1)),
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
    let st = sim.run(Time::ms(20));
    assert_eq!(st, RoceStatus::Done, "{}", sim.state_summary());
    let path = std::env::temp_dir().join(format!("rdmalab-roce-capture-{}.pcap", std::process::id()));
    let n = sim.write_pcap(&path).unwrap();
    assert!(n > 100, "{n}");
    let r = wire::pcap::CaptureReader::open(&path).unwrap();
    let (mut pfc, mut acks) = (0, 0);
    for rec in r {
        let rec = rec.unwrap();
        match wire::decode(&rec.data, wire::LinkType::Ethernet).unwrap() {
            wire::Decoded::MacControl { .. } => pfc += 1,
            wire::Decoded::Ib { checks, .. } => {
                assert!(checks.all_ok(), "ICRC/IP checksum of a captured frame");
                acks += 1;
            }
            other => panic!("unexpected frame {other:?}"),
        }
    }
    eprintln!("captured {n} frames on sw0/1: {pfc} PFC, {acks} RoCEv2");
    assert!(pfc >= 2 && acks > 100);
    if let Ok(out) = std::process::Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "fields", "-e", "frame.protocols"])
        .output()
    {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines().any(|l| l.contains("pfc") || l.contains("macc")),
            "tshark sees PFC: {}",
            &text[..text.len().min(300)]
        );
        assert!(text.lines().any(|l| l.contains("infiniband")), "tshark sees RoCEv2");
    }
    let _ = std::fs::remove_file(&path);
}

/// The fabric generators feed the RoCE world directly: a generated 100G
/// leaf–spine (8 leaves of 4 hosts, 4 spines) carries a shifted permutation
/// under DCQCN + PFC + ECN with no drop and a balanced ledger.
#[test]
fn generated_leaf_spine_runs_a_permutation_losslessly() {
    let p = fabric::LeafSpineParams {
        radix: 8,
        hosts_per_leaf: Some(4),
        spines: Some(4),
        leaves: Some(8),
        rate: LinkRate::eth(100).unwrap(),
        ..fabric::LeafSpineParams::default()
    };
    let f = fabric::leaf_spine(&p).unwrap();
    let hosts: Vec<NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
    assert_eq!(hosts.len(), 32);
    let flows: Vec<FlowSpec> = (0..32)
        .map(|i| flow(hosts[i], hosts[(i + 5) % 32], 1 << 20, 1, Time::ZERO, 10000))
        .collect();
    let mut sim = RoceSim::new(&f, RoceConfig::default(), &flows).unwrap();
    assert_eq!(sim.run(Time::ms(50)), RoceStatus::Done, "{}", sim.state_summary());
    assert_eq!(sim.ledger.total_dropped(), 0);
    assert!(sim.ledger_balances());
    assert_eq!(sim.fct.len(), 32);
}

/// A slow receiver (Guo et al. §4.4): the host drains its NIC at 40 Gb/s
/// while 100 Gb/s arrives; the NIC's receive buffer crosses XOFF and the NIC
/// pauses its switch port, so nothing is dropped and the flow runs at the
/// drain rate.
#[test]
fn slow_receiver_nic_pauses_its_switch() {
    let (f, sw, h) = star(2);
    let cfg = RoceConfig {
        nic: sim::roce::net::NicConfig {
            nic_rx: sim::roce::net::NicRxConfig {
                drain_bps: 40_000_000_000,
                ..Default::default()
            },
            cc: CongestionControl::None,
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            ecn: false,
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    let mut sim = RoceSim::new(&f, cfg, &[flow(h[0], h[1], 8 << 20, 1, Time::ZERO, 10000)]).unwrap();
    assert_eq!(sim.run(Time::ms(20)), RoceStatus::Done, "{}", sim.state_summary());
    let (xoff, xon) = sim.pause_sent(h[1], 1, 3);
    let done = sim.flow_done(0).unwrap();
    let gbps = (8u64 << 20) as f64 * 8.0 / done.as_secs_f64() / 1e9;
    eprintln!(
        "slow receiver: NIC sent {xoff} XOFF / {xon} XON; the switch port was paused {}; flow at {gbps:.1} Gb/s",
        sim.paused_time(sw, 2, 3)
    );
    assert!(xoff > 0 && xon > 0);
    assert_eq!(sim.ledger.total_dropped(), 0);
    assert!(gbps < 45.0 && gbps > 30.0, "{gbps}");
}

/// DCQCN paper §3.1 (c) and Meta §3.4 (c): under a 16:1 incast, PFC alone
/// pauses the senders' whole priority, so a victim flow from one of them to an
/// idle receiver crawls; with DCQCN the incast flows slow down per QP, the
/// pauses mostly stop and the victim gets its share of the sender's link.
#[test]
fn victim_flow_pfc_only_vs_pfc_with_dcqcn() {
    let run = |cc: CongestionControl| {
        let (f, _, h) = star(18);
        let mut flows = incast_flows(&h[..16], h[16], 64 << 20);
        flows.push(flow(h[0], h[17], 64 << 20, 1, Time::ZERO, 20000));
        let cfg = RoceConfig {
            nic: sim::roce::net::NicConfig {
                cc,
                ..Default::default()
            },
            switch: sim::roce::net::SwitchConfig {
                buffer_bytes: 4 << 20,
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
        sim.run(Time::ms(10));
        let victim = sim.flow_delivered(16) as f64 * 8.0 / 10e-3 / 1e9;
        let pauses = sim.pfc.iter().filter(|r| r.pause).count();
        (victim, pauses, sim.ledger.total_dropped())
    };
    let (v_pfc, p_pfc, d_pfc) = run(CongestionControl::None);
    let (v_dcqcn, p_dcqcn, d_dcqcn) = run(CongestionControl::Dcqcn(Profile::HpccNs3.params(100_000_000_000)));
    eprintln!(
        "16:1 incast + victim from sender 0: PFC only: victim {v_pfc:.1} Gb/s, {p_pfc} pauses; PFC + DCQCN: victim {v_dcqcn:.1} Gb/s, {p_dcqcn} pauses"
    );
    assert_eq!((d_pfc, d_dcqcn), (0, 0));
    assert!(v_dcqcn > 2.0 * v_pfc, "victim {v_pfc:.1} → {v_dcqcn:.1} Gb/s");
    assert!(p_dcqcn < p_pfc, "pauses {p_pfc} → {p_dcqcn}");
    // docs/VALIDATION.md §2b's table: victim throughput within 0.1 Gb/s (5.4) and
    // 0.5 Gb/s (53.7), a tenfold gain; pause transitions within 1%
    assert!(
        (v_pfc - 5.4).abs() <= 0.1 && (v_dcqcn - 53.7).abs() <= 0.5,
        "{v_pfc} {v_dcqcn}"
    );
    assert!(v_dcqcn / v_pfc >= 9.0, "the doc's tenfold: {:.1}×", v_dcqcn / v_pfc);
    let near = |got: usize, want: f64| (got as f64 / want - 1.0).abs() <= 0.01;
    assert!(near(p_pfc, 3112.0) && near(p_dcqcn, 545.0), "{p_pfc} {p_dcqcn}");
}

/// RoCEv1 in a routed leaf–spine: a flow between leaves is refused with the
/// reason; inside one leaf it runs (and its ECMP hash would see MACs only).
#[test]
fn rocev1_flows_are_refused_across_leaves_and_run_within_one() {
    let (f, _, _, h) = leaf_spine_2x2(2);
    let v1 = RoceConfig {
        routing: sim::roce::net::RoutingConfig {
            rocev1: Some(ethcp::L2Mode::RoutedAtLeaf),
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    let e = RoceSim::new(&f, v1.clone(), &[flow(h[0][0], h[1][0], 1 << 20, 1, Time::ZERO, 10000)]).unwrap_err();
    let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
    assert!(
        chain.contains("add flow 0") && chain.contains("cannot be routed"),
        "{chain}"
    );
    let mut sim = RoceSim::new(&f, v1, &[flow(h[0][0], h[0][1], 1 << 20, 1, Time::ZERO, 10000)]).unwrap();
    assert_eq!(sim.run(Time::ms(5)), RoceStatus::Done);
}

/// The verbs-style API a collective runner drives: QPs opened on demand,
/// messages posted at any time, deliveries taken in posting order per QP.
/// A 4-host all-to-all of 1 MiB messages across a leaf–spine.
#[test]
fn posted_messages_are_delivered_in_order() {
    let (f, _, _, h) = leaf_spine_2x2(2);
    let hosts: Vec<NodeId> = h.concat();
    let mut sim = RoceSim::new(&f, RoceConfig::default(), &[]).unwrap();
    let mut qps = std::collections::BTreeMap::new();
    let mut tag = 0;
    for &a in &hosts {
        for &b in &hosts {
            if a != b {
                let q = sim.open_qp(a, b).unwrap();
                qps.insert(q, (a, b));
                for _ in 0..2 {
                    sim.post(q, 1 << 20, tag).unwrap();
                    tag += 1;
                }
            }
        }
    }
    let mut got = Vec::new();
    loop {
        match sim.run(Time::ms(20)) {
            RoceStatus::Delivered => got.extend(sim.take_delivered()),
            st => {
                assert!(matches!(st, RoceStatus::Done), "{st:?}\n{}", sim.state_summary());
                break;
            }
        }
    }
    assert_eq!(got.len(), 24);
    // Per QP, the two messages arrive in posting order (tags 2k, 2k+1).
    let mut seen = std::collections::BTreeMap::new();
    for d in &got {
        let prev = seen.insert(d.tag / 2, d.tag);
        if let Some(p) = prev {
            assert!(p < d.tag);
        }
        assert!(d.done > d.posted);
    }
    // 6 MiB leave each host at 100G: the last delivery is at least 503 µs in.
    let last = got.iter().map(|d| d.done).max().unwrap();
    assert!(last >= Time::us(503), "{last}");
    assert!(sim.post(9999, 1, 0).is_err());
    assert!(sim.ledger_balances());
}

/// Splitting a connection over QPs gives ECMP distinct source ports and
/// conserves the bytes.
#[test]
fn split_qps_spreads_entropy_and_keeps_bytes() {
    let (_, _, _, h) = leaf_spine_2x2(2);
    let f = flow(h[0][0], h[1][0], 1_000_003, 2, Time::ZERO, 10000);
    let parts = f.split_qps(4, 0x200);
    assert_eq!(parts.iter().map(|p| p.size).sum::<u64>(), 1_000_003);
    let ports: std::collections::BTreeSet<u16> = parts.iter().map(|p| p.sport).collect();
    assert_eq!(ports.len(), 4);
    assert!(
        parts
            .iter()
            .all(|p| p.messages == 2 && p.src == f.src && p.sport >= 0xc000)
    );
}

/// A spine link fails mid-run: packets hashed onto it are lost until ECMP
/// converges (100 µs here), then the groups shrink to the surviving spine and
/// go-back-N recovers every flow; nothing else is dropped.
#[test]
fn link_failure_loses_packets_until_ecmp_converges() {
    let (f, leaves, _, h) = leaf_spine_2x2(4);
    let flows: Vec<FlowSpec> = (0..4)
        .map(|i| flow(h[0][i], h[1][i], 2 << 20, 1, Time::ZERO, 10000 + i as u16))
        .collect();
    let cfg = RoceConfig {
        nic: sim::roce::net::NicConfig {
            cc: CongestionControl::None,
            rto: Time::us(300),
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            ecn: false,
            ..Default::default()
        },
        ..RoceConfig::default()
    };
    let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
    let up = f.peer(leaves[0], 5).unwrap().1; // leaf0 → spine0
    sim.fail_link_at(up, Time::us(100));
    let st = sim.run(Time::ms(50));
    let down = sim.ledger.dropped[RoceDrop::ALL.iter().position(|r| *r == RoceDrop::LinkDown).unwrap()];
    let retx: u64 = (0..4).map(|k| sim.flow_counters(k).retransmitted).sum();
    eprintln!(
        "link failure at 100 µs, 100 µs convergence: {down} packets lost on the dead link, {retx} retransmitted, all done by {}",
        sim.now()
    );
    assert_eq!(st, RoceStatus::Done);
    assert!(down > 0 && retx > 0);
    assert_eq!(sim.ledger.total_dropped(), down);
    assert!(sim.ledger_balances());
}

/// Guo et al. SIGCOMM'16 §4.3: one faulty NIC's pauses spread to the
/// switches and stall flows that never touch it; the PFC watchdog (drop)
/// on the ToR port contains the storm and the victims finish.
#[test]
fn faulty_nic_storm_spreads_and_watchdog_contains_it() {
    let run = |wd: Option<WdConfig>, nic_guard: Option<Time>| {
        let (f, _, _, h) = leaf_spine_2x2(3);
        // Flows into the faulty host h1_0 fill the fabric; the victim flow
        // h0_2 → h1_2 shares the spines and leaf1 with them.
        let flows = vec![
            flow(h[0][0], h[1][0], 1 << 30, 1, Time::ZERO, 10000),
            flow(h[0][1], h[1][0], 1 << 30, 1, Time::ZERO, 10001),
            flow(h[0][2], h[1][2], 2 << 20, 1, Time::us(200), 10002),
        ];
        let cfg = RoceConfig {
            nic: sim::roce::net::NicConfig {
                nic_stall_prevention: nic_guard,
                cc: CongestionControl::None,
                ..Default::default()
            },
            switch: sim::roce::net::SwitchConfig {
                watchdog: wd,
                ecn: false,
                buffer_bytes: 4 << 20,
                ..Default::default()
            },
            pfc: sim::roce::net::PfcConfig {
                pause_mode: PauseMode::Timed,
                pause_quanta: 0xffff,
                ..Default::default()
            },
            faults: sim::roce::net::FaultConfig {
                faulty_nics: vec![h[1][0]],
                ..Default::default()
            },
            observe: sim::roce::net::ObserveConfig {
                deadlock_check: Time::ZERO,
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
        sim.run(Time::ms(30));
        sim
    };
    let storm = run(None, None);
    // The pause reached the spines and the far leaf's host links.
    let spine_paused = storm
        .pfc
        .iter()
        .filter(|r| r.pause && r.node_type == 1)
        .map(|r| r.node)
        .collect::<std::collections::BTreeSet<_>>();
    let wd = WdConfig {
        poll: Time::ms(1),
        detection: Time::ms(2),
        restoration: Time::ms(4),
        action: WdAction::Drop,
    };
    let contained = run(Some(wd), None);
    // Action `forward`: the stormed queues ignore pauses (lossy for the
    // storm's duration); the victim finishes and packets that reach the
    // faulty NIC are dropped there.
    let forward = run(
        Some(WdConfig {
            action: WdAction::Forward,
            ..wd
        }),
        None,
    );
    assert!(forward.flow_done(2).is_some(), "forward: victim done");
    assert_eq!(forward.ledger.lossless_faults(), 0);
    assert!(forward.ledger.dropped[RoceDrop::ALL.iter().position(|r| *r == RoceDrop::FaultyNic).unwrap()] > 0);
    // The NIC's own guard (mlx5 PFC stall prevention, scaled to 2 ms) ends the
    // storm at its source instead: the NIC stops pausing and drops what comes.
    let guarded = run(None, Some(Time::ms(2)));
    assert!(
        guarded.flow_done(2).is_some(),
        "NIC stall prevention lets the victim finish"
    );
    assert!(guarded.ledger.dropped[RoceDrop::ALL.iter().position(|r| *r == RoceDrop::FaultyNic).unwrap()] > 0);
    assert_eq!(guarded.ledger.lossless_faults(), 0);
    eprintln!(
        "faulty NIC storm: switches paused {spine_paused:?}; victim done without watchdog {:?}, with watchdog {:?}, with NIC stall prevention {:?}; watchdog log {:?}; drops {:?}",
        storm.flow_done(2),
        contained.flow_done(2),
        guarded.flow_done(2),
        contained.wd_log,
        contained.ledger.dropped
    );
    assert!(spine_paused.len() >= 3, "pauses spread to {spine_paused:?}");
    assert_eq!(storm.flow_done(2), None, "the victim flow is stuck in the storm");
    assert!(contained.flow_done(2).is_some(), "the watchdog lets the victim finish");
    assert!(contained.wd_log.iter().any(|w| w.1 == "leaf1" && w.2 == 1));
    assert_eq!(contained.ledger.lossless_faults(), 0);
}
