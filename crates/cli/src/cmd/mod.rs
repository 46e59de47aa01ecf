//! One module per subcommand; each exposes a clap `Subcommand` enum or `Args`
//! struct with `exec(self) -> Result<(), CliError>`.

pub mod advise;
pub mod calibrate;
pub mod compare;
pub mod diag;
pub mod failure;
pub mod lint;
pub mod scenario;
pub mod sim;
pub mod sim_hpcc;
pub mod sm;
pub mod sweep;
pub mod topo;
pub mod train;
pub mod wire;

pub use crate::error::CliError;
