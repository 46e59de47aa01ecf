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
                let w = FIELDS.iter().map(|(f, _, _)| f.len()).max().unwrap_or(0);
                let t = FIELDS.iter().map(|(_, t, _)| t.chars().count()).max().unwrap_or(0);
                for (field, ty, what) in FIELDS {
                    let pad = t - ty.chars().count();
                    outln!("{field:<w$}  {ty}{:pad$}  {what}", "");
                }
            }
            ScenarioCmd::Show => out!("{}", Scenario::default_rail().to_toml()),
            ScenarioCmd::Check { file } => {
                let s = Scenario::load(&file)?;
                outln!(
                    "{}: ok ({} variants, {} collectives × {} sizes)",
                    file.display(),
                    s.variants.len(),
                    s.workload.collectives.len(),
                    s.workload.sizes.len()
                );
            }
        }
        Ok(())
    }
}
