//! A spine link cut in the middle of a job's collective, on every variant the
//! flow engine runs: how long the traffic through it stalls, how much longer the
//! collective takes, whether NCCL would have timed out, and the GPU-hours lost.
//!
//! - **InfiniBand** recovers through the Subnet Manager: the switches at both ends
//!   see the port go down, the SM learns it (Trap 128, or the next light sweep's
//!   PortStateChange), sweeps and programs the LFT blocks that changed
//!   (failures-isolation-sweeps.md §2.1). The stall is **our SM's own
//!   trap-to-new-tables time at this fabric's size**: the SM brings the fabric up
//!   over in-process SMA agents, the link is unlinked, and the SM's poll (light
//!   sweep, heavy sweep, changed blocks) is timed on this machine. Until then the
//!   flows through the link have no path.
//! - **Ethernet** recovers through BFD and BGP: with BFD the peers declare the
//!   session down after `multiplier × interval` (RFC 5880 §6.8.4; FRR bfdd's
//!   defaults 3 × 300 ms = 900 ms), BGP withdraws the routes through the link and
//!   the ECMP groups drop it; without BFD, after the BGP hold time (FRR's
//!   `datacenter` profile: 9 s; RFC 4271 suggests 90 s) (§2.4). A link whose loss
//!   of signal the switches see repairs locally faster (SONiC removes next hops on
//!   port-down before BGP reacts), which `local_repair_ms` models when given.
//! - **NCCL** waits `4.096 µs × 2^NCCL_IB_TIMEOUT` per retry, `NCCL_IB_RETRY_CNT + 1`
//!   times (defaults 20 and 7: about 34 s; §2.5) before the QP errors out and the job
//!   restarts; a stall shorter than that is felt as lost time only.
//!
//! The collective runs at flow level on the healthy fabric and again on the
//! fabric without the link (the SM's new routes; the ECMP groups without it). Cut
//! at a fraction `at` of its healthy time, a collective whose flows cross the link
//! takes `at · healthy + stall + (1 − at) · degraded`: ring and tree collectives
//! advance in lock step, so one stalled edge stalls them all. The figures are this
//! model's, not a packet-level replay of the failure.

use std::time::Instant;

use fabric::{Fabric, LinkId, NodeKind};
use serde::{Deserialize, Serialize};

use crate::collective::{Collective, CollectiveSpec, HopCost};
use crate::driver::{Job, JobOut, World};
use crate::flow_world::{FlowRouting, FlowWorld};
use crate::runner::{NicMap, RunError};
use crate::scenario::{Scenario, VariantFabric};
use crate::tco::Tech;

/// Ethernet's failure detection and route repair.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EthTimers {
    /// BFD transmit/receive interval, ms (FRR bfdd default 300); `None`: no BFD.
    pub bfd_interval_ms: Option<f64>,
    /// BFD detect multiplier (FRR default 3).
    pub bfd_multiplier: u32,
    /// BGP hold time, s, when BFD is off (FRR `datacenter` profile: 9).
    pub bgp_hold_s: f64,
    /// Local repair on loss of signal, ms, when the switches see the port go down
    /// and drop it from their ECMP groups before BGP reacts; `None`: not modelled
    /// (no cited figure for it).
    pub local_repair_ms: Option<f64>,
}

impl Default for EthTimers {
    /// FRR's defaults (bfdd `BFD_DEF_*`: 300 ms × 3; `frr defaults datacenter`:
    /// hold 9 s), failures-isolation-sweeps.md §2.4.
    fn default() -> Self {
        EthTimers {
            bfd_interval_ms: Some(300.0),
            bfd_multiplier: 3,
            bgp_hold_s: 9.0,
            local_repair_ms: None,
        }
    }
}

impl EthTimers {
    /// Seconds from the cut to the ECMP groups without the link, and how.
    pub fn recovery(&self) -> (f64, String) {
        if let Some(ms) = self.local_repair_ms {
            return (ms / 1e3, format!("local repair on loss of signal, {ms} ms"));
        }
        match self.bfd_interval_ms {
            Some(iv) => (
                iv * f64::from(self.bfd_multiplier) / 1e3,
                format!(
                    "BFD detection {} × {iv} ms, then BGP withdrawal and ECMP repair",
                    self.bfd_multiplier
                ),
            ),
            None => (
                self.bgp_hold_s,
                format!("no BFD: the BGP hold time, {} s", self.bgp_hold_s),
            ),
        }
    }
}

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

/// What to cut and when.
#[derive(Clone, Debug, PartialEq)]
pub struct FailureOptions {
    /// The collective the job is in when the link fails, and its size.
    pub op: Collective,
    pub size: u64,
    /// When, as a fraction of the collective's healthy time.
    pub at: f64,
    /// The link: a switch and port of the InfiniBand build (the Ethernet build
    /// names its switches alike), cut on every variant; `None`: on each variant,
    /// the switch-to-switch link its routing puts most of the collective's
    /// connections on.
    pub link: Option<(String, u8)>,
    pub eth: EthTimers,
    pub nccl: NcclTimeout,
}

/// Our SM's recovery, measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SmRecovery {
    /// Wall time from the cut to new tables programmed (the SM's poll: light
    /// sweep, heavy sweep, changed LFT blocks), s, on this machine.
    pub seconds: f64,
    /// SMPs the recovery sent.
    pub smps: u64,
    /// LFT blocks that changed and were sent.
    pub lft_blocks_sent: u64,
    /// Whether the subnet came back up.
    pub subnet_up: bool,
    /// Wall time of the first bring-up of the same fabric, s (for scale).
    pub bring_up_seconds: f64,
}

/// One variant's experience of the cut.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantFailure {
    pub id: String,
    pub label: String,
    /// The link cut on this variant.
    pub link: String,
    /// Connections of the collective whose data crossed the link.
    pub connections_through_link: usize,
    /// How the fabric recovers, in words.
    pub recovery: String,
    /// How long the traffic through the link had no path, s (0 if none crossed it).
    pub stall_s: f64,
    /// The collective on the healthy fabric, on the fabric without the link, and
    /// with the cut at `at`, µs.
    pub healthy_us: f64,
    pub degraded_us: f64,
    pub with_failure_us: f64,
    /// `with_failure / healthy`.
    pub slowdown: f64,
    /// Whether the stall outlasts NCCL's timeout (the job would restart).
    pub nccl_timed_out: bool,
    /// GPU-hours lost to the cut: the job's GPUs idle for the extra time.
    pub gpu_hours_lost: f64,
}

/// The cut on every variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureReport {
    pub scenario: String,
    pub gpus: u32,
    pub collective: Collective,
    pub size: u64,
    pub at: f64,
    /// The link cut on InfiniBand, as "switch/port — switch/port" (each variant
    /// names its own: the same one when a link is given, else its busiest).
    pub link: String,
    pub sm: SmRecovery,
    pub nccl_timeout_s: f64,
    pub eth: EthTimers,
    pub variants: Vec<VariantFailure>,
    /// Variants the flow engine does not run (lossy, IPoIB, RoCEv1), with why.
    pub not_run: Vec<(String, String)>,
}

/// Why the failure run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FailureError {
    /// The link named is not a cabled switch port.
    #[error("link {switch}/{port}: {why}")]
    NoLink { switch: String, port: u8, why: String },
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
    let other = f.link(l).other(fabric::Endpoint { node: n, port });
    if f.node(other.node).kind != NodeKind::Switch {
        return Err(no("the port is cabled to a NIC; cut a switch-to-switch link".into()));
    }
    Ok(l)
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

/// The data path of every connection of the ring collective `spec` (ring edges,
/// channel by channel, numbered as the flow engine numbers them), under `routing`.
fn ring_paths(
    f: &Fabric,
    routing: &FlowRouting,
    nics: &NicMap,
    spec: &CollectiveSpec,
) -> Result<Vec<Vec<fabric::Endpoint>>, FailureError> {
    let mut out = Vec::with_capacity((spec.gpus * spec.nodes) as usize);
    for c in 0..spec.gpus {
        for node in 0..spec.nodes {
            let x = nics.nic[node as usize][c as usize];
            let y = nics.nic[((node + 1) % spec.nodes) as usize][c as usize];
            out.push(routing.paths(f, x, y, out.len() as u32)?.0);
        }
    }
    Ok(out)
}

/// The switch-to-switch links `path` crosses.
fn spine_links<'a>(f: &'a Fabric, path: &'a [fabric::Endpoint]) -> impl Iterator<Item = LinkId> + 'a {
    path.iter().filter_map(move |e| {
        let l = f.node(e.node).ports[e.port as usize].link?;
        let lk = f.link(l);
        (f.node(lk.a.node).kind == NodeKind::Switch && f.node(lk.b.node).kind == NodeKind::Switch).then_some(l)
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

/// The connections (ring edges, channel by channel, as the flow engine numbers
/// them) of `spec` whose data path crosses `link`, under `routing`.
fn crossing(
    f: &Fabric,
    routing: &FlowRouting,
    nics: &NicMap,
    spec: &CollectiveSpec,
    link: LinkId,
) -> Result<usize, FailureError> {
    Ok(ring_paths(f, routing, nics, spec)?
        .iter()
        .filter(|p| spine_links(f, p).any(|l| l == link))
        .count())
}

/// The leaf-to-spine link carrying the most connections of `spec` on `f`.
fn busiest(f: &Fabric, routing: &FlowRouting, nics: &NicMap, spec: &CollectiveSpec) -> Result<LinkId, FailureError> {
    let mut uses = vec![0usize; f.links.len()];
    for p in ring_paths(f, routing, nics, spec)? {
        for l in spine_links(f, &p) {
            uses[l.idx()] += 1;
        }
    }
    let (i, &m) = uses
        .iter()
        .enumerate()
        .max_by_key(|(i, u)| (**u, std::cmp::Reverse(*i)))
        .ok_or_else(|| FailureError::NothingToCut(spec.op.name().into()))?;
    if m == 0 {
        return Err(FailureError::NothingToCut(spec.op.name().into()));
    }
    Ok(LinkId(i as u32))
}

/// The collective's time at flow level on `f` with `routing`, ps.
fn time_ps(
    f: &Fabric,
    routing: FlowRouting,
    wire: flow::path::WireModel,
    nvl: HopCost,
    spec: CollectiveSpec,
) -> Result<u64, FailureError> {
    let nics = NicMap::from_fabric(f)?;
    let mut w = FlowWorld {
        fabric: f,
        routing,
        wire,
        nics,
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

/// Our SM's recovery from cutting `link` of `f`, measured on in-process agents.
fn sm_recovery(f: &Fabric, link: LinkId, engines: &[sm::routing::EngineKind]) -> SmRecovery {
    let host = f.nodes_of(NodeKind::Ca).next().expect("a cluster has NICs");
    let mut tr = sm::sma::InProcess::new(f.clone(), (host, 1));
    let mut mgr = sm::sweep::SubnetManager::new(
        sm::sweep::SweepOptions {
            engines: engines.to_vec(),
            validate: false,
            ..Default::default()
        },
        1,
    );
    let t0 = Instant::now();
    let up = mgr.heavy_sweep(&mut tr);
    let bring_up_seconds = t0.elapsed().as_secs_f64();
    debug_assert!(up.subnet_up, "{:?}", up.issues);
    let k = f.link(link);
    tr.unlink(k.a.node, k.a.port);
    let t1 = Instant::now();
    let r = mgr.poll(&mut tr);
    let seconds = t1.elapsed().as_secs_f64();
    match r {
        Some(r) => SmRecovery {
            seconds,
            smps: r.smps_sent,
            lft_blocks_sent: r.lft_blocks_sent,
            subnet_up: r.subnet_up,
            bring_up_seconds,
        },
        None => SmRecovery {
            seconds,
            smps: 0,
            lft_blocks_sent: 0,
            subnet_up: false,
            bring_up_seconds,
        },
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
    let opts = sm::run::RunOptions {
        engines: ib_engines(s),
        validate: false,
        ..Default::default()
    };
    let routing = FlowRouting::Ib(sm::run::run(&ib, &opts)?.0);
    let nics = NicMap::from_fabric(&ib)?;
    let used: std::collections::BTreeSet<LinkId> = ring_paths(&ib, &routing, &nics, &spec)?
        .iter()
        .flat_map(|p| spine_links(&ib, p).collect::<Vec<_>>())
        .collect();
    Ok(used.len())
}

/// Cut a spine link during `o.op` on every variant of `s` the flow engine runs.
pub fn run(s: &Scenario, o: &FailureOptions) -> Result<FailureReport, FailureError> {
    if !(o.at > 0.0 && o.at < 1.0) {
        return Err(FailureError::At(o.at));
    }
    let spec = CollectiveSpec::new(o.op, s.cluster.servers, s.cluster.gpus_per_server, o.size)?;
    let nvl = HopCost {
        bytes_per_s: s.gpu.nvlink_gbytes * 1e9,
        latency_ps: s.gpu.nvlink_latency_ns * 1000,
    };
    let ib = crate::cluster::build(&s.cluster, Tech::InfiniBand)?;
    let eth = crate::cluster::build(&s.cluster, Tech::Ethernet)?;
    let engines = ib_engines(s);
    let route = |f: &Fabric| -> Result<sm::RoutingTables, FailureError> {
        let opts = sm::run::RunOptions {
            engines: engines.clone(),
            validate: false,
            ..Default::default()
        };
        Ok(sm::run::run(f, &opts)?.0)
    };
    let ib_tables = route(&ib)?;
    let ib_nics = NicMap::from_fabric(&ib)?;
    let ib_link = match &o.link {
        Some((sw, p)) => find_link(&ib, sw, *p)?,
        None => busiest(&ib, &FlowRouting::Ib(ib_tables.clone()), &ib_nics, &spec)?,
    };
    let cut = {
        let k = ib.link(ib_link);
        (ib.node(k.a.node).name.clone(), k.a.port)
    };
    let sm = sm_recovery(&ib, ib_link, &engines);
    let nccl = o.nccl.seconds();
    let gpus = s.cluster.servers * s.cluster.gpus_per_server;
    let outcome = |id: &str, label: &str, through: usize, recovery: String, stall: f64, healthy: u64, degraded: u64| {
        let (h, d) = (healthy as f64 / 1e6, degraded as f64 / 1e6);
        let stall = if through == 0 { 0.0 } else { stall };
        let with = if through == 0 {
            h
        } else {
            o.at * h + stall * 1e6 + (1.0 - o.at) * d
        };
        VariantFailure {
            id: id.into(),
            label: label.into(),
            link: String::new(),
            connections_through_link: through,
            recovery,
            stall_s: stall,
            healthy_us: h,
            degraded_us: d,
            with_failure_us: with,
            slowdown: with / h,
            nccl_timed_out: stall > nccl,
            gpu_hours_lost: (with - h) / 1e6 / 3600.0 * f64::from(gpus),
        }
    };
    let mut variants = Vec::new();
    let mut not_run = Vec::new();
    for v in &s.variants {
        match &v.fabric {
            VariantFabric::Infiniband { .. } => {
                let healthy = time_ps(
                    &ib,
                    FlowRouting::Ib(ib_tables.clone()),
                    crate::flow_world::ib_wire(&sim::IbConfig::default()),
                    nvl,
                    spec,
                )?;
                let mut cut_f = ib.clone();
                cut_f.disconnect(ib_link)?;
                let t = route(&cut_f)?;
                let degraded = time_ps(
                    &cut_f,
                    FlowRouting::Ib(t),
                    crate::flow_world::ib_wire(&sim::IbConfig::default()),
                    nvl,
                    spec,
                )?;
                let through = crossing(&ib, &FlowRouting::Ib(ib_tables.clone()), &ib_nics, &spec, ib_link)?;
                let mut out = outcome(
                    &v.id,
                    &v.label,
                    through,
                    format!(
                        "our SM: trap/light sweep, heavy sweep, {} changed LFT blocks ({} SMPs), measured",
                        sm.lft_blocks_sent, sm.smps
                    ),
                    sm.seconds,
                    healthy,
                    degraded,
                );
                out.link = link_name(&ib, ib_link);
                variants.push(out);
            }
            VariantFabric::Rocev2 { pfc, lossy_hops, .. } if *pfc && lossy_hops.is_empty() => {
                let cfg = sim::roce::net::RoceConfig {
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
                };
                let routing = |f: &Fabric| FlowRouting::Eth {
                    table: ethcp::EcmpTable::build(f, cfg.routing.ecmp_convergence.as_ps()),
                    hash: cfg.routing.hash,
                    rocev1: false,
                };
                let nics = NicMap::from_fabric(&eth)?;
                // the same physical link when one is named; else the spine link
                // this variant's ECMP puts most of the collective on
                let eth_link = match &o.link {
                    Some(_) => find_link(&eth, &cut.0, cut.1)?,
                    None => busiest(&eth, &routing(&eth), &nics, &spec)?,
                };
                let healthy = time_ps(&eth, routing(&eth), crate::flow_world::roce_wire(&cfg), nvl, spec)?;
                let mut cut_f = eth.clone();
                cut_f.disconnect(eth_link)?;
                let degraded = time_ps(&cut_f, routing(&cut_f), crate::flow_world::roce_wire(&cfg), nvl, spec)?;
                let through = crossing(&eth, &routing(&eth), &nics, &spec, eth_link)?;
                let (stall, how) = o.eth.recovery();
                let mut out = outcome(&v.id, &v.label, through, how, stall, healthy, degraded);
                out.link = link_name(&eth, eth_link);
                variants.push(out);
            }
            VariantFabric::Rocev2 { .. } => not_run.push((
                v.id.clone(),
                "lossy or PFC-off RoCEv2 runs at packet level only".to_string(),
            )),
            VariantFabric::Ipoib => not_run.push((v.id.clone(), "IPoIB runs at packet level only".to_string())),
            VariantFabric::Rocev1 => not_run.push((
                v.id.clone(),
                "RoCEv1 cannot cross the routed spine this cut is on".to_string(),
            )),
        }
    }
    Ok(FailureReport {
        scenario: s.name.clone(),
        gpus,
        collective: o.op,
        size: o.size,
        at: o.at,
        link: link_name(&ib, ib_link),
        sm,
        nccl_timeout_s: nccl,
        eth: o.eth,
        variants,
        not_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recovery times follow their sources: Ethernet's the configured BFD
    /// timers (FRR's 300 ms × 3 = 0.9 s by default) or the BGP hold time without
    /// BFD (9 s); NCCL's timeout the IBA formula at NCCL's defaults (about 34 s).
    #[test]
    fn ethernet_recovery_follows_the_timers_and_nccl_waits_34_s() {
        let (t, how) = EthTimers::default().recovery();
        assert!((t - 0.9).abs() < 1e-12 && how.contains("BFD"), "{t} {how}");
        let no_bfd = EthTimers {
            bfd_interval_ms: None,
            ..EthTimers::default()
        };
        assert_eq!(no_bfd.recovery().0, 9.0);
        let fast = EthTimers {
            bfd_interval_ms: Some(50.0),
            ..EthTimers::default()
        };
        assert!((fast.recovery().0 - 0.15).abs() < 1e-12);
        let s = NcclTimeout::default().seconds();
        assert!((s - 34.36).abs() < 0.01, "{s}");
        assert!(
            (NcclTimeout {
                ib_timeout: 14,
                retry_cnt: 7
            }
            .seconds()
                - 0.537)
                .abs()
                < 0.001
        );
    }

    fn small() -> Scenario {
        let mut s = Scenario::default_rail();
        s.cluster.servers = 8;
        s.cluster.gpus_per_server = 2;
        s.cluster.scalable_units = Some(2);
        s
    }

    fn opts() -> FailureOptions {
        FailureOptions {
            op: Collective::AllReduceRing,
            size: 16 << 20,
            at: 0.5,
            link: None,
            eth: EthTimers::default(),
            nccl: NcclTimeout::default(),
        }
    }

    /// A spine link cut on two scalable units: InfiniBand stalls for exactly the
    /// SM recovery this run measured (the same code, not a constant), Ethernet for
    /// its BFD timers, and only a BGP hold time past NCCL's timeout makes NCCL
    /// give up; the collective's time with the cut follows the stated model.
    #[test]
    fn the_cut_stalls_each_fabric_for_its_own_recovery() {
        let s = small();
        let r = run(&s, &opts()).unwrap();
        assert!(
            r.sm.subnet_up && r.sm.smps > 0 && r.sm.lft_blocks_sent > 0,
            "{:?}",
            r.sm
        );
        let ib = r.variants.iter().find(|v| v.id == "ib").unwrap();
        assert!(ib.connections_through_link > 0);
        assert_eq!(ib.stall_s, r.sm.seconds);
        for v in r.variants.iter().filter(|v| v.id != "ib") {
            assert!(v.connections_through_link > 0, "{v:?}");
            assert!((v.stall_s - 0.9).abs() < 1e-12, "{v:?}");
            let want = 0.5 * v.healthy_us + v.stall_s * 1e6 + 0.5 * v.degraded_us;
            assert!((v.with_failure_us - want).abs() < 1e-6);
            assert!(!v.nccl_timed_out);
            // 16 GPUs idle for the extra time
            assert!((v.gpu_hours_lost - (v.with_failure_us - v.healthy_us) / 1e6 / 3600.0 * 16.0).abs() < 1e-12);
        }
        let ids: Vec<&str> = r.not_run.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["roce-misconfig", "roce-lossy", "ipoib", "rocev1"]);
        // without BFD a 60 s hold time outlasts NCCL's 34 s
        let mut o = opts();
        o.eth = EthTimers {
            bfd_interval_ms: None,
            bgp_hold_s: 60.0,
            ..EthTimers::default()
        };
        let r = run(&s, &o).unwrap();
        for v in r.variants.iter().filter(|v| v.id != "ib") {
            assert_eq!(v.stall_s, 60.0);
            assert!(v.nccl_timed_out);
        }
        assert!(!r.variants.iter().find(|v| v.id == "ib").unwrap().nccl_timed_out);
    }

    /// A link that does not exist, or is not switch-to-switch, is refused by name.
    #[test]
    fn a_link_that_is_not_a_spine_link_is_refused_by_name() {
        let s = small();
        for (sw, port, why) in [
            ("nosuch", 1, "no switch of that name"),
            ("spine0", 200, "has ports"),
            ("su0-rail0", 1, "cabled to a NIC"),
        ] {
            let mut o = opts();
            o.link = Some((sw.into(), port));
            let e = run(&s, &o).unwrap_err().to_string();
            assert!(e.contains(&format!("{sw}/{port}")) && e.contains(why), "{e}");
        }
        let mut o = opts();
        o.at = 1.5;
        assert!(run(&s, &o).unwrap_err().to_string().contains("at 1.5"));
    }
}
