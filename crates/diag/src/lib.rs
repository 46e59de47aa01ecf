//! rdmalab diagnostics: ibdiagnet-style checks of InfiniBand fabrics and their
//! routing tables, path tracing, and the RoCE configuration linter.
//!
//! - [`roce`]: reads SONiC `config_db.json`, `mlnx_qos` output and DCQCN sysfs dumps
//!   and reports the misconfigurations that break lossless Ethernet.
//! - [`ib`]: OpenSM/infiniband-diags dump readers, `check` (reachability, minimality,
//!   credit loops per VL, duplicate GUIDs/LIDs, degraded links, balance, isolation)
//!   and `trace` (ibtracert).
//! - [`finding`]: the finding type every check reports.

pub mod finding;
pub mod ib;
pub mod roce;

pub use finding::{Finding, Location, Severity};
