//! The ns-3 layer's integration tests, one binary: the paper reproductions and
//! the split run on ns-3's 320-host permutation.

mod repro;
mod split;
