//! The transport between the SM and the fabric, and the in-process fabric that answers
//! SMPs from the model (what ibsim does, without sockets).
//!
//! The SM only ever sees 256-byte MADs through [`Transport`]; a real umad transport can
//! implement the same trait. [`InProcess`] holds per-node agent state (port LIDs and
//! states, LFT, SL2VL, SwitchInfo) on top of a [`Fabric`], forwards directed-route SMPs
//! hop by hop with the IBA §14.2.2 rules implemented in `wire::mad::DrRoute`, and
//! answers NodeInfo, NodeDescription, PortInfo, SwitchInfo, LinearForwardingTable and
//! SLtoVLMappingTable like a subnet management agent. Link changes raise PortStateChange
//! and queue Trap 128 notices, as ibsim's `Unlink` does (reference §4).
//!
//! Fault injection (per node GUID) lets tests exercise the SM's handling of bad
//! replies: a wrong status, the wrong attribute, a truncated MAD, a duplicated GUID, a
//! node that stops answering.

use std::collections::{BTreeMap, VecDeque};

use fabric::{Fabric, Guid, Lid, LinkRate, NodeId, NodeKind};
use thiserror::Error;
use wire::mad::attr::{self, NodeType, PhysState, PortState};
use wire::mad::{AttrId, DrRoute, DrStep, MadStatus, Method, Route, Smp};

/// Bytes of a MAD.
pub const MAD_LEN: usize = 256;

/// Transport failures (the request could not be handed to the fabric at all).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum TransportError {
    #[error("the request is not a valid SMP: {0}")]
    BadRequest(String),
    #[error("the SM port is down")]
    PortDown,
}

/// How the SM exchanges MADs with the fabric.
pub trait Transport {
    /// Send one SMP from the SM's port.
    fn send(&mut self, mad: &[u8; MAD_LEN]) -> Result<(), TransportError>;
    /// The next MAD that arrived for the SM (responses and traps), copied into `buf`;
    /// returns its length, or `None` when nothing is pending (for a real transport:
    /// within its receive timeout).
    fn recv(&mut self, buf: &mut [u8; MAD_LEN]) -> Option<usize>;
}

/// A misbehaviour to inject at one node (by node GUID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// Never answer.
    Silent,
    /// Answer with this MAD status.
    BadStatus(u16),
    /// Answer with another attribute id.
    WrongAttribute,
    /// Answer with only the first 100 bytes.
    Truncated,
    /// Report this node GUID instead of the real one.
    Guid(Guid),
    /// Scramble the reply (all but the transaction id) with a seeded byte stream.
    Corrupt(u64),
}

/// Agent state of one port.
#[derive(Clone, Copy, Debug)]
struct PortState_ {
    lid: Lid,
    lmc: u8,
    state: PortState,
}

/// Agent state of one node.
#[derive(Clone, Debug)]
struct Agent {
    ports: Vec<PortState_>,
    lft: Vec<u8>,
    fdb_top: u16,
    port_state_change: bool,
    sl2vl: BTreeMap<u16, [u8; 16]>,
    /// P_Key table blocks by (port, block); absent = the power-on table (0xFFFF at
    /// index 0 of block 0, as ibsim `sim_net.c:639`).
    pkeys: BTreeMap<(u8, u16), [u16; attr::pkey_table::BLOCK]>,
}

/// Counters of the in-process fabric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InProcessStats {
    /// SMPs received from the SM.
    pub requests: u64,
    /// Responses and traps queued for the SM.
    pub responses: u64,
    /// SMPs dropped by directed-route rules or missing cables.
    pub dropped: u64,
    /// Directed-route hops walked (both directions).
    pub hops: u64,
}

/// A fabric model whose nodes answer SMPs; see the module docs.
pub struct InProcess {
    fabric: Fabric,
    sm: (NodeId, u8),
    agents: Vec<Agent>,
    outbox: VecDeque<Box<[u8; MAD_LEN]>>,
    /// Spent MAD buffers, boxed so that they move between the outbox and the
    /// pool as pointers, not as 256-byte copies.
    #[expect(
        clippy::vec_box,
        reason = "boxes move between outbox and pool as pointers, not 256-byte copies"
    )]
    pool: Vec<Box<[u8; MAD_LEN]>>,
    faults: BTreeMap<Guid, Fault>,
    /// Cabling as flat arrays, kept in step with `fabric` by [`InProcess::link`] and
    /// [`InProcess::unlink`]: port (n, p) is slot `port_off[n] + p`; its peer node
    /// (`u32::MAX` = none) and peer port. Directed-route forwarding reads these instead
    /// of walking the model's link list.
    port_off: Vec<u32>,
    peer_node: Vec<u32>,
    peer_port: Vec<u8>,
    num_ports: Vec<u8>,
    is_switch: Vec<bool>,
    /// Counters.
    pub stats: InProcessStats,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("nodes", &self.fabric.nodes.len())
            .field("stats", &self.stats)
            .finish()
    }
}

const NO_PEER: u32 = u32::MAX;

/// LinearFDBCap the agents report: the whole unicast LID space (IBA: 0xC000 entries).
pub const LINEAR_FDB_CAP: u16 = 0xc000;

impl InProcess {
    /// Agents for every node of `fabric`; the SM sits on `sm` (node, port; port 0 for a
    /// switch's management port). Ports start in INIT when cabled, DOWN otherwise, with
    /// no LIDs and empty LFTs, as after power-up.
    pub fn new(fabric: Fabric, sm: (NodeId, u8)) -> InProcess {
        let agents = fabric
            .nodes
            .iter()
            .map(|n| Agent {
                ports: n
                    .ports
                    .iter()
                    .enumerate()
                    .map(|(p, port)| PortState_ {
                        lid: Lid(0),
                        lmc: 0,
                        state: if port.link.is_some() || (p == 0 && n.kind == NodeKind::Switch) {
                            PortState::Init
                        } else {
                            PortState::Down
                        },
                    })
                    .collect(),
                lft: Vec::new(),
                fdb_top: 0,
                port_state_change: false,
                sl2vl: BTreeMap::new(),
                pkeys: BTreeMap::new(),
            })
            .collect();
        let mut port_off = Vec::with_capacity(fabric.nodes.len() + 1);
        let mut total = 0u32;
        for n in &fabric.nodes {
            port_off.push(total);
            total += n.ports.len() as u32;
        }
        port_off.push(total);
        let num_ports = fabric.nodes.iter().map(|n| n.num_ports()).collect();
        let is_switch = fabric.nodes.iter().map(|n| n.kind == NodeKind::Switch).collect();
        let mut me = InProcess {
            fabric,
            sm,
            agents,
            outbox: VecDeque::new(),
            pool: Vec::new(),
            faults: BTreeMap::new(),
            port_off,
            peer_node: vec![NO_PEER; total as usize],
            peer_port: vec![0; total as usize],
            num_ports,
            is_switch,
            stats: InProcessStats::default(),
        };
        for i in 0..me.fabric.nodes.len() {
            for p in 0..me.fabric.nodes[i].ports.len() {
                me.refresh_peer(NodeId(i as u32), p as u8);
            }
        }
        me
    }

    /// Copy the cabling of (n, p) from the model into the flat peer table.
    fn refresh_peer(&mut self, n: NodeId, p: u8) {
        let Some(slot) = self.slot(n, p) else { return };
        match self.fabric.peer(n, p) {
            Some((peer, _)) => {
                self.peer_node[slot] = peer.node.0;
                self.peer_port[slot] = peer.port;
            }
            None => self.peer_node[slot] = NO_PEER,
        }
    }

    #[inline]
    fn slot(&self, n: NodeId, p: u8) -> Option<usize> {
        let i = self.port_off[n.idx()] as usize + p as usize;
        (i < self.port_off[n.idx() + 1] as usize).then_some(i)
    }

    /// The far end of (n, p), if cabled.
    #[inline]
    fn peer(&self, n: NodeId, p: u8) -> Option<(NodeId, u8)> {
        let i = self.slot(n, p)?;
        let pn = self.peer_node[i];
        (pn != NO_PEER).then(|| (NodeId(pn), self.peer_port[i]))
    }

    /// The model (cabling as it is now).
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Inject a fault at the node with GUID `node_guid` (`None` clears it).
    pub fn set_fault(&mut self, node_guid: Guid, fault: Option<Fault>) {
        match fault {
            Some(f) => self.faults.insert(node_guid, f),
            None => self.faults.remove(&node_guid),
        };
    }

    /// The LFT a switch holds now (as programmed by SMPs).
    pub fn lft(&self, n: NodeId) -> &[u8] {
        &self.agents[n.idx()].lft
    }

    /// The LID and state of (n, p) as programmed.
    pub fn port(&self, n: NodeId, p: u8) -> (Lid, PortState) {
        let a = &self.agents[n.idx()].ports[p as usize];
        (a.lid, a.state)
    }

    /// Unplug the cable at (n, p), as ibsim's `Unlink`: both ends go DOWN, switches at
    /// either end set PortStateChange and send Trap 128 to the SM's LID.
    pub fn unlink(&mut self, n: NodeId, p: u8) -> bool {
        let Some((peer, link)) = self.fabric.peer(n, p) else {
            return false;
        };
        if self.fabric.disconnect(link).is_err() {
            return false;
        }
        for (node, port) in [(n, p), (peer.node, peer.port)] {
            self.refresh_peer(node, port);
            self.agents[node.idx()].ports[port as usize].state = PortState::Down;
            self.link_changed(node);
        }
        true
    }

    /// Cable (a, pa) to (b, pb); both ends come up in INIT and switches raise traps.
    pub fn link(&mut self, a: NodeId, pa: u8, b: NodeId, pb: u8, rate: LinkRate) -> Result<(), fabric::ModelError> {
        self.fabric.connect(a, pa, b, pb, rate, 2.0)?;
        for (node, port) in [(a, pa), (b, pb)] {
            self.refresh_peer(node, port);
            self.agents[node.idx()].ports[port as usize].state = PortState::Init;
            self.link_changed(node);
        }
        Ok(())
    }

    fn link_changed(&mut self, node: NodeId) {
        if self.fabric.nodes[node.idx()].kind != NodeKind::Switch {
            return;
        }
        self.agents[node.idx()].port_state_change = true;
        let sw_lid = self.agents[node.idx()].ports[0].lid;
        let sm_lid = self.agents[self.sm.0.idx()].ports[self.sm.1 as usize].lid;
        if sm_lid.0 == 0 {
            return; // no LIDs yet: nobody to send the trap to
        }
        // Trap 128, LID-routed to the master SM (IBA §13.4.8.2, §14.2.5.1).
        let notice = attr::notice::Notice::trap(2, sw_lid, attr::notice::TrapDetails::LinkStateChange { lid: sw_lid });
        let mut data = [0u8; 64];
        if notice.emit(&mut data).is_err() {
            return;
        }
        let mut smp = Smp::set(AttrId::Notice, 0, 0, Route::Lid, data);
        smp.method = Method::Trap;
        self.queue(&smp, None);
    }

    fn queue(&mut self, smp: &Smp, fault: Option<Fault>) {
        let mut buf = self.pool.pop().unwrap_or_else(|| Box::new([0u8; MAD_LEN]));
        if smp.to_bytes(&mut buf[..]).is_err() {
            self.pool.push(buf);
            return;
        }
        if fault == Some(Fault::Truncated) {
            buf[100..].fill(0);
            buf[0] = 0; // marks the copy as truncated for recv()
        }
        if let Some(Fault::Corrupt(seed)) = fault {
            // xorshift64*: deterministic garbage; byte 0 stays non-zero so the copy is
            // delivered whole, bytes 8..16 (TID) stay so the SM can match it.
            let mut x = seed | 1;
            for (i, b) in buf.iter_mut().enumerate() {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let r = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
                if !(8..16).contains(&i) {
                    *b ^= r;
                }
            }
            if buf[0] == TRUNCATED_MARK {
                buf[0] = 0x80;
            }
        }
        self.stats.responses += 1;
        self.outbox.push_back(buf);
    }

    /// Forward an outgoing DR SMP from the SM's port hop by hop (IBA §14.2.2 via
    /// `DrRoute`); the node and port it is delivered at, or `None` when dropped.
    fn walk_out(&mut self, dr: &mut DrRoute) -> Option<(NodeId, u8)> {
        let (sm_node, sm_port) = self.sm;
        let mut at = sm_node;
        let mut in_port = sm_port;
        let mut step = dr.originate(self.num_ports[at.idx()]);
        loop {
            match step {
                DrStep::Deliver => return Some((at, in_port)),
                DrStep::Forward(p) => {
                    // A CA SM may only leave by its own port.
                    if at == sm_node && !self.is_switch[at.idx()] && p != sm_port {
                        return None;
                    }
                    let (peer, peer_port) = self.peer(at, p)?;
                    if self.agents[at.idx()].ports[p as usize].state == PortState::Down {
                        return None;
                    }
                    self.stats.hops += 1;
                    at = peer;
                    in_port = peer_port;
                    step = dr.receive(in_port, self.is_switch[at.idx()], self.num_ports[at.idx()]);
                }
                _ => return None,
            }
        }
    }

    /// Carry a returning DR SMP from `at` back to the SM; false when dropped.
    fn walk_back(&mut self, mut at: NodeId, dr: &mut DrRoute) -> bool {
        let mut step = dr.respond(self.num_ports[at.idx()]);
        loop {
            match step {
                DrStep::Deliver => return true,
                DrStep::Forward(p) => {
                    let Some((peer, peer_port)) = self.peer(at, p) else {
                        return false;
                    };
                    self.stats.hops += 1;
                    at = peer;
                    step = dr.receive(peer_port, self.is_switch[at.idx()], self.num_ports[at.idx()]);
                }
                _ => return false,
            }
        }
    }

    /// Answer one request that reached `node` through `in_port`.
    fn answer(&mut self, node: NodeId, in_port: u8, req: &Smp) -> (u16, [u8; 64]) {
        let mut data = [0u8; 64];
        let n = &self.fabric.nodes[node.idx()];
        let is_sw = n.kind == NodeKind::Switch;
        let bad_mod = MadStatus::with_invalid_field(7).0;
        let unsupported = MadStatus::with_invalid_field(3).0;
        match (req.attr_id, req.method) {
            (AttrId::NodeInfo, Method::Get) => {
                let guid = match self.faults.get(&n.node_guid) {
                    Some(Fault::Guid(g)) => *g,
                    _ => n.node_guid,
                };
                let r = attr::node_info::Repr {
                    base_version: 1,
                    class_version: 1,
                    node_type: match n.kind {
                        NodeKind::Ca => NodeType::Ca,
                        NodeKind::Switch => NodeType::Switch,
                        NodeKind::Router => NodeType::Router,
                    },
                    num_ports: n.num_ports(),
                    system_image_guid: n.sys_image_guid,
                    node_guid: guid,
                    port_guid: if is_sw { guid } else { n.port_guid(in_port.max(1)) },
                    partition_cap: PARTITION_CAP,
                    device_id: n.device_id,
                    revision: 0,
                    local_port_num: in_port,
                    vendor_id: n.vendor_id,
                };
                let _ = r.to_bytes(&mut data);
                (0, data)
            }
            (AttrId::NodeDescription, Method::Get) => {
                let desc: String = n.desc.chars().take(64).collect();
                let b = desc.as_bytes();
                let k = b.len().min(64);
                data[..k].copy_from_slice(&b[..k]);
                (0, data)
            }
            (AttrId::PortInfo, Method::Get | Method::Set) => {
                let p = (req.attr_mod & 0xff) as u8;
                let p = if !is_sw && p == 0 { in_port } else { p };
                if p as usize >= n.ports.len() {
                    return (bad_mod, data);
                }
                if req.method == Method::Set
                    && let Ok(set) = attr::port_info::Repr::from_bytes(&req.data)
                {
                    let a = &mut self.agents[node.idx()].ports[p as usize];
                    // LID and LMC live in port 0 for switches (IBA §14.2.5.6).
                    if !is_sw || p == 0 {
                        a.lid = set.lid;
                        a.lmc = set.lmc;
                    }
                    let cabled = n.ports[p as usize].link.is_some() || (is_sw && p == 0);
                    match set.port_state {
                        PortState::Armed | PortState::Active if cabled => a.state = set.port_state,
                        PortState::Down => a.state = PortState::Down,
                        _ => {}
                    }
                }
                let a = self.agents[node.idx()].ports[p as usize];
                let base = self.agents[node.idx()].ports[0];
                let (lid, lmc) = if is_sw { (base.lid, base.lmc) } else { (a.lid, a.lmc) };
                let link = n.ports[p as usize].link.map(|l| self.fabric.link(l).rate);
                let (w, s, se) = match link {
                    Some(LinkRate::Ib { speed, width }) => {
                        (width.code(), speed.link_speed_code(), speed.link_speed_ext_code())
                    }
                    _ => (0, 0, 0),
                };
                let r = attr::port_info::Repr {
                    lid,
                    lmc,
                    local_port_num: in_port,
                    link_width_active: w,
                    link_width_enabled: w,
                    link_width_supported: w,
                    link_speed_active: s,
                    link_speed_ext_active: se,
                    port_state: a.state,
                    phys_state: if link.is_some() || (is_sw && p == 0) {
                        PhysState::LinkUp
                    } else {
                        PhysState::Polling
                    },
                    vl_cap: 4,
                    oper_vls: 4,
                    capability_mask: if (node, p) == self.sm { attr::cap::IS_SM } else { 0 },
                    ..Default::default()
                };
                let _ = r.to_bytes(&mut data);
                (0, data)
            }
            (AttrId::SwitchInfo, Method::Get | Method::Set) if is_sw => {
                let ag = &mut self.agents[node.idx()];
                if req.method == Method::Set
                    && let Ok(set) = attr::switch_info::Repr::from_bytes(&req.data)
                {
                    ag.fdb_top = set.linear_fdb_top;
                    if set.port_state_change {
                        ag.port_state_change = false; // write 1 to clear
                    }
                }
                let r = attr::switch_info::Repr {
                    linear_fdb_cap: LINEAR_FDB_CAP,
                    multicast_fdb_cap: 1024,
                    linear_fdb_top: ag.fdb_top,
                    port_state_change: ag.port_state_change,
                    enhanced_port0: n.enhanced_port0,
                    life_time_value: 18,
                    partition_enforcement_cap: PARTITION_CAP,
                    ..Default::default()
                };
                let _ = r.to_bytes(&mut data);
                (0, data)
            }
            (AttrId::LinearFwdTable, Method::Get | Method::Set) if is_sw => {
                let block = req.attr_mod as usize;
                if block * attr::lft::BLOCK >= LINEAR_FDB_CAP as usize {
                    return (bad_mod, data);
                }
                let ag = &mut self.agents[node.idx()];
                let lo = block * attr::lft::BLOCK;
                let hi = lo + attr::lft::BLOCK;
                if req.method == Method::Set {
                    if ag.lft.len() < hi {
                        // Hold the table up to LinearFDBTop at once (a real switch has
                        // its LinearFDBCap entries), not one block more per Set.
                        let top = (ag.fdb_top as usize / attr::lft::BLOCK + 1) * attr::lft::BLOCK;
                        ag.lft.resize(hi.max(top), attr::lft::DROP);
                    }
                    ag.lft[lo..hi].copy_from_slice(&req.data);
                }
                match ag.lft.get(lo..hi) {
                    Some(b) => data.copy_from_slice(b),
                    None => {
                        data.fill(attr::lft::DROP);
                        let held = ag.lft.get(lo..).unwrap_or(&[]);
                        data[..held.len()].copy_from_slice(held);
                    }
                }
                (0, data)
            }
            (AttrId::SlToVlTable, Method::Get | Method::Set) => {
                let key = (req.attr_mod & 0xffff) as u16;
                let ag = &mut self.agents[node.idx()];
                if req.method == Method::Set
                    && let Ok(r) = attr::sl2vl::Repr::from_bytes(&req.data)
                {
                    ag.sl2vl.insert(key, r.vl);
                }
                let r = attr::sl2vl::Repr {
                    vl: ag.sl2vl.get(&key).copied().unwrap_or([0; 16]),
                };
                let _ = r.to_bytes(&mut data);
                (0, data)
            }
            (AttrId::PKeyTable, Method::Get | Method::Set) => {
                // AttributeModifier: block in bits 0-15, the port in 16-23 on a switch
                // (IBA §14.2.5.7); a CA's table is the one of the port asked through.
                let block = (req.attr_mod & 0xffff) as u16;
                let port = if is_sw { (req.attr_mod >> 16) as u8 } else { in_port };
                if block as usize * attr::pkey_table::BLOCK >= PARTITION_CAP as usize || port > n.num_ports() {
                    return (bad_mod, data);
                }
                let ag = &mut self.agents[node.idx()];
                if req.method == Method::Set
                    && let Ok(r) = attr::pkey_table::Repr::from_bytes(&req.data)
                {
                    ag.pkeys.insert((port, block), r.pkeys);
                }
                let r = attr::pkey_table::Repr {
                    pkeys: ag
                        .pkeys
                        .get(&(port, block))
                        .copied()
                        .unwrap_or_else(|| power_on_pkeys(block)),
                };
                let _ = r.to_bytes(&mut data);
                (0, data)
            }
            _ => (unsupported, data),
        }
    }

    /// The P_Key table of port `p` of `n` (its first PartitionCap entries).
    pub fn pkeys(&self, n: NodeId, p: u8) -> Vec<u16> {
        let ag = &self.agents[n.idx()];
        (0..PARTITION_CAP / attr::pkey_table::BLOCK as u16)
            .flat_map(|b| ag.pkeys.get(&(p, b)).copied().unwrap_or_else(|| power_on_pkeys(b)))
            .collect()
    }
}

/// P_Key entries of every port's table (NodeInfo.PartitionCap and
/// SwitchInfo.PartitionEnforcementCap): one block.
const PARTITION_CAP: u16 = 32;

/// Block `b` of a table after power-up: the default P_Key 0xFFFF at index 0.
fn power_on_pkeys(b: u16) -> [u16; attr::pkey_table::BLOCK] {
    let mut k = [0u16; attr::pkey_table::BLOCK];
    if b == 0 {
        k[0] = 0xffff;
    }
    k
}

/// Marker written into byte 0 of a queued buffer to deliver only 100 bytes.
const TRUNCATED_MARK: u8 = 0;

impl Transport for InProcess {
    fn send(&mut self, mad: &[u8; MAD_LEN]) -> Result<(), TransportError> {
        self.stats.requests += 1;
        let mut req = Smp::from_bytes(mad).map_err(|e| TransportError::BadRequest(e.to_string()))?;
        // The SMP is forwarded and turned around in place (no copies of it).
        let Route::Directed(dr) = &mut req.route else {
            // LID-routed SMPs are not needed before LIDs exist; the SM uses DR only.
            self.stats.dropped += 1;
            return Ok(());
        };
        let Some((at, in_port)) = self.walk_out(dr) else {
            self.stats.dropped += 1;
            return Ok(());
        };
        let fault = if self.faults.is_empty() {
            None
        } else {
            self.faults.get(&self.fabric.nodes[at.idx()].node_guid).copied()
        };
        if fault == Some(Fault::Silent) {
            self.stats.dropped += 1;
            return Ok(());
        }
        let (mut status, data) = self.answer(at, in_port, &req);
        if let Some(Fault::BadStatus(s)) = fault {
            status = s;
        }
        let mut resp = req.into_response(status, data);
        if fault == Some(Fault::WrongAttribute) {
            resp.attr_id = AttrId::Unknown(0xff00);
        }
        // Returning: walk back along ReturnPath.
        let Route::Directed(dr) = &mut resp.route else {
            unreachable!("request was directed")
        };
        if !self.walk_back(at, dr) {
            self.stats.dropped += 1;
            return Ok(());
        }
        self.queue(&resp, fault);
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8; MAD_LEN]) -> Option<usize> {
        let b = self.outbox.pop_front()?;
        buf.copy_from_slice(&b[..]);
        let len = if b[0] == TRUNCATED_MARK {
            buf[0] = 1;
            100
        } else {
            MAD_LEN
        };
        self.pool.push(b);
        Some(len)
    }
}
