//! `rdmalab lint …`: configuration linters (owned by the diag work; see crates/diag).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;

/// Linter subcommands.
#[derive(Debug, Subcommand)]
pub enum LintCmd {
    /// Lint a RoCE fabric's lossless configuration: SONiC config_db.json files (nested
    /// or flat redis-dump form), NIC `mlnx_qos` output and DCQCN sysfs dumps
    /// (`grep -H . /sys/class/net/<if>/ecn/roce_*/*/* /sys/class/net/<if>/mtu …`).
    Roce(RoceArgs),
}

/// Options of `rdmalab lint roce`.
#[derive(Debug, Args)]
pub struct RoceArgs {
    /// Files to lint; the kind of each is recognised from its content.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// DSCP of the RDMA traffic when no NIC dump gives its ToS (default: 26 assumed).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..64))]
    pub rdma_dscp: Option<u8>,
    /// DSCP of CNPs when no NIC dump gives it (default: 48 assumed).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..64))]
    pub cnp_dscp: Option<u8>,
}

impl LintCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            LintCmd::Roce(a) => {
                let opts = diag::roce::LintOptions {
                    rdma_dscp: a.rdma_dscp,
                    cnp_dscp: a.cnp_dscp,
                };
                let report = diag::roce::lint_paths(&a.files, &opts)?;
                let text = report::diag::lint(&report, if a.json { report::Form::Json } else { report::Form::Text });
                std::io::stdout().write_all(text.as_bytes())?;
                if report.has_errors() {
                    return Err(CliError::findings());
                }
                Ok(())
            }
        }
    }
}
