//! The switch graph every engine routes on, built once per sweep.
//!
//! ```text
//!   switches: 0..S (dense), sw_node[s] = NodeId, node_sw[node] = s or NONE
//!   adj_off[s]..adj_off[s+1] → adj[k] = (local port, peer switch, peer port)  (ISLs only)
//!   dests: one per LID-owning port, grouped by the switch they hang off:
//!          (attached switch, its port towards the dest (0 = the switch itself), base LID, LID count)
//! ```
//! Parallel cables stay distinct entries. Cost: O(S + ISL ports + end ports) memory.

use fabric::{Fabric, FlatFabric, Guid, NodeId, NodeKind};

use crate::tables::RoutingTables;

/// "Not a switch" in [`SwitchGraph::node_sw`].
pub const NONE: u32 = u32::MAX;

/// One switch-to-switch port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IslPort {
    pub port: u8,
    pub peer: u32,
    pub peer_port: u8,
}

/// A LID-owning port as seen from the switch it is cabled to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dest {
    /// Switch index the destination hangs off (or is).
    pub sw: u32,
    /// Port of that switch leading to it (0 when the destination is the switch).
    pub port: u8,
    /// Base LID and number of LIDs (2^LMC for end ports, 1 for switches).
    pub base: u16,
    pub count: u16,
    /// The owning node and port.
    pub node: NodeId,
    pub node_port: u8,
    /// True for CA/router ports.
    pub is_end: bool,
    /// Port GUID and node GUID of the owner.
    pub port_guid: Guid,
    pub node_guid: Guid,
}

/// Frozen switch-level view of a fabric plus its LIDs.
#[derive(Clone, Debug)]
pub struct SwitchGraph {
    pub sw_node: Vec<NodeId>,
    pub node_sw: Vec<u32>,
    pub guid: Vec<Guid>,
    pub adj_off: Vec<u32>,
    pub adj: Vec<IslPort>,
    /// Port slots per switch (max port number + 1).
    pub slots: Vec<u16>,
    /// Offset of switch s's ports in per-port arrays: `port_base[s] + port`.
    pub port_base: Vec<u32>,
    /// Destinations sorted by (sw, port, base).
    pub dests: Vec<Dest>,
    /// `dest_off[s]..dest_off[s+1]` indexes `dests` hanging off switch s.
    pub dest_off: Vec<u32>,
    /// End ports (CA/router) cabled to each switch: sources of traffic.
    pub ends_at: Vec<u32>,
    /// Highest LID + 1.
    pub lid_space: usize,
    /// End ports cabled to nothing or to another end node (no switch to route).
    pub unattached: Vec<(NodeId, u8)>,
}

impl SwitchGraph {
    /// Build from a fabric, its frozen view and assigned LIDs.
    pub fn new(f: &Fabric, flat: &FlatFabric, t: &RoutingTables) -> SwitchGraph {
        let n = flat.num_nodes();
        let mut node_sw = vec![NONE; n];
        let mut sw_node = Vec::new();
        for (i, slot) in node_sw.iter_mut().enumerate() {
            if flat.kind(NodeId(i as u32)) == NodeKind::Switch {
                *slot = sw_node.len() as u32;
                sw_node.push(NodeId(i as u32));
            }
        }
        let s_count = sw_node.len();
        let mut adj_off = Vec::with_capacity(s_count + 1);
        let mut adj = Vec::new();
        let mut slots = Vec::with_capacity(s_count);
        let mut port_base = Vec::with_capacity(s_count + 1);
        let mut pb = 0u32;
        adj_off.push(0);
        for &node in &sw_node {
            port_base.push(pb);
            let sl = f.nodes[node.idx()].ports.len() as u16;
            slots.push(sl);
            pb += sl as u32;
            for a in flat.neighbors(node) {
                let ps = node_sw[a.peer.idx()];
                if ps != NONE {
                    adj.push(IslPort {
                        port: a.port,
                        peer: ps,
                        peer_port: a.peer_port,
                    });
                }
            }
            adj_off.push(adj.len() as u32);
        }
        port_base.push(pb);
        let mut dests = Vec::new();
        let mut unattached = Vec::new();
        let mut ends_at = vec![0u32; s_count];
        for (i, lids) in t.base_lid.iter().enumerate().take(n) {
            let node = NodeId(i as u32);
            let is_sw = node_sw[i] != NONE;
            for (p, &l) in lids.iter().enumerate() {
                if l.0 == 0 {
                    continue;
                }
                if is_sw {
                    dests.push(Dest {
                        sw: node_sw[i],
                        port: 0,
                        base: l.0,
                        count: 1,
                        node,
                        node_port: p as u8,
                        is_end: false,
                        port_guid: f.nodes[i].node_guid,
                        node_guid: f.nodes[i].node_guid,
                    });
                    continue;
                }
                let peer = flat.neighbors(node).iter().find(|a| a.port == p as u8).copied();
                match peer {
                    Some(a) if node_sw[a.peer.idx()] != NONE => {
                        let s = node_sw[a.peer.idx()];
                        ends_at[s as usize] += 1;
                        dests.push(Dest {
                            sw: s,
                            port: a.peer_port,
                            base: l.0,
                            count: 1 << t.lmc,
                            node,
                            node_port: p as u8,
                            is_end: true,
                            port_guid: f.nodes[i].port_guid(p as u8),
                            node_guid: f.nodes[i].node_guid,
                        });
                    }
                    _ => unattached.push((node, p as u8)),
                }
            }
        }
        dests.sort_by_key(|d| (d.sw, d.port, d.base));
        let mut dest_off = vec![0u32; s_count + 1];
        for d in &dests {
            dest_off[d.sw as usize + 1] += 1;
        }
        for s in 0..s_count {
            dest_off[s + 1] += dest_off[s];
        }
        let lid_space = t
            .lid_owner
            .len()
            .max(dests.iter().map(|d| (d.base + d.count) as usize).max().unwrap_or(1));
        let guid = sw_node.iter().map(|n| f.nodes[n.idx()].node_guid).collect();
        SwitchGraph {
            sw_node,
            node_sw,
            guid,
            adj_off,
            adj,
            slots,
            port_base,
            dests,
            dest_off,
            ends_at,
            lid_space,
            unattached,
        }
    }

    /// Number of switches.
    #[inline]
    pub fn len(&self) -> usize {
        self.sw_node.len()
    }

    /// True when there are no switches.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.sw_node.is_empty()
    }

    /// ISL ports of switch s.
    #[inline]
    pub fn isls(&self, s: u32) -> &[IslPort] {
        &self.adj[self.adj_off[s as usize] as usize..self.adj_off[s as usize + 1] as usize]
    }

    /// Destinations hanging off switch s.
    #[inline]
    pub fn dests_at(&self, s: u32) -> &[Dest] {
        &self.dests[self.dest_off[s as usize] as usize..self.dest_off[s as usize + 1] as usize]
    }

    /// Dense index of (switch s, port p) in per-port arrays.
    #[inline]
    pub fn pidx(&self, s: u32, p: u8) -> usize {
        (self.port_base[s as usize] + p as u32) as usize
    }

    /// Total port slots over all switches.
    #[inline]
    pub fn port_slots(&self) -> usize {
        *self.port_base.last().unwrap_or(&0) as usize
    }

    /// The port GUID of an end destination.
    #[inline]
    pub fn end_guid(&self, d: &Dest) -> Option<Guid> {
        d.is_end.then_some(d.port_guid)
    }

    /// The switch an end port (by port or node GUID) is cabled to.
    pub fn end_guid_switch(&self, guid: Guid) -> Option<u32> {
        self.dests
            .iter()
            .find(|d| d.is_end && (d.port_guid == guid || d.node_guid == guid))
            .map(|d| d.sw)
    }

    /// Switches that have end ports cabled to them.
    pub fn leaves(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len() as u32).filter(|&s| self.ends_at[s as usize] > 0)
    }

    /// Breadth-first hop counts over ISLs from the switches in `from` (reusing `dist`
    /// and `queue`); `u32::MAX` = unreachable. `queue` ends in BFS order.
    pub fn bfs(&self, from: &[u32], dist: &mut Vec<u32>, queue: &mut Vec<u32>) {
        dist.clear();
        dist.resize(self.len(), u32::MAX);
        queue.clear();
        for &s in from {
            if dist[s as usize] == u32::MAX {
                dist[s as usize] = 0;
                queue.push(s);
            }
        }
        let mut h = 0;
        while h < queue.len() {
            let s = queue[h];
            h += 1;
            let d = dist[s as usize] + 1;
            for a in self.isls(s) {
                if dist[a.peer as usize] == u32::MAX {
                    dist[a.peer as usize] = d;
                    queue.push(a.peer);
                }
            }
        }
    }
}
