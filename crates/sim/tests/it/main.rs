//! Integration tests of the simulator (one binary).

mod basics;
mod capture;
mod deadlock;
mod matrix;
mod partitions;
