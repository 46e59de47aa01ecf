//! Bit-exact InfiniBand, RoCEv1 and RoCEv2 wire formats.

pub mod ids;

pub use ids::{Guid, Lid};
