//! The Ethernet control plane: the RoCE counterpart of `sm`. It addresses hosts,
//! builds the ECMP groups of every switch, hashes flows onto them, keeps the groups
//! in step with failed and repaired links, and knows where RoCEv1 (layer 2 only)
//! can go. It emits forwarding state as data: the simulator forwards by
//! [`EcmpTable`] and [`HashConfig`]; it computes no routes of its own.
//!
//! ```text
//!   addr    host IPv4 (HPCC ns-3 numbering), MAC, RoCEv2 UDP source port per QP
//!   hash    FlowKey, hashed fields, CRC-32 / MurmurHash3, load over a group
//!   table   EcmpTable: per (switch, destination) the equal-cost ports, interned;
//!           failed links shrink the groups after a convergence delay
//!   l2      L2Mode and the RoCEv1 check (no path through a router)
//! ```
//!
//! Time is plain `u64` picoseconds (names end in `_ps`): the simulator's clock
//! converts at its boundary, so this crate does not depend on it.

pub mod addr;
pub mod hash;
pub mod l2;
pub mod table;
#[cfg(test)]
mod test_fabric;

pub use addr::{ROCEV2_UDP_PORT, host_ip, host_mac, ip_string, roce_udp_sport};
pub use hash::{FlowKey, HashConfig, HashFn, crc32, field, max_over_mean, murmur3_words, spread};
pub use l2::{L2Mode, RoceV1Error, check_roce_v1};
pub use table::{EcmpTable, NoRoute};
