//! rdmalab report (see crates/README.md).
