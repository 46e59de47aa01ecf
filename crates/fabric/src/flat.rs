//! The frozen, flat view of a fabric for routing and simulation.
//!
//! Compressed sparse rows: `offsets[n]..offsets[n + 1]` indexes the adjacency
//! entries of node `n` in `adj`, sorted by local port number. Memory is
//! `4 (n + 1) + 12 · 2L` bytes for n nodes and L links, no pointers, and one
//! cache-friendly slice per node; building it is O(n + L).

use crate::model::{Fabric, LinkId, NodeId, NodeKind};

/// One cabled port seen from its node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Adj {
    /// The node at the far end.
    pub peer: NodeId,
    /// The cable.
    pub link: LinkId,
    /// Local port number.
    pub port: u8,
    /// Port number at the far end.
    pub peer_port: u8,
}

/// Flat adjacency arrays with `u32` ids, plus per-node kind for quick filtering.
#[derive(Clone, Debug)]
pub struct FlatFabric {
    offsets: Vec<u32>,
    adj: Vec<Adj>,
    kinds: Vec<NodeKind>,
}

impl FlatFabric {
    pub(crate) fn build(f: &Fabric) -> FlatFabric {
        let mut offsets = Vec::with_capacity(f.nodes.len() + 1);
        let mut adj = Vec::with_capacity(f.links.len() * 2);
        offsets.push(0);
        for (i, node) in f.nodes.iter().enumerate() {
            let me = NodeId(i as u32);
            for p in node.port_nums() {
                if let Some((peer, link)) = f.peer(me, p) {
                    adj.push(Adj {
                        peer: peer.node,
                        link,
                        port: p,
                        peer_port: peer.port,
                    });
                }
            }
            offsets.push(adj.len() as u32);
        }
        FlatFabric {
            offsets,
            adj,
            kinds: f.nodes.iter().map(|n| n.kind).collect(),
        }
    }

    /// Number of nodes.
    #[inline]
    pub fn num_nodes(&self) -> usize {
        self.kinds.len()
    }

    /// Cabled ports of `n`, by ascending port number.
    #[inline]
    pub fn neighbors(&self, n: NodeId) -> &[Adj] {
        let i = n.idx();
        &self.adj[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Kind of `n`.
    #[inline]
    pub fn kind(&self, n: NodeId) -> NodeKind {
        self.kinds[n.idx()]
    }

    /// Hop distances from `src` to every node by breadth-first search
    /// (`u32::MAX` = unreachable). Paths may transit only switches, as packets do.
    pub fn bfs_hops(&self, src: NodeId) -> Vec<u32> {
        let mut dist = vec![u32::MAX; self.num_nodes()];
        let mut queue = std::collections::VecDeque::new();
        dist[src.idx()] = 0;
        queue.push_back(src);
        while let Some(n) = queue.pop_front() {
            if n != src && self.kind(n) != NodeKind::Switch {
                continue;
            }
            let d = dist[n.idx()] + 1;
            for a in self.neighbors(n) {
                if dist[a.peer.idx()] == u32::MAX {
                    dist[a.peer.idx()] = d;
                    queue.push_back(a.peer);
                }
            }
        }
        dist
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeSpec;
    use crate::rate::LinkRate;
    use wire::Guid;

    #[test]
    fn csr_lists_ports_in_order_and_bfs_transits_switches_only() {
        let mut f = Fabric::new();
        let s = f.add_node(NodeSpec::switch("s", Guid(1), 4)).unwrap();
        let h1 = f.add_node(NodeSpec::ca("h1", Guid(0x100), 2)).unwrap();
        let h2 = f.add_node(NodeSpec::ca("h2", Guid(0x200), 2)).unwrap();
        let h3 = f.add_node(NodeSpec::ca("h3", Guid(0x300), 1)).unwrap();
        f.connect(s, 3, h2, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s, 1, h1, 1, LinkRate::NDR_4X, 1.0).unwrap();
        // h2 port 2 to h3: CAs do not forward, so h1 must not reach h3 through h2.
        f.connect(h2, 2, h3, 1, LinkRate::NDR_4X, 1.0).unwrap();
        let flat = f.freeze();
        let ports: Vec<u8> = flat.neighbors(s).iter().map(|a| a.port).collect();
        assert_eq!(ports, vec![1, 3]);
        let d = flat.bfs_hops(h1);
        assert_eq!(d[h2.idx()], 2);
        assert_eq!(d[h3.idx()], u32::MAX);
    }
}
