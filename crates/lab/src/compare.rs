//! The comparison: one scenario, every fabric variant, the same workload and seed.

use crate::advisor::Evidence;
use crate::results::CompareResults;

/// The advisor's view of a comparison's results: one [`Evidence`] per variant.
pub fn evidence(r: &CompareResults) -> Vec<Evidence> {
    r.variants
        .iter()
        .map(|v| Evidence {
            id: v.id.clone(),
            label: v.label.clone(),
            kind: Some(v.kind),
            refused: v.refused.clone(),
            busbw_gbs: v.large_ring_busbw(),
            busbw_bound_gbs: r.busbw_bound_gbs,
            p50_us: v.latency.as_ref().map(|l| l.p50_us),
            p99_us: v.latency.as_ref().map(|l| l.p99_us),
            p999_us: v.latency.as_ref().map(|l| l.p999_us),
            jitter_us: v.latency.as_ref().map(|l| l.jitter_us),
            drops: v.counters.drops,
            retransmissions: v.counters.retransmissions,
            pause_time_us: v.counters.pause_time_us,
            ecn_marks: v.counters.ecn_marks,
            cnps: v.counters.cnps,
            deadlocks: v.counters.deadlocks,
            storms: v.counters.storms,
            config_errors: v.findings.iter().filter(|f| f.starts_with("error")).count() as u64,
        })
        .collect()
}

use std::time::Instant;

use fabric::{Fabric, NodeId, NodeKind};
use sim::{EngineConfig, IbConfig, Sim};

use crate::advisor::FabricKind;
use crate::cluster;
use crate::collective::{Collective, HopCost, Schedule, nccl_bandwidth};
use crate::results::{CollectiveResult, Counters, IncastResult, Latency, SimEffort, SizeRow, TimeSeries, VariantResult};
use crate::runner::{IbNet, NicMap, ProbeSpec, RunError, run_messages, run_schedule};
use crate::scenario::{Scenario, Variant, VariantFabric};
use crate::tco::Tech;

/// Progress of a comparison, for a progress bar.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Steps done and in all.
    pub done: u64,
    pub total: u64,
    pub what: String,
}

/// A comparison could not run.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("building the cluster")]
    Build(#[from] fabric::GenError),
    #[error("bringing up InfiniBand with the SM")]
    Sm(#[from] sm::run::RunError),
    #[error("variant {variant}: {source}")]
    Run { variant: String, #[source] source: RunError },
    #[error("variant {variant}: {message}")]
    Variant { variant: String, message: String },
}

/// Payload bytes per wire byte of an RC SEND packet at `mtu` over native InfiniBand:
/// LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes of headers per packet (IBA vol. 1
/// §5–7). This sets the link-rate bound on busbw.
pub fn ib_payload_efficiency(mtu: u32) -> f64 {
    f64::from(mtu) / f64::from(mtu + 26)
}

fn steps(s: &Scenario) -> u64 {
    let per = (s.workload.collectives.len() * s.workload.sizes.len()) as u64 + u64::from(s.workload.incast.is_some());
    s.variants.len() as u64 * per
}

/// Run every variant of `s` and gather the results and the advice.
pub fn run(s: &Scenario, progress: &mut dyn FnMut(Progress)) -> Result<CompareResults, CompareError> {
    let total = steps(s);
    let mut done = 0u64;
    let ib_fabric = cluster::build(&s.cluster, Tech::InfiniBand)?;
    let eth_fabric = cluster::build(&s.cluster, Tech::Ethernet)?;
    let mtu = IbConfig::default().mtu;
    let bound = s.cluster.nic_gbps as f64 / 8.0 * ib_payload_efficiency(mtu);
    let mut variants = Vec::new();
    for v in &s.variants {
        progress(Progress { done, total, what: v.label.clone() });
        let r = match &v.fabric {
            VariantFabric::Infiniband { engines } => run_ib(s, v, &ib_fabric, engines, &mut done, total, progress)?,
            VariantFabric::Rocev1 => {
                done += steps_of(s);
                refused(v, FabricKind::Rocev1, rocev1_refusal(&eth_fabric))
            }
            VariantFabric::Rocev2 { .. } => {
                done += steps_of(s);
                refused(v, FabricKind::Rocev2, "not simulated in this build: the Ethernet switch and RoCE NIC models are not yet wired into the simulator".into())
            }
            VariantFabric::Ipoib => {
                done += steps_of(s);
                refused(v, FabricKind::Ipoib, "not simulated in this build: the IPoIB kernel TCP model is not yet wired into the simulator".into())
            }
        };
        variants.push(r);
    }
    progress(Progress { done: total, total, what: "advising".into() });
    let mut results = CompareResults {
        scenario: s.name.clone(),
        spec: s.clone(),
        seed: s.seed,
        cluster: format!(
            "{} servers × {} GPUs, one {}G NIC per GPU ({} endpoints), {} switches of radix {}, {} cables",
            s.cluster.servers,
            s.cluster.gpus_per_server,
            s.cluster.nic_gbps,
            ib_fabric.count(NodeKind::Ca),
            ib_fabric.count(NodeKind::Switch),
            s.cluster.radix,
            ib_fabric.links.len()
        ),
        endpoints: ib_fabric.count(NodeKind::Ca) as u32,
        busbw_bound_gbs: bound,
        variants,
        advice: crate::advisor::advise(&s.advisor, &[], &ib_fabric, &s.prices),
    };
    results.advice = crate::advisor::advise(&s.advisor, &evidence(&results), &ib_fabric, &s.prices);
    Ok(results)
}

fn steps_of(s: &Scenario) -> u64 {
    (s.workload.collectives.len() * s.workload.sizes.len()) as u64 + u64::from(s.workload.incast.is_some())
}

fn refused(v: &Variant, kind: FabricKind, why: String) -> VariantResult {
    VariantResult {
        id: v.id.clone(),
        label: v.label.clone(),
        kind,
        refused: Some(why),
        bring_up: String::new(),
        collectives: Vec::new(),
        latency: None,
        counters: Counters::default(),
        incast: None,
        timeseries: Vec::new(),
        findings: Vec::new(),
        effort: SimEffort::default(),
    }
}

/// Why RoCEv1 cannot carry this workload: its frames (EtherType 0x8915, GRH but no
/// IP header) stay inside one layer-2 domain, and a routed leaf–spine fabric makes
/// every leaf its own subnet. Names the first pair of NICs whose path must cross a
/// router.
pub fn rocev1_refusal(f: &Fabric) -> String {
    let nics = match NicMap::from_fabric(f) {
        Ok(n) => n,
        Err(e) => return format!("cannot map NICs: {e}"),
    };
    let leaf = |n: NodeId| f.peer(n, 1).map(|(e, _)| e.node);
    for (srv, row) in nics.nic.iter().enumerate() {
        for (r, &a) in row.iter().enumerate() {
            let b = nics.nic[(srv + 1) % nics.nic.len()][(r + 1) % row.len()];
            if let (Some(la), Some(lb)) = (leaf(a), leaf(b)) {
                if la != lb {
                    return format!(
                        "RoCEv1 frames (EtherType 0x8915) have no IP header and cannot be routed; {} sits under leaf {} and {} under leaf {}, and this fabric routes between leaves (each leaf is its own L3 subnet), so the workload's cross-rail traffic (all-to-all, incast) between them cannot be carried",
                        f.node(a).name,
                        f.node(la).name,
                        f.node(b).name,
                        f.node(lb).name
                    );
                }
            }
        }
    }
    "every NIC shares one leaf: RoCEv1 could run here, but this build does not simulate it".into()
}

fn latency_from(samples_ps: &[u64]) -> Option<Latency> {
    if samples_ps.is_empty() {
        return None;
    }
    let mut v: Vec<u64> = samples_ps.to_vec();
    v.sort_unstable();
    let us = |ps: u64| ps as f64 / 1e6;
    let q = |p: f64| v[((p * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
    let mean = v.iter().map(|&x| us(x)).sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|&x| (us(x) - mean).powi(2)).sum::<f64>() / v.len() as f64;
    let step = (v.len() / 200).max(1);
    let mut cdf: Vec<(f64, f64)> = v.iter().enumerate().step_by(step).map(|(i, &x)| (us(x), (i + 1) as f64 / v.len() as f64)).collect();
    cdf.push((us(*v.last().unwrap_or(&0)), 1.0));
    Some(Latency { samples: v.len() as u64, p50_us: us(q(0.5)), p99_us: us(q(0.99)), p999_us: us(q(0.999)), max_us: us(*v.last().unwrap_or(&0)), jitter_us: var.sqrt(), cdf })
}

fn nvlink(s: &Scenario) -> HopCost {
    HopCost { bytes_per_s: s.gpu.nvlink_gbytes * 1e9, latency_ps: s.gpu.nvlink_latency_ns * 1000 }
}

fn run_ib(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    engines: &[String],
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<VariantResult, CompareError> {
    let err = |source: RunError| CompareError::Run { variant: v.id.clone(), source };
    let kinds: Vec<sm::routing::EngineKind> = engines
        .iter()
        .map(|e| e.parse().map_err(|m: String| CompareError::Variant { variant: v.id.clone(), message: m }))
        .collect::<Result<_, _>>()?;
    let opts = sm::run::RunOptions { engines: kinds, ..Default::default() };
    let (tables, report) = sm::run::run(f, &opts)?;
    let mut findings = Vec::new();
    if let Some(val) = &report.validation {
        findings.extend(val_findings(val, f));
    }
    // Wall-clock phase timings stay out of the results so that the same seed gives
    // the same bytes; `rdmalab sm run` reports them.
    let bring_up = format!(
        "SM: {} LIDs, engine {}{}, {} VL(s)",
        report.lids.ports,
        report.outcome.engine.name(),
        if report.outcome.fallbacks.is_empty() { String::new() } else { format!(" after {} fallback(s)", report.outcome.fallbacks.len()) },
        report.vls_used
    );
    let nics = NicMap::from_fabric(f).map_err(err)?;
    let mut counters = Counters::default();
    let mut effort = SimEffort::default();
    let mut collectives = Vec::new();
    let mut latency = None;
    let timeseries = Vec::new();
    let g = s.cluster.gpus_per_server;
    let nranks = s.cluster.servers * g;
    let largest = *s.workload.sizes.last().unwrap_or(&0);
    for &op in &s.workload.collectives {
        let mut rows = Vec::new();
        for &size in &s.workload.sizes {
            progress(Progress { done: *done, total, what: format!("{}: {} {}", v.label, op.name(), crate::compare::human_bytes(size)) });
            let probe_run = op == Collective::AllReduceRing && size == largest;
            let eng = EngineConfig { seed: s.seed, sample_interval_ps: 0, ..EngineConfig::default() };
            let mut sim = Sim::new(f, &tables, IbConfig::default(), eng).map_err(|e| err(e.into()))?;
            let sched = Schedule::build(op, s.cluster.servers, g, size).map_err(|e| CompareError::Variant { variant: v.id.clone(), message: e.to_string() })?;
            let probe = probe_run.then_some(ProbeSpec { bytes: s.workload.probe.bytes, interval_ps: s.workload.probe.interval_us * 1_000_000 });
            let wall = Instant::now();
            let run = match run_schedule(&mut IbNet::new(&mut sim), &nics, &sched, nvlink(s), probe) {
                Ok(r) => r,
                Err(RunError::Deadlock(d)) => {
                    counters.deadlocks += 1;
                    findings.push(format!("error: {} {}: {d}", op.name(), human_bytes(size)));
                    *done += 1;
                    continue;
                }
                Err(e) => return Err(err(e)),
            };
            sim.finish();
            sim.check_ledger().map_err(|e| err(e.into()))?;
            account(&sim, &mut counters, &mut effort, wall);
            if probe_run {
                latency = latency_from(&run.probe_latency_ps);
                // occupancy sampling stays off until the simulator stops re-arming its
                // sample event once traffic ends (Sample and Watchdog keep each other alive)
                let _ = occupancy_series;
            }
            let (algbw, busbw) = nccl_bandwidth(op, size, nranks, run.time_ps);
            let nic = if run.time_ps == 0 { 0.0 } else { run.max_nic_bytes as f64 / (run.time_ps as f64 * 1e-12) / 1e9 };
            rows.push(SizeRow { size, time_us: run.time_ps as f64 / 1e6, algbw, busbw, busbw_per_nic: nic });
            *done += 1;
        }
        collectives.push(CollectiveResult { op, rows });
    }
    let incast = match &s.workload.incast {
        Some(i) => {
            progress(Progress { done: *done, total, what: format!("{}: {}:1 incast", v.label, i.senders) });
            let mut sim = Sim::new(f, &tables, IbConfig::default(), EngineConfig { seed: s.seed, ..EngineConfig::default() }).map_err(|e| err(e.into()))?;
            let wall = Instant::now();
            let msgs = incast_messages(&nics, i.senders, i.bytes).map_err(err)?;
            let r = run_messages(&mut IbNet::new(&mut sim), &msgs).map_err(err)?;
            sim.finish();
            sim.check_ledger().map_err(|e| err(e.into()))?;
            account(&sim, &mut counters, &mut effort, wall);
            *done += 1;
            Some(IncastResult {
                senders: i.senders,
                bytes_each: i.bytes,
                completion_us: r as f64 / 1e6,
                goodput_gbs: (i.bytes * u64::from(i.senders)) as f64 / (r as f64 * 1e-12) / 1e9,
                drops: 0,
                retransmissions: 0,
            })
        }
        None => None,
    };
    Ok(VariantResult {
        id: v.id.clone(),
        label: v.label.clone(),
        kind: FabricKind::Infiniband,
        refused: None,
        bring_up,
        collectives,
        latency,
        counters,
        incast,
        timeseries,
        findings,
        effort,
    })
}

/// The SM's validation as diagnostic findings: "error: …" for what breaks traffic.
fn val_findings(v: &sm::Validation, f: &Fabric) -> Vec<String> {
    let mut out = Vec::new();
    let r = &v.routes;
    if r.all_reachable() {
        out.push(format!("ok: all {} CA-to-CA pairs reach their destination through the programmed LFTs (max {} hops)", r.pairs, r.max_hops));
    } else {
        out.push(format!("error: {} of {} CA-to-CA pairs are unreachable", r.unreachable, r.pairs));
    }
    if r.non_minimal > 0 {
        out.push(format!("warning: {} routes are longer than the shortest path", r.non_minimal));
    }
    match &v.credit_loops.cycle {
        None => out.push(format!("ok: no credit loop over {} VL(s)", v.credit_loops.vls_used)),
        Some(c) => {
            let path: Vec<String> = c.iter().map(|ch| format!("{}[{}] VL{}", f.node(ch.node).name, ch.port, ch.vl)).collect();
            out.push(format!("error: credit loop {}", path.join(" -> ")));
        }
    }
    out.push(format!("info: busiest switch-to-switch port carries {} routes", v.loads.max_routes_isl));
    out
}

fn account(sim: &Sim, c: &mut Counters, e: &mut SimEffort, wall: Instant) {
    let st = sim.stats();
    c.packets_delivered += sim.ledger().delivered;
    c.drops += sim.ledger().total_dropped();
    e.events += st.events;
    e.packet_hops += st.hops;
    e.simulated_us += sim.now().0 as f64 / 1e6;
    e.wall_ms += wall.elapsed().as_secs_f64() * 1e3;
}

/// Total input-buffer occupancy of all switch ports over time, KiB.
fn occupancy_series(sim: &Sim, f: &Fabric) -> TimeSeries {
    let st = sim.stats();
    let nports = if st.sample_times.is_empty() { 0 } else { st.sample_occ.len() / st.sample_times.len() };
    let mut sw_ports = Vec::new();
    for n in f.nodes_of(NodeKind::Switch) {
        for p in f.node(n).port_nums() {
            sw_ports.push(sim.gp(n, p) as usize);
        }
    }
    let points = st
        .sample_times
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let blocks: u64 = sw_ports.iter().filter(|&&gp| gp < nports).map(|&gp| u64::from(st.sample_occ[i * nports + gp])).sum();
            (t.0 as f64 / 1e6, blocks as f64 * 64.0 / 1024.0)
        })
        .collect();
    TimeSeries { name: "switch buffer occupancy during ring all-reduce (largest size)".into(), unit: "KiB in all switch input buffers".into(), points }
}

/// The N:1 incast's messages: sender k is NIC (server 1 + k mod (S−1), rail k mod R),
/// the receiver NIC (0, 0); every sender posts `bytes` at time 0.
fn incast_messages(nics: &NicMap, senders: u32, bytes: u64) -> Result<Vec<(NodeId, NodeId, u64)>, RunError> {
    let servers = nics.nic.len();
    let rails = nics.nic[0].len();
    if servers < 2 {
        return Err(RunError::Topology("an incast needs at least two servers".into()));
    }
    let dst = nics.nic[0][0];
    Ok((0..senders as usize).map(|k| (nics.nic[1 + k % (servers - 1)][k % rails], dst, bytes)).collect())
}

/// "4 MiB" style.
pub fn human_bytes(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB"];
    let mut x = b as f64;
    let mut i = 0;
    while x >= 1024.0 && i + 1 < units.len() {
        x /= 1024.0;
        i += 1;
    }
    if x.fract() == 0.0 { format!("{x:.0} {}", units[i]) } else { format!("{x:.1} {}", units[i]) }
}
