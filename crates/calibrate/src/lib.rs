//! Endpoint calibration from the outputs users already have and trust: perftest
//! (`ib_write_bw`, `ib_write_lat`, `ib_send_lat`, `ib_read_lat`, InfiniBand or
//! RoCE) and nccl-tests (`all_reduce_perf`, `all_gather_perf`,
//! `reduce_scatter_perf`, `alltoall_perf`), read in their text formats
//! ([`perftest`], [`nccl`]), fitted per fabric ([`model`]) and recorded in a
//! calibration file ([`file`]) that `rdmalab compare --calibration` reads back.
//!
//! ```text
//! text files ──parse──> Input::{Perftest, Nccl} ──calibrate──> Calibrated
//!                                                                │  file: Calibration (TOML: parameter, value, unit,
//!                                                                │        source files, fit residual, rows left out)
//!                                                                └  rows: RowCheck per measured row (fitted value, error)
//! ```
//!
//! The recipe is the one in the reference's calibration notes (B8): latency from
//! t_typical (median), not t_avg; a piecewise line t = a + s/B broken at the
//! inline limit; the message rate plateau and the line-rate plateau of the
//! bandwidth test; per-collective α–β lines from nccl-tests with the busbw factor.

pub mod error;
pub mod file;
pub mod fit;
pub mod input;
pub mod model;
pub mod nccl;
pub mod perftest;

pub use error::{FileError, FitError, ParseError};
pub use file::{Calibration, Name, Parameter, Scope, Source, Unit};
pub use input::{Input, parse};
pub use model::{Calibrated, Options, RowCheck, calibrate};
pub use nccl::{Collective, NcclRun};
pub use perftest::{PerftestRun, Tool};

use serde::{Deserialize, Serialize};

/// The fabric a measurement ran on: perftest's `Link type` (IB or Ethernet),
/// NCCL's `NET/IB : Using [0]mlx5_0:1/IB` (or `/RoCE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fabric {
    /// Native InfiniBand.
    Infiniband,
    /// RDMA over Converged Ethernet (perftest's `Link type : Ethernet`).
    Roce,
}

impl Fabric {
    /// Both fabrics, in the order reports list them.
    pub const ALL: [Fabric; 2] = [Fabric::Infiniband, Fabric::Roce];

    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fabric::Infiniband => "infiniband",
            Fabric::Roce => "roce",
        }
    }

    /// The name for people.
    pub fn label(self) -> &'static str {
        match self {
            Fabric::Infiniband => "InfiniBand",
            Fabric::Roce => "RoCE",
        }
    }
}

impl std::fmt::Display for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
