//! `rdmalab scenario …`: the scenario format, explained and shown.

use std::path::PathBuf;

use clap::Subcommand;
use lab::Scenario;
use lab::scenario::FIELDS;

use super::CliError;

/// Scenario subcommands.
#[derive(Debug, Subcommand)]
pub enum ScenarioCmd {
    /// Print every scenario field with its type and meaning.
    Explain,
    /// Print the built-in default scenario as TOML (a starting point for your own).
    Show,
    /// Check a scenario file and report the first problem with its line or field.
    Check {
        /// The scenario file.
        file: PathBuf,
    },
}

impl ScenarioCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            ScenarioCmd::Explain => {
                out!("{}", report::run::scenario_fields(FIELDS));
                out!(
                    "\n{}",
                    report::run::scenario_fields_titled(
                        "A packet-run scenario ([fabric], a traffic [workload]; rdmalab sim run):",
                        lab::scenario::PACKET_FIELDS
                    )
                );
            }
            ScenarioCmd::Show => out!("{}", Scenario::default_training().to_toml()),
            ScenarioCmd::Check { file } => match lab::ScenarioFile::load(&file)? {
                lab::ScenarioFile::Comparison(s) => out!("{}", report::run::scenario_ok(&file, &s)),
                lab::ScenarioFile::PacketRun(s) => out!("{}", report::run::packet_run_ok(&file, &s)),
            },
        }
        Ok(())
    }
}
