//! The comparison: one scenario, every fabric variant, the same workload and seed.

use crate::results::CompareResults;

mod evidence;
pub use evidence::evidence;
pub mod training;

use fabric::{Fabric, NodeId, NodeKind};
use sim::IbConfig;

use crate::advisor::FabricKind;
use crate::cluster;
use crate::collective::HopCost;
use crate::driver::{Driver, IbWorld, Prepared, RoceWorld, World};
use crate::results::{Counters, Endpoints, NicLatency, SimEffort, VariantResult};
use crate::runner::{NicMap, RunError};
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
    #[error("the spine link failure study")]
    Failure(#[source] crate::failure::FailureError),
    #[error("variant {variant}")]
    Run {
        variant: String,
        #[source]
        source: RunError,
    },
    #[error("variant {variant}: {message}")]
    Variant { variant: String, message: String },
}

impl CompareError {
    /// A fault of the model (exit code 3), not of the scenario.
    pub fn is_internal(&self) -> bool {
        match self {
            CompareError::Run { source, .. } => source.is_internal(),
            CompareError::Failure(crate::failure::FailureError::Run(e)) => e.is_internal(),
            CompareError::Build(_) | CompareError::Sm(_) | CompareError::Variant { .. } | CompareError::Failure(_) => {
                false
            }
        }
    }
}

/// Payload bytes per wire byte of an RC SEND packet at `mtu` over native InfiniBand:
/// LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes of headers per packet (IBA vol. 1
/// §5–7). This sets the link-rate bound on busbw.
pub fn ib_payload_efficiency(mtu: u32) -> f64 {
    f64::from(mtu) / f64::from(mtu + 26)
}

/// Payload bytes per wire byte of a RoCEv2 packet at `mtu`: the 62 bytes of
/// headers the RoCE simulator charges per frame (`sim::roce::net::ROCEV2_HEADERS`:
/// Ethernet, IPv4, UDP, BTH, ICRC, FCS).
pub fn roce_payload_efficiency(mtu: u32) -> f64 {
    f64::from(mtu) / f64::from(mtu + sim::roce::net::ROCEV2_HEADERS)
}

/// The bound on a variant's ring all-reduce busbw per NIC, GB/s: the NIC rate
/// times the smaller of its fabric's payload share at a 4096-byte MTU and the
/// NIC's payload ceiling ([`crate::endpoints`]).
pub fn busbw_bound(kind: FabricKind, nic_gbps: u32) -> f64 {
    let (wire, nic) = match kind {
        FabricKind::Infiniband | FabricKind::Ipoib => (ib_payload_efficiency(4096), crate::endpoints::IB_HCA),
        FabricKind::Rocev2 | FabricKind::Rocev1 => (roce_payload_efficiency(4096), crate::endpoints::ROCE_NIC),
    };
    f64::from(nic_gbps) / 8.0 * wire.min(f64::from(nic.payload_ppm) / 1e6)
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
///
/// With `repeats` > 1 the comparison runs again at seeds `seed + 1`, … (on other
/// threads while the first runs here), and the results carry each variant's
/// headline figures over every seed, which the advice then reads.
pub fn run_with(
    s: &Scenario,
    user: Option<&UserRoce>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareResults, CompareError> {
    run_calibrated(s, user, None, progress)
}

/// [`run_with`], with NIC latencies from a calibration file where the
/// simulators take them (see [`Endpoints`]): InfiniBand's on the verbs variants,
/// RoCE's on every RoCEv2 variant. The results carry the calibration and the
/// variants it reached; each of those says so in its bring-up.
pub fn run_calibrated(
    s: &Scenario,
    user: Option<&UserRoce>,
    endpoints: Option<&Endpoints>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareResults, CompareError> {
    let mut r = run_seeds(s, user, endpoints, progress)?;
    r.failure = Some(failure_outcome(s)?);
    let kinds: Vec<(String, FabricKind)> = r
        .variants
        .iter()
        .filter(|v| v.refused.is_none())
        .map(|v| (v.id.clone(), v.kind))
        .collect();
    r.recovery = crate::failure::compare_recovery(s, &kinds).map_err(CompareError::Failure)?;
    Ok(r)
}

/// Whether a spine link failure touches the ring all-reduce at the scenario's
/// largest size: some link between switches carries it under the InfiniBand
/// variant's routes (the study itself is `rdmalab failure`, whose InfiniBand
/// recovery is timed on this machine).
fn failure_outcome(s: &Scenario) -> Result<crate::results::FailureOutcome, CompareError> {
    use crate::results::FailureOutcome;
    let Some(&size) = s.workload.sizes.last() else {
        return Ok(FailureOutcome::NotApplicable("no collective sizes".into()));
    };
    if !s
        .workload
        .collectives
        .contains(&crate::collective::Collective::AllReduceRing)
    {
        return Ok(FailureOutcome::NotApplicable(
            "the workload has no ring all-reduce".into(),
        ));
    }
    if crate::failure::spine_links_used(s, size).map_err(CompareError::Failure)? == 0 {
        return Ok(FailureOutcome::NotApplicable(
            "the ring all-reduce never crosses a link between switches here (each rail stays on its leaf), so a spine link failure does not touch it".into(),
        ));
    }
    Ok(FailureOutcome::Study(format!(
        "the ring all-reduce crosses links between switches: `rdmalab failure {}` cuts the busiest one on every variant (docs/VALIDATION.md §13)",
        if s.name == crate::scenario::Scenario::default_training().name {
            ""
        } else {
            "SCENARIO.toml"
        }
    )))
}

/// [`run_with`] without the failure study.
fn run_seeds(
    s: &Scenario,
    user: Option<&UserRoce>,
    endpoints: Option<&Endpoints>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareResults, CompareError> {
    if s.repeats <= 1 {
        return run_one(s, user, endpoints, progress);
    }
    let (first, others) = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..u64::from(s.repeats))
            .map(|k| {
                let mut t = s.clone();
                t.seed = s.seed + k;
                t.repeats = 1;
                scope.spawn(move || run_one(&t, user, endpoints, &mut |_| {}))
            })
            .collect();
        let first = run_one(s, user, endpoints, progress);
        let others: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (first, others)
    });
    let mut results = first?;
    let mut runs = vec![results.clone()];
    for o in others {
        runs.push(o?);
    }
    results.seeds = runs.iter().map(|r| r.seed).collect();
    results.spread = results
        .variants
        .iter()
        .enumerate()
        .filter(|(_, v)| v.refused.is_none())
        .map(|(i, v)| crate::results::VariantSpread {
            id: v.id.clone(),
            figures: v
                .headline()
                .into_iter()
                .map(|(name, _)| {
                    let values = runs
                        .iter()
                        .filter_map(|r| r.variants[i].headline().into_iter().find(|(n, _)| *n == name))
                        .map(|(_, x)| x)
                        .collect();
                    crate::results::Spread::of(name, values)
                })
                .collect(),
        })
        .collect();
    results.training_spread = training::spread(&runs);
    let ib_fabric = cluster::build(&s.cluster, Tech::InfiniBand)?;
    results.advice = crate::advisor::advise(&s.advisor, &evidence(&results), &ib_fabric, &s.prices);
    Ok(results)
}

/// One run of the comparison at `s.seed`.
fn run_one(
    s: &Scenario,
    user: Option<&UserRoce>,
    endpoints: Option<&Endpoints>,
    progress: &mut dyn FnMut(Progress),
) -> Result<CompareResults, CompareError> {
    // the calibration file's NIC latencies where it has them, else the
    // published NICs' (`crate::endpoints`)
    let ib_lat = Nic::of(
        endpoints.and_then(|e| e.infiniband),
        endpoints.and_then(|e| e.infiniband_switch_ps),
        &crate::endpoints::IB_HCA,
    );
    let roce_lat = Nic::of(
        endpoints.and_then(|e| e.rocev2),
        endpoints.and_then(|e| e.rocev2_switch_ps),
        &crate::endpoints::ROCE_NIC,
    );
    let mut applied = Vec::new();
    let total = steps(s) + if user.is_some() { steps_of(s) } else { 0 };
    let mut driver = Driver {
        s,
        done: 0,
        total,
        progress,
    };
    let ib_fabric = cluster::build(&s.cluster, Tech::InfiniBand)?;
    let eth_fabric = cluster::build(&s.cluster, Tech::Ethernet)?;
    let bound = busbw_bound(FabricKind::Infiniband, s.cluster.nic_gbps);
    let mut variants = Vec::new();
    for v in &s.variants {
        (driver.progress)(Progress {
            done: driver.done,
            total,
            what: v.label.clone(),
        });
        let prepared = match &v.fabric {
            VariantFabric::Infiniband { engines } => {
                if ib_lat.calibrated || ib_lat.switch_ps.is_some() {
                    applied.push(v.id.clone());
                }
                prepare_ib(s, v, &ib_fabric, engines, ib_lat)?
            }
            VariantFabric::Rocev1 => {
                driver.done += steps_of(s);
                variants.push(refused(v, FabricKind::Rocev1, rocev1_refusal(&eth_fabric)));
                continue;
            }
            VariantFabric::Rocev2 {
                pfc,
                dcqcn,
                ecn,
                lossy_hops,
                ..
            } => {
                let cfg = roce_config(s, v, &eth_fabric, *pfc, *dcqcn, *ecn, lossy_hops)?;
                let bring_up = roce_bring_up(*pfc, *dcqcn, *ecn, lossy_hops);
                if roce_lat.calibrated || roce_lat.switch_ps.is_some() {
                    applied.push(v.id.clone());
                }
                prepare_roce(s, v, &eth_fabric, cfg, bring_up, Vec::new(), roce_lat)?
            }
            VariantFabric::Ipoib => prepare_ipoib(s, v, &ib_fabric)?,
        };
        variants.push(driver.run(v, prepared)?);
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
                retransmit_timeout_us: None,
            },
        };
        (driver.progress)(Progress {
            done: driver.done,
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
        // as written, the configuration runs lossy: the misconfigured outcome
        let lossy = !cfg.pfc.enabled || !cfg.switch.lossy_rdma_switches.is_empty();
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
        if roce_lat.calibrated || roce_lat.switch_ps.is_some() {
            applied.push(v.id.clone());
        }
        let prepared = prepare_roce(s, &v, &eth_fabric, cfg, bring_up, findings, roce_lat)?;
        let mut r = driver.run(&v, prepared)?;
        r.user_config = true;
        if lossy {
            r.role = crate::advisor::Role::Misconfigured;
        }
        variants.push(r);
    }
    (driver.progress)(Progress {
        done: total,
        total,
        what: "advising".into(),
    });
    for v in &mut variants {
        v.busbw_bound_gbs = busbw_bound(v.kind, s.cluster.nic_gbps);
    }
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
        seeds: Vec::new(),
        spread: Vec::new(),
        failure: None,
        recovery: None,
        calibration: endpoints.map(|e| Endpoints {
            applied_to: applied,
            ..e.clone()
        }),
        nics: vec![
            crate::results::NicUsed::of("InfiniBand", &crate::endpoints::IB_HCA),
            crate::results::NicUsed::of("RoCEv2", &crate::endpoints::ROCE_NIC),
        ],
        training: training::run(s, &ib_fabric, &eth_fabric, ib_lat, roce_lat)?,
        training_spread: Vec::new(),
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
        role: crate::advisor::Role::of(&v.fabric),
        busbw_bound_gbs: 0.0,
        user_config: false,
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
        engine: None,
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

fn nvlink(s: &Scenario) -> HopCost {
    HopCost {
        bytes_per_s: s.gpu.nvlink_gbytes * 1e9,
        latency_ps: s.gpu.nvlink_latency_ns * 1000,
    }
}

/// InfiniBand brought up by the SM with `engines` (the first that succeeds).
fn prepare_ib<'a>(
    s: &Scenario,
    v: &Variant,
    f: &'a Fabric,
    engines: &[sm::routing::EngineKind],
    nic: Nic,
) -> Result<Prepared<'a>, CompareError> {
    let opts = sm::run::RunOptions {
        engines: engines.to_vec(),
        ..Default::default()
    };
    let cfg = ib_config(nic);
    let (tables, report) = sm::run::run(f, &opts)?;
    let (flow, engine) = engine_for(s, f, None);
    let mut findings = Vec::new();
    if let Some(val) = &report.validation {
        findings.extend(val_findings(val, f));
    }
    // Wall-clock phase timings stay out of the results so that the same seed gives
    // the same bytes; `rdmalab sm run` reports them.
    let bring_up = format!(
        "SM: {} LIDs, engine {}{}, {} VL(s){}",
        report.lids.ports,
        report.outcome.engine.name(),
        if report.outcome.fallbacks.is_empty() {
            String::new()
        } else {
            format!(" after {} fallback(s)", report.outcome.fallbacks.len())
        },
        report.vls_used,
        nic_note(nic)
    );
    Ok(Prepared {
        kind: FabricKind::Infiniband,
        bring_up,
        world: if flow {
            Box::new(crate::flow_world::FlowWorld {
                fabric: f,
                routing: crate::flow_world::FlowRouting::Ib(tables),
                wire: crate::flow_world::ib_wire(&cfg),
                nics: nic_map(v, f)?,
                nvl: nvlink(s),
                per_chunk: false,
                // credits: no end-to-end congestion control reacts to queues
                cc: None,
                handover: None,
                nvls: s.gpu.nvls,
            })
        } else {
            ib_world(s, v, f, tables, None, cfg)?
        },
        findings,
        engine,
    })
}

/// TCP over IPoIB (connected mode, 4 KiB IB MTU) on the InfiniBand fabric routed by
/// the SM with ftree/updn: the same wires and switches as the verbs variant, with
/// the kernel's CPU cost on both ends (`sim::roce::ipoib`).
fn prepare_ipoib<'a>(s: &Scenario, v: &Variant, f: &'a Fabric) -> Result<Prepared<'a>, CompareError> {
    let opts = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
        ..Default::default()
    };
    let (tables, report) = sm::run::run(f, &opts)?;
    let cfg = sim::roce::ipoib::IpoibConfig::default();
    let bring_up = format!(
        "SM: engine {}; IPoIB connected mode (IP MTU {}), TCP through the kernel: {:.3} ns/B to send, {:.3} ns/B to receive, {} ns per system call",
        report.outcome.engine.name(),
        cfg.ip_mtu(),
        cfg.send_ns_per_byte,
        cfg.recv_ns_per_byte,
        cfg.syscall_ns
    );
    Ok(Prepared {
        kind: FabricKind::Ipoib,
        bring_up,
        findings: Vec::new(),
        world: ib_world(s, v, f, tables, Some(cfg), IbConfig::default())?,
        engine: engine_for(
            s,
            f,
            Some("IPoIB's kernel costs (system calls, copies, interrupts)".into()),
        )
        .1,
    })
}

/// The InfiniBand world of a variant: the SM's `tables` on `f`, verbs or IPoIB.
fn ib_world<'a>(
    s: &Scenario,
    v: &Variant,
    f: &'a Fabric,
    tables: sm::RoutingTables,
    ipoib: Option<sim::roce::ipoib::IpoibConfig>,
    cfg: IbConfig,
) -> Result<Box<dyn World + 'a>, CompareError> {
    Ok(Box::new(IbWorld {
        fabric: f,
        tables,
        nics: nic_map(v, f)?,
        seed: s.seed,
        nvl: nvlink(s),
        ipoib,
        cfg,
    }))
}

/// A variant's NICs: their latencies (a calibration file's, else the published
/// model's) and payload ceiling.
#[derive(Clone, Copy, Debug)]
struct Nic {
    latency: NicLatency,
    payload_ppm: u32,
    /// The NIC latencies came from a calibration file.
    calibrated: bool,
    /// One switch's latency from a calibration file, ps (else the model's).
    switch_ps: Option<u64>,
}

impl Nic {
    fn of(calibrated: Option<NicLatency>, switch_ps: Option<u64>, model: &crate::endpoints::NicModel) -> Nic {
        Nic {
            latency: calibrated.unwrap_or(model.latency),
            payload_ppm: model.payload_ppm,
            calibrated: calibrated.is_some(),
            switch_ps,
        }
    }
}

/// The InfiniBand model's settings: the defaults, with the HCA's latencies and
/// payload ceiling.
fn ib_config(nic: Nic) -> IbConfig {
    IbConfig {
        hca_tx_latency_ps: nic.latency.tx_ps,
        hca_rx_latency_ps: nic.latency.rx_ps,
        hca_payload_ppm: nic.payload_ppm,
        switch_latency_ps: nic.switch_ps.unwrap_or(IbConfig::default().switch_latency_ps),
        ..IbConfig::default()
    }
}

/// What a variant's bring-up says of its NICs.
fn nic_note(nic: Nic) -> String {
    format!(
        "; NIC latency {}: send {:.1} ns, receive {:.1} ns; payload ceiling {:.1}% of line",
        if nic.calibrated {
            "from the calibration file"
        } else {
            "as published"
        },
        nic.latency.tx_ps as f64 / 1e3,
        nic.latency.rx_ps as f64 / 1e3,
        f64::from(nic.payload_ppm) / 1e4
    ) + &nic.switch_ps.map_or(String::new(), |ps| {
        format!("; switch latency from the calibration file: {:.1} ns", ps as f64 / 1e3)
    })
}

/// Where each NIC sits, or the variant's error.
fn nic_map(v: &Variant, f: &Fabric) -> Result<NicMap, CompareError> {
    NicMap::from_fabric(f).map_err(|source| CompareError::Run {
        variant: v.id.clone(),
        source,
    })
}

/// The RoCE world's settings of the default scenario's RoCEv2 variant with
/// these PFC and DCQCN settings, on `f` at `nic_gbps`, seeded by `seed`: what
/// `train` runs a RoCEv2 iteration with at packet level.
pub(crate) fn roce_variant_config(
    f: &Fabric,
    nic_gbps: u32,
    seed: u64,
    pfc: bool,
    dcqcn: bool,
) -> Result<sim::roce::net::RoceConfig, CompareError> {
    let mut s = Scenario::default_rail();
    s.cluster.nic_gbps = nic_gbps;
    s.seed = seed;
    let v = Variant {
        id: "train".into(),
        label: "train".into(),
        fabric: VariantFabric::Rocev2 {
            pfc,
            dcqcn: dcqcn.then_some(sim::roce::dcqcn::Profile::NvidiaCx),
            ecn: dcqcn,
            lossy_hops: Vec::new(),
            retransmit_timeout_us: None,
        },
    };
    roce_config(
        &s,
        &v,
        f,
        pfc,
        dcqcn.then_some(sim::roce::dcqcn::Profile::NvidiaCx),
        dcqcn,
        &[],
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
            crate::cluster::switch_named(f, h)
                .ok_or_else(|| bad(format!("lossy_hops names {h:?}, which is not a switch of this cluster")))
        })
        .collect::<Result<_, _>>()?;
    let cfg = RoceConfig {
        nic: sim::roce::net::NicConfig {
            // 4096-byte RoCE MTU, as RDMA NICs negotiate on 9000-byte Ethernet
            mtu: 4096,
            cc,
            ..Default::default()
        },
        switch: sim::roce::net::SwitchConfig {
            ecn,
            // a 64-port 400G switch of the Spectrum-4/Tomahawk-5 class has ~160 MB; give the
            // model a conservative share for the RDMA pool
            buffer_bytes: 64 << 20,
            lossy_rdma_switches: lossy,
            // Store-and-forward Ethernet ASICs of the 25.6–51.2 Tb/s class quote about
            // 600 ns port to port under load-free conditions, against ~130 ns for an
            // InfiniBand NDR switch (IbConfig's default) [unverified: vendor datasheets].
            switch_latency: sim::Time(600_000),
            ..Default::default()
        },
        pfc: sim::roce::net::PfcConfig {
            enabled: pfc,
            ..Default::default()
        },
        // the switches' ECMP hash seed follows the run's: repeats sample which
        // flows collide
        routing: sim::roce::net::RoutingConfig {
            hash: ethcp::HashConfig {
                seed: s.seed as u32,
                ..sim::roce::net::RoutingConfig::default().hash
            },
            ..Default::default()
        },
        seed: s.seed,
        ..RoceConfig::default()
    };
    let mut cfg = cfg;
    if let VariantFabric::Rocev2 {
        retransmit_timeout_us: Some(us),
        ..
    } = &v.fabric
    {
        cfg.nic.rto = sim::Time::us(*us);
    }
    Ok(cfg)
}

/// A scenario variant's RoCEv2 bring-up, in words.
fn roce_bring_up(pfc: bool, dcqcn: Option<sim::roce::dcqcn::Profile>, ecn: bool, lossy_hops: &[String]) -> String {
    format!(
        "L3: one subnet per leaf, ECMP over shortest paths (5-tuple hash, per-QP UDP source port); PFC {}, ECN {}, DCQCN {}{}",
        if pfc { "on priority 3" } else { "off" },
        if ecn { "on" } else { "off" },
        dcqcn.map_or("off", |p| p.name()),
        if lossy_hops.is_empty() {
            String::new()
        } else {
            format!("; RDMA DSCP mapped to a lossy class on {}", lossy_hops.join(", "))
        }
    )
}

/// RoCEv2 on the Ethernet build of the cluster with `cfg` (L3 + ECMP, the
/// variant's PFC/ECN/DCQCN settings, go-back-N NICs), with the scenario's
/// background TCP.
fn prepare_roce<'a>(
    s: &Scenario,
    v: &Variant,
    f: &'a Fabric,
    cfg: sim::roce::net::RoceConfig,
    bring_up: String,
    findings: Vec<String>,
    nic: Nic,
) -> Result<Prepared<'a>, CompareError> {
    let bring_up = bring_up + &nic_note(nic);
    let mut cfg = cfg;
    cfg.nic.payload_ppm = nic.payload_ppm;
    if let Some(ps) = nic.switch_ps {
        cfg.switch.switch_latency = sim::Time(ps);
    }
    let nics = nic_map(v, f)?;
    let load = s.workload.background_tcp_load;
    let tcp_flows = if load > 0.0 {
        background_tcp_flows(&nics, load, s.cluster.nic_gbps)
    } else {
        Vec::new()
    };
    let tcp_cfg = tcp_config(s);
    let (flow, engine) = engine_for(s, f, crate::flow_world::FlowWorld::refusal(&cfg, !tcp_flows.is_empty()));
    let world: Box<dyn World + 'a> = if flow {
        Box::new(crate::flow_world::FlowWorld {
            fabric: f,
            routing: crate::flow_world::FlowRouting::Eth {
                table: ethcp::EcmpTable::build(f, cfg.routing.ecmp_convergence.as_ps()),
                hash: cfg.routing.hash,
                rocev1: cfg.routing.rocev1.is_some(),
            },
            wire: flow::path::WireModel {
                endpoint_ps: nic.latency.tx_ps + nic.latency.rx_ps,
                ..crate::flow_world::roce_wire(&cfg)
            },
            nics: nics.clone(),
            nvl: nvlink(s),
            per_chunk: false,
            cc: match &cfg.nic.cc {
                sim::roce::net::CongestionControl::None => None,
                sim::roce::net::CongestionControl::Dcqcn(p) => Some(format!("DCQCN ({})", p.name)),
                sim::roce::net::CongestionControl::Dctcp(_) => Some("DCTCP".into()),
                sim::roce::net::CongestionControl::Hpcc(_) => Some("HPCC".into()),
            },
            handover: Some(Box::new(RoceWorld {
                fabric: f,
                cfg: cfg.clone(),
                nics,
                nvl: nvlink(s),
                tcp_flows: Vec::new(),
                tcp_cfg: tcp_cfg.clone(),
                nic_latency: Some(nic.latency),
            })),
            nvls: false,
        })
    } else {
        Box::new(RoceWorld {
            fabric: f,
            cfg,
            nics,
            nvl: nvlink(s),
            tcp_flows,
            tcp_cfg,
            nic_latency: Some(nic.latency),
        })
    };
    Ok(Prepared {
        kind: FabricKind::Rocev2,
        bring_up,
        findings,
        world,
        engine,
    })
}

/// Whether a variant on `f` runs at flow level, and the record of the choice:
/// the scenario's engine, `auto`'s rule on the NIC count, and what the flow
/// engine cannot model (`refusal`), which sends the variant to the packet level.
fn engine_for(s: &Scenario, f: &Fabric, refusal: Option<String>) -> (bool, Option<crate::results::EngineUsed>) {
    use crate::results::EngineUsed;
    use crate::scenario::{AUTO_PACKET_MAX_ENDPOINTS, Engine, EngineRan};
    let nics = f.count(NodeKind::Ca) as u32;
    let want = match s.engine {
        Engine::Packet => return (false, None),
        Engine::Flow => "the scenario asks for the flow engine".to_string(),
        Engine::Auto if nics <= AUTO_PACKET_MAX_ENDPOINTS => {
            return (
                false,
                Some(EngineUsed {
                    engine: EngineRan::Packet,
                    why: format!("auto: {nics} NICs, at most {AUTO_PACKET_MAX_ENDPOINTS} run packet by packet"),
                    handed_over: Vec::new(),
                }),
            );
        }
        Engine::Auto => format!("auto: {nics} NICs, more than {AUTO_PACKET_MAX_ENDPOINTS}"),
    };
    match refusal {
        Some(r) => (
            false,
            Some(EngineUsed {
                engine: EngineRan::Packet,
                why: format!("{want}, but it does not model {r}: run packet by packet"),
                handed_over: Vec::new(),
            }),
        ),
        None => (
            true,
            Some(EngineUsed {
                engine: EngineRan::Flow,
                why: format!(
                    "{want}; {}; latency probes are not run at flow level",
                    crate::flow_world::VALIDATED
                ),
                handed_over: Vec::new(),
            }),
        ),
    }
}

/// The background TCP connections' settings: the scenario's congestion control.
fn tcp_config(s: &Scenario) -> sim::roce::tcp::TcpConfig {
    sim::roce::tcp::TcpConfig {
        cc: match s.workload.background_tcp_cc {
            // DCTCP's g = 1/16 (RFC 8257 §4.2)
            crate::scenario::TcpCc::Dctcp => sim::roce::tcp::TcpCc::Dctcp { g: 1.0 / 16.0 },
            crate::scenario::TcpCc::Newreno => sim::roce::tcp::TcpCc::NewReno,
        },
        ..sim::roce::tcp::TcpConfig::default()
    }
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

mod perftest;
pub use perftest::{PerfFabric, PerfResult, perftest};
