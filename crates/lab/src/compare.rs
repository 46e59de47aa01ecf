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
            tcp: v.tcp.as_ref().map(|t| crate::advisor::TcpEvidence {
                load: t.load,
                quiet_busbw_gbs: t.quiet_busbw_gbs,
                quiet_p99_us: t.quiet_p99_us,
                drops: t.drops,
                retransmissions: t.retransmissions,
            }),
        })
        .collect()
}

use std::time::Instant;

use fabric::{Fabric, NodeId, NodeKind};
use sim::{EngineConfig, IbConfig, Sim};

use crate::advisor::FabricKind;
use crate::cluster;
use crate::collective::{Collective, HopCost, Schedule, nccl_bandwidth};
use crate::results::{
    CollectiveResult, Counters, IncastResult, Latency, SimEffort, SizeRow, TcpBackground, TimeSeries, VariantResult,
};
use crate::runner::{IbNet, NicMap, ProbeSpec, RoceNet, RunError, run_messages, run_schedule};
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
    Run {
        variant: String,
        #[source]
        source: RunError,
    },
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
    run_with(s, None, progress)
}

/// The user's own RoCE configuration files (SONiC `config_db.json`, `mlnx_qos`
/// output, DCQCN sysfs dumps), as (file name, contents).
#[derive(Clone, Debug, Default)]
pub struct UserRoce {
    pub files: Vec<(String, String)>,
}

/// [`run`], plus a variant built from the user's RoCE configuration: the linter's
/// findings become the variant's findings, and what the files set (PFC on the RDMA
/// class, ECN thresholds, watchdog, buffer, MTU) becomes the simulated fabric's
/// settings ([`crate::roce_variant::to_sim_config`]).
pub fn run_with(
    s: &Scenario,
    user: Option<&UserRoce>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareResults, CompareError> {
    let total = steps(s) + if user.is_some() { steps_of(s) } else { 0 };
    let mut done = 0u64;
    let ib_fabric = cluster::build(&s.cluster, Tech::InfiniBand)?;
    let eth_fabric = cluster::build(&s.cluster, Tech::Ethernet)?;
    let mtu = IbConfig::default().mtu;
    let bound = s.cluster.nic_gbps as f64 / 8.0 * ib_payload_efficiency(mtu);
    let mut variants = Vec::new();
    for v in &s.variants {
        progress(Progress {
            done,
            total,
            what: v.label.clone(),
        });
        let r = match &v.fabric {
            VariantFabric::Infiniband { engines } => run_ib(s, v, &ib_fabric, engines, &mut done, total, progress)?,
            VariantFabric::Rocev1 => {
                done += steps_of(s);
                refused(v, FabricKind::Rocev1, rocev1_refusal(&eth_fabric))
            }
            VariantFabric::Rocev2 {
                pfc,
                dcqcn,
                ecn,
                lossy_hops,
            } => run_roce(
                s,
                v,
                &eth_fabric,
                *pfc,
                *dcqcn,
                *ecn,
                lossy_hops,
                &mut done,
                total,
                progress,
            )?,
            VariantFabric::Ipoib => run_ipoib(s, v, &ib_fabric, &mut done, total, progress)?,
        };
        variants.push(r);
    }
    if let Some(u) = user {
        let v = Variant {
            id: "roce-yours".into(),
            label: "RoCEv2 with your configuration".into(),
            fabric: VariantFabric::Rocev2 {
                pfc: true,
                dcqcn: Some(sim::roce::dcqcn::Profile::NvidiaCx),
                ecn: true,
                lossy_hops: Vec::new(),
            },
        };
        progress(Progress {
            done,
            total,
            what: v.label.clone(),
        });
        let bad = |message: String| CompareError::Variant {
            variant: v.id.clone(),
            message,
        };
        let mut parsed = Vec::with_capacity(u.files.len());
        for (name, text) in &u.files {
            parsed.push((
                name.as_str(),
                diag::roce::parse_input(name, text).map_err(|e| bad(e.to_string()))?,
            ));
        }
        let report = diag::roce::lint_parsed(&parsed, &diag::roce::LintOptions::default());
        let base = roce_config(
            s,
            &v,
            &eth_fabric,
            true,
            Some(sim::roce::dcqcn::Profile::NvidiaCx),
            true,
            &[],
        )?;
        let (cfg, notes) = crate::roce_variant::to_sim_config(&parsed, &report, &base);
        let mut findings: Vec<String> = report
            .findings
            .iter()
            .map(|f| {
                format!(
                    "{}: [{}] {} — {}",
                    format!("{:?}", f.severity).to_lowercase(),
                    f.rule,
                    f.message,
                    f.fix
                )
            })
            .collect();
        findings.extend(notes.notes.iter().map(|n| format!("info: {n}")));
        let bring_up = format!(
            "your configuration ({} files): PFC {}, ECN {}, PFC watchdog {}",
            u.files.len(),
            if notes.pfc {
                "on the RDMA class"
            } else {
                "not lossless end to end"
            },
            if notes.ecn { "marking" } else { "not marking" },
            if notes.watchdog { "on" } else { "off" }
        );
        variants.push(run_roce_cfg(
            s,
            &v,
            &eth_fabric,
            cfg,
            bring_up,
            findings,
            &mut done,
            total,
            progress,
        )?);
    }
    progress(Progress {
        done: total,
        total,
        what: "advising".into(),
    });
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
        tcp: None,
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
            if let (Some(la), Some(lb)) = (leaf(a), leaf(b))
                && la != lb
            {
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
    let mut cdf: Vec<(f64, f64)> = v
        .iter()
        .enumerate()
        .step_by(step)
        .map(|(i, &x)| (us(x), (i + 1) as f64 / v.len() as f64))
        .collect();
    cdf.push((us(*v.last().unwrap_or(&0)), 1.0));
    Some(Latency {
        samples: v.len() as u64,
        p50_us: us(q(0.5)),
        p99_us: us(q(0.99)),
        p999_us: us(q(0.999)),
        max_us: us(*v.last().unwrap_or(&0)),
        jitter_us: var.sqrt(),
        cdf,
    })
}

fn nvlink(s: &Scenario) -> HopCost {
    HopCost {
        bytes_per_s: s.gpu.nvlink_gbytes * 1e9,
        latency_ps: s.gpu.nvlink_latency_ns * 1000,
    }
}

/// What one simulated run (a collective at one size, or the incast) cost and counted.
#[derive(Clone, Debug, Default)]
struct WorldStats {
    delivered: u64,
    drops: u64,
    retransmissions: u64,
    pause_frames: u64,
    pause_us: f64,
    ecn_marks: u64,
    cnps: u64,
    events: u64,
    hops: u64,
    sim_us: f64,
    /// Drops by reason: (reason, all priorities, of which on a lossless priority).
    drop_reasons: Vec<(String, u64, u64)>,
    /// Time series recorded during the run (the incast's).
    series: Vec<TimeSeries>,
    /// Background TCP's counters, when it ran.
    tcp: Option<TcpStats>,
}

/// What the background TCP of one run did.
#[derive(Clone, Debug, Default)]
struct TcpStats {
    flows: u32,
    delivered_bytes: u64,
    sim_ps: u64,
    /// Drops by reason, indexed like `RoceDrop::ALL`.
    drops: [u64; sim::roce::net::RoceDrop::ALL.len()],
    retransmits: u64,
    fast_retransmits: u64,
    timeouts: u64,
    ecn_reductions: u64,
}

impl TcpStats {
    fn add(&mut self, o: &TcpStats) {
        self.flows = self.flows.max(o.flows);
        self.delivered_bytes += o.delivered_bytes;
        self.sim_ps += o.sim_ps;
        for (a, b) in self.drops.iter_mut().zip(o.drops) {
            *a += b;
        }
        self.retransmits += o.retransmits;
        self.fast_retransmits += o.fast_retransmits;
        self.timeouts += o.timeouts;
        self.ecn_reductions += o.ecn_reductions;
    }
}

/// What a world runs: a collective schedule (with probes) or a set of messages.
enum Job<'a> {
    Schedule(&'a Schedule, Option<ProbeSpec>),
    Messages(&'a [(NodeId, NodeId, u64)]),
}

/// Builds a fresh world, runs one job on it (with the scenario's background TCP
/// when the flag is set and the world carries it) and reports what it counted.
type World<'w> = dyn FnMut(&Job<'_>, bool) -> Result<(JobOut, WorldStats), RunError> + 'w;

/// The outcome of one job.
enum JobOut {
    Schedule(crate::runner::ScheduleRun),
    Messages(u64),
}

/// Run every collective at every size and the incast, each on a fresh world made
/// by `world`, and gather the variant's results.
#[expect(clippy::too_many_arguments, reason = "the loop threads progress and results through")]
fn run_workload(
    s: &Scenario,
    v: &Variant,
    kind: FabricKind,
    bring_up: String,
    mut findings: Vec<String>,
    nics: &NicMap,
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
    world: &mut World<'_>,
    background: bool,
) -> Result<VariantResult, CompareError> {
    let err = |source: RunError| CompareError::Run {
        variant: v.id.clone(),
        source,
    };
    let mut tcp_total: Option<TcpStats> = None;
    let mut counters = Counters::default();
    let mut effort = SimEffort::default();
    let mut collectives = Vec::new();
    let mut timeseries: Vec<TimeSeries> = Vec::new();
    let mut latency = None;
    let g = s.cluster.gpus_per_server;
    let nranks = s.cluster.servers * g;
    let largest = *s.workload.sizes.last().unwrap_or(&0);
    let mut reasons: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut add = |w: &WorldStats, wall: Instant, counters: &mut Counters, effort: &mut SimEffort| {
        for (r, n, l) in &w.drop_reasons {
            let e = reasons.entry(r.clone()).or_default();
            e.0 += n;
            e.1 += l;
        }
        counters.packets_delivered += w.delivered;
        counters.drops += w.drops;
        counters.retransmissions += w.retransmissions;
        counters.pause_frames += w.pause_frames;
        counters.pause_time_us += w.pause_us;
        counters.ecn_marks += w.ecn_marks;
        counters.cnps += w.cnps;
        effort.events += w.events;
        effort.packet_hops += w.hops;
        effort.simulated_us += w.sim_us;
        effort.wall_ms += wall.elapsed().as_secs_f64() * 1e3;
    };
    for &op in &s.workload.collectives {
        let mut rows = Vec::new();
        for &size in &s.workload.sizes {
            progress(Progress {
                done: *done,
                total,
                what: format!("{}: {} {}", v.label, op.name(), human_bytes(size)),
            });
            let probe_run = op == Collective::AllReduceRing && size == largest;
            let sched = Schedule::build(op, s.cluster.servers, g, size).map_err(|e| CompareError::Variant {
                variant: v.id.clone(),
                message: e.to_string(),
            })?;
            let probe = probe_run.then_some(ProbeSpec {
                bytes: s.workload.probe.bytes,
                interval_ps: s.workload.probe.interval_us * 1_000_000,
            });
            let wall = Instant::now();
            let (out, w) = match world(&Job::Schedule(&sched, probe), background) {
                Ok(r) => r,
                Err(RunError::Deadlock(d)) => {
                    counters.deadlocks += 1;
                    findings.push(format!("error: {} {} deadlocked: {d}", op.name(), human_bytes(size)));
                    *done += 1;
                    continue;
                }
                Err(e) => return Err(err(e)),
            };
            add(&w, wall, &mut counters, &mut effort);
            if let Some(t) = &w.tcp {
                tcp_total.get_or_insert_with(TcpStats::default).add(t);
            }
            let JobOut::Schedule(run) = out else {
                unreachable!("a schedule job returns a schedule run")
            };
            if probe_run {
                latency = latency_from(&run.probe_latency_ps);
            }
            let (algbw, busbw) = nccl_bandwidth(op, size, nranks, run.time_ps);
            let nic = if run.time_ps == 0 {
                0.0
            } else {
                run.max_nic_bytes as f64 / (run.time_ps as f64 * 1e-12) / 1e9
            };
            rows.push(SizeRow {
                size,
                time_us: run.time_ps as f64 / 1e6,
                algbw,
                busbw,
                busbw_per_nic: nic,
            });
            *done += 1;
        }
        collectives.push(CollectiveResult { op, rows });
    }
    let incast = match &s.workload.incast {
        Some(i) => {
            progress(Progress {
                done: *done,
                total,
                what: format!("{}: {}:1 incast", v.label, i.senders),
            });
            let msgs = incast_messages(nics, i.senders, i.bytes).map_err(err)?;
            let wall = Instant::now();
            *done += 1;
            match world(&Job::Messages(&msgs), false) {
                Ok((JobOut::Messages(t), w)) => {
                    add(&w, wall, &mut counters, &mut effort);
                    timeseries.extend(w.series.iter().cloned());
                    Some(IncastResult {
                        senders: i.senders,
                        bytes_each: i.bytes,
                        completion_us: t as f64 / 1e6,
                        goodput_gbs: (i.bytes * u64::from(i.senders)) as f64 / (t as f64 * 1e-12) / 1e9,
                        drops: w.drops,
                        retransmissions: w.retransmissions,
                    })
                }
                Ok(_) => unreachable!("a message job returns a completion time"),
                Err(RunError::Deadlock(d)) => {
                    counters.deadlocks += 1;
                    findings.push(format!("error: the incast deadlocked: {d}"));
                    None
                }
                Err(e) => return Err(err(e)),
            }
        }
        None => None,
    };
    let tcp = match tcp_total {
        Some(t) => {
            progress(Progress {
                done: *done,
                total,
                what: format!("{}: largest ring all-reduce again, without background TCP", v.label),
            });
            Some(tcp_background(s, v, &t, world, &mut effort, &err)?)
        }
        None => None,
    };
    for (r, (n, lossless)) in &reasons {
        if *lossless > 0 {
            findings.push(format!(
                "error: {lossless} packets of the RDMA class, which must be lossless, dropped ({r})"
            ));
        }
        if n > lossless {
            findings.push(format!(
                "warning: {} packets dropped on lossy priorities ({r})",
                n - lossless
            ));
        }
    }
    Ok(VariantResult {
        id: v.id.clone(),
        label: v.label.clone(),
        kind,
        refused: None,
        bring_up,
        collectives,
        latency,
        counters,
        incast,
        timeseries,
        findings,
        effort,
        tcp,
    })
}

/// The background TCP's summary, with the headline collective (ring all-reduce
/// at the largest size, with its probes) run once more without TCP for the
/// before/after.
fn tcp_background(
    s: &Scenario,
    v: &Variant,
    t: &TcpStats,
    world: &mut World<'_>,
    effort: &mut SimEffort,
    err: &dyn Fn(RunError) -> CompareError,
) -> Result<TcpBackground, CompareError> {
    let g = s.cluster.gpus_per_server;
    let largest = *s.workload.sizes.last().unwrap_or(&0);
    let (mut quiet_busbw_gbs, mut lat) = (None, None);
    if s.workload.collectives.contains(&Collective::AllReduceRing) {
        let sched = Schedule::build(Collective::AllReduceRing, s.cluster.servers, g, largest).map_err(|e| {
            CompareError::Variant {
                variant: v.id.clone(),
                message: e.to_string(),
            }
        })?;
        let probe = ProbeSpec {
            bytes: s.workload.probe.bytes,
            interval_ps: s.workload.probe.interval_us * 1_000_000,
        };
        let wall = Instant::now();
        match world(&Job::Schedule(&sched, Some(probe)), false) {
            Ok((JobOut::Schedule(run), w)) => {
                effort.events += w.events;
                effort.packet_hops += w.hops;
                effort.simulated_us += w.sim_us;
                effort.wall_ms += wall.elapsed().as_secs_f64() * 1e3;
                if run.time_ps > 0 {
                    quiet_busbw_gbs = Some(run.max_nic_bytes as f64 / (run.time_ps as f64 * 1e-12) / 1e9);
                }
                lat = latency_from(&run.probe_latency_ps);
            }
            Ok(_) => unreachable!("a schedule job returns a schedule run"),
            // A quiet run that deadlocks has no before/after to give.
            Err(RunError::Deadlock(_)) => {}
            Err(e) => return Err(err(e)),
        }
    }
    let secs = t.sim_ps as f64 * 1e-12;
    let flows = f64::from(t.flows.max(1));
    Ok(TcpBackground {
        load: s.workload.background_tcp_load,
        cc: s.workload.background_tcp_cc.name().into(),
        flows: t.flows,
        offered_gbps_per_flow: s.workload.background_tcp_load * f64::from(s.cluster.nic_gbps),
        goodput_gbps_per_flow: if secs > 0.0 {
            t.delivered_bytes as f64 * 8.0 / secs / flows / 1e9
        } else {
            0.0
        },
        drops: t.drops.iter().sum(),
        drop_reasons: sim::roce::net::RoceDrop::ALL
            .iter()
            .zip(t.drops)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (format!("{r:?}"), n))
            .collect(),
        retransmissions: t.retransmits,
        fast_retransmits: t.fast_retransmits,
        timeouts: t.timeouts,
        ecn_reductions: t.ecn_reductions,
        quiet_busbw_gbs,
        quiet_p50_us: lat.as_ref().map(|l| l.p50_us),
        quiet_p99_us: lat.as_ref().map(|l| l.p99_us),
        quiet_p999_us: lat.as_ref().map(|l| l.p999_us),
    })
}

/// Close an InfiniBand run (stalls accounted, the ledger checked) and count it.
fn ib_world_stats(sim: &mut Sim) -> Result<WorldStats, RunError> {
    sim.finish();
    sim.check_ledger()?;
    let st = sim.stats();
    Ok(WorldStats {
        delivered: sim.ledger().delivered,
        drops: sim.ledger().total_dropped(),
        events: st.events,
        hops: st.hops,
        sim_us: sim.now().0 as f64 / 1e6,
        ..WorldStats::default()
    })
}

/// Sampling period of the incast's time series.
const SAMPLE_PS: u64 = 2_000_000;

/// Name of the buffer chart; every variant's series of that name share one chart.
const BUFFER_SERIES: &str = "switch buffer held during the incast";
/// Name of the pause chart.
const PAUSE_SERIES: &str = "ports paused by PFC during the incast";

/// Bytes held in all switch input buffers over time (the IB simulator's samples).
fn ib_buffer_series(sim: &Sim, f: &Fabric) -> TimeSeries {
    let st = sim.stats();
    let nports = if st.sample_times.is_empty() {
        0
    } else {
        st.sample_occ.len() / st.sample_times.len()
    };
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
            let blocks: u64 = sw_ports
                .iter()
                .filter(|&&gp| gp < nports)
                .map(|&gp| u64::from(st.sample_occ[i * nports + gp]))
                .sum();
            (t.0 as f64 / 1e6, blocks as f64 * 64.0 / 1024.0)
        })
        .collect();
    TimeSeries {
        name: BUFFER_SERIES.into(),
        unit: "KiB".into(),
        points,
    }
}

/// How many ports are paused at each PFC transition (from the world's pfc.txt
/// records: +1 on a pause received, −1 on a resume).
fn pause_series(records: &[sim::roce::hpcc::PfcRecord]) -> TimeSeries {
    let mut ev: Vec<(u64, bool, u32, u32)> = records
        .iter()
        .map(|r| (r.time_ns, r.pause, r.node, r.if_index))
        .collect();
    ev.sort_unstable();
    let mut paused = std::collections::BTreeSet::new();
    let mut points = vec![(0.0, 0.0)];
    for (t, pause, node, port) in ev {
        if pause {
            paused.insert((node, port));
        } else {
            paused.remove(&(node, port));
        }
        points.push((t as f64 / 1e3, paused.len() as f64));
    }
    TimeSeries {
        name: PAUSE_SERIES.into(),
        unit: "ports paused".into(),
        points,
    }
}

fn run_job(
    net: &mut dyn crate::runner::Network,
    nics: &NicMap,
    job: &Job<'_>,
    nvl: HopCost,
) -> Result<JobOut, RunError> {
    Ok(match job {
        Job::Schedule(sched, probe) => JobOut::Schedule(run_schedule(net, nics, sched, nvl, *probe)?),
        Job::Messages(m) => JobOut::Messages(run_messages(net, m)?),
    })
}

fn run_ib(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    engines: &[sm::routing::EngineKind],
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<VariantResult, CompareError> {
    let err = |source: RunError| CompareError::Run {
        variant: v.id.clone(),
        source,
    };
    let opts = sm::run::RunOptions {
        engines: engines.to_vec(),
        ..Default::default()
    };
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
        if report.outcome.fallbacks.is_empty() {
            String::new()
        } else {
            format!(" after {} fallback(s)", report.outcome.fallbacks.len())
        },
        report.vls_used
    );
    let nics = NicMap::from_fabric(f).map_err(err)?;
    let nvl = nvlink(s);
    let seed = s.seed;
    let mut world = |job: &Job<'_>, _background: bool| -> Result<(JobOut, WorldStats), RunError> {
        let incast = matches!(job, Job::Messages(_));
        let sample = if incast { SAMPLE_PS } else { 0 };
        let mut sim = Sim::new(
            f,
            &tables,
            IbConfig::default(),
            EngineConfig {
                seed,
                sample_interval_ps: sample,
                ..EngineConfig::default()
            },
        )?;
        let out = run_job(&mut IbNet::new(&mut sim), &nics, job, nvl)?;
        let mut w = ib_world_stats(&mut sim)?;
        // InfiniBand has no PFC: its pause series is flat, which is the point
        w.series = if incast {
            vec![
                ib_buffer_series(&sim, f),
                TimeSeries {
                    name: PAUSE_SERIES.into(),
                    unit: "ports paused".into(),
                    points: vec![(0.0, 0.0), (sim.now().0 as f64 / 1e6, 0.0)],
                },
            ]
        } else {
            Vec::new()
        };
        Ok((out, w))
    };
    run_workload(
        s,
        v,
        FabricKind::Infiniband,
        bring_up,
        findings,
        &nics,
        done,
        total,
        progress,
        &mut world,
        false,
    )
}

/// TCP over IPoIB (connected mode, 4 KiB IB MTU) on the InfiniBand fabric routed by
/// the SM with ftree/updn: the same wires and switches as the verbs variant, with
/// the kernel's CPU cost on both ends (`sim::roce::ipoib`).
fn run_ipoib(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<VariantResult, CompareError> {
    let err = |source: RunError| CompareError::Run {
        variant: v.id.clone(),
        source,
    };
    let opts = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
        ..Default::default()
    };
    let (tables, report) = sm::run::run(f, &opts)?;
    let nics = NicMap::from_fabric(f).map_err(err)?;
    let nvl = nvlink(s);
    let seed = s.seed;
    let cfg = sim::roce::ipoib::IpoibConfig::default();
    let mut world = |job: &Job<'_>, _background: bool| -> Result<(JobOut, WorldStats), RunError> {
        let mut sim = Sim::new(
            f,
            &tables,
            IbConfig::default(),
            EngineConfig {
                seed,
                sample_interval_ps: 0,
                ..EngineConfig::default()
            },
        )?;
        let out = run_job(&mut crate::runner::IpoibNet::new(&mut sim, cfg), &nics, job, nvl)?;
        Ok((out, ib_world_stats(&mut sim)?))
    };
    let bring_up = format!(
        "SM: engine {}; IPoIB connected mode (IP MTU {}), TCP through the kernel: {:.3} ns/B to send, {:.3} ns/B to receive, {} ns per system call",
        report.outcome.engine.name(),
        cfg.ip_mtu(),
        cfg.send_ns_per_byte,
        cfg.recv_ns_per_byte,
        cfg.syscall_ns
    );
    run_workload(
        s,
        v,
        FabricKind::Ipoib,
        bring_up,
        Vec::new(),
        &nics,
        done,
        total,
        progress,
        &mut world,
        false,
    )
}

/// The RoCE world's settings for a scenario variant.
fn roce_config(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    pfc: bool,
    dcqcn: Option<sim::roce::dcqcn::Profile>,
    ecn: bool,
    lossy_hops: &[String],
) -> Result<sim::roce::net::RoceConfig, CompareError> {
    use sim::roce::net::{CongestionControl, RoceConfig};
    let bad = |message: String| CompareError::Variant {
        variant: v.id.clone(),
        message,
    };
    let line = u64::from(s.cluster.nic_gbps) * 1_000_000_000;
    let cc = match dcqcn {
        Some(p) => CongestionControl::Dcqcn(p.params(line)),
        None => CongestionControl::None,
    };
    let lossy: Vec<NodeId> = lossy_hops
        .iter()
        .map(|h| {
            f.by_name(h)
                .ok_or_else(|| bad(format!("lossy_hops names {h:?}, which is not a switch of this cluster")))
        })
        .collect::<Result<_, _>>()?;
    let cfg = RoceConfig {
        // 4096-byte RoCE MTU, as RDMA NICs negotiate on 9000-byte Ethernet
        mtu: 4096,
        pfc,
        ecn,
        cc,
        seed: s.seed,
        // a 64-port 400G switch of the Spectrum-4/Tomahawk-5 class has ~160 MB; give the
        // model a conservative share for the RDMA pool
        buffer_bytes: 64 << 20,
        lossy_rdma_switches: lossy,
        // Store-and-forward Ethernet ASICs of the 25.6–51.2 Tb/s class quote about
        // 600 ns port to port under load-free conditions, against ~130 ns for an
        // InfiniBand NDR switch (IbConfig's default) [unverified: vendor datasheets].
        switch_latency: sim::Time(600_000),
        ..RoceConfig::default()
    };
    Ok(cfg)
}

/// RoCEv2 on the Ethernet build of the cluster: L3 + ECMP bring-up, the variant's
/// PFC/ECN/DCQCN settings, go-back-N NICs.
#[expect(clippy::too_many_arguments, reason = "a variant has this many settings")]
fn run_roce(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    pfc: bool,
    dcqcn: Option<sim::roce::dcqcn::Profile>,
    ecn: bool,
    lossy_hops: &[String],
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<VariantResult, CompareError> {
    let cfg = roce_config(s, v, f, pfc, dcqcn, ecn, lossy_hops)?;
    let bring_up = format!(
        "L3: one subnet per leaf, ECMP over shortest paths (5-tuple hash, per-QP UDP source port); PFC {}, ECN {}, DCQCN {}{}",
        if pfc { "on priority 3" } else { "off" },
        if ecn { "on" } else { "off" },
        dcqcn.map_or("off", |p| p.name()),
        if lossy_hops.is_empty() {
            String::new()
        } else {
            format!("; RDMA DSCP mapped to a lossy class on {}", lossy_hops.join(", "))
        }
    );
    run_roce_cfg(s, v, f, cfg, bring_up, Vec::new(), done, total, progress)
}

/// Run the workload on the RoCE world with `cfg`.
#[expect(clippy::too_many_arguments, reason = "the loop threads progress and results through")]
fn run_roce_cfg(
    s: &Scenario,
    v: &Variant,
    f: &Fabric,
    cfg: sim::roce::net::RoceConfig,
    bring_up: String,
    findings: Vec<String>,
    done: &mut u64,
    total: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<VariantResult, CompareError> {
    use sim::roce::net::RoceSim;
    let err = |source: RunError| CompareError::Run {
        variant: v.id.clone(),
        source,
    };
    let nics = NicMap::from_fabric(f).map_err(err)?;
    let nvl = nvlink(s);
    let switches: Vec<NodeId> = f.nodes_of(NodeKind::Switch).collect();
    let load = s.workload.background_tcp_load;
    let background = load > 0.0;
    let tcp_flows = if background {
        background_tcp_flows(&nics, load, s.cluster.nic_gbps)
    } else {
        Vec::new()
    };
    let tcp_cfg = sim::roce::tcp::TcpConfig {
        cc: match s.workload.background_tcp_cc {
            // DCTCP's g = 1/16 (RFC 8257 §4.2)
            crate::scenario::TcpCc::Dctcp => sim::roce::tcp::TcpCc::Dctcp { g: 1.0 / 16.0 },
            crate::scenario::TcpCc::Newreno => sim::roce::tcp::TcpCc::NewReno,
        },
        ..sim::roce::tcp::TcpConfig::default()
    };
    let mut world = |job: &Job<'_>, with_tcp: bool| -> Result<(JobOut, WorldStats), RunError> {
        let topo = |e: sim::roce::net::RoceError| RunError::Topology(e.to_string());
        let mut sim = RoceSim::new(f, cfg.clone(), &[]).map_err(topo)?;
        let with_tcp = with_tcp && !tcp_flows.is_empty();
        if with_tcp {
            sim.set_tcp_config(tcp_cfg.clone()).map_err(topo)?;
            for t in &tcp_flows {
                sim.add_tcp_flow(*t).map_err(topo)?;
            }
        }
        let mut net = RoceNet::new(&mut sim);
        let out = run_job(&mut net, &nics, job, nvl)?;
        let flows: Vec<usize> = net.qp_ids().collect();
        let retrans: u64 = flows.iter().map(|&k| sim.flow_counters(k).retransmitted).sum();
        let mut pause_frames = 0;
        let mut pause_ps = 0u64;
        for &n in switches
            .iter()
            .chain(f.nodes_of(NodeKind::Ca).collect::<Vec<_>>().iter())
        {
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
        // TCP's own drops are reported with TCP; the variant's drop counters stay RDMA's.
        let tcp_drops = sim.tcp().drops;
        let tcp = with_tcp.then(|| {
            let t = sim.tcp().totals(sim.now());
            TcpStats {
                flows: sim.tcp().len() as u32,
                delivered_bytes: t.delivered_bytes,
                sim_ps: sim.now().0,
                drops: tcp_drops,
                retransmits: t.retransmits,
                fast_retransmits: t.fast_retransmits,
                timeouts: t.timeouts,
                ecn_reductions: t.ecn_reductions,
            }
        });
        let w = WorldStats {
            delivered: sim.ledger.delivered,
            drops: sim.ledger.total_dropped() - tcp_drops.iter().sum::<u64>(),
            retransmissions: retrans,
            pause_frames,
            pause_us: pause_ps as f64 / 1e6,
            ecn_marks: sim.ecn_marks,
            cnps: sim.cnps_sent,
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
            series: if matches!(job, Job::Messages(_)) {
                vec![pause_series(&sim.pfc)]
            } else {
                Vec::new()
            },
            tcp,
        };
        if !sim.ledger_balances() {
            return Err(RunError::Ledger(format!(
                "RoCE world: {:?}, {} in flight",
                sim.ledger,
                sim.in_flight()
            )));
        }
        Ok((out, w))
    };
    run_workload(
        s,
        v,
        FabricKind::Rocev2,
        bring_up,
        findings,
        &nics,
        done,
        total,
        progress,
        &mut world,
        background,
    )
}

/// The background TCP connections: NIC (server i, rail r) sends to (server
/// i + S/2, rail r + 1), so every connection leaves its rail and crosses a spine,
/// sharing leaf uplinks and the receiving NIC's port with the collective.
fn background_tcp_flows(nics: &NicMap, load: f64, nic_gbps: u32) -> Vec<sim::roce::tcp::TcpFlowSpec> {
    let servers = nics.nic.len();
    let rate_bps = (load * f64::from(nic_gbps) * 1e9) as u64;
    let mut out = Vec::new();
    for (i, row) in nics.nic.iter().enumerate() {
        let rails = row.len();
        for (r, &src) in row.iter().enumerate() {
            let dst = nics.nic[(i + servers / 2) % servers][(r + 1) % rails];
            out.push(sim::roce::tcp::TcpFlowSpec {
                src,
                dst,
                rate_bps,
                start: sim::Time::ZERO,
                stop: sim::Time::NEVER,
                on_off: None,
                // Linux's first ephemeral port upward, to iperf3's port.
                sport: 32768 + out.len() as u16,
                dport: 5201,
            });
        }
    }
    out
}

fn val_findings(v: &sm::Validation, f: &Fabric) -> Vec<String> {
    let mut out = Vec::new();
    let r = &v.routes;
    if r.all_reachable() {
        out.push(format!(
            "ok: all {} CA-to-CA pairs reach their destination through the programmed LFTs (max {} hops)",
            r.pairs, r.max_hops
        ));
    } else {
        out.push(format!(
            "error: {} of {} CA-to-CA pairs are unreachable",
            r.unreachable, r.pairs
        ));
    }
    if r.non_minimal > 0 {
        out.push(format!(
            "warning: {} routes are longer than the shortest path",
            r.non_minimal
        ));
    }
    match &v.credit_loops.cycle {
        None => out.push(format!("ok: no credit loop over {} VL(s)", v.credit_loops.vls_used)),
        Some(c) => {
            let path: Vec<String> = c
                .iter()
                .map(|ch| format!("{}[{}] VL{}", f.node(ch.node).name, ch.port, ch.vl))
                .collect();
            out.push(format!("error: credit loop {}", path.join(" -> ")));
        }
    }
    out.push(format!(
        "info: busiest switch-to-switch port carries {} routes",
        v.loads.max_routes_isl
    ));
    out
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
    Ok((0..senders as usize)
        .map(|k| (nics.nic[1 + k % (servers - 1)][k % rails], dst, bytes))
        .collect())
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
    if x.fract() == 0.0 {
        format!("{x:.0} {}", units[i])
    } else {
        format!("{x:.1} {}", units[i])
    }
}
