//! Integration tests of rdmalab-lab (one binary).

mod flow_agreement;
mod roce;
