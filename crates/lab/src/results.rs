//! What a comparison produces, as plain data: the report crate renders it, and
//! `results.json` is its serde form, so every number in the report is in the JSON.

use serde::{Deserialize, Serialize};

use crate::advisor::{Advice, FabricKind};
use crate::collective::Collective;

/// One row of an nccl-tests-style table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeRow {
    /// nccl-tests' size column, bytes.
    pub size: u64,
    /// Completion time, microseconds.
    pub time_us: f64,
    /// GB/s.
    pub algbw: f64,
    /// GB/s, nccl-tests' per-rank figure.
    pub busbw: f64,
    /// What the busiest NIC sent, per second of the collective, GB/s (for ring
    /// collectives this is busbw ÷ NICs per server). For the SHARP all-reduce it
    /// is nccl-tests' busbw ÷ NICs per server, the figure a ring would need per
    /// NIC to match it; the NIC itself sends algbw ÷ NICs per server.
    pub busbw_per_nic: f64,
}

/// A collective at every size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectiveResult {
    pub op: Collective,
    pub rows: Vec<SizeRow>,
}

/// Latency of the small-message probe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Standard deviation, microseconds.
    pub jitter_us: f64,
    /// Points of the CDF: (latency µs, fraction ≤).
    pub cdf: Vec<(f64, f64)>,
}

/// Event counters of a variant's whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub packets_delivered: u64,
    pub drops: u64,
    pub retransmissions: u64,
    pub pause_frames: u64,
    pub pause_time_us: f64,
    pub ecn_marks: u64,
    pub cnps: u64,
    pub deadlocks: u64,
    pub storms: u64,
}

/// N:1 incast outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IncastResult {
    pub senders: u32,
    pub bytes_each: u64,
    pub completion_us: f64,
    /// Aggregate goodput at the receiver, GB/s.
    pub goodput_gbs: f64,
    pub drops: u64,
    pub retransmissions: u64,
}

/// Background TCP on a converged variant, over every collective run (the incast
/// runs without it), and what it cost the RDMA traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpBackground {
    /// Offered load, fraction of each NIC's line rate.
    pub load: f64,
    /// Congestion control (`newreno`, `dctcp`).
    pub cc: String,
    /// Connections (one per NIC).
    pub flows: u32,
    /// Payload each connection's application offered, Gb/s.
    pub offered_gbps_per_flow: f64,
    /// Payload delivered in order per connection, averaged over the simulated
    /// time of every collective run, Gb/s.
    pub goodput_gbps_per_flow: f64,
    /// TCP segments and ACKs dropped, by reason (all on the lossy class).
    pub drops: u64,
    pub drop_reasons: Vec<(String, u64)>,
    /// Segments sent again (fast retransmit, SACK recovery, after a timeout).
    pub retransmissions: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// Window cuts on ECN echoes (DCTCP only).
    pub ecn_reductions: u64,
    /// The ring all-reduce at the largest size with its probes, run again with no
    /// TCP: busbw per NIC, GB/s, and the probe latency, for the before/after.
    pub quiet_busbw_gbs: Option<f64>,
    pub quiet_p50_us: Option<f64>,
    pub quiet_p99_us: Option<f64>,
    pub quiet_p999_us: Option<f64>,
}

/// A named time series (queue depth, pause time) for charts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeSeries {
    pub name: String,
    pub unit: String,
    /// (time µs, value)
    pub points: Vec<(f64, f64)>,
}

/// Simulator effort behind a variant's numbers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimEffort {
    pub events: u64,
    pub packet_hops: u64,
    pub simulated_us: f64,
    pub wall_ms: f64,
}

/// Everything measured for one variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    pub id: String,
    pub label: String,
    pub kind: FabricKind,
    /// What the variant stands for in the decision (from its configuration).
    #[serde(default)]
    pub role: crate::advisor::Role,
    /// The link-rate bound on its ring all-reduce busbw per NIC, GB/s (its own
    /// fabric's headers).
    #[serde(default)]
    pub busbw_bound_gbs: f64,
    /// Built from the user's own RoCE configuration (`compare --roce-config`), as
    /// linted: its role says whether it runs lossy as written.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_config: bool,
    /// Set when the variant cannot run on this cluster, with the reason.
    pub refused: Option<String>,
    /// Routing or addressing that the variant's bring-up chose (SM engine, ECMP).
    pub bring_up: String,
    pub collectives: Vec<CollectiveResult>,
    pub latency: Option<Latency>,
    pub counters: Counters,
    pub incast: Option<IncastResult>,
    pub timeseries: Vec<TimeSeries>,
    /// Diagnostic findings on this variant's fabric and configuration.
    pub findings: Vec<String>,
    pub effort: SimEffort,
    /// Background TCP, on the variants that carry it when the scenario asks for it.
    #[serde(default)]
    pub tcp: Option<TcpBackground>,
    /// The engine that produced this variant's numbers and why, when the scenario
    /// asked for another engine than the packet level (absent: packet level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineUsed>,
}

/// Which engine produced a variant's numbers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineUsed {
    /// `packet` or `flow`.
    pub engine: crate::scenario::EngineRan,
    /// Why this engine (the scenario's choice, `auto`'s rule, or what the flow
    /// engine cannot model).
    pub why: String,
    /// Jobs (a collective at one size, the incast) a flow-level variant ran
    /// packet by packet instead, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handed_over: Vec<HandedOver>,
}

/// A job a flow-level variant ran packet by packet instead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandedOver {
    /// The collective (`None`: the incast).
    pub op: Option<crate::collective::Collective>,
    /// Its size (the nccl-tests size column; `None`: the incast).
    pub size: Option<u64>,
    /// Why, in words: what the flow engine could not model there.
    pub why: String,
}

/// A whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompareResults {
    pub scenario: String,
    /// The scenario exactly as run, so the advisor and later runs can rebuild it.
    pub spec: crate::scenario::Scenario,
    pub seed: u64,
    /// Cluster in one line (servers, GPUs, NIC speed, switches, links).
    pub cluster: String,
    pub endpoints: u32,
    /// Link-rate bound on ring all-reduce busbw per NIC over native InfiniBand,
    /// GB/s (each variant carries its own: `VariantResult::busbw_bound_gbs`).
    pub busbw_bound_gbs: f64,
    pub variants: Vec<VariantResult>,
    pub advice: Advice,
    /// The seeds the comparison ran at (`repeats` > 1; the variants' figures above
    /// are the first seed's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seeds: Vec<u64>,
    /// Each variant's headline figures over those seeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread: Vec<VariantSpread>,
    /// Whether a spine link failure touches the ring all-reduce at the largest
    /// size ([`crate::failure`]), and how to study it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureOutcome>,
    /// Per variant, the recovery from a link failure between switches, the
    /// GPU-hours it and a job-killing interruption cost, and the monthly loss
    /// ([`crate::failure::compare_recovery`]; deterministic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<crate::failure::RecoveryStudy>,
    /// NIC latencies taken from a calibration file (`compare --calibration`);
    /// absent when the published NICs ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Endpoints>,
    /// The published NIC models the variants ran with ([`crate::endpoints`]):
    /// their latencies where no calibration gave one, their payload ceiling always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nics: Vec<NicUsed>,
    /// The scenario's training jobs on every variant ([`crate::compare::training`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<crate::compare::training::TrainingResults>,
    /// Each (variant, job)'s iteration time over the seeds (`repeats` > 1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training_spread: Vec<TrainingSpread>,
}

/// One job's iteration on one variant over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingSpread {
    pub variant: String,
    pub job: String,
    /// Iteration time, s.
    pub iteration: Spread,
    /// The ECMP uplink imbalance of the job's least even operation with 1 QP
    /// per connection ([`crate::train::OpDetail::uplink_imbalance`]).
    pub uplink_imbalance: Spread,
}

/// A NIC model as a comparison ran it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NicUsed {
    /// The fabric whose variants it served.
    pub fabric: String,
    /// The model's name.
    pub name: String,
    /// One-way small-message latency through the two NICs, ns.
    pub one_way_ns: f64,
    /// Payload ceiling, percent of the link's data rate.
    pub payload_ceiling_pct: f64,
    /// Where the figures come from.
    pub source: String,
}

impl NicUsed {
    /// `m` as used on `fabric`'s variants.
    pub fn of(fabric: &str, m: &crate::endpoints::NicModel) -> NicUsed {
        NicUsed {
            fabric: fabric.into(),
            name: m.name.into(),
            one_way_ns: (m.latency.tx_ps + m.latency.rx_ps) as f64 / 1e3,
            payload_ceiling_pct: f64::from(m.payload_ppm) / 1e4,
            source: m.source.into(),
        }
    }
}

/// NIC latencies fitted by `rdmalab calibrate` from the user's perftest runs,
/// applied where the simulators take them: the InfiniBand HCA's send and receive
/// latency (`sim::IbConfig::hca_tx_latency_ps`, `hca_rx_latency_ps`) on the
/// verbs variants, and the same pair on every RoCEv2 variant's NICs
/// (`runner::NicDelay`). IPoIB keeps its kernel model's host costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Endpoints {
    /// The calibration file, as given.
    pub source: String,
    /// InfiniBand's, when the file has both of its endpoint parameters.
    pub infiniband: Option<NicLatency>,
    /// RoCE's, likewise.
    pub rocev2: Option<NicLatency>,
    /// One InfiniBand switch's latency, ps, when the file has it (a one-hop
    /// against a back-to-back latency run): every switch of the verbs variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infiniband_switch_ps: Option<u64>,
    /// One Ethernet switch's latency, ps, likewise: every switch of the RoCEv2
    /// variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocev2_switch_ps: Option<u64>,
    /// The variants that ran with them (filled by the comparison).
    #[serde(default)]
    pub applied_to: Vec<String>,
}

/// One fabric's NIC latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicLatency {
    /// From a post to the NIC sending (the calibration's `tx_latency`), ps.
    pub tx_ps: u64,
    /// From the last byte in to the application seeing the message (`rx_latency`), ps.
    pub rx_ps: u64,
}

/// What a spine link failure does to the comparison's job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureOutcome {
    /// The collectives cross links between switches: the command that cuts one.
    /// (`rdmalab failure` times our SM's recovery on this machine, which a
    /// comparison's results, the same bytes for the same seed, cannot hold.)
    Study(String),
    /// Why there is nothing to cut (e.g. the collectives never leave a leaf).
    NotApplicable(String),
}

/// One headline figure of a variant over the comparison's seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// What it measures, with its unit.
    pub figure: String,
    /// One value per seed, in the order of [`CompareResults::seeds`].
    pub values: Vec<f64>,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (at least one).
    pub fn of(figure: String, values: Vec<f64>) -> Spread {
        let mut v = values.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            figure,
            values,
            min: v[0],
            median,
            max: v[n - 1],
        }
    }
}

/// A variant's headline figures over the seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantSpread {
    pub id: String,
    pub figures: Vec<Spread>,
}

/// The figure names [`VariantResult::headline`] gives the ring's busbw and the
/// probe p99, which the advisor reads.
pub const RING_BUSBW: &str = "ring all-reduce busbw at the largest size, GB/s per NIC";
pub const PROBE_P99: &str = "small-message probe p99, µs";
/// The figure name of the SHARP all-reduce's busbw (nccl-tests' busbw ÷ NICs per
/// server), which the advisor reads when the scenario's switches have SHARP.
pub const SHARP_BUSBW: &str = "all_reduce (SHARP) busbw at the largest size, GB/s per NIC";

impl VariantResult {
    /// The figures whose spread over seeds the results carry: each collective's
    /// busbw per NIC at the largest size, the probe p99, drops, pause time and the
    /// incast's completion.
    pub fn headline(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        for c in &self.collectives {
            if let Some(r) = c.rows.last() {
                let name = if c.op == Collective::AllReduceRing {
                    RING_BUSBW.to_string()
                } else if c.op == Collective::AllReduceSharp {
                    SHARP_BUSBW.to_string()
                } else {
                    format!("{} busbw at the largest size, GB/s per NIC", c.op.name())
                };
                out.push((name, r.busbw_per_nic));
            }
        }
        if let Some(l) = &self.latency {
            out.push((PROBE_P99.to_string(), l.p99_us));
        }
        out.push(("RDMA packets dropped".to_string(), self.counters.drops as f64));
        out.push(("PFC pause time, µs".to_string(), self.counters.pause_time_us));
        if let Some(i) = &self.incast {
            out.push(("incast completion, µs".to_string(), i.completion_us));
        }
        out
    }

    /// Ring all-reduce busbw per NIC at the largest size, if it ran.
    pub fn large_ring_busbw(&self) -> Option<f64> {
        self.large_busbw(Collective::AllReduceRing)
    }

    /// `op`'s busbw per NIC at the largest size, if it ran.
    pub fn large_busbw(&self, op: Collective) -> Option<f64> {
        self.collectives
            .iter()
            .find(|c| c.op == op)
            .and_then(|c| c.rows.last())
            .map(|r| r.busbw_per_nic)
    }
}
