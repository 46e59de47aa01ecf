//! Executes a collective [`Schedule`] on the packet-level simulator.
//!
//! NVLink hops are modelled here, outside the network simulator: each GPU's NVLink
//! egress is a FIFO server at the scenario's bandwidth plus a fixed latency, which
//! is what NVSwitch gives a GPU (full bisection inside the node). Network hops are
//! RC SENDs between the two NICs of the transfer's rail, posted on the simulator at
//! the simulated instant their dependencies are met; a transfer is done when the
//! receiver's completion appears. The two clocks are one: the driver advances the
//! simulator to the next NVLink completion or probe instant and never past it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use fabric::{Fabric, NodeId, NodeKind};
use sim::{CqeOp, QpId, QpOptions, RunStatus, Sim, Time};

use crate::collective::{HopCost, Rank, Schedule, Via};

/// Where each (server, rail) NIC is in the fabric.
#[derive(Clone, Debug)]
pub struct NicMap {
    /// `nic[server][rail]`
    pub nic: Vec<Vec<NodeId>>,
}

impl NicMap {
    /// Group the fabric's CAs by server (their `host`), in node order, which the rail
    /// generator makes rail order.
    pub fn from_fabric(f: &Fabric) -> Result<NicMap, RunError> {
        let mut nic: Vec<Vec<NodeId>> = vec![Vec::new(); f.hosts.len()];
        for id in f.nodes_of(NodeKind::Ca) {
            let h = f.node(id).host.ok_or_else(|| TopologyError::AdapterWithoutServer {
                adapter: f.node(id).name.clone(),
            })?;
            nic[h.0 as usize].push(id);
        }
        if nic.is_empty() {
            return Err(TopologyError::NoServers.into());
        }
        // each server's adapters in rail order, as their NodeDescriptions number
        // them (`gpu07 mlx5_3`: rail 3); the generators add them in that order
        for v in &mut nic {
            v.sort_by_key(|&id| crate::import::rail_of(&f.node(id).desc).unwrap_or(u32::MAX));
        }
        if let Some(s) = nic.iter().position(|v| v.len() != nic[0].len()) {
            return Err(TopologyError::UnevenNics {
                first: nic[0].len(),
                server: f.hosts[s].name.clone(),
                nics: nic[s].len(),
            }
            .into());
        }
        Ok(NicMap { nic })
    }
}

/// How a fabric does not fit the workload run on it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopologyError {
    /// A channel adapter the fabric does not assign to a server.
    #[error("adapter {adapter} belongs to no server")]
    AdapterWithoutServer {
        /// The adapter's node name.
        adapter: String,
    },
    /// The fabric has no servers.
    #[error("the fabric has no servers")]
    NoServers,
    /// A collective asks for a NIC the fabric does not have.
    #[error("no NIC on rail {rail} of server {server}: the collective needs more servers or rails than the fabric has")]
    MissingNic {
        /// The server index.
        server: u32,
        /// The rail.
        rail: u32,
    },
    /// A server with another number of NICs than the first: rails need one NIC each.
    #[error("the first server has {first} NICs but server {server} has {nics}; every server needs one NIC per rail")]
    UnevenNics {
        /// NICs of the first server.
        first: usize,
        /// The server that differs.
        server: String,
        /// Its NICs.
        nics: usize,
    },
    /// An incast from other servers to server 0 on a fabric of one server.
    #[error("an incast needs at least two servers; the fabric has {servers}")]
    IncastNeedsTwoServers {
        /// Servers in the fabric.
        servers: usize,
    },
}

/// Why a schedule could not be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The fabric does not fit the workload (a NIC without a server, an incast
    /// with one server).
    #[error("topology")]
    Topology(#[from] TopologyError),
    /// The InfiniBand simulator refused a request, or its ledger did not balance.
    #[error("simulator")]
    Sim(#[from] sim::SimError),
    /// The RoCE simulator refused the world's setup or a message.
    #[error("drive the RoCE simulator")]
    Roce(#[from] sim::roce::net::RoceError),
    /// The fabric deadlocked; the cycle the simulator found.
    #[error("the fabric deadlocked: {0}")]
    Deadlock(Deadlock),
    /// The flow engine found no path for a connection.
    #[error("flow engine: no path")]
    FlowPath(#[source] flow::path::PathError),
    /// The flow engine's bookkeeping failed (conservation) or it was given a
    /// connection with no capacity.
    #[error("flow engine")]
    Flow(#[source] flow::FlowError),
    /// The collective's per-chunk schedule could not be built.
    #[error("build the collective's schedule")]
    Schedule(#[source] crate::collective::ScheduleError),
    /// The SHARP all-reduce found no aggregation tree, or runs on a fabric
    /// without in-network reduction.
    #[error("in-network reduction")]
    Sharp(#[source] crate::sharp::SharpError),
    /// Nothing was in flight and transfers were left.
    #[error("the run went idle with {0} transfers never completed")]
    Stalled(usize),
    /// Packets created ≠ delivered + dropped + in flight: a model fault.
    #[error("the conservation ledger of the {world} world does not balance")]
    Ledger {
        /// The world whose counts these are ("RoCE").
        world: &'static str,
        /// The ledger's numbers.
        #[source]
        source: sim::engine::LedgerError,
    },
}

impl RunError {
    /// A fault of the model (exit code 3), not of the input: a ledger that does
    /// not balance, here or in the simulator underneath.
    pub fn is_internal(&self) -> bool {
        match self {
            RunError::Ledger { .. } => true,
            RunError::Sim(e) => e.is_internal(),
            RunError::Flow(e) => !matches!(e, flow::FlowError::Starved { .. }),
            RunError::Topology(_)
            | RunError::Roce(_)
            | RunError::Deadlock(_)
            | RunError::Stalled(_)
            | RunError::Schedule(_)
            | RunError::Sharp(_)
            | RunError::FlowPath(_) => false,
        }
    }
}

/// Small-message probes sent while the collective runs.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSpec {
    pub bytes: u64,
    pub interval_ps: u64,
}

/// What one schedule run measured.
#[derive(Clone, Debug, Default)]
pub struct ScheduleRun {
    /// Completion time of the last transfer, from the start.
    pub time_ps: u64,
    /// One-way latency of every probe, picoseconds.
    pub probe_latency_ps: Vec<u64>,
    /// Bytes sent by the busiest NIC.
    pub max_nic_bytes: u64,
}

/// A message the network delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    pub tag: u64,
    pub posted_ps: u64,
    pub done_ps: u64,
}

/// A deadlock a simulator found, with the cycle it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Deadlock {
    /// InfiniBand: a cycle of credit-starved (switch, port, VL) queues.
    Credits(sim::DeadlockReport),
    /// Ethernet: a cycle of PFC-paused switch egress queues.
    Pfc(sim::roce::net::PfcDeadlock),
}

impl std::fmt::Display for Deadlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Deadlock::Credits(d) => d.fmt(f),
            Deadlock::Pfc(d) => d.fmt(f),
        }
    }
}

/// Why [`Network::advance`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetStep {
    /// Messages were delivered (at or before the current time).
    Delivered(Vec<Delivered>),
    /// Simulated time reached the limit.
    Reached,
    /// Nothing is in flight.
    Idle,
    /// The fabric deadlocked.
    Deadlock(Deadlock),
}

/// Message traffic class on a NIC pair: each class is its own connection (QP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// The collective's data.
    Bulk,
    /// Latency probes: same NICs and links, but not queued behind bulk messages.
    Probe,
    /// A further QP of the bulk data on the same NIC pair (a collective
    /// library's QPs per connection: each its own UDP source port on RoCEv2,
    /// so its own ECMP draw).
    Lane(u16),
}

/// A packet-level network that carries messages between NICs: the InfiniBand
/// simulator, or the RoCE one.
pub trait Network {
    /// Simulated now, picoseconds.
    fn now_ps(&self) -> u64;
    /// Post a message of `bytes` from NIC `a` to NIC `b` now. Messages of one
    /// (a, b, class) are delivered in posting order.
    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError>;
    /// Open the connection (a, b, class) ahead of its first message of `bytes`.
    /// A schedule opens its connections in its own order before it starts, so
    /// on a fabric that hashes connections onto ECMP paths (RoCEv2: the QP
    /// number picks the UDP source port) every engine numbers, and so hashes,
    /// them alike, whatever its timing. Fabrics whose routes do not depend on
    /// the connection (InfiniBand's LFTs) need not open early.
    fn open(&mut self, _a: NodeId, _b: NodeId, _class: Class, _bytes: u64) -> Result<(), RunError> {
        Ok(())
    }
    /// Run until `until_ps` or until messages are delivered, whichever is first.
    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError>;
    /// Close the run and count it: the conservation ledger is checked first, and an
    /// imbalance is an error ([`RunError::Ledger`]), never a count.
    fn counters(&mut self) -> Result<NetCounters, RunError>;
}

/// What a network counted over one run, the same fields on every fabric (zero where
/// the fabric has no such thing: InfiniBand has no pause frames or CNPs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetCounters {
    /// Packets delivered to their destination.
    pub delivered: u64,
    /// Packets of the workload dropped (on Ethernet: not counting background TCP's).
    pub drops: u64,
    /// Packets retransmitted by the workload's QPs.
    pub retransmissions: u64,
    /// PFC pause frames sent, every port and priority.
    pub pause_frames: u64,
    /// Time spent paused, summed over ports and priorities, microseconds.
    pub pause_us: f64,
    /// Packets ECN-marked by switches.
    pub ecn_marks: u64,
    /// Congestion notification packets sent.
    pub cnps: u64,
    /// Pause storms a PFC watchdog detected (each queue it declared stormed).
    pub storms: u64,
    /// Simulator events processed.
    pub events: u64,
    /// Packet-link hops simulated.
    pub hops: u64,
    /// Simulated time at the end, microseconds.
    pub sim_us: f64,
    /// Drops by reason: (reason, all priorities, of which on a lossless priority).
    pub drop_reasons: Vec<(String, u64, u64)>,
}

/// The InfiniBand simulator as a [`Network`]: one RC QP pair per (NIC pair,
/// class), SENDs, and the responder's receive completions.
pub struct IbNet<'a> {
    pub sim: &'a mut Sim,
    qps: BTreeMap<(NodeId, NodeId, Class), QpId>,
    peer_of: BTreeMap<QpId, QpId>,
    /// (tag, post time) per receiving QP, in posting order
    in_order: BTreeMap<QpId, VecDeque<(u64, u64)>>,
}

impl<'a> IbNet<'a> {
    /// Wrap a simulator.
    pub fn new(sim: &'a mut Sim) -> IbNet<'a> {
        IbNet {
            sim,
            qps: BTreeMap::new(),
            peer_of: BTreeMap::new(),
            in_order: BTreeMap::new(),
        }
    }

    fn drain_cq(&mut self, out: &mut Vec<Delivered>) {
        while let Some(node) = self.sim.next_cq_event() {
            while let Some(c) = self.sim.poll_cq(node) {
                if c.op != CqeOp::Recv {
                    continue;
                }
                if let Some((tag, posted)) = self.in_order.get_mut(&c.qp).and_then(VecDeque::pop_front) {
                    out.push(Delivered {
                        tag,
                        posted_ps: posted,
                        done_ps: c.done.0,
                    });
                }
            }
        }
    }
}

impl Network for IbNet<'_> {
    fn now_ps(&self) -> u64 {
        self.sim.now().0
    }

    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError> {
        let q = match self.qps.get(&(a, b, class)) {
            Some(&q) => q,
            None => {
                let (qa, qb) = self.sim.create_rc_pair(a, b, &QpOptions::default())?;
                self.qps.insert((a, b, class), qa);
                self.peer_of.insert(qa, qb);
                qa
            }
        };
        self.sim.post_send(q, bytes, tag)?;
        let now = self.sim.now().0;
        self.in_order.entry(self.peer_of[&q]).or_default().push_back((tag, now));
        Ok(())
    }

    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError> {
        Ok(match self.sim.run(Time(until_ps)) {
            RunStatus::Completion => {
                let mut out = Vec::new();
                self.drain_cq(&mut out);
                NetStep::Delivered(out)
            }
            RunStatus::TimeLimit => NetStep::Reached,
            RunStatus::Idle => NetStep::Idle,
            RunStatus::Deadlock(d) => NetStep::Deadlock(Deadlock::Credits(d)),
        })
    }

    /// Stalls accounted ([`Sim::finish`]), the ledger checked, then the counts.
    fn counters(&mut self) -> Result<NetCounters, RunError> {
        self.sim.finish();
        self.sim.check_ledger()?;
        let st = self.sim.stats();
        Ok(NetCounters {
            delivered: self.sim.ledger().delivered,
            drops: self.sim.ledger().total_dropped(),
            events: st.events,
            hops: st.hops,
            sim_us: self.sim.now().0 as f64 / 1e6,
            ..NetCounters::default()
        })
    }
}

const PROBE_TAG: u64 = 1 << 63;

/// Run `s` on `net` (whose fabric `nics` describes).
pub fn run_schedule(
    net: &mut dyn Network,
    nics: &NicMap,
    s: &Schedule,
    nvlink: HopCost,
    probe: Option<ProbeSpec>,
) -> Result<ScheduleRun, RunError> {
    let n = s.transfers.len();
    let start = net.now_ps();
    let mut pending: Vec<u32> = s.transfers.iter().map(|t| t.deps.len() as u32).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, t) in s.transfers.iter().enumerate() {
        for &d in &t.deps {
            dependents[d as usize].push(i as u32);
        }
    }
    let mut ready_at = vec![start; n];
    // transfers whose dependencies are met, by (ready time, index)
    let mut ready: BinaryHeap<Reverse<(u64, u32)>> = (0..n as u32)
        .filter(|&i| pending[i as usize] == 0)
        .map(|i| Reverse((start, i)))
        .collect();
    // NVLink transfers in flight, by (completion time, index)
    let mut nvl_done: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut nvl_free: BTreeMap<Rank, u64> = BTreeMap::new();
    let mut remaining = n;
    let mut out = ScheduleRun::default();
    let mut nic_bytes: BTreeMap<NodeId, u64> = BTreeMap::new();

    // connections numbered in the schedule's order, not the run's (see
    // `Network::open`)
    for tr in &s.transfers {
        if let Via::Rail(r) = tr.via {
            let a = nics.nic[tr.src.node as usize][r as usize];
            let b = nics.nic[tr.dst.node as usize][r as usize];
            net.open(a, b, Class::Bulk, tr.bytes)?;
        }
    }

    // probes: NIC (server i, rail r) → (server i+1, rail r), every interval
    let servers = nics.nic.len();
    let rails = nics.nic.first().map_or(0, Vec::len);
    let mut next_probe = probe.map(|p| start + p.interval_ps);
    let mut probes_out = 0u64;

    while remaining > 0 {
        let now = net.now_ps();
        // start everything that is ready now
        while let Some(&Reverse((t, i))) = ready.peek() {
            if t > now {
                break;
            }
            ready.pop();
            let tr = &s.transfers[i as usize];
            match tr.via {
                Via::NvLink => {
                    let free = nvl_free.entry(tr.src).or_insert(0);
                    let begin = t.max(*free);
                    let ser = (tr.bytes as f64 / nvlink.bytes_per_s * 1e12).round() as u64;
                    *free = begin + ser;
                    nvl_done.push(Reverse((begin + ser + nvlink.latency_ps, i)));
                }
                Via::Rail(r) => {
                    let a = nics.nic[tr.src.node as usize][r as usize];
                    let b = nics.nic[tr.dst.node as usize][r as usize];
                    net.post(a, b, Class::Bulk, tr.bytes, u64::from(i))?;
                    *nic_bytes.entry(a).or_default() += tr.bytes;
                }
            }
        }
        // post probes that are due
        if let (Some(p), Some(t)) = (probe, next_probe)
            && t <= now
        {
            for srv in 0..servers {
                for r in 0..rails {
                    let a = nics.nic[srv][r];
                    let b = nics.nic[(srv + 1) % servers][r];
                    if a != b {
                        net.post(a, b, Class::Probe, p.bytes, PROBE_TAG)?;
                        probes_out += 1;
                    }
                }
            }
            next_probe = Some(t + p.interval_ps);
        }
        // NVLink completions due now
        while let Some(&Reverse((t, i))) = nvl_done.peek() {
            if t > now {
                break;
            }
            nvl_done.pop();
            remaining -= 1;
            out.time_ps = out.time_ps.max(t - start);
            release(i, t, &dependents, &mut pending, &mut ready_at, &mut ready);
        }
        if remaining == 0 {
            break;
        }
        // advance the network to the next local instant
        let mut until = u64::MAX;
        if let Some(&Reverse((t, _))) = ready.peek() {
            until = until.min(t);
        }
        if let Some(&Reverse((t, _))) = nvl_done.peek() {
            until = until.min(t);
        }
        if let Some(t) = next_probe {
            until = until.min(t);
        }
        match net.advance(until)? {
            NetStep::Delivered(ds) => {
                for d in ds {
                    if d.tag == PROBE_TAG {
                        out.probe_latency_ps.push(d.done_ps.saturating_sub(d.posted_ps));
                        continue;
                    }
                    let i = d.tag as u32;
                    remaining -= 1;
                    out.time_ps = out.time_ps.max(d.done_ps - start);
                    release(i, d.done_ps, &dependents, &mut pending, &mut ready_at, &mut ready);
                }
            }
            NetStep::Reached => {}
            NetStep::Idle => {
                if until == u64::MAX {
                    return Err(RunError::Stalled(remaining));
                }
            }
            NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
        }
    }
    out.max_nic_bytes = nic_bytes.values().copied().max().unwrap_or(0);
    // let the last probes drain so every probe posted is measured
    while (out.probe_latency_ps.len() as u64) < probes_out {
        match net.advance(u64::MAX)? {
            NetStep::Delivered(ds) => {
                for d in ds.into_iter().filter(|d| d.tag == PROBE_TAG) {
                    out.probe_latency_ps.push(d.done_ps.saturating_sub(d.posted_ps));
                }
            }
            NetStep::Reached | NetStep::Idle => break,
            NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
        }
    }
    Ok(out)
}

/// Every message in `msgs` posted at once; returns when the last is delivered,
/// relative to the start.
pub fn run_messages(net: &mut dyn Network, msgs: &[(NodeId, NodeId, u64)]) -> Result<u64, RunError> {
    let start = net.now_ps();
    for (k, &(a, b, bytes)) in msgs.iter().enumerate() {
        net.post(a, b, Class::Bulk, bytes, k as u64)?;
    }
    let mut left = msgs.len();
    let mut end = start;
    while left > 0 {
        match net.advance(u64::MAX)? {
            NetStep::Delivered(ds) => {
                left -= ds.len();
                end = ds.iter().map(|d| d.done_ps).fold(end, u64::max);
            }
            // a network with work outside the fabric (IPoIB's kernel) pauses here
            NetStep::Reached => {}
            NetStep::Idle => return Err(RunError::Stalled(left)),
            NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
        }
    }
    Ok(end - start)
}

fn release(
    i: u32,
    t: u64,
    dependents: &[Vec<u32>],
    pending: &mut [u32],
    ready_at: &mut [u64],
    ready: &mut BinaryHeap<Reverse<(u64, u32)>>,
) {
    for &d in &dependents[i as usize] {
        let d = d as usize;
        ready_at[d] = ready_at[d].max(t);
        pending[d] -= 1;
        if pending[d] == 0 {
            ready.push(Reverse((ready_at[d], d as u32)));
        }
    }
}

/// A [`Network`] seen through NICs that take `tx_ps` from a post to sending and
/// `rx_ps` from a message's last byte to the application seeing it: the
/// endpoint latencies `rdmalab calibrate` fits from perftest (one-way WRITE
/// latency, and what a SEND adds at the receiver), for a simulator that has no
/// such setting of its own (the RoCE world; the InfiniBand world takes them as
/// `IbConfig::hca_tx_latency_ps` and `hca_rx_latency_ps`). Every message is
/// delayed alike, so each connection keeps its order; ACKs are not delayed.
///
/// Posts wait in a FIFO until due; deliveries are held until their receive
/// latency has passed, so a delivery is reported at or after its `done_ps`, as
/// the trait says. The inner network runs only to the next of these instants.
pub struct NicDelay<'a> {
    inner: &'a mut dyn Network,
    tx_ps: u64,
    rx_ps: u64,
    /// (due, a, b, class, bytes, tag), due times non-decreasing.
    pending: VecDeque<(u64, NodeId, NodeId, Class, u64, u64)>,
    /// Delivered by the inner network, `done_ps` already moved by `rx_ps`.
    held: Vec<Delivered>,
}

impl<'a> NicDelay<'a> {
    /// Wrap `inner` with NICs of these latencies.
    pub fn new(inner: &'a mut dyn Network, tx_ps: u64, rx_ps: u64) -> NicDelay<'a> {
        NicDelay {
            inner,
            tx_ps,
            rx_ps,
            pending: VecDeque::new(),
            held: Vec::new(),
        }
    }

    /// Post every message due by `now` (all of them when `all`).
    fn post_due(&mut self, now: u64, all: bool) -> Result<(), RunError> {
        while let Some(&(due, a, b, class, bytes, tag)) = self.pending.front() {
            if due > now && !all {
                break;
            }
            self.pending.pop_front();
            self.inner.post(a, b, class, bytes, tag)?;
        }
        Ok(())
    }

    /// Take the held deliveries done by `now` (all of them when `all`).
    fn take_done(&mut self, now: u64, all: bool) -> Vec<Delivered> {
        let (done, later): (Vec<Delivered>, Vec<Delivered>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|d| all || d.done_ps <= now);
        self.held = later;
        done
    }
}

impl Network for NicDelay<'_> {
    fn now_ps(&self) -> u64 {
        self.inner.now_ps()
    }

    fn open(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64) -> Result<(), RunError> {
        self.inner.open(a, b, class, bytes)
    }

    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError> {
        let due = self.inner.now_ps() + self.tx_ps;
        self.pending.push_back((due, a, b, class, bytes, tag));
        Ok(())
    }

    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError> {
        loop {
            let now = self.inner.now_ps();
            self.post_due(now, false)?;
            let done = self.take_done(now, false);
            if !done.is_empty() {
                return Ok(NetStep::Delivered(done));
            }
            if now >= until_ps {
                return Ok(NetStep::Reached);
            }
            let next = self
                .pending
                .front()
                .map(|p| p.0)
                .into_iter()
                .chain(self.held.iter().map(|d| d.done_ps))
                .fold(until_ps, u64::min);
            match self.inner.advance(next)? {
                NetStep::Delivered(ds) => {
                    for d in ds {
                        self.held.push(Delivered {
                            tag: d.tag,
                            // every post waited exactly tx_ps
                            posted_ps: d.posted_ps.saturating_sub(self.tx_ps),
                            done_ps: d.done_ps + self.rx_ps,
                        });
                    }
                }
                NetStep::Reached => {}
                NetStep::Idle => {
                    // The inner network has nothing in flight and cannot move its
                    // clock to our next instant: what waits here cannot wait for
                    // time to pass, so it goes now.
                    if self.pending.is_empty() && self.held.is_empty() {
                        return Ok(NetStep::Idle);
                    }
                    let now = self.inner.now_ps();
                    self.post_due(now, true)?;
                    let done = self.take_done(now, true);
                    if !done.is_empty() {
                        return Ok(NetStep::Delivered(done));
                    }
                }
                NetStep::Deadlock(d) => return Ok(NetStep::Deadlock(d)),
            }
        }
    }

    fn counters(&mut self) -> Result<NetCounters, RunError> {
        self.inner.counters()
    }
}

/// The RoCEv2 simulator as a [`Network`]: one QP (with its own UDP source port,
/// the ECMP entropy) per (NIC pair, class); DCQCN and PSN state persist across the
/// messages posted on it, as with a collective library's QPs.
pub struct RoceNet<'a> {
    pub sim: &'a mut sim::roce::net::RoceSim,
    /// The fabric the world was built from, for its ports' pause counters.
    fabric: &'a Fabric,
    qps: BTreeMap<(NodeId, NodeId, Class), u32>,
}

/// Longest stretch of simulated time [`RoceNet::advance`] runs without a delivery
/// before it reports the network as stalled: 1 s, or four of the NICs'
/// retransmit timeouts if that is longer (a stall must outlast the NICs' own
/// recovery from a tail drop).
const ROCE_STALL_PS: u64 = 1_000_000_000_000;

impl<'a> RoceNet<'a> {
    /// Wrap a RoCE world built from `fabric`.
    pub fn new(sim: &'a mut sim::roce::net::RoceSim, fabric: &'a Fabric) -> RoceNet<'a> {
        sim.drive();
        RoceNet {
            sim,
            fabric,
            qps: BTreeMap::new(),
        }
    }

    /// The QP for (a, b, class), opened on first use: its number, and so its
    /// UDP source port and ECMP paths, follow the order of first use.
    fn qp(&mut self, a: NodeId, b: NodeId, class: Class) -> Result<u32, RunError> {
        if let Some(&q) = self.qps.get(&(a, b, class)) {
            return Ok(q);
        }
        let q = self.sim.open_qp(a, b)?;
        self.qps.insert((a, b, class), q);
        Ok(q)
    }

    /// The QPs this driver opened.
    pub fn qp_ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.qps.values().map(|&q| q as usize)
    }
}

impl Network for RoceNet<'_> {
    fn now_ps(&self) -> u64 {
        self.sim.now().0
    }

    fn open(&mut self, a: NodeId, b: NodeId, class: Class, _bytes: u64) -> Result<(), RunError> {
        self.qp(a, b, class).map(|_| ())
    }

    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError> {
        let q = self.qp(a, b, class)?;
        Ok(self.sim.post(q, bytes, tag)?)
    }

    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError> {
        use sim::roce::net::RoceStatus;
        let stall = ROCE_STALL_PS.max(self.sim.config().nic.rto.0.saturating_mul(4));
        let cap = self.sim.now().0.saturating_add(stall);
        let st = self.sim.run(Time(until_ps.min(cap)));
        let out: Vec<Delivered> = self
            .sim
            .take_delivered()
            .into_iter()
            .map(|d| Delivered {
                tag: d.tag,
                posted_ps: d.posted.0,
                done_ps: d.done.0,
            })
            .collect();
        if !out.is_empty() {
            return Ok(NetStep::Delivered(out));
        }
        Ok(match st {
            RoceStatus::Deadlock(d) => NetStep::Deadlock(Deadlock::Pfc(d)),
            RoceStatus::TimeLimit if until_ps > cap => NetStep::Idle,
            RoceStatus::TimeLimit | RoceStatus::Delivered => NetStep::Reached,
            RoceStatus::Done | RoceStatus::Stuck => NetStep::Idle,
        })
    }

    /// The RDMA traffic's counts: background TCP's own drops are left out (the
    /// world reports them with TCP); pause counters over every cabled port and
    /// priority of the switches and NICs. The ledger is checked last, over all
    /// traffic.
    fn counters(&mut self) -> Result<NetCounters, RunError> {
        let sim = &*self.sim;
        let f = self.fabric;
        let retransmissions: u64 = self.qp_ids().map(|k| sim.flow_counters(k).retransmitted).sum();
        let (mut pause_frames, mut pause_ps) = (0u64, 0u64);
        for n in f.nodes_of(NodeKind::Switch).chain(f.nodes_of(NodeKind::Ca)) {
            for p in f.node(n).port_nums() {
                if f.node(n).ports[p as usize].link.is_none() {
                    continue;
                }
                for prio in 0..8u8 {
                    pause_frames += sim.pause_sent(n, p, prio).0;
                    pause_ps += sim.paused_time(n, p, prio).0;
                }
            }
        }
        let tcp_drops = sim.tcp().drops;
        let c = NetCounters {
            delivered: sim.ledger.delivered,
            drops: sim.ledger.total_dropped() - tcp_drops.iter().sum::<u64>(),
            retransmissions,
            pause_frames,
            pause_us: pause_ps as f64 / 1e6,
            ecn_marks: sim.ecn_marks,
            cnps: sim.cnps_sent,
            storms: sim
                .wd_log
                .iter()
                .filter(|e| e.4 == sim::roce::pfc::WdEvent::Stormed)
                .count() as u64,
            events: sim.events,
            hops: sim.hops(),
            sim_us: sim.now().0 as f64 / 1e6,
            drop_reasons: sim::roce::net::RoceDrop::ALL
                .iter()
                .enumerate()
                .filter(|(i, _)| sim.ledger.dropped[*i] > tcp_drops[*i])
                .map(|(i, r)| {
                    (
                        format!("{r:?}"),
                        sim.ledger.dropped[i] - tcp_drops[i],
                        sim.ledger.dropped_lossless[i],
                    )
                })
                .collect(),
        };
        if !sim.ledger_balances() {
            return Err(RunError::Ledger {
                world: "RoCE",
                source: sim::engine::LedgerError {
                    created: sim.ledger.created,
                    delivered: sim.ledger.delivered,
                    dropped: sim.ledger.total_dropped(),
                    in_flight: sim.in_flight(),
                },
            });
        }
        Ok(c)
    }
}

/// TCP over IPoIB on the InfiniBand simulator: every message costs kernel CPU on
/// both sides (`sim::roce::ipoib::IpoibConfig`: system calls, per-byte copy and
/// checksum, interrupts), one core per side and connection direction, and crosses
/// the same SM-routed IB fabric as verbs traffic. The sender's core must finish
/// the write before the bytes enter the fabric; the receiver's core finishes the
/// read after the last byte arrives. A lossless fabric keeps TCP's window open,
/// so the congestion window does not limit these runs.
pub struct IpoibNet<'a> {
    inner: IbNet<'a>,
    cfg: sim::roce::ipoib::IpoibConfig,
    /// sender core free time per NIC
    send_free: BTreeMap<NodeId, u64>,
    /// receiver core free time per NIC
    recv_free: BTreeMap<NodeId, u64>,
    /// writes waiting for their sender core: (enter-fabric time, seq) → message
    waiting: BinaryHeap<Reverse<(u64, u64)>>,
    msgs: BTreeMap<u64, (NodeId, NodeId, Class, u64, u64, u64)>,
    seq: u64,
    /// per message in the fabric, by inner tag: (receiving NIC, caller's tag,
    /// post time, bytes, time it entered the fabric)
    dst_of: BTreeMap<u64, (NodeId, u64, u64, u64, u64)>,
}

impl<'a> IpoibNet<'a> {
    /// Wrap an InfiniBand simulator.
    pub fn new(sim: &'a mut Sim, cfg: sim::roce::ipoib::IpoibConfig) -> IpoibNet<'a> {
        IpoibNet {
            inner: IbNet::new(sim),
            cfg,
            send_free: BTreeMap::new(),
            recv_free: BTreeMap::new(),
            waiting: BinaryHeap::new(),
            msgs: BTreeMap::new(),
            seq: 0,
            dst_of: BTreeMap::new(),
        }
    }

    fn release_due(&mut self) -> Result<(), RunError> {
        let now = self.inner.now_ps();
        while let Some(&Reverse((t, k))) = self.waiting.peek() {
            if t > now {
                break;
            }
            self.waiting.pop();
            let (a, b, class, bytes, tag, posted) = self.msgs.remove(&k).expect("queued message");
            // IP + TCP headers per segment and the 4-byte IPoIB header ride the fabric too
            let c = self.cfg.write_cost(bytes);
            let wire = bytes + c.segments * u64::from(sim::roce::ipoib::IP_TCP_HEADERS + 4);
            self.dst_of.insert(k, (b, tag, posted, bytes, now));
            self.inner.post(a, b, class, wire, k)?;
        }
        Ok(())
    }
}

impl Network for IpoibNet<'_> {
    fn now_ps(&self) -> u64 {
        self.inner.now_ps()
    }

    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError> {
        let now = self.inner.now_ps();
        let c = self.cfg.write_cost(bytes);
        let free = self.send_free.entry(a).or_insert(0);
        let start = now.max(*free);
        let done = start + (c.send_ns * 1000.0).round() as u64;
        *free = done;
        let k = self.seq;
        self.seq += 1;
        self.msgs.insert(k, (a, b, class, bytes, tag, now));
        self.waiting.push(Reverse((done, k)));
        self.release_due()
    }

    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError> {
        let next_write = self.waiting.peek().map_or(u64::MAX, |Reverse((t, _))| *t);
        let step = self.inner.advance(until_ps.min(next_write))?;
        let before = self.waiting.len();
        self.release_due()?;
        let released = self.waiting.len() < before;
        Ok(match step {
            NetStep::Delivered(ds) => {
                let mut out = Vec::with_capacity(ds.len());
                for d in ds {
                    let Some((dst, tag, posted, bytes, entered)) = self.dst_of.remove(&d.tag) else {
                        continue;
                    };
                    // The receiving core works on segments as they arrive (from about
                    // when the write entered the fabric) and finishes no earlier than
                    // the last byte's arrival.
                    let recv_ps = (self.cfg.write_cost(bytes).recv_ns * 1000.0).round() as u64;
                    let free = self.recv_free.entry(dst).or_insert(0);
                    let start = entered.max(*free);
                    let done = d.done_ps.max(start + recv_ps);
                    *free = done;
                    out.push(Delivered {
                        tag,
                        posted_ps: posted,
                        done_ps: done,
                    });
                }
                NetStep::Delivered(out)
            }
            // writes still on their sender's core, or just handed to the fabric
            NetStep::Idle if released || !self.waiting.is_empty() => NetStep::Reached,
            other => other,
        })
    }

    /// The InfiniBand fabric's counts: IPoIB's bytes ride it as verbs traffic does.
    fn counters(&mut self) -> Result<NetCounters, RunError> {
        self.inner.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster;
    use crate::collective::{Collective, nccl_bandwidth};
    use crate::scenario::Cluster;
    use crate::tco::Tech;
    use sim::{EngineConfig, IbConfig};

    fn small() -> (Fabric, sm::RoutingTables) {
        let c = Cluster::rail(4, 2, 400, 16);
        let f = cluster::build(&c, Tech::InfiniBand).unwrap();
        let o = sm::run::RunOptions {
            engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
            ..Default::default()
        };
        let (t, _) = sm::run::run(&f, &o).unwrap();
        (f, t)
    }

    const NVL: HopCost = HopCost {
        bytes_per_s: 450e9,
        latency_ps: 1_000_000,
    };

    #[test]
    fn a_fabric_that_does_not_fit_the_rails_is_refused_with_the_node_named() {
        use fabric::{Guid, NodeSpec};
        let mut f = Fabric::new();
        let a = f.add_host("srv-a");
        let b = f.add_host("srv-b");
        for (k, (name, host)) in [("a0", Some(a)), ("a1", Some(a)), ("b0", Some(b))]
            .into_iter()
            .enumerate()
        {
            let mut n = NodeSpec::ca(name, Guid(0x100 + 0x10 * k as u64), 1);
            n.host = host;
            f.add_node(n).unwrap();
        }
        let e = NicMap::from_fabric(&f).unwrap_err();
        assert_eq!(e.to_string(), "topology");
        let RunError::Topology(t) = e else { panic!("{e:?}") };
        assert_eq!(
            t,
            TopologyError::UnevenNics {
                first: 2,
                server: "srv-b".into(),
                nics: 1
            }
        );
        f.add_node(NodeSpec::ca("loose", Guid(0x900), 1)).unwrap();
        let Err(RunError::Topology(t)) = NicMap::from_fabric(&f) else {
            panic!()
        };
        assert_eq!(t.to_string(), "adapter loose belongs to no server");
        assert!(matches!(
            NicMap::from_fabric(&Fabric::new()),
            Err(RunError::Topology(TopologyError::NoServers))
        ));
    }

    #[test]
    fn ring_all_reduce_on_infiniband_approaches_the_nic_rate_and_matches_the_ideal() {
        let (f, t) = small();
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut s = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
        let size = 16u64 << 20;
        let sched = Schedule::build(Collective::AllReduceRing, 4, 2, size).unwrap();
        let run = run_schedule(&mut IbNet::new(&mut s), &nics, &sched, NVL, None).unwrap();
        s.check_ledger().unwrap();
        assert_eq!(s.ledger().total_dropped(), 0);
        // the packet-level time is close to the contention-free estimate with a
        // 400G NIC carrying 4096-byte payloads in 4122-byte packets
        let eff = 4096.0 / (4096.0 + 26.0);
        let ideal = sched.ideal_time_ps(
            NVL,
            HopCost {
                bytes_per_s: 50e9 * eff,
                latency_ps: 500_000,
            },
        );
        let ratio = run.time_ps as f64 / ideal as f64;
        assert!(
            (0.9..1.15).contains(&ratio),
            "sim {} ps vs ideal {} ps",
            run.time_ps,
            ideal
        );
        let (_, bus) = nccl_bandwidth(Collective::AllReduceRing, size, 8, run.time_ps);
        let per_nic = bus / 2.0;
        assert!(per_nic > 40.0 && per_nic < 50.0 * eff, "busbw per NIC {per_nic}");
    }

    #[test]
    fn probes_measure_latency_and_same_seed_repeats() {
        let (f, t) = small();
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut a = Vec::new();
        for _ in 0..2 {
            let mut s = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
            let sched = Schedule::build(Collective::AllToAll, 4, 2, 4 << 20).unwrap();
            let run = run_schedule(
                &mut IbNet::new(&mut s),
                &nics,
                &sched,
                NVL,
                Some(ProbeSpec {
                    bytes: 64,
                    interval_ps: 5_000_000,
                }),
            )
            .unwrap();
            assert!(!run.probe_latency_ps.is_empty());
            // a 64-byte probe takes at least serialization + 2 cable hops + one switch
            assert!(run.probe_latency_ps.iter().all(|&l| l > 130_000));
            a.push((run.time_ps, run.probe_latency_ps, s.trace_hash()));
        }
        assert_eq!(a[0], a[1]);
    }

    #[test]
    fn a_refused_roce_message_keeps_its_cause_and_is_not_a_model_fault() {
        let c = Cluster::rail(2, 1, 100, 8);
        let f = cluster::build(&c, Tech::Ethernet).unwrap();
        let mut sim = sim::roce::net::RoceSim::new(&f, sim::roce::net::RoceConfig::default(), &[]).unwrap();
        let nic = f.nodes_of(NodeKind::Ca).next().unwrap();
        let switch = f.nodes_of(NodeKind::Switch).next().unwrap();
        let e = RoceNet::new(&mut sim, &f)
            .post(nic, switch, Class::Bulk, 4096, 0)
            .unwrap_err();
        assert!(
            matches!(&e, RunError::Roce(sim::roce::net::RoceError::NotNic { node, .. }) if *node == f.node(switch).name),
            "{e:?}"
        );
        assert!(!e.is_internal());
    }

    fn roce_pair() -> Fabric {
        let c = Cluster::rail(4, 2, 400, 16);
        cluster::build(&c, Tech::Ethernet).unwrap()
    }

    /// On an idle fabric a message through NICs of latency (tx, rx) takes exactly
    /// tx + rx longer; with both 0 the adapter is invisible; in a collective,
    /// every connection keeps its order (the schedule completes) and time grows.
    #[test]
    fn nic_delay_adds_its_latencies_and_zero_is_invisible() {
        let f = roce_pair();
        let nics = NicMap::from_fabric(&f).unwrap();
        let (a, b) = (nics.nic[0][0], nics.nic[1][0]);
        let cfg = || sim::roce::net::RoceConfig::default();
        let one = |tx: u64, rx: u64| {
            let mut sim = sim::roce::net::RoceSim::new(&f, cfg(), &[]).unwrap();
            let mut net = RoceNet::new(&mut sim, &f);
            let mut d = NicDelay::new(&mut net, tx, rx);
            run_messages(&mut d, &[(a, b, 64)]).unwrap()
        };
        let base = one(0, 0);
        assert_eq!(one(1_000_000, 250_000), base + 1_250_000);
        let plain = {
            let mut sim = sim::roce::net::RoceSim::new(&f, cfg(), &[]).unwrap();
            run_messages(&mut RoceNet::new(&mut sim, &f), &[(a, b, 64)]).unwrap()
        };
        assert_eq!(plain, base);
        let sched = Schedule::build(Collective::AllReduceRing, 4, 2, 1 << 20).unwrap();
        let probe = Some(ProbeSpec {
            bytes: 64,
            interval_ps: 5_000_000,
        });
        let ring = |lat: Option<(u64, u64)>| {
            let mut sim = sim::roce::net::RoceSim::new(&f, cfg(), &[]).unwrap();
            let mut net = RoceNet::new(&mut sim, &f);
            let run = match lat {
                None => run_schedule(&mut net, &nics, &sched, NVL, probe).unwrap(),
                Some((tx, rx)) => {
                    run_schedule(&mut NicDelay::new(&mut net, tx, rx), &nics, &sched, NVL, probe).unwrap()
                }
            };
            net.counters().unwrap();
            run
        };
        let plain = ring(None);
        let zero = ring(Some((0, 0)));
        assert_eq!(
            (plain.time_ps, &plain.probe_latency_ps),
            (zero.time_ps, &zero.probe_latency_ps)
        );
        let slow = ring(Some((1_000_000, 250_000)));
        assert!(
            slow.time_ps > plain.time_ps + 1_250_000,
            "{} vs {}",
            slow.time_ps,
            plain.time_ps
        );
        let p50 = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v[v.len() / 2]
        };
        let extra = p50(&slow.probe_latency_ps) as i64 - p50(&plain.probe_latency_ps) as i64;
        assert!((extra - 1_250_000).abs() < 200_000, "probes {extra} ps slower");
    }

    /// A NIC that pauses without end, behind a switch with a PFC watchdog: the
    /// storms the watchdog declares reach the run's counters.
    #[test]
    fn pause_storms_a_watchdog_detects_are_counted() {
        use sim::roce::pfc::{WdAction, WdConfig};
        let c = Cluster::rail(3, 1, 100, 8);
        let f = cluster::build(&c, Tech::Ethernet).unwrap();
        let nics: Vec<NodeId> = f.nodes_of(NodeKind::Ca).collect();
        let run = |watchdog: Option<WdConfig>| {
            let mut cfg = sim::roce::net::RoceConfig::default();
            cfg.nic.cc = sim::roce::net::CongestionControl::None;
            cfg.switch.ecn = false;
            cfg.switch.buffer_bytes = 4 << 20;
            cfg.switch.watchdog = watchdog;
            cfg.faults.faulty_nics = vec![nics[2]];
            cfg.observe.deadlock_check = sim::Time::ZERO;
            let mut sim = sim::roce::net::RoceSim::new(&f, cfg, &[]).unwrap();
            let mut net = RoceNet::new(&mut sim, &f);
            net.post(nics[0], nics[2], Class::Bulk, 64 << 20, 0).unwrap();
            net.post(nics[1], nics[2], Class::Bulk, 64 << 20, 1).unwrap();
            while net.now_ps() < 20_000_000_000 {
                if let NetStep::Idle = net.advance(20_000_000_000).unwrap() {
                    break;
                }
            }
            net.counters().unwrap().storms
        };
        assert_eq!(run(None), 0, "no watchdog, no storm declared");
        let wd = WdConfig {
            poll: sim::Time::ms(1),
            detection: sim::Time::ms(2),
            restoration: sim::Time::ms(4),
            action: WdAction::Drop,
        };
        assert!(run(Some(wd)) > 0);
    }

    #[test]
    fn a_ledger_imbalance_is_a_model_fault_in_either_world() {
        let ledger = || sim::engine::LedgerError {
            created: 3,
            delivered: 1,
            dropped: 0,
            in_flight: 0,
        };
        let roce = RunError::Ledger {
            world: "RoCE",
            source: ledger(),
        };
        assert!(roce.is_internal());
        assert!(RunError::Sim(sim::SimError::Ledger(ledger())).is_internal());
        assert!(!RunError::Stalled(2).is_internal());
    }
}
