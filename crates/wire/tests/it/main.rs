//! Integration tests of the wire crate (one binary).

mod support;
mod roundtrip;
mod vectors;
