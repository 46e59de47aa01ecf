//! One module per subcommand; each exposes a clap `Subcommand` enum or `Args`
//! struct with `exec(self) -> anyhow::Result<ExitCode>`.

pub mod advise;
pub mod compare;
pub mod diag;
pub mod lint;
pub mod scenario;
pub mod sim;
pub mod sim_hpcc;
pub mod sm;
pub mod topo;
pub mod wire;

/// Marks an error as an internal failure (exit code 3) rather than bad input (2).
#[derive(Debug, thiserror::Error)]
#[error("internal error: {0}")]
pub struct Internal(pub String);

/// Exit code for "the command ran and found errors".
pub const FOUND_ERRORS: u8 = 1;
