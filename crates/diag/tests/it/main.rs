//! Integration tests of rdmalab-diag (one binary).

mod ib;
mod partitions;
mod roce;
