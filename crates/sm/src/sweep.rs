//! Sweeps: discovery by directed-route SMPs, LID assignment, routing, programming.
//!
//! A heavy sweep (OpenSM `do_sweep`, reference §1.4 and §3.3):
//! 1. **discover**: breadth-first from the SM's node by DR SMPs, up to
//!    `max_in_flight` outstanding: NodeInfo → NodeDescription, SwitchInfo and PortInfo
//!    of every port → NodeInfo through every port whose PortInfo says LinkUp. A NodeInfo
//!    answer with a known GUID is a new link to a known node, unless that node's port is
//!    already cabled elsewhere: then it is a duplicate GUID, reported and not followed.
//! 2. **lids**: [`crate::lids::assign`] honouring the guid2lid state of earlier sweeps.
//! 3. **routing**: [`crate::routing::route`] with the engine list.
//! 4. **program**: PortInfo (LID, LMC), SwitchInfo (LinearFDBTop, clear
//!    PortStateChange), LFT blocks of 64 entries (only blocks that differ from what
//!    this SM programmed before), SL2VL tables when the engine uses several VLs, then
//!    every cabled port to ARMED and then ACTIVE. "Subnet up".
//!
//! Every bad reply (MAD status, wrong attribute, truncated, unparsable, duplicate GUID,
//! no answer after retries) becomes an [`Issue`] in the report and the sweep carries
//! on with the rest of the fabric. A light sweep reads SwitchInfo.PortStateChange from
//! every switch and takes Trap 128 notices; either triggers a heavy sweep whose report
//! lists what changed.
//!
//! The pipeline over one SMP transport and one set of tables (discover → LIDs → route
//! → program) stays in this file, since light and heavy sweeps share every step but the
//! first; its children hold what it reads and writes: `model` (discovery's records and
//! the fabric built from them), `report` (issues and the sweep report) and `pkeys` (the
//! P_Key step).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::time::Instant;

use fabric::{Fabric, Guid, NodeId, NodeKind};
use wire::mad::attr::{self, NodeType, PhysState, PortState};
use wire::mad::{AttrId, DrRoute, Method, Route, Smp};

use crate::lids::{self, Guid2Lid};
use crate::routing::{self, EngineKind, RouteOptions};
use crate::run::Phase;
use crate::sma::{MAD_LEN, Transport};
use crate::tables::{NO_ROUTE, RoutingTables};
use crate::validate;

mod model;
mod pkeys;
mod report;
use model::{DNode, DPort, Req, build_model, end_path, lids_of, sm_ports_of};
pub use pkeys::PkeyReport;
use report::path_str;
pub use report::{Issue, SweepReport};

/// Sweep settings.
#[derive(Clone, Debug)]
pub struct SweepOptions {
    pub engines: Vec<EngineKind>,
    pub lmc: u8,
    pub route: RouteOptions,
    /// SMPs outstanding at once (OpenSM's `max_wire_smps` defaults to 4).
    pub max_in_flight: usize,
    /// Resends before a node is reported as not answering (OpenSM: 3).
    pub retries: u8,
    /// Validate the tables after routing.
    pub validate: bool,
    /// Partitions to program (`partitions.conf`); `None`: P_Key tables are left as
    /// the ports hold them.
    pub partitions: Option<std::sync::Arc<crate::partitions::PartitionsConf>>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            engines: vec![EngineKind::MinHop],
            lmc: 0,
            route: RouteOptions::default(),
            max_in_flight: 64,
            retries: 3,
            validate: true,
            partitions: None,
        }
    }
}

/// The Subnet Manager: state that persists across sweeps.
pub struct SubnetManager {
    pub opts: SweepOptions,
    /// LIDs handed out so far (OpenSM's guid2lid cache).
    pub guid2lid: Guid2Lid,
    /// The fabric as last discovered, and its tables. The tables are also what this SM
    /// last programmed: the next heavy sweep sends only LFT blocks that differ.
    pub fabric: Option<Fabric>,
    pub tables: Option<RoutingTables>,
    last_links: BTreeSet<(Guid, u8, Guid, u8)>,
    last_nodes: BTreeSet<Guid>,
    /// DR paths of known switches, for light sweeps.
    switch_paths: Vec<(Guid, Vec<u8>)>,
    tid: u64,
    buf: Box<[u8; MAD_LEN]>,
    /// A heavy sweep is due (trap or change seen).
    pub need_heavy: bool,
    sm_port_num: u8,
    /// Other SMs' ports seen by the last discovery: CA ports (not ours) whose
    /// CapabilityMask has IsSM, with their port GUID and directed route.
    pub sm_ports: Vec<(Guid, Vec<u8>)>,
    /// LIDs the ports had when last discovered (port GUID → first and last LID),
    /// whoever assigned them: a standby SM taking over keeps them via `guid2lid`.
    pub seen_lids: BTreeMap<Guid, (fabric::Lid, fabric::Lid)>,
    /// What the last [`SubnetManager::discover_only`] found, for
    /// [`SubnetManager::heavy_sweep_reusing_discovery`].
    last_discovery: Option<Vec<DNode>>,
    /// The partitions of the last heavy sweep, and the P_Key tables this SM wrote.
    pkey_plan: Option<crate::partitions::PkeyPlan>,
    pkeys_written: BTreeMap<(Guid, u8), Vec<u16>>,
}

impl std::fmt::Debug for SubnetManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubnetManager").field("opts", &self.opts).finish()
    }
}

/// What [`SubnetManager::pump`] calls with each good reply: the request it answers, the
/// DR path, the parsed response.
type ReplyHandler<'a> = dyn FnMut(&mut SubnetManager, &mut Exchange, Req, &[u8], &Smp) + 'a;

/// What [`SubnetManager::pump_fed`] calls when its queue runs dry, to queue more
/// requests (producing them as the window opens instead of all up front).
type Feed<'a> = dyn FnMut(&mut SubnetManager, &mut Exchange) + 'a;

/// One encoded request MAD (recycled through [`Exchange::pool`]).
type Mad = Box<[u8; MAD_LEN]>;

/// Per-sweep exchange state: the request queue, outstanding requests, counters.
/// Requests are kept as the bytes sent, so a resend is the same MAD and a reply's DR
/// path and attribute are read back from the request.
struct Exchange {
    queue: VecDeque<(Req, Mad)>,
    pending: HashMap<u64, (Req, Mad, u8), BuildHasherDefault<TidHasher>>,
    pool: Vec<Mad>,
    sent: u64,
    received: u64,
    resends: u64,
    issues: Vec<Issue>,
    traps: Vec<u16>,
}

impl Exchange {
    fn new() -> Exchange {
        Exchange {
            queue: VecDeque::new(),
            pending: HashMap::default(),
            pool: Vec::new(),
            sent: 0,
            received: 0,
            resends: 0,
            issues: Vec::new(),
            traps: Vec::new(),
        }
    }
}

/// Hasher for transaction ids (distinct small integers): one multiply, no SipHash.
#[derive(Default)]
struct TidHasher(u64);

impl std::hash::Hasher for TidHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The DR path (egress ports, hop 1 first) of an encoded request.
fn mad_path(mad: &[u8; MAD_LEN]) -> &[u8] {
    let p = wire::mad::smp::Packet::new_unchecked(&mad[..]);
    let n = p.hop_cnt().min(wire::mad::smp::MAX_HOPS) as usize;
    &mad[128 + 1..128 + 1 + n]
}

/// The attribute of an encoded request.
fn mad_attr(mad: &[u8; MAD_LEN]) -> AttrId {
    AttrId::from(u16::from_be_bytes([mad[16], mad[17]]))
}

impl SubnetManager {
    /// A fresh SM; `sm_port_num` is the port the SM uses when it runs on a CA (ignored
    /// on a switch, whose SM uses port 0).
    pub fn new(opts: SweepOptions, sm_port_num: u8) -> SubnetManager {
        SubnetManager {
            opts,
            guid2lid: Guid2Lid::default(),
            fabric: None,
            tables: None,
            last_links: BTreeSet::new(),
            last_nodes: BTreeSet::new(),
            switch_paths: Vec::new(),
            tid: 1,
            buf: Box::new([0; MAD_LEN]),
            need_heavy: true,
            sm_port_num,
            sm_ports: Vec::new(),
            seen_lids: BTreeMap::new(),
            last_discovery: None,
            pkey_plan: None,
            pkeys_written: BTreeMap::new(),
        }
    }

    #[expect(clippy::too_many_arguments, reason = "the fields of one SMP")]
    fn enqueue(
        &mut self,
        x: &mut Exchange,
        req: Req,
        path: &[u8],
        method: Method,
        attr: AttrId,
        attr_mod: u32,
        data: [u8; 64],
    ) {
        let dr = match DrRoute::new(path) {
            Ok(d) => d,
            Err(e) => {
                x.issues.push(Issue::Transport {
                    error: format!("DR path {}: {e}", path_str(path)),
                });
                return;
            }
        };
        let tid = self.tid;
        self.tid += 1;
        let mut smp = Smp::get(attr, attr_mod, tid, Route::Directed(dr));
        smp.method = method;
        smp.data = data;
        let mut mad = x.pool.pop().unwrap_or_else(|| Box::new([0; MAD_LEN]));
        if let Err(e) = smp.to_bytes(&mut mad[..]) {
            x.issues.push(Issue::Transport { error: e.to_string() });
            x.pool.push(mad);
            return;
        }
        x.queue.push_back((req, mad));
    }

    fn get(&mut self, x: &mut Exchange, req: Req, path: &[u8], attr: AttrId, attr_mod: u32) {
        self.enqueue(x, req, path, Method::Get, attr, attr_mod, [0; 64]);
    }

    /// [`SubnetManager::pump_fed`] with everything already queued.
    fn pump(&mut self, tr: &mut dyn Transport, x: &mut Exchange, on_reply: &mut ReplyHandler<'_>) {
        self.pump_fed(tr, x, on_reply, &mut |_, _| {});
    }

    /// The next request to send: the queue's head, after asking `feed` for more when
    /// the queue is empty.
    fn next_request(&mut self, x: &mut Exchange, feed: &mut Feed<'_>) -> Option<(Req, Mad)> {
        if x.queue.is_empty() {
            feed(self, x);
        }
        x.queue.pop_front()
    }

    /// Send queued requests (and what `feed` adds when the queue runs dry) and hand
    /// every answer to `on_reply` until nothing is queued or outstanding. Unanswered
    /// requests are resent, then reported.
    fn pump_fed(
        &mut self,
        tr: &mut dyn Transport,
        x: &mut Exchange,
        on_reply: &mut ReplyHandler<'_>,
        feed: &mut Feed<'_>,
    ) {
        loop {
            while x.pending.len() < self.opts.max_in_flight.max(1) {
                let Some((req, mad)) = self.next_request(x, feed) else {
                    break;
                };
                self.transmit(tr, x, req, mad, 0);
            }
            if x.pending.is_empty() && x.queue.is_empty() {
                // Nothing asked: do not wait out a real transport's receive timeout.
                break;
            }
            let mut got_any = false;
            while let Some(len) = tr.recv(&mut self.buf) {
                got_any = true;
                x.received += 1;
                self.dispatch(x, len, on_reply);
                if x.pending.is_empty() && x.queue.is_empty() {
                    // All answered: do not wait out a real transport's receive timeout.
                    break;
                }
                // Keep the wire full while answers arrive.
                while x.pending.len() < self.opts.max_in_flight.max(1) {
                    let Some((req, mad)) = self.next_request(x, feed) else {
                        break;
                    };
                    self.transmit(tr, x, req, mad, 0);
                }
            }
            if x.pending.is_empty() && x.queue.is_empty() {
                feed(self, x);
                if x.queue.is_empty() {
                    break;
                }
                continue;
            }
            if !got_any && !x.pending.is_empty() {
                // Timeout round: resend or give up, in tid order (deterministic).
                let mut tids: Vec<u64> = x.pending.keys().copied().collect();
                tids.sort_unstable();
                for tid in tids {
                    let (req, mad, tries) = x.pending.remove(&tid).expect("pending");
                    if tries < self.opts.retries {
                        x.resends += 1;
                        self.transmit(tr, x, req, mad, tries + 1);
                    } else {
                        x.issues.push(Issue::NoAnswer {
                            path: mad_path(&mad).to_vec(),
                            attr: mad_attr(&mad).name(),
                        });
                        x.pool.push(mad);
                    }
                }
            }
        }
    }

    fn transmit(&mut self, tr: &mut dyn Transport, x: &mut Exchange, req: Req, mad: Mad, tries: u8) {
        match tr.send(&mad) {
            Ok(()) => {
                x.sent += 1;
                let tid = u64::from_be_bytes(mad[8..16].try_into().expect("8 bytes"));
                x.pending.insert(tid, (req, mad, tries));
            }
            Err(e) => {
                x.issues.push(Issue::Transport { error: e.to_string() });
                x.pool.push(mad);
            }
        }
    }

    fn dispatch(&mut self, x: &mut Exchange, len: usize, on_reply: &mut ReplyHandler<'_>) {
        let bytes = &self.buf[..len.min(MAD_LEN)];
        // The TID sits in the common header (bytes 8..16) even when the rest is short.
        let tid = if len >= 16 {
            u64::from_be_bytes(bytes[8..16].try_into().expect("8 bytes"))
        } else {
            0
        };
        if len < MAD_LEN {
            if let Some((_, mad, _)) = x.pending.remove(&tid) {
                x.issues.push(Issue::Truncated {
                    path: mad_path(&mad).to_vec(),
                    attr: mad_attr(&mad).name(),
                    len,
                });
                x.pool.push(mad);
            }
            return;
        }
        let resp = match Smp::from_bytes(bytes) {
            Ok(r) => r,
            Err(e) => {
                if let Some((_, mad, _)) = x.pending.remove(&tid) {
                    x.issues.push(Issue::Unparsable {
                        path: mad_path(&mad).to_vec(),
                        attr: mad_attr(&mad).name(),
                        error: e.to_string(),
                    });
                    x.pool.push(mad);
                }
                return;
            }
        };
        if resp.method == Method::Trap {
            if let Ok(n) = attr::notice::Notice::parse(&resp.data)
                && let Some(t) = n.details.trap_number()
            {
                x.traps.push(t);
                if t == 128 {
                    self.need_heavy = true;
                }
            }
            return;
        }
        let Some((req, mad, _)) = x.pending.remove(&resp.tid) else {
            return;
        };
        let asked = mad_attr(&mad);
        if resp.attr_id != asked {
            x.issues.push(Issue::WrongAttribute {
                path: mad_path(&mad).to_vec(),
                expected: asked.name(),
                got: u16::from(resp.attr_id),
            });
        } else if resp.status != 0 {
            x.issues.push(Issue::BadStatus {
                path: mad_path(&mad).to_vec(),
                attr: asked.name(),
                status: resp.status,
            });
        } else {
            on_reply(self, x, req, mad_path(&mad), &resp);
        }
        x.pool.push(mad);
    }

    /// Discover the fabric; returns the nodes found.
    fn discover(&mut self, tr: &mut dyn Transport, x: &mut Exchange) -> Vec<DNode> {
        let mut nodes: Vec<DNode> = Vec::new();
        let mut by_guid: HashMap<Guid, u32> = HashMap::new();
        self.get(
            x,
            Req::NodeInfo {
                parent: u32::MAX,
                port: 0,
            },
            &[],
            AttrId::NodeInfo,
            0,
        );
        let sm_port = self.sm_port_num;
        let mut handler = |sm: &mut SubnetManager, x: &mut Exchange, req: Req, path: &[u8], resp: &Smp| match req {
            Req::NodeInfo { parent, port } => {
                let Ok(ni) = attr::node_info::Repr::from_bytes(&resp.data) else {
                    x.issues.push(Issue::Unparsable {
                        path: path.to_vec(),
                        attr: "NodeInfo",
                        error: "short".into(),
                    });
                    return;
                };
                let lp = ni.local_port_num;
                if let Some(&k) = by_guid.get(&ni.node_guid) {
                    let kk = k as usize;
                    let slot = nodes[kk].ports.get(lp as usize).map(|p| p.peer);
                    let here = (parent != u32::MAX).then_some((parent, port));
                    match slot {
                        Some(None) if here.is_some() => {
                            let (pa, pp) = here.expect("checked");
                            nodes[kk].ports[lp as usize].peer = Some((pa, pp));
                            nodes[pa as usize].ports[pp as usize].peer = Some((k, lp));
                            if nodes[kk].kind != NodeKind::Switch {
                                nodes[kk].port_guids[lp as usize] = ni.port_guid;
                                sm.get(
                                    x,
                                    Req::PortInfo { node: k, port: lp },
                                    path,
                                    AttrId::PortInfo,
                                    lp as u32,
                                );
                            }
                        }
                        Some(Some(prev)) if Some(prev) == here => {}
                        _ => x.issues.push(Issue::DuplicateGuid {
                            guid: ni.node_guid,
                            path: path.to_vec(),
                            first_path: nodes[kk].path.clone(),
                        }),
                    }
                    return;
                }
                let kind = match ni.node_type {
                    NodeType::Switch => NodeKind::Switch,
                    NodeType::Router => NodeKind::Router,
                    _ => NodeKind::Ca,
                };
                let k = nodes.len() as u32;
                let np = ni.num_ports;
                let mut n = DNode {
                    guid: ni.node_guid,
                    kind,
                    num_ports: np,
                    sys_guid: ni.system_image_guid,
                    vendor: ni.vendor_id,
                    device: ni.device_id,
                    port_guids: vec![Guid(0); np as usize + 1],
                    desc: String::new(),
                    path: path.to_vec(),
                    ports: vec![DPort::default(); np as usize + 1],
                    port_state_change: false,
                    partition_cap: ni.partition_cap,
                    enforcement_cap: 0,
                };
                if kind != NodeKind::Switch && (lp as usize) < n.port_guids.len() {
                    n.port_guids[lp as usize] = ni.port_guid;
                }
                if parent != u32::MAX && (lp as usize) < n.ports.len() {
                    n.ports[lp as usize].peer = Some((parent, port));
                    nodes[parent as usize].ports[port as usize].peer = Some((k, lp));
                }
                nodes.push(n);
                by_guid.insert(ni.node_guid, k);
                sm.get(x, Req::NodeDesc { node: k }, path, AttrId::NodeDescription, 0);
                if kind == NodeKind::Switch {
                    sm.get(x, Req::SwitchInfo { node: k }, path, AttrId::SwitchInfo, 0);
                    for p in 0..=np {
                        sm.get(x, Req::PortInfo { node: k, port: p }, path, AttrId::PortInfo, p as u32);
                    }
                } else {
                    // The SM's own CA: its SM port (hop 0 reports LocalPortNum of it).
                    let p = if parent == u32::MAX {
                        if lp == 0 { sm_port } else { lp }
                    } else {
                        lp
                    };
                    if parent == u32::MAX && (p as usize) < nodes[k as usize].port_guids.len() {
                        nodes[k as usize].port_guids[p as usize] = ni.port_guid;
                    }
                    sm.get(x, Req::PortInfo { node: k, port: p }, path, AttrId::PortInfo, p as u32);
                }
            }
            Req::NodeDesc { node } => {
                let end = resp.data.iter().position(|&b| b == 0).unwrap_or(64);
                nodes[node as usize].desc = String::from_utf8_lossy(&resp.data[..end]).into_owned();
            }
            Req::SwitchInfo { node } => {
                if let Ok(si) = attr::switch_info::Repr::from_bytes(&resp.data) {
                    nodes[node as usize].port_state_change = si.port_state_change;
                    nodes[node as usize].enforcement_cap = si.partition_enforcement_cap;
                }
            }
            Req::PortInfo { node, port } => {
                let Ok(pi) = attr::port_info::Repr::from_bytes(&resp.data) else {
                    return;
                };
                let n = &mut nodes[node as usize];
                let Some(dp) = n.ports.get_mut(port as usize) else {
                    return;
                };
                dp.up = pi.phys_state == PhysState::LinkUp && pi.port_state != PortState::Down;
                dp.width = pi.link_width_active;
                dp.speed = pi.link_speed_active;
                dp.speed_ext = pi.link_speed_ext_active;
                dp.cap_mask = pi.capability_mask;
                dp.state = Some(pi.port_state);
                dp.lid = pi.lid.0;
                dp.lmc = pi.lmc;
                let extend = dp.up
                    && dp.peer.is_none()
                    && port != 0
                    && (n.kind == NodeKind::Switch || n.path.is_empty())
                    && n.path.len() < 63;
                if extend {
                    let mut p2 = n.path.clone();
                    p2.push(port);
                    sm.get(x, Req::NodeInfo { parent: node, port }, &p2, AttrId::NodeInfo, 0);
                }
            }
            Req::Set => {}
        };
        self.pump(tr, x, &mut handler);
        nodes
    }

    /// Run a heavy sweep over `tr`.
    pub fn heavy_sweep(&mut self, tr: &mut dyn Transport) -> SweepReport {
        self.last_discovery = None;
        self.heavy_sweep_from(tr, None)
    }

    fn heavy_sweep_from(&mut self, tr: &mut dyn Transport, found: Option<Vec<DNode>>) -> SweepReport {
        let mut rep = SweepReport::default();
        let mut x = Exchange::new();
        self.need_heavy = false;
        let t0 = Instant::now();
        let nodes = match found {
            Some(n) => n,
            None => self.discover(tr, &mut x),
        };
        self.sm_ports = sm_ports_of(&nodes);
        rep.phases.push(Phase {
            name: "discover",
            micros: t0.elapsed().as_micros() as u64,
        });
        // Model of what was found.
        let t0 = Instant::now();
        let (f, ids) = build_model(&nodes);
        rep.switches = f.count(NodeKind::Switch);
        rep.cas = f.count(NodeKind::Ca);
        rep.links = f.links.len();
        rep.phases.push(Phase {
            name: "model",
            micros: t0.elapsed().as_micros() as u64,
        });
        self.diff_topology(&f, &mut rep);
        if nodes.is_empty() {
            rep.issues.push(Issue::Routing {
                error: "the SM's own node did not answer".into(),
            });
            return finish(rep, x);
        }
        let sm_node = NodeId(0);
        let sm_port = if nodes[0].kind == NodeKind::Switch {
            0
        } else {
            self.sm_port_num.max(1)
        };
        let t0 = Instant::now();
        let assigned = lids::assign(&f, (sm_node, sm_port), self.opts.lmc, Some(&self.guid2lid));
        rep.phases.push(Phase {
            name: "lids",
            micros: t0.elapsed().as_micros() as u64,
        });
        let (mut t, lrep) = match assigned {
            Ok(v) => v,
            Err(e) => {
                rep.issues.push(Issue::Routing { error: e.to_string() });
                return finish(rep, x);
            }
        };
        rep.lids = lrep;
        let t0 = Instant::now();
        let flat = f.freeze();
        let routed = routing::route(&f, &flat, &mut t, &self.opts.engines, &self.opts.route);
        rep.phases.push(Phase {
            name: "routing",
            micros: t0.elapsed().as_micros() as u64,
        });
        match routed {
            Ok(o) => rep.outcome = Some(o),
            Err(e) => {
                rep.issues.push(Issue::Routing { error: e.to_string() });
                return finish(rep, x);
            }
        }
        rep.vls_used = t.vls_used;
        let t0 = Instant::now();
        // P_Keys before the ports go ACTIVE, as OpenSM's pkey manager runs first.
        self.program_pkeys(tr, &mut x, &f, &nodes, (sm_node, sm_port), &mut rep);
        self.program(tr, &mut x, &f, &nodes, &ids, &t, &mut rep);
        rep.phases.push(Phase {
            name: "program",
            micros: t0.elapsed().as_micros() as u64,
        });
        if self.opts.validate {
            let t0 = Instant::now();
            rep.validation = Some(validate::validate(&flat, &t));
            rep.phases.push(Phase {
                name: "validate",
                micros: t0.elapsed().as_micros() as u64,
            });
        }
        let new_cache = Guid2Lid::from_tables(&f, &t);
        for (g, (lo, _)) in &new_cache.map {
            if let Some((old, _)) = self.guid2lid.map.get(g)
                && old != lo
            {
                rep.changes
                    .push(format!("LID of port {g} moved from {} to {}", old.0, lo.0));
            }
        }
        self.guid2lid.map.extend(new_cache.map);
        self.switch_paths = nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Switch)
            .map(|n| (n.guid, n.path.clone()))
            .collect();
        let mut rep = finish(rep, x);
        rep.subnet_up = true;
        self.fabric = Some(f);
        self.tables = Some(t);
        rep
    }

    fn diff_topology(&mut self, f: &Fabric, rep: &mut SweepReport) {
        let links: BTreeSet<(Guid, u8, Guid, u8)> = f
            .links
            .iter()
            .map(|l| {
                let a = (f.nodes[l.a.node.idx()].node_guid, l.a.port);
                let b = (f.nodes[l.b.node.idx()].node_guid, l.b.port);
                let (x, y) = if a <= b { (a, b) } else { (b, a) };
                (x.0, x.1, y.0, y.1)
            })
            .collect();
        let nodes: BTreeSet<Guid> = f.nodes.iter().map(|n| n.node_guid).collect();
        if !self.last_nodes.is_empty() {
            for g in self.last_nodes.difference(&nodes) {
                rep.changes.push(format!("node {g} is gone"));
            }
            for g in nodes.difference(&self.last_nodes) {
                rep.changes.push(format!("node {g} is new"));
            }
            for l in self.last_links.difference(&links) {
                rep.changes
                    .push(format!("link {}/P{} - {}/P{} went down", l.0, l.1, l.2, l.3));
            }
            for l in links.difference(&self.last_links) {
                rep.changes
                    .push(format!("link {}/P{} - {}/P{} came up", l.0, l.1, l.2, l.3));
            }
        }
        self.last_links = links;
        self.last_nodes = nodes;
    }

    #[expect(clippy::too_many_arguments, reason = "one internal phase with its context")]
    fn program(
        &mut self,
        tr: &mut dyn Transport,
        x: &mut Exchange,
        f: &Fabric,
        nodes: &[DNode],
        ids: &[NodeId],
        t: &RoutingTables,
        rep: &mut SweepReport,
    ) {
        let _ = (f, ids);
        let max_lid = t.lid_owner.len().saturating_sub(1) as u16;
        // PortInfo:MasterSMLID of every port is this SM's LID (traps go there).
        let sm_lid = match nodes.first() {
            Some(n) if n.kind == NodeKind::Switch => t.lid_of(NodeId(0), 0),
            Some(_) => t.lid_of(NodeId(0), self.sm_port_num.max(1)),
            None => None,
        }
        .unwrap_or(fabric::Lid(0));
        let mut pbuf = Vec::with_capacity(64);
        // 1. LIDs (PortInfo Set), SwitchInfo.
        for (i, n) in nodes.iter().enumerate() {
            let node = NodeId(i as u32);
            if n.kind == NodeKind::Switch {
                if let Some(l) = t.lid_of(node, 0) {
                    let pi = attr::port_info::Repr {
                        lid: l,
                        lmc: 0,
                        master_sm_lid: sm_lid,
                        port_state: PortState::NoChange,
                        ..Default::default()
                    };
                    let mut d = [0u8; 64];
                    let _ = pi.to_bytes(&mut d);
                    self.enqueue(x, Req::Set, &n.path, Method::Set, AttrId::PortInfo, 0, d);
                }
                let si = attr::switch_info::Repr {
                    linear_fdb_top: max_lid,
                    port_state_change: true,
                    ..Default::default()
                };
                let mut d = [0u8; 64];
                let _ = si.to_bytes(&mut d);
                self.enqueue(x, Req::Set, &n.path, Method::Set, AttrId::SwitchInfo, 0, d);
            } else {
                for p in 1..=n.num_ports {
                    let Some(l) = t.lid_of(node, p) else { continue };
                    let pi = attr::port_info::Repr {
                        lid: l,
                        lmc: t.lmc,
                        master_sm_lid: sm_lid,
                        port_state: PortState::NoChange,
                        ..Default::default()
                    };
                    let mut d = [0u8; 64];
                    let _ = pi.to_bytes(&mut d);
                    end_path(nodes, i, p, self.sm_port_num, &mut pbuf);
                    self.enqueue(x, Req::Set, &pbuf, Method::Set, AttrId::PortInfo, p as u32, d);
                }
            }
        }
        // 2. LFT blocks that changed since this SM's last sweep, block-major across
        // switches as OpenSM does, then SL2VL tables when several VLs are in use; both
        // produced as the window opens (millions of blocks on a large fabric).
        let switches: Vec<usize> = (0..nodes.len())
            .filter(|&i| nodes[i].kind == NodeKind::Switch)
            .collect();
        let (old_f, old_t) = (self.fabric.take(), self.tables.take());
        let old: Vec<Option<&[u8]>> = switches
            .iter()
            .map(|&i| {
                let (of, ot) = (old_f.as_ref()?, old_t.as_ref()?);
                let n = of.by_guid(nodes[i].guid)?;
                (of.nodes[n.idx()].kind == NodeKind::Switch)
                    .then(|| ot.lft.get(n.idx()).map_or(&[][..], |l| &l.ports[..]))
            })
            .collect();
        // What the last sweep programmed covers its LinearFDBTop, in whole blocks.
        let old_len = old_t.as_ref().map_or(0, |ot| {
            (ot.lid_owner.len().saturating_sub(1) / attr::lft::BLOCK + 1) * attr::lft::BLOCK
        });
        let block_of = |src: &[u8], lo: usize| -> [u8; 64] {
            let mut d = [NO_ROUTE; 64];
            if lo < src.len() {
                let hi = (lo + attr::lft::BLOCK).min(src.len());
                d[..hi - lo].copy_from_slice(&src[lo..hi]);
            }
            d
        };
        let blocks = (max_lid as usize / attr::lft::BLOCK) + 1;
        let (mut b, mut k) = (0usize, 0usize);
        let (mut sent, mut unchanged, mut changed) = (0u64, 0u64, 0u64);
        // SL2VL cursor: (switch, input port, output port).
        let (mut sk, mut si, mut so) = (0usize, 0usize, 0usize);
        let mut sl2vl_sent = 0u64;
        let mut feed = |sm: &mut SubnetManager, x: &mut Exchange| {
            let mut queued = 0;
            while b < blocks && !switches.is_empty() && queued < FEED_BATCH {
                let i = switches[k];
                let lo = b * attr::lft::BLOCK;
                let d = block_of(&t.lft[i].ports, lo);
                let same = match old[k] {
                    Some(o) if lo + attr::lft::BLOCK <= old_len => {
                        let ob = block_of(o, lo);
                        changed += ob.iter().zip(&d).filter(|(a, c)| a != c).count() as u64;
                        ob == d
                    }
                    _ => false,
                };
                if same {
                    unchanged += 1;
                } else {
                    sent += 1;
                    queued += 1;
                    let path = &nodes[i].path;
                    sm.enqueue(x, Req::Set, path, Method::Set, AttrId::LinearFwdTable, b as u32, d);
                }
                k += 1;
                if k == switches.len() {
                    k = 0;
                    b += 1;
                }
            }
            let Some(s2v) = &t.sl2vl else { return };
            while sk < switches.len() && queued < FEED_BATCH {
                let i = switches[sk];
                let ins = &s2v[i];
                if si >= ins.len() {
                    (sk, si, so) = (sk + 1, 0, 0);
                    continue;
                }
                if so >= ins[si].len() {
                    (si, so) = (si + 1, 0);
                    continue;
                }
                let outp = so;
                so += 1;
                if outp == 0 {
                    continue;
                }
                let mut d = [0u8; 64];
                let _ = attr::sl2vl::Repr { vl: ins[si][outp] }.to_bytes(&mut d);
                let am = ((si as u32) << 8) | outp as u32;
                sl2vl_sent += 1;
                queued += 1;
                sm.enqueue(x, Req::Set, &nodes[i].path, Method::Set, AttrId::SlToVlTable, am, d);
            }
        };
        self.pump_fed(tr, x, &mut |_, _, _, _, _| {}, &mut feed);
        rep.lft_blocks_sent += sent;
        rep.lft_blocks_unchanged += unchanged;
        rep.lft_entries_changed += changed;
        rep.sl2vl_sent += sl2vl_sent;
        drop(old);
        (self.fabric, self.tables) = (old_f, old_t);
        // 3. Port states: ARMED, then ACTIVE (OpenSM's link manager, reference §1.4).
        let mut active = 0u64;
        for state in [PortState::Armed, PortState::Active] {
            let (mut i, mut p) = (0usize, 0u16);
            let mut feed = |sm: &mut SubnetManager, x: &mut Exchange| {
                let mut queued = 0;
                while i < nodes.len() && queued < FEED_BATCH {
                    let n = &nodes[i];
                    if p > n.num_ports as u16 {
                        (i, p) = (i + 1, 0);
                        continue;
                    }
                    let port = p as u8;
                    p += 1;
                    let cabled = n.ports.get(port as usize).is_some_and(|d| d.peer.is_some());
                    if !(cabled || (n.kind == NodeKind::Switch && port == 0)) {
                        continue;
                    }
                    // Already there (a re-sweep, or a switch's port 0 that is always
                    // ACTIVE): a Set would be refused as an illegal transition.
                    let now = n.ports.get(port as usize).and_then(|d| d.state);
                    if now == Some(PortState::Active) || (state == PortState::Armed && now == Some(PortState::Armed)) {
                        if state == PortState::Active {
                            active += 1;
                        }
                        continue;
                    }
                    // Switch ports facing a CA enforce partitions (PortInfo byte 43,
                    // 0x0C = inbound + outbound, OpenSM `part_enforce both`).
                    let enforce = sm.enforced(i, port);
                    let mut pi = attr::port_info::Repr {
                        port_state: state,
                        master_sm_lid: sm_lid,
                        partition_enforcement_inbound: enforce,
                        partition_enforcement_outbound: enforce,
                        ..Default::default()
                    };
                    // Keep the LID/LMC just programmed (a Set writes every field).
                    let lp = if n.kind == NodeKind::Switch { 0 } else { port };
                    if let Some(l) = t.lid_of(NodeId(i as u32), lp) {
                        pi.lid = l;
                        pi.lmc = if n.kind == NodeKind::Switch { 0 } else { t.lmc };
                    }
                    let mut d = [0u8; 64];
                    let _ = pi.to_bytes(&mut d);
                    if n.kind == NodeKind::Switch {
                        pbuf.clear();
                        pbuf.extend_from_slice(&n.path);
                    } else {
                        end_path(nodes, i, port, sm.sm_port_num, &mut pbuf);
                    }
                    sm.enqueue(x, Req::Set, &pbuf, Method::Set, AttrId::PortInfo, port as u32, d);
                    queued += 1;
                    if state == PortState::Active {
                        active += 1;
                    }
                }
            };
            self.pump_fed(tr, x, &mut |_, _, _, _, _| {}, &mut feed);
        }
        rep.ports_active = active;
    }

    /// Discovery alone (what a DISCOVERING or STANDBY SM may do): walk the fabric by
    /// directed route, record the other SMs' ports in [`SubnetManager::sm_ports`], and
    /// program nothing. Returns (switches, CAs, issues).
    pub fn discover_only(&mut self, tr: &mut dyn Transport) -> (usize, usize, Vec<Issue>) {
        let mut x = Exchange::new();
        let nodes = self.discover(tr, &mut x);
        self.sm_ports = sm_ports_of(&nodes);
        self.seen_lids = lids_of(&nodes);
        let sw = nodes.iter().filter(|n| n.kind == NodeKind::Switch).count();
        let cas = nodes.len() - sw;
        self.last_discovery = Some(nodes);
        (sw, cas, x.issues)
    }

    /// A heavy sweep that takes the fabric found by the [`SubnetManager::discover_only`]
    /// just before instead of walking it again (an SM that has just decided to become
    /// MASTER); a plain heavy sweep when there is none.
    pub fn heavy_sweep_reusing_discovery(&mut self, tr: &mut dyn Transport) -> SweepReport {
        let found = self.last_discovery.take();
        self.heavy_sweep_from(tr, found)
    }

    /// A light sweep: read SwitchInfo of every known switch and collect traps. Returns
    /// true when a heavy sweep is due (PortStateChange set, a switch not answering, a
    /// Trap 128, or nothing swept yet).
    pub fn light_sweep(&mut self, tr: &mut dyn Transport) -> (bool, Vec<Issue>, Vec<u16>) {
        let mut x = Exchange::new();
        let paths = self.switch_paths.clone();
        for (k, (_, p)) in paths.iter().enumerate() {
            self.get(&mut x, Req::SwitchInfo { node: k as u32 }, p, AttrId::SwitchInfo, 0);
        }
        let mut changed = false;
        self.pump(tr, &mut x, &mut |_, _, req, _, resp| {
            if let Req::SwitchInfo { .. } = req
                && let Ok(si) = attr::switch_info::Repr::from_bytes(&resp.data)
                && si.port_state_change
            {
                changed = true;
            }
        });
        if !x.issues.is_empty() {
            changed = true;
        }
        let due = changed || self.need_heavy || self.switch_paths.is_empty();
        self.need_heavy |= due;
        (due, x.issues, x.traps)
    }

    /// One SM cycle: a light sweep, and a heavy sweep when it (or a trap) says so.
    pub fn poll(&mut self, tr: &mut dyn Transport) -> Option<SweepReport> {
        let (due, _, traps) = self.light_sweep(tr);
        if due {
            let mut r = self.heavy_sweep(tr);
            let mut t = traps;
            t.extend(r.traps);
            r.traps = t;
            Some(r)
        } else {
            None
        }
    }
}

/// Requests queued per call of a [`Feed`]: enough to keep any window full.
const FEED_BATCH: usize = 256;

/// Move the exchange counters and issues into the report (issues of the exchange
/// first, in the order they were met).
fn finish(mut rep: SweepReport, x: Exchange) -> SweepReport {
    rep.smps_sent = x.sent;
    rep.smps_received = x.received;
    rep.resends = x.resends;
    rep.traps = x.traps;
    let later = std::mem::take(&mut rep.issues);
    rep.issues = x.issues;
    rep.issues.extend(later);
    rep
}
