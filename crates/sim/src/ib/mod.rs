//! The InfiniBand node models: the switch and the HCA (with its RC/UD transport and
//! verbs-shaped API), the forwarding state the SM programmed, and the context a
//! model's step borrows.

pub mod capture;
pub mod config;
pub mod deadlock;
pub mod event;
pub(crate) mod forward;
pub mod hca;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod partition;
pub mod scenario;
pub mod sim;
pub(crate) mod step;
pub mod switch;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod workload;
