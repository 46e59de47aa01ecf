//! Integration tests of the wire crate (one binary).

mod support;
mod craft;
mod pcap;
mod roundtrip;
mod tshark;
mod vectors;
