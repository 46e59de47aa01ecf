//! Integration tests of rdmalab-lab (one binary).

mod calibrated;
mod flow_agreement;
mod imported;
mod published;
mod roce;
mod sharp;
