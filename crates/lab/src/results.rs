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
    /// collectives this is busbw ÷ NICs per server).
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
    /// Link-rate bound on ring all-reduce busbw per NIC, GB/s.
    pub busbw_bound_gbs: f64,
    pub variants: Vec<VariantResult>,
    pub advice: Advice,
}

impl VariantResult {
    /// Ring all-reduce busbw per NIC at the largest size, if it ran.
    pub fn large_ring_busbw(&self) -> Option<f64> {
        self.collectives
            .iter()
            .find(|c| c.op == Collective::AllReduceRing)
            .and_then(|c| c.rows.last())
            .map(|r| r.busbw_per_nic)
    }
}
