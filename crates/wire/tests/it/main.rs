//! Integration tests of the wire crate (one binary).

mod support;
mod craft;
mod errors;
mod pcap;
mod roundtrip;
mod smp_fabric;
mod tshark;
mod vectors;
