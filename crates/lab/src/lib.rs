//! rdmalab lab (see crates/README.md).
