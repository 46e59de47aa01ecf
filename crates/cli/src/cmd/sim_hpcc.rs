//! `rdmalab sim hpcc CONFIG`: run an ns-3 HPCC simulator config as it is (its
//! TOPOLOGY_FILE, FLOW_FILE, CC_MODE and the other keys) on rdmalab's RoCE
//! model, and write `fct.txt` / `pfc.txt` in ns-3's layout where the config
//! names them. The library side is `ns3::run`.
//!
//! Exit codes: 0 the run ended (finished or reached the stop time); 1 it ran and
//! found a problem (a PFC deadlock, a drop on a lossless priority); 2 bad input;
//! 3 the conservation ledger did not balance.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use ns3::run::HpccExperiment;
use sim::Time;

use super::CliError;
use crate::error::ledger_fault;

/// Options of `rdmalab sim hpcc`.
#[derive(Debug, Args)]
pub struct HpccArgs {
    /// The ns-3 config file (e.g. `mix/config.txt`); paths in it are relative to its directory.
    config: PathBuf,
    /// Stop this many simulated microseconds after the first flow starts (default: the
    /// config's SIMULATOR_STOP_TIME).
    #[arg(long)]
    until_us: Option<u64>,
    /// Write the outputs under this directory instead of the config's.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the report as JSON (hops, events, simulated and wall time, drops, warnings).
    #[arg(long)]
    json: bool,
    /// Split the fabric over this many threads, at most the machine's cores (the
    /// same results as one thread; runs the split does not cover yet, such as a
    /// PFC watchdog or background TCP, use one, and the report says how many ran).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    threads: u16,
}

impl HpccArgs {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        let mut e = HpccExperiment::load(&self.config)
            .with_context(|| format!("load the HPCC experiment {}", self.config.display()))?;
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        e.threads = usize::from(self.threads).min(cores);
        if e.threads < usize::from(self.threads) {
            // Threads spin between windows: more of them than cores would wait on each other.
            eprintln!(
                "rdmalab: warning: --threads {} on a machine with {cores} cores: using {cores}",
                self.threads
            );
        }
        let first = e.flows.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
        let until = self.until_us.map(|us| first + Time::us(us));
        let (r, sim) = e.run(until, self.out.as_deref()).context("run the HPCC experiment")?;
        if !sim.ledger_balances() {
            return Err(ledger_fault(
                "RoCE",
                sim::engine::LedgerError {
                    created: sim.ledger.created,
                    delivered: sim.ledger.delivered,
                    dropped: sim.ledger.total_dropped(),
                    in_flight: sim.in_flight(),
                },
            ));
        }
        if self.json {
            out!("{}", report::json(&r)?);
        } else {
            eprint!("{}", report::run::hpcc_warnings(&r));
            out!("{}", report::run::hpcc_text(&r));
        }
        if sim.deadlock().is_some() || sim.ledger.lossless_faults() > 0 {
            return Err(CliError::findings());
        }
        Ok(())
    }
}
