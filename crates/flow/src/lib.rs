//! The flow-level engine: messages as fluid flows over the same forwarding the
//! packet worlds use, at max-min fair rates recomputed only where a rate can
//! change.
//!
//! - [`solve`]: weighted max-min fairness by progressive filling.
//! - [`net`]: the event loop — connections, messages, deliveries, conservation.
//! - [`path`]: a flow's resources from the SM's LFTs (InfiniBand) or from the
//!   Ethernet control plane's ECMP tables with the packet world's per-flow hash.

pub mod net;
pub mod path;
pub mod solve;

pub use net::{ConnId, Delivery, FlowCounters, FlowError, FlowSim, Step};
pub use solve::{Solver, Use};
