//! The crate's errors. Messages are lowercase fragments that read after "failed
//! to"; every one names the file, and a parse error the line and what was
//! expected there.

/// A perftest or nccl-tests file could not be read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// Neither a perftest title nor an nccl-tests header was found.
    #[error(
        "read {path}: not perftest or nccl-tests output (expected a perftest test title such as \"RDMA_Write Latency Test\" or an nccl-tests header line such as \"# nThread 1 nGpus 1 …\" or \"#       size         count      type …\")"
    )]
    Unrecognised { path: String },
    /// A test this crate does not calibrate from (ib_send_bw, ib_atomic_lat,
    /// broadcast_perf, …), named as the file names it.
    #[error("read {path}:{line}: {saw} is not a test calibrate reads (it reads {reads})")]
    UnsupportedTest {
        path: String,
        line: usize,
        /// What the file says, e.g. `perftest test "Send BW Test" (ib_send_bw)`.
        saw: String,
        /// The tests of that tool this crate reads.
        reads: &'static str,
    },
    /// A line is not what its place in the format requires.
    #[error("read {path}:{line}: expected {expected}, found {found:?}")]
    Syntax {
        path: String,
        line: usize,
        expected: String,
        found: String,
    },
    /// The file ended before something the format requires.
    #[error("read {path}: {what}")]
    Incomplete { path: String, what: String },
}

/// The measurements could not be fitted.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FitError {
    /// No files.
    #[error("calibrate: no perftest or nccl-tests files given")]
    Empty,
    /// An nccl-tests file that does not say its fabric, and no fallback given.
    #[error(
        "calibrate from {path}: it does not say which fabric it ran on (no \"NET/IB : Using [0]mlx5_0:1/IB\" or \"…/RoCE\" line, which NCCL prints with NCCL_DEBUG=INFO); give --fabric infiniband or --fabric roce"
    )]
    NoFabric { path: String },
    /// Two files of the same test on the same fabric.
    #[error("calibrate: {first} and {second} are both {test} on {fabric}; give one file per test and fabric")]
    Duplicate {
        test: String,
        fabric: crate::Fabric,
        first: String,
        second: String,
    },
    /// The measurements do not fit the model, with what is wrong.
    #[error("calibrate from {path}: {what}")]
    Model { path: String, what: String },
}

/// A calibration file could not be read back.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FileError {
    /// Not TOML of the calibration's shape; the message gives line, column and
    /// the field.
    #[error("read {path}: {message}")]
    Toml { path: String, message: String },
    /// A top-level field with a value the format does not allow.
    #[error("read {path}: field `{field}`: expected {expected}, found {found}")]
    Field {
        path: String,
        field: String,
        expected: String,
        found: String,
    },
    /// A field of one `[[parameter]]` table with a value the format does not allow.
    #[error("read {path}: [[parameter]] {index} ({what}): field `{field}`: {problem}")]
    Parameter {
        path: String,
        /// 1-based, in file order.
        index: usize,
        /// fabric, scope and name of the parameter.
        what: String,
        field: String,
        /// "expected …, found …".
        problem: String,
    },
}
