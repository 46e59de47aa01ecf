//! Integration tests of the simulator (one binary).

mod basics;
mod deadlock;
mod matrix;
