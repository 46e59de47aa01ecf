//! rdmalab diag (see crates/README.md).
