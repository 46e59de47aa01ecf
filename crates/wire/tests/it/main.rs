//! Integration tests of the wire crate (one binary).

mod support;
mod craft;
mod errors;
mod pcap;
mod roundtrip;
mod tshark;
mod vectors;
