//! `rdmalab compare`: the main job.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use lab::Scenario;

use super::CliError;

/// Build the scenario's cluster as every fabric variant, run the same AI workload
/// through each packet by packet, and compare (terminal table, report.html,
/// results.json).
#[derive(Debug, Args)]
pub struct CompareCmd {
    /// Scenario file (TOML; see `rdmalab scenario explain`). Default: the built-in
    /// 16 × 8 GPU, 400G rail-optimized cluster.
    scenario: Option<PathBuf>,
    /// Directory for report.html and results.json (created if missing; files that
    /// rdmalab wrote there before are replaced, nothing else is touched).
    #[arg(long, short, default_value = "rdmalab-out")]
    out: PathBuf,
    /// Print results.json to stdout instead of the terminal summary.
    #[arg(long)]
    json: bool,
    /// Also print the nccl-tests-style table of every variant and collective.
    #[arg(long)]
    tables: bool,
    /// Your RoCE configuration (SONiC config_db.json, `mlnx_qos` output, DCQCN sysfs
    /// dumps): linted, then run as one more variant so each finding shows its
    /// measured consequence.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    roce_config: Vec<PathBuf>,
    /// Engine for the variants, overriding the scenario's `engine`: `packet`
    /// (every packet simulated), `flow` (max-min fair flows on the same routes,
    /// for the variants it can model; no latency probes), or `auto` (packet up to
    /// 256 NICs, flow beyond). Each variant's results say which engine ran it.
    #[arg(long, value_enum)]
    engine: Option<EngineArg>,
    /// A calibration file from `rdmalab calibrate`: its fitted NIC send and
    /// receive latencies replace the published NICs' on the InfiniBand
    /// verbs and RoCEv2 variants; the report names the file.
    #[arg(long, value_name = "FILE")]
    calibration: Option<PathBuf>,
}

/// `--engine`'s values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum EngineArg {
    /// Packet level.
    Packet,
    /// Flow level.
    Flow,
    /// By the cluster's size.
    Auto,
}

impl CompareCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        let mut scenario = match &self.scenario {
            Some(p) => lab::ScenarioFile::load(p)?.comparison(p)?,
            None => Scenario::default_training(),
        };
        if let Some(e) = self.engine {
            scenario.engine = match e {
                EngineArg::Packet => lab::scenario::Engine::Packet,
                EngineArg::Flow => lab::scenario::Engine::Flow,
                EngineArg::Auto => lab::scenario::Engine::Auto,
            };
            // the engine decides what the scenario can run (all-reduce-sharp: flow only)
            let name = self
                .scenario
                .as_ref()
                .map_or("the built-in scenario".to_string(), |p| p.display().to_string());
            scenario.validate(&format!("{name} with --engine"))?;
        }
        let endpoints = match &self.calibration {
            None => None,
            Some(p) => Some(endpoints(p)?),
        };
        std::fs::create_dir_all(&self.out).with_context(|| format!("creating {}", self.out.display()))?;
        let html_path = self.out.join("report.html");
        let json_path = self.out.join("results.json");
        // Never overwrite a file rdmalab did not write.
        for p in [&html_path, &json_path] {
            if p.exists() {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                if !report::compare::written_by_compare(&text) {
                    return Err(CliError::bad_input(format!(
                        "{} exists and was not written by rdmalab compare; choose another --out",
                        p.display()
                    )));
                }
            }
        }
        let bar = if std::io::stderr().is_terminal() {
            let b = indicatif::ProgressBar::new(1);
            b.set_style(
                indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                    .expect("static template"),
            );
            Some(b)
        } else {
            None
        };
        let user = if self.roce_config.is_empty() {
            None
        } else {
            let mut files = Vec::new();
            for p in &self.roce_config {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                files.push((p.display().to_string(), text));
            }
            Some(lab::compare::UserRoce { files })
        };
        let results = lab::compare::run_calibrated(&scenario, user.as_ref(), endpoints.as_ref(), &mut |p| {
            if let Some(b) = &bar {
                b.set_length(p.total);
                b.set_position(p.done);
                b.set_message(p.what);
            }
        })?;
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let json = report::compare::results_file(&results);
        let html = report::compare::html_file(&results);
        std::fs::write(&json_path, &json).with_context(|| format!("writing {}", json_path.display()))?;
        std::fs::write(&html_path, html).with_context(|| format!("writing {}", html_path.display()))?;
        if self.json {
            outln!("{json}");
        } else {
            out!("{}", report::compare::terminal_summary(&results));
            if self.tables {
                for v in &results.variants {
                    for c in &v.collectives {
                        out!("\n{}", report::compare::nccl_table(v, c.op));
                    }
                }
            }
            out!("{}", report::compare::wrote_line(&html_path, &json_path));
        }
        Ok(())
    }
}

/// The endpoint latencies of a calibration file, per fabric, in picoseconds.
fn endpoints(path: &std::path::Path) -> Result<lab::results::Endpoints, CliError> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let cal = calibrate::Calibration::from_toml(&path.display().to_string(), &text)?;
    let ps = |f: calibrate::Fabric| {
        cal.endpoint(f).map(|e| lab::results::NicLatency {
            tx_ps: (e.tx_ns * 1e3).round() as u64,
            rx_ps: (e.rx_ns * 1e3).round() as u64,
        })
    };
    let e = lab::results::Endpoints {
        source: path.display().to_string(),
        infiniband: ps(calibrate::Fabric::Infiniband),
        rocev2: ps(calibrate::Fabric::Roce),
        infiniband_switch_ps: cal
            .switch_latency(calibrate::Fabric::Infiniband)
            .map(|ns| (ns * 1e3).round() as u64),
        rocev2_switch_ps: cal
            .switch_latency(calibrate::Fabric::Roce)
            .map(|ns| (ns * 1e3).round() as u64),
        applied_to: Vec::new(),
    };
    if e.infiniband.is_none() && e.rocev2.is_none() && e.infiniband_switch_ps.is_none() && e.rocev2_switch_ps.is_none()
    {
        return Err(CliError::bad_input(format!(
            "{} has no endpoint parameters (tx_latency and rx_latency, or switch_latency) for either fabric: calibrate from ib_write_lat and ib_send_lat (and a one-hop run with --one-hop)",
            path.display()
        )));
    }
    Ok(e)
}
