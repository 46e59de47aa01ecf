//! The rdmalab fabric model: nodes, ports, links; generators; readers and writers.
//!
//! Everything else in rdmalab reads a [`Fabric`]: the Subnet Manager, the simulator,
//! the diagnostics and the cost model.

pub mod error;
pub mod flat;
pub mod model;
pub mod rate;

pub use error::ModelError;
pub use flat::{Adj, FlatFabric};
pub use model::{
    Endpoint, Fabric, Host, HostId, Link, LinkId, Node, NodeId, NodeKind, NodeSpec, Port, delay_for_length,
};
pub use rate::{EthSpeed, IbSpeed, IbWidth, LinkRate};
pub use wire::{Guid, Lid};
