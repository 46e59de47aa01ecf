//! Integration tests of the wire crate (one binary).

mod support;
mod pcap;
mod roundtrip;
mod vectors;
