//! The ns-3 HPCC layer over the RoCE world (`sim::roce::net::RoceSim`): the
//! simulator's file formats and its experiment runner, kept out of the model.
//!
//! ```text
//!   hpcc   ns-3 HPCC files: config, flow and trace-node files in; fct.txt and
//!          pfc.txt out in ns-3's layout (the records are the model's:
//!          sim::roce::net::{FctRecord, PfcRecord})
//!   run    an ns-3 config run as it is (HpccExperiment: topology, flows,
//!          CC_MODE and the other keys mapped onto a RoceConfig), the
//!          WebSearch flow generator and FCT slowdowns
//! ```
//!
//! The seeded reproductions of published RoCE behaviour (`tests/it/repro.rs`)
//! and the split-run checks on ns-3's 320-host permutation (`tests/it/split.rs`)
//! are this crate's integration tests; the model's own tests stay in `sim`.

pub mod hpcc;
pub mod run;
