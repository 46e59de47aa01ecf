//! Training jobs on every variant: the scenario's `[training]` jobs placed on
//! the cluster's servers (packed, scattered, or in the gaps churn leaves), and
//! one iteration of each priced on each variant's own fabric and routes
//! (`crate::train::FabricNetwork`), beside the other jobs' busiest operation.
//!
//! InfiniBand variants run as flows on the SM's routes (credits drop nothing
//! and no end-to-end congestion control reacts; on an iteration the flows meet
//! the packet level within 0.001%). RoCEv2 variants run by
//! [`Pricing::Hybrid`]: an operation whose messages are at most
//! `training.packet_full_bytes` runs packet by packet at full size in the
//! variant's world (an expert all-to-all's bursts, pauses and drops); a larger
//! one (a data-parallel ring's gigabytes) runs as flows at full size on the
//! variant's ECMP routes, times the packet world's slowdown over flows on the
//! same messages scaled to `training.packet_cap_bytes` (PFC pauses, DCQCN's
//! rate control, drops and go-back-N). A second, flow-level pass sets
//! `training.more_qps` QPs per connection on each job's busiest operation:
//! how much of the spines' ECMP imbalance more QPs take away.

use serde::{Deserialize, Serialize};

use fabric::Fabric;
use workload::comm::Link;
use workload::iteration::{IdealNetwork, Iteration, Network as _};
use workload::job::Job;

use super::{CompareError, Nic, ib_config, roce_config};
use crate::runner::NicMap;
use crate::scenario::{Scenario, Training, Variant, VariantFabric};
use crate::train::{FabricNetwork, Message, Pricing, Route};

/// The training study of one comparison run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingResults {
    /// How the operations were priced, in words.
    pub engine: String,
    /// Kernel efficiency of every job's compute, and where it came from.
    pub efficiency: f64,
    pub efficiency_source: String,
    /// The jobs as placed (the same servers on every variant).
    pub jobs: Vec<JobPlaced>,
    /// Per variant, every job's iteration.
    pub variants: Vec<TrainingVariant>,
}

/// A job and the servers it got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPlaced {
    pub name: String,
    pub model: String,
    pub gpus: u32,
    /// Parallel sizes in words.
    pub parallel: String,
    /// Placement in words: kind, servers, units, contiguous runs.
    pub placement: String,
    /// The servers, by index in the cluster.
    pub servers: Vec<usize>,
    /// Tokens per iteration (global batch × sequence length).
    pub tokens: u64,
    /// The iteration on a contention-free, non-blocking network, s.
    pub ideal_s: f64,
}

/// One variant's iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingVariant {
    pub id: String,
    pub label: String,
    /// Why this variant runs no training job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The fabric this variant ran on where it is not the scenario's routed
    /// one (RoCEv1: the layer-2 design).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub design: Option<String>,
    pub jobs: Vec<JobOutcome>,
    /// Each job's operation with the most uneven uplinks, alone at flow level
    /// with 1 QP per connection and with `training.more_qps`.
    pub qps: Vec<QpsRow>,
}

/// One job's iteration on one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    pub job: String,
    /// Iteration time, s.
    pub iteration_s: f64,
    /// Over the contention-free, non-blocking network, percent.
    pub over_ideal_pct: f64,
    /// Tokens per second.
    pub tokens_per_s: f64,
    /// Model TFLOP/s per GPU achieved.
    pub tflops_per_gpu: f64,
    /// Communication on the critical path, s.
    pub exposed_comm_s: f64,
    /// The operation that adds the most time over the ideal network per
    /// iteration, with the switch port it queued at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest: Option<SlowOp>,
    /// Packet-level counts over the job's operations (at the capped size).
    pub drops: u64,
    pub retransmissions: u64,
    pub pause_us: f64,
    pub cnps: u64,
    /// Every operation that crossed the fabric.
    pub ops: Vec<OpOutcome>,
    /// Its iterations in the jobs' joint schedule (`training.schedule =
    /// "joint"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joint: Option<crate::train::JointTime>,
}

/// The operation that costs a job the most.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowOp {
    pub label: String,
    /// Per occurrence: on the ideal network and on this fabric, s.
    pub ideal_s: f64,
    pub fabric_s: f64,
    /// Occurrences per iteration.
    pub count: u64,
    /// The switch egress port busiest with it (`switch/port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
}

/// One operation of a job on one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpOutcome {
    pub label: String,
    pub count: u64,
    pub bytes: u64,
    pub ideal_s: f64,
    pub fabric_s: f64,
    /// The packet level's time over the flows' at the capped size.
    pub packet_factor: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hottest_port: Option<String>,
    /// This job's ECMP uplink imbalance ([`crate::train::OpDetail::uplink_imbalance`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uplink_imbalance: Option<f64>,
    pub drops: u64,
    pub pause_us: f64,
    pub cnps: u64,
}

/// A job's operation alone at flow level with `qps` QPs per connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QpsRow {
    pub job: String,
    pub op: String,
    pub qps: u32,
    /// The ECMP uplink imbalance ([`crate::train::OpDetail::uplink_imbalance`]).
    pub uplink_imbalance: f64,
    /// The operation's time, s.
    pub op_s: f64,
}

/// A variant's fabric as the jobs see it.
enum Routed {
    Ib(sm::RoutingTables, sim::IbConfig),
    Eth(ethcp::EcmpTable, Box<sim::roce::net::RoceConfig>, Nic),
    /// RoCEv1 on the layer-2 design ([`l2_design`]): its fabric and what it is.
    L2(
        Box<Fabric>,
        String,
        ethcp::EcmpTable,
        Box<sim::roce::net::RoceConfig>,
        Nic,
    ),
}

/// The fabric as one layer-2 broadcast domain, as RoCEv1 needs it (its frames,
/// EtherType 0x8915, have no IP header and are never routed): the first two
/// spines form an MLAG pair that is the spanning tree's root, each leaf's links
/// to the pair are one LAG (its root port), and spanning tree blocks every
/// other leaf-to-spine link, which would close a loop. Only a two-tier fabric
/// (leaves under spines) has this design here; the answer is the layer-2
/// fabric and what it keeps, or why there is none.
pub fn l2_design(eth: &Fabric) -> Result<(Fabric, String), String> {
    use fabric::NodeKind;
    let is_leaf = |n: fabric::NodeId| {
        eth.node(n).port_nums().any(|p| {
            eth.peer(n, p)
                .is_some_and(|(e, _)| eth.node(e.node).kind == NodeKind::Ca)
        })
    };
    let switches: Vec<fabric::NodeId> = eth.nodes_of(NodeKind::Switch).collect();
    let spines: Vec<fabric::NodeId> = switches.iter().copied().filter(|&n| !is_leaf(n)).collect();
    for &sp in &spines {
        for p in eth.node(sp).port_nums() {
            if let Some((e, _)) = eth.peer(sp, p)
                && !is_leaf(e.node)
            {
                return Err(format!(
                    "{} links to {}, which serves no host: a three-tier fabric has no layer-2 design here, and RoCEv1 frames (EtherType 0x8915, no IP header) cannot be routed between its tiers",
                    eth.node(sp).name,
                    eth.node(e.node).name
                ));
            }
        }
    }
    if spines.is_empty() {
        return Ok((eth.clone(), "every leaf in one layer-2 domain, no spine tier".into()));
    }
    let pair: Vec<fabric::NodeId> = spines.iter().copied().take(2).collect();
    let mut l2 = eth.clone();
    let (mut kept, mut blocked) = (0usize, 0usize);
    // links in reverse id order: a removal shifts only the ids above it
    for id in (0..eth.links.len()).rev() {
        let l = &eth.links[id];
        let (a, b) = (l.a.node, l.b.node);
        let up = |x: fabric::NodeId, y: fabric::NodeId| is_leaf(x) && spines.contains(&y);
        if !(up(a, b) || up(b, a)) {
            continue;
        }
        if pair.contains(&a) || pair.contains(&b) {
            kept += 1;
        } else {
            l2.disconnect(fabric::LinkId(id as u32)).map_err(|e| e.to_string())?;
            blocked += 1;
        }
    }
    let names: Vec<&str> = pair.iter().map(|&n| eth.node(n).name.as_str()).collect();
    Ok((
        l2,
        format!(
            "one layer-2 domain: {} as the MLAG pair at the spanning tree's root, each leaf's links to it one LAG hashed on MAC addresses ({kept} leaf-spine links forwarding, {blocked} blocked by spanning tree); no IP header, so no ECN and no DCQCN: PFC keeps it lossless",
            names.join(" + ")
        ),
    ))
}

/// Run the scenario's training jobs on every variant (`None` without jobs).
pub(super) fn run(
    s: &Scenario,
    ib: &Fabric,
    eth: &Fabric,
    ib_nic: Nic,
    roce_nic: Nic,
) -> Result<Option<TrainingResults>, CompareError> {
    let Some(t) = &s.training else { return Ok(None) };
    let g = s.cluster.gpus_per_server.max(1);
    let cluster_gpus = s.cluster.servers * g;
    let bad = |message: String| CompareError::Variant {
        variant: "training".into(),
        message,
    };
    let mut jobs: Vec<Job> = Vec::with_capacity(t.jobs.len());
    for j in &t.jobs {
        jobs.push(j.check(cluster_gpus).map_err(|e| bad(e.to_string()))?);
    }
    let its: Vec<Iteration> = jobs.iter().map(Iteration::of).collect();
    let (eff, eff_source) = match t.efficiency {
        Some(e) => (e, "given (training.efficiency)".to_string()),
        None => crate::train::published_efficiency(),
    };
    // the jobs take their servers in turn from the placement's order
    let per_su = (s.cluster.servers / s.cluster.scalable_units.unwrap_or(1).max(1)) as usize;
    let need: Vec<usize> = jobs.iter().map(|j| j.gpus.div_ceil(g) as usize).collect();
    let order = t
        .placement
        .servers(s.cluster.servers as usize, per_su, need.iter().sum(), s.seed);
    let mut placed = Vec::with_capacity(jobs.len());
    let mut at = 0;
    for &n in &need {
        placed.push(order[at..at + n].to_vec());
        at += n;
    }
    let nic_gbs = f64::from(s.cluster.nic_gbps) / 8.0;
    let jobs_placed: Vec<JobPlaced> = jobs
        .iter()
        .zip(&placed)
        .zip(&its)
        .map(|((j, servers), it)| JobPlaced {
            name: j.name.clone(),
            model: j.model.name.clone(),
            gpus: j.gpus,
            parallel: format!(
                "tp {} · cp {} · pp {} · dp {} · ep {}",
                j.parallel.tp,
                j.parallel.cp,
                j.parallel.pp,
                j.dp(),
                j.parallel.ep
            ),
            placement: crate::train::describe_placement(t.placement, servers, per_su),
            servers: servers.clone(),
            tokens: j.tokens(),
            ideal_s: it.time(&IdealNetwork::new(&j.gpu, nic_gbs), eff).total_s,
        })
        .collect();
    let mut variants = Vec::with_capacity(s.variants.len());
    for v in &s.variants {
        let routed = match &v.fabric {
            VariantFabric::Infiniband { engines } => {
                let opts = sm::run::RunOptions {
                    engines: engines.clone(),
                    validate: false,
                    ..Default::default()
                };
                Routed::Ib(sm::run::run(ib, &opts)?.0, ib_config(ib_nic))
            }
            VariantFabric::Rocev2 {
                pfc,
                dcqcn,
                ecn,
                lossy_hops,
                ..
            } => {
                let mut cfg = roce_config(s, v, eth, *pfc, *dcqcn, *ecn, lossy_hops)?;
                cfg.nic.payload_ppm = roce_nic.payload_ppm;
                if let Some(ps) = roce_nic.switch_ps {
                    cfg.switch.switch_latency = sim::Time(ps);
                }
                let table = ethcp::EcmpTable::build(eth, cfg.routing.ecmp_convergence.as_ps());
                Routed::Eth(table, Box::new(cfg), roce_nic)
            }
            VariantFabric::Ipoib => {
                variants.push(refused(
                    v,
                    "NCCL's data plane runs on verbs, never on IPoIB: IPoIB carries a training job's ssh, storage and bootstrap, not its collectives".into(),
                ));
                continue;
            }
            VariantFabric::Rocev1 => match l2_design(eth) {
                Ok((l2, design)) => {
                    let mut cfg = roce_config(s, v, &l2, true, None, false, &[])?;
                    cfg.routing.rocev1 = Some(ethcp::L2Mode::FlatL2);
                    cfg.nic.payload_ppm = roce_nic.payload_ppm;
                    if let Some(ps) = roce_nic.switch_ps {
                        cfg.switch.switch_latency = sim::Time(ps);
                    }
                    let table = ethcp::EcmpTable::build(&l2, cfg.routing.ecmp_convergence.as_ps());
                    Routed::L2(Box::new(l2), design, table, Box::new(cfg), roce_nic)
                }
                Err(why) => {
                    variants.push(refused(v, format!("{}; {why}", super::rocev1_refusal(eth))));
                    continue;
                }
            },
        };
        variants.push(run_variant(s, t, v, &routed, ib, eth, &jobs, &its, &placed, eff)?);
    }
    Ok(Some(TrainingResults {
        engine: format!(
            "InfiniBand as max-min fair flows on the SM's routes (credits: no drops, no congestion control to react; within 0.001% of the packet level on an iteration); RoCEv2 packet by packet in the variant's world (PFC, DCQCN, drops and go-back-N) where the operation's largest message is at most {}; larger ones as max-min fair flows at full size on the variant's routes, times the packet world's slowdown over flows on the same messages scaled to at most {}; RoCEv1 as max-min fair flows on the layer-2 design's paths (no IP header: no ECN, no DCQCN, PFC alone); several jobs: each operation beside the other jobs' busiest one, started with it (a fixed pairing, not a joint schedule){}",
            super::human_bytes(t.packet_full_bytes),
            super::human_bytes(t.packet_cap_bytes),
            if s.workload.background_tcp_load > 0.0 {
                format!(
                    "; background TCP ({}) from every NIC at {:.0}% of line rate, off its rail, in the RoCEv2 packet runs (the flow level has no TCP)",
                    s.workload.background_tcp_cc.name(),
                    s.workload.background_tcp_load * 100.0
                )
            } else {
                String::new()
            }
        ),
        efficiency: eff,
        efficiency_source: eff_source,
        jobs: jobs_placed,
        variants,
    }))
}

use crate::train::chain;

fn refused(v: &Variant, why: String) -> TrainingVariant {
    TrainingVariant {
        id: v.id.clone(),
        label: v.label.clone(),
        refused: Some(why),
        design: None,
        jobs: Vec::new(),
        qps: Vec::new(),
    }
}

/// One variant: every job priced (hybrid) beside the others' busiest operation,
/// then each job's busiest operation alone at flow level with 1 and
/// `training.more_qps` QPs per connection.
#[allow(clippy::too_many_arguments)]
fn run_variant(
    s: &Scenario,
    t: &Training,
    v: &Variant,
    routed: &Routed,
    ib: &Fabric,
    eth: &Fabric,
    jobs: &[Job],
    its: &[Iteration],
    placed: &[Vec<usize>],
    eff: f64,
) -> Result<TrainingVariant, CompareError> {
    let (fabric, route, ib_cfg, roce_lat, wire) = match routed {
        Routed::Ib(tables, cfg) => (
            ib,
            Route::Ib(tables),
            cfg.clone(),
            None,
            crate::flow_world::ib_wire(cfg),
        ),
        Routed::Eth(table, cfg, nic) | Routed::L2(_, _, table, cfg, nic) => (
            match routed {
                Routed::L2(l2, ..) => l2.as_ref(),
                _ => eth,
            },
            Route::Eth(table, cfg.routing.hash, cfg),
            sim::IbConfig::default(),
            Some((nic.latency.tx_ps, nic.latency.rx_ps)),
            flow::path::WireModel {
                endpoint_ps: nic.latency.tx_ps + nic.latency.rx_ps,
                ..crate::flow_world::roce_wire(cfg)
            },
        ),
    };
    let fail = |e: crate::train::PlaceError| CompareError::Variant {
        variant: v.id.clone(),
        message: format!("training: {}", chain(&e)),
    };
    fn net<'a>(
        (fabric, route, seed): (&'a Fabric, Route<'a>, u64),
        job: &'a Job,
        servers: &[usize],
        pricing: Pricing,
        qps: u32,
        ends: (&sim::IbConfig, Option<(u64, u64)>, flow::path::WireModel),
    ) -> Result<FabricNetwork<'a>, crate::train::PlaceError> {
        FabricNetwork::placed(fabric, route, job, pricing, seed, servers)
            .map(|f| f.with_qps(qps).with_endpoints(ends.0.clone(), ends.1, ends.2))
    }
    let on = (fabric, route, s.seed);
    let ends = (&ib_cfg, roce_lat, wire);
    // storage and other TCP on the converged variants (RoCEv2's Ethernet);
    // InfiniBand carries none, RoCEv1's layer-2 design none either (as the
    // collectives' table)
    let tcp = match routed {
        Routed::Eth(..) if s.workload.background_tcp_load > 0.0 => {
            let nics = NicMap::from_fabric(eth).map_err(|e| CompareError::Variant {
                variant: v.id.clone(),
                message: format!("training: {}", chain(&e)),
            })?;
            super::background_tcp_flows(&nics, s.workload.background_tcp_load, s.cluster.nic_gbps)
        }
        _ => Vec::new(),
    };
    // InfiniBand as flows alone: credits drop nothing and no end-to-end
    // congestion control reacts, and on a training iteration the flows meet
    // the InfiniBand packet level within 0.001% (`crate::train`'s tests;
    // docs/TRAINING.md, Agreement and speed)
    let pricing = match routed {
        Routed::Ib(..) => Pricing::Flow,
        // RoCEv1 has no DCQCN to slow it (no IP header, no ECN) and PFC alone
        // priced the expert all-to-all and the rings at 1.0× their flows on
        // the routed design (docs/TRAINING.md): its flows on the layer-2
        // paths are its price
        Routed::L2(..) => Pricing::Flow,
        Routed::Eth(..) => Pricing::Hybrid {
            cap: t.packet_cap_bytes,
            full: t.packet_full_bytes,
        },
    };
    let mut fabs = Vec::with_capacity(jobs.len());
    for (job, servers) in jobs.iter().zip(placed) {
        fabs.push(
            net(on, job, servers, pricing, t.qps_per_connection, ends)
                .map_err(fail)?
                .with_tcp(tcp.clone(), super::tcp_config(s)),
        );
    }
    let busiest: Vec<(String, Vec<Message>)> = fabs.iter().zip(its).map(|(f, it)| f.busiest(it)).collect();
    for (i, fab) in fabs.iter_mut().enumerate() {
        for (j, (_, msgs)) in busiest.iter().enumerate() {
            if j != i {
                fab.beside(msgs);
            }
        }
    }
    let mut outcomes = Vec::with_capacity(jobs.len());
    for ((job, it), fab) in jobs.iter().zip(its).zip(&fabs) {
        fab.price(it).map_err(fail)?;
        outcomes.push(outcome(job, it, fab, eff, s.cluster.nic_gbps));
    }
    // every job's timeline on one clock, each operation's flows times its
    // packet factor
    if t.schedule == crate::train::joint::Schedule::Joint && jobs.len() > 1 {
        let nets: Vec<crate::train::PlaneNets<'_>> = fabs.into_iter().map(crate::train::PlaneNets::single).collect();
        let pairs: Vec<_> = nets.iter().zip(its).collect();
        let times = crate::train::joint::joint(&pairs, eff, s.seed).map_err(|e| CompareError::Variant {
            variant: v.id.clone(),
            message: format!("training: joint schedule: {}", chain(&e)),
        })?;
        for (o, j) in outcomes.iter_mut().zip(times) {
            o.joint = Some(j);
        }
    }
    // the ECMP study: each job's least even operation alone, at flow level (where
    // the flow engine models the variant; the routes of a lossy variant are
    // the tuned one's)
    let mut qps = Vec::new();
    let flow_models = match routed {
        Routed::Ib(..) => true,
        Routed::L2(..) => true,
        Routed::Eth(_, cfg, _) => crate::flow_world::FlowWorld::refusal(cfg, false).is_none(),
    };
    for (((job, it), servers), out) in jobs.iter().zip(its).zip(placed).zip(&outcomes) {
        // the job's operation whose bytes sat least evenly on the leaves' uplinks
        let worst = out
            .ops
            .iter()
            .filter(|o| o.uplink_imbalance.is_some_and(|x| x > 1.0 + 1e-9))
            .max_by(|a, b| {
                a.uplink_imbalance
                    .partial_cmp(&b.uplink_imbalance)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        let Some(op) = worst
            .and_then(|w| it.ops.iter().find(|o| o.label == w.label && o.bytes == w.bytes))
            .filter(|_| flow_models)
        else {
            continue;
        };
        let label = &op.label;
        let mut counts = vec![1];
        if t.more_qps != 1 {
            counts.push(t.more_qps);
        }
        for k in counts {
            let f = net(on, job, servers, Pricing::Flow, k, ends).map_err(fail)?;
            f.price_ops(std::slice::from_ref(op)).map_err(fail)?;
            let d = f.detail(op).unwrap_or_default();
            qps.push(QpsRow {
                job: job.name.clone(),
                op: label.clone(),
                qps: k,
                uplink_imbalance: d.uplink_imbalance.unwrap_or(1.0),
                op_s: f.op_time_s(op),
            });
        }
    }
    Ok(TrainingVariant {
        id: v.id.clone(),
        label: v.label.clone(),
        refused: None,
        design: match routed {
            Routed::L2(_, d, ..) => Some(d.clone()),
            _ => None,
        },
        jobs: outcomes,
        qps,
    })
}

/// A priced job's iteration as its outcome.
fn outcome(job: &Job, it: &Iteration, fab: &FabricNetwork<'_>, eff: f64, nic_gbps: u32) -> JobOutcome {
    let ideal_net = IdealNetwork::new(&job.gpu, f64::from(nic_gbps) / 8.0);
    let ideal = it.time(&ideal_net, eff);
    let time = it.time(fab, eff);
    let mut ops: Vec<OpOutcome> = Vec::new();
    let mut slowest: Option<(f64, SlowOp)> = None;
    let (mut drops, mut retrans, mut pause, mut cnps) = (0, 0, 0.0, 0);
    for op in it.ops.iter().filter(|o| o.link == Link::Network) {
        let Some(d) = fab.detail(op) else { continue };
        if ops.iter().any(|o| o.label == op.label && o.bytes == op.bytes) {
            continue;
        }
        let (ideal_s, fabric_s) = (ideal_net.op_time_s(op), fab.op_time_s(op));
        let count = op.count;
        let added = (fabric_s - ideal_s) * count as f64;
        let fabric_total = fabric_s * count as f64;
        // the operation adding most over the ideal network; when none adds, the longest
        let key = if added > 1e-12 { 1e6 + added } else { fabric_total };
        if slowest.as_ref().is_none_or(|(k, _)| key > *k) {
            slowest = Some((
                key,
                SlowOp {
                    label: op.label.clone(),
                    ideal_s,
                    fabric_s,
                    count,
                    port: d.hottest_port.clone(),
                },
            ));
        }
        drops += d.drops;
        retrans += d.retransmissions;
        pause += d.pause_us;
        cnps += d.cnps;
        ops.push(OpOutcome {
            label: op.label.clone(),
            count,
            bytes: op.bytes,
            ideal_s,
            fabric_s,
            packet_factor: d.packet_factor.unwrap_or(1.0),
            hottest_port: d.hottest_port,
            uplink_imbalance: d.uplink_imbalance,
            drops: d.drops,
            pause_us: d.pause_us,
            cnps: d.cnps,
        });
    }
    JobOutcome {
        job: job.name.clone(),
        iteration_s: time.total_s,
        over_ideal_pct: (time.total_s / ideal.total_s - 1.0) * 100.0,
        tokens_per_s: job.tokens() as f64 / time.total_s,
        tflops_per_gpu: it.tflops_per_gpu(time.total_s),
        exposed_comm_s: time.exposed_comm_s,
        slowest: slowest.map(|(_, s)| s),
        drops,
        retransmissions: retrans,
        pause_us: pause,
        cnps,
        ops,
        joint: None,
    }
}

/// Each (variant, job)'s iteration time and uplink imbalance over the runs
/// at successive seeds.
pub(super) fn spread(runs: &[crate::results::CompareResults]) -> Vec<crate::results::TrainingSpread> {
    use crate::results::{Spread, TrainingSpread};
    let Some(first) = runs.first().and_then(|r| r.training.as_ref()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (vi, v) in first.variants.iter().enumerate() {
        for (ji, j) in v.jobs.iter().enumerate() {
            let outcome = |r: &crate::results::CompareResults| {
                r.training
                    .as_ref()
                    .and_then(|t| t.variants.get(vi))
                    .and_then(|v| v.jobs.get(ji).cloned())
            };
            let all: Vec<JobOutcome> = runs.iter().filter_map(outcome).collect();
            let imbalance = all
                .iter()
                .map(|o| o.ops.iter().filter_map(|x| x.uplink_imbalance).fold(1.0, f64::max))
                .collect();
            out.push(TrainingSpread {
                variant: v.id.clone(),
                job: j.job.clone(),
                iteration: Spread::of("iteration, s".into(), all.iter().map(|o| o.iteration_s).collect()),
                uplink_imbalance: Spread::of(
                    "uplink imbalance of the least even operation (busiest uplink of the busiest leaf over the best spreading of whole connections; 1.0: even or no uplink traffic)".into(),
                    imbalance,
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::l2_design;
    use fabric::generate::{SuperPodParams, superpod};

    fn pod(sus: u32) -> fabric::Fabric {
        superpod(&SuperPodParams {
            sus,
            servers_per_su: 4,
            rails: 4,
            radix: 8,
            ..SuperPodParams::default()
        })
        .unwrap()
    }

    /// Two tiers: the MLAG pair's links forward, every other leaf-spine link is
    /// blocked, and every host still reaches every other over layer 2 only.
    #[test]
    fn l2_design_keeps_the_mlag_pair_and_blocks_the_rest() {
        let f = pod(2);
        let (l2, what) = l2_design(&f).unwrap();
        // 8 leaves, 4 uplinks each, one to each of 4 spines: 2 spines kept
        assert_eq!(f.count(fabric::NodeKind::Switch), 12);
        assert!(what.contains("16 leaf-spine links forwarding, 16 blocked"), "{what}");
        assert_eq!(l2.links.len(), f.links.len() - 16);
        let hosts: Vec<_> = l2.nodes_of(fabric::NodeKind::Ca).collect();
        for &b in &hosts[1..] {
            ethcp::check_roce_v1(&l2, hosts[0], b, ethcp::L2Mode::FlatL2).unwrap();
        }
    }

    /// Three tiers: refused, naming a spine and the core it links to.
    #[test]
    fn l2_design_refuses_three_tiers_by_name() {
        let f = pod(8);
        let e = l2_design(&f).unwrap_err();
        assert!(e.contains("serves no host") && e.contains("three-tier"), "{e}");
    }
}
