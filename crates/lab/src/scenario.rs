//! Scenarios: one cluster, the workload to run on it, and the fabric variants to
//! compare. Written in TOML; [`Scenario::default_rail`] is the built-in default that
//! `rdmalab compare` runs with no arguments.
//!
//! Every field is documented in [`FIELDS`], which `rdmalab scenario explain` prints.
//! Unknown keys are errors (a typo never silently becomes a default), and parse
//! errors carry the file, line and column.

use std::path::Path;

use serde::{Deserialize, Serialize};

use sim::roce::dcqcn::Profile;
use sm::routing::EngineKind;

use crate::advisor::Answers;
use crate::collective::Collective;
use crate::tco::PriceTable;

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Seed for every random draw of every variant.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Runs of the whole comparison, at seeds `seed`, `seed + 1`, …: every figure
    /// then carries its spread over them.
    #[serde(default = "one_run", skip_serializing_if = "is_one_run")]
    pub repeats: u32,
    pub cluster: Cluster,
    #[serde(default)]
    pub gpu: Gpu,
    pub workload: Workload,
    pub variants: Vec<Variant>,
    #[serde(default)]
    pub advisor: Answers,
    #[serde(default)]
    pub prices: PriceTable,
    /// Which engine runs the variants: `packet` (default), `flow`, or `auto`.
    #[serde(default, skip_serializing_if = "Engine::is_packet")]
    pub engine: Engine,
    /// Training jobs run on every variant at once, one iteration each
    /// (`crate::compare::training`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub training: Option<Training>,
}

/// Training jobs that share the cluster: each is a model × parallelism × GPU
/// type (`workload::job::JobSpec`, as `rdmalab train` reads it), placed on the
/// cluster's servers in turn, and one iteration of each is priced on every
/// variant's fabric beside the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Training {
    /// Which servers the jobs get: `packed`, `scattered` over the units, or
    /// `fragmented` by the churn of earlier jobs (drawn from the seed).
    #[serde(default = "fragmented")]
    pub placement: crate::train::Placement,
    /// QPs per connection (NCCL's `NCCL_IB_QPS_PER_CONNECTION`; its default is 1).
    #[serde(default = "one_qp")]
    pub qps_per_connection: u32,
    /// The QP count the ECMP study sets beside `qps_per_connection`.
    #[serde(default = "more_qps")]
    pub more_qps: u32,
    /// How several jobs meet (`pairing`, or also a `joint` schedule).
    #[serde(default, skip_serializing_if = "crate::train::joint::Schedule::is_pairing")]
    pub schedule: crate::train::joint::Schedule,
    /// Largest message the packet level runs of an operation, bytes: the
    /// packet level's slowdown over flows at this size scales the flow
    /// engine's full-size answer (`crate::train::Pricing::Hybrid`).
    #[serde(default = "packet_cap")]
    pub packet_cap_bytes: u64,
    /// Operations whose largest message is at most this run at full size at
    /// packet level, bytes (an expert all-to-all's bursts and drops need their
    /// real size; a data-parallel ring's gigabytes do not fit).
    #[serde(default = "packet_full")]
    pub packet_full_bytes: u64,
    /// Kernel efficiency (fraction of the GPU's dense BF16 peak); default: the
    /// fit on a published run (`crate::train::published_efficiency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
    /// The jobs, in the order they take their servers.
    pub jobs: Vec<workload::job::JobSpec>,
}

fn fragmented() -> crate::train::Placement {
    crate::train::Placement::Fragmented
}

fn one_qp() -> u32 {
    1
}

fn more_qps() -> u32 {
    4
}

fn packet_cap() -> u64 {
    2 << 20
}

fn packet_full() -> u64 {
    16 << 20
}

/// The engine a scenario asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Every variant packet by packet.
    #[default]
    Packet,
    /// Every variant the flow engine can model at flow level; the others at packet level.
    Flow,
    /// Packet level up to [`AUTO_PACKET_MAX_ENDPOINTS`] NICs, flow level beyond
    /// where the flow engine can model the variant.
    Auto,
}

impl Engine {
    /// The default engine.
    pub fn is_packet(&self) -> bool {
        *self == Engine::Packet
    }
}

/// The engine that ran a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineRan {
    /// The packet-level worlds (`sim`).
    Packet,
    /// The flow-level engine (`flow`).
    Flow,
}

/// `auto`'s threshold: the largest cluster, in NICs, that `auto` runs at packet
/// level. The packet level runs the 128-NIC default comparison in about 14 s on
/// one core (docs/PERFORMANCE.md, compare); time grows faster than the NIC count
/// (32 servers took 51 s against 14 s at 16), so past 256 NICs a comparison leaves
/// the minute.
pub const AUTO_PACKET_MAX_ENDPOINTS: u32 = 256;

fn one_run() -> u32 {
    1
}

fn is_one_run(n: &u32) -> bool {
    *n == 1
}

/// Most runs `repeats` may ask for.
pub const MAX_REPEATS: u32 = 16;

fn default_seed() -> u64 {
    1
}

/// The cluster's shape: a rail-optimized pod (GPU servers × NICs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// GPU servers.
    pub servers: u32,
    /// GPUs per server; each GPU has one NIC on its own rail.
    pub gpus_per_server: u32,
    /// NIC and switch port speed in Gb/s (InfiniBand variants use the matching
    /// generation at 4x: 100 EDR, 200 HDR, 400 NDR, 800 XDR).
    pub nic_gbps: u32,
    /// Switch radix (ports per switch).
    pub radix: u32,
    /// Host–leaf cable length, metres.
    #[serde(default = "default_host_leaf")]
    pub host_leaf_m: f64,
    /// Leaf–spine cable length, metres.
    #[serde(default = "default_leaf_spine")]
    pub leaf_spine_m: f64,
    /// Scalable units: when set, the cluster is a DGX SuperPOD-style rail fabric
    /// (`servers / scalable_units` servers per unit, one leaf per rail per unit,
    /// spines, and a core tier when the units outgrow two tiers); when absent,
    /// one leaf per rail for every server (the single-pod rail fabric).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scalable_units: Option<u32>,
    /// Uplinks per leaf of a scalable-unit fabric (default: one per server port,
    /// non-blocking; fewer oversubscribe the leaves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_uplinks: Option<u32>,
    /// The InfiniBand switches aggregate (SHARP streaming aggregation: Quantum
    /// HDR or newer, with the Aggregation Manager running): InfiniBand variants
    /// may run `all-reduce-sharp`, and the advisor's bandwidth row takes the
    /// InfiniBand side's all-reduce with SHARP (`crate::sharp`). Ethernet
    /// switches have no SHARP.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sharp: bool,
    /// A fabric file to compare instead of a generated one (ibnetdiscover,
    /// ibsim net, HPCC or rdmalab JSON; relative to the scenario file): built
    /// both ways from its nodes and cables (`crate::import`). The numbers above
    /// must then describe it; scalable units do not apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
    /// Which server and rail each adapter of `topology` is (`NODE SERVER RAIL`
    /// per line), where the adapters' NodeDescriptions do not say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// The fabric read from `topology` when the scenario loaded.
    #[serde(skip)]
    pub imported: Option<std::sync::Arc<fabric::Fabric>>,
}

impl Cluster {
    /// A generated single-pod rail cluster: `servers` × `gpus_per_server` GPUs
    /// with `nic_gbps` NICs on radix-`radix` switches, 2 m host and 20 m spine
    /// cables, every optional part (scalable units, oversubscription, SHARP, a
    /// topology file) off; set those fields on the result.
    pub fn rail(servers: u32, gpus_per_server: u32, nic_gbps: u32, radix: u32) -> Cluster {
        Cluster {
            servers,
            gpus_per_server,
            nic_gbps,
            radix,
            host_leaf_m: default_host_leaf(),
            leaf_spine_m: default_leaf_spine(),
            scalable_units: None,
            leaf_uplinks: None,
            sharp: false,
            topology: None,
            mapping: None,
            imported: None,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_host_leaf() -> f64 {
    2.0
}
fn default_leaf_spine() -> f64 {
    20.0
}

/// The intra-node interconnect (NVLink/NVSwitch).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gpu {
    /// Per-GPU NVLink bandwidth in one direction, GB/s (H100 NVLink4: 450).
    pub nvlink_gbytes: f64,
    /// Latency of one NVLink transfer, nanoseconds.
    pub nvlink_latency_ns: u64,
    /// The NVSwitch reduces and multicasts (NVLink SHARP, third-generation
    /// NVSwitch: H100/H200 HGX): the SHARP all-reduce may reduce inside each
    /// server with NVLS (`crate::sharp::InServer`).
    #[serde(skip_serializing_if = "is_false")]
    pub nvls: bool,
}

impl Default for Gpu {
    fn default() -> Self {
        // H100 SXM: 18 NVLink4 links × 25 GB/s per direction = 450 GB/s (NVIDIA H100 datasheet).
        Gpu {
            nvlink_gbytes: 450.0,
            nvlink_latency_ns: 1_000,
            nvls: false,
        }
    }
}

/// What runs on the cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Collectives to run, each at every size.
    pub collectives: Vec<Collective>,
    /// Message sizes in bytes (nccl-tests' size column), ascending.
    pub sizes: Vec<u64>,
    /// Small-message probe during the collective: bytes per probe and probes per NIC.
    #[serde(default)]
    pub probe: Probe,
    /// N:1 incast run after the collectives.
    #[serde(default)]
    pub incast: Option<Incast>,
    /// Background lossy TCP on converged (Ethernet) variants, as a fraction of each
    /// NIC's line rate: every NIC runs one TCP connection (DSCP 0, the lossy class)
    /// whose application writes at this rate during the collectives.
    #[serde(default)]
    pub background_tcp_load: f64,
    /// Congestion control of the background TCP: `newreno` (not ECN-capable; only
    /// drops slow it) or `dctcp` (ECN-capable; the switches' RED/ECN marks it where
    /// the variant has ECN on).
    #[serde(default)]
    pub background_tcp_cc: TcpCc,
}

/// Congestion control of the background TCP, as scenario files name it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpCc {
    /// NewReno (RFC 6582): not ECN-capable; only drops slow it.
    #[default]
    Newreno,
    /// DCTCP (RFC 8257): ECN-capable; backs off in proportion to marked bytes.
    Dctcp,
}

impl TcpCc {
    /// The name as scenario files and reports spell it.
    pub fn name(self) -> &'static str {
        match self {
            TcpCc::Newreno => "newreno",
            TcpCc::Dctcp => "dctcp",
        }
    }
}

/// Small-message latency probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Probe {
    pub bytes: u64,
    /// Gap between probes from one NIC, microseconds.
    pub interval_us: u64,
}

impl Default for Probe {
    fn default() -> Self {
        Probe {
            bytes: 64,
            interval_us: 20,
        }
    }
}

/// N:1 incast.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incast {
    pub senders: u32,
    pub bytes: u64,
}

/// A fabric variant to run the workload on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    /// Short id used in results (`ib`, `roce-tuned`, …).
    pub id: String,
    /// Human label.
    pub label: String,
    pub fabric: VariantFabric,
}

/// The fabric of a variant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum VariantFabric {
    /// InfiniBand routed by rdmalab's SM.
    Infiniband {
        /// Routing engine list (first that succeeds is used).
        #[serde(default = "default_engines")]
        engines: Vec<EngineKind>,
    },
    /// RoCEv2 over routed Ethernet.
    Rocev2 {
        /// PFC on the RDMA priority.
        pfc: bool,
        /// DCQCN profile (`dcqcn-paper`, `nvidia-cx`, `hpcc-ns3`) or none.
        #[serde(default)]
        dcqcn: Option<Profile>,
        /// ECN marking at switches.
        #[serde(default)]
        ecn: bool,
        /// Switch names where the RDMA DSCP is mapped to a lossy class.
        #[serde(default)]
        lossy_hops: Vec<String>,
        /// The NICs' go-back-N retransmit timeout, µs (`None`: the NIC model's
        /// 500 µs). NCCL sets the QPs' local ACK timeout from
        /// `NCCL_IB_TIMEOUT` (4.096 µs · 2^n; n = 20 by default, about 4.3 s;
        /// IBA vol. 1 §9.7.6.1.3); ConnectX's adaptive retransmission starts
        /// lower. It decides what a tail drop costs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retransmit_timeout_us: Option<u64>,
    },
    /// TCP over IPoIB on the InfiniBand fabric.
    Ipoib,
    /// RoCEv1: layer 2 only.
    Rocev1,
}

fn default_engines() -> Vec<EngineKind> {
    vec![EngineKind::Ftree, EngineKind::UpDn]
}

/// A scenario could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    #[error("{path}: field `{field}`: {reason}")]
    Invalid {
        path: String,
        field: String,
        reason: String,
    },
    /// The file is a scenario of the other form than the command runs.
    #[error("{path}: {why}")]
    Form { path: String, why: String },
    /// A packet-run scenario's own error.
    #[error(transparent)]
    Packet(#[from] sim::scenario::ScenarioError),
}

impl ScenarioError {
    /// A model fault inside (never for reading a file): see
    /// `sim::scenario::ScenarioError::is_internal`.
    pub fn is_internal(&self) -> bool {
        matches!(self, ScenarioError::Packet(e) if e.is_internal())
    }
}

/// A scenario file, the one model both `rdmalab compare` and `rdmalab sim run`
/// read. Its top-level sections say its form:
/// - a **comparison** (`[cluster]`, `[workload]` of collectives, `[[variants]]`):
///   the cluster built as every fabric variant, the collectives run on each
///   ([`Scenario`]; `compare` runs it);
/// - a **packet run** (`[fabric]` generator or file, `[routing]`, `[ib]`,
///   `[engine]`, `[workload]` with a traffic `kind`): one InfiniBand fabric
///   brought up by the SM and one traffic pattern simulated packet by packet
///   (`sim::scenario::Scenario`; `sim run` runs it).
///
/// The file is read once, its form found from its sections, then parsed as that
/// form, so an error keeps its line and column. A command given the other form
/// says which command runs it.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioFile {
    /// A comparison of fabric variants.
    Comparison(Scenario),
    /// A packet-level run on one InfiniBand fabric.
    PacketRun(sim::scenario::Scenario),
}

impl ScenarioFile {
    /// Read a scenario file of either form.
    pub fn load(path: &Path) -> Result<ScenarioFile, ScenarioError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: p.clone(),
            source,
        })?;
        ScenarioFile::parse(&text, path)
    }

    /// Parse scenario text; `path` names it and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<ScenarioFile, ScenarioError> {
        let p = path.display().to_string();
        let table: toml::Table = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: p.clone(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let comparison = table.contains_key("cluster") || table.contains_key("variants");
        let packet = table.contains_key("fabric");
        match (comparison, packet) {
            (true, false) => Ok(ScenarioFile::Comparison(Scenario::from_toml(text, &p)?)),
            (false, true) => Ok(ScenarioFile::PacketRun(sim::scenario::Scenario::parse(text, path)?)),
            (true, true) => Err(ScenarioError::Form {
                path: p,
                why: "has both [cluster]/[[variants]] (a comparison) and [fabric] (a packet run); give one".into(),
            }),
            (false, false) => Err(ScenarioError::Form {
                path: p,
                why: "has neither [cluster] (a comparison of fabric variants, see `rdmalab scenario explain`) nor [fabric] (a packet run: a generator or topology file)".into(),
            }),
        }
    }

    /// The comparison, or an error saying the file is a packet run.
    pub fn comparison(self, path: &Path) -> Result<Scenario, ScenarioError> {
        match self {
            ScenarioFile::Comparison(s) => Ok(s),
            ScenarioFile::PacketRun(_) => Err(ScenarioError::Form {
                path: path.display().to_string(),
                why: "is a packet-run scenario ([fabric] and a traffic [workload]): run it with `rdmalab sim run`"
                    .into(),
            }),
        }
    }

    /// The packet run, or an error saying the file is a comparison.
    pub fn packet_run(self, path: &Path) -> Result<sim::scenario::Scenario, ScenarioError> {
        match self {
            ScenarioFile::PacketRun(s) => Ok(s),
            ScenarioFile::Comparison(_) => Err(ScenarioError::Form {
                path: path.display().to_string(),
                why: "is a comparison scenario ([cluster] and [[variants]]): run it with `rdmalab compare`".into(),
            }),
        }
    }
}

impl Scenario {
    /// The built-in default: 16 servers × 8 GPUs, one 400G NIC per GPU (128 endpoints)
    /// on a two-tier rail-optimized fabric, with every fabric variant.
    pub fn default_rail() -> Scenario {
        Scenario {
            name: "rail-16x8-400g".into(),
            seed: 1,
            repeats: 3,
            cluster: Cluster {
                servers: 16,
                gpus_per_server: 8,
                nic_gbps: 400,
                radix: 64,
                host_leaf_m: 2.0,
                leaf_spine_m: 20.0,
                scalable_units: None,
                leaf_uplinks: None,
                sharp: false,
                topology: None,
                mapping: None,
                imported: None,
            },
            gpu: Gpu::default(),
            workload: Workload {
                collectives: Collective::ALL.to_vec(),
                // 1 MiB to 64 MiB by ×4: the ring reaches the link-rate bound at 64 MiB, and
                // the whole default comparison stays within two minutes on two cores
                sizes: (0..8)
                    .map(|i| (1u64 << 20) << (2 * i))
                    .filter(|&s| s <= 64 << 20)
                    .collect(),
                probe: Probe::default(),
                incast: Some(Incast {
                    senders: 16,
                    bytes: 4 << 20,
                }),
                background_tcp_load: 0.0,
                background_tcp_cc: TcpCc::Newreno,
            },
            variants: vec![
                Variant {
                    id: "ib".into(),
                    label: "InfiniBand NDR (SM, ftree)".into(),
                    fabric: VariantFabric::Infiniband {
                        engines: default_engines(),
                    },
                },
                Variant {
                    id: "roce-tuned".into(),
                    label: "RoCEv2 tuned (PFC + DCQCN)".into(),
                    fabric: VariantFabric::Rocev2 {
                        pfc: true,
                        dcqcn: Some(Profile::NvidiaCx),
                        ecn: true,
                        lossy_hops: vec![],
                        retransmit_timeout_us: None,
                    },
                },
                Variant {
                    id: "roce-pfc-only".into(),
                    label: "RoCEv2 PFC only".into(),
                    fabric: VariantFabric::Rocev2 {
                        pfc: true,
                        dcqcn: None,
                        ecn: false,
                        lossy_hops: vec![],
                        retransmit_timeout_us: None,
                    },
                },
                Variant {
                    id: "roce-misconfig".into(),
                    label: "RoCEv2 misconfigured (RDMA DSCP lossy on one hop)".into(),
                    fabric: VariantFabric::Rocev2 {
                        pfc: true,
                        dcqcn: Some(Profile::NvidiaCx),
                        ecn: true,
                        lossy_hops: vec!["rail0".into()],
                        retransmit_timeout_us: None,
                    },
                },
                Variant {
                    id: "roce-lossy".into(),
                    label: "RoCEv2 lossy (no PFC)".into(),
                    fabric: VariantFabric::Rocev2 {
                        pfc: false,
                        dcqcn: Some(Profile::NvidiaCx),
                        ecn: true,
                        lossy_hops: vec![],
                        retransmit_timeout_us: None,
                    },
                },
                Variant {
                    id: "ipoib".into(),
                    label: "IPoIB (TCP over InfiniBand)".into(),
                    fabric: VariantFabric::Ipoib,
                },
                Variant {
                    id: "rocev1".into(),
                    label: "RoCEv1 (layer 2 only)".into(),
                    fabric: VariantFabric::Rocev1,
                },
            ],
            advisor: Answers::default(),
            prices: PriceTable::default(),
            engine: Engine::Packet,
            training: None,
        }
    }

    /// Parse TOML; `path` names the source in errors.
    pub fn from_toml(text: &str, path: &str) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            path: path.into(),
            message: e.to_string().trim_end().to_string(),
        })?;
        if let Some(t) = s.cluster.topology.clone() {
            let base = Path::new(path).parent().filter(|b| !b.as_os_str().is_empty());
            let f =
                crate::import::read(base, &t, s.cluster.mapping.as_deref()).map_err(|e| ScenarioError::Invalid {
                    path: path.into(),
                    field: e.field.into(),
                    reason: e.reason,
                })?;
            s.cluster.imported = Some(f);
        }
        s.validate(path)?;
        Ok(s)
    }

    /// Read and parse a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: p.clone(),
            source,
        })?;
        Scenario::from_toml(&text, &p)
    }

    /// As TOML (what `rdmalab scenario show` prints).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# cannot render scenario: {e}\n"))
    }

    /// Check the training jobs against the cluster: each job on its own (a
    /// preset that exists, parallel sizes that divide its GPUs, TP inside a
    /// server), and all of them together within the cluster's servers.
    fn validate_training(&self, t: &Training, path: &str) -> Result<(), ScenarioError> {
        let bad = |field: String, reason: String| {
            Err(ScenarioError::Invalid {
                path: path.into(),
                field,
                reason,
            })
        };
        if t.jobs.is_empty() {
            return bad(
                "training.jobs".into(),
                "is empty; give at least one [[training.jobs]]".into(),
            );
        }
        for (field, v) in [
            ("training.qps_per_connection", t.qps_per_connection),
            ("training.more_qps", t.more_qps),
        ] {
            if !(1..=64).contains(&v) {
                return bad(field.into(), format!("{v} is outside 1..=64"));
            }
        }
        if t.packet_cap_bytes < 4096 {
            return bad(
                "training.packet_cap_bytes".into(),
                format!("{} bytes; expected at least one 4096-byte packet", t.packet_cap_bytes),
            );
        }
        if let Some(e) = t.efficiency
            && !(e > 0.0 && e <= 1.0)
        {
            return bad("training.efficiency".into(), format!("{e} is not a fraction in (0, 1]"));
        }
        let g = self.cluster.gpus_per_server;
        let gpus = self.cluster.servers * g;
        let mut servers = 0;
        for (i, j) in t.jobs.iter().enumerate() {
            let at = |f: &str| format!("training.jobs[{i}].{f}");
            if t.jobs[..i].iter().any(|o| o.name == j.name) {
                return bad(at("name"), format!("{:?} names an earlier job too", j.name));
            }
            let job = match j.check(gpus) {
                Ok(job) => job,
                Err(e) => return bad(at(&e.field()), e.to_string()),
            };
            let tp = job.parallel.tp;
            if tp > g || !g.is_multiple_of(tp) {
                return bad(
                    at("parallel.tp"),
                    format!(
                        "job {}: tp {tp} does not fit a server of {g} GPUs (cluster.gpus_per_server): a TP group must sit in one server's NVLink domain",
                        j.name
                    ),
                );
            }
            servers += j.gpus.div_ceil(g);
        }
        if servers > self.cluster.servers {
            return bad(
                "training.jobs".into(),
                format!(
                    "the jobs need {servers} servers together ({g} GPUs each); the cluster has {}",
                    self.cluster.servers
                ),
            );
        }
        Ok(())
    }

    /// Check values serde cannot.
    pub fn validate(&self, path: &str) -> Result<(), ScenarioError> {
        let bad = |field: &str, reason: String| {
            Err(ScenarioError::Invalid {
                path: path.into(),
                field: field.into(),
                reason,
            })
        };
        for (i, v) in self.variants.iter().enumerate() {
            if let VariantFabric::Rocev2 {
                retransmit_timeout_us: Some(us),
                ..
            } = &v.fabric
                && !(1..=10_000_000).contains(us)
            {
                return bad(
                    &format!("variants[{i}].fabric.retransmit_timeout_us"),
                    format!("{us} µs: expected 1 µs to 10 s (NCCL_IB_TIMEOUT 20 gives about 4.3 s)"),
                );
            }
        }
        if let Some(p) = self.advisor.misconfig_risk
            && !(0.0..=1.0).contains(&p)
        {
            return bad("advisor.misconfig_risk", format!("{p} is not a probability (0 to 1)"));
        }
        if self.repeats == 0 || self.repeats > MAX_REPEATS {
            return bad("repeats", format!("{} is outside 1..={MAX_REPEATS}", self.repeats));
        }
        let c = &self.cluster;
        if c.mapping.is_some() && c.topology.is_none() {
            return bad(
                "cluster.mapping",
                "maps the adapters of cluster.topology, which is not given".into(),
            );
        }
        if let Some(f) = &c.imported {
            let (servers, per, gbps, radix) = crate::import::shape(f);
            let topo = c.topology.as_deref().unwrap_or("the topology");
            for (field, written, found) in [
                ("cluster.servers", c.servers, servers),
                ("cluster.gpus_per_server", c.gpus_per_server, per),
                ("cluster.nic_gbps", c.nic_gbps, gbps),
            ] {
                if written != found {
                    return bad(field, format!("{written}, but {topo} has {found}: write {found}"));
                }
            }
            if c.radix < radix {
                return bad(
                    "cluster.radix",
                    format!(
                        "{}, but {topo}'s largest switch has {radix} ports: write at least {radix}",
                        c.radix
                    ),
                );
            }
            if c.scalable_units.is_some() || c.leaf_uplinks.is_some() {
                return bad(
                    "cluster.scalable_units",
                    format!("shapes a generated fabric; {topo} is used as it is"),
                );
            }
        }
        if c.servers < 2 {
            return bad(
                "cluster.servers",
                format!("{} servers; the comparison needs at least 2", c.servers),
            );
        }
        if c.gpus_per_server == 0 || c.gpus_per_server > 16 {
            return bad(
                "cluster.gpus_per_server",
                format!("{} is outside 1..=16", c.gpus_per_server),
            );
        }
        if ![100, 200, 400, 800].contains(&c.nic_gbps) {
            return bad(
                "cluster.nic_gbps",
                format!("{} Gb/s; expected 100, 200, 400 or 800", c.nic_gbps),
            );
        }
        if c.radix < 4 || c.radix > 255 {
            return bad("cluster.radix", format!("{} is outside 4..=255", c.radix));
        }
        match (c.scalable_units, c.leaf_uplinks) {
            (Some(0), _) => return bad("cluster.scalable_units", "0 units; expected at least 1".into()),
            (Some(u), _) if !c.servers.is_multiple_of(u) => {
                return bad(
                    "cluster.scalable_units",
                    format!("{} servers do not divide into {u} equal units", c.servers),
                );
            }
            (None, Some(_)) => {
                return bad(
                    "cluster.leaf_uplinks",
                    "applies to scalable-unit fabrics; set cluster.scalable_units too".into(),
                );
            }
            (_, Some(0)) => return bad("cluster.leaf_uplinks", "0 uplinks leave the leaves unconnected".into()),
            _ => {}
        }
        for (f, v) in [
            ("cluster.host_leaf_m", c.host_leaf_m),
            ("cluster.leaf_spine_m", c.leaf_spine_m),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, format!("{v} is not a length in metres"));
            }
        }
        if !(self.gpu.nvlink_gbytes.is_finite() && self.gpu.nvlink_gbytes > 0.0) {
            return bad(
                "gpu.nvlink_gbytes",
                format!("{} is not a positive bandwidth", self.gpu.nvlink_gbytes),
            );
        }
        if let Some(t) = &self.training {
            self.validate_training(t, path)?;
        }
        let w = &self.workload;
        if w.collectives.is_empty() {
            return bad("workload.collectives", "is empty".into());
        }
        if w.sizes.is_empty() {
            return bad("workload.sizes", "is empty".into());
        }
        if w.sizes.windows(2).any(|p| p[0] >= p[1]) {
            return bad("workload.sizes", "must be strictly ascending".into());
        }
        if !(0.0..1.0).contains(&w.background_tcp_load) {
            return bad(
                "workload.background_tcp_load",
                format!("{} is outside [0, 1)", w.background_tcp_load),
            );
        }
        if let Some(i) = &w.incast
            && (i.senders < 1 || i.bytes == 0)
        {
            return bad(
                "workload.incast",
                "needs at least one sender and a non-zero size".into(),
            );
        }
        if self.variants.is_empty() {
            return bad("variants", "no variant to run".into());
        }
        let mut ids = std::collections::BTreeSet::new();
        for (i, v) in self.variants.iter().enumerate() {
            if !ids.insert(v.id.as_str()) {
                return bad(&format!("variants[{i}].id"), format!("{:?} is used twice", v.id));
            }
            if let VariantFabric::Infiniband { engines } = &v.fabric
                && engines.is_empty()
            {
                return bad(
                    &format!("variants[{i}].fabric.engines"),
                    "is empty; list at least one of minhop, updn, ftree, dfsssp".into(),
                );
            }
        }
        // in-network reduction: the hardware, a fabric that has it, an engine that runs it
        let has_ib = self
            .variants
            .iter()
            .any(|v| matches!(v.fabric, VariantFabric::Infiniband { .. }));
        if c.sharp && !has_ib {
            return bad(
                "cluster.sharp",
                "no InfiniBand variant to use it: SHARP aggregates in InfiniBand switches (Quantum HDR or newer); Ethernet switches have no in-network reduction".into(),
            );
        }
        if w.collectives.contains(&Collective::AllReduceSharp) {
            if !c.sharp {
                return bad(
                    "workload.collectives",
                    "all-reduce-sharp needs switches that aggregate: set cluster.sharp = true if the InfiniBand switches run SHARP (Quantum HDR or newer, the Aggregation Manager up)".into(),
                );
            }
            let nics = c.servers * c.gpus_per_server;
            let flow = match self.engine {
                Engine::Flow => true,
                Engine::Auto => nics > AUTO_PACKET_MAX_ENDPOINTS,
                Engine::Packet => false,
            };
            if !flow {
                return bad(
                    "engine",
                    format!(
                        "all-reduce-sharp runs at flow level only (the switches reduce, so it has no packet-level schedule); {nics} NICs under engine = \"{}\" run packet by packet: set engine = \"flow\"",
                        if self.engine == Engine::Auto { "auto" } else { "packet" }
                    ),
                );
            }
        }
        // switch names resolved against the cluster as it will be built, once, here
        let names: Vec<(usize, &String)> = self
            .variants
            .iter()
            .enumerate()
            .flat_map(|(i, v)| match &v.fabric {
                VariantFabric::Rocev2 { lossy_hops, .. } => lossy_hops.iter().map(|h| (i, h)).collect(),
                _ => Vec::new(),
            })
            .collect();
        if !names.is_empty() {
            let f = crate::cluster::build(&self.cluster, crate::tco::Tech::Ethernet).map_err(|e| {
                ScenarioError::Invalid {
                    path: path.into(),
                    field: "cluster".into(),
                    reason: e.to_string(),
                }
            })?;
            for (i, h) in names {
                if crate::cluster::switch_named(&f, h).is_none() {
                    let leaves: Vec<&str> = f
                        .nodes
                        .iter()
                        .filter(|n| n.kind == fabric::NodeKind::Switch)
                        .map(|n| n.name.as_str())
                        .collect();
                    return bad(
                        &format!("variants[{i}].fabric.lossy_hops"),
                        format!(
                            "{h:?} is not a switch of this cluster (its switches: {})",
                            leaves.join(", ")
                        ),
                    );
                }
            }
        }
        Ok(())
    }
}

mod default_training;
mod fields;
pub use fields::{FIELDS, PACKET_FIELDS};

#[cfg(test)]
mod tests;
