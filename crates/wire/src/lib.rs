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
//! - [`pcap`]: capture files; [`craft`]: packets from TOML specs; [`dump`], [`stats`]
//!
//! Build a RoCEv2 packet into a buffer and take it apart again:
//!
//! ```
//! use wire::ib::{bth, reth, Opcode};
//! use wire::packet::{ExtHeaders, IbPacket, LinkType, decode, Decoded};
//! use wire::Psn;
//!
//! let payload = [0u8; 1024];
//! let p = IbPacket::roce_v2_ipv4(
//!     [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [10, 0, 0, 1], [10, 0, 0, 2],
//!     26, 2, 0xc123,                                   // DSCP, ECN (ECT0), UDP source port
//!     bth::Repr::new(Opcode::RcWriteOnly, 0x11, Psn::new(0xff_ffff)),
//!     ExtHeaders { reth: Some(reth::Repr { va: 0x1000, rkey: 7, dma_len: 1024 }), ..Default::default() },
//!     &payload,
//! );
//! let mut buf = [0u8; 2048];
//! let n = p.emit(&mut buf).unwrap(); // lengths, checksums and ICRC filled in
//! let Decoded::Ib { packet, checks, .. } = decode(&buf[..n], LinkType::Ethernet).unwrap() else { panic!() };
//! assert!(checks.icrc.ok());
//! assert_eq!(packet.bth.psn.next(), Psn::new(0));
//! ```

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
