//! What an SM run produces, as plain data: LIDs, linear forwarding tables and
//! SL-to-VL tables. The simulator and the diagnostics read these; they never call
//! into routing code.

use fabric::{Fabric, Lid, NodeId};

/// LFT entry meaning "no route" (OpenSM prints it as `0xFF`/unreachable).
pub const NO_ROUTE: u8 = 0xff;

/// One switch's linear forwarding table: `ports[lid]` is the output port for that
/// destination LID (0 = the switch itself, [`NO_ROUTE`] = drop).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lft {
    pub ports: Vec<u8>,
}

impl Lft {
    /// The output port for `lid`, or `None` when there is no route.
    #[inline]
    pub fn get(&self, lid: Lid) -> Option<u8> {
        match self.ports.get(lid.0 as usize) {
            Some(&p) if p != NO_ROUTE => Some(p),
            _ => None,
        }
    }
}

/// SL→VL mapping of one (switch, input port, output port) or of a CA port:
/// `vl[sl]` for SL 0..16.
pub type Sl2Vl = [u8; 16];

/// The routing state of a subnet: LID assignment plus per-switch tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingTables {
    /// LID mask control: each end port owns 2^lmc consecutive LIDs from its base.
    pub lmc: u8,
    /// Base LID of every port that has one, indexed `[node][port]`; switch port 0
    /// carries the switch's LID, CA ports 1..=n their own; `Lid(0)` = none.
    pub base_lid: Vec<Vec<Lid>>,
    /// Owner of each LID: `(node, port)`, indexed by LID value.
    pub lid_owner: Vec<Option<(NodeId, u8)>>,
    /// Linear forwarding table of each node (empty for non-switches), indexed by node.
    pub lft: Vec<Lft>,
    /// SL→VL tables per switch, `[node][in_port][out_port]`, when the engine programs
    /// them (deadlock-free engines). `None` means every SL maps to VL 0.
    pub sl2vl: Option<Vec<Vec<Vec<Sl2Vl>>>>,
    /// The SL each (source LID, destination LID) pair must use, when the engine
    /// assigns SLs per path (DFSSSP-style layers); `None` = SL 0 everywhere.
    pub path_sl: Option<PathSl>,
    /// Number of data VLs the tables use.
    pub vls_used: u8,
}

/// Path-to-SL assignment of a layered deadlock-free engine, by destination LID:
/// `sl_by_src_dst[src_idx * n + dst_idx]` over the end-port LIDs in `lids`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathSl {
    pub lids: Vec<Lid>,
    pub sl: Vec<u8>,
}

impl RoutingTables {
    /// Empty tables sized for `fabric`.
    pub fn empty_for(fabric: &Fabric) -> RoutingTables {
        RoutingTables {
            lmc: 0,
            base_lid: fabric.nodes.iter().map(|n| vec![Lid(0); n.ports.len()]).collect(),
            lid_owner: Vec::new(),
            lft: vec![Lft::default(); fabric.nodes.len()],
            sl2vl: None,
            path_sl: None,
            vls_used: 1,
        }
    }

    /// The base LID of (node, port) (switches: pass port 0), or `None`.
    pub fn lid_of(&self, n: NodeId, port: u8) -> Option<Lid> {
        let l = *self.base_lid.get(n.idx())?.get(port as usize)?;
        (l.0 != 0).then_some(l)
    }

    /// Who owns `lid`, if anyone.
    pub fn owner(&self, lid: Lid) -> Option<(NodeId, u8)> {
        self.lid_owner.get(lid.0 as usize).copied().flatten()
    }
}
