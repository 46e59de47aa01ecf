//! The rdmalab Subnet Manager: discovery, LID assignment, routing engines, LFT and
//! SL2VL programming, sweeps and traps, validation, OpenSM-format dumps.

pub mod tables;

pub use tables::{Lft, NO_ROUTE, PathSl, RoutingTables, Sl2Vl};
