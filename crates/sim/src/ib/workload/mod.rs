//! Workloads: perftest-like tests, traffic matrices (permutation, all-to-all,
//! incast, htsim connection matrices) and the driver that runs a matrix through
//! the verbs-shaped API, plus latency statistics.

pub mod htsim;
pub mod matrix;
pub mod perftest;

pub use htsim::{CmError, parse_connection_matrix};
pub use matrix::{Flow, FlowOp, FlowResult, Matrix, MatrixReport, Start, Trigger, TriggerKind, run_matrix};
pub use perftest::{BwReport, LatReport};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency statistics: exact min/max/mean/standard deviation from the samples,
/// percentiles from an HDR histogram with 3 significant digits (0.1% resolution).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min_ps: u64,
    pub max_ps: u64,
    pub mean_ps: f64,
    /// Jitter: the standard deviation.
    pub stdev_ps: f64,
    pub p50_ps: u64,
    pub p99_ps: u64,
    pub p999_ps: u64,
}

/// Accumulates latency samples in picoseconds.
#[derive(Debug)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
    count: u64,
    min: u64,
    max: u64,
    sum: f64,
    sum_sq: f64,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            hist: Histogram::new(3).expect("3 significant digits is a valid histogram"),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0.0,
            sum_sq: 0.0,
        }
    }
}

impl LatencyRecorder {
    /// Record one sample.
    pub fn record(&mut self, ps: u64) {
        self.hist.saturating_record(ps);
        self.count += 1;
        self.min = self.min.min(ps);
        self.max = self.max.max(ps);
        let v = ps as f64;
        self.sum += v;
        self.sum_sq += v * v;
    }

    /// The statistics so far.
    pub fn stats(&self) -> LatencyStats {
        if self.count == 0 {
            return LatencyStats::default();
        }
        let n = self.count as f64;
        let mean = self.sum / n;
        let var = (self.sum_sq / n - mean * mean).max(0.0);
        LatencyStats {
            count: self.count,
            min_ps: self.min,
            max_ps: self.max,
            mean_ps: mean,
            stdev_ps: var.sqrt(),
            p50_ps: self.hist.value_at_quantile(0.5).clamp(self.min, self.max),
            p99_ps: self.hist.value_at_quantile(0.99).clamp(self.min, self.max),
            p999_ps: self.hist.value_at_quantile(0.999).clamp(self.min, self.max),
        }
    }
}

/// Errors of running a workload.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// The simulator refused a request.
    #[error(transparent)]
    Sim(#[from] crate::SimError),
    /// A flow names a host the fabric does not have.
    #[error("map flow {flow}: host {host} is not one of the {hosts} hosts")]
    NoHost { flow: u32, host: u32, hosts: usize },
    /// The run deadlocked.
    #[error("{0}")]
    Deadlock(crate::DeadlockReport),
    /// The run went idle before the test finished (a model fault or lost completion).
    #[error("finish the test: the simulation went idle with {0} work requests outstanding")]
    Stalled(u64),
}

impl WorkloadError {
    /// A fault of the model, not of the workload: the simulator's ledger did not
    /// balance. A stall is not counted one: a packet dropped on a bad route (which
    /// the run's counts report) also leaves work requests outstanding.
    pub fn is_internal(&self) -> bool {
        match self {
            WorkloadError::Sim(e) => e.is_internal(),
            WorkloadError::NoHost { .. } | WorkloadError::Deadlock(_) | WorkloadError::Stalled(_) => false,
        }
    }
}
