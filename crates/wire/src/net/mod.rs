//! Ethernet, 802.1Q, IPv4, IPv6, UDP and MAC control (PAUSE/PFC): the carriers of RoCE.

pub mod ethernet;
pub mod ipv4;
pub mod ipv6;
pub mod pfc;
pub mod udp;
