//! Small fabrics and plain BFS routes for tests, examples and benchmarks.
//!
//! The routes here are not a routing engine: they are a breadth-first shortest-path
//! oracle (LIDs from the SM's own `sm::lids::assign`), so the simulator can be
//! tested on its own. Real runs take their tables from the SM's engines.

use std::collections::VecDeque;

use fabric::{Fabric, Guid, LinkRate, NodeId, NodeKind, NodeSpec};
use sm::{Lft, NO_ROUTE, RoutingTables};

/// How a switch chooses among equal-cost output ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tie {
    /// The lowest port number (all traffic piles onto one path; on a ring this is
    /// the textbook credit loop).
    LowestPort,
    /// Spread destinations over the equal-cost ports by destination LID (what
    /// OpenSM's minhop does to balance).
    SpreadByLid,
}

/// LIDs by the SM's assignment, LFTs by BFS shortest paths through switches.
pub fn bfs_routes(f: &Fabric, tie: Tie) -> RoutingTables {
    let sm_port = sm::lids::default_sm_port(f).expect("fabric has a node");
    let (mut t, _) = sm::lids::assign(f, sm_port, 0, None).expect("LID assignment");
    let flat = f.freeze();
    let n = f.nodes.len();
    let max_lid = t.lid_owner.len();
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind == NodeKind::Switch {
            t.lft[i] = Lft {
                ports: vec![NO_ROUTE; max_lid],
            };
        }
    }
    let mut dist = vec![u32::MAX; n];
    let mut queue = VecDeque::new();
    for lid in 1..max_lid {
        let Some((dn, dp)) = t.lid_owner[lid] else { continue };
        dist.iter_mut().for_each(|d| *d = u32::MAX);
        queue.clear();
        dist[dn.idx()] = 0;
        queue.push_back(dn);
        // BFS from the destination; only switches relay.
        while let Some(u) = queue.pop_front() {
            if u != dn && flat.kind(u) != NodeKind::Switch {
                continue;
            }
            for a in flat.neighbors(u) {
                if u == dn && f.nodes[dn.idx()].kind != NodeKind::Switch && a.port != dp {
                    continue;
                }
                if dist[a.peer.idx()] == u32::MAX {
                    dist[a.peer.idx()] = dist[u.idx()] + 1;
                    queue.push_back(a.peer);
                }
            }
        }
        for s in 0..n {
            if f.nodes[s].kind != NodeKind::Switch {
                continue;
            }
            if NodeId(s as u32) == dn {
                t.lft[s].ports[lid] = 0;
                continue;
            }
            let d = dist[s];
            if d == u32::MAX {
                continue;
            }
            let cands: Vec<u8> = flat
                .neighbors(NodeId(s as u32))
                .iter()
                .filter(|a| dist[a.peer.idx()] == d - 1 && (flat.kind(a.peer) == NodeKind::Switch || a.peer == dn))
                .map(|a| a.port)
                .collect();
            if cands.is_empty() {
                continue;
            }
            t.lft[s].ports[lid] = match tie {
                Tie::LowestPort => cands[0],
                Tie::SpreadByLid => cands[lid % cands.len()],
            };
        }
    }
    t
}

/// `hosts` single-port HCAs on one switch, cables of `cable_m` metres.
pub fn one_switch(hosts: u8, rate: LinkRate, cable_m: f64) -> Fabric {
    let mut f = Fabric::new();
    let s = f
        .add_node(NodeSpec::switch("sw0", Guid(0x0002_c900_0000_1000), hosts.max(2)))
        .expect("switch");
    for h in 0..hosts {
        let c = f
            .add_node(NodeSpec::ca(
                format!("h{h}"),
                Guid(0x0002_c900_0010_0000 + 16 * u64::from(h)),
                1,
            ))
            .expect("ca");
        f.connect(s, h + 1, c, 1, rate, cable_m).expect("cable");
    }
    f
}

/// A ring of `switches` switches, each with `hosts` HCAs on ports 1..=hosts;
/// port hosts+1 goes clockwise to the next switch's port hosts+2.
pub fn ring(switches: u8, hosts: u8, rate: LinkRate, cable_m: f64) -> Fabric {
    let mut f = Fabric::new();
    let sw: Vec<NodeId> = (0..switches)
        .map(|i| {
            f.add_node(NodeSpec::switch(
                format!("sw{i}"),
                Guid(0x0002_c900_0000_1000 + u64::from(i)),
                hosts + 2,
            ))
            .expect("switch")
        })
        .collect();
    for i in 0..switches {
        for h in 0..hosts {
            let id = u64::from(i) * 64 + u64::from(h);
            let c = f
                .add_node(NodeSpec::ca(
                    format!("h{i}_{h}"),
                    Guid(0x0002_c900_0010_0000 + 16 * id),
                    1,
                ))
                .expect("ca");
            f.connect(sw[i as usize], h + 1, c, 1, rate, cable_m).expect("cable");
        }
    }
    for i in 0..switches {
        let j = (i + 1) % switches;
        f.connect(sw[i as usize], hosts + 1, sw[j as usize], hosts + 2, rate, cable_m)
            .expect("cable");
    }
    f
}

/// The CA node ids of a fabric, in node order.
pub fn cas(f: &Fabric) -> Vec<NodeId> {
    f.nodes_of(NodeKind::Ca).collect()
}
