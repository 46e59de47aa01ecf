//! The rdmalab fabric model: nodes, ports, links; generators; readers and writers.
//!
//! Everything else in rdmalab reads a [`Fabric`]: the Subnet Manager, the simulator,
//! the diagnostics and the cost model.

pub mod error;
pub mod flat;
pub mod format;
pub mod generate;
pub mod model;
pub mod rate;
pub mod summary;

/// `gen` is a reserved word in Rust 2024, so the generators live in [`generate`];
/// this alias lets code name them `fabric::r#gen::…` as well.
pub use self::generate as r#gen;

pub use error::ModelError;
pub use generate::{
    Cabling, FatTree3Params, GenError, LeafSpineParams, MultiPodParams, RailParams, TorusParams, fat_tree3, leaf_spine,
    multi_pod, rail, torus,
};
pub use flat::{Adj, FlatFabric};
pub use format::{Format, ParseError, ReadError, ReadOptions, WriteError, read_file};
pub use model::{
    Endpoint, Fabric, Host, HostId, Link, LinkId, Node, NodeId, NodeKind, NodeSpec, Port, delay_for_length,
};
pub use summary::{Summary, summarize};
pub use rate::{EthSpeed, IbSpeed, IbWidth, LinkRate};
pub use wire::{Guid, Lid};
