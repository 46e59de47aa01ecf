//! Bit-exact InfiniBand, RoCEv1 and RoCEv2 wire formats.
//!
//! Every header is a zero-copy `Packet<T>` view plus a plain `Repr` with
//! `parse`/`emit` (the smoltcp style). [`packet::decode`] takes a whole frame apart
//! and checks its ICRC/VCRC; [`packet::IbPacket::emit`] builds one. Neither allocates.
//!
//! - [`ib`]: LRH, GRH, BTH and opcodes, RETH, AETH, DETH, ImmDt, IETH, AtomicETH, AtomicAckETH
//! - [`net`]: Ethernet/802.1Q, IPv4, IPv6, UDP, PAUSE/PFC
//! - [`crc`]: ICRC (masked per encapsulation) and VCRC
//! - [`mad`]: MAD header, SMPs (LID-routed and directed route), SMP attributes
//! - [`psn`]: the wrapping 24-bit PSN

mod bytes;
pub mod craft;
pub mod crc;
pub mod dump;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod ib;
pub mod ids;
pub mod mad;
pub mod net;
pub mod packet;
pub mod pcap;
pub mod psn;
pub mod stats;

pub use error::{Error, Result};
pub use ids::{Guid, Lid};
pub use packet::{Decoded, IbPacket, LinkType, decode};
pub use psn::Psn;
