//! A fault in the middle of a job's collective, on every variant the flow engine
//! runs: how long the traffic it touches stalls, how much longer the collective
//! takes, whether NCCL times out and the job restarts, and the GPU-hours lost.
//!
//! Faults ([`Fault`]):
//! - **link down**: a switch-to-switch link is cut.
//! - **switch down**: every link of a switch. A spine is routed around; a leaf
//!   that carries NICs cuts their GPUs off (in a rail-optimised cluster each NIC
//!   has one leaf: DGX SuperPOD RA, failures-isolation-sweeps.md §5), and the job
//!   restarts.
//! - **flapping link**: down and up again N times; every transition is a trap and
//!   a sweep on InfiniBand, a BFD session down (and, with dampening, a penalty) on
//!   Ethernet ([`recovery::ib_flap_stalls`], [`recovery::eth_flap_stalls`]).
//! - **degraded link**: trained at a lower rate (4x → 1x, 400G → 200G) and/or with
//!   bit errors, recovered by LLR on InfiniBand and by RC's go-back-N on RoCE
//!   ([`recovery::error_efficiency`]); the flow engine runs it as a link of lower
//!   capacity: the job slows, nothing stalls.
//! - **NIC storm**: a NIC's receive pipeline sticks. On RoCE it pauses its switch
//!   without end and the pauses spread until the PFC watchdog drops the queue; on
//!   InfiniBand (no PFC) it withholds credits and the backpressure spreads until
//!   the switch port's head-of-queue lifetime stalls the VL ([`recovery::nic_containment`]).
//!   Its rank can receive nothing, so the job's collective cannot finish: NCCL
//!   times out and the job restarts on both fabrics; what differs is how long the
//!   rest of the fabric was blocked.
//!
//! Recovery:
//! - **InfiniBand** recovers through our Subnet Manager: the SM is brought up over
//!   in-process SMA agents, each change is made, and the SM's poll (light sweep,
//!   heavy sweep, changed LFT blocks) runs. The stall is the deterministic
//!   [`recovery::SM_WALL_PER_SMP_S`] × the SMPs that poll sent; the poll's wall
//!   time on this machine is reported beside it.
//! - **Ethernet** recovers through BFD and BGP (FRR's 3 × 300 ms; without BFD the
//!   hold time) ([`EthTimers`]).
//! - **NCCL** waits `4.096 µs × 2^NCCL_IB_TIMEOUT` per retry, `NCCL_IB_RETRY_CNT + 1`
//!   times (defaults 20 and 7: about 34 s; §2.5) before the QP errors out; a job
//!   that restarts loses its GPUs for that wait, the restart and half a checkpoint
//!   interval ([`crate::failure_cost`]).
//!
//! The collective runs at flow level on the healthy fabric and again on the
//! faulted one (the SM's new routes; the ECMP groups without the link). Hit at a
//! fraction `at` of its healthy time, a collective whose flows the fault touches
//! takes `at · healthy + stall + (1 − at) · degraded`: ring and tree collectives
//! advance in lock step, so one stalled edge stalls them all. The figures are this
//! model's, not a packet-level replay.

pub mod recovery;

use fabric::{Endpoint, Fabric, LinkId, LinkRate, NodeId, NodeKind};
use serde::{Deserialize, Serialize};

use recovery::Change;
pub use recovery::{Dampening, EthTimers, FlapPlan, FlapStall, SmRecovery};

use crate::collective::{Collective, CollectiveSpec, HopCost};
use crate::driver::{Job, JobOut, World};
use crate::failure_cost::FailureModel;
use crate::flow_world::{FlowRouting, FlowWorld};
use crate::runner::{NicMap, RunError};
use crate::scenario::{Scenario, VariantFabric};
use crate::tco::Tech;

/// NCCL's InfiniBand/RoCE transport timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclTimeout {
    /// `NCCL_IB_TIMEOUT` (default 20 since NCCL 2.23).
    pub ib_timeout: u8,
    /// `NCCL_IB_RETRY_CNT` (default 7).
    pub retry_cnt: u8,
}

impl Default for NcclTimeout {
    fn default() -> Self {
        NcclTimeout {
            ib_timeout: 20,
            retry_cnt: 7,
        }
    }
}

impl NcclTimeout {
    /// Seconds a QP waits before it errors out: the local ACK timeout
    /// `4.096 µs × 2^timeout` (IBA vol. 1 §12.7.34), `retry_cnt + 1` times.
    pub fn seconds(&self) -> f64 {
        4.096e-6 * 2f64.powi(i32::from(self.ib_timeout)) * f64::from(u32::from(self.retry_cnt) + 1)
    }
}

/// The fault to inject.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Fault {
    /// A switch-to-switch link goes down.
    LinkDown,
    /// Every link of a switch goes down (`None`: the spine at the far end of the
    /// link the collective loads most).
    SwitchDown { switch: Option<String> },
    /// The link goes down and up again.
    Flap(FlapPlan),
    /// The link runs at `gbps` (`None`: its own rate) and/or with post-FEC bit
    /// error ratio `ber`; `llr`: InfiniBand's link-level retransmission is on
    /// (where the cable allows it).
    Degraded {
        gbps: Option<u32>,
        ber: Option<f64>,
        llr: bool,
    },
    /// A NIC's receive pipeline sticks (`None`: the fabric's first NIC);
    /// RoCE's PFC watchdog detection and NIC stall prevention, ms (`None`: off).
    NicStorm {
        nic: Option<String>,
        watchdog_ms: Option<f64>,
        nic_prevention_ms: Option<f64>,
    },
}

impl Fault {
    /// The names `--fault` takes, in [`Fault::name`]'s order.
    pub const KINDS: [&'static str; 5] = ["link", "switch", "flap", "degrade", "nic-storm"];

    /// Its `--fault` name.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::LinkDown => "link",
            Fault::SwitchDown { .. } => "switch",
            Fault::Flap(_) => "flap",
            Fault::Degraded { .. } => "degrade",
            Fault::NicStorm { .. } => "nic-storm",
        }
    }

    /// Whether it acts on one switch-to-switch link.
    fn on_a_link(&self) -> bool {
        matches!(self, Fault::LinkDown | Fault::Flap(_) | Fault::Degraded { .. })
    }
}

/// What to break and when.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureOptions {
    /// The collective the job is in when the fault hits, and its size.
    pub op: Collective,
    pub size: u64,
    /// When, as a fraction of the collective's healthy time.
    pub at: f64,
    /// The link (for link faults): a switch and port of the InfiniBand build (the
    /// Ethernet build names its switches alike), on every variant; `None`: on each
    /// variant, the switch-to-switch link its routing puts most of the
    /// collective's connections on.
    pub link: Option<(String, u8)>,
    pub fault: Fault,
    pub eth: EthTimers,
    pub nccl: NcclTimeout,
}

/// One variant's experience of the fault.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantFailure {
    pub id: String,
    pub label: String,
    /// What failed on this variant (a link, a switch, a NIC).
    pub link: String,
    /// Connections of the collective (ring edges, channel by channel) the fault
    /// touched.
    pub connections_through_link: usize,
    /// How the fabric recovers, in words.
    pub recovery: String,
    /// From the fault to the fabric repaired (or the fault contained), s; `None`:
    /// never (or nothing to repair: a degraded link stays up).
    pub recovery_s: Option<f64>,
    /// InfiniBand: the same recovery's wall time on this machine, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_wall_s: Option<f64>,
    /// How long the traffic the fault touched had no path, s (summed over the
    /// flaps of a flapping link; 0 if none was touched).
    pub stall_s: f64,
    /// Each down of a flapping link.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flaps: Vec<FlapStall>,
    /// The collective on the healthy fabric, on the faulted one (`None`: no path
    /// left), and with the fault at `at`, µs.
    pub healthy_us: f64,
    pub degraded_us: Option<f64>,
    pub with_failure_us: f64,
    /// `with_failure / healthy`.
    pub slowdown: f64,
    /// Whether a stall outlasts NCCL's timeout.
    pub nccl_timed_out: bool,
    /// Whether the job restarts (NCCL timed out, or ranks were cut off).
    pub restart: bool,
    /// GPU-hours lost: the job's GPUs idle for the extra time, or, when it
    /// restarts, for NCCL's wait, the restart and half a checkpoint interval.
    pub gpu_hours_lost: f64,
}

/// The fault on every variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureReport {
    pub scenario: String,
    pub gpus: u32,
    pub collective: Collective,
    pub size: u64,
    pub at: f64,
    pub fault: Fault,
    /// What failed on InfiniBand ("link a/1 — b/2", "switch spine0", "NIC x").
    pub link: String,
    /// Our SM's recovery from each change on InfiniBand (empty for a fault the SM
    /// does not see: a degraded link, a stuck NIC).
    pub sm: Vec<SmRecovery>,
    /// The SM's bring-up of the same fabric, wall time, s (for scale).
    pub sm_bring_up_wall_s: f64,
    pub nccl_timeout_s: f64,
    /// Restart and half a checkpoint interval, s (the failure model at this size).
    pub restart_loss_s: f64,
    pub eth: EthTimers,
    pub variants: Vec<VariantFailure>,
    /// Variants the fault study does not run, with why.
    pub not_run: Vec<(String, String)>,
}

/// Why the failure run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FailureError {
    /// The link named is not a cabled switch port.
    #[error("link {switch}/{port}: {why}")]
    NoLink { switch: String, port: u8, why: String },
    /// The switch named is not one.
    #[error("switch {name}: {why}")]
    NoSwitch { name: String, why: String },
    /// The NIC named is not one.
    #[error("nic {name}: {why}")]
    NoNic { name: String, why: String },
    /// An option that does not fit the fault or the fabric.
    #[error("{field}: {why}")]
    BadOption { field: &'static str, why: String },
    /// The fault applies to none of the scenario's variants.
    #[error("fault {fault}: {why}")]
    NotApplicable { fault: &'static str, why: String },
    /// No leaf-to-spine link carries the collective (it stays inside leaves).
    #[error("no switch-to-switch link carries the {0}; give a link to cut")]
    NothingToCut(String),
    /// `at` outside (0, 1).
    #[error("at {0}: expected a fraction of the collective between 0 and 1")]
    At(f64),
    #[error("build the cluster")]
    Build(#[from] fabric::GenError),
    #[error("route with the SM")]
    Sm(#[from] sm::run::RunError),
    #[error("the fabric")]
    Model(#[from] fabric::ModelError),
    #[error(transparent)]
    Schedule(#[from] crate::collective::ScheduleError),
    #[error(transparent)]
    Run(#[from] RunError),
}

impl FailureError {
    /// An error in what the user asked for (exit code 2), not in the model.
    pub fn is_input(&self) -> bool {
        matches!(
            self,
            FailureError::NoLink { .. }
                | FailureError::NoSwitch { .. }
                | FailureError::NoNic { .. }
                | FailureError::BadOption { .. }
                | FailureError::NotApplicable { .. }
                | FailureError::NothingToCut(_)
                | FailureError::At(_)
                | FailureError::Schedule(_)
        )
    }
}

fn is_switch(f: &Fabric, n: NodeId) -> bool {
    f.node(n).kind == NodeKind::Switch
}

/// The link at `switch`/`port` of `f`.
fn find_link(f: &Fabric, switch: &str, port: u8) -> Result<LinkId, FailureError> {
    let no = |why: String| FailureError::NoLink {
        switch: switch.to_string(),
        port,
        why,
    };
    let n = f
        .by_name(switch)
        .ok_or_else(|| no("no switch of that name in the cluster".into()))?;
    let node = f.node(n);
    if node.kind != NodeKind::Switch {
        return Err(no(format!("{switch} is a {:?}, not a switch", node.kind)));
    }
    if port == 0 || port as usize >= node.ports.len() {
        return Err(no(format!(
            "{switch} has ports 1–{}",
            node.ports.len().saturating_sub(1)
        )));
    }
    let l = node.ports[port as usize]
        .link
        .ok_or_else(|| no("the port has no cable".into()))?;
    let other = f.link(l).other(Endpoint { node: n, port });
    if !is_switch(f, other.node) {
        return Err(no("the port is cabled to a NIC; cut a switch-to-switch link".into()));
    }
    Ok(l)
}

/// The switch named `name` of `f`.
fn find_switch(f: &Fabric, name: &str) -> Result<NodeId, FailureError> {
    let no = |why: String| FailureError::NoSwitch {
        name: name.to_string(),
        why,
    };
    let n = f
        .by_name(name)
        .ok_or_else(|| no("no switch of that name in the cluster".into()))?;
    if !is_switch(f, n) {
        return Err(no(format!("{name} is a {:?}, not a switch", f.node(n).kind)));
    }
    Ok(n)
}

/// The NIC named `name` of `f`.
fn find_nic(f: &Fabric, name: &str) -> Result<NodeId, FailureError> {
    let no = |why: String| FailureError::NoNic {
        name: name.to_string(),
        why,
    };
    let n = f
        .by_name(name)
        .ok_or_else(|| no("no NIC of that name in the cluster".into()))?;
    if f.node(n).kind != NodeKind::Ca {
        return Err(no(format!("{name} is a {:?}, not a NIC", f.node(n).kind)));
    }
    Ok(n)
}

fn link_name(f: &Fabric, l: LinkId) -> String {
    let k = f.link(l);
    format!(
        "{}/{} — {}/{}",
        f.node(k.a.node).name,
        k.a.port,
        f.node(k.b.node).name,
        k.b.port
    )
}

/// A ring edge: its two NICs and its data path (egress ports, the NIC's first).
struct Edge {
    src: NodeId,
    dst: NodeId,
    path: Vec<Endpoint>,
}

/// Every connection of the ring collective `spec` (ring edges, channel by
/// channel, numbered as the flow engine numbers them), under `routing`.
fn ring_edges(
    f: &Fabric,
    routing: &FlowRouting,
    nics: &NicMap,
    spec: &CollectiveSpec,
) -> Result<Vec<Edge>, FailureError> {
    let mut out = Vec::with_capacity((spec.gpus * spec.nodes) as usize);
    for c in 0..spec.gpus {
        for node in 0..spec.nodes {
            let src = nics.nic[node as usize][c as usize];
            let dst = nics.nic[((node + 1) % spec.nodes) as usize][c as usize];
            let path = routing.paths(f, src, dst, out.len() as u32)?.0;
            out.push(Edge { src, dst, path });
        }
    }
    Ok(out)
}

/// The switch-to-switch links `path` crosses.
fn spine_links<'a>(f: &'a Fabric, path: &'a [Endpoint]) -> impl Iterator<Item = LinkId> + 'a {
    path.iter().filter_map(move |e| {
        let l = f.node(e.node).ports[e.port as usize].link?;
        let lk = f.link(l);
        (is_switch(f, lk.a.node) && is_switch(f, lk.b.node)).then_some(l)
    })
}

/// The routing engines of the scenario's first InfiniBand variant (ftree, then
/// up/down, when it has none).
fn ib_engines(s: &Scenario) -> Vec<sm::routing::EngineKind> {
    s.variants
        .iter()
        .find_map(|v| match &v.fabric {
            VariantFabric::Infiniband { engines } => Some(engines.clone()),
            _ => None,
        })
        .unwrap_or_else(|| vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn])
}

/// The switch-to-switch link carrying the most connections of `edges`.
fn busiest(f: &Fabric, edges: &[Edge], op: Collective) -> Result<LinkId, FailureError> {
    let mut uses = vec![0usize; f.links.len()];
    for e in edges {
        for l in spine_links(f, &e.path) {
            uses[l.idx()] += 1;
        }
    }
    let (i, &m) = uses
        .iter()
        .enumerate()
        .max_by_key(|(i, u)| (**u, std::cmp::Reverse(*i)))
        .ok_or_else(|| FailureError::NothingToCut(op.name().into()))?;
    if m == 0 {
        return Err(FailureError::NothingToCut(op.name().into()));
    }
    Ok(LinkId(i as u32))
}

/// How a variant's network is built and routed.
enum Net {
    Ib(Vec<sm::routing::EngineKind>),
    Eth(Box<sim::roce::net::RoceConfig>),
}

impl Net {
    fn routing(&self, f: &Fabric) -> Result<FlowRouting, FailureError> {
        match self {
            Net::Ib(engines) => {
                let opts = sm::run::RunOptions {
                    engines: engines.clone(),
                    validate: false,
                    ..Default::default()
                };
                Ok(FlowRouting::Ib(sm::run::run(f, &opts)?.0))
            }
            Net::Eth(cfg) => Ok(FlowRouting::Eth {
                table: ethcp::EcmpTable::build(f, cfg.routing.ecmp_convergence.as_ps()),
                hash: cfg.routing.hash,
                rocev1: false,
            }),
        }
    }

    fn wire(&self) -> flow::path::WireModel {
        match self {
            Net::Ib(_) => crate::flow_world::ib_wire(&sim::IbConfig::default()),
            Net::Eth(cfg) => crate::flow_world::roce_wire(cfg),
        }
    }

    fn is_ib(&self) -> bool {
        matches!(self, Net::Ib(_))
    }

    /// The collective's time at flow level on `f`, ps.
    fn time_ps(&self, f: &Fabric, nvl: HopCost, spec: CollectiveSpec) -> Result<u64, FailureError> {
        let mut w = FlowWorld {
            fabric: f,
            routing: self.routing(f)?,
            wire: self.wire(),
            nics: NicMap::from_fabric(f)?,
            nvl,
            per_chunk: false,
            cc: None,
            handover: None,
            nvls: false,
        };
        match w.run(&Job::Collective(spec, None), false)?.0 {
            JobOut::Schedule(r) => Ok(r.time_ps),
            JobOut::Messages(t) => Ok(t),
        }
    }
}

/// The RoCEv2 configuration the flow engine runs the variant with.
fn roce_cfg(s: &Scenario) -> sim::roce::net::RoceConfig {
    sim::roce::net::RoceConfig {
        nic: sim::roce::net::NicConfig {
            mtu: 4096,
            ..Default::default()
        },
        routing: sim::roce::net::RoutingConfig {
            hash: ethcp::HashConfig {
                seed: s.seed as u32,
                ..sim::roce::net::RoutingConfig::default().hash
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether every NIC of `f` still reaches every other over its cables.
fn connected(f: &Fabric) -> bool {
    let Some(start) = f.nodes_of(NodeKind::Ca).next() else {
        return true;
    };
    let mut seen = vec![false; f.nodes.len()];
    let mut stack = vec![start];
    seen[start.idx()] = true;
    while let Some(n) = stack.pop() {
        for p in f.node(n).port_nums() {
            if let Some((e, _)) = f.peer(n, p)
                && !seen[e.node.idx()]
            {
                seen[e.node.idx()] = true;
                stack.push(e.node);
            }
        }
    }
    f.nodes_of(NodeKind::Ca).all(|c| seen[c.idx()])
}

/// `f` without every cable of switch `n`.
fn without_switch(f: &Fabric, n: NodeId) -> Result<Fabric, FailureError> {
    let mut g = f.clone();
    for p in 1..g.node(n).ports.len() {
        if let Some(l) = g.node(n).ports[p].link {
            g.disconnect(l)?;
        }
    }
    Ok(g)
}

/// The rate `gbps` in `old`'s technology: InfiniBand at the same lane speed and
/// fewer lanes (a 4x port trained 2x or 1x), else another speed at the same width;
/// Ethernet at that speed.
fn degraded_rate(old: LinkRate, gbps: u32) -> Result<LinkRate, FailureError> {
    let bad = |why: String| FailureError::BadOption {
        field: "--degraded-gbps",
        why,
    };
    if u64::from(gbps) * 1_000_000_000 >= old.data_bps() {
        return Err(bad(format!("{gbps} Gb/s is not below the link's {old}")));
    }
    match old {
        LinkRate::Ib { speed, width } => {
            let want = u64::from(gbps) * 1_000_000_000;
            let same_speed = fabric::IbWidth::ALL
                .iter()
                .find(|w| speed.lane_bps() * u64::from(w.lanes()) == want);
            if let Some(&w) = same_speed {
                return Ok(LinkRate::ib(speed, w));
            }
            fabric::IbSpeed::ALL
                .iter()
                .find(|s| s.lane_bps() * u64::from(width.lanes()) == want)
                .map(|&s| LinkRate::ib(s, width))
                .ok_or_else(|| {
                    let opts: Vec<String> = fabric::IbWidth::ALL
                        .iter()
                        .map(|w| speed.lane_bps() * u64::from(w.lanes()))
                        .filter(|&b| b < old.data_bps())
                        .map(|b| (b / 1_000_000_000).to_string())
                        .collect();
                    bad(format!(
                        "an InfiniBand {old} link cannot train at {gbps} Gb/s; fewer lanes give {}",
                        opts.join(", ")
                    ))
                })
        }
        LinkRate::Eth { .. } => u16::try_from(gbps)
            .ok()
            .and_then(|g| fabric::EthSpeed::from_gbps(g).ok())
            .map(|g| LinkRate::Eth { gbps: g })
            .ok_or_else(|| bad(format!("{gbps} Gb/s is not an Ethernet speed"))),
    }
}

/// Packets in flight on one RC connection across `path` at the link rate: the
/// window go-back-N resends after a loss (bandwidth × round trip, where the round
/// trip is both NICs' latency plus, per hop both ways, the switch latency, the
/// cable delay and one packet's serialisation).
fn gbn_window(f: &Fabric, wire: &flow::path::WireModel, path: &[Endpoint], bps: u64) -> f64 {
    let pkt = f64::from(wire.mtu + wire.overhead);
    let ser_ps = pkt * 8.0 / bps as f64 * 1e12;
    let one_way: f64 = path
        .iter()
        .filter_map(|e| f.node(e.node).ports[e.port as usize].link)
        .map(|l| f.link(l).delay_ps as f64 + wire.switch_latency_ps as f64 + ser_ps)
        .sum();
    let rtt_ps = 2.0 * one_way + wire.endpoint_ps as f64;
    (bps as f64 / 8.0 * rtt_ps / 1e12 / pkt).ceil()
}

/// Check the options against the fault.
fn check(o: &FailureOptions) -> Result<(), FailureError> {
    if !(o.at > 0.0 && o.at < 1.0) {
        return Err(FailureError::At(o.at));
    }
    let bad = |field, why: &str| {
        Err(FailureError::BadOption {
            field,
            why: why.to_string(),
        })
    };
    if o.link.is_some() && !o.fault.on_a_link() {
        return bad("--link", "names a link; this fault is not on a link (--switch, --nic)");
    }
    match &o.fault {
        Fault::Flap(p) => {
            if p.flaps == 0 {
                return bad("--flaps", "expected at least one flap");
            }
            if !(p.period_s.is_finite() && p.period_s > 0.0) {
                return bad("--flap-period-s", "expected a positive number of seconds");
            }
            if !(p.down_s > 0.0 && p.down_s < p.period_s) {
                return bad("--flap-down-s", "expected a positive time shorter than the period");
            }
        }
        Fault::Degraded { gbps, ber, .. } => {
            if gbps.is_none() && ber.is_none() {
                return bad("--fault degrade", "give --degraded-gbps and/or --ber");
            }
            if let Some(b) = ber
                && !(*b > 0.0 && *b < 1e-2)
            {
                return bad("--ber", "expected a post-FEC bit error ratio between 0 and 1e-2");
            }
        }
        Fault::NicStorm {
            watchdog_ms,
            nic_prevention_ms,
            ..
        } => {
            for (field, v) in [("--pfcwd-ms", watchdog_ms), ("--nic-prevention-ms", nic_prevention_ms)] {
                if let Some(v) = v
                    && !(v.is_finite() && *v > 0.0)
                {
                    return bad(field, "expected a positive number of milliseconds");
                }
            }
        }
        Fault::LinkDown | Fault::SwitchDown { .. } => {}
    }
    Ok(())
}

/// What the fault is on each fabric, resolved on the InfiniBand build.
enum Target {
    Link(Option<(String, u8)>),
    Switch(String),
    Nic(String),
}

/// Inject `o.fault` during `o.op` on every variant of `s` the flow engine runs.
pub fn run(s: &Scenario, o: &FailureOptions) -> Result<FailureReport, FailureError> {
    check(o)?;
    let spec = CollectiveSpec::new(o.op, s.cluster.servers, s.cluster.gpus_per_server, o.size)?;
    let nvl = HopCost {
        bytes_per_s: s.gpu.nvlink_gbytes * 1e9,
        latency_ps: s.gpu.nvlink_latency_ns * 1000,
    };
    let ib = crate::cluster::build(&s.cluster, Tech::InfiniBand)?;
    let eth = crate::cluster::build(&s.cluster, Tech::Ethernet)?;
    let engines = ib_engines(s);
    let ib_net = Net::Ib(engines.clone());
    let ib_nics = NicMap::from_fabric(&ib)?;
    let ib_edges = ring_edges(&ib, &ib_net.routing(&ib)?, &ib_nics, &spec)?;
    // what breaks, named on the InfiniBand build; the SM's changes for it
    let (target, ib_what, avoid, changes) = match &o.fault {
        Fault::LinkDown | Fault::Flap(_) | Fault::Degraded { .. } => {
            let l = match &o.link {
                Some((sw, p)) => find_link(&ib, sw, *p)?,
                None => busiest(&ib, &ib_edges, o.op)?,
            };
            let k = ib.link(l).clone();
            let name = link_name(&ib, l);
            let down = || Change::Unlink(vec![(k.a.node, k.a.port)]);
            let up = || Change::Relink(vec![(k.a.node, k.a.port, k.b.node, k.b.port, k.rate)]);
            let changes = match &o.fault {
                Fault::LinkDown => vec![(format!("link {name} down"), down())],
                Fault::Flap(p) => (0..p.flaps)
                    .flat_map(|i| {
                        [
                            (format!("flap {}: link {name} down", i + 1), down()),
                            (format!("flap {}: link {name} up", i + 1), up()),
                        ]
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let named = o.link.clone();
            (Target::Link(named), format!("link {name}"), None, changes)
        }
        Fault::SwitchDown { switch } => {
            let n = match switch {
                Some(name) => find_switch(&ib, name)?,
                None => {
                    // the end of the busiest link with no NIC on it (the spine)
                    let k = ib.link(busiest(&ib, &ib_edges, o.op)?);
                    let has_nic = |n: NodeId| {
                        ib.node(n).ports.iter().flat_map(|p| p.link).any(|l| {
                            let lk = ib.link(l);
                            !is_switch(&ib, lk.a.node) || !is_switch(&ib, lk.b.node)
                        })
                    };
                    if has_nic(k.b.node) { k.a.node } else { k.b.node }
                }
            };
            let name = ib.node(n).name.clone();
            let ports: Vec<(NodeId, u8)> = (1..ib.node(n).ports.len())
                .filter(|&p| ib.node(n).ports[p].link.is_some())
                .map(|p| (n, p as u8))
                .collect();
            (
                Target::Switch(name.clone()),
                format!("switch {name} ({} links)", ports.len()),
                Some(n),
                vec![(format!("switch {name} down"), Change::Unlink(ports))],
            )
        }
        Fault::NicStorm { nic, .. } => {
            let n = match nic {
                Some(name) => find_nic(&ib, name)?,
                None => ib_nics.nic[0][0],
            };
            let name = ib.node(n).name.clone();
            (Target::Nic(name.clone()), format!("NIC {name}"), None, Vec::new())
        }
    };
    let (bring_up, sm) = if changes.is_empty() {
        (0.0, Vec::new())
    } else {
        recovery::sm_recoveries(&ib, avoid, &engines, &changes)
    };
    let gpus = s.cluster.servers * s.cluster.gpus_per_server;
    let model = FailureModel::default();
    let restart_loss_s = model.restart_s + model.lost_work_s(u64::from(gpus));
    let nccl = o.nccl.seconds();
    let ctx = Ctx {
        o,
        spec,
        nvl,
        gpus,
        nccl,
        restart_loss_s,
        sm: &sm,
    };
    let mut variants = Vec::new();
    let mut not_run = Vec::new();
    for v in &s.variants {
        let (f, net) = match &v.fabric {
            VariantFabric::Infiniband { .. } => (&ib, Net::Ib(engines.clone())),
            VariantFabric::Rocev2 { pfc, lossy_hops, .. } if *pfc && lossy_hops.is_empty() => {
                (&eth, Net::Eth(Box::new(roce_cfg(s))))
            }
            VariantFabric::Rocev2 { .. } => {
                not_run.push((
                    v.id.clone(),
                    "lossy or PFC-off RoCEv2 runs at packet level only".to_string(),
                ));
                continue;
            }
            VariantFabric::Ipoib => {
                not_run.push((v.id.clone(), "IPoIB runs at packet level only".to_string()));
                continue;
            }
            VariantFabric::Rocev1 => {
                not_run.push((
                    v.id.clone(),
                    "RoCEv1 cannot cross the routed spine this fault is on".to_string(),
                ));
                continue;
            }
        };
        let mut out = ctx.variant(f, &net, &target)?;
        out.id = v.id.clone();
        out.label = v.label.clone();
        variants.push(out);
    }
    if variants.is_empty() {
        return Err(FailureError::NotApplicable {
            fault: o.fault.name(),
            why: "the scenario has no InfiniBand or lossless RoCEv2 variant for the flow engine to run".into(),
        });
    }
    Ok(FailureReport {
        scenario: s.name.clone(),
        gpus,
        collective: o.op,
        size: o.size,
        at: o.at,
        fault: o.fault.clone(),
        link: ib_what,
        sm,
        sm_bring_up_wall_s: bring_up,
        nccl_timeout_s: nccl,
        restart_loss_s,
        eth: o.eth,
        variants,
        not_run,
    })
}

/// What every variant's run shares.
struct Ctx<'a> {
    o: &'a FailureOptions,
    spec: CollectiveSpec,
    nvl: HopCost,
    gpus: u32,
    nccl: f64,
    restart_loss_s: f64,
    sm: &'a [SmRecovery],
}

/// The SM's figures for the first change (a link or switch down).
fn sm_first(sm: &[SmRecovery]) -> (f64, f64, String) {
    sm.first().map_or((0.0, 0.0, String::new()), |r| {
        (
            r.model_s,
            r.wall_s,
            format!(
                "our SM: trap/light sweep, heavy sweep, {} changed LFT blocks ({} SMPs × {:.2} µs)",
                r.lft_blocks_sent,
                r.smps,
                recovery::SM_WALL_PER_SMP_S * 1e6
            ),
        )
    })
}

impl Ctx<'_> {
    fn variant(&self, f: &Fabric, net: &Net, target: &Target) -> Result<VariantFailure, FailureError> {
        let o = self.o;
        let nics = NicMap::from_fabric(f)?;
        let routing = net.routing(f)?;
        let edges = ring_edges(f, &routing, &nics, &self.spec)?;
        let healthy = net.time_ps(f, self.nvl, self.spec)? as f64 / 1e6;
        let mut out = VariantFailure {
            id: String::new(),
            label: String::new(),
            link: String::new(),
            connections_through_link: 0,
            recovery: String::new(),
            recovery_s: None,
            recovery_wall_s: None,
            stall_s: 0.0,
            flaps: Vec::new(),
            healthy_us: healthy,
            degraded_us: Some(healthy),
            with_failure_us: healthy,
            slowdown: 1.0,
            nccl_timed_out: false,
            restart: false,
            gpu_hours_lost: 0.0,
        };
        let (ib_s, ib_wall, ib_how) = sm_first(self.sm);
        let (eth_s, eth_how) = o.eth.recovery();
        let (rec_s, rec_how) = if net.is_ib() { (ib_s, ib_how) } else { (eth_s, eth_how) };
        match (&o.fault, target) {
            (Fault::LinkDown | Fault::Flap(_) | Fault::Degraded { .. }, Target::Link(named)) => {
                let l = match named {
                    Some((sw, p)) => find_link(f, sw, *p)?,
                    None => busiest(f, &edges, o.op)?,
                };
                out.link = link_name(f, l);
                let crossing: Vec<&Edge> = edges
                    .iter()
                    .filter(|e| spine_links(f, &e.path).any(|x| x == l))
                    .collect();
                out.connections_through_link = crossing.len();
                if let Fault::Degraded { gbps, ber, llr } = &o.fault {
                    let mut g = f.clone();
                    let old = g.links[l.idx()].rate;
                    if let Some(gb) = gbps {
                        g.links[l.idx()].rate = degraded_rate(old, *gb)?;
                    }
                    let mut how = match gbps {
                        Some(_) => format!("trained at {} instead of {old}", g.links[l.idx()].rate),
                        None => String::new(),
                    };
                    if let Some(b) = ber {
                        let lk = g.link(l);
                        let with_llr = *llr && net.is_ib() && lk.length_m <= recovery::LLR_MAX_CABLE_M;
                        let wire = net.wire();
                        let bps = lk.rate.data_bps();
                        let window = crossing
                            .iter()
                            .map(|e| gbn_window(f, &wire, &e.path, bps))
                            .fold(1.0, f64::max);
                        let eff = recovery::error_efficiency(*b, with_llr, wire.mtu + wire.overhead, window);
                        g.links[l.idx()].efficiency = eff;
                        if !how.is_empty() {
                            how.push_str("; ");
                        }
                        how.push_str(&if with_llr {
                            format!(
                                "bit errors {b:e} after FEC, resent by LLR in {}-byte cells: {:.2}% of the rate left",
                                recovery::LLR_CELL_BYTES,
                                eff * 100.0
                            )
                        } else {
                            format!(
                                "bit errors {b:e} after FEC, a bad packet dropped and resent by RC go-back-N ({window:.0} packets in flight): {:.2}% of the rate left",
                                eff * 100.0
                            )
                        });
                    }
                    let d = net.time_ps(&g, self.nvl, self.spec)? as f64 / 1e6;
                    out.recovery = format!("{how}; no stall, the link stays up");
                    out.degraded_us = Some(d);
                    out.with_failure_us = o.at * healthy + (1.0 - o.at) * d;
                } else {
                    let mut g = f.clone();
                    g.disconnect(l)?;
                    // a link whose loss splits the fabric leaves some connections no path
                    let split = !connected(&g);
                    let d = if split {
                        None
                    } else {
                        Some(net.time_ps(&g, self.nvl, self.spec)? as f64 / 1e6)
                    };
                    out.degraded_us = d;
                    let d = d.unwrap_or(healthy);
                    if let Fault::Flap(plan) = &o.fault {
                        out.flaps = if net.is_ib() {
                            recovery::ib_flap_stalls(plan, self.sm)
                        } else {
                            recovery::eth_flap_stalls(plan, &o.eth)
                        };
                        if split {
                            for fl in &mut out.flaps {
                                fl.stall_s = plan.down_s;
                                fl.why = "the fabric without the link is split: no path until it returns".into();
                            }
                        }
                        let total: f64 = out.flaps.iter().map(|s| s.stall_s).sum();
                        let worst = out.flaps.iter().map(|s| s.stall_s).fold(0.0, f64::max);
                        out.recovery = format!(
                            "{} flaps every {} s, down {} s each; {}",
                            plan.flaps,
                            plan.period_s,
                            plan.down_s,
                            if net.is_ib() {
                                "each transition a Trap 128 and a sweep of our SM"
                            } else {
                                "each down past BFD's detection a session down and a withdrawal"
                            }
                        );
                        out.recovery_s = Some(worst);
                        if net.is_ib() {
                            out.recovery_wall_s = Some(self.sm.iter().step_by(2).map(|r| r.wall_s).fold(0.0, f64::max));
                        }
                        if !crossing.is_empty() {
                            out.stall_s = total;
                            out.nccl_timed_out = worst > self.nccl;
                            out.with_failure_us = healthy + total * 1e6;
                        }
                    } else {
                        out.recovery = rec_how;
                        out.recovery_s = Some(rec_s);
                        if net.is_ib() {
                            out.recovery_wall_s = Some(ib_wall);
                        }
                        if split && !crossing.is_empty() {
                            out.recovery
                                .push_str("; the fabric without the link is split: some GPUs are cut off");
                            out.restart = true;
                            out.nccl_timed_out = true;
                            out.stall_s = self.nccl;
                        } else if !crossing.is_empty() {
                            out.stall_s = rec_s;
                            out.nccl_timed_out = rec_s > self.nccl;
                            out.with_failure_us = o.at * healthy + rec_s * 1e6 + (1.0 - o.at) * d;
                        }
                    }
                }
            }
            (Fault::SwitchDown { .. }, Target::Switch(name)) => {
                let n = find_switch(f, name)?;
                let links = f.node(n).ports.iter().filter(|p| p.link.is_some()).count();
                out.link = format!("switch {name} ({links} links)");
                out.connections_through_link = edges.iter().filter(|e| e.path.iter().any(|x| x.node == n)).count();
                let cut_nics: Vec<NodeId> = f
                    .node(n)
                    .ports
                    .iter()
                    .filter_map(|p| p.link)
                    .map(|l| f.link(l))
                    .flat_map(|lk| [lk.a.node, lk.b.node])
                    .filter(|&x| !is_switch(f, x))
                    .collect();
                out.recovery_s = Some(rec_s);
                if net.is_ib() {
                    out.recovery_wall_s = Some(ib_wall);
                    out.recovery = rec_how;
                } else {
                    out.recovery = format!("{rec_how}, on every session of the switch at once");
                }
                if !cut_nics.is_empty() {
                    out.recovery.push_str(&format!(
                        "; {} NICs had this switch as their only link: their GPUs are cut off",
                        cut_nics.len()
                    ));
                    out.degraded_us = None;
                    out.restart = true;
                    out.nccl_timed_out = true;
                    out.stall_s = self.nccl;
                } else if !connected(&without_switch(f, n)?) {
                    out.recovery
                        .push_str("; the fabric without the switch is split: some GPUs are cut off");
                    out.degraded_us = None;
                    out.restart = true;
                    out.nccl_timed_out = true;
                    out.stall_s = self.nccl;
                } else {
                    let g = without_switch(f, n)?;
                    let d = net.time_ps(&g, self.nvl, self.spec)? as f64 / 1e6;
                    out.degraded_us = Some(d);
                    if out.connections_through_link > 0 {
                        out.stall_s = rec_s;
                        out.nccl_timed_out = rec_s > self.nccl;
                        out.with_failure_us = o.at * healthy + rec_s * 1e6 + (1.0 - o.at) * d;
                    }
                }
            }
            (
                Fault::NicStorm {
                    watchdog_ms,
                    nic_prevention_ms,
                    ..
                },
                Target::Nic(name),
            ) => {
                let n = find_nic(f, name)?;
                out.link = format!("NIC {name}");
                out.connections_through_link = edges.iter().filter(|e| e.src == n || e.dst == n).count();
                let (contained, how) = recovery::nic_containment(net.is_ib(), *watchdog_ms, *nic_prevention_ms);
                out.recovery = format!("{how}; the NIC's rank receives nothing, so the job's collective cannot finish");
                out.recovery_s = contained;
                out.degraded_us = None;
                out.restart = true;
                out.nccl_timed_out = true;
                out.stall_s = self.nccl;
            }
            _ => unreachable!("the target is resolved from the same fault"),
        }
        if out.nccl_timed_out {
            out.restart = true;
        }
        let g = f64::from(self.gpus);
        if out.restart {
            let lost = self.nccl + self.restart_loss_s;
            out.with_failure_us = healthy + lost * 1e6;
            out.gpu_hours_lost = lost / 3600.0 * g;
        } else {
            out.gpu_hours_lost = (out.with_failure_us - healthy) / 1e6 / 3600.0 * g;
        }
        out.slowdown = out.with_failure_us / healthy;
        Ok(out)
    }
}

/// How many links between switches the ring all-reduce of `size` crosses under
/// the InfiniBand build's routes (the first InfiniBand variant's engines).
pub fn spine_links_used(s: &Scenario, size: u64) -> Result<usize, FailureError> {
    let spec = CollectiveSpec::new(
        Collective::AllReduceRing,
        s.cluster.servers,
        s.cluster.gpus_per_server,
        size,
    )?;
    let ib = crate::cluster::build(&s.cluster, Tech::InfiniBand)?;
    let routing = Net::Ib(ib_engines(s)).routing(&ib)?;
    let nics = NicMap::from_fabric(&ib)?;
    let used: std::collections::BTreeSet<LinkId> = ring_edges(&ib, &routing, &nics, &spec)?
        .iter()
        .flat_map(|e| spine_links(&ib, &e.path).collect::<Vec<_>>())
        .collect();
    Ok(used.len())
}

/// One variant's failure figures in a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantRecovery {
    pub id: String,
    /// From a switch-to-switch link going down to the fabric routed around it, s.
    pub recovery_s: f64,
    /// How, in words.
    pub how: String,
    /// Connections of the ring all-reduce at the largest size through the link.
    pub connections_through_link: usize,
    /// GPU-hours the job loses to that link failure: its stall on every GPU, or a
    /// restart if the stall outlasts NCCL's timeout.
    pub gpu_hours_per_link_failure: f64,
    /// The failure model ([`FailureModel`], Llama 3's network interruption rate)
    /// with this recovery as the fabric's repair time: GPU-hours one job-killing
    /// interruption costs, interruptions a month, and the expected loss a month.
    pub gpu_hours_per_interruption: f64,
    pub interruptions_per_month: f64,
    pub lost_gpu_hours_per_month: f64,
    pub usd_per_month: f64,
}

/// What a comparison reports about failures: every figure deterministic (the
/// InfiniBand recovery is the SMPs our SM sent times the measured cost per SMP,
/// never a wall time), so the same seed gives the same bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecoveryStudy {
    /// The link cut on InfiniBand (the ring's busiest link between switches, or
    /// the first one when the ring stays inside leaves); the Ethernet build loses
    /// the same cable.
    pub link: String,
    /// The SM's recovery from it.
    pub smps: u64,
    pub lft_blocks_sent: u64,
    /// The measured wall time per SMP it is priced at, s.
    pub per_smp_s: f64,
    /// The Ethernet timers (FRR's defaults).
    pub eth: EthTimers,
    pub nccl_timeout_s: f64,
    pub variants: Vec<VariantRecovery>,
}

/// The failure figures of a comparison: a link between switches goes down; per
/// variant, the fabric's recovery (our SM's sweep, deterministic; BFD's
/// detection), what the job loses to it, and the failure model's monthly loss with
/// that recovery. `None` when the fabric has no link between switches.
pub fn compare_recovery(
    s: &Scenario,
    variants: &[(String, crate::advisor::FabricKind)],
) -> Result<Option<RecoveryStudy>, FailureError> {
    use crate::advisor::FabricKind;
    let size = s.workload.sizes.last().copied().unwrap_or(1 << 20);
    let spec = CollectiveSpec::new(
        Collective::AllReduceRing,
        s.cluster.servers,
        s.cluster.gpus_per_server,
        size,
    )?;
    let ib = crate::cluster::build(&s.cluster, Tech::InfiniBand)?;
    let engines = ib_engines(s);
    let ib_net = Net::Ib(engines.clone());
    let ib_edges = ring_edges(&ib, &ib_net.routing(&ib)?, &NicMap::from_fabric(&ib)?, &spec)?;
    let link = match busiest(&ib, &ib_edges, Collective::AllReduceRing) {
        Ok(l) => l,
        Err(FailureError::NothingToCut(_)) => {
            let first = (0..ib.links.len() as u32)
                .map(LinkId)
                .find(|&l| is_switch(&ib, ib.link(l).a.node) && is_switch(&ib, ib.link(l).b.node));
            match first {
                Some(l) => l,
                None => return Ok(None),
            }
        }
        Err(e) => return Err(e),
    };
    let k = ib.link(link).clone();
    let name = link_name(&ib, link);
    let (_, sm) = recovery::sm_recoveries(
        &ib,
        None,
        &engines,
        &[(format!("link {name} down"), Change::Unlink(vec![(k.a.node, k.a.port)]))],
    );
    let ib_rec = &sm[0];
    let (sw, port) = (ib.node(k.a.node).name.clone(), k.a.port);
    let eth_timers = EthTimers::default();
    let (eth_s, eth_how) = eth_timers.recovery();
    let nccl = NcclTimeout::default().seconds();
    let gpus = u64::from(s.cluster.servers * s.cluster.gpus_per_server);
    let model = FailureModel::default();
    let restart_loss = model.restart_s + model.lost_work_s(gpus);
    let ib_through = ib_edges
        .iter()
        .filter(|e| spine_links(&ib, &e.path).any(|x| x == link))
        .count();
    let mut eth_through = None;
    let mut out = Vec::new();
    for (id, kind) in variants {
        let (rec, how, through) = match kind {
            FabricKind::Infiniband | FabricKind::Ipoib => (
                ib_rec.model_s,
                format!(
                    "our SM's sweep: {} SMPs × {:.2} µs",
                    ib_rec.smps,
                    recovery::SM_WALL_PER_SMP_S * 1e6
                ),
                ib_through,
            ),
            FabricKind::Rocev2 => {
                let through = match eth_through {
                    Some(t) => t,
                    None => {
                        let eth = crate::cluster::build(&s.cluster, Tech::Ethernet)?;
                        let net = Net::Eth(Box::new(roce_cfg(s)));
                        let l = find_link(&eth, &sw, port)?;
                        let edges = ring_edges(&eth, &net.routing(&eth)?, &NicMap::from_fabric(&eth)?, &spec)?;
                        let t = edges
                            .iter()
                            .filter(|e| spine_links(&eth, &e.path).any(|x| x == l))
                            .count();
                        eth_through = Some(t);
                        t
                    }
                };
                (eth_s, eth_how.clone(), through)
            }
            // one layer-2 domain: no BFD/BGP recovery to model
            FabricKind::Rocev1 => continue,
        };
        let stall = if through > 0 { rec } else { 0.0 };
        let lost_s = if stall > nccl { nccl + restart_loss } else { stall };
        let c = model
            .cost_with_reroute(rec, gpus, s.prices.gpu_hour)
            .expect("a cluster has GPUs");
        out.push(VariantRecovery {
            id: id.clone(),
            recovery_s: rec,
            how,
            connections_through_link: through,
            gpu_hours_per_link_failure: lost_s * gpus as f64 / 3600.0,
            gpu_hours_per_interruption: c.lost_s_per_interruption * gpus as f64 / 3600.0,
            interruptions_per_month: c.interruptions_per_month,
            lost_gpu_hours_per_month: c.lost_gpu_hours_per_month,
            usd_per_month: c.usd_per_month,
        });
    }
    Ok(Some(RecoveryStudy {
        link: name,
        smps: ib_rec.smps,
        lft_blocks_sent: ib_rec.lft_blocks_sent,
        per_smp_s: recovery::SM_WALL_PER_SMP_S,
        eth: eth_timers,
        nccl_timeout_s: nccl,
        variants: out,
    }))
}

#[cfg(test)]
mod tests;
