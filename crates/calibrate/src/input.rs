//! One file in: perftest or nccl-tests, told apart by what only each prints.

use crate::Fabric;
use crate::error::ParseError;
use crate::nccl::{self, NcclRun};
use crate::perftest::{self, PerftestRun};

/// A parsed measurement file.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Perftest(PerftestRun),
    Nccl(NcclRun),
}

impl Input {
    /// The file's name as given.
    pub fn path(&self) -> &str {
        match self {
            Input::Perftest(r) => &r.path,
            Input::Nccl(r) => &r.path,
        }
    }

    /// The test, e.g. `ib_write_lat` or `all_reduce_perf`.
    pub fn test(&self) -> &'static str {
        match self {
            Input::Perftest(r) => r.tool.name(),
            Input::Nccl(r) => r.collective.binary(),
        }
    }

    /// The fabric the file says it ran on (perftest always says; nccl-tests only
    /// with NCCL's INFO lines).
    pub fn fabric(&self) -> Option<Fabric> {
        match self {
            Input::Perftest(r) => Some(r.fabric),
            Input::Nccl(r) => r.fabric,
        }
    }

    /// Result rows read.
    pub fn rows(&self) -> usize {
        match self {
            Input::Perftest(r) => r.rows(),
            Input::Nccl(r) => r.rows.len(),
        }
    }

    /// What the parser skipped or wants said.
    pub fn notes(&self) -> &[String] {
        match self {
            Input::Perftest(r) => &r.notes,
            Input::Nccl(r) => &r.notes,
        }
    }
}

/// Parse `text`, the contents of the file `path`: nccl-tests if it carries an
/// nccl-tests header or column line (`# nThread`, `# nccl-tests version`,
/// `# Collective test starting:`, `#  size  count  type …`), else perftest.
pub fn parse(path: &str, text: &str) -> Result<Input, ParseError> {
    let nccl = text.lines().map(|l| nccl::untag(l).trim()).any(|t| {
        t.starts_with("# nThread")
            || t.starts_with("# nccl-tests version")
            || t.starts_with("# Collective test starting:")
            || (t.starts_with('#') && nccl::is_column_header(t))
    });
    if nccl {
        nccl::parse(path, text).map(Input::Nccl)
    } else {
        perftest::parse(path, text).map(Input::Perftest)
    }
}
