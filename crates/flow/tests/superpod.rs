//! The flow engine on a routed SuperPOD: a ring on every rail is bound by the NICs
//! on a non-blocking fabric, and its time is the closed form.

use fabric::generate::{SuperPodParams, superpod};
use fabric::{NodeId, NodeKind};
use flow::path::{Ports, WireModel, ib_route, open};
use flow::{FlowSim, Step};

#[test]
fn rings_on_every_rail_of_a_routed_superpod_run_at_the_nic_bound() {
    let f = superpod(&SuperPodParams {
        sus: 2,
        ..SuperPodParams::default()
    })
    .unwrap();
    let opts = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree],
        validate: false,
        ..Default::default()
    };
    let (t, _) = sm::run::run(&f, &opts).unwrap();
    let mut nics: Vec<Vec<NodeId>> = vec![Vec::new(); f.hosts.len()];
    for id in f.nodes_of(NodeKind::Ca) {
        nics[f.node(id).host.unwrap().0 as usize].push(id);
    }
    let wire = WireModel {
        mtu: 4096,
        overhead: 26,
        ack_bytes: 30,
        ack_every: 16,
        switch_latency_ps: 130_000,
        store_and_forward: false,
        endpoint_ps: 0,
        nic_payload_ppm: 0,
    };
    let mut sim = FlowSim::new();
    let ports = Ports::build(&f, &mut sim);
    let bytes = 1u64 << 30;
    let servers = nics.len();
    // server s sends to server s + 5 on every rail: a third of the pairs cross SUs
    for s in 0..servers {
        for (&a, &z) in nics[s].iter().zip(&nics[(s + 5) % servers]) {
            let data = ib_route(&f, &t, a, z).unwrap();
            let ack = ib_route(&f, &t, z, a).unwrap();
            let c = open(&mut sim, &f, &ports, &wire, &data, &ack).unwrap();
            sim.post(c, bytes, 0).unwrap();
        }
    }
    let mut last = 0;
    loop {
        match sim.advance(u64::MAX).unwrap() {
            Step::Delivered(d) => last = last.max(d.iter().map(|x| x.done_ps).max().unwrap()),
            Step::Idle => break,
            Step::Reached => unreachable!(),
        }
    }
    sim.check().unwrap();
    // each NIC sends its flow and the ACKs of the flow it receives
    let wire_per_byte = 4122.0 / 4096.0 + 30.0 / (16.0 * 4096.0);
    let want_ps = bytes as f64 * wire_per_byte / (400e9 / 8.0) * 1e12;
    let r = last as f64 / want_ps;
    assert!(
        (r - 1.0).abs() < 0.005,
        "network time {last} ps, NIC bound {want_ps:.0} ps"
    );
    assert_eq!(sim.counters().delivered, (servers * 8) as u64);
}
