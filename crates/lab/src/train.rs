//! A training job on a fabric: its network operations priced by the flow engine
//! on the fabric's own routes, in place of `workload`'s contention-free network.
//!
//! Ranks are placed on the servers the job gets ([`Placement`]: packed, scattered
//! over the units, or in the gaps churn leaves): rank `r` is GPU `r mod g` of the
//! job's server `r / g` and uses that GPU's rail NIC (`g` GPUs and NICs per server). A rank's coordinates follow
//! the job's rank order (Megatron `tp-cp-dp-pp`, Llama 3 `tp-cp-pp-dp`; expert
//! parallelism is carved out of `dp × cp` and is not a separate digit). An
//! operation on the network is run for **every group of its kind at once** — all
//! data-parallel rings reduce-scatter together, as they do in a step — as max-min
//! fair flows on the SM's routes; its time is the last flow's completion:
//! - all-reduce, reduce-scatter, all-gather: a ring over the group in rank order,
//!   each member sending the operation's bytes (`bus_factor · S`) to the next;
//! - all-to-all: each member sending `S/n` to every other member;
//! - send/recv (pipeline): each stage sending `S` to the next stage.
//!
//! Expert-parallel groups are `ep` consecutive ranks of the `dp × cp` ones and
//! expert-data-parallel groups every `ep`-th, as `workload::parallel` lays them
//! out; their all-to-all and gradient reductions cross the fabric like the rest.
//! Operations inside an NVLink domain are priced as `workload`'s ideal network
//! prices them; [`FabricNetwork::contention_free`] lists which were.

use std::cell::RefCell;
use std::collections::BTreeMap;

use fabric::{Fabric, NodeId};
use flow::path::{Ports, WireModel};
use flow::{FlowSim, Step};
use workload::comm::{CommKind, CommOp, Link};
use workload::iteration::{IdealNetwork, Network};
use workload::job::Job;
use workload::parallel::{Group, RankOrder};

use crate::runner::NicMap;

/// Why a job cannot be placed on a fabric or priced on it.
#[derive(Debug, thiserror::Error)]
pub enum PlaceError {
    /// More GPUs than the fabric's servers × NICs.
    #[error("the job has {gpus} GPUs; the fabric has {servers} servers × {nics} NICs")]
    TooLarge {
        /// The job's GPUs.
        gpus: u32,
        /// Servers in the fabric.
        servers: usize,
        /// NICs per server.
        nics: usize,
    },
    /// The fabric's servers and NICs do not form rails.
    #[error("the fabric's servers do not form rails")]
    Rails(#[source] crate::runner::RunError),
    /// A NIC the job needs with no live port on one of the fabric's planes.
    #[error(
        "{nic} has no live port: its leaf is down (or its cable), and the job needs it (dual ToRs keep a NIC on the pair's other leaf)"
    )]
    NoPort {
        /// The NIC, its rank and the plane.
        nic: String,
    },
    /// The flow engine cannot price this fabric (it drops).
    #[error("the flow engine does not model {0}; price it with --engine packet")]
    FlowRefused(String),
    /// An operation could not be run on the fabric.
    #[error("price {op} on the fabric")]
    Run {
        /// The operation's label.
        op: String,
        /// What failed.
        #[source]
        source: crate::runner::RunError,
    },
}

/// What prices an operation's messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pricing {
    /// Max-min fair flows (`flow`).
    Flow,
    /// The InfiniBand packet simulator, packet by packet (slow; for checking the
    /// flow engine on jobs small enough to run both).
    Packet,
    /// Flows at the operation's full size, times the packet level's slowdown
    /// over flows on the same messages cut to at most `cap` bytes each: what
    /// the flow engine does not model (drops and go-back-N, PFC pauses,
    /// DCQCN's rate control) measured packet by packet on the operation's own
    /// traffic pattern, at a size the packet level runs in about a second.
    Hybrid {
        /// Largest message the packet level runs of an operation it scales, bytes.
        cap: u64,
        /// Operations whose largest message is at most this run at full size
        /// at packet level, bytes (no scaling, no flow answer).
        full: u64,
    },
}

/// What one operation's run on the fabric found, beside its time.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct OpDetail {
    /// The packet level's time over the flow engine's on the capped messages
    /// (hybrid pricing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_factor: Option<f64>,
    /// The largest message the packet level ran, bytes (hybrid pricing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packet_bytes: Option<u64>,
    /// Packets dropped at packet level.
    pub drops: u64,
    /// Packets retransmitted at packet level.
    pub retransmissions: u64,
    /// PFC pause time at packet level, summed over ports and priorities, µs.
    pub pause_us: f64,
    /// Congestion notification packets at packet level.
    pub cnps: u64,
    /// The switch egress port busiest with the operation (and what ran beside
    /// it) at flow level, `switch/port`: where it queued.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hottest_port: Option<String>,
    /// That port's busy time, bytes carried over its rate, seconds.
    pub hottest_busy_s: f64,
    /// ECMP's uplink imbalance from this job's bytes: at the leaf sending the
    /// most up, its busiest uplink over the least any spreading of whole
    /// connections could put on one (the mean over its uplinks, or its
    /// largest connection). 1 = even; connections hashed onto one uplink
    /// while others idle raise it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uplink_imbalance: Option<f64>,
}

/// `workload`'s network, priced on a fabric by the flow engine or the packet
/// simulator. [`FabricNetwork::price`] runs every operation of an iteration on
/// the fabric; the [`Network`] trait then reads the prices.
pub struct FabricNetwork<'a> {
    fabric: &'a Fabric,
    routing: Route<'a>,
    job: &'a Job,
    nic_of_rank: Vec<NodeId>,
    /// A NIC's endpoints on this fabric, one slot per port it has here
    /// (`None`: down), by its first live one, when it has several (dual
    /// ToRs; [`planes`]).
    sides: BTreeMap<NodeId, Vec<Option<NodeId>>>,
    /// Planes sharing every message: this fabric carries `1/share` of it.
    share: u32,
    wire: WireModel,
    ideal: IdealNetwork,
    pricing: Pricing,
    seed: u64,
    cache: RefCell<BTreeMap<(u8, u8, u64), f64>>,
    fallback: RefCell<Vec<String>>,
    effort: RefCell<PriceEffort>,
    /// Other jobs' messages that run beside each of this job's operations
    /// (flow pricing; see [`run_jobs`]).
    background: Vec<Message>,
    /// QPs per connection: each message striped over this many.
    qps: u32,
    /// The InfiniBand packet world's settings.
    ib_cfg: sim::IbConfig,
    /// The RoCE NICs' send and receive latencies, ps, for the packet world
    /// (which has no such setting of its own; `crate::runner::NicDelay`).
    roce_nic: Option<(u64, u64)>,
    /// Background TCP in the RoCE packet runs ([`FabricNetwork::with_tcp`]).
    tcp: Option<(Vec<sim::roce::tcp::TcpFlowSpec>, sim::roce::tcp::TcpConfig)>,
    /// What each operation's run found, by the price cache's key.
    details: RefCell<BTreeMap<(u8, u8, u64), OpDetail>>,
}

/// A message between two NICs: (from, to, bytes).
pub type Message = (NodeId, NodeId, u64);

/// How a priced fabric forwards.
#[derive(Clone, Copy)]
pub enum Route<'a> {
    /// InfiniBand: the SM's tables.
    Ib(&'a sm::RoutingTables),
    /// RoCEv2: the Ethernet control plane's ECMP groups, each connection hashed
    /// by its QP's UDP source port as the packet world hashes it, and the RoCE
    /// world's settings for packet pricing.
    Eth(&'a ethcp::EcmpTable, ethcp::HashConfig, &'a sim::roce::net::RoceConfig),
}

/// The fabric a training job runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrainFabric {
    /// InfiniBand, routed by the SM (ftree).
    #[default]
    Infiniband,
    /// RoCEv2 on the same units (L3 with ECMP over shortest paths, per-QP
    /// hash) as `compare`'s tuned variant: PFC, ECN and DCQCN (NVIDIA's
    /// firmware profile); at flow level the steady state's max-min rates.
    Rocev2,
    /// The same with PFC and no DCQCN or ECN (`compare`'s PFC-only variant).
    Rocev2PfcOnly,
    /// The same without PFC (`compare`'s lossy variant): drops and go-back-N,
    /// packet level only.
    Rocev2Lossy,
}

impl TrainFabric {
    /// An Ethernet build.
    pub fn is_ethernet(self) -> bool {
        self != TrainFabric::Infiniband
    }
}

/// What pricing cost: operations run on the fabric and the engines' work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PriceEffort {
    /// Distinct operations run on the fabric.
    pub ops_run: u32,
    /// Messages (one per ring edge, pair or stage boundary) over all of them.
    pub messages: u64,
    /// The engine's events.
    pub events: u64,
    /// Wall time, seconds.
    pub wall_s: f64,
}

impl<'a> FabricNetwork<'a> {
    /// Place `job` packed on `fabric` (InfiniBand, routed by `tables`), priced by
    /// `pricing` (the packet simulator draws from `seed`).
    pub fn new(
        fabric: &'a Fabric,
        tables: &'a sm::RoutingTables,
        job: &'a Job,
        pricing: Pricing,
        seed: u64,
    ) -> Result<Self, PlaceError> {
        let servers = fabric.hosts.len();
        Self::placed(
            fabric,
            Route::Ib(tables),
            job,
            pricing,
            seed,
            &(0..servers).collect::<Vec<_>>(),
        )
    }

    /// Stripe every connection's data over `qps` QPs (NCCL's
    /// `NCCL_IB_QPS_PER_CONNECTION`): on RoCEv2 each QP hashes onto its own
    /// ECMP path.
    pub fn with_qps(mut self, qps: u32) -> Self {
        self.qps = qps.max(1);
        self
    }

    /// Price with these endpoints: the InfiniBand packet world's settings, the
    /// RoCE NICs' send and receive latencies (ps) and the flow engine's wire
    /// model (`compare`'s published NICs).
    pub fn with_endpoints(mut self, ib_cfg: sim::IbConfig, roce_nic: Option<(u64, u64)>, wire: WireModel) -> Self {
        self.ib_cfg = ib_cfg;
        self.roce_nic = roce_nic;
        self.wire = wire;
        self
    }

    /// Run other jobs' messages beside each operation.
    pub fn beside(&mut self, msgs: &[Message]) {
        self.background.extend_from_slice(msgs);
    }

    /// What the run of the operation `op` found (`None` if it did not cross
    /// the fabric).
    pub fn detail(&self, op: &CommOp) -> Option<OpDetail> {
        self.details
            .borrow()
            .get(&(op.group as u8, op.kind as u8, op.bytes))
            .cloned()
    }
    /// Operations priced without contention (inside NVLink, or a group this
    /// placement does not form), by label.
    pub fn contention_free(&self) -> Vec<String> {
        self.fallback.borrow().clone()
    }

    /// What pricing has cost so far.
    pub fn effort(&self) -> PriceEffort {
        *self.effort.borrow()
    }

    /// Run every operation of `it` that crosses the fabric, once per distinct
    /// (group, kind, size).
    pub fn price(&self, it: &workload::iteration::Iteration) -> Result<(), PlaceError> {
        self.price_ops(&it.ops)
    }

    /// Run every operation of `ops` that crosses the fabric (once per distinct
    /// group, kind and size).
    pub fn price_ops(&self, ops: &[CommOp]) -> Result<(), PlaceError> {
        for op in ops {
            let Some(groups) = self.on_fabric(op) else { continue };
            let key = (op.group as u8, op.kind as u8, op.bytes);
            if self.cache.borrow().contains_key(&key) {
                continue;
            }
            let t = self.run(op, &groups).map_err(|source| PlaceError::Run {
                op: op.label.clone(),
                source,
            })?;
            self.cache.borrow_mut().insert(key, t);
        }
        Ok(())
    }

    /// The network operation of `it` that moves the most bytes over the fabric,
    /// by label, with its messages (what this job puts beside another's).
    pub fn busiest(&self, it: &workload::iteration::Iteration) -> (String, Vec<Message>) {
        let mut best = (String::new(), Vec::new(), 0u64);
        for op in &it.ops {
            let Some(groups) = self.on_fabric(op) else { continue };
            let msgs = self.messages(op, &groups);
            let bytes: u64 = msgs.iter().map(|m| m.2).sum();
            if bytes > best.2 {
                best = (op.label.clone(), msgs, bytes);
            }
        }
        (best.0, best.1)
    }

    /// The groups `op` runs in when it crosses the fabric.
    fn on_fabric(&self, op: &CommOp) -> Option<Vec<Vec<u32>>> {
        match op.link {
            Link::Network => self.groups(op.group),
            Link::NvLink => None,
        }
    }

    /// (t, c, d, p) → rank, in the job's rank order.
    fn rank(&self, t: u32, c: u32, d: u32, p: u32) -> u32 {
        let par = &self.job.parallel;
        let (tt, cc, dd, pp) = (par.tp, par.cp, self.job.dp(), par.pp);
        match par.order {
            RankOrder::Megatron => t + tt * (c + cc * (d + dd * p)),
            RankOrder::Llama3 => t + tt * (c + cc * (p + pp * d)),
        }
    }

    /// The members of every group of `group`, in ring order.
    fn groups(&self, group: Group) -> Option<Vec<Vec<u32>>> {
        let par = &self.job.parallel;
        let (tt, cc, dd, pp) = (par.tp, par.cp, self.job.dp(), par.pp);
        let mut out = Vec::new();
        match group {
            Group::Dp => {
                for t in 0..tt {
                    for p in 0..pp {
                        out.push(
                            (0..dd)
                                .flat_map(|d| (0..cc).map(move |c| (c, d)))
                                .map(|(c, d)| self.rank(t, c, d, p))
                                .collect(),
                        );
                    }
                }
            }
            Group::Pp => {
                for t in 0..tt {
                    for c in 0..cc {
                        for d in 0..dd {
                            out.push((0..pp).map(|p| self.rank(t, c, d, p)).collect());
                        }
                    }
                }
            }
            Group::Cp => {
                for t in 0..tt {
                    for d in 0..dd {
                        for p in 0..pp {
                            out.push((0..cc).map(|c| self.rank(t, c, d, p)).collect());
                        }
                    }
                }
            }
            Group::Tp => {
                for c in 0..cc {
                    for d in 0..dd {
                        for p in 0..pp {
                            out.push((0..tt).map(|t| self.rank(t, c, d, p)).collect());
                        }
                    }
                }
            }
            Group::Ep | Group::ExpertDp => {
                // expert parallelism is carved out of the dp × cp ranks (index
                // c + cp·d): an EP group is `ep` consecutive ones, an expert
                // data-parallel group every `ep`-th (`workload::parallel::Group`)
                let e = par.ep.max(1);
                let n = cc * dd;
                for t in 0..tt {
                    for p in 0..pp {
                        let at = |k: u32| self.rank(t, k % cc, k / cc, p);
                        if group == Group::Ep {
                            for g0 in (0..n).step_by(e as usize) {
                                out.push((g0..(g0 + e).min(n)).map(at).collect());
                            }
                        } else {
                            for j in 0..e.min(n) {
                                out.push((j..n).step_by(e as usize).map(at).collect());
                            }
                        }
                    }
                }
            }
        }
        Some(out)
    }

    /// Every group's messages for one occurrence of `op`: NIC to NIC, bytes.
    pub fn messages(&self, op: &CommOp, groups: &[Vec<u32>]) -> Vec<(NodeId, NodeId, u64)> {
        let mut out = Vec::new();
        let sent = op.sent() as u64;
        // this plane's share of every byte (all of it on one plane)
        let share = u64::from(self.share);
        let mut push = |a: u32, b: u32, bytes: u64| {
            let (na, nb) = (self.nic_of_rank[a as usize], self.nic_of_rank[b as usize]);
            let bytes = bytes.div_ceil(share);
            if na != nb && bytes > 0 {
                out.push((na, nb, bytes));
            }
        };
        for (gi, m) in groups.iter().enumerate() {
            let n = m.len();
            match op.kind {
                CommKind::AllReduce | CommKind::ReduceScatter | CommKind::AllGather | CommKind::Broadcast => {
                    for i in 0..n {
                        push(m[i], m[(i + 1) % n], sent);
                    }
                }
                CommKind::AllToAll => {
                    // `op.bytes` is the busiest rank's (the mean times the
                    // router skew): with a skew, one member of each group (drawn
                    // from the seed: the rank holding that step's popular
                    // experts) receives that from every other, and the rest
                    // receive the mean
                    let each = (op.bytes / n.max(1) as u64).max(1);
                    let skew = self.job.router_skew;
                    let hot = if skew > 1.0 {
                        Some(m[hot_member(self.seed, gi as u64, n)])
                    } else {
                        None
                    };
                    let cold = if hot.is_some() {
                        ((each as f64 / skew) as u64).max(1)
                    } else {
                        each
                    };
                    for &a in m {
                        for &b in m {
                            if a != b {
                                push(a, b, if Some(b) == hot { each } else { cold });
                            }
                        }
                    }
                }
                CommKind::SendRecv => {
                    for w in m.windows(2) {
                        push(w[0], w[1], op.bytes);
                    }
                }
            }
        }
        out
    }

    /// Run every group's share of `op` at once; seconds to the last completion.
    fn run(&self, op: &CommOp, groups: &[Vec<u32>]) -> Result<f64, crate::runner::RunError> {
        let wall = std::time::Instant::now();
        let msgs = self.striped(&self.messages(op, groups));
        let bg = self.striped(&self.background);
        let mut detail = OpDetail::default();
        let (ps, events) = match self.pricing {
            Pricing::Flow => {
                let r = self.flow(&msgs, &bg)?;
                detail.hottest_port = r.hottest.as_ref().map(|h| h.0.clone());
                detail.hottest_busy_s = r.hottest.map_or(0.0, |h| h.1);
                detail.uplink_imbalance = r.imbalance;
                (r.last_ps as f64, r.events)
            }
            Pricing::Packet => {
                let (t, c) = self.packet(&msgs, &[])?;
                detail.drops = c.drops;
                detail.retransmissions = c.retransmissions;
                detail.pause_us = c.pause_us;
                detail.cnps = c.cnps;
                (t as f64, c.events)
            }
            Pricing::Hybrid { cap, full: whole } => {
                let full = self.flow(&msgs, &bg)?;
                // every message of the operation scaled alike, the largest to
                // `cap`, so the pattern keeps its shape (a skewed all-to-all's
                // hot receiver stays hot); what runs beside it scaled alike too,
                // none beyond the operation's largest message
                let largest = msgs.iter().map(|m| m.2).max().unwrap_or(0);
                let scale = if largest > whole.max(cap) {
                    cap as f64 / largest as f64
                } else {
                    1.0
                };
                let cut = |m: &[(NodeId, NodeId, u64, u16)]| -> Vec<(NodeId, NodeId, u64, u16)> {
                    m.iter()
                        .map(|&(a, b, n, q)| (a, b, ((n as f64 * scale) as u64).clamp(1, largest.max(1)), q))
                        .collect()
                };
                let (cm, cb) = (cut(&msgs), cut(&bg));
                let small = self.flow(&cm, &cb)?;
                let (t, c) = self.packet(&cm, &cb)?;
                let factor = if small.last_ps == 0 {
                    1.0
                } else {
                    t as f64 / small.last_ps as f64
                };
                detail = OpDetail {
                    packet_factor: Some(factor),
                    packet_bytes: cm.iter().map(|m| m.2).max(),
                    drops: c.drops,
                    retransmissions: c.retransmissions,
                    pause_us: c.pause_us,
                    cnps: c.cnps,
                    hottest_port: full.hottest.as_ref().map(|h| h.0.clone()),
                    hottest_busy_s: full.hottest.map_or(0.0, |h| h.1),
                    uplink_imbalance: full.imbalance,
                };
                (full.last_ps as f64 * factor, full.events + small.events + c.events)
            }
        };
        self.details
            .borrow_mut()
            .insert((op.group as u8, op.kind as u8, op.bytes), detail);
        let mut e = self.effort.borrow_mut();
        e.ops_run += 1;
        e.messages += msgs.len() as u64;
        e.events += events;
        e.wall_s += wall.elapsed().as_secs_f64();
        Ok(ps / 1e12)
    }
}

mod engines;
use engines::{hot_member, lanes};

impl Network for FabricNetwork<'_> {
    /// The price [`FabricNetwork::price`] found; what does not cross the fabric
    /// (or was not priced) at the ideal network's.
    fn op_time_s(&self, op: &CommOp) -> f64 {
        if op.link == Link::Network && self.groups(op.group).is_some() {
            let key = (op.group as u8, op.kind as u8, op.bytes);
            if let Some(&t) = self.cache.borrow().get(&key) {
                return t;
            }
        }
        let mut fb = self.fallback.borrow_mut();
        if !fb.contains(&op.label) {
            fb.push(op.label.clone());
        }
        self.ideal.op_time_s(op)
    }
}

/// The cluster a job runs on: DGX SuperPOD-style scalable units of InfiniBand.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainCluster {
    /// Scalable units (`None`: as few as hold the job).
    pub sus: Option<u32>,
    /// Servers per unit (32 in the DGX SuperPOD RAs).
    pub servers_per_su: u32,
    /// GPUs (and NICs, one rail each) per server.
    pub gpus_per_server: u32,
    /// Uplinks per leaf (`None`: non-blocking).
    pub leaf_uplinks: Option<u32>,
    /// Switch radix.
    pub radix: u32,
    /// NIC speed, Gb/s: over all its ports (with planes or dual ToRs each
    /// port carries its share: 400 over two planes is two 200G ports).
    pub nic_gbps: u32,
    /// Independent planes, a port of every NIC on each (1: one fabric; 2:
    /// Alibaba HPN's dual plane).
    pub planes: u32,
    /// Two ToRs per rail and unit in each plane, every NIC on both.
    pub dual_tor: bool,
    /// Which servers the job gets.
    pub placement: Placement,
    /// InfiniBand or RoCEv2.
    pub fabric: TrainFabric,
    /// The Ethernet switches' ECMP hash seed (RoCEv2).
    pub hash_seed: u32,
    /// RoCEv2: switches whose map sends the RDMA DSCP to a lossy class (a
    /// misconfigured hop: it drops instead of pausing); by name.
    pub lossy_hops: Vec<String>,
    /// Switches down (every cable of theirs unplugged), by name: the routing
    /// converges around them; a NIC whose ports are all on them is lost.
    pub failed: Vec<String>,
}

mod placement;
pub(crate) use placement::describe_placement;
pub use placement::{CHURN_ROUNDS, Placement};

impl Default for TrainCluster {
    fn default() -> Self {
        TrainCluster {
            sus: None,
            servers_per_su: 32,
            gpus_per_server: 8,
            leaf_uplinks: None,
            radix: 64,
            nic_gbps: 400,
            planes: 1,
            dual_tor: false,
            placement: Placement::Packed,
            fabric: TrainFabric::Infiniband,
            hash_seed: 1,
            lossy_hops: Vec::new(),
            failed: Vec::new(),
        }
    }
}

/// Why a job could not be run.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// Several jobs that cannot run together as asked.
    #[error("{0}")]
    Jobs(String),
    /// The job does not fit its cluster or is inconsistent.
    #[error("{field}: {source}")]
    Job {
        /// The job field at fault.
        field: String,
        /// What is wrong.
        #[source]
        source: workload::job::JobError,
    },
    /// The cluster could not be generated.
    #[error("build the cluster")]
    Cluster(#[source] fabric::GenError),
    /// The Subnet Manager could not route it.
    #[error("route the cluster with the SM")]
    Route(#[source] sm::run::RunError),
    /// The job could not be placed or priced.
    #[error(transparent)]
    Place(#[from] PlaceError),
}

/// One operation of the iteration, priced both ways.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct OpPrice {
    /// The operation.
    pub op: CommOp,
    /// Seconds per occurrence on the contention-free network.
    pub ideal_s: f64,
    /// Seconds per occurrence on the fabric.
    pub fabric_s: f64,
    /// Whether the fabric priced it (false: inside NVLink or a group this
    /// placement does not form, priced as the ideal network).
    pub on_fabric: bool,
    /// What its run on the fabric found (packet counters, the port where it
    /// queued), when it ran there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<OpDetail>,
}

/// One iteration of a job on a cluster.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrainRun {
    /// The job as checked.
    pub job: String,
    /// Model preset or dimensions, in words.
    pub model: String,
    /// GPUs of the job.
    pub gpus: u32,
    /// Parallel sizes in words.
    pub parallel: String,
    /// The cluster: units × servers × GPUs, switches, tiers.
    pub cluster: String,
    /// Servers in the cluster.
    pub servers: u32,
    /// Which servers the job got (`Placement`), in words.
    pub placement: String,
    /// What routed the fabric, in words.
    pub routed_by: String,
    /// With several jobs at once: what this job's operations were priced beside.
    pub beside: String,
    /// With several jobs at once at flow level: this job's iterations in
    /// their joint schedule ([`joint`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub joint: Option<JointTime>,
    /// Switches in the cluster.
    pub switches: u32,
    /// The engine that priced the network operations.
    pub engine: &'static str,
    /// Kernel efficiency used for compute and where it came from.
    pub efficiency: f64,
    /// Where the efficiency came from.
    pub efficiency_source: String,
    /// The operations.
    pub ops: Vec<OpPrice>,
    /// Bytes one rank sends over the network per iteration, by group (imported
    /// workloads, whose operations come from a file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bytes_per_rank: Vec<GroupBytes>,
    /// The iteration on the contention-free network.
    pub ideal: IterTime,
    /// The iteration on the fabric.
    pub fabric: IterTime,
    /// Seconds to generate the cluster, route it and price the iteration.
    pub build_s: f64,
    /// Seconds the SM took.
    pub route_s: f64,
    /// What pricing cost.
    pub price: PriceEffortOut,
}

/// An iteration's time as the report shows it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct IterTime {
    /// Compute of every micro-batch on the busiest stage, s.
    pub compute_s: f64,
    /// Pipeline bubble, s.
    pub bubble_s: f64,
    /// Communication on the critical path, s.
    pub exposed_comm_s: f64,
    /// Iteration, s.
    pub total_s: f64,
    /// Model TFLOP/s per GPU.
    pub tflops_per_gpu: f64,
}

/// Bytes one rank sends per iteration in one group.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GroupBytes {
    /// The group (`tp`, `dp`, `ep`, `expert-dp`, `pp`).
    pub group: workload::comm::Group,
    /// Over the network, bytes.
    pub network: u64,
    /// Over NVLink, bytes.
    pub nvlink: u64,
}

/// Pricing's effort as the report shows it.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PriceEffortOut {
    /// Distinct operations run on the fabric.
    pub ops_run: u32,
    /// Messages over all of them.
    pub messages: u64,
    /// Engine events.
    pub events: u64,
    /// Wall time, s.
    pub wall_s: f64,
}

/// The kernel efficiency fitted on the DGX Cloud Llama 3.1 70B recipe on 64
/// H100s (`workload::published`; docs/VALIDATION.md §11) on the ideal network.
pub fn published_efficiency() -> (f64, String) {
    let runs = workload::published::dgxc_llama31_bf16();
    let r = &runs[0];
    let it = workload::iteration::Iteration::of(&r.job);
    // the recipe's own step time at 400 Gb/s per GPU; the fit cannot fail on
    // this fixed input (a test asserts it), and a NaN would show in every figure
    let eff = it
        .fit_efficiency(&IdealNetwork::new(&r.job.gpu, 50.0), it.tflops_per_gpu(r.step_s))
        .unwrap_or(f64::NAN);
    (
        eff,
        format!("fitted on {} (NVIDIA dgxc-benchmarking, step {} s)", r.name, r.step_s),
    )
}

mod built;
use built::Built;
mod planes;
pub use planes::PlaneNets;
pub mod joint;
pub use joint::JointTime;

fn engine_name(p: Pricing) -> &'static str {
    match p {
        Pricing::Flow => "flow",
        Pricing::Packet => "packet",
        Pricing::Hybrid { .. } => "hybrid",
    }
}

/// Run one iteration of `spec` on `cluster`, priced by `pricing`.
pub fn run_job(
    spec: &workload::job::JobSpec,
    cluster: &TrainCluster,
    pricing: Pricing,
    efficiency: Option<f64>,
    seed: u64,
) -> Result<TrainRun, TrainError> {
    let mut runs = run_jobs(std::slice::from_ref(spec), cluster, pricing, efficiency, seed)?;
    Ok(runs.remove(0))
}

/// Run one iteration of every job of `specs` on one `cluster` at once: the
/// cluster holds them all (`cluster.sus`, else as few units as do), the jobs
/// take their servers in turn by `cluster.placement`, and with more than one
/// job each operation of a job is priced beside the other jobs' busiest
/// network operation (the one moving the most bytes), started with it: a
/// fixed pairing, not a schedule (it is no bound either: a job whose short
/// iterations never stop can cost another more). On one plane the jobs'
/// timelines also run on one clock ([`joint`]), each job's `joint` its
/// iterations there. Several jobs are priced at flow level only.
pub fn run_jobs(
    specs: &[workload::job::JobSpec],
    cluster: &TrainCluster,
    pricing: Pricing,
    efficiency: Option<f64>,
    seed: u64,
) -> Result<Vec<TrainRun>, TrainError> {
    use workload::iteration::Iteration;
    let wall = std::time::Instant::now();
    let g = cluster.gpus_per_server.max(1);
    if specs.len() > 1 && pricing == Pricing::Packet {
        return Err(TrainError::Jobs(
            "several jobs at once are priced at flow level only (--engine flow)".into(),
        ));
    }
    let need: Vec<u32> = specs.iter().map(|s| s.gpus.div_ceil(g)).collect();
    let (sus, per_su) = Built::units(cluster, need.iter().sum::<u32>() * g);
    let cap = sus * per_su * g;
    let mut jobs = Vec::with_capacity(specs.len());
    for spec in specs {
        jobs.push(spec.check(cap).map_err(|source| TrainError::Job {
            field: source.field(),
            source,
        })?);
    }
    if need.iter().sum::<u32>() > sus * per_su {
        return Err(TrainError::Jobs(format!(
            "the jobs need {} servers together; the cluster has {} ({} unit(s) × {}): give more --sus",
            need.iter().sum::<u32>(),
            sus * per_su,
            sus,
            per_su
        )));
    }
    let built = Built::new(cluster, (sus, per_su))?;
    let total = (built.sus * built.per_su) as usize;
    let order = cluster
        .placement
        .servers(total, built.per_su as usize, need.iter().sum::<u32>() as usize, seed);
    let mut placed: Vec<Vec<usize>> = Vec::with_capacity(jobs.len());
    let mut at = 0;
    for &n in &need {
        placed.push(order[at..at + n as usize].to_vec());
        at += n as usize;
    }
    let its: Vec<Iteration> = jobs.iter().map(Iteration::of).collect();
    let mut fabs = Vec::with_capacity(jobs.len());
    for (job, servers) in jobs.iter().zip(&placed) {
        fabs.push(PlaneNets::on(&built, job, pricing, seed, servers)?);
    }
    let mut beside = vec![String::new(); jobs.len()];
    if jobs.len() > 1 {
        let busiest: Vec<(String, Vec<Vec<Message>>)> = fabs.iter().zip(&its).map(|(f, it)| f.busiest(it)).collect();
        for (i, fab) in fabs.iter_mut().enumerate() {
            let mut others = Vec::new();
            for (j, (label, msgs)) in busiest.iter().enumerate() {
                if j != i {
                    fab.beside(msgs);
                    others.push(format!("{}'s {label}", jobs[j].name));
                }
            }
            beside[i] = format!(
                "each operation priced beside {} (the busiest network operation, started with it)",
                others.join(" and ")
            );
        }
    }
    for (fab, it) in fabs.iter().zip(&its) {
        fab.price(it)?;
    }
    let eff = efficiency.unwrap_or_else(|| published_efficiency().0);
    let mut joint = vec![None; jobs.len()];
    if jobs.len() > 1 {
        let pairs: Vec<_> = fabs.iter().zip(&its).collect();
        for (k, t) in joint::joint(&pairs, eff, seed)
            .map_err(|e| TrainError::Jobs(format!("joint schedule: {}", chain(&e))))?
            .into_iter()
            .enumerate()
        {
            joint[k] = Some(t);
        }
    }
    let mut out = Vec::with_capacity(jobs.len());
    for (k, fab) in fabs.iter().enumerate() {
        let mut r = train_run(&jobs[k], &its[k], fab, &built, cluster, &placed[k], pricing, efficiency);
        r.beside = std::mem::take(&mut beside[k]);
        r.joint = joint[k].take();
        r.build_s = wall.elapsed().as_secs_f64();
        out.push(r);
    }
    Ok(out)
}

/// A priced iteration as its report.
#[allow(clippy::too_many_arguments)]
fn train_run(
    job: &Job,
    it: &workload::iteration::Iteration,
    fab: &PlaneNets<'_>,
    built: &Built,
    cluster: &TrainCluster,
    placed: &[usize],
    pricing: Pricing,
    efficiency: Option<f64>,
) -> TrainRun {
    let (eff, source) = match efficiency {
        Some(e) => (e, "given".to_string()),
        None => published_efficiency(),
    };
    let ideal_net = fab.ideal();
    let ops = it
        .ops
        .iter()
        .map(|op| {
            let fabric_s = fab.op_time_s(op);
            OpPrice {
                op: op.clone(),
                ideal_s: ideal_net.op_time_s(op),
                fabric_s,
                on_fabric: !fab.contention_free().contains(&op.label),
                detail: fab.detail(op),
            }
        })
        .collect();
    let time = |t: workload::iteration::IterationTime| IterTime {
        compute_s: t.compute_s,
        bubble_s: t.bubble_s,
        exposed_comm_s: t.exposed_comm_s,
        total_s: t.total_s,
        tflops_per_gpu: it.tflops_per_gpu(t.total_s),
    };
    let e = fab.effort();
    let p = &job.parallel;
    TrainRun {
        job: job.name.clone(),
        model: job.model.name.clone(),
        gpus: job.gpus,
        parallel: format!(
            "tp {} · cp {} · pp {} · dp {} · ep {}",
            p.tp,
            p.cp,
            p.pp,
            job.dp(),
            p.ep
        ),
        cluster: built.describe(cluster),
        placement: describe_placement(cluster.placement, placed, built.per_su as usize),
        routed_by: built.routed_by(),
        beside: String::new(),
        joint: None,
        servers: built.sus * built.per_su,
        switches: built.fabric.count(fabric::NodeKind::Switch) as u32,
        engine: engine_name(pricing),
        efficiency: eff,
        efficiency_source: source,
        ops,
        bytes_per_rank: Vec::new(),
        ideal: time(it.time(&ideal_net, eff)),
        fabric: time(it.time(fab, eff)),
        build_s: 0.0,
        route_s: built.route_s,
        price: PriceEffortOut {
            ops_run: e.ops_run,
            messages: e.messages,
            events: e.events,
            wall_s: e.wall_s,
        },
    }
}

mod aicb;
pub use aicb::{ImportError, run_aicb};
mod chakra;
pub use chakra::{ChakraError, run_chakra};

#[cfg(test)]
mod tests;

/// An error and its sources, joined: what the user needs to see of why.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cur = c.source();
    }
    out
}
