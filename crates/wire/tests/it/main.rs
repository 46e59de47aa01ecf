//! Integration tests of the wire crate (one binary).

mod craft;
mod errors;
mod pcap;
mod reference;
mod roundtrip;
mod smp_fabric;
mod support;
mod tshark;
