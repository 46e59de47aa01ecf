//! Small fabrics and flows for the RoCE world's tests and the ns-3 layer's
//! reproductions: a star, a 2 × 2 leaf–spine, a ring of four switches with pinned
//! routes (a failure-time bounce), and flow builders. Built with the `testutil`
//! feature (and in this crate's tests).

use fabric::{Fabric, LinkRate, NodeId, NodeSpec};
use wire::Guid;

use crate::engine::Time;
use crate::roce::net::FlowSpec;

const G: u16 = 100;

/// `n` hosts on one switch, 100G, 1 µs links (as HPCC's fat.txt host links).
pub fn star(n: usize) -> (Fabric, NodeId, Vec<NodeId>) {
    let mut f = Fabric::new();
    let r = LinkRate::eth(G).expect("100G");
    let sw = f
        .add_node(NodeSpec::switch("sw0", Guid(0x1000), n as u8))
        .expect("switch");
    let hosts: Vec<NodeId> = (0..n)
        .map(|i| {
            let h = f
                .add_node(NodeSpec::ca(format!("h{i}"), Guid(0x10_0000 + 16 * i as u64), 1))
                .expect("host");
            f.connect_with_delay(sw, 1 + i as u8, h, 1, r, 200.0, 1_000_000)
                .expect("cable");
            h
        })
        .collect();
    (f, sw, hosts)
}

/// 2 leaves × 2 spines, `per_leaf` hosts per leaf, 100G, 1 µs links.
pub fn leaf_spine_2x2(per_leaf: usize) -> (Fabric, Vec<NodeId>, Vec<NodeId>, Vec<Vec<NodeId>>) {
    let mut f = Fabric::new();
    let r = LinkRate::eth(G).expect("100G");
    let leaves: Vec<NodeId> = (0..2)
        .map(|i| {
            f.add_node(NodeSpec::switch(
                format!("leaf{i}"),
                Guid(0x1000 + i),
                (per_leaf + 2) as u8,
            ))
            .expect("leaf")
        })
        .collect();
    let spines: Vec<NodeId> = (0..2)
        .map(|i| {
            f.add_node(NodeSpec::switch(format!("spine{i}"), Guid(0x2000 + i), 2))
                .expect("spine")
        })
        .collect();
    let mut hosts = vec![Vec::new(); 2];
    for (li, &l) in leaves.iter().enumerate() {
        for k in 0..per_leaf {
            let h = f
                .add_node(NodeSpec::ca(
                    format!("h{li}_{k}"),
                    Guid(0x10_0000 + 256 * li as u64 + 16 * k as u64),
                    1,
                ))
                .expect("host");
            f.connect_with_delay(l, 1 + k as u8, h, 1, r, 200.0, 1_000_000)
                .expect("cable");
            hosts[li].push(h);
        }
        for (si, &s) in spines.iter().enumerate() {
            f.connect_with_delay(l, (per_leaf + 1 + si) as u8, s, 1 + li as u8, r, 200.0, 1_000_000)
                .expect("cable");
        }
    }
    (f, leaves, spines, hosts)
}

/// A pinned route: (switch, destination host, egress port).
pub type Route = (NodeId, NodeId, u8);

/// The four switches of a 2 × 2 leaf–spine cabled as it is (leaf0–spine0–leaf1–
/// spine1–leaf0 is a 4-cycle), one host on each switch, and every 2-hop route
/// pinned clockwise, the way a failure-time bounce pins up-down-up paths.
pub fn ring4() -> (Fabric, Vec<NodeId>, Vec<NodeId>, Vec<Route>) {
    let mut f = Fabric::new();
    let r = LinkRate::eth(G).expect("100G");
    let names = ["leaf0", "spine0", "leaf1", "spine1"];
    let sw: Vec<NodeId> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            f.add_node(NodeSpec::switch(*n, Guid(0x3000 + i as u64), 3))
                .expect("switch")
        })
        .collect();
    let hosts: Vec<NodeId> = (0..4)
        .map(|i| {
            let h = f
                .add_node(NodeSpec::ca(format!("h{i}"), Guid(0x30_0000 + 16 * i as u64), 1))
                .expect("host");
            f.connect_with_delay(sw[i], 1, h, 1, r, 200.0, 1_000_000)
                .expect("cable");
            h
        })
        .collect();
    // Port 2 = clockwise neighbour, port 3 = counter-clockwise.
    for i in 0..4 {
        f.connect_with_delay(sw[i], 2, sw[(i + 1) % 4], 3, r, 200.0, 1_000_000)
            .expect("cable");
    }
    let mut routes = Vec::new();
    for i in 0..4 {
        routes.push((sw[i], hosts[(i + 2) % 4], 2));
    }
    (f, sw, hosts, routes)
}

/// Hu et al.'s bounce-route ring (see [`ring4`]) with `n` of its four hosts each
/// sending 4 MiB to the host two switches clockwise, PFC on, no congestion
/// control, 1 MiB buffers and a deadlock check every 200 µs: four flows close
/// the cycle and deadlock.
pub fn ring4_bounce(n: usize) -> (Fabric, crate::roce::net::RoceConfig, Vec<FlowSpec>) {
    let (f, _, h, routes) = ring4();
    let flows: Vec<FlowSpec> = (0..n)
        .map(|i| flow(h[i], h[(i + 2) % 4], 4 << 20, 1, Time::ZERO, 10000 + i as u16))
        .collect();
    let cfg = crate::roce::net::RoceConfig {
        nic: crate::roce::net::NicConfig {
            cc: crate::roce::net::CongestionControl::None,
            ..Default::default()
        },
        switch: crate::roce::net::SwitchConfig {
            ecn: false,
            buffer_bytes: 1 << 20,
            ..Default::default()
        },
        routing: crate::roce::net::RoutingConfig {
            route_overrides: routes,
            ..Default::default()
        },
        observe: crate::roce::net::ObserveConfig {
            deadlock_check: Time::us(200),
            ..Default::default()
        },
        ..crate::roce::net::RoceConfig::default()
    };
    (f, cfg, flows)
}

/// A one-message-or-more flow with HPCC's dport 100.
pub fn flow(src: NodeId, dst: NodeId, size: u64, messages: u32, start: Time, sport: u16) -> FlowSpec {
    FlowSpec {
        src,
        dst,
        size,
        messages,
        start,
        sport,
        dport: 100,
    }
}

/// An incast: one `size`-byte message from each of `senders` to `to`, all at
/// time zero, source ports 10000 + i.
pub fn incast_flows(senders: &[NodeId], to: NodeId, size: u64) -> Vec<FlowSpec> {
    senders
        .iter()
        .enumerate()
        .map(|(i, &src)| flow(src, to, size, 1, Time::ZERO, 10000 + i as u16))
        .collect()
}
