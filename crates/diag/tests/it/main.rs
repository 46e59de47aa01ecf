//! Integration tests of rdmalab-diag (one binary).

mod roce;
