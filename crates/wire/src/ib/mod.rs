//! Native InfiniBand headers: LRH, GRH, BTH (+ opcodes) and the extended transport headers.

pub mod bth;
pub mod ext;
pub mod grh;
pub mod lrh;
pub mod opcode;

pub use ext::{aeth, atomic_ack_eth, atomic_eth, deth, ieth, immdt, reth};
pub use opcode::{Layout, Opcode};
