//! Errors of the RoCE linter's readers (the linter itself reports findings, not errors).

use thiserror::Error;

/// A file given to the linter could not be read.
#[derive(Debug, Error)]
pub enum LintError {
    /// The file could not be opened or read.
    #[error("read {file}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid JSON.
    #[error("parse {file}:{line}:{column}: {msg}")]
    Json {
        file: String,
        line: usize,
        column: usize,
        msg: String,
    },
    /// The file is JSON but not a CONFIG_DB document.
    #[error("read {file} as SONiC config_db JSON: {what}")]
    NotConfigDb { file: String, what: String },
    /// A line of NIC output (mlnx_qos or a sysfs dump) is not what was expected.
    #[error("parse {file}:{line}: expected {expected}, found {got:?}")]
    Nic {
        file: String,
        line: usize,
        expected: String,
        got: String,
    },
    /// The file is none of the formats the linter reads.
    #[error(
        "recognise {file}: expected SONiC config_db JSON, mlnx_qos output or a sysfs dump (`grep -H . <sysfs files>`)"
    )]
    UnknownFormat { file: String },
}
