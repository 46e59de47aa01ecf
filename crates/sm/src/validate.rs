//! Validation of programmed tables: what ibdiagnet / ibdmchk would say about them.
//!
//! All checks are pure functions of a frozen fabric and a [`RoutingTables`]:
//!
//! - [`check_routes`]: every CA port reaches every CA LID (all LMC LIDs) by following
//!   the LFTs hop by hop; failures name the pair and where the walk stopped or looped;
//!   hop counts are compared with a breadth-first-search oracle (minimal or not).
//! - [`check_credit_loops`]: builds the channel dependency graph, one channel per
//!   (switch output port, VL), using the path SL (`RoutingTables::path_sl`) and the
//!   SL→VL tables (`RoutingTables::sl2vl`), and reports one cycle if there is any.
//!   This is the VL-aware version of ibdm's `CredLoops.cpp` algorithm (reference
//!   infiniband-sm.md §3.4): an edge channel(prev) → channel(next) for every
//!   consecutive pair of hops of every CA-to-CA route.
//! - [`port_loads`]: CA-to-CA routes per port (and LFT entries per port), with a
//!   histogram and the busiest port: the balance figure OpenSM's engines optimise.
//!
//! Routes are destination-based, so each check works one destination LID at a time and
//! memoises the outcome per switch: the cost is O(LIDs × (switches + CA ports)) rather
//! than O(pairs × hops), which keeps a 65k-host fabric in reach.
//!
//! One file because every check is a pure function of the same frozen fabric and tables
//! and they share the hop-by-hop LFT walk; the checks are about 960 lines, the rest
//! their tests.

use std::collections::BTreeMap;

use fabric::{Fabric, FlatFabric, Lid, NodeId, NodeKind};
use serde_json::{Value, json};

use crate::index::PortIndex;
use crate::tables::RoutingTables;

/// How many individual failures a report keeps (the counts are always complete).
pub const MAX_REPORTED: usize = 32;

/// Why a route did not arrive.
#[derive(Clone, Debug, PartialEq, Eq)]

pub enum Stop {
    /// The source port is not cabled.
    SourceDown,
    /// Switch `at` has no LFT entry for the LID.
    NoEntry { at: NodeId },
    /// Switch `at` forwards on `port`, which has no cable (or does not exist).
    DeadEnd { at: NodeId, port: u8 },
    /// The packet was delivered to the wrong end node or port.
    WrongTarget { at: NodeId, port: u8 },
    /// The LFTs send the packet around a loop of switches (listed in order).
    Loop { cycle: Vec<NodeId> },
}

/// One source port that does not reach one destination LID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteFailure {
    pub src: NodeId,
    pub src_port: u8,
    pub dst_lid: u16,
    pub dst: NodeId,
    pub dst_port: u8,
    pub stop: Stop,
}

impl RouteFailure {
    /// Human-readable form with node names.
    pub fn describe(&self, f: &Fabric) -> String {
        let name = |n: NodeId| f.nodes.get(n.idx()).map(|x| x.name.as_str()).unwrap_or("?");
        let why = match &self.stop {
            Stop::SourceDown => "source port not cabled".to_string(),
            Stop::NoEntry { at } => format!("no LFT entry at {}", name(*at)),
            Stop::DeadEnd { at, port } => format!("dead end at {}/P{port}", name(*at)),
            Stop::WrongTarget { at, port } => format!("delivered to {}/P{port}", name(*at)),
            Stop::Loop { cycle } => {
                format!(
                    "loop {}",
                    cycle.iter().map(|&n| name(n)).collect::<Vec<_>>().join(" -> ")
                )
            }
        };
        format!(
            "{}/P{} -> lid {} ({}/P{}): {why}",
            name(self.src),
            self.src_port,
            self.dst_lid,
            name(self.dst),
            self.dst_port
        )
    }
}

/// A route that arrives but is longer than the shortest path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonMinimal {
    pub src: NodeId,
    pub src_port: u8,
    pub dst_lid: u16,
    pub hops: u32,
    pub shortest: u32,
}

/// Result of [`check_routes`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteCheck {
    /// (source CA port, destination CA LID) pairs checked (all LMC LIDs).
    pub pairs: u64,
    /// Pairs whose route does not arrive.
    pub unreachable: u64,
    /// The first [`MAX_REPORTED`] failures.
    pub failures: Vec<RouteFailure>,
    /// Pairs that arrive on a path longer than the BFS shortest path.
    pub non_minimal: u64,
    /// The first [`MAX_REPORTED`] of those.
    pub non_minimal_examples: Vec<NonMinimal>,
    /// `hop_histogram[h]` = arriving pairs with h links on their path.
    pub hop_histogram: Vec<u64>,
    /// Longest arriving path in links.
    pub max_hops: u32,
}

impl RouteCheck {
    /// True when every pair arrives.
    pub fn all_reachable(&self) -> bool {
        self.unreachable == 0
    }
}

/// One channel of the dependency graph: an output port of a switch on one VL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Channel {
    pub node: NodeId,
    pub port: u8,
    pub vl: u8,
}

/// Result of [`check_credit_loops`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreditLoopCheck {
    /// Channels (switch output port × VL) that carry at least one CA-to-CA route.
    pub channels: usize,
    /// Distinct dependencies between them.
    pub dependencies: usize,
    /// SLs seen on routes and VLs used.
    pub sls_used: u8,
    pub vls_used: u8,
    /// One cycle, in dependency order (the last channel depends on the first), if any.
    pub cycle: Option<Vec<Channel>>,
}

impl CreditLoopCheck {
    /// The cycle as `name/Pn VLv -> …` (ibdm prints "Found credit loop on: …").
    pub fn describe(&self, f: &Fabric) -> Option<String> {
        let c = self.cycle.as_ref()?;
        let mut s: Vec<String> = c
            .iter()
            .map(|ch| {
                format!(
                    "{}/P{} VL{}",
                    f.nodes.get(ch.node.idx()).map(|n| n.name.as_str()).unwrap_or("?"),
                    ch.port,
                    ch.vl
                )
            })
            .collect();
        if let Some(first) = s.first().cloned() {
            s.push(first);
        }
        Some(s.join(" -> "))
    }
}

/// Routes per port, from [`port_loads`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortLoads {
    /// CA-to-CA routes leaving each cabled switch port: `(node, port, routes, lft_lids)`,
    /// where `lft_lids` counts CA LIDs whose LFT entry points at that port.
    pub ports: Vec<PortLoad>,
    /// Most routes on one switch-to-switch port, and on any switch port.
    pub max_routes_isl: u64,
    pub max_routes_any: u64,
    /// The busiest switch-to-switch port.
    pub busiest_isl: Option<(NodeId, u8)>,
    /// Most CA LIDs routed out of one switch-to-switch port.
    pub max_lids_isl: u64,
    /// routes → number of switch-to-switch ports carrying that many.
    pub isl_histogram: BTreeMap<u64, u32>,
}

/// The load of one switch output port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortLoad {
    pub node: NodeId,
    pub port: u8,
    /// True when the far end is a switch.
    pub isl: bool,
    pub routes: u64,
    pub lft_lids: u64,
}

/// Everything [`validate`] checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validation {
    pub routes: RouteCheck,
    pub credit_loops: CreditLoopCheck,
    pub loads: PortLoads,
}

impl Validation {
    /// True when all pairs arrive and there is no credit loop.
    pub fn ok(&self) -> bool {
        self.routes.all_reachable() && self.credit_loops.cycle.is_none()
    }

    /// A JSON summary with node names (failures and examples capped at
    /// [`MAX_REPORTED`]).
    pub fn to_json(&self, f: &Fabric) -> Value {
        let name = |n: NodeId| f.nodes.get(n.idx()).map(|x| x.name.clone()).unwrap_or_default();
        let r = &self.routes;
        let c = &self.credit_loops;
        let l = &self.loads;
        json!({
            "ok": self.ok(),
            "routes": {
                "pairs": r.pairs,
                "unreachable": r.unreachable,
                "failures": r.failures.iter().map(|x| x.describe(f)).collect::<Vec<_>>(),
                "non_minimal": r.non_minimal,
                "non_minimal_examples": r.non_minimal_examples.iter().map(|x| json!({
                    "src": name(x.src), "src_port": x.src_port, "dst_lid": x.dst_lid,
                    "hops": x.hops, "shortest": x.shortest})).collect::<Vec<_>>(),
                "hop_histogram": r.hop_histogram,
                "max_hops": r.max_hops,
            },
            "credit_loops": {
                "channels": c.channels,
                "dependencies": c.dependencies,
                "sls_used": c.sls_used,
                "vls_used": c.vls_used,
                "cycle": c.cycle.as_ref().map(|cy| cy.iter().map(|ch| json!({
                    "node": name(ch.node), "port": ch.port, "vl": ch.vl})).collect::<Vec<_>>()),
            },
            "balance": {
                "max_routes_isl": l.max_routes_isl,
                "max_routes_any": l.max_routes_any,
                "busiest_isl": l.busiest_isl.map(|(n, p)| json!({"node": name(n), "port": p})),
                "max_lids_isl": l.max_lids_isl,
                "isl_histogram": l.isl_histogram.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            },
        })
    }
}

/// Run every check.
pub fn validate(flat: &FlatFabric, t: &RoutingTables) -> Validation {
    let mut w = Walker::new(flat, t);
    Validation {
        routes: w.check_routes(),
        credit_loops: w.credit_loops(),
        loads: w.loads(),
    }
}

/// Reachability and hop counts; see the module documentation.
pub fn check_routes(flat: &FlatFabric, t: &RoutingTables) -> RouteCheck {
    Walker::new(flat, t).check_routes()
}

/// VL-aware credit-loop check; see the module documentation.
pub fn check_credit_loops(flat: &FlatFabric, t: &RoutingTables) -> CreditLoopCheck {
    Walker::new(flat, t).credit_loops()
}

/// Routes per port; see the module documentation.
pub fn port_loads(flat: &FlatFabric, t: &RoutingTables) -> PortLoads {
    Walker::new(flat, t).loads()
}

const UNSEEN: u32 = u32::MAX;
const INPROG: u32 = u32::MAX - 1;
const FAILED: u32 = u32::MAX - 2;

/// An end port that sends and receives: a CA (or router) port with a LID.
#[derive(Clone, Copy, Debug)]
struct EndPort {
    node: NodeId,
    port: u8,
    base: Lid,
    /// The switch it is cabled to (or the peer end node), and that port.
    peer: Option<(NodeId, u8)>,
}

/// Shared state: indexes plus scratch buffers reused across destinations.
struct Walker<'a> {
    flat: &'a FlatFabric,
    t: &'a RoutingTables,
    ports: PortIndex,
    ends: Vec<EndPort>,
    /// Destination LIDs: every LID owned by an end port, ascending.
    dst_lids: Vec<(Lid, NodeId, u8)>,
    // per-destination memo over nodes
    stamp: Vec<u32>,
    dist: Vec<u32>,
    fail_of: Vec<u32>,
    fails: Vec<Stop>,
    epoch: u32,
    stack: Vec<NodeId>,
    /// Nodes settled since `begin_dst`.
    settled: Vec<NodeId>,
    /// `ends` ranges sharing one peer switch (sources that route identically); an end
    /// cabled to anything else is a range of its own.
    groups: Vec<(u32, u32)>,
}

impl<'a> Walker<'a> {
    fn new(flat: &'a FlatFabric, t: &'a RoutingTables) -> Walker<'a> {
        let ports = PortIndex::new(flat, Some(t));
        let mut ends = Vec::new();
        for (i, lids) in t.base_lid.iter().enumerate() {
            let n = NodeId(i as u32);
            if i >= flat.num_nodes() || flat.kind(n) == NodeKind::Switch {
                continue;
            }
            for (p, &l) in lids.iter().enumerate().skip(1) {
                if l.0 != 0 {
                    ends.push(EndPort {
                        node: n,
                        port: p as u8,
                        base: l,
                        peer: ports.peer(n, p as u8),
                    });
                }
            }
        }
        let sw_peer = |e: &EndPort| match e.peer {
            Some((pn, _)) if flat.kind(pn) == NodeKind::Switch => pn.0,
            _ => u32::MAX,
        };
        ends.sort_by_key(|e| (sw_peer(e), e.node, e.port));
        let mut groups: Vec<(u32, u32)> = Vec::new();
        for (k, e) in ends.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if sw_peer(e) != u32::MAX && sw_peer(&ends[g.0 as usize]) == sw_peer(e) => g.1 = k as u32 + 1,
                _ => groups.push((k as u32, k as u32 + 1)),
            }
        }
        let mut dst_lids = Vec::new();
        for (l, o) in t.lid_owner.iter().enumerate() {
            if let Some((n, p)) = *o
                && n.idx() < flat.num_nodes()
                && flat.kind(n) != NodeKind::Switch
                && l != 0
            {
                dst_lids.push((Lid(l as u16), n, p));
            }
        }
        let nn = flat.num_nodes();
        Walker {
            flat,
            t,
            ports,
            ends,
            dst_lids,
            stamp: vec![0; nn],
            dist: vec![0; nn],
            fail_of: vec![0; nn],
            fails: Vec::new(),
            epoch: 0,
            stack: Vec::new(),
            settled: Vec::new(),
            groups,
        }
    }

    fn begin_dst(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        self.fails.clear();
        self.settled.clear();
    }

    #[inline]
    fn state(&self, n: NodeId) -> u32 {
        if self.stamp[n.idx()] == self.epoch {
            self.dist[n.idx()]
        } else {
            UNSEEN
        }
    }

    #[inline]
    fn set(&mut self, n: NodeId, v: u32) {
        self.stamp[n.idx()] = self.epoch;
        self.dist[n.idx()] = v;
    }

    /// Hops from switch `s` to (dn, dp) for LID `lid` following the LFTs, memoised
    /// for the current destination; `Err(i)` indexes `self.fails`.
    fn resolve(&mut self, s: NodeId, lid: Lid, dn: NodeId, dp: u8) -> Result<u32, u32> {
        match self.state(s) {
            FAILED => return Err(self.fail_of[s.idx()]),
            UNSEEN => {}
            INPROG => unreachable!("resolve is entered only from settled states"),
            d => return Ok(d),
        }
        self.stack.clear();
        let mut cur = s;
        // Walk forward until a settled switch, a terminal, or a failure.
        let outcome: Result<u32, u32> = loop {
            self.set(cur, INPROG);
            self.stack.push(cur);
            let out = self.t.lft.get(cur.idx()).and_then(|l| l.get(lid));
            let Some(op) = out else {
                self.fails.push(Stop::NoEntry { at: cur });
                break Err(self.fails.len() as u32 - 1);
            };
            if op == 0 {
                self.fails.push(Stop::WrongTarget { at: cur, port: 0 });
                break Err(self.fails.len() as u32 - 1);
            }
            let Some((pn, pp)) = self.ports.peer(cur, op) else {
                self.fails.push(Stop::DeadEnd { at: cur, port: op });
                break Err(self.fails.len() as u32 - 1);
            };
            if pn == dn && pp == dp {
                break Ok(0);
            }
            if self.flat.kind(pn) != NodeKind::Switch {
                self.fails.push(Stop::WrongTarget { at: pn, port: pp });
                break Err(self.fails.len() as u32 - 1);
            }
            match self.state(pn) {
                UNSEEN => cur = pn,
                INPROG => {
                    let from = self.stack.iter().position(|&x| x == pn).unwrap_or(0);
                    self.fails.push(Stop::Loop {
                        cycle: self.stack[from..].to_vec(),
                    });
                    break Err(self.fails.len() as u32 - 1);
                }
                FAILED => break Err(self.fail_of[pn.idx()]),
                d => break Ok(d),
            }
        };
        // Unwind: the last switch on the stack is `outcome` hops (+1 link to the next)
        // away; each earlier one is one more.
        match outcome {
            Ok(mut d) => {
                // `d` counts links from the last stacked switch's next hop onward (0 when
                // that next hop is the destination port); each stacked switch adds one.
                while let Some(n) = self.stack.pop() {
                    d += 1;
                    self.set(n, d);
                    self.settled.push(n);
                }
                Ok(self.dist[s.idx()])
            }
            Err(i) => {
                while let Some(n) = self.stack.pop() {
                    self.set(n, FAILED);
                    self.fail_of[n.idx()] = i;
                }
                Err(i)
            }
        }
    }

    /// Links from end port `e` to the destination, or the failure.
    fn route_from(&mut self, e: EndPort, lid: Lid, dn: NodeId, dp: u8) -> Result<u32, Stop> {
        let Some((pn, pp)) = e.peer else {
            return Err(Stop::SourceDown);
        };
        if pn == dn && pp == dp {
            return Ok(1);
        }
        if self.flat.kind(pn) != NodeKind::Switch {
            return Err(Stop::WrongTarget { at: pn, port: pp });
        }
        match self.resolve(pn, lid, dn, dp) {
            Ok(d) => Ok(d + 1),
            Err(i) => Err(self.fails[i as usize].clone()),
        }
    }

    fn check_routes(&mut self) -> RouteCheck {
        let mut rc = RouteCheck::default();
        let nn = self.flat.num_nodes();
        let mut bfs = vec![u32::MAX; nn];
        let mut queue: Vec<NodeId> = Vec::with_capacity(nn);
        let mut bfs_for: Option<(NodeId, u8)> = None;
        let dsts = std::mem::take(&mut self.dst_lids);
        let ends = std::mem::take(&mut self.ends);
        // Destinations behind the same switch share one BFS (distances to a CA port are
        // one more than to the switch it hangs off), so visit them grouped by that switch.
        let peer_of = |&(_, dn, dp): &(Lid, NodeId, u8)| self.ports.peer(dn, dp).map(|(n, _)| n.0).unwrap_or(u32::MAX);
        let mut order: Vec<usize> = (0..dsts.len()).collect();
        order.sort_by_key(|&i| (peer_of(&dsts[i]), dsts[i].0));
        for &i in &order {
            let (lid, dn, dp) = dsts[i];
            self.begin_dst();
            let key = match self.ports.peer(dn, dp) {
                Some((pn, _)) if self.flat.kind(pn) == NodeKind::Switch => (pn, 0),
                _ => (dn, dp),
            };
            if bfs_for != Some(key) {
                shortest_to_port(self.flat, &self.ports, dn, dp, &mut bfs, &mut queue);
                bfs_for = Some(key);
            }
            let dst_peer = self.ports.peer(dn, dp).map(|(n, _)| n);
            for gi in 0..self.groups.len() {
                let (ga, gb) = self.groups[gi];
                let e0 = ends[ga as usize];
                let is_dst = |e: &EndPort| e.node == dn && e.port == dp;
                match e0.peer {
                    Some((pn, _)) if self.flat.kind(pn) == NodeKind::Switch => {
                        // Every source behind pn takes pn's route: count them at once.
                        let c = (gb - ga) as u64 - u64::from(dst_peer == Some(pn));
                        if c == 0 {
                            continue;
                        }
                        rc.pairs += c;
                        match self.resolve(pn, lid, dn, dp) {
                            Ok(d) => {
                                let h = d + 1;
                                if rc.hop_histogram.len() <= h as usize {
                                    rc.hop_histogram.resize(h as usize + 1, 0);
                                }
                                rc.hop_histogram[h as usize] += c;
                                rc.max_hops = rc.max_hops.max(h);
                                let shortest = if bfs[pn.idx()] != u32::MAX {
                                    bfs[pn.idx()] + 1
                                } else {
                                    u32::MAX
                                };
                                if h > shortest {
                                    rc.non_minimal += c;
                                    for e in ends[ga as usize..gb as usize].iter().filter(|e| !is_dst(e)) {
                                        if rc.non_minimal_examples.len() >= MAX_REPORTED {
                                            break;
                                        }
                                        rc.non_minimal_examples.push(NonMinimal {
                                            src: e.node,
                                            src_port: e.port,
                                            dst_lid: lid.0,
                                            hops: h,
                                            shortest,
                                        });
                                    }
                                }
                            }
                            Err(i) => {
                                rc.unreachable += c;
                                for e in ends[ga as usize..gb as usize].iter().filter(|e| !is_dst(e)) {
                                    if rc.failures.len() >= MAX_REPORTED {
                                        break;
                                    }
                                    rc.failures.push(RouteFailure {
                                        src: e.node,
                                        src_port: e.port,
                                        dst_lid: lid.0,
                                        dst: dn,
                                        dst_port: dp,
                                        stop: self.fails[i as usize].clone(),
                                    });
                                }
                            }
                        }
                    }
                    _ => {
                        for &e in &ends[ga as usize..gb as usize] {
                            if is_dst(&e) {
                                continue;
                            }
                            rc.pairs += 1;
                            match self.route_from(e, lid, dn, dp) {
                                Ok(h) => {
                                    if rc.hop_histogram.len() <= h as usize {
                                        rc.hop_histogram.resize(h as usize + 1, 0);
                                    }
                                    rc.hop_histogram[h as usize] += 1;
                                    rc.max_hops = rc.max_hops.max(h);
                                }
                                Err(stop) => {
                                    rc.unreachable += 1;
                                    if rc.failures.len() < MAX_REPORTED {
                                        rc.failures.push(RouteFailure {
                                            src: e.node,
                                            src_port: e.port,
                                            dst_lid: lid.0,
                                            dst: dn,
                                            dst_port: dp,
                                            stop,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        self.dst_lids = dsts;
        self.ends = ends;
        rc
    }

    fn loads(&mut self) -> PortLoads {
        let np = self.ports.len();
        let mut routes = vec![0u64; np];
        let mut lids = vec![0u64; np];
        let mut cnt = vec![0u64; self.flat.num_nodes()];
        let mut touched: Vec<NodeId> = Vec::new();
        let mut order: Vec<NodeId> = Vec::new();
        let mut bucket_start: Vec<u32> = Vec::new();
        let dsts = std::mem::take(&mut self.dst_lids);
        let ends = std::mem::take(&mut self.ends);
        let switches: Vec<NodeId> = (0..self.flat.num_nodes() as u32)
            .map(NodeId)
            .filter(|&n| self.flat.kind(n) == NodeKind::Switch)
            .collect();
        for &(lid, dn, dp) in &dsts {
            for &s in &switches {
                if let Some(p) = self.t.lft[s.idx()].get(lid)
                    && let Some(i) = self.ports.idx(s, p)
                {
                    lids[i] += 1;
                }
            }
            self.begin_dst();
            let dst_peer = self.ports.peer(dn, dp).map(|(n, _)| n);
            for gi in 0..self.groups.len() {
                let (ga, gb) = self.groups[gi];
                let Some((pn, _)) = ends[ga as usize].peer else {
                    continue;
                };
                if self.flat.kind(pn) != NodeKind::Switch {
                    continue;
                }
                let c = (gb - ga) as u64 - u64::from(dst_peer == Some(pn));
                if c > 0 && self.resolve(pn, lid, dn, dp).is_ok() {
                    cnt[pn.idx()] += c;
                }
            }
            // Every switch on a route was settled by `resolve`; order them by distance
            // (counting sort) so each count is complete before it moves downstream.
            touched.clear();
            let mut maxd = 0;
            for &s in &self.settled {
                let d = self.dist[s.idx()];
                if self.stamp[s.idx()] == self.epoch && d < FAILED {
                    touched.push(s);
                    maxd = maxd.max(d);
                }
            }
            bucket_start.clear();
            bucket_start.resize(maxd as usize + 2, 0);
            for &s in &touched {
                bucket_start[self.dist[s.idx()] as usize + 1] += 1;
            }
            for i in 1..bucket_start.len() {
                bucket_start[i] += bucket_start[i - 1];
            }
            order.resize(touched.len(), NodeId(0));
            for &s in &touched {
                let d = self.dist[s.idx()] as usize;
                order[bucket_start[d] as usize] = s;
                bucket_start[d] += 1;
            }
            for &s in order.iter().rev() {
                let c = cnt[s.idx()];
                cnt[s.idx()] = 0;
                if c == 0 {
                    continue;
                }
                let op = self.t.lft[s.idx()].get(lid).unwrap_or(0);
                if let Some(i) = self.ports.idx(s, op) {
                    routes[i] += c;
                }
                if let Some((pn, _)) = self.ports.peer(s, op)
                    && self.flat.kind(pn) == NodeKind::Switch
                {
                    cnt[pn.idx()] += c;
                }
            }
        }
        self.dst_lids = dsts;
        self.ends = ends;
        let mut out = PortLoads::default();
        for &s in &switches {
            for a in self.flat.neighbors(s) {
                let i = self.ports.idx(s, a.port).expect("cabled port is indexed");
                let isl = self.flat.kind(a.peer) == NodeKind::Switch;
                let pl = PortLoad {
                    node: s,
                    port: a.port,
                    isl,
                    routes: routes[i],
                    lft_lids: lids[i],
                };
                out.max_routes_any = out.max_routes_any.max(pl.routes);
                if isl {
                    if pl.routes > out.max_routes_isl || out.busiest_isl.is_none() {
                        out.max_routes_isl = pl.routes;
                        out.busiest_isl = Some((s, a.port));
                    }
                    out.max_lids_isl = out.max_lids_isl.max(pl.lft_lids);
                    *out.isl_histogram.entry(pl.routes).or_insert(0) += 1;
                }
                out.ports.push(pl);
            }
        }
        out
    }

    fn credit_loops(&mut self) -> CreditLoopCheck {
        let np = self.ports.len();
        // VLs that can occur: 1 without SL2VL tables, else up to the largest VL mapped.
        let nvl = match &self.t.sl2vl {
            None => 1usize,
            Some(t) => t
                .iter()
                .flatten()
                .flatten()
                .flat_map(|m| m.iter())
                .map(|&v| (v & 15) as usize + 1)
                .max()
                .unwrap_or(1),
        };
        // The dependency graph as one bitset row per channel (port slot × VL): bit
        // `out_port × nvl + vl` stands for the channel (peer switch, out_port, vl), the
        // successor always sitting on the channel's peer node. No sorting, no hashing.
        let max_slots = (0..self.flat.num_nodes())
            .map(|n| self.ports.slots(NodeId(n as u32)) as usize)
            .max()
            .unwrap_or(1);
        let words = (max_slots * nvl).div_ceil(64);
        let mut bits = vec![0u64; np * nvl * words];
        let mut used = vec![false; np * nvl];
        let mut mark = vec![0u32; np];
        let mut mgen = 0u32;
        let mut sls_seen = 0u16;
        let mut vls_seen = 0u16;
        // LID -> index into path_sl.lids
        let psl = self.t.path_sl.as_ref();
        let mut lid_idx: Vec<u32> = Vec::new();
        if let Some(p) = psl {
            let maxl = p.lids.iter().map(|l| l.0 as usize).max().unwrap_or(0);
            lid_idx = vec![u32::MAX; maxl + 1];
            for (i, l) in p.lids.iter().enumerate() {
                lid_idx[l.0 as usize] = i as u32;
            }
        }
        let sl_of = |src: Lid, dst: Lid| -> u8 {
            let Some(p) = psl else { return 0 };
            let n = p.lids.len();
            let (Some(&a), Some(&b)) = (lid_idx.get(src.0 as usize), lid_idx.get(dst.0 as usize)) else {
                return 0;
            };
            if a == u32::MAX || b == u32::MAX {
                return 0;
            }
            p.sl.get(a as usize * n + b as usize).copied().unwrap_or(0)
        };
        let vl_of = |s: NodeId, inp: u8, outp: u8, sl: u8| -> u8 {
            match &self.t.sl2vl {
                Some(t) => t
                    .get(s.idx())
                    .and_then(|x| x.get(inp as usize))
                    .and_then(|x| x.get(outp as usize))
                    .map(|m| m[sl as usize & 15])
                    .unwrap_or(0),
                None => 0,
            }
        };
        let limit = self.flat.num_nodes() + 1;
        let mut src_sl: Vec<u8> = vec![0; self.ends.len()];
        let mut walkers: Vec<usize> = Vec::with_capacity(self.ends.len());
        for &(lid, dn, dp) in &self.dst_lids {
            let is_dst = |e: &EndPort| e.node == dn && e.port == dp;
            // Who walks: with path SLs every source (its SL may differ); without, one
            // source per group, since all sources behind one switch share channels.
            walkers.clear();
            let mut mask = 0u16;
            if psl.is_some() {
                for (k, e) in self.ends.iter().enumerate() {
                    let sl = sl_of(e.base, lid) & 15;
                    src_sl[k] = sl;
                    mask |= 1 << sl;
                    if !is_dst(e) {
                        walkers.push(k);
                    }
                }
            } else {
                mask = 1;
                for &(ga, gb) in &self.groups {
                    let k = if is_dst(&self.ends[ga as usize]) {
                        ga as usize + 1
                    } else {
                        ga as usize
                    };
                    if k < gb as usize {
                        src_sl[k] = 0;
                        walkers.push(k);
                    }
                }
            }
            sls_seen |= mask;
            for sl in 0..16u8 {
                if mask & (1 << sl) == 0 {
                    continue;
                }
                mgen += 1;
                for &k in &walkers {
                    let e = self.ends[k];
                    if src_sl[k] != sl {
                        continue;
                    }
                    let Some((mut at, mut inp)) = e.peer else { continue };
                    let mut prev = usize::MAX;
                    let mut hops = 0;
                    while self.flat.kind(at) == NodeKind::Switch && hops < limit {
                        hops += 1;
                        let Some(op) = self.t.lft[at.idx()].get(lid) else { break };
                        let Some(pi) = self.ports.idx(at, op) else { break };
                        let vl = (vl_of(at, inp, op, sl) as usize).min(nvl - 1);
                        vls_seen |= 1 << vl;
                        let ch = pi * nvl + vl;
                        if prev != usize::MAX {
                            let bit = op as usize * nvl + vl;
                            bits[prev * words + bit / 64] |= 1u64 << (bit % 64);
                            used[prev] = true;
                            used[ch] = true;
                        }
                        let ii = self.ports.idx(at, inp).unwrap_or(pi);
                        if mark[ii] == mgen {
                            break;
                        }
                        mark[ii] = mgen;
                        prev = ch;
                        let Some((pn, pp)) = self.ports.peer(at, op) else { break };
                        at = pn;
                        inp = pp;
                    }
                }
            }
        }
        let dependencies: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
        let channels = used.iter().filter(|&&u| u).count();
        // Successor of channel `c` for bit `b`.
        let succ = |c: usize, b: usize| -> Option<usize> {
            let (node, port) = self.ports.node_port(c / nvl);
            let (pn, _) = self.ports.peer(node, port)?;
            Some(self.ports.idx(pn, (b / nvl) as u8)? * nvl + b % nvl)
        };
        let cycle = find_cycle_bits(&bits, words, np * nvl, succ).map(|cyc| {
            cyc.into_iter()
                .map(|c| {
                    let (node, port) = self.ports.node_port(c / nvl);
                    Channel {
                        node,
                        port,
                        vl: (c % nvl) as u8,
                    }
                })
                .collect()
        });
        CreditLoopCheck {
            channels,
            dependencies,
            sls_used: sls_seen.count_ones() as u8,
            vls_used: vls_seen.count_ones() as u8,
            cycle,
        }
    }
}

/// Iterative three-colour DFS over a bitset graph (`words` u64 per vertex row; bit b of
/// row v is the edge v → `succ(v, b)`); returns one cycle or `None`.
fn find_cycle_bits(
    bits: &[u64],
    words: usize,
    n: usize,
    succ: impl Fn(usize, usize) -> Option<usize>,
) -> Option<Vec<usize>> {
    let mut color = vec![0u8; n];
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for start in 0..n {
        if color[start] != 0 || bits[start * words..(start + 1) * words].iter().all(|&w| w == 0) {
            continue;
        }
        color[start] = 1;
        stack.push((start, 0));
        while let Some(&mut (v, ref mut pos)) = stack.last_mut() {
            let mut next = None;
            let mut b = *pos;
            while b < words * 64 {
                let w = bits[v * words + b / 64] >> (b % 64);
                if w == 0 {
                    b = (b | 63) + 1;
                    continue;
                }
                b += w.trailing_zeros() as usize;
                next = Some(b);
                break;
            }
            match next {
                Some(bit) => {
                    *pos = bit + 1;
                    let Some(w) = succ(v, bit) else { continue };
                    match color[w] {
                        0 => {
                            color[w] = 1;
                            stack.push((w, 0));
                        }
                        1 => {
                            let from = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                            return Some(stack[from..].iter().map(|&(x, _)| x).collect());
                        }
                        _ => {}
                    }
                }
                None => {
                    color[v] = 2;
                    stack.pop();
                }
            }
        }
    }
    None
}

/// Breadth-first hop counts from every node to end port (dn, dp): `dist[n]` = links from
/// node n to the destination when n is a switch (or the destination's peer), paths
/// transiting switches only.
fn shortest_to_port(
    flat: &FlatFabric,
    ports: &PortIndex,
    dn: NodeId,
    dp: u8,
    dist: &mut [u32],
    queue: &mut Vec<NodeId>,
) {
    dist.iter_mut().for_each(|d| *d = u32::MAX);
    queue.clear();
    let Some((pn, _)) = ports.peer(dn, dp) else { return };
    dist[pn.idx()] = 1;
    if flat.kind(pn) != NodeKind::Switch {
        return;
    }
    queue.push(pn);
    let mut h = 0;
    while h < queue.len() {
        let n = queue[h];
        h += 1;
        let d = dist[n.idx()] + 1;
        for a in flat.neighbors(n) {
            if dist[a.peer.idx()] == u32::MAX && a.peer != dn {
                dist[a.peer.idx()] = d;
                if flat.kind(a.peer) == NodeKind::Switch {
                    queue.push(a.peer);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitset_dfs_finds_a_triangle_and_accepts_a_dag() {
        // Bit b of row v = edge v -> b.
        let succ = |_: usize, b: usize| Some(b);
        let tri = [0b010u64, 0b100, 0b001];
        let c = find_cycle_bits(&tri, 1, 3, succ).unwrap();
        assert_eq!(c.len(), 3);
        let dag = [0b110u64, 0b100, 0];
        assert!(find_cycle_bits(&dag, 1, 3, succ).is_none());
    }
}

#[cfg(test)]
mod hand_tables {
    use super::*;
    use crate::tables::{Lft, NO_ROUTE};
    use fabric::{LinkRate, NodeSpec};
    use wire::Guid;

    /// h1 - s1 = s2 - h2 (s1/s2 joined by ports 2 and 3), LIDs s1=1 s2=2 h1=3 h2=4.
    fn fixture() -> (Fabric, RoutingTables) {
        let mut f = Fabric::new();
        let s1 = f.add_node(NodeSpec::switch("s1", Guid(0x200000), 4)).unwrap();
        let s2 = f.add_node(NodeSpec::switch("s2", Guid(0x200001), 4)).unwrap();
        let h1 = f.add_node(NodeSpec::ca("h1", Guid(0x100000), 1)).unwrap();
        let h2 = f.add_node(NodeSpec::ca("h2", Guid(0x100002), 1)).unwrap();
        f.connect(s1, 1, h1, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s2, 1, h2, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s1, 2, s2, 2, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s1, 3, s2, 3, LinkRate::NDR_4X, 1.0).unwrap();
        let mut t = RoutingTables::empty_for(&f);
        t.base_lid[0][0] = Lid(1);
        t.base_lid[1][0] = Lid(2);
        t.base_lid[2][1] = Lid(3);
        t.base_lid[3][1] = Lid(4);
        t.lid_owner = vec![None, Some((s1, 0)), Some((s2, 0)), Some((h1, 1)), Some((h2, 1))];
        t.lft[0] = Lft {
            ports: vec![NO_ROUTE, 0, 2, 1, 2],
        };
        t.lft[1] = Lft {
            ports: vec![NO_ROUTE, 3, 0, 3, 1],
        };
        (f, t)
    }

    #[test]
    fn good_tables_pass_every_check() {
        let (f, t) = fixture();
        let v = validate(&f.freeze(), &t);
        assert_eq!(v.routes.pairs, 2);
        assert_eq!(v.routes.unreachable, 0, "{:?}", v.routes.failures);
        assert_eq!(v.routes.non_minimal, 0);
        assert_eq!(v.routes.hop_histogram, vec![0, 0, 0, 2]);
        assert!(v.credit_loops.cycle.is_none());
        // h1->h2 leaves s1 on port 2, h2->h1 leaves s2 on port 3.
        let load = |n: u32, p: u8| {
            v.loads
                .ports
                .iter()
                .find(|x| x.node == NodeId(n) && x.port == p)
                .unwrap()
                .routes
        };
        assert_eq!(load(0, 2), 1);
        assert_eq!(load(0, 3), 0);
        assert_eq!(load(1, 3), 1);
        assert_eq!(v.loads.max_routes_isl, 1);
        assert!(v.ok());
    }

    #[test]
    fn holes_loops_and_dead_ends_are_reported_with_their_place() {
        let (f, mut t) = fixture();
        t.lft[1].ports[4] = NO_ROUTE; // s2 has no entry for h2
        let r = check_routes(&f.freeze(), &t);
        assert_eq!(r.unreachable, 1);
        assert_eq!(r.failures[0].stop, Stop::NoEntry { at: NodeId(1) });
        assert_eq!(r.failures[0].src, NodeId(2));
        t.lft[1].ports[4] = 2; // s2 sends h2's LID back to s1, s1 sends it to s2: a loop
        let r = check_routes(&f.freeze(), &t);
        assert!(
            matches!(&r.failures[0].stop, Stop::Loop { cycle } if cycle.len() == 2),
            "{:?}",
            r.failures
        );
        t.lft[1].ports[4] = 4; // port 4 of s2 is not cabled
        let r = check_routes(&f.freeze(), &t);
        assert_eq!(r.failures[0].stop, Stop::DeadEnd { at: NodeId(1), port: 4 });
        assert!(r.failures[0].describe(&f).contains("dead end at s2/P4"));
    }

    #[test]
    fn credit_loop_between_two_switches_is_found_and_vls_break_it() {
        // Four switches in a ring, one CA on each; every route goes clockwise: a
        // classic ring dependency cycle on VL 0.
        let mut f = Fabric::new();
        let mut sw = Vec::new();
        for i in 0..4u64 {
            sw.push(
                f.add_node(NodeSpec::switch(format!("s{i}"), Guid(0x200000 + i), 3))
                    .unwrap(),
            );
        }
        let mut ca = Vec::new();
        for i in 0..4u64 {
            ca.push(
                f.add_node(NodeSpec::ca(format!("h{i}"), Guid(0x100000 + 2 * i), 1))
                    .unwrap(),
            );
        }
        for i in 0..4 {
            f.connect(sw[i], 1, ca[i], 1, LinkRate::NDR_4X, 1.0).unwrap();
            f.connect(sw[i], 2, sw[(i + 1) % 4], 3, LinkRate::NDR_4X, 1.0).unwrap();
        }
        let mut t = RoutingTables::empty_for(&f);
        t.lid_owner = vec![None; 5];
        for (i, &c) in ca.iter().enumerate() {
            t.base_lid[c.idx()][1] = Lid(i as u16 + 1);
            t.lid_owner[i + 1] = Some((c, 1));
        }
        for (i, &s) in sw.iter().enumerate() {
            let mut ports = vec![NO_ROUTE; 5];
            for d in 0..4 {
                ports[d + 1] = if d == i { 1 } else { 2 };
            }
            t.lft[s.idx()] = Lft { ports };
        }
        let flat = f.freeze();
        let r = check_routes(&flat, &t);
        assert_eq!(r.unreachable, 0);
        assert!(r.non_minimal > 0, "clockwise-only routes are not all minimal");
        let c = check_credit_loops(&flat, &t);
        let cyc = c.cycle.clone().expect("ring loop");
        assert_eq!(cyc.len(), 4);
        assert!(cyc.iter().all(|ch| ch.port == 2 && ch.vl == 0));
        assert!(c.describe(&f).unwrap().starts_with("s"));
        // Dateline on the cable s3 -> s0: paths that cross it use SL1, and SL1 moves to
        // VL1 after the crossing, i.e. out of s0 and s1 when entering from the ring
        // (port 3). Before the crossing (on s1..s3 from CA or ring) it stays on VL0.
        let mut sl2vl = vec![vec![vec![[0u8; 16]; 4]; 4]; f.nodes.len()];
        let mut m = [0u8; 16];
        m[1] = 1;
        sl2vl[sw[0].idx()][3][2] = m;
        sl2vl[sw[1].idx()][3][2] = m;
        // SL1 for pairs whose path crosses the dateline s3 -> s0.
        let lids: Vec<Lid> = (1..=4).map(Lid).collect();
        let mut sl = vec![0u8; 16];
        for s in 0..4usize {
            for d in 0..4usize {
                if d < s {
                    sl[s * 4 + d] = 1;
                }
            }
        }
        t.path_sl = Some(crate::tables::PathSl { lids, sl });
        t.sl2vl = Some(sl2vl);
        let c = check_credit_loops(&flat, &t);
        assert!(c.cycle.is_none(), "{:?}", c.describe(&f));
        assert_eq!(c.vls_used, 2);
    }
}
