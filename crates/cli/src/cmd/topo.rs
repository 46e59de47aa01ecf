//! `rdmalab topo …` (owned by the fabric work; see crates/fabric).

use std::process::ExitCode;

use clap::Subcommand;

/// Topology subcommands.
#[derive(Debug, Subcommand)]
pub enum TopoCmd {
    /// Summarise a topology file.
    Info {
        /// The topology file.
        file: std::path::PathBuf,
    },
}

impl TopoCmd {
    pub fn exec(self) -> anyhow::Result<ExitCode> {
        match self {
            TopoCmd::Info { file } => anyhow::bail!("reading {} is not built yet", file.display()),
        }
    }
}
