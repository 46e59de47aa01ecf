//! Two jobs sharing uplinks interfere alike at flow and packet level.
use super::*;
use crate::runner::{IbNet, NetStep};
use fabric::generate::{SuperPodParams, superpod};

/// Run `msgs` (tagged by job) on `net` at once; each job's completion, ps.
fn per_job(net: &mut dyn Network, msgs: &[(NodeId, NodeId, u64, usize)], jobs: usize) -> Vec<u64> {
    for (k, &(a, b, bytes, _)) in msgs.iter().enumerate() {
        net.post(a, b, Class::Bulk, bytes, k as u64).unwrap();
    }
    let mut done = vec![0u64; jobs];
    let mut left = msgs.len();
    while left > 0 {
        match net.advance(u64::MAX).unwrap() {
            NetStep::Delivered(ds) => {
                for d in ds {
                    let j = msgs[d.tag as usize].3;
                    done[j] = done[j].max(d.done_ps);
                    left -= 1;
                }
            }
            NetStep::Reached => {}
            other => panic!("{other:?}"),
        }
    }
    net.counters().unwrap();
    done
}

/// Two jobs' rings on rail 0 of two scalable units whose leaves have one
/// uplink each: each job alone, then both at once, at flow and packet level.
/// Together they share the uplinks and each takes about twice as long; the
/// flow engine's completion of each job is within 5% of the packet level's.
#[test]
fn two_jobs_sharing_uplinks_interfere_alike_at_flow_and_packet_level() {
    let f = superpod(&SuperPodParams {
        sus: 2,
        servers_per_su: 4,
        rails: 2,
        uplinks: Some(1),
        ..SuperPodParams::default()
    })
    .unwrap();
    let o = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
        validate: false,
        ..Default::default()
    };
    let (t, _) = sm::run::run(&f, &o).unwrap();
    let nics = NicMap::from_fabric(&f).unwrap();
    // job 0 on servers 0, 1 | 4, 5; job 1 on 2, 3 | 6, 7: each ring crosses
    // between the units twice, both through rail 0's single leaf uplinks
    let ring = |servers: [usize; 4], job: usize| (0..4).map(move |i| (servers[i], servers[(i + 1) % 4], job));
    let all: Vec<(NodeId, NodeId, u64, usize)> = ring([0, 1, 4, 5], 0)
        .chain(ring([2, 3, 6, 7], 1))
        .map(|(a, b, j)| (nics.nic[a][0], nics.nic[b][0], 16u64 << 20, j))
        .collect();
    let run = |msgs: &[(NodeId, NodeId, u64, usize)], packet: bool| -> Vec<u64> {
        if packet {
            let mut s = sim::Sim::new(&f, &t, sim::IbConfig::default(), sim::EngineConfig::default()).unwrap();
            per_job(&mut IbNet::new(&mut s), msgs, 2)
        } else {
            let mut sim = FlowSim::new();
            let ports = Ports::build(&f, &mut sim);
            let routing = FlowRouting::Ib(t.clone());
            let mut net = FlowNet {
                sim,
                ports,
                fabric: &f,
                routing: &routing,
                wire: ib_wire(&sim::IbConfig::default()),
                conns: BTreeMap::new(),
            };
            per_job(&mut net, msgs, 2)
        }
    };
    let alone: Vec<(NodeId, NodeId, u64, usize)> = all.iter().copied().filter(|m| m.3 == 0).collect();
    for packet in [false, true] {
        let a = run(&alone, packet)[0];
        let both = run(&all, packet);
        for &b in &both {
            let slow = b as f64 / a as f64;
            assert!(
                slow > 1.8 && slow < 2.2,
                "packet {packet}: alone {a} ps, together {b} ps"
            );
        }
    }
    let (fl, pk) = (run(&all, false), run(&all, true));
    for j in 0..2 {
        let r = fl[j] as f64 / pk[j] as f64;
        assert!(
            (r - 1.0).abs() < 0.05,
            "job {j}: flow {} ps, packet {} ps",
            fl[j],
            pk[j]
        );
    }
}

/// ECMP collisions at both levels: on the Ethernet build of two scalable
/// units (4 servers each, rail 0; RoCEv2 with PFC), a QP from unit 0 to unit 1 and a second
/// QP whose hash puts it on the same leaf uplink take twice as long as
/// alone, and two QPs the hash keeps apart do not slow each other, at flow
/// and at packet level alike (QP numbers, and so paths, the same in both).
#[test]
fn ecmp_collisions_are_the_same_collisions_at_flow_and_packet_level() {
    use crate::runner::RoceNet;
    let c = crate::scenario::Cluster {
        scalable_units: Some(2),
        ..crate::scenario::Cluster::rail(8, 2, 400, 64)
    };
    let f = crate::cluster::build(&c, crate::tco::Tech::Ethernet).unwrap();
    let nics = NicMap::from_fabric(&f).unwrap();
    // PFC alone (the variant the flow engine keeps; DCQCN's reaction to the
    // shared queue is handed to the packet level)
    let mut cfg = sim::roce::net::RoceConfig::default();
    cfg.nic.mtu = 4096;
    cfg.nic.cc = sim::roce::net::CongestionControl::None;
    cfg.switch.ecn = false;
    let routing = FlowRouting::Eth {
        table: ethcp::EcmpTable::build(&f, cfg.routing.ecmp_convergence.as_ps()),
        hash: cfg.routing.hash,
        rocev1: false,
    };
    // the first switch-to-switch hop of QP k from server a to server b (rail 0)
    let uplink = |a: usize, b: usize, k: u32| -> fabric::Endpoint {
        let (data, _) = routing.paths(&f, nics.nic[a][0], nics.nic[b][0], k).unwrap();
        *data
            .iter()
            .find(|e| {
                f.node(e.node).kind == fabric::NodeKind::Switch && {
                    let p = &f.node(e.node).ports[e.port as usize];
                    p.link
                        .is_some_and(|l| f.node(f.link(l).other(**e).node).kind == fabric::NodeKind::Switch)
                }
            })
            .expect("a cross-unit path leaves its leaf for a spine")
    };
    // QP 0: server 0 → server 4; QP 1 from server 1 to a server of unit 1
    // whose path does (or does not) share QP 0's leaf uplink
    let first = uplink(0, 4, 0);
    let pick = |collide: bool| (5..8).find(|&b| (uplink(1, b, 1) == first) == collide);
    let (Some(hit), Some(miss)) = (pick(true), pick(false)) else {
        panic!("no colliding and no separate QP 1 among servers 5-7; the test needs both")
    };
    let bytes = 16u64 << 20;
    let msgs = |b: usize| -> Vec<(NodeId, NodeId, u64, usize)> {
        vec![
            (nics.nic[0][0], nics.nic[4][0], bytes, 0),
            (nics.nic[1][0], nics.nic[b][0], bytes, 1),
        ]
    };
    let run = |msgs: &[(NodeId, NodeId, u64, usize)], packet: bool| -> Vec<u64> {
        if packet {
            let mut rs = sim::roce::net::RoceSim::new(&f, cfg.clone(), &[]).unwrap();
            let mut net = RoceNet::new(&mut rs, &f);
            per_job(&mut net, msgs, 2)
        } else {
            let mut sim = FlowSim::new();
            let ports = Ports::build(&f, &mut sim);
            let mut net = FlowNet {
                sim,
                ports,
                fabric: &f,
                routing: &routing,
                wire: roce_wire(&cfg),
                conns: BTreeMap::new(),
            };
            per_job(&mut net, msgs, 2)
        }
    };
    for packet in [false, true] {
        let alone = run(&msgs(hit)[..1], packet)[0];
        let shared = run(&msgs(hit), packet);
        let apart = run(&msgs(miss), packet);
        for j in 0..2 {
            let (s, a) = (shared[j] as f64 / alone as f64, apart[j] as f64 / alone as f64);
            assert!(s > 1.8 && s < 2.2, "packet {packet}: colliding QP {j} {s:.3}× alone");
            assert!(a > 0.95 && a < 1.05, "packet {packet}: separate QP {j} {a:.3}× alone");
        }
    }
    for b in [hit, miss] {
        let (fl, pk) = (run(&msgs(b), false), run(&msgs(b), true));
        for j in 0..2 {
            let r = fl[j] as f64 / pk[j] as f64;
            assert!(
                (r - 1.0).abs() < 0.05,
                "server {b}, QP {j}: flow {} ps, packet {} ps",
                fl[j],
                pk[j]
            );
        }
    }
}
