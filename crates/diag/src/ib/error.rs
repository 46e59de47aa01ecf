//! Errors reading InfiniBand topology and routing dumps.

use fabric::{Guid, ModelError};
use thiserror::Error;

/// A dump or topology file could not be used.
#[derive(Debug, Error)]
pub enum DumpError {
    /// The file could not be read.
    #[error("read {file}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// A line is not in the expected grammar.
    #[error("parse {file}:{line}: expected {expected}, found {got:?}")]
    Syntax {
        file: String,
        line: usize,
        expected: String,
        got: String,
    },
    /// A GUID in a dump is not in the topology.
    #[error("match {file}:{line}: {what} GUID {guid} is not in the topology")]
    UnknownGuid {
        file: String,
        line: usize,
        guid: Guid,
        what: &'static str,
    },
    /// The records describe a fabric that cannot be built.
    #[error("build the fabric from {file}:{line}")]
    Model {
        file: String,
        line: usize,
        #[source]
        source: ModelError,
    },
    /// OpenSM's lfts dump reader (crates/sm) refused the file.
    #[error("read the LFT dump")]
    Lfts(#[from] sm::dump::LftsDumpError),
    /// The guid2lid reader (crates/sm) refused the file.
    #[error("read the guid2lid file")]
    Guid2Lid(#[from] sm::lids::Guid2LidError),
    /// The topology reader (crates/fabric) refused the file.
    #[error("read the topology")]
    Topology(#[from] fabric::format::ReadError),
    /// rdmalab's Subnet Manager could not bring the fabric up.
    #[error("bring the fabric up with the rdmalab SM")]
    Sm(#[from] sm::run::RunError),
    /// The partitions.conf could not be read or names a port not in the fabric.
    #[error("read the partitions")]
    Partitions(#[from] sm::partitions::PartitionsError),
    /// An endpoint given to `trace` names nothing in the fabric.
    #[error("find {what:?} in the fabric: {why}")]
    NoSuchEndpoint { what: String, why: String },
}
