//! The advisor: the InfiniBand-or-RoCE decision table with every row filled from
//! this run's measurements and the user's answers, a TCO for each fabric, and a
//! recommendation with its reasons.
//!
//! Rows follow the usual argument (mechanism, losslessness, stability, operations,
//! cost, isolation, scale, ecosystem); what the row says for *this* cluster comes from
//! the evidence, not from the argument.

use serde::{Deserialize, Serialize};

use crate::failure_cost::FailureModel;
use crate::tco::{OpsInputs, PriceTable, Tco, Tech};

/// How well the team knows each technology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Skills {
    /// Runs InfiniBand today.
    Infiniband,
    /// Strong Ethernet/IP team, no InfiniBand experience.
    Ethernet,
    /// Both.
    Both,
    /// Neither in depth.
    Neither,
}

/// How much Ethernet the organisation already runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estate {
    None,
    Some,
    Large,
}

/// Budget pressure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Budget {
    Tight,
    Normal,
    Ample,
}

/// The user's answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answers {
    pub skills: Skills,
    pub ethernet_estate: Estate,
    pub budget: Budget,
    /// Sites the training job must span (more than one needs routing between sites).
    pub sites: u32,
    /// The chance that the RoCEv2 fabric runs misconfigured (0–1); absent: assumed
    /// from the skills and estate answers ([`misconfig_risk`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misconfig_risk: Option<f64>,
}

impl Default for Answers {
    fn default() -> Self {
        Answers {
            skills: Skills::Ethernet,
            ethernet_estate: Estate::Some,
            budget: Budget::Normal,
            sites: 1,
            misconfig_risk: None,
        }
    }
}

/// What kind of fabric a variant ran on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FabricKind {
    Infiniband,
    Rocev2,
    Ipoib,
    Rocev1,
}

/// What a variant stands for in the decision, from its configuration, never its
/// id, label or place in the scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Built as its designers intend: InfiniBand, or RoCEv2 with the RDMA class
    /// lossless (PFC) on every hop.
    #[default]
    AsDesigned,
    /// RoCEv2 with a misconfiguration injected (PFC off, or the RDMA DSCP on a lossy
    /// class at some hop): what a configuration mistake costs. It enters the
    /// decision weighted by the misconfiguration risk, never on its own.
    Misconfigured,
}

impl Role {
    /// The role of a scenario variant's fabric.
    pub fn of(f: &crate::scenario::VariantFabric) -> Role {
        match f {
            crate::scenario::VariantFabric::Rocev2 { pfc, lossy_hops, .. } if !*pfc || !lossy_hops.is_empty() => {
                Role::Misconfigured
            }
            _ => Role::AsDesigned,
        }
    }
}

/// Measured evidence for one variant of the comparison.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: String,
    pub label: String,
    pub kind: Option<FabricKind>,
    /// What the variant stands for in the decision (from its configuration).
    #[serde(default)]
    pub role: Role,
    /// Built from the user's own linted RoCE configuration.
    #[serde(default)]
    pub user_config: bool,
    /// Set when the variant could not run at all (RoCEv1 across routers), with why.
    pub refused: Option<String>,
    /// Ring all-reduce busbw at the largest size, GB/s per NIC (the median over
    /// the seeds when the comparison repeated).
    pub busbw_gbs: Option<f64>,
    /// Its range over the seeds (min, max), when the comparison repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busbw_range: Option<(f64, f64)>,
    /// The probe p99's range over the seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_range: Option<(f64, f64)>,
    /// The link-rate bound for that busbw, GB/s per NIC.
    pub busbw_bound_gbs: f64,
    /// The all-reduce with SHARP in-network reduction at the largest size,
    /// nccl-tests' busbw per NIC (median over the seeds): set only for an
    /// InfiniBand variant whose scenario says the switches have SHARP
    /// (`cluster.sharp`) and that ran `all-reduce-sharp`. The bandwidth row then
    /// takes it for the InfiniBand side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharp_busbw_gbs: Option<f64>,
    /// Its range over the seeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharp_busbw_range: Option<(f64, f64)>,
    /// Small-message latency percentiles during the collective, microseconds.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    /// Standard deviation of the small-message latency, microseconds.
    pub jitter_us: Option<f64>,
    /// RDMA packets delivered, and dropped.
    #[serde(default)]
    pub delivered: u64,
    pub drops: u64,
    pub retransmissions: u64,
    pub pause_time_us: f64,
    pub ecn_marks: u64,
    pub cnps: u64,
    pub deadlocks: u64,
    pub storms: u64,
    /// Lint/diagnostic errors found on the variant's configuration.
    pub config_errors: u64,
    /// Background TCP run beside the collectives (converged variants only).
    #[serde(default)]
    pub tcp: Option<TcpEvidence>,
}

/// What background TCP did to a converged variant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpEvidence {
    /// Offered load, fraction of line rate per NIC.
    pub load: f64,
    /// The headline busbw and probe p99 without TCP (`busbw_gbs`/`p99_us` are with it).
    pub quiet_busbw_gbs: Option<f64>,
    pub quiet_p99_us: Option<f64>,
    /// TCP's own drops and retransmissions on its lossy class.
    pub drops: u64,
    pub retransmissions: u64,
}

/// Which side a row favours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Favours {
    Infiniband,
    Rocev2,
    Neither,
}

/// What a row's decision rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// This run's measurements.
    Measured,
    /// Inputs not yet cited or calibrated (named in the row).
    Unverified,
    /// The user's answers.
    Answers,
    /// Prices that each carry a dated public source (the price table's `sources`).
    Cited,
}

/// One row of the decision table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub aspect: String,
    pub infiniband: String,
    pub rocev2: String,
    /// The quantity the row compares, with its definition and unit.
    pub metric: String,
    /// That quantity on each side (`None`: not measured in this run).
    pub infiniband_value: Option<f64>,
    pub rocev2_value: Option<f64>,
    /// The rule that turns the two values into a winner.
    pub threshold: String,
    /// Where the threshold comes from.
    pub threshold_source: String,
    /// What the decision rests on.
    pub basis: Basis,
    /// What this run measured, in one sentence.
    pub evidence: String,
    pub favours: Favours,
    /// Weight of the row given the user's answers (0–3).
    pub weight: u32,
}

/// The chance that a RoCEv2 fabric runs with a misconfiguration that breaks
/// losslessness (PFC off or the RDMA DSCP on a lossy class somewhere), and where
/// it comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Risk {
    pub probability: f64,
    pub source: String,
}

/// How firmly the evidence and answers separate the two fabrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

/// One input varied over its range, and what the recommendation does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// The input varied.
    pub input: String,
    /// The recommendation over the input's range, in words ("InfiniBand for
    /// p ≤ 0.02, RoCEv2 above").
    pub finding: String,
    /// Whether some value in the range changes the recommendation.
    pub flips: bool,
}

/// The advisor's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Advice {
    pub answers: Answers,
    pub table: Vec<Row>,
    pub tco: Vec<Tco>,
    pub recommendation: Favours,
    /// The weighted score behind it.
    pub score_infiniband: u32,
    pub score_rocev2: u32,
    pub confidence: Confidence,
    /// Why the confidence is what it is.
    pub confidence_why: String,
    /// The misconfiguration risk that weights RoCEv2's misconfigured outcome.
    pub risk: Risk,
    /// The recommendation, then its strongest reasons (at most three, heaviest first).
    pub reasons: Vec<String>,
    /// What would change the recommendation.
    pub sensitivity: Vec<Sensitivity>,
}

/// Relative busbw gap below which neither fabric wins on bandwidth: the model's
/// ring all-reduce busbw per 400G NIC is 48.1 GB/s on InfiniBand against the
/// published 46–48 GB/s (nccl-tests#290, a maintainer's figure;
/// flow-level-and-calibration.md §B6): the published figure itself spans 4.3%,
/// and the model sits up to 4.6% above its low end, so a gap under 5% is within
/// what is known of an endpoint (docs/VALIDATION.md §12).
pub const BUSBW_TOLERANCE: f64 = 0.05;

/// Relative p99 gap below which neither fabric wins on tail latency: published
/// port-to-port latencies of one InfiniBand switch (QM9700) range from under 150
/// to under 400 ns across sources (flow-level-and-calibration.md §B6), so the
/// switch constants alone move a one-switch probe by more than 10%.
pub const LATENCY_TOLERANCE: f64 = 0.10;

/// Relative TCO gap below which neither fabric wins on cost (prices move by more
/// than this between the dated sources of the price table).
pub const COST_TOLERANCE: f64 = 0.05;

/// The misconfiguration risk assumed from the answers when neither the user nor
/// a lint of their configuration gives one: a team that runs Ethernet today
/// (skills `ethernet` or `both`), and one that does not. No published base rate
/// was found (failures-isolation-sweeps.md §2.6 counts interruptions, not
/// misconfigurations); the sensitivity section gives the risk at which the
/// recommendation flips, which is what to weigh against these.
pub const RISK_ETHERNET_TEAM: f64 = 0.05;
pub const RISK_OTHER_TEAM: f64 = 0.20;

/// Share of single-fault RoCE configurations the linter let through when tried on
/// SONiC configurations it had not seen: 2 of 20 (issue #23's trial, before the
/// two rules it missed were added).
pub const LINT_MISS_RATE: f64 = 0.1;

/// The misconfiguration risk given the answers and, when the comparison linted
/// the user's own configuration, what the lint found: the user's own figure
/// first; else 1 if the configuration as written runs lossy, or the assumed risk
/// times the linter's miss rate if it linted clean; else the assumption alone.
pub fn risk_for(answers: &Answers, evidence: &[Evidence]) -> Risk {
    if answers.misconfig_risk.is_some() {
        return misconfig_risk(answers);
    }
    let Some(u) = evidence.iter().find(|e| e.user_config && e.refused.is_none()) else {
        return misconfig_risk(answers);
    };
    if u.role == Role::Misconfigured {
        return Risk {
            probability: 1.0,
            source: format!(
                "the lint of your configuration: as written it does not keep the RDMA class lossless ({} error-level findings)",
                u.config_errors
            ),
        };
    }
    let assumed = misconfig_risk(answers);
    Risk {
        probability: assumed.probability * LINT_MISS_RATE,
        source: format!(
            "your configuration linted lossless ({} error-level findings); what remains is the linter's miss rate on configurations it had not seen ({LINT_MISS_RATE}) times the risk assumed from your answers ({:.2})",
            u.config_errors, assumed.probability
        ),
    }
}

/// The misconfiguration risk for `answers`: the user's own figure, else the
/// assumption above (halved for a large Ethernet estate, whose configuration is
/// templated and audited already).
pub fn misconfig_risk(answers: &Answers) -> Risk {
    if let Some(p) = answers.misconfig_risk {
        return Risk {
            probability: p.clamp(0.0, 1.0),
            source: "your answer (advisor.misconfig_risk)".into(),
        };
    }
    let base = match answers.skills {
        Skills::Ethernet | Skills::Both => RISK_ETHERNET_TEAM,
        Skills::Infiniband | Skills::Neither => RISK_OTHER_TEAM,
    };
    let (p, estate) = match answers.ethernet_estate {
        Estate::Large => (base / 2.0, ", halved for a large Ethernet estate"),
        _ => (base, ""),
    };
    Risk {
        probability: p,
        source: format!(
            "assumed from your answers (skills {:?}{estate}): no published base rate; set advisor.misconfig_risk to your own, and see the sensitivity section for where the recommendation flips",
            answers.skills
        ),
    }
}

fn f1(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.1}"))
}

fn f2(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.2}"))
}

/// Engineers needed to run a fabric of `endpoints` given the team's skills: a
/// baseline of one engineer per ~1000 endpoints, more when the team must learn the
/// technology, and RoCE's tuning burden (PFC/ECN/DCQCN on every hop) on top.
fn engineers(tech: Tech, skills: Skills, endpoints: usize) -> f64 {
    let base = (endpoints as f64 / 1000.0).max(0.25);
    let learn = match (tech, skills) {
        (Tech::InfiniBand, Skills::Ethernet | Skills::Neither) => 0.5,
        (Tech::Ethernet, Skills::Infiniband | Skills::Neither) => 0.5,
        _ => 0.0,
    };
    let tuning = if tech == Tech::Ethernet { 0.25 } else { 0.0 };
    base + learn + tuning
}

/// The failure model's figures in words, and whether the fabrics' repair times
/// matter to them.
fn failure_note(ib: &Tco, eth: &Tco) -> String {
    match (&ib.failure, &eth.failure) {
        (Some(i), Some(e)) => {
            let gap = (i.lost_gpu_hours_per_month - e.lost_gpu_hours_per_month).abs()
                / i.lost_gpu_hours_per_month
                    .max(e.lost_gpu_hours_per_month)
                    .max(f64::MIN_POSITIVE);
            format!(
                "network failures on {} GPUs: {:.2} interruptions a month, each losing {:.0} s of the whole job (NCCL detection {:.0} s, fabric repair {:.1} s on InfiniBand and {:.1} s on Ethernet, restart {:.0} s, half a {:.1} h checkpoint interval), {:.1} GPU-hours (${:.0}) a month on InfiniBand and {:.1} (${:.0}) on Ethernet: the repair times differ by {}, negligible beside NCCL's timeout and the lost work",
                i.gpus,
                i.interruptions_per_month,
                i.lost_s_per_interruption,
                i.detection_s,
                i.reroute_s,
                e.reroute_s,
                i.restart_s,
                i.checkpoint_interval_s / 3600.0,
                i.lost_gpu_hours_per_month,
                i.usd_per_month,
                e.lost_gpu_hours_per_month,
                e.usd_per_month,
                if gap < 1e-4 {
                    "under 0.01%".to_string()
                } else {
                    format!("{:.2}%", gap * 100.0)
                }
            )
        }
        _ => "network failures not priced".into(),
    }
}

/// Bandwidth at equal load: InfiniBand carries no background TCP, so a converged
/// variant's busbw is taken from its run without it.
fn quiet_busbw(e: &Evidence) -> Option<f64> {
    e.tcp.as_ref().and_then(|t| t.quiet_busbw_gbs).or(e.busbw_gbs)
}

/// RDMA packets dropped per million delivered.
fn drop_ppm(e: &Evidence) -> f64 {
    e.drops as f64 * 1e6 / e.delivered.max(1) as f64
}

/// The best as-designed variant of `kind` by its measurements alone (busbw, then
/// drops, then p99, then pause time), never by its id, label or place.
fn best_designed(ev: &[Evidence], kind: FabricKind) -> Option<&Evidence> {
    let key = |e: &Evidence| {
        (
            -quiet_busbw(e).unwrap_or(f64::NEG_INFINITY),
            drop_ppm(e),
            e.p99_us.unwrap_or(f64::INFINITY),
            e.pause_time_us,
            e.deadlocks + e.storms,
        )
    };
    ev.iter()
        .filter(|e| e.kind == Some(kind) && e.refused.is_none() && e.role == Role::AsDesigned)
        .min_by(|a, b| key(a).partial_cmp(&key(b)).unwrap_or(std::cmp::Ordering::Equal))
}

/// The misconfigured RoCEv2 variants that ran.
fn misconfigured(ev: &[Evidence]) -> Vec<&Evidence> {
    ev.iter()
        .filter(|e| e.kind == Some(FabricKind::Rocev2) && e.refused.is_none() && e.role == Role::Misconfigured)
        .collect()
}

/// The mean of `f` over `v` (`None` when empty or nothing measured).
fn mean(v: &[&Evidence], f: impl Fn(&Evidence) -> Option<f64>) -> Option<f64> {
    let xs: Vec<f64> = v.iter().filter_map(|e| f(e)).collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// `designed` with probability 1 − p and `mis` with p (`designed` alone when
/// the misconfigured outcome was not measured).
fn expect(designed: Option<f64>, mis: Option<f64>, p: f64) -> Option<f64> {
    match (designed, mis) {
        (Some(d), Some(m)) => Some((1.0 - p) * d + p * m),
        (d, _) => d,
    }
}

/// Whether two ranges over seeds part (either unknown: nothing to hold the
/// decision back).
fn parted(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> bool {
    match (a, b) {
        (Some((alo, ahi)), Some((blo, bhi))) => ahi < blo || bhi < alo,
        _ => true,
    }
}

/// " (seeds a–b)" for a range that is not one value.
fn range_note(r: Option<(f64, f64)>, prec: usize) -> String {
    match r {
        Some((lo, hi)) if hi > lo => format!(" (seeds {lo:.prec$}–{hi:.prec$})"),
        _ => String::new(),
    }
}

/// Higher wins when the relative gap exceeds `tol`.
fn higher_wins(ib: Option<f64>, roce: Option<f64>, tol: f64) -> Favours {
    match (ib, roce) {
        (Some(a), Some(b)) if a > b * (1.0 + tol) => Favours::Infiniband,
        (Some(a), Some(b)) if b > a * (1.0 + tol) => Favours::Rocev2,
        _ => Favours::Neither,
    }
}

/// Build the advice from the run's evidence, the answers and the topology's TCO.
pub fn advise(answers: &Answers, evidence: &[Evidence], fabric: &fabric::Fabric, prices: &PriceTable) -> Advice {
    let risk = risk_for(answers, evidence);
    let mut a = decide(answers, evidence, fabric, prices, &risk);
    a.sensitivity = sensitivity(answers, evidence, fabric, prices, &risk, a.recommendation);
    a
}

/// The table, TCO and recommendation for one set of inputs (no sensitivity).
fn decide(
    answers: &Answers,
    evidence: &[Evidence],
    fabric: &fabric::Fabric,
    prices: &PriceTable,
    risk: &Risk,
) -> Advice {
    let p = risk.probability;
    let ib = best_designed(evidence, FabricKind::Infiniband);
    let roce = best_designed(evidence, FabricKind::Rocev2);
    let mis = misconfigured(evidence);
    let endpoints = fabric.count(fabric::NodeKind::Ca);

    // Outage risk: the GPU-hours the fabric's interruptions cost, from the cited
    // failure model (Llama 3's network-attributable interruption rate, NCCL's
    // timeout, a published restart time, half of Young's checkpoint interval; each
    // fabric's own repair time). The misconfiguration risk does not scale it: no
    // source found attributes interruptions to misconfigured RoCE (Llama 3's Table 5
    // counts switch/cable and NIC faults, not configurations), and the simulator
    // measures drops and pauses, not job interruptions; the risk weighs in through
    // the measured rows instead.
    let failures = Some(FailureModel::default());
    let ib_tco = prices.tco(
        fabric,
        Tech::InfiniBand,
        &OpsInputs {
            engineers: engineers(Tech::InfiniBand, answers.skills, endpoints),
            failures: failures.clone(),
        },
    );
    let eth_tco = prices.tco(
        fabric,
        Tech::Ethernet,
        &OpsInputs {
            engineers: engineers(Tech::Ethernet, answers.skills, endpoints),
            failures,
        },
    );
    let unsourced = prices.unsourced_for(fabric);
    let mis_note = |what: &str| {
        if mis.is_empty() {
            format!("no misconfigured RoCEv2 variant ran, so its {what} is not priced in")
        } else {
            format!(
                "RoCEv2 as expected at misconfiguration risk {p:.2}: {:.0}% the best as-designed variant, {:.0}% the misconfigured outcome measured here",
                (1.0 - p) * 100.0,
                p * 100.0
            )
        }
    };

    let mut table = Vec::new();
    // Bandwidth
    let perf_w = if answers.budget == Budget::Tight { 1 } else { 2 };
    // InfiniBand with SHARP where the scenario's switches have it: its all-reduce
    // against RoCEv2's ring (Ethernet switches do not aggregate)
    let ib_sharp = ib.and_then(|e| e.sharp_busbw_gbs);
    let ibb = ib_sharp.or(ib.and_then(quiet_busbw));
    let ib_range = match ib_sharp {
        Some(_) => ib.and_then(|e| e.sharp_busbw_range),
        None => ib.and_then(|e| e.busbw_range),
    };
    let rb = expect(roce.and_then(quiet_busbw), mean(&mis, |e| e.busbw_gbs), p);
    let tcp_note = match roce.and_then(|e| e.tcp.as_ref().map(|t| (t, e.busbw_gbs))) {
        Some((t, loaded)) => format!(
            " (without background TCP; {} GB/s with {:.0}% of line rate of it)",
            f1(loaded),
            t.load * 100.0
        ),
        None => String::new(),
    };
    table.push(Row {
        aspect: "Mechanism and bandwidth".into(),
        infiniband: "RDMA designed in from the physical layer; credit flow control; SM-computed routes".into(),
        rocev2: "IB transport in UDP/IP (port 4791); routed, ECMP-spread; needs PFC/ECN for losslessness".into(),
        metric: match ib_sharp {
            None => "ring all-reduce busbw per NIC at the largest size, GB/s (nccl-tests busbw: algbw × 2(n−1)/n, per NIC), at equal load".into(),
            Some(_) => "all-reduce busbw per NIC at the largest size, GB/s (nccl-tests busbw: algbw × 2(n−1)/n, per NIC), at equal load: InfiniBand with SHARP in-network reduction (the scenario's cluster.sharp), RoCEv2 by ring (Ethernet switches have no SHARP)".into(),
        },
        infiniband_value: ibb,
        rocev2_value: rb,
        threshold: format!(
            "the higher wins when more than {:.0}% higher and, over repeated seeds, the ranges do not overlap",
            BUSBW_TOLERANCE * 100.0
        ),
        threshold_source: "the model's busbw against published nccl-tests per-NIC figures (docs/VALIDATION.md §12)".into(),
        basis: Basis::Measured,
        evidence: format!(
            "InfiniBand {}{} GB/s{} of a {} GB/s bound; RoCEv2 {} GB/s{}{tcp_note} of a {} GB/s bound ({})",
            match ib_sharp {
                Some(_) => format!(
                    "with SHARP (cluster.sharp = true; its ring all-reduce {} GB/s, and the SHARP figure, nccl-tests' formula, can exceed the ring's link-rate bound because each NIC sends its shard once) ",
                    f1(ib.and_then(quiet_busbw))
                ),
                None => String::new(),
            },
            f1(ibb),
            range_note(ib_range, 1),
            f1(ib.map(|e| e.busbw_bound_gbs)),
            f1(rb),
            range_note(roce.and_then(|e| e.busbw_range), 1),
            f1(roce.map(|e| e.busbw_bound_gbs)),
            mis_note("bandwidth"),
        ),
        favours: if parted(ib_range, roce.and_then(|e| e.busbw_range)) {
            higher_wins(ibb, rb, BUSBW_TOLERANCE)
        } else {
            Favours::Neither
        },
        weight: perf_w,
    });
    // Losslessness: the chance that RDMA packets are dropped in service. A
    // misconfigured lossless class is lossy by definition (PFC off, or the RDMA
    // DSCP on a lossy queue: roce-config.md §5), measured here or not.
    let lost = |e: Option<&Evidence>| e.map(|e| if e.drops > 0 { 1.0 } else { 0.0 });
    let ib_loss = lost(ib);
    let mis_loss = if mis.is_empty() {
        1.0
    } else {
        mis.iter().filter(|e| e.drops > 0).count() as f64 / mis.len() as f64
    };
    let roce_loss = lost(roce).map(|d| (1.0 - p) * d + p * mis_loss);
    let worst = mis.iter().max_by_key(|e| e.drops);
    table.push(Row {
        aspect: "Losslessness".into(),
        infiniband: "lossless by construction: a sender transmits only with credits".into(),
        rocev2: "lossless only when PFC, ECN/DCQCN, DSCP maps and buffers are right on every hop".into(),
        metric: "chance that RDMA packets are dropped in service: 1 for a fabric that dropped as designed, the misconfiguration risk times the share of misconfigured outcomes that drop".into(),
        infiniband_value: ib_loss,
        rocev2_value: roce_loss,
        threshold: "the lower wins on any difference".into(),
        threshold_source: "a dropped RDMA packet costs a go-back-N retransmission of everything after it; at a 1/256 drop rate 4 MB messages livelock (docs/VALIDATION.md §3)".into(),
        basis: Basis::Measured,
        evidence: format!(
            "InfiniBand dropped {} per million delivered; best as-designed RoCEv2 {}; misconfiguration risk {p:.2}{}",
            ib.map_or("n/a".into(), |e| format!("{:.1}", drop_ppm(e))),
            roce.map_or("n/a".into(), |e| format!("{:.1}", drop_ppm(e))),
            match worst {
                Some(w) => format!(
                    "; the misconfigured outcome measured here dropped {} packets ({:.0} per million) and retransmitted {}",
                    w.drops,
                    drop_ppm(w),
                    w.retransmissions
                ),
                None => "; no misconfigured variant ran, so a misconfiguration counts as lossy".into(),
            }
        ),
        favours: match (ib_loss, roce_loss) {
            (Some(a), Some(b)) if a < b => Favours::Infiniband,
            (Some(a), Some(b)) if b < a => Favours::Rocev2,
            _ => Favours::Neither,
        },
        weight: 3,
    });
    // Stability / tail latency
    let ip99 = ib.and_then(|e| e.p99_us);
    let rp99 = expect(roce.and_then(|e| e.p99_us), mean(&mis, |e| e.p99_us), p);
    let (ij, rj) = (ib.and_then(|e| e.jitter_us), roce.and_then(|e| e.jitter_us));
    table.push(Row {
        aspect: "Stability (tail latency, jitter)".into(),
        infiniband: "no switch tuning; latency set by credits and routes".into(),
        rocev2: "tail depends on ECN thresholds, DCQCN parameters and PFC pauses".into(),
        metric: "p99 of a small message's one-way latency from post to arrival during the collective, µs (NICs as published or calibrated, and the fabric)".into(),
        infiniband_value: ip99,
        rocev2_value: rp99,
        threshold: format!(
            "the lower wins when more than {:.0}% lower and, over repeated seeds, the ranges do not overlap",
            LATENCY_TOLERANCE * 100.0
        ),
        threshold_source: "the spread of published port-to-port latencies of one switch (flow-level-and-calibration.md §B6)".into(),
        // the gap is set by the NICs' published latencies and by switch-latency
        // inputs whose published figures disagree (QM9700: 150–400 ns) or are
        // missing (Ethernet 51.2 Tb/s ASICs)
        basis: Basis::Unverified,
        evidence: format!(
            "InfiniBand {} µs{} (σ {}), RoCEv2 {} µs{} (σ {}), PFC pause time on the best as-designed RoCEv2 {} µs; the gap follows the NICs' published latencies (InfiniBand 600 ns, RoCE 800 ns one way, unless a calibration file gives the user's) and the switch-latency inputs (InfiniBand 130 ns cut-through, Ethernet 600 ns store-and-forward; published figures per product disagree or are missing)",
            f2(ip99),
            range_note(ib.and_then(|e| e.p99_range), 2),
            f2(ij),
            f2(rp99),
            range_note(roce.and_then(|e| e.p99_range), 2),
            f2(rj),
            f1(roce.map(|e| e.pause_time_us))
        ),
        favours: match higher_wins(ip99, rp99, LATENCY_TOLERANCE) {
            _ if !parted(ib.and_then(|e| e.p99_range), roce.and_then(|e| e.p99_range)) => Favours::Neither,
            Favours::Infiniband => Favours::Rocev2,
            Favours::Rocev2 => Favours::Infiniband,
            Favours::Neither => Favours::Neither,
        },
        weight: 2,
    });
    // Operations: the team's skills, and deadlocks or storms of a fabric built as designed
    let stuck = |e: Option<&Evidence>| e.map_or(0, |e| e.deadlocks + e.storms);
    let (ib_stuck, roce_stuck) = (stuck(ib), stuck(roce));
    let ops_fav = if ib_stuck != roce_stuck {
        if ib_stuck < roce_stuck {
            Favours::Infiniband
        } else {
            Favours::Rocev2
        }
    } else {
        match answers.skills {
            Skills::Infiniband => Favours::Infiniband,
            Skills::Ethernet => Favours::Rocev2,
            Skills::Both | Skills::Neither => Favours::Neither,
        }
    };
    let findings: u64 = evidence
        .iter()
        .filter(|e| e.refused.is_none())
        .map(|e| e.config_errors)
        .sum();
    table.push(Row {
        aspect: "Operations".into(),
        infiniband: "one SM configures every switch; ibdiagnet/ibnetdiscover see the whole fabric".into(),
        rocev2: "configuration spread over every switch and NIC; no end-to-end RDMA diagnostics".into(),
        metric: "deadlock and pause-storm events on the fabric as designed, then the team's skills".into(),
        infiniband_value: ib.map(|_| ib_stuck as f64),
        rocev2_value: roce.map(|_| roce_stuck as f64),
        threshold: "fewer events wins; on equal events the technology the team runs".into(),
        threshold_source: "a fabric that deadlocks as designed needs work the team may not have; otherwise your answer".into(),
        basis: if ib_stuck != roce_stuck { Basis::Measured } else { Basis::Answers },
        evidence: format!(
            "deadlock/storm events as designed: InfiniBand {ib_stuck}, RoCEv2 {roce_stuck}; error-level diagnostic findings over the variants: {findings}; team skills: {:?}",
            answers.skills
        ),
        favours: ops_fav,
        weight: 2,
    });
    // Cost
    table.push(Row {
        aspect: "Cost (TCO)".into(),
        infiniband: "single-vendor switches, optics and software".into(),
        rocev2: "multi-vendor Ethernet; reuse of the existing estate and skills".into(),
        metric: format!("{:.0}-year total cost of ownership, USD", prices.years),
        infiniband_value: Some(ib_tco.total_usd),
        rocev2_value: Some(eth_tco.total_usd),
        threshold: format!("the cheaper wins when more than {:.0}% cheaper", COST_TOLERANCE * 100.0),
        threshold_source: if unsourced.is_empty() {
            "every price behind the figure is cited with its date in the price table (`rdmalab advise --show-prices`)"
                .into()
        } else {
            format!(
                "the price table; unsourced (no citation, or your own figure): {} (`rdmalab advise --show-prices`)",
                unsourced.join(", ")
            )
        },
        basis: if unsourced.is_empty() {
            Basis::Cited
        } else {
            Basis::Unverified
        },
        evidence: format!(
            "{:.0}-year TCO: InfiniBand ${:.2}M (capex ${:.2}M), Ethernet ${:.2}M (capex ${:.2}M); {}",
            prices.years,
            ib_tco.total_usd / 1e6,
            ib_tco.capex_usd / 1e6,
            eth_tco.total_usd / 1e6,
            eth_tco.capex_usd / 1e6,
            failure_note(&ib_tco, &eth_tco),
        ),
        favours: match higher_wins(Some(ib_tco.total_usd), Some(eth_tco.total_usd), COST_TOLERANCE) {
            Favours::Infiniband => Favours::Rocev2,
            Favours::Rocev2 => Favours::Infiniband,
            Favours::Neither => Favours::Neither,
        },
        weight: match answers.budget {
            Budget::Tight => 3,
            Budget::Normal => 2,
            Budget::Ample => 1,
        },
    });
    // Isolation: what other traffic classes take from RDMA on a converged fabric
    // (InfiniBand is a separate fabric: nothing)
    let tcp_loss = roce.and_then(|e| {
        let t = e.tcp.as_ref()?;
        Some(1.0 - e.busbw_gbs? / t.quiet_busbw_gbs?)
    });
    table.push(Row {
        aspect: "Isolation".into(),
        infiniband: "a separate fabric: P_Keys, its own SM; storage/IP traffic elsewhere or over IPoIB".into(),
        rocev2: "converged with other traffic classes; isolation depends on DSCP/TC maps being right".into(),
        metric: "share of RDMA busbw taken by background traffic on a converged fabric (0 for a separate fabric)".into(),
        infiniband_value: tcp_loss.map(|_| 0.0),
        rocev2_value: tcp_loss,
        threshold: format!("the lower wins when it differs by more than {:.0} points", BUSBW_TOLERANCE * 100.0),
        threshold_source: "the bandwidth row's tolerance (docs/VALIDATION.md §12)".into(),
        basis: Basis::Measured,
        evidence: {
            let mut e = match roce.and_then(|v| v.tcp.as_ref().map(|t| (t, v))) {
                Some((t, v)) => format!(
                    "background TCP at {:.0}% of line rate took RDMA busbw from {} to {} GB/s and its probe p99 from {} to {} µs, and lost {} of its own packets on the lossy class while the RDMA traffic (data, ACKs, CNPs) lost {}",
                    t.load * 100.0,
                    f1(t.quiet_busbw_gbs),
                    f1(v.busbw_gbs),
                    f2(t.quiet_p99_us),
                    f2(v.p99_us),
                    t.drops,
                    v.drops
                ),
                None => "not measured: no background traffic ran beside the collectives (set workload.background_tcp_load)".into(),
            };
            if let Some(w) = worst {
                e.push_str(&format!("; a misconfigured RoCEv2 outcome dropped {} RDMA packets", w.drops));
            }
            e
        },
        favours: match tcp_loss {
            Some(l) if l > BUSBW_TOLERANCE => Favours::Infiniband,
            _ => Favours::Neither,
        },
        weight: 1,
    });
    // Scale / multi-site
    let v1 = evidence.iter().find(|e| e.kind == Some(FabricKind::Rocev1));
    table.push(Row {
        aspect: "Scale and reach".into(),
        infiniband: "one subnet up to ~48k LIDs; crossing sites needs IB routers or long-haul gear".into(),
        rocev2: "routed IP: spans pods and sites with ordinary routers; RoCEv1 stays in one L2 domain".into(),
        metric: "sites the job spans (your answer)".into(),
        infiniband_value: None,
        rocev2_value: None,
        threshold: "more than one site favours routed RoCEv2".into(),
        threshold_source: "InfiniBand subnets do not route between sites without IB routers".into(),
        basis: Basis::Answers,
        evidence: match v1.and_then(|e| e.refused.clone()) {
            Some(why) => format!("RoCEv1 could not run here: {why}; sites: {}", answers.sites),
            None => format!("sites: {}", answers.sites),
        },
        favours: if answers.sites > 1 {
            Favours::Rocev2
        } else {
            Favours::Neither
        },
        weight: if answers.sites > 1 { 3 } else { 1 },
    });
    // Ecosystem
    table.push(Row {
        aspect: "Ecosystem".into(),
        infiniband: "NVIDIA-dominated; SHARP in-network reduction; mature HPC tooling".into(),
        rocev2: "many switch vendors, SONiC, Ultra Ethernet roadmap; existing monitoring applies".into(),
        metric: "existing Ethernet estate (your answer)".into(),
        infiniband_value: None,
        rocev2_value: None,
        threshold: "a large estate favours RoCEv2".into(),
        threshold_source: "your answer".into(),
        basis: Basis::Answers,
        evidence: format!("existing Ethernet estate: {:?}", answers.ethernet_estate),
        favours: match answers.ethernet_estate {
            Estate::Large => Favours::Rocev2,
            Estate::Some => Favours::Neither,
            Estate::None => Favours::Neither,
        },
        weight: 1,
    });

    let score = |f: Favours| table.iter().filter(|r| r.favours == f).map(|r| r.weight).sum::<u32>();
    let (si, sr) = (score(Favours::Infiniband), score(Favours::Rocev2));
    let recommendation = match si.cmp(&sr) {
        std::cmp::Ordering::Greater => Favours::Infiniband,
        std::cmp::Ordering::Less => Favours::Rocev2,
        std::cmp::Ordering::Equal => Favours::Neither,
    };
    // confidence: the margin, and how much of the winner's score was measured
    let winner_w = score(recommendation);
    let measured_w: u32 = table
        .iter()
        .filter(|r| r.favours == recommendation && r.basis == Basis::Measured)
        .map(|r| r.weight)
        .sum();
    let margin = si.abs_diff(sr);
    let (confidence, confidence_why) = if recommendation == Favours::Neither {
        (Confidence::Low, format!("the scores tie at {si}"))
    } else {
        let share = f64::from(measured_w) / f64::from(winner_w.max(1));
        let why = format!(
            "margin {margin} of {} points; {measured_w} of the winner's {winner_w} from this run's measurements, the rest from your answers or unverified inputs",
            si + sr
        );
        let level = if margin >= 3 && share >= 0.5 {
            Confidence::High
        } else if margin <= 1 || measured_w == 0 {
            Confidence::Low
        } else {
            Confidence::Medium
        };
        (level, why)
    };
    let mut strongest: Vec<&Row> = table
        .iter()
        .filter(|r| r.favours == recommendation && recommendation != Favours::Neither)
        .collect();
    strongest.sort_by_key(|r| std::cmp::Reverse(r.weight));
    let mut reasons: Vec<String> = strongest
        .iter()
        .take(3)
        .map(|r| format!("{} (weight {}): {}", r.aspect, r.weight, r.evidence))
        .collect();
    reasons.insert(0, format!("weighted score: InfiniBand {si}, RoCEv2 {sr}"));
    let measured = |k: FabricKind| evidence.iter().any(|e| e.kind == Some(k) && e.refused.is_none());
    for (k, name) in [(FabricKind::Infiniband, "InfiniBand"), (FabricKind::Rocev2, "RoCEv2")] {
        if !measured(k) {
            reasons.push(format!("caution: no {name} variant was measured in this run, so rows about it rest on your answers and the TCO alone"));
        }
    }
    if recommendation == Favours::Neither {
        reasons.push("the evidence and your answers do not separate the two; decide on supplier terms".into());
    }
    Advice {
        answers: answers.clone(),
        table,
        tco: vec![ib_tco, eth_tco],
        recommendation,
        score_infiniband: si,
        score_rocev2: sr,
        confidence,
        confidence_why,
        risk: risk.clone(),
        reasons,
        sensitivity: Vec::new(),
    }
}

fn name(f: Favours) -> &'static str {
    match f {
        Favours::Infiniband => "InfiniBand",
        Favours::Rocev2 => "RoCEv2",
        Favours::Neither => "neither",
    }
}

/// Runs of equal recommendation over `xs`, in words: "InfiniBand for 0–0.12,
/// RoCEv2 for 0.13–1".
fn runs(xs: &[f64], recs: &[Favours], fmt: impl Fn(f64) -> String) -> (String, bool) {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < xs.len() {
        let mut j = i;
        while j + 1 < xs.len() && recs[j + 1] == recs[i] {
            j += 1;
        }
        if i == j {
            parts.push(format!("{} at {}", name(recs[i]), fmt(xs[i])));
        } else {
            parts.push(format!("{} for {}–{}", name(recs[i]), fmt(xs[i]), fmt(xs[j])));
        }
        i = j + 1;
    }
    let flips = parts.len() > 1;
    (parts.join(", "), flips)
}

/// What would change the recommendation: the misconfiguration risk over 0–1, the
/// InfiniBand gear prices scaled 0.25–3×, each other answer.
fn sensitivity(
    answers: &Answers,
    evidence: &[Evidence],
    fabric: &fabric::Fabric,
    prices: &PriceTable,
    risk: &Risk,
    now: Favours,
) -> Vec<Sensitivity> {
    let mut out = Vec::new();
    let ps: Vec<f64> = (0..=100).map(|i| f64::from(i) / 100.0).collect();
    let recs: Vec<Favours> = ps
        .iter()
        .map(|&p| {
            let r = Risk {
                probability: p,
                source: String::new(),
            };
            decide(answers, evidence, fabric, prices, &r).recommendation
        })
        .collect();
    let (finding, flips) = runs(&ps, &recs, |p| format!("{p:.2}"));
    out.push(Sensitivity {
        input: format!("misconfiguration risk (now {:.2})", risk.probability),
        finding,
        flips,
    });
    let ks: Vec<f64> = (5..=60).map(|i| f64::from(i) * 0.05).collect();
    let recs: Vec<Favours> = ks
        .iter()
        .map(|&k| {
            let mut t = prices.clone();
            t.ib_switch_port_400g *= k;
            t.ib_optic_400g *= k;
            decide(answers, evidence, fabric, &t, risk).recommendation
        })
        .collect();
    let (finding, flips) = runs(&ks, &recs, |k| format!("{k:.2}×"));
    out.push(Sensitivity {
        input: "InfiniBand switch and optic prices, times the table's".into(),
        finding,
        flips,
    });
    let mut answer = |input: &str, alts: Vec<(String, Answers)>| {
        let mut parts = Vec::new();
        let mut flips = false;
        for (what, a) in alts {
            let r = decide(&a, evidence, fabric, prices, &risk_for(&a, evidence)).recommendation;
            flips |= r != now;
            parts.push(format!("{what}: {}", name(r)));
        }
        out.push(Sensitivity {
            input: input.into(),
            finding: parts.join(", "),
            flips,
        });
    };
    let with = |f: &dyn Fn(&mut Answers)| {
        let mut a = answers.clone();
        f(&mut a);
        a
    };
    answer(
        &format!("team skills (now {:?})", answers.skills),
        [Skills::Infiniband, Skills::Ethernet, Skills::Both, Skills::Neither]
            .into_iter()
            .map(|s| (format!("{s:?}"), with(&|a: &mut Answers| a.skills = s)))
            .collect(),
    );
    answer(
        &format!("budget (now {:?})", answers.budget),
        [Budget::Tight, Budget::Normal, Budget::Ample]
            .into_iter()
            .map(|b| (format!("{b:?}"), with(&|a: &mut Answers| a.budget = b)))
            .collect(),
    );
    answer(
        &format!("Ethernet estate (now {:?})", answers.ethernet_estate),
        [Estate::None, Estate::Some, Estate::Large]
            .into_iter()
            .map(|e| (format!("{e:?}"), with(&|a: &mut Answers| a.ethernet_estate = e)))
            .collect(),
    );
    answer(
        &format!("sites (now {})", answers.sites),
        [1, 2]
            .into_iter()
            .map(|n| (n.to_string(), with(&|a: &mut Answers| a.sites = n)))
            .collect(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{RailParams, rail};

    fn ev(id: &str, kind: FabricKind, busbw: f64, drops: u64, deadlocks: u64) -> Evidence {
        Evidence {
            id: id.into(),
            label: id.into(),
            kind: Some(kind),
            busbw_gbs: Some(busbw),
            busbw_bound_gbs: 48.0,
            p99_us: Some(10.0),
            jitter_us: Some(1.0),
            delivered: 1_000_000,
            drops,
            deadlocks,
            ..Default::default()
        }
    }

    fn misconfigured(id: &str, busbw: f64, drops: u64) -> Evidence {
        Evidence {
            role: Role::Misconfigured,
            ..ev(id, FabricKind::Rocev2, busbw, drops, 0)
        }
    }

    fn pod() -> fabric::Fabric {
        rail(&RailParams {
            servers: 4,
            rails: 2,
            radix: 16,
            ..Default::default()
        })
        .unwrap()
    }

    fn row<'a>(a: &'a Advice, aspect: &str) -> &'a Row {
        a.table.iter().find(|r| r.aspect == aspect).unwrap()
    }

    fn with_risk(p: f64) -> Answers {
        Answers {
            skills: Skills::Both,
            misconfig_risk: Some(p),
            ..Default::default()
        }
    }

    #[test]
    fn rows_carry_the_measured_numbers_and_the_score_follows_the_evidence() {
        let f = pod();
        let e = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 45.5, 0, 0),
            misconfigured("roce-misconfig", 20.0, 1234),
            misconfigured("roce-lossy", 12.0, 9999),
        ];
        let a = Answers {
            skills: Skills::Infiniband,
            ..Default::default()
        };
        let adv = advise(&a, &e, &f, &PriceTable::default());
        assert_eq!(adv.table.len(), 8);
        // skills `infiniband`: the assumed risk for a team that does not run Ethernet
        assert_eq!(adv.risk.probability, RISK_OTHER_TEAM);
        let loss = row(&adv, "Losslessness");
        assert!(loss.evidence.contains("dropped 9999 packets"), "{}", loss.evidence);
        assert_eq!(loss.infiniband_value, Some(0.0));
        assert_eq!(loss.rocev2_value, Some(RISK_OTHER_TEAM));
        assert_eq!(loss.favours, Favours::Infiniband);
        // bandwidth at the risk: 0.8 × 45.5 + 0.2 × mean(20, 12) = 39.6
        let bw = row(&adv, "Mechanism and bandwidth");
        assert!((bw.rocev2_value.unwrap() - 39.6).abs() < 1e-9, "{bw:?}");
        assert_eq!(bw.favours, Favours::Infiniband);
        assert_eq!(adv.recommendation, Favours::Infiniband);
        assert!(
            adv.reasons.len() <= 4 && adv.reasons[1].starts_with("Losslessness (weight 3)"),
            "{:?}",
            adv.reasons
        );
        // An Ethernet shop spanning sites on a tight budget, with clean RoCE runs and
        // no misconfiguration risk, gets RoCE.
        let clean = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 46.0, 0, 0),
        ];
        let b = Answers {
            skills: Skills::Ethernet,
            ethernet_estate: Estate::Large,
            budget: Budget::Tight,
            sites: 2,
            misconfig_risk: Some(0.0),
        };
        let adv = advise(&b, &clean, &f, &PriceTable::default());
        assert_eq!(adv.recommendation, Favours::Rocev2, "{:?}", adv.reasons);
        assert!(adv.tco[0].total_usd > 0.0 && adv.tco[1].total_usd > 0.0);
    }

    #[test]
    fn cost_row_is_cited_only_when_every_deciding_price_is() {
        let f = pod();
        let e = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 46.0, 0, 0),
        ];
        let a = Answers::default();
        let adv = advise(&a, &e, &f, &PriceTable::default());
        let cost = row(&adv, "Cost (TCO)");
        assert_eq!(cost.basis, Basis::Unverified);
        assert!(cost.threshold_source.contains("nic_400g"), "{}", cost.threshold_source);
        assert!(!cost.threshold_source.contains("gpu_hour"), "{}", cost.threshold_source);
        // the failure model priced both fabrics, and says the repair times do not matter
        assert!(adv.tco.iter().all(|t| t.failure.is_some() && t.outage_risk_usd > 0.0));
        assert!(cost.evidence.contains("negligible"), "{}", cost.evidence);
        // the user's own dated quotes for every deciding price make the row cited
        let mut p = PriceTable::default();
        for key in p.deciding_keys(&f) {
            let s = p.sources.0.get_mut(key).unwrap();
            s.status = crate::tco::SourceStatus::Cited;
            s.source = Some("our quote".into());
            s.date = Some("2025-06".into());
            s.figure = Some("as quoted".into());
        }
        let adv = advise(&a, &e, &f, &p);
        assert_eq!(row(&adv, "Cost (TCO)").basis, Basis::Cited);
        // and a changed price is the user's own figure again, not the cited one
        p.nic_400g += 1.0;
        let adv = advise(&a, &e, &f, &p);
        assert_eq!(row(&adv, "Cost (TCO)").basis, Basis::Unverified);
    }

    /// Per measured row: the row favours the side its measurement favours, and
    /// swapping the measured values between the fabrics swaps the winner.
    #[test]
    fn swapping_the_measured_values_between_fabrics_swaps_each_rows_winner() {
        let f = pod();
        let base = |kind| ev("x", kind, 46.0, 0, 0);
        // (row, how to make the InfiniBand side better on that row's metric)
        type Edit = fn(&mut Evidence, &mut Evidence);
        let cases: [(&str, Edit); 4] = [
            ("Mechanism and bandwidth", |good, bad| {
                good.busbw_gbs = Some(48.0);
                bad.busbw_gbs = Some(40.0);
            }),
            ("Losslessness", |_, bad| bad.drops = 50),
            ("Stability (tail latency, jitter)", |good, bad| {
                good.p99_us = Some(0.3);
                bad.p99_us = Some(0.9);
            }),
            ("Operations", |_, bad| bad.deadlocks = 1),
        ];
        for (aspect, edit) in cases {
            let (mut ib, mut roce) = (base(FabricKind::Infiniband), base(FabricKind::Rocev2));
            edit(&mut ib, &mut roce);
            let a = advise(&with_risk(0.0), &[ib.clone(), roce.clone()], &f, &PriceTable::default());
            assert_eq!(
                row(&a, aspect).favours,
                Favours::Infiniband,
                "{aspect}: {:?}",
                row(&a, aspect)
            );
            // the same numbers the other way round
            std::mem::swap(&mut ib.kind, &mut roce.kind);
            let b = advise(&with_risk(0.0), &[ib, roce], &f, &PriceTable::default());
            assert_eq!(
                row(&b, aspect).favours,
                Favours::Rocev2,
                "{aspect}: {:?}",
                row(&b, aspect)
            );
            assert_eq!(
                row(&a, aspect).infiniband_value,
                row(&b, aspect).rocev2_value,
                "{aspect}"
            );
            assert_eq!(
                row(&a, aspect).rocev2_value,
                row(&b, aspect).infiniband_value,
                "{aspect}"
            );
        }
    }

    /// The decision reads configurations and measurements, never ids, labels or order.
    #[test]
    fn relabelling_or_reordering_the_variants_changes_nothing() {
        let f = pod();
        let mut e = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce-tuned", FabricKind::Rocev2, 44.0, 0, 0),
            ev("roce-pfc-only", FabricKind::Rocev2, 45.0, 0, 0),
            misconfigured("roce-misconfig", 30.0, 700),
            misconfigured("roce-lossy", 20.0, 5000),
        ];
        e[1].p99_us = Some(2.0);
        let a = advise(&Answers::default(), &e, &f, &PriceTable::default());
        let mut shuffled = e.clone();
        shuffled.reverse();
        shuffled.swap(0, 2);
        for (i, v) in shuffled.iter_mut().enumerate() {
            // the misconfigured one called "tuned" and the other way round
            v.id = format!("variant-{i}-tuned-misconfig");
            v.label = format!("Label {i}");
        }
        let b = advise(&Answers::default(), &shuffled, &f, &PriceTable::default());
        assert_eq!(a.table, b.table);
        assert_eq!(a.recommendation, b.recommendation);
        assert_eq!(a.sensitivity, b.sensitivity);
        assert_eq!(a.reasons, b.reasons);
    }

    /// The misconfigured outcome enters through the risk: without a misconfigured
    /// variant the risk still makes RoCEv2 lossy with that chance, and at zero
    /// risk a misconfigured variant decides nothing.
    #[test]
    fn the_misconfiguration_risk_counts_with_or_without_a_misconfigured_variant() {
        let f = pod();
        let designed = vec![
            ev("ib", FabricKind::Infiniband, 46.0, 0, 0),
            ev("roce", FabricKind::Rocev2, 46.0, 0, 0),
        ];
        let mut all = designed.clone();
        all.push(misconfigured("bad", 10.0, 4000));
        for e in [&designed, &all] {
            let a = advise(&with_risk(0.1), e, &f, &PriceTable::default());
            let loss = row(&a, "Losslessness");
            assert_eq!(loss.rocev2_value, Some(0.1), "{loss:?}");
            assert_eq!(loss.favours, Favours::Infiniband);
            let z = advise(&with_risk(0.0), e, &f, &PriceTable::default());
            assert_eq!(row(&z, "Losslessness").favours, Favours::Neither);
            assert_eq!(row(&z, "Mechanism and bandwidth").favours, Favours::Neither);
        }
        // with a misconfigured outcome measured, the risk also prices its bandwidth
        let a = advise(&with_risk(0.5), &all, &f, &PriceTable::default());
        assert_eq!(row(&a, "Mechanism and bandwidth").rocev2_value, Some(28.0));
        assert_eq!(row(&a, "Mechanism and bandwidth").favours, Favours::Infiniband);
        // the sensitivity section finds where the risk flips the recommendation
        let s = &a.sensitivity[0];
        assert!(s.input.starts_with("misconfiguration risk (now 0.50)"), "{s:?}");
    }

    /// The lint of the user's own configuration sets the risk: 1 when it runs
    /// lossy as written, the assumption times the linter's miss rate when clean;
    /// the user's own figure still wins.
    #[test]
    fn a_linted_user_configuration_sets_the_misconfiguration_risk() {
        let mut yours = ev("yours", FabricKind::Rocev2, 46.0, 0, 0);
        yours.user_config = true;
        let answers = Answers::default();
        let clean = risk_for(&answers, std::slice::from_ref(&yours));
        assert!(
            (clean.probability - RISK_ETHERNET_TEAM * LINT_MISS_RATE).abs() < 1e-12,
            "{clean:?}"
        );
        assert!(clean.source.contains("linted lossless"));
        yours.role = Role::Misconfigured;
        yours.config_errors = 2;
        let lossy = risk_for(&answers, std::slice::from_ref(&yours));
        assert_eq!(lossy.probability, 1.0);
        assert!(lossy.source.contains("2 error-level findings"), "{lossy:?}");
        let own = risk_for(&with_risk(0.3), &[yours]);
        assert_eq!(own.probability, 0.3);
    }

    /// Over repeated seeds a gap counts only where the ranges part.
    #[test]
    fn overlapping_ranges_over_seeds_decide_nothing() {
        let f = pod();
        let mut ib = ev("ib", FabricKind::Infiniband, 48.0, 0, 0);
        let mut roce = ev("roce", FabricKind::Rocev2, 40.0, 0, 0);
        let a = advise(&with_risk(0.0), &[ib.clone(), roce.clone()], &f, &PriceTable::default());
        assert_eq!(row(&a, "Mechanism and bandwidth").favours, Favours::Infiniband);
        ib.busbw_range = Some((46.0, 49.0));
        roce.busbw_range = Some((38.0, 46.5));
        let b = advise(&with_risk(0.0), &[ib.clone(), roce.clone()], &f, &PriceTable::default());
        let r = row(&b, "Mechanism and bandwidth");
        assert_eq!(r.favours, Favours::Neither, "{r:?}");
        assert!(
            r.evidence.contains("InfiniBand 48.0 GB/s (seeds 46.0–49.0)"),
            "{}",
            r.evidence
        );
        roce.busbw_range = Some((38.0, 42.0));
        let c = advise(&with_risk(0.0), &[ib, roce], &f, &PriceTable::default());
        assert_eq!(row(&c, "Mechanism and bandwidth").favours, Favours::Infiniband);
    }

    /// Background TCP on the converged side: bandwidth is compared at equal load
    /// (the run without TCP) and what TCP cost shows under isolation.
    #[test]
    fn background_tcp_is_compared_at_equal_load_and_shown_under_isolation() {
        let f = pod();
        let mut tuned = ev("roce-tuned", FabricKind::Rocev2, 41.0, 0, 0);
        tuned.tcp = Some(TcpEvidence {
            load: 0.1,
            quiet_busbw_gbs: Some(45.9),
            quiet_p99_us: Some(0.8),
            drops: 17,
            retransmissions: 20,
        });
        let e = vec![ev("ib", FabricKind::Infiniband, 46.0, 0, 0), tuned];
        let adv = advise(&with_risk(0.0), &e, &f, &PriceTable::default());
        let mech = row(&adv, "Mechanism and bandwidth");
        assert!(
            mech.evidence
                .contains("RoCEv2 45.9 GB/s (without background TCP; 41.0 GB/s with 10%"),
            "{}",
            mech.evidence
        );
        // 46.0 vs 45.9 is within the tolerance: neither side wins on bandwidth at equal load.
        assert_eq!(mech.favours, Favours::Neither);
        let iso = row(&adv, "Isolation");
        assert!(
            iso.evidence.contains("from 45.9 to 41.0 GB/s") && iso.evidence.contains("lost 17 of its own packets"),
            "{}",
            iso.evidence
        );
        // TCP took 10.7% of the busbw: more than the tolerance
        assert!((iso.rocev2_value.unwrap() - (1.0 - 41.0 / 45.9)).abs() < 1e-12);
        assert_eq!(iso.favours, Favours::Infiniband);
    }
}
