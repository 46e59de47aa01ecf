//! The scenario file: one TOML document naming the fabric, the routing engines,
//! the model parameters and the workload.
//!
//! ```toml
//! name = "ft432-permutation-ib"
//! seed = 1
//!
//! [fabric]
//! generator = "fat-tree3"     # or "leaf-spine", or "file" with `path = "x.net"`
//! radix = 12
//! rate = "4xEDR"
//!
//! [routing]
//! engines = ["ftree", "minhop"]   # the first that succeeds is used
//!
//! [ib]                        # any field of IbConfig
//! mtu = 4096
//!
//! [workload]
//! kind = "htsim"              # htsim, permutation, all-to-all, incast,
//! file = "perm_432.cm"        # write-bw, send-lat, read-lat
//! end_us = 10000
//! ```
//!
//! Paths are relative to the scenario file. Building the fabric and running the
//! SM are the caller's job (the CLI does it with `fabric` and `sm`); this module
//! holds the format and runs the workload on the tables it is given.

use std::path::{Path, PathBuf};

use fabric::{Fabric, LinkRate, NodeId, NodeKind};
use serde::{Deserialize, Serialize};
use sm::RoutingTables;

use crate::engine::Time;
use crate::ib::config::{EngineConfig, IbConfig};
use crate::ib::deadlock::DeadlockReport;
use crate::ib::metrics::{PortReport, RunSummary, Series};
use crate::ib::sim::Sim;
use crate::ib::workload::{self, BwReport, LatReport, Matrix, MatrixReport, WorkloadError, perftest};

/// A scenario that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("read {path}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The TOML is malformed or does not match the format (toml's message names the line).
    #[error("parse scenario {path}: {message}")]
    Toml { path: PathBuf, message: String },
    /// A field has a value the format does not accept.
    #[error("scenario {path}: field `{field}`: expected {expected}, got {got}")]
    Field {
        path: PathBuf,
        field: &'static str,
        expected: String,
        got: String,
    },
    /// The connection matrix is malformed.
    #[error(transparent)]
    Matrix(#[from] workload::CmError),
    /// The simulator rejected the setup.
    #[error(transparent)]
    Sim(#[from] crate::SimError),
    /// The workload failed (a deadlock is reported in the outcome instead).
    #[error(transparent)]
    Workload(WorkloadError),
    /// The fabric could not be generated from the scenario's parameters.
    #[error("generate the fabric of {path}")]
    Generate {
        path: PathBuf,
        #[source]
        source: fabric::GenError,
    },
    /// The topology file could not be read.
    #[error("read topology {path}")]
    Topology {
        path: PathBuf,
        #[source]
        source: Box<fabric::format::ReadError>,
    },
    /// The SM could not bring the fabric up.
    #[error("route {path}")]
    Route {
        path: PathBuf,
        #[source]
        source: sm::run::RunError,
    },
}

impl ScenarioError {
    /// A fault of the model, not of the scenario: the simulator's ledger did not
    /// balance, during the setup or the workload.
    pub fn is_internal(&self) -> bool {
        match self {
            ScenarioError::Sim(e) => e.is_internal(),
            ScenarioError::Workload(e) => e.is_internal(),
            ScenarioError::Io { .. }
            | ScenarioError::Toml { .. }
            | ScenarioError::Field { .. }
            | ScenarioError::Matrix(_)
            | ScenarioError::Generate { .. }
            | ScenarioError::Topology { .. }
            | ScenarioError::Route { .. } => false,
        }
    }
}

/// How the fabric is made.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "generator", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FabricSpec {
    /// A 3-tier k-ary fat tree (`fabric::fat_tree3`).
    FatTree3 {
        radix: u32,
        #[serde(default)]
        pods: Option<u32>,
        #[serde(default)]
        hosts_per_leaf: Option<u32>,
        /// "4xEDR", "4xNDR", …
        rate: String,
        #[serde(default)]
        cable_m: Option<CableSpec>,
    },
    /// A 2-tier leaf–spine (`fabric::leaf_spine`).
    LeafSpine {
        radix: u32,
        #[serde(default)]
        hosts_per_leaf: Option<u32>,
        #[serde(default)]
        spines: Option<u32>,
        #[serde(default)]
        leaves: Option<u32>,
        rate: String,
        #[serde(default)]
        cable_m: Option<CableSpec>,
    },
    /// A topology file (ibnetdiscover, ibsim net, HPCC or rdmalab JSON).
    File { path: PathBuf },
}

/// Cable lengths per tier, metres.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CableSpec {
    pub host_leaf: f64,
    pub leaf_spine: f64,
    #[serde(default)]
    pub spine_core: f64,
}

/// Which SM routing engines to run.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// Engines, tried in order (`minhop`, `updn`, `ftree`, `dfsssp`).
    pub engines: Vec<sm::routing::EngineKind>,
    /// LID mask control.
    #[serde(default)]
    pub lmc: u8,
}

impl Default for RoutingSpec {
    fn default() -> Self {
        RoutingSpec {
            engines: vec![sm::routing::EngineKind::MinHop],
            lmc: 0,
        }
    }
}

/// What traffic to run.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// An htsim connection matrix; host i is the fabric's i-th CA.
    Htsim { file: PathBuf, end_us: u64 },
    /// A random permutation (from the seed); `bytes = 0` is endless.
    Permutation { bytes: u64, end_us: u64 },
    /// Every host to every other host.
    AllToAll { bytes: u64, end_us: u64 },
    /// `senders` hosts to host 0.
    Incast { senders: u32, bytes: u64, end_us: u64 },
    /// `ib_write_bw` between hosts `a` and `b` (node names; default the first two CAs).
    WriteBw {
        size: u64,
        iters: u64,
        #[serde(default = "default_tx_depth")]
        tx_depth: u64,
        #[serde(default)]
        a: Option<String>,
        #[serde(default)]
        b: Option<String>,
    },
    /// `ib_send_lat`.
    SendLat {
        size: u64,
        iters: u64,
        #[serde(default)]
        a: Option<String>,
        #[serde(default)]
        b: Option<String>,
    },
    /// `ib_read_lat`.
    ReadLat {
        size: u64,
        iters: u64,
        #[serde(default)]
        a: Option<String>,
        #[serde(default)]
        b: Option<String>,
    },
}

fn default_tx_depth() -> u64 {
    128
}

/// A scenario.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub name: Option<String>,
    /// Overrides `engine.seed`.
    #[serde(default)]
    pub seed: Option<u64>,
    pub fabric: FabricSpec,
    #[serde(default)]
    pub routing: RoutingSpec,
    #[serde(default)]
    pub ib: IbConfig,
    #[serde(default)]
    pub engine: EngineConfig,
    pub workload: WorkloadSpec,
    /// The file it came from (paths inside are relative to its directory).
    #[serde(skip)]
    pub path: PathBuf,
}

impl Scenario {
    /// Read and check a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.into(),
            source,
        })?;
        Scenario::parse(&text, path)
    }

    /// Parse scenario text; `path` names it and anchors relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
        let mut s: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Toml {
            path: path.into(),
            message: e.to_string(),
        })?;
        s.path = path.into();
        if let Some(seed) = s.seed {
            s.engine.seed = seed;
        }
        s.ib.validate().map_err(|e| match e {
            crate::SimError::Config { field, expected, got } => ScenarioError::Field {
                path: path.into(),
                field,
                expected: expected.into(),
                got,
            },
            other => ScenarioError::Sim(other),
        })?;
        match &s.fabric {
            FabricSpec::FatTree3 { rate, .. } | FabricSpec::LeafSpine { rate, .. } => {
                s.link_rate_of(rate)?;
            }
            FabricSpec::File { .. } => {}
        }
        if s.routing.engines.is_empty() {
            return Err(ScenarioError::Field {
                path: path.into(),
                field: "routing.engines",
                expected: "at least one engine".into(),
                got: "[]".into(),
            });
        }
        Ok(s)
    }

    /// The scenario's name (its file stem if it gives none).
    pub fn display_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            self.path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }

    /// A path from the file, resolved against the scenario's directory.
    pub fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.into()
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(p)
        }
    }

    /// Parse a rate field.
    pub fn link_rate_of(&self, rate: &str) -> Result<LinkRate, ScenarioError> {
        rate.parse::<LinkRate>().map_err(|e| ScenarioError::Field {
            path: self.path.clone(),
            field: "fabric.rate",
            expected: e,
            got: rate.into(),
        })
    }

    /// Build the fabric the scenario names: generated, or read from its file.
    pub fn build_fabric(&self) -> Result<fabric::Fabric, ScenarioError> {
        let cabling = |c: &Option<CableSpec>| {
            c.map_or_else(fabric::Cabling::default, |c| fabric::Cabling {
                host_leaf_m: c.host_leaf,
                leaf_spine_m: c.leaf_spine,
                spine_core_m: c.spine_core,
            })
        };
        let generated = |r: Result<fabric::Fabric, fabric::GenError>| {
            r.map_err(|source| ScenarioError::Generate {
                path: self.path.clone(),
                source,
            })
        };
        match &self.fabric {
            FabricSpec::FatTree3 {
                radix,
                pods,
                hosts_per_leaf,
                rate,
                cable_m,
            } => generated(fabric::fat_tree3(&fabric::FatTree3Params {
                radix: *radix,
                pods: *pods,
                hosts_per_leaf: *hosts_per_leaf,
                rate: self.link_rate_of(rate)?,
                cabling: cabling(cable_m),
            })),
            FabricSpec::LeafSpine {
                radix,
                hosts_per_leaf,
                spines,
                leaves,
                rate,
                cable_m,
            } => generated(fabric::leaf_spine(&fabric::LeafSpineParams {
                radix: *radix,
                hosts_per_leaf: *hosts_per_leaf,
                spines: *spines,
                leaves: *leaves,
                rate: self.link_rate_of(rate)?,
                cabling: cabling(cable_m),
                ..fabric::LeafSpineParams::default()
            })),
            FabricSpec::File { path } => {
                let p = self.resolve(path);
                fabric::format::read_file(&p, None, &fabric::format::ReadOptions::default())
                    .map(|(f, _)| f)
                    .map_err(|source| ScenarioError::Topology {
                        path: p,
                        source: Box::new(source),
                    })
            }
        }
    }

    /// Bring `f` up with the SM as the scenario's `[routing]` says (validation
    /// off: `sm run` and `diag` are where tables are checked).
    pub fn route(&self, f: &fabric::Fabric) -> Result<(sm::RoutingTables, sm::run::RunReport), ScenarioError> {
        let ro = sm::run::RunOptions {
            engines: self.routing.engines.clone(),
            lmc: self.routing.lmc,
            validate: false,
            ..sm::run::RunOptions::default()
        };
        sm::run::run(f, &ro).map_err(|source| ScenarioError::Route {
            path: self.path.clone(),
            source,
        })
    }

    /// Simulated-time limit of the workload.
    pub fn end(&self) -> Option<Time> {
        match &self.workload {
            WorkloadSpec::Htsim { end_us, .. }
            | WorkloadSpec::Permutation { end_us, .. }
            | WorkloadSpec::AllToAll { end_us, .. }
            | WorkloadSpec::Incast { end_us, .. } => Some(Time::us(*end_us)),
            _ => None,
        }
    }
}

/// What a scenario run produced.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub scenario: String,
    pub summary: RunSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matrix: Option<MatrixReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<BwReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatReport>,
    pub deadlock: Option<DeadlockReport>,
    pub ports: Vec<PortReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<Series>,
}

fn host_by_name(
    sc: &Scenario,
    f: &Fabric,
    name: &Option<String>,
    default: NodeId,
    field: &'static str,
) -> Result<NodeId, ScenarioError> {
    match name {
        None => Ok(default),
        Some(n) => match f.by_name(n) {
            Some(id) if f.node(id).kind == NodeKind::Ca => Ok(id),
            _ => Err(ScenarioError::Field {
                path: sc.path.clone(),
                field,
                expected: "the name of a channel adapter in the fabric".into(),
                got: n.clone(),
            }),
        },
    }
}

/// The scenario's traffic as a connection matrix over `hosts` hosts (htsim file,
/// seeded permutation, all-to-all or incast), or `None` for a perftest workload.
pub fn traffic_matrix(sc: &Scenario, hosts: u32) -> Result<Option<Matrix>, ScenarioError> {
    let endless = |b: u64| if b == 0 { u64::MAX } else { b };
    Ok(match &sc.workload {
        WorkloadSpec::Htsim { file, .. } => {
            let p = sc.resolve(file);
            let text = std::fs::read_to_string(&p).map_err(|source| ScenarioError::Io {
                path: p.clone(),
                source,
            })?;
            Some(workload::parse_connection_matrix(&text, &p.display().to_string())?)
        }
        WorkloadSpec::Permutation { bytes, .. } => {
            let mut rng = rand_pcg::Pcg64Mcg::new(u128::from(sc.engine.seed) | 1 << 100);
            Some(Matrix::permutation(hosts, endless(*bytes), &mut rng))
        }
        WorkloadSpec::AllToAll { bytes, .. } => Some(Matrix::all_to_all(hosts, endless(*bytes))),
        WorkloadSpec::Incast { senders, bytes, .. } => Some(Matrix::incast(hosts, *senders, endless(*bytes))),
        _ => None,
    })
}

/// Run the scenario's workload on `fabric` with the SM's `tables`. A deadlock is
/// an outcome (reported, not an error). `capture` records one port's packets.
pub fn run(
    sc: &Scenario,
    fabric: &Fabric,
    tables: &RoutingTables,
    capture: Option<(NodeId, u8)>,
    progress: &mut dyn FnMut(Time),
) -> Result<(Outcome, Sim), ScenarioError> {
    let mut sim = Sim::new(fabric, tables, sc.ib.clone(), sc.engine.clone())?;
    if let Some((n, p)) = capture {
        sim.capture_port(n, p)?;
    }
    let hosts: Vec<NodeId> = fabric.nodes_of(NodeKind::Ca).collect();
    let need2 = || -> Result<(NodeId, NodeId), ScenarioError> {
        if hosts.len() < 2 {
            return Err(ScenarioError::Field {
                path: sc.path.clone(),
                field: "fabric",
                expected: "at least two channel adapters".into(),
                got: hosts.len().to_string(),
            });
        }
        Ok((hosts[0], hosts[1]))
    };
    let mut out = Outcome {
        scenario: sc.display_name(),
        summary: sim.summary(),
        matrix: None,
        bandwidth: None,
        latency: None,
        deadlock: None,
        ports: Vec::new(),
        series: None,
    };
    let matrix = traffic_matrix(sc, hosts.len() as u32)?;
    let ab = match &sc.workload {
        WorkloadSpec::WriteBw { a, b, .. }
        | WorkloadSpec::SendLat { a, b, .. }
        | WorkloadSpec::ReadLat { a, b, .. } => {
            let (da, db) = need2()?;
            Some((
                host_by_name(sc, fabric, a, da, "workload.a")?,
                host_by_name(sc, fabric, b, db, "workload.b")?,
            ))
        }
        _ => None,
    };
    let res: Result<(), WorkloadError> = (|| {
        if let Some(m) = &matrix {
            if m.hosts as usize > hosts.len() {
                return Err(WorkloadError::NoHost {
                    flow: 0,
                    host: m.hosts - 1,
                    hosts: hosts.len(),
                });
            }
            out.matrix = Some(workload::run_matrix(
                &mut sim,
                &hosts,
                m,
                sc.end().unwrap_or(Time::NEVER),
                progress,
            )?);
            return Ok(());
        }
        match &sc.workload {
            WorkloadSpec::WriteBw {
                size, iters, tx_depth, ..
            } => {
                let (a, b) = ab.expect("resolved above");
                out.bandwidth = Some(perftest::write_bw(&mut sim, a, b, *size, *iters, *tx_depth)?);
            }
            WorkloadSpec::SendLat { size, iters, .. } | WorkloadSpec::ReadLat { size, iters, .. } => {
                let (a, b) = ab.expect("resolved above");
                out.latency = Some(if matches!(sc.workload, WorkloadSpec::SendLat { .. }) {
                    perftest::send_lat(&mut sim, a, b, *size, *iters)?
                } else {
                    perftest::read_lat(&mut sim, a, b, *size, *iters)?
                });
            }
            _ => unreachable!("matrix workloads handled above"),
        }
        Ok(())
    })();
    match res {
        Ok(()) => {}
        Err(WorkloadError::Deadlock(d)) => out.deadlock = Some(d),
        Err(e) => return Err(ScenarioError::Workload(e)),
    }
    sim.finish();
    out.summary = sim.summary();
    out.ports = sim.port_reports();
    if sc.engine.sample_interval_ps > 0 {
        out.series = Some(sim.series());
    }
    Ok((out, sim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_with_field_names() {
        let ok = "[fabric]\ngenerator = \"fat-tree3\"\nradix = 4\nrate = \"4xEDR\"\n[workload]\nkind = \"permutation\"\nbytes = 0\nend_us = 10\n";
        let s = Scenario::parse(ok, Path::new("x.toml")).unwrap();
        assert_eq!(s.routing.engines, vec![sm::routing::EngineKind::MinHop]);
        let bad_rate = ok.replace("4xEDR", "4xQQQ");
        let e = Scenario::parse(&bad_rate, Path::new("x.toml")).unwrap_err();
        assert!(e.to_string().contains("fabric.rate"), "{e}");
        let unknown = ok.replace("radix = 4", "radix = 4\nradiks = 5");
        let e = Scenario::parse(&unknown, Path::new("x.toml")).unwrap_err();
        assert!(e.to_string().contains("radiks"), "{e}");
        let bad_mtu = format!("{ok}[ib]\nmtu = 3000\n");
        let e = Scenario::parse(&bad_mtu, Path::new("x.toml")).unwrap_err();
        assert!(e.to_string().contains("`mtu`"), "{e}");
        // An unknown engine is refused at load, with the line it is on.
        let bad_engine = format!("{ok}[routing]\nengines = [\"ftree\", \"fatree\"]\n");
        let e = Scenario::parse(&bad_engine, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.toml") && e.contains("line 10") && e.contains("unknown variant `fatree`"),
            "{e}"
        );
    }
}
