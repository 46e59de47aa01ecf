//! InfiniBand partitions: OpenSM's `partitions.conf` ([`conf`]), resolved against a
//! fabric into the P_Key table of every port ([`plan`]), which the sweep programs with
//! `SubnSet(P_KeyTable)` and the packet simulator enforces.
//!
//! ```text
//!   partitions.conf ──conf::parse──▶ PartitionsConf (file:line of every statement)
//!        └──plan::resolve(fabric, SM port)──▶ PkeyPlan: table per CA port, switch port 0
//!                                              and switch port facing a CA (enforcement)
//! ```
//!
//! A P_Key is 16 bits: bit 15 = full membership, bits 0–14 the partition
//! (reference `failures-isolation-sweeps.md` §1.1, OpenSM `ib_types.h:381-403`).

pub mod conf;
pub mod plan;

pub use conf::{ErrorKind, Member, Membership, Partition, PartitionsConf, PartitionsError, PortSpec, parse};
pub use plan::{PkeyPlan, PortTable, pkeys_match, resolve};

/// Bit 15 of a P_Key: full membership (IBA vol. 1 §10.9.1; `IB_PKEY_TYPE_MASK`).
pub const FULL: u16 = 0x8000;
/// Bits 0–14 of a P_Key: the partition number (`IB_PKEY_BASE_MASK`).
pub const BASE: u16 = 0x7fff;
/// The default partition's number (OpenSM `IB_DEFAULT_PARTIAL_PKEY`).
pub const DEFAULT_PKEY: u16 = 0x7fff;
