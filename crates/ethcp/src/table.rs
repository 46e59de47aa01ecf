//! ECMP forwarding tables: for every switch and destination host, the group of
//! ports on shortest paths, and how the groups follow failed and repaired links.
//!
//! The groups come from a BFS over switches from each destination, as HPCC ns-3's
//! `switch-node.cc` keeps all equal-cost next hops. Groups are interned: a
//! (switch, destination) cell holds a `u32` group id. A failed link shrinks the
//! groups after a convergence delay; until then packets hashed onto it are lost
//! (the simulator drops them as "link down"). Time is plain `u64` picoseconds, the
//! unit of the simulator's clock, so this crate needs none of the simulator.
//!
//! ```text
//!   cell[switch * hosts + host] ──► group id ──► groups[id] = [port, port, …]
//! ```
//!
//! Cost: one `u32` per (switch, host) pair plus the distinct groups; a lookup is two
//! index reads and a modulo, and allocates nothing. A recomputation is one BFS per
//! host over the frozen fabric.

use std::collections::BTreeMap;

use fabric::{Fabric, FlatFabric, LinkId, NodeId, NodeKind};

/// ECMP forwarding state of a whole fabric.
#[derive(Clone, Debug)]
pub struct EcmpTable {
    /// Host (CA) nodes in id order; a destination's column is its index here.
    hosts: Vec<NodeId>,
    host_index: Vec<u32>,
    /// Switch nodes in id order.
    switches: Vec<NodeId>,
    switch_index: Vec<u32>,
    /// `[switch_idx * hosts + host_idx]` → group id (`u32::MAX`: unreachable).
    cell: Vec<u32>,
    /// Group id → ports (local port numbers), interned.
    groups: Vec<Vec<u8>>,
    link_down: Vec<bool>,
    /// When the recomputation a failure or repair asked for is due (picoseconds).
    pending_ps: Option<u64>,
    /// Convergence delay after a link failure or repair, in picoseconds.
    pub convergence_ps: u64,
    /// Recomputations done.
    pub recomputes: u64,
}

/// No shortest path exists (the destination is cut off).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("route from {switch} to {dst}: no path (is a link down or the node not a host?)")]
pub struct NoRoute {
    /// The switch's name.
    pub switch: String,
    /// The destination's name.
    pub dst: String,
}

impl EcmpTable {
    /// Build the groups for `fab` (all links up), converging `convergence_ps`
    /// picoseconds after a link fails or comes back.
    pub fn build(fab: &Fabric, convergence_ps: u64) -> EcmpTable {
        let n = fab.nodes.len();
        let hosts: Vec<NodeId> = fab.nodes_of(NodeKind::Ca).collect();
        let switches: Vec<NodeId> = fab.nodes_of(NodeKind::Switch).collect();
        let mut host_index = vec![u32::MAX; n];
        for (i, h) in hosts.iter().enumerate() {
            host_index[h.idx()] = i as u32;
        }
        let mut switch_index = vec![u32::MAX; n];
        for (i, s) in switches.iter().enumerate() {
            switch_index[s.idx()] = i as u32;
        }
        let mut t = EcmpTable {
            cell: vec![u32::MAX; switches.len() * hosts.len()],
            hosts,
            host_index,
            switches,
            switch_index,
            groups: Vec::new(),
            link_down: vec![false; fab.links.len()],
            pending_ps: None,
            convergence_ps,
            recomputes: 0,
        };
        t.recompute(&fab.freeze());
        t
    }

    fn recompute(&mut self, flat: &FlatFabric) {
        self.recomputes += 1;
        self.groups.clear();
        self.cell.fill(u32::MAX);
        let mut intern: BTreeMap<Vec<u8>, u32> = BTreeMap::new();
        let n = flat.num_nodes();
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        let nh = self.hosts.len();
        let mut ports = Vec::new();
        for (hi, &dst) in self.hosts.iter().enumerate() {
            // BFS from the destination over up links; only switches forward.
            dist.fill(u32::MAX);
            dist[dst.idx()] = 0;
            queue.clear();
            queue.push_back(dst);
            while let Some(x) = queue.pop_front() {
                if x != dst && flat.kind(x) != NodeKind::Switch {
                    continue;
                }
                for a in flat.neighbors(x) {
                    if self.link_down[a.link.idx()] {
                        continue;
                    }
                    if dist[a.peer.idx()] == u32::MAX {
                        dist[a.peer.idx()] = dist[x.idx()] + 1;
                        queue.push_back(a.peer);
                    }
                }
            }
            for (si, &s) in self.switches.iter().enumerate() {
                let d = dist[s.idx()];
                if d == u32::MAX || d == 0 {
                    continue;
                }
                ports.clear();
                for a in flat.neighbors(s) {
                    if self.link_down[a.link.idx()] || dist[a.peer.idx()] != d - 1 {
                        continue;
                    }
                    if a.peer == dst || flat.kind(a.peer) == NodeKind::Switch {
                        ports.push(a.port);
                    }
                }
                if ports.is_empty() {
                    continue;
                }
                let next = intern.len() as u32;
                let g = *intern.entry(ports.clone()).or_insert_with(|| {
                    self.groups.push(ports.clone());
                    next
                });
                self.cell[si * nh + hi] = g;
            }
        }
    }

    /// The ECMP group (ports) of `switch` toward host `dst`.
    #[inline]
    pub fn group(&self, switch: NodeId, dst: NodeId) -> &[u8] {
        let si = self.switch_index[switch.idx()];
        let hi = self.host_index[dst.idx()];
        if si == u32::MAX || hi == u32::MAX {
            return &[];
        }
        match self.cell[si as usize * self.hosts.len() + hi as usize] {
            u32::MAX => &[],
            g => &self.groups[g as usize],
        }
    }

    /// Number of distinct groups.
    pub fn num_groups(&self) -> usize {
        self.groups.len()
    }

    /// Egress port of `switch` for a packet to `dst` with hash `h`.
    #[inline]
    pub fn next_port(&self, switch: NodeId, dst: NodeId, h: u32) -> Option<u8> {
        let g = self.group(switch, dst);
        if g.is_empty() {
            None
        } else {
            Some(g[(h as usize) % g.len()])
        }
    }

    /// Like [`next_port`](Self::next_port) with a named error.
    pub fn route(&self, fab: &Fabric, switch: NodeId, dst: NodeId, h: u32) -> Result<u8, NoRoute> {
        self.next_port(switch, dst, h).ok_or_else(|| NoRoute {
            switch: fab.node(switch).name.clone(),
            dst: fab.node(dst).name.clone(),
        })
    }

    /// Is `link` down?
    #[inline]
    pub fn is_down(&self, link: LinkId) -> bool {
        self.link_down[link.idx()]
    }

    /// `link` fails at `now_ps`; the groups shrink at `now_ps + convergence_ps`.
    pub fn fail_link(&mut self, link: LinkId, now_ps: u64) {
        self.link_down[link.idx()] = true;
        self.pending_ps = Some(now_ps + self.convergence_ps);
    }

    /// `link` comes back at `now_ps`; the groups grow at `now_ps + convergence_ps`.
    pub fn repair_link(&mut self, link: LinkId, now_ps: u64) {
        self.link_down[link.idx()] = false;
        self.pending_ps = Some(now_ps + self.convergence_ps);
    }

    /// When the pending recomputation is due, in picoseconds (`u64::MAX`: none is).
    pub fn next_deadline_ps(&self) -> u64 {
        self.pending_ps.unwrap_or(u64::MAX)
    }

    /// Apply a recomputation that is due by `now_ps`. Returns true if the groups changed.
    pub fn poll(&mut self, fab: &Fabric, now_ps: u64) -> bool {
        match self.pending_ps {
            Some(t) if t <= now_ps => {
                self.pending_ps = None;
                self.recompute(&fab.freeze());
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fabric::leaf_spine_2x2;

    /// One microsecond in picoseconds.
    const US: u64 = 1_000_000;

    #[test]
    fn groups_hold_every_shortest_next_hop_and_shrink_after_convergence() {
        let (f, leaves, spines, hosts) = leaf_spine_2x2();
        let mut t = EcmpTable::build(&f, 50 * US);
        // leaf0 → h10 (on leaf1): both uplinks.
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4]);
        // leaf0 → its own host: the host port only.
        assert_eq!(t.group(leaves[0], hosts[1]), &[2]);
        // spine0 → h10: down to leaf1 (spine port 2).
        assert_eq!(t.group(spines[0], hosts[2]), &[2]);
        // Fail leaf0–spine0 (link index: find it).
        let link = f.peer(leaves[0], 3).unwrap().1;
        t.fail_link(link, 100 * US);
        assert!(!t.poll(&f, 149 * US));
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4], "not yet converged");
        assert!(t.poll(&f, 150 * US));
        assert_eq!(t.group(leaves[0], hosts[2]), &[4]);
        // spine0 reaches leaf0's hosts only by a longer path now (via leaf1, spine1).
        assert_eq!(t.group(spines[0], hosts[0]), &[2]);
        t.repair_link(link, 200 * US);
        t.poll(&f, 250 * US);
        assert_eq!(t.group(leaves[0], hosts[2]), &[3, 4]);
        assert_eq!(t.recomputes, 3);
    }
}
