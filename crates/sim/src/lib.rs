//! rdmalab sim (see crates/README.md).
