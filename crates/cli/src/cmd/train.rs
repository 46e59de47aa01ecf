//! `rdmalab train`: one iteration of a training job (model × parallelism × GPU)
//! on a scalable-unit InfiniBand cluster routed by our SM, every network
//! operation priced on the fabric (flow engine, or packet by packet) beside the
//! contention-free network.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lab::train::{Pricing, TrainCluster, TrainError};

use super::CliError;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum EngineArg {
    /// Max-min fair flows on the SM's routes (seconds at 32k GPUs).
    Flow,
    /// The fabric's packet simulator (minutes beyond a few hundred GPUs).
    Packet,
    /// As `compare` prices RoCEv2: operations whose messages are at most 16 MiB
    /// packet by packet at full size, larger ones as flows times the packet
    /// level's slowdown on messages scaled to 512 KiB.
    Hybrid,
}

/// `--fabric`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FabricArg {
    /// InfiniBand NDR-class, the SM's ftree routes.
    Infiniband,
    /// RoCEv2, ECMP per QP, PFC + ECN + DCQCN (compare's tuned variant).
    Rocev2,
    /// RoCEv2 with PFC only.
    Rocev2PfcOnly,
    /// RoCEv2 without PFC (lossy; --engine packet).
    Rocev2Lossy,
}

/// `--placement`'s values.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PlacementArg {
    /// The first servers, unit by unit.
    Packed,
    /// Round robin over the scalable units.
    Scattered,
    /// The gaps earlier jobs leave (drawn from --seed).
    Fragmented,
}

/// One training iteration of a job on a cluster: compute, pipeline bubble and
/// every network operation priced on the fabric.
#[derive(Debug, Args)]
pub struct TrainCmd {
    /// The job: model, GPU, GPUs, sequence length, global batch, [parallel]
    /// (docs/TRAINING.md; examples/train/); or a SimAI/AICB workload file (its
    /// first word a parallelism policy such as HYBRID_TRANSFORMER_FWD_IN_BCKWD).
    job: PathBuf,
    /// More jobs on the same cluster at once (model jobs only): they take their
    /// servers in turn by --placement, and each job's operations are priced
    /// beside the others' busiest one (flow level).
    #[arg(value_name = "MORE_JOBS")]
    more: Vec<PathBuf>,
    /// Scalable units of the cluster (default: as few as hold the job).
    #[arg(long)]
    sus: Option<u32>,
    /// Servers per scalable unit.
    #[arg(long, default_value_t = 32)]
    servers_per_su: u32,
    /// Uplinks per leaf (default: non-blocking, one per server).
    #[arg(long)]
    leaf_uplinks: Option<u32>,
    /// NIC speed, Gb/s (100, 200, 400, 800): over all its ports, each port
    /// carrying its share (400 on two planes: two 200G ports).
    #[arg(long, default_value_t = 400)]
    nic_gbps: u32,
    /// Independent planes, a port of every NIC on each (2: Alibaba HPN's dual
    /// plane); each plane is routed on its own and carries its share of
    /// every message.
    #[arg(long, default_value_t = 1)]
    planes: u32,
    /// Two ToRs per rail and unit (per plane), every NIC cabled to both, each
    /// message split over the two ports.
    #[arg(long)]
    dual_tor: bool,
    /// What prices the network operations.
    #[arg(long, value_enum, default_value_t = EngineArg::Flow)]
    engine: EngineArg,
    /// Kernel efficiency (fraction of the GPU's dense BF16 peak); default: fitted
    /// on a published run (the report names it).
    #[arg(long)]
    efficiency: Option<f64>,
    /// Which servers the job gets: packed (the first), scattered over the
    /// scalable units, or fragmented (the gaps earlier jobs leave; drawn from
    /// --seed). Matters on a cluster larger than the job (--sus).
    #[arg(long, value_enum, default_value_t = PlacementArg::Packed)]
    placement: PlacementArg,
    /// The fabric: InfiniBand routed by our SM, or RoCEv2 (L3 with ECMP, the
    /// switches' hash seeded by --seed) tuned, with PFC only, or lossy (packet
    /// level only).
    #[arg(long, value_enum, default_value_t = FabricArg::Infiniband)]
    fabric: FabricArg,
    /// RoCEv2: a misconfigured switch, by name (e.g. su0-rail0), whose map sends
    /// the RDMA DSCP to a lossy class: it drops instead of pausing. Repeatable;
    /// priced at packet level (--engine packet or hybrid).
    #[arg(long = "lossy-hop", value_name = "SWITCH")]
    lossy_hops: Vec<String>,
    /// A switch down, by name (e.g. su0-rail0-a): its cables unplugged, the
    /// routing converged around it; a dual-ToR NIC's share on it fails over
    /// to its other port, a NIC with no other port is lost. Repeatable.
    #[arg(long = "fail", value_name = "SWITCH")]
    failed: Vec<String>,
    /// Seed of the packet simulator, of a fragmented placement's churn and of the
    /// Ethernet switches' ECMP hash.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

impl TrainCmd {
    /// The cluster the flags describe.
    fn cluster(&self) -> TrainCluster {
        TrainCluster {
            sus: self.sus,
            servers_per_su: self.servers_per_su,
            leaf_uplinks: self.leaf_uplinks,
            nic_gbps: self.nic_gbps,
            planes: self.planes,
            dual_tor: self.dual_tor,
            placement: match self.placement {
                PlacementArg::Packed => lab::train::Placement::Packed,
                PlacementArg::Scattered => lab::train::Placement::Scattered,
                PlacementArg::Fragmented => lab::train::Placement::Fragmented,
            },
            fabric: match self.fabric {
                FabricArg::Infiniband => lab::train::TrainFabric::Infiniband,
                FabricArg::Rocev2 => lab::train::TrainFabric::Rocev2,
                FabricArg::Rocev2PfcOnly => lab::train::TrainFabric::Rocev2PfcOnly,
                FabricArg::Rocev2Lossy => lab::train::TrainFabric::Rocev2Lossy,
            },
            hash_seed: self.seed as u32,
            lossy_hops: self.lossy_hops.clone(),
            failed: self.failed.clone(),
            ..TrainCluster::default()
        }
    }

    /// What prices the network operations.
    fn pricing(&self) -> Pricing {
        match self.engine {
            EngineArg::Flow => Pricing::Flow,
            EngineArg::Packet => Pricing::Packet,
            // compare's default (`training.packet_cap_bytes`, `packet_full_bytes`)
            EngineArg::Hybrid => Pricing::Hybrid {
                cap: 512 << 10,
                full: 16 << 20,
            },
        }
    }

    /// A Chakra execution trace (`<prefix>.<rank>.et`, every rank's file
    /// beside it): its collectives and compute on the cluster.
    fn chakra(&self, path: &str) -> Result<(), CliError> {
        if !self.more.is_empty() {
            return Err(CliError::bad_input(format!(
                "{path}: a trace runs alone; several jobs at once are model jobs (TOML)"
            )));
        }
        if self.efficiency.is_some() {
            return Err(CliError::bad_input(format!(
                "{path}: a trace gives its compute times; --efficiency applies to model jobs only"
            )));
        }
        let trace = workload::chakra::Trace::read(&self.job).map_err(|e| CliError::bad_input(e.to_string()))?;
        let cluster = self.cluster();
        let run = match lab::train::run_chakra(&trace, &cluster, self.pricing(), self.seed) {
            Ok(r) => r,
            Err(lab::train::ChakraError::Trace(e)) => return Err(CliError::bad_input(e.to_string())),
            Err(lab::train::ChakraError::Train(e)) => return Err(e.into()),
        };
        let out = if self.json {
            report::json(&run)?
        } else {
            report::train::text(&run)
        };
        std::io::stdout().write_all(out.as_bytes())?;
        Ok(())
    }

    pub fn exec(self) -> Result<(), CliError> {
        let path = self.job.display().to_string();
        if path.ends_with(".et") {
            return self.chakra(&path);
        }
        let text = std::fs::read_to_string(&self.job).with_context(|| format!("read the job file {path}"))?;
        let aicb = text
            .split_whitespace()
            .next()
            .is_some_and(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        if let Some(e) = self.efficiency
            && !(e > 0.0 && e <= 1.0)
        {
            return Err(CliError::bad_input(format!(
                "--efficiency {e}: expected a fraction of the peak in (0, 1]"
            )));
        }
        let cluster = self.cluster();
        let pricing = self.pricing();
        if aicb {
            if !self.more.is_empty() {
                return Err(CliError::bad_input(format!(
                    "{path}: a workload file runs alone; several jobs at once are model jobs (TOML)"
                )));
            }
            if self.efficiency.is_some() {
                return Err(CliError::bad_input(format!(
                    "{path}: a workload file gives its compute times; --efficiency applies to model jobs only"
                )));
            }
            let w = workload::aicb::Workload::parse(&path, &text).map_err(|e| CliError::bad_input(e.to_string()))?;
            let run = match lab::train::run_aicb(&w, &cluster, pricing, self.seed) {
                Ok(r) => r,
                Err(e @ (lab::train::ImportError::Missing { .. } | lab::train::ImportError::Aicb(_))) => {
                    return Err(CliError::bad_input(e.to_string()));
                }
                Err(lab::train::ImportError::Train(e)) => return Err(e.into()),
            };
            let out = if self.json {
                report::json(&run)?
            } else {
                report::train::text(&run)
            };
            std::io::stdout().write_all(out.as_bytes())?;
            return Ok(());
        }
        let mut specs =
            vec![workload::job::JobSpec::from_toml(&text).map_err(|e| CliError::bad_input(format!("{path}: {e}")))?];
        let mut paths = vec![path];
        for p in &self.more {
            let name = p.display().to_string();
            let t = std::fs::read_to_string(p).with_context(|| format!("read the job file {name}"))?;
            specs.push(workload::job::JobSpec::from_toml(&t).map_err(|e| CliError::bad_input(format!("{name}: {e}")))?);
            paths.push(name);
        }
        let runs = match lab::train::run_jobs(&specs, &cluster, pricing, self.efficiency, self.seed) {
            Ok(r) => r,
            // the job's error names its field (and the job, by name)
            Err(TrainError::Job { source, .. }) => {
                let which = paths
                    .iter()
                    .zip(&specs)
                    .find(|(_, s)| source.to_string().contains(&format!("job {}:", s.name)))
                    .map_or(paths[0].as_str(), |(p, _)| p.as_str());
                return Err(CliError::bad_input(format!("{which}: {source}")));
            }
            Err(e @ TrainError::Jobs(_)) => return Err(CliError::bad_input(e.to_string())),
            Err(e) => return Err(e.into()),
        };
        let out = if self.json {
            if runs.len() == 1 {
                report::json(&runs[0])?
            } else {
                report::json(&runs)?
            }
        } else {
            runs.iter().map(report::train::text).collect::<Vec<_>>().join("\n")
        };
        std::io::stdout().write_all(out.as_bytes())?;
        Ok(())
    }
}
