//! The rdmalab fabric model: nodes, ports, links; generators; readers and writers.
//!
//! Everything else in rdmalab reads a [`Fabric`]: the Subnet Manager, the simulator,
//! the diagnostics and the cost model.
//!
//! | module | holds |
//! |---|---|
//! | [`model`] | [`Fabric`], nodes, numbered ports, links (rate, length, delay), servers |
//! | [`rate`] | InfiniBand speed × width and Ethernet rates |
//! | [`flat`] | the frozen CSR view ([`Fabric::freeze`]) for routing and simulation |
//! | [`generate`] | leaf–spine, k-ary 3-tier fat tree, rail-optimized pod, 3-D torus, multi-pod |
//! | [`format`](mod@format) | ibnetdiscover / ibsim / ns-3 HPCC / JSON readers and writers, detection |
//! | [`summary`] | counts, tiers, oversubscription, bisection, diameter, bill of materials |
//!
//! ```
//! use fabric::{FatTree3Params, Format, fat_tree3, format, summarize};
//! // rdmalab's 2,592-host 3-tier tree: radix 36, 8 of 36 pods
//! let f = fat_tree3(&FatTree3Params { pods: Some(8), ..Default::default() }).unwrap();
//! assert_eq!(summarize(&f).diameter_hops, Some(6));
//! let net = format::write(&f, Format::Ibsim).unwrap(); // loads in ibsim 0.10
//! let (back, _) = format::parse("ft.net", net.as_bytes(), None, None, &Default::default()).unwrap();
//! assert!(f.diff(&back).is_empty());
//! ```

pub mod error;
pub mod flat;
pub mod format;
pub mod generate;
pub mod model;
pub mod planes;
pub mod rate;
pub mod summary;

/// `gen` is a reserved word in Rust 2024, so the generators live in [`generate`];
/// this alias lets code name them `fabric::r#gen::…` as well.
pub use self::generate as r#gen;

pub use error::ModelError;
pub use flat::{Adj, FlatFabric};
pub use format::{Format, ParseError, ReadError, ReadOptions, WriteError, read_file};
pub use generate::{
    Cabling, FatTree3Params, GenError, LeafSpineParams, MultiPodParams, RailParams, TorusParams, fat_tree3, leaf_spine,
    multi_pod, rail, torus,
};
pub use model::{
    Endpoint, Fabric, Host, HostId, Link, LinkId, Node, NodeId, NodeKind, NodeSpec, Port, delay_for_length,
};
pub use rate::{EthSpeed, IbSpeed, IbWidth, LinkRate};
pub use summary::{Summary, summarize};
pub use wire::{Guid, Lid};
