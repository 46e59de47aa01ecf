//! Flat per-port indexing shared by validation and the routing engines.
//!
//! Every (node, port) pair gets one dense `u32` index: `base[node] + port`, with port 0
//! included for every node (unused for CAs). That lets per-port scratch arrays (loads,
//! visit marks, peer lookups) be plain `Vec`s indexed without hashing.

use fabric::{FlatFabric, NodeId, NodeKind};

use crate::tables::RoutingTables;

/// Sentinel for "no peer" in [`PortIndex::peer`].
pub const NO_PEER: u32 = u32::MAX;

/// Dense port numbering plus an O(1) `(node, port) -> (peer node, peer port)` table.
///
/// Cost: `4 (n + 1) + 8 P` bytes for n nodes and P ports (port 0 included).
#[derive(Clone, Debug)]
pub struct PortIndex {
    base: Vec<u32>,
    /// `peer[idx]` = peer node id, or [`NO_PEER`].
    peer_node: Vec<u32>,
    peer_port: Vec<u8>,
}

impl PortIndex {
    /// Index the ports of `flat`; `min_ports[n]` (if given) widens a node to at least
    /// that many port slots (port 0 included), e.g. from `RoutingTables::base_lid`.
    pub fn new(flat: &FlatFabric, t: Option<&RoutingTables>) -> PortIndex {
        let n = flat.num_nodes();
        let mut base = Vec::with_capacity(n + 1);
        let mut total = 0u32;
        for i in 0..n {
            base.push(total);
            let mut slots = flat
                .neighbors(NodeId(i as u32))
                .iter()
                .map(|a| a.port as u32 + 1)
                .max()
                .unwrap_or(1);
            if let Some(t) = t
                && let Some(v) = t.base_lid.get(i)
            {
                slots = slots.max(v.len() as u32);
            }
            total += slots;
        }
        base.push(total);
        let mut peer_node = vec![NO_PEER; total as usize];
        let mut peer_port = vec![0u8; total as usize];
        for (i, &b) in base[..n].iter().enumerate() {
            for a in flat.neighbors(NodeId(i as u32)) {
                let idx = (b + a.port as u32) as usize;
                peer_node[idx] = a.peer.0;
                peer_port[idx] = a.peer_port;
            }
        }
        PortIndex {
            base,
            peer_node,
            peer_port,
        }
    }

    /// Total port slots.
    #[inline]
    pub fn len(&self) -> usize {
        self.peer_node.len()
    }

    /// True when there are no ports at all.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.peer_node.is_empty()
    }

    /// Port slots of node `n` (port 0 included).
    #[inline]
    pub fn slots(&self, n: NodeId) -> u32 {
        self.base[n.idx() + 1] - self.base[n.idx()]
    }

    /// Dense index of (n, p), or `None` when p is beyond the node's ports.
    #[inline]
    pub fn idx(&self, n: NodeId, p: u8) -> Option<usize> {
        let b = self.base[n.idx()];
        let i = b + p as u32;
        (i < self.base[n.idx() + 1]).then_some(i as usize)
    }

    /// Inverse of [`PortIndex::idx`].
    pub fn node_port(&self, idx: usize) -> (NodeId, u8) {
        let i = idx as u32;
        let n = self.base.partition_point(|&b| b <= i) - 1;
        (NodeId(n as u32), (i - self.base[n]) as u8)
    }

    /// The far end of (n, p), if cabled.
    #[inline]
    pub fn peer(&self, n: NodeId, p: u8) -> Option<(NodeId, u8)> {
        let i = self.idx(n, p)?;
        let pn = self.peer_node[i];
        (pn != NO_PEER).then(|| (NodeId(pn), self.peer_port[i]))
    }
}

/// True when `k` forwards packets (only switches do; CAs and routers terminate LID routes
/// inside a subnet).
#[inline]
pub fn forwards(k: NodeKind) -> bool {
    k == NodeKind::Switch
}
