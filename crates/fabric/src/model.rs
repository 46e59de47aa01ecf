//! The fabric model: nodes with numbered ports, and the links (cables) between them.
//!
//! ```text
//!   Fabric
//!   ├── nodes: Vec<Node>        NodeId(u32) indexes it
//!   │     └── ports: Vec<Port>  index = port number (switch port 0 is the management port;
//!   │                           a CA's index 0 is an unused placeholder)
//!   ├── links: Vec<Link>        LinkId(u32) indexes it; each link joins two (node, port) ends
//!   └── hosts: Vec<Host>        servers grouping several CAs (a GPU node with 8 NICs)
//! ```
//!
//! Parallel cables between the same two switches are distinct links. The model is
//! mutable while it is built (generators, readers) and is frozen with
//! [`Fabric::freeze`] into flat `u32` adjacency arrays for routing and simulation.

use std::collections::HashMap;

use wire::{Guid, Lid};

use crate::error::ModelError;
use crate::flat::FlatFabric;
use crate::rate::LinkRate;

/// Index of a node in [`Fabric::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NodeId(pub u32);

impl NodeId {
    /// As a `usize` index.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Index of a link in [`Fabric::links`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct LinkId(pub u32);

impl LinkId {
    /// As a `usize` index.
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Index of a server in [`Fabric::hosts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HostId(pub u32);

/// What a node is (NodeInfo:NodeType, IBA vol. 1 §14.2.5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeKind {
    /// Channel adapter: an InfiniBand HCA or an RDMA Ethernet NIC.
    Ca,
    /// A switch (InfiniBand or Ethernet).
    Switch,
    /// A router.
    Router,
}

impl NodeKind {
    /// NodeInfo:NodeType code: 1 CA, 2 switch, 3 router.
    pub fn code(self) -> u8 {
        match self {
            NodeKind::Ca => 1,
            NodeKind::Switch => 2,
            NodeKind::Router => 3,
        }
    }

    /// Lower-case name: "ca", "switch", "router".
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Ca => "ca",
            NodeKind::Switch => "switch",
            NodeKind::Router => "router",
        }
    }
}

/// One end of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    pub node: NodeId,
    pub port: u8,
}

/// A port of a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port {
    /// Port GUID. A switch's ports all share the node GUID (only port 0 has one in IB);
    /// a CA's ports each have their own.
    pub guid: Guid,
    /// The cable plugged in, if any.
    pub link: Option<LinkId>,
    /// A LID recorded by an import (e.g. ibnetdiscover's `lid N`); the SM assigns its own.
    pub lid: Option<Lid>,
    /// LMC recorded by an import.
    pub lmc: u8,
}

impl Port {
    fn unplugged(guid: Guid) -> Port {
        Port {
            guid,
            link: None,
            lid: None,
            lmc: 0,
        }
    }
}

/// A switch, CA or router.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: NodeKind,
    /// The node's unique name in files: ibnetdiscover's `S-<guid>` style or a
    /// generator's `leaf03` style. Unique within a fabric.
    pub name: String,
    /// NodeDescription (up to 64 bytes on the wire).
    pub desc: String,
    pub node_guid: Guid,
    pub sys_image_guid: Guid,
    pub vendor_id: u32,
    pub device_id: u16,
    /// Switch only: port 0 is an enhanced port 0 (true) or a base port 0.
    pub enhanced_port0: bool,
    /// Tier in a generated fabric: 0 host adapters, 1 leaf, 2 spine, 3 core.
    /// `None` for imported fabrics.
    pub level: Option<u8>,
    /// The server this adapter sits in (several NICs of one GPU node share it).
    pub host: Option<HostId>,
    /// Ports indexed by number; `ports.len() == num_ports + 1`.
    pub ports: Vec<Port>,
}

impl Node {
    /// NodeInfo:NumPorts: physical ports, not counting switch port 0.
    pub fn num_ports(&self) -> u8 {
        (self.ports.len() - 1) as u8
    }

    /// True for switches.
    pub fn is_switch(&self) -> bool {
        self.kind == NodeKind::Switch
    }

    /// Port numbers that exist physically: 1..=NumPorts.
    pub fn port_nums(&self) -> std::ops::RangeInclusive<u8> {
        1..=self.num_ports()
    }

    /// The GUID of port `p` (for a switch, the node GUID).
    pub fn port_guid(&self, p: u8) -> Guid {
        self.ports[p as usize].guid
    }
}

/// What a node is made from; see [`Fabric::add_node`].
#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub kind: NodeKind,
    pub name: String,
    pub desc: String,
    pub node_guid: Guid,
    pub sys_image_guid: Option<Guid>,
    /// Port GUIDs of ports 1..=n for a CA/router; ignored for switches (their port GUID
    /// is the node GUID). When `None`, CA port p gets node GUID + p, the convention of
    /// ibsim and of most HCA firmware.
    pub port_guids: Option<Vec<Guid>>,
    pub num_ports: u8,
    pub vendor_id: u32,
    pub device_id: u16,
    pub enhanced_port0: bool,
    pub level: Option<u8>,
    pub host: Option<HostId>,
}

impl NodeSpec {
    /// A switch with `num_ports` ports, Mellanox vendor id and an enhanced port 0.
    pub fn switch(name: impl Into<String>, guid: Guid, num_ports: u8) -> NodeSpec {
        let name = name.into();
        NodeSpec {
            kind: NodeKind::Switch,
            desc: name.clone(),
            name,
            node_guid: guid,
            sys_image_guid: None,
            port_guids: None,
            num_ports,
            vendor_id: 0x02c9,
            device_id: 0xd2f0,
            enhanced_port0: true,
            level: None,
            host: None,
        }
    }

    /// A channel adapter with `num_ports` ports.
    pub fn ca(name: impl Into<String>, guid: Guid, num_ports: u8) -> NodeSpec {
        let name = name.into();
        NodeSpec {
            kind: NodeKind::Ca,
            desc: name.clone(),
            name,
            node_guid: guid,
            sys_image_guid: None,
            port_guids: None,
            num_ports,
            vendor_id: 0x02c9,
            device_id: 0x1021,
            enhanced_port0: false,
            level: None,
            host: None,
        }
    }

    /// Set the node description.
    pub fn desc(mut self, d: impl Into<String>) -> Self {
        self.desc = d.into();
        self
    }

    /// Set the tier.
    pub fn level(mut self, l: u8) -> Self {
        self.level = Some(l);
        self
    }

    /// Set the server.
    pub fn host(mut self, h: HostId) -> Self {
        self.host = Some(h);
        self
    }
}

/// A cable between two ports.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub a: Endpoint,
    pub b: Endpoint,
    pub rate: LinkRate,
    /// Cable length in metres.
    pub length_m: f64,
    /// One-way propagation delay in picoseconds (default: 5 ns per metre).
    pub delay_ps: u64,
    /// Share of `rate` left for traffic after the link's own error recovery (1.0
    /// when healthy): a fault study lowers it for a link with bit errors. Read by
    /// the flow engine, which scales the link's capacity by it; the packet
    /// worlds do not model bit errors and ignore it.
    pub efficiency: f64,
}

impl Link {
    /// The end that is not `n`/`p`.
    pub fn other(&self, e: Endpoint) -> Endpoint {
        if self.a == e { self.b } else { self.a }
    }
}

/// A server: several adapters that share a chassis (and, for GPU nodes, an NVLink domain).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    pub name: String,
}

/// Propagation delay of signal in fibre or copper: about 5 ns per metre (≈ 2/3 c).
pub const DEFAULT_PS_PER_METRE: u64 = 5_000;

/// A whole fabric.
#[derive(Clone, Debug, Default)]
pub struct Fabric {
    pub nodes: Vec<Node>,
    pub links: Vec<Link>,
    pub hosts: Vec<Host>,
    by_name: HashMap<String, NodeId>,
    by_node_guid: HashMap<Guid, NodeId>,
}

impl PartialEq for Fabric {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes && self.links == other.links && self.hosts == other.hosts
    }
}

impl Fabric {
    /// An empty fabric.
    pub fn new() -> Fabric {
        Fabric::default()
    }

    /// Add a server and return its id.
    pub fn add_host(&mut self, name: impl Into<String>) -> HostId {
        self.hosts.push(Host { name: name.into() });
        HostId(self.hosts.len() as u32 - 1)
    }

    /// Add a node. Fails on a duplicate name or node GUID, a zero port count, or a
    /// port-GUID list of the wrong length.
    pub fn add_node(&mut self, spec: NodeSpec) -> Result<NodeId, ModelError> {
        if self.by_name.contains_key(&spec.name) {
            return Err(ModelError::DuplicateName { name: spec.name });
        }
        if let Some(&other) = self.by_node_guid.get(&spec.node_guid) {
            return Err(ModelError::DuplicateGuid {
                guid: spec.node_guid,
                first: self.nodes[other.idx()].name.clone(),
                second: spec.name,
            });
        }
        if spec.num_ports == 0 {
            return Err(ModelError::NoPorts { name: spec.name });
        }
        let n = spec.num_ports as usize;
        let mut ports = Vec::with_capacity(n + 1);
        match spec.kind {
            NodeKind::Switch => {
                for _ in 0..=n {
                    ports.push(Port::unplugged(spec.node_guid));
                }
            }
            NodeKind::Ca | NodeKind::Router => {
                ports.push(Port::unplugged(Guid(0)));
                match &spec.port_guids {
                    Some(g) if g.len() != n => {
                        return Err(ModelError::PortGuidCount {
                            name: spec.name,
                            expected: n,
                            got: g.len(),
                        });
                    }
                    Some(g) => ports.extend(g.iter().map(|&g| Port::unplugged(g))),
                    None => {
                        for p in 1..=n as u64 {
                            ports.push(Port::unplugged(Guid(spec.node_guid.0.wrapping_add(p))));
                        }
                    }
                }
            }
        }
        let id = NodeId(self.nodes.len() as u32);
        self.by_name.insert(spec.name.clone(), id);
        self.by_node_guid.insert(spec.node_guid, id);
        self.nodes.push(Node {
            kind: spec.kind,
            name: spec.name,
            desc: spec.desc,
            node_guid: spec.node_guid,
            sys_image_guid: spec.sys_image_guid.unwrap_or(spec.node_guid),
            vendor_id: spec.vendor_id,
            device_id: spec.device_id,
            enhanced_port0: spec.enhanced_port0,
            level: spec.level,
            host: spec.host,
            ports,
        });
        Ok(id)
    }

    /// Cable port `pa` of `a` to port `pb` of `b`, with the default 5 ns/m delay.
    pub fn connect(
        &mut self,
        a: NodeId,
        pa: u8,
        b: NodeId,
        pb: u8,
        rate: LinkRate,
        length_m: f64,
    ) -> Result<LinkId, ModelError> {
        let delay = delay_for_length(length_m);
        self.connect_with_delay(a, pa, b, pb, rate, length_m, delay)
    }

    /// Cable two ports with an explicit propagation delay.
    #[expect(clippy::too_many_arguments, reason = "a cable has this many properties")]
    pub fn connect_with_delay(
        &mut self,
        a: NodeId,
        pa: u8,
        b: NodeId,
        pb: u8,
        rate: LinkRate,
        length_m: f64,
        delay_ps: u64,
    ) -> Result<LinkId, ModelError> {
        for (n, p) in [(a, pa), (b, pb)] {
            let node = self.nodes.get(n.idx()).ok_or(ModelError::UnknownNode { id: n.0 })?;
            if p == 0 || p > node.num_ports() {
                return Err(ModelError::PortOutOfRange {
                    node: node.name.clone(),
                    port: p,
                    num_ports: node.num_ports(),
                });
            }
            if let Some(l) = node.ports[p as usize].link {
                let other = self.links[l.idx()].other(Endpoint { node: n, port: p });
                return Err(ModelError::PortInUse {
                    node: node.name.clone(),
                    port: p,
                    peer: self.nodes[other.node.idx()].name.clone(),
                    peer_port: other.port,
                });
            }
        }
        if a == b && pa == pb {
            return Err(ModelError::SelfLoop {
                node: self.nodes[a.idx()].name.clone(),
                port: pa,
            });
        }
        if !(length_m.is_finite() && length_m >= 0.0) {
            return Err(ModelError::BadLength { length_m });
        }
        let id = LinkId(self.links.len() as u32);
        self.links.push(Link {
            a: Endpoint { node: a, port: pa },
            b: Endpoint { node: b, port: pb },
            rate,
            length_m,
            delay_ps,
            efficiency: 1.0,
        });
        self.nodes[a.idx()].ports[pa as usize].link = Some(id);
        self.nodes[b.idx()].ports[pb as usize].link = Some(id);
        Ok(id)
    }

    /// Remove a cable (the link id of every later link is preserved by leaving a
    /// tombstone-free compacted list: ids above the removed one shift down by one).
    pub fn disconnect(&mut self, link: LinkId) -> Result<Link, ModelError> {
        if link.idx() >= self.links.len() {
            return Err(ModelError::UnknownLink { id: link.0 });
        }
        let l = self.links.remove(link.idx());
        self.nodes[l.a.node.idx()].ports[l.a.port as usize].link = None;
        self.nodes[l.b.node.idx()].ports[l.b.port as usize].link = None;
        for (i, lk) in self.links.iter().enumerate().skip(link.idx()) {
            let id = Some(LinkId(i as u32));
            self.nodes[lk.a.node.idx()].ports[lk.a.port as usize].link = id;
            self.nodes[lk.b.node.idx()].ports[lk.b.port as usize].link = id;
        }
        Ok(l)
    }

    /// A node by id.
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }

    /// A node by id, mutable (names and GUIDs must go through the add/rename methods).
    #[inline]
    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.idx()]
    }

    /// A link by id.
    #[inline]
    pub fn link(&self, id: LinkId) -> &Link {
        &self.links[id.idx()]
    }

    /// The far end of port `p` of `n`, and the link, if plugged.
    pub fn peer(&self, n: NodeId, p: u8) -> Option<(Endpoint, LinkId)> {
        let l = self.nodes.get(n.idx())?.ports.get(p as usize)?.link?;
        Some((self.links[l.idx()].other(Endpoint { node: n, port: p }), l))
    }

    /// Find a node by its unique name.
    pub fn by_name(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    /// Find a node by node GUID.
    pub fn by_guid(&self, g: Guid) -> Option<NodeId> {
        self.by_node_guid.get(&g).copied()
    }

    /// Ids of every node, in order.
    pub fn node_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// Ids of nodes of one kind, in order.
    pub fn nodes_of(&self, kind: NodeKind) -> impl Iterator<Item = NodeId> + '_ {
        self.node_ids().filter(move |&n| self.nodes[n.idx()].kind == kind)
    }

    /// Number of nodes of one kind.
    pub fn count(&self, kind: NodeKind) -> usize {
        self.nodes.iter().filter(|n| n.kind == kind).count()
    }

    /// Freeze into flat adjacency arrays.
    pub fn freeze(&self) -> FlatFabric {
        FlatFabric::build(self)
    }

    /// A canonical, order-independent description of the cabling: one
    /// `(node GUID, port, node GUID, port, rate)` tuple per link with the smaller end
    /// first, sorted. Two fabrics with equal signatures have the same GUIDs, port
    /// numbers, endpoints, speeds and widths.
    pub fn cabling_signature(&self) -> Vec<(Guid, u8, Guid, u8, String)> {
        let mut v: Vec<_> = self
            .links
            .iter()
            .map(|l| {
                let ea = (self.nodes[l.a.node.idx()].node_guid, l.a.port);
                let eb = (self.nodes[l.b.node.idx()].node_guid, l.b.port);
                let (x, y) = if ea <= eb { (ea, eb) } else { (eb, ea) };
                (x.0, x.1, y.0, y.1, l.rate.to_string())
            })
            .collect();
        v.sort();
        v
    }

    /// Differences between two fabrics, compared by GUID (not by node order): node
    /// kinds, port counts, port GUIDs, cabling, rates. Empty when they are the same
    /// fabric.
    pub fn diff(&self, other: &Fabric) -> Vec<String> {
        let mut out = Vec::new();
        let mut mine: Vec<&Node> = self.nodes.iter().collect();
        mine.sort_by_key(|n| n.node_guid);
        for n in &mine {
            match other.by_guid(n.node_guid).map(|id| other.node(id)) {
                None => out.push(format!(
                    "node {} ({}) missing from the second fabric",
                    n.node_guid, n.name
                )),
                Some(m) => {
                    if m.kind != n.kind {
                        out.push(format!(
                            "node {}: kind {} vs {}",
                            n.node_guid,
                            n.kind.name(),
                            m.kind.name()
                        ));
                    }
                    if m.num_ports() != n.num_ports() {
                        out.push(format!(
                            "node {}: {} ports vs {}",
                            n.node_guid,
                            n.num_ports(),
                            m.num_ports()
                        ));
                    }
                    for p in n.port_nums() {
                        if let Some(mp) = m.ports.get(p as usize)
                            && mp.guid != n.ports[p as usize].guid
                        {
                            out.push(format!(
                                "node {} port {}: port GUID {} vs {}",
                                n.node_guid, p, n.ports[p as usize].guid, mp.guid
                            ));
                        }
                    }
                }
            }
        }
        for m in &other.nodes {
            if self.by_guid(m.node_guid).is_none() {
                out.push(format!(
                    "node {} ({}) missing from the first fabric",
                    m.node_guid, m.name
                ));
            }
        }
        let a = self.cabling_signature();
        let b = other.cabling_signature();
        if a != b {
            let sa: std::collections::BTreeSet<_> = a.iter().collect();
            let sb: std::collections::BTreeSet<_> = b.iter().collect();
            for l in sa.difference(&sb).take(20) {
                out.push(format!(
                    "link {}[{}] -- {}[{}] {} only in the first fabric",
                    l.0, l.1, l.2, l.3, l.4
                ));
            }
            for l in sb.difference(&sa).take(20) {
                out.push(format!(
                    "link {}[{}] -- {}[{}] {} only in the second fabric",
                    l.0, l.1, l.2, l.3, l.4
                ));
            }
            if a.len() != b.len() {
                out.push(format!("{} links vs {}", a.len(), b.len()));
            }
        }
        out
    }
}

/// Propagation delay of a cable of `length_m` metres at 5 ns/m, in picoseconds.
pub fn delay_for_length(length_m: f64) -> u64 {
    if length_m.is_finite() && length_m > 0.0 {
        (length_m * DEFAULT_PS_PER_METRE as f64).round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate::LinkRate;

    fn two_switches() -> (Fabric, NodeId, NodeId) {
        let mut f = Fabric::new();
        let a = f.add_node(NodeSpec::switch("sw1", Guid(0x10), 8)).unwrap();
        let b = f.add_node(NodeSpec::switch("sw2", Guid(0x20), 8)).unwrap();
        (f, a, b)
    }

    #[test]
    fn parallel_cables_stay_distinct() {
        let (mut f, a, b) = two_switches();
        let l1 = f.connect(a, 3, b, 3, LinkRate::NDR_4X, 2.0).unwrap();
        let l2 = f.connect(a, 5, b, 5, LinkRate::NDR_4X, 2.0).unwrap();
        assert_ne!(l1, l2);
        assert_eq!(f.links.len(), 2);
        assert_eq!(f.peer(a, 5).unwrap().0, Endpoint { node: b, port: 5 });
        assert_eq!(f.link(l1).delay_ps, 10_000);
    }

    #[test]
    fn rejects_bad_cabling() {
        let (mut f, a, b) = two_switches();
        f.connect(a, 1, b, 1, LinkRate::NDR_4X, 1.0).unwrap();
        assert!(matches!(
            f.connect(a, 1, b, 2, LinkRate::NDR_4X, 1.0),
            Err(ModelError::PortInUse { .. })
        ));
        assert!(matches!(
            f.connect(a, 9, b, 2, LinkRate::NDR_4X, 1.0),
            Err(ModelError::PortOutOfRange { .. })
        ));
        assert!(matches!(
            f.connect(a, 0, b, 2, LinkRate::NDR_4X, 1.0),
            Err(ModelError::PortOutOfRange { .. })
        ));
        assert!(matches!(
            f.add_node(NodeSpec::switch("sw3", Guid(0x10), 8)),
            Err(ModelError::DuplicateGuid { .. })
        ));
        assert!(matches!(
            f.add_node(NodeSpec::switch("sw1", Guid(0x30), 8)),
            Err(ModelError::DuplicateName { .. })
        ));
    }

    #[test]
    fn ca_port_guids_default_to_node_guid_plus_port() {
        let mut f = Fabric::new();
        let h = f.add_node(NodeSpec::ca("h1", Guid(0x100000), 2)).unwrap();
        assert_eq!(f.node(h).port_guid(1), Guid(0x100001));
        assert_eq!(f.node(h).port_guid(2), Guid(0x100002));
    }

    #[test]
    fn disconnect_renumbers_links() {
        let (mut f, a, b) = two_switches();
        f.connect(a, 1, b, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(a, 2, b, 2, LinkRate::NDR_4X, 1.0).unwrap();
        f.disconnect(LinkId(0)).unwrap();
        assert_eq!(f.peer(a, 1), None);
        assert_eq!(f.peer(a, 2).unwrap().1, LinkId(0));
    }

    #[test]
    fn diff_finds_differences() {
        let (mut f, a, b) = two_switches();
        f.connect(a, 1, b, 1, LinkRate::NDR_4X, 1.0).unwrap();
        let mut g = f.clone();
        assert!(f.diff(&g).is_empty());
        g.connect(a, 2, b, 2, LinkRate::NDR_4X, 1.0).unwrap();
        assert!(!f.diff(&g).is_empty());
    }
}
