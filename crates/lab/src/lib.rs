//! The lab: scenarios, the comparison runner, collectives, and the advisor.

pub mod collective;

pub use collective::{Collective, Rank, Schedule, Transfer, Via, nccl_bandwidth};
