//! Integration tests of `rdmalab-workload`, one binary.

mod aicb;
mod chakra;
mod iteration;
mod jobs;
mod models;
mod validation;

/// `got` within `tol` (relative) of `want`.
#[track_caller]
fn close(got: f64, want: f64, tol: f64) {
    assert!(
        ((got - want) / want).abs() <= tol,
        "got {got:e}, want {want:e} (tolerance {tol})"
    );
}
