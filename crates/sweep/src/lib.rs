//! Design studies: a study file's points over any comparison-scenario field,
//! each run as its own shard beside the exact scenario it ran, resumable, and
//! merged into one table (`rdmalab sweep`).

pub mod merge;
pub mod run;
pub mod slurm;
pub mod study;

pub use merge::{Merged, csv, merge};
pub use run::{MAX_ATTEMPTS, RunError, ShardState, pending, prepare, run_local, run_shard, state};
pub use study::{Shard, Study, StudyError};
