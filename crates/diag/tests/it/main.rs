//! Integration tests of rdmalab-diag (one binary).

mod ib;
mod lint_mutations;
mod partitions;
mod roce;
