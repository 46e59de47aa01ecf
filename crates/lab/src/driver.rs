//! The one driver: every fabric variant, InfiniBand, IPoIB or RoCEv2, runs the
//! scenario's workload through [`Driver::run`].
//!
//! A variant is brought up by `compare` (the SM's tables for InfiniBand, the
//! Ethernet settings for RoCE) into a [`World`]: something that builds a fresh
//! network for each job (a collective at one size, or the incast), runs the job on
//! it through the [`Network`] trait (post, completions, counters) and reports what
//! it counted. The driver owns everything that is the same on every fabric: the
//! order of the jobs, progress, NCCL's bandwidth figures, the latency probes,
//! findings from drops on lossless classes, and the before/after run without
//! background TCP.

use std::time::Instant;

use fabric::{Fabric, NodeId, NodeKind};
use sim::{EngineConfig, IbConfig, Sim};

use crate::advisor::FabricKind;
use crate::collective::{Collective, CollectiveSpec, HopCost, nccl_bandwidth};
use crate::compare::{CompareError, Progress, human_bytes};
use crate::results::{
    CollectiveResult, Counters, IncastResult, Latency, SimEffort, SizeRow, TcpBackground, TimeSeries, VariantResult,
};
use crate::runner::{
    IbNet, IpoibNet, NetCounters, Network, NicDelay, NicMap, ProbeSpec, RoceNet, RunError, TopologyError, run_messages,
    run_schedule,
};
use crate::scenario::{Scenario, Variant};

/// What one simulated run (a collective at one size, or the incast) counted.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorldStats {
    /// The network's own counters.
    pub(crate) net: NetCounters,
    /// Time series recorded during the run (the incast's).
    pub(crate) series: Vec<TimeSeries>,
    /// Background TCP's counters, when it ran.
    pub(crate) tcp: Option<TcpStats>,
    /// Why a flow-level world ran this job at packet level instead.
    pub(crate) handed_over: Option<crate::results::HandedOver>,
    /// How the SHARP all-reduce ran (algorithm, trees), for the findings.
    pub(crate) sharp: Option<String>,
}

/// What the background TCP of one run did.
#[derive(Clone, Debug, Default)]
pub(crate) struct TcpStats {
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
/// What a world runs: a collective (with probes) or a set of messages.
pub(crate) enum Job<'a> {
    Collective(CollectiveSpec, Option<ProbeSpec>),
    Messages(&'a [(NodeId, NodeId, u64)]),
}

/// The outcome of one job.
pub(crate) enum JobOut {
    Schedule(crate::runner::ScheduleRun),
    Messages(u64),
}

/// A fabric variant brought up and ready to run jobs.
pub(crate) trait World {
    /// Build a fresh network, run `job` on it (with the scenario's background TCP
    /// when `background` is set and the world carries it) and count the run.
    fn run(&mut self, job: &Job<'_>, background: bool) -> Result<(JobOut, WorldStats), RunError>;
    /// Where each (server, rail) NIC sits in this world's fabric.
    fn nics(&self) -> &NicMap;
    /// Whether the world runs background TCP beside the workload.
    fn carries_background(&self) -> bool {
        false
    }
}

/// A variant as `compare` brought it up: what the report says about it and the
/// world its jobs run in.
pub(crate) struct Prepared<'a> {
    pub kind: FabricKind,
    /// The bring-up, in words (engine, LIDs, ECMP, PFC/ECN/DCQCN settings).
    pub bring_up: String,
    /// Findings from the bring-up (validation, the user's lint).
    pub findings: Vec<String>,
    pub world: Box<dyn World + 'a>,
    /// The engine the world runs at and why (`None`: packet level, the default).
    pub engine: Option<crate::results::EngineUsed>,
}

/// Run `job` on `net` and count it.
pub(crate) fn run_on(
    net: &mut dyn Network,
    nics: &NicMap,
    job: &Job<'_>,
    nvl: HopCost,
) -> Result<(JobOut, NetCounters), RunError> {
    let out = match job {
        Job::Collective(spec, probe) => {
            let sched = spec.schedule().map_err(RunError::Schedule)?;
            JobOut::Schedule(run_schedule(net, nics, &sched, nvl, *probe)?)
        }
        Job::Messages(m) => JobOut::Messages(run_messages(net, m)?),
    };
    Ok((out, net.counters()?))
}

/// InfiniBand routed by the SM, carrying RC SENDs (verbs) or TCP over IPoIB.
pub(crate) struct IbWorld<'a> {
    pub fabric: &'a Fabric,
    pub tables: sm::RoutingTables,
    pub nics: NicMap,
    pub seed: u64,
    pub nvl: HopCost,
    /// TCP over IPoIB with these kernel costs instead of verbs.
    pub ipoib: Option<sim::roce::ipoib::IpoibConfig>,
    /// The InfiniBand model's settings (the default, or with calibrated HCA
    /// latencies).
    pub cfg: IbConfig,
}

impl World for IbWorld<'_> {
    fn run(&mut self, job: &Job<'_>, _background: bool) -> Result<(JobOut, WorldStats), RunError> {
        // the verbs incast samples the switch buffers for its chart
        let sampled = matches!(job, Job::Messages(_)) && self.ipoib.is_none();
        let mut sim = Sim::new(
            self.fabric,
            &self.tables,
            self.cfg.clone(),
            EngineConfig {
                seed: self.seed,
                sample_interval_ps: if sampled { SAMPLE_PS } else { 0 },
                ..EngineConfig::default()
            },
        )?;
        let (out, net) = match self.ipoib {
            None => run_on(&mut IbNet::new(&mut sim), &self.nics, job, self.nvl)?,
            Some(cfg) => run_on(&mut IpoibNet::new(&mut sim, cfg), &self.nics, job, self.nvl)?,
        };
        // InfiniBand has no PFC: its pause series is flat, which is the point
        let series = if sampled {
            vec![
                ib_buffer_series(&sim, self.fabric),
                TimeSeries {
                    name: PAUSE_SERIES.into(),
                    unit: "ports paused".into(),
                    points: vec![(0.0, 0.0), (sim.now().0 as f64 / 1e6, 0.0)],
                },
            ]
        } else {
            Vec::new()
        };
        Ok((
            out,
            WorldStats {
                net,
                series,
                tcp: None,
                handed_over: None,
                sharp: None,
            },
        ))
    }

    fn nics(&self) -> &NicMap {
        &self.nics
    }
}

/// RoCEv2 on the Ethernet build of the cluster, with background TCP on the lossy
/// class when the scenario asks for it.
pub(crate) struct RoceWorld<'a> {
    pub fabric: &'a Fabric,
    pub cfg: sim::roce::net::RoceConfig,
    pub nics: NicMap,
    pub nvl: HopCost,
    /// One TCP connection per NIC (empty: no background TCP).
    pub tcp_flows: Vec<sim::roce::tcp::TcpFlowSpec>,
    pub tcp_cfg: sim::roce::tcp::TcpConfig,
    /// The NICs' latencies (a calibration's or the published NIC's; `None`: none).
    pub nic_latency: Option<crate::results::NicLatency>,
}

impl World for RoceWorld<'_> {
    fn run(&mut self, job: &Job<'_>, background: bool) -> Result<(JobOut, WorldStats), RunError> {
        let mut sim = sim::roce::net::RoceSim::new(self.fabric, self.cfg.clone(), &[])?;
        let with_tcp = background && !self.tcp_flows.is_empty();
        if with_tcp {
            sim.set_tcp_config(self.tcp_cfg.clone())?;
            for t in &self.tcp_flows {
                sim.add_tcp_flow(*t)?;
            }
        }
        let mut roce = RoceNet::new(&mut sim, self.fabric);
        let (out, net) = match self.nic_latency {
            None => run_on(&mut roce, &self.nics, job, self.nvl)?,
            Some(l) => run_on(
                &mut NicDelay::new(&mut roce, l.tx_ps, l.rx_ps),
                &self.nics,
                job,
                self.nvl,
            )?,
        };
        let tcp = with_tcp.then(|| {
            let t = sim.tcp().totals(sim.now());
            TcpStats {
                flows: sim.tcp().len() as u32,
                delivered_bytes: t.delivered_bytes,
                sim_ps: sim.now().0,
                drops: sim.tcp().drops,
                retransmits: t.retransmits,
                fast_retransmits: t.fast_retransmits,
                timeouts: t.timeouts,
                ecn_reductions: t.ecn_reductions,
            }
        });
        let series = if matches!(job, Job::Messages(_)) {
            vec![pause_series(&sim.pfc)]
        } else {
            Vec::new()
        };
        Ok((
            out,
            WorldStats {
                net,
                series,
                tcp,
                handed_over: None,
                sharp: None,
            },
        ))
    }

    fn nics(&self) -> &NicMap {
        &self.nics
    }

    fn carries_background(&self) -> bool {
        !self.tcp_flows.is_empty()
    }
}

/// Runs variants: the scenario, and the progress of the whole comparison.
pub(crate) struct Driver<'s, 'p> {
    pub s: &'s Scenario,
    /// Steps done and in all (a step: one collective at one size, or the incast).
    pub done: u64,
    pub total: u64,
    pub progress: &'p mut dyn FnMut(Progress),
}

impl Driver<'_, '_> {
    /// Run every collective at every size and the incast, each on a fresh network
    /// of the variant's world, and gather the variant's results.
    pub(crate) fn run(&mut self, v: &Variant, p: Prepared<'_>) -> Result<VariantResult, CompareError> {
        let Prepared {
            kind,
            bring_up,
            mut findings,
            mut world,
            engine,
        } = p;
        let world: &mut dyn World = &mut *world;
        let background = world.carries_background();
        let (s, total) = (self.s, self.total);
        let done = &mut self.done;
        let progress = &mut *self.progress;
        let err = |source: RunError| CompareError::Run {
            variant: v.id.clone(),
            source,
        };
        let mut tcp_total: Option<TcpStats> = None;
        let mut handed_over: Vec<crate::results::HandedOver> = Vec::new();
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
            let w = &w.net;
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
            counters.storms += w.storms;
            effort.events += w.events;
            effort.packet_hops += w.hops;
            effort.simulated_us += w.sim_us;
            effort.wall_ms += wall.elapsed().as_secs_f64() * 1e3;
        };
        for &op in &s.workload.collectives {
            // in-network reduction needs InfiniBand switches and verbs (NCCL's
            // CollNet plugin): the other variants say why they skip it
            if op == Collective::AllReduceSharp && kind != FabricKind::Infiniband {
                findings.push(format!(
                    "note: {} not run: {}",
                    op.id(),
                    match kind {
                        FabricKind::Ipoib => "SHARP serves NCCL's verbs traffic (the CollNet plugin), not TCP over IPoIB",
                        _ => "Ethernet switches have no in-network reduction (SHARP is an InfiniBand switch feature, Quantum HDR or newer)",
                    }
                ));
                *done += s.workload.sizes.len() as u64;
                continue;
            }
            let mut rows = Vec::new();
            for &size in &s.workload.sizes {
                progress(Progress {
                    done: *done,
                    total,
                    what: format!("{}: {} {}", v.label, op.name(), human_bytes(size)),
                });
                let probe_run = op == Collective::AllReduceRing && size == largest;
                let spec = CollectiveSpec::new(op, s.cluster.servers, g, size).map_err(|e| CompareError::Variant {
                    variant: v.id.clone(),
                    message: e.to_string(),
                })?;
                let probe = probe_run.then_some(ProbeSpec {
                    bytes: s.workload.probe.bytes,
                    interval_ps: s.workload.probe.interval_us * 1_000_000,
                });
                let wall = Instant::now();
                let (out, w) = match world.run(&Job::Collective(spec, probe), background) {
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
                handed_over.extend(w.handed_over.clone());
                if let Some(n) = &w.sharp
                    && !findings.contains(n)
                {
                    findings.push(n.clone());
                }
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
                } else if op == Collective::AllReduceSharp {
                    // nccl-tests' busbw per NIC, comparable with a ring's: the
                    // NIC itself carries only algbw ÷ NICs each way
                    busbw / f64::from(g)
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
                let msgs = incast_messages(world.nics(), i.senders, i.bytes).map_err(err)?;
                let wall = Instant::now();
                *done += 1;
                match world.run(&Job::Messages(&msgs), false) {
                    Ok((JobOut::Messages(t), w)) => {
                        add(&w, wall, &mut counters, &mut effort);
                        handed_over.extend(w.handed_over.clone());
                        timeseries.extend(w.series.iter().cloned());
                        Some(IncastResult {
                            senders: i.senders,
                            bytes_each: i.bytes,
                            completion_us: t as f64 / 1e6,
                            goodput_gbs: (i.bytes * u64::from(i.senders)) as f64 / (t as f64 * 1e-12) / 1e9,
                            drops: w.net.drops,
                            retransmissions: w.net.retransmissions,
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
            role: crate::advisor::Role::of(&v.fabric),
            busbw_bound_gbs: 0.0,
            user_config: false,
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
            engine: engine.map(|mut e| {
                e.handed_over = handed_over;
                e
            }),
        })
    }
}

/// The background TCP's summary, with the headline collective (ring all-reduce
/// at the largest size, with its probes) run once more without TCP for the
/// before/after.
fn tcp_background(
    s: &Scenario,
    v: &Variant,
    t: &TcpStats,
    world: &mut dyn World,
    effort: &mut SimEffort,
    err: &dyn Fn(RunError) -> CompareError,
) -> Result<TcpBackground, CompareError> {
    let g = s.cluster.gpus_per_server;
    let largest = *s.workload.sizes.last().unwrap_or(&0);
    let (mut quiet_busbw_gbs, mut lat) = (None, None);
    if s.workload.collectives.contains(&Collective::AllReduceRing) {
        let spec = CollectiveSpec::new(Collective::AllReduceRing, s.cluster.servers, g, largest).map_err(|e| {
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
        match world.run(&Job::Collective(spec, Some(probe)), false) {
            Ok((JobOut::Schedule(run), w)) => {
                effort.events += w.net.events;
                effort.packet_hops += w.net.hops;
                effort.simulated_us += w.net.sim_us;
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
fn pause_series(records: &[sim::roce::net::PfcRecord]) -> TimeSeries {
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

/// The N:1 incast's messages: sender k is NIC (server 1 + k mod (S−1), rail k mod R),
/// the receiver NIC (0, 0); every sender posts `bytes` at time 0.
fn incast_messages(nics: &NicMap, senders: u32, bytes: u64) -> Result<Vec<(NodeId, NodeId, u64)>, RunError> {
    let servers = nics.nic.len();
    let rails = nics.nic[0].len();
    if servers < 2 {
        return Err(TopologyError::IncastNeedsTwoServers { servers }.into());
    }
    let dst = nics.nic[0][0];
    Ok((0..senders as usize)
        .map(|k| (nics.nic[1 + k % (servers - 1)][k % rails], dst, bytes))
        .collect())
}
