//! Integration tests of rdmalab-lab (one binary).

mod roce;
