//! What runs on the cluster, independent of any network: training jobs as a
//! model × a parallelism × a GPU type, and one iteration of a job as arithmetic —
//! FLOPs, compute per pipeline stage, the communication each GPU issues as typed
//! operations, the pipeline bubble — that a network model turns into time.
//!
//! - [`model`]: transformer dimensions and the published presets (Llama 3
//!   8B/70B/405B, Mixtral 8x7B, DeepSeek-V3), parameter counts from dimensions.
//! - [`gpu`]: GPU presets (H100, H200, B200, GB200, A100).
//! - [`parallel`]: TP/PP/DP/CP/EP sizes, pipeline schedule, sharding, rank order.
//! - [`job`]: a job as a scenario writes it, checked field by field.
//! - [`comm`]: communication operations by kind, group, phase and overlap.
//! - [`iteration`]: FLOPs, per-GPU operations, bubble, analytical iteration time.
//! - [`aicb`]: AICB/SimAI workload files read into the same operations.

pub mod aicb;
pub mod chakra;
pub mod comm;
pub mod gpu;
pub mod iteration;
pub mod job;
pub mod model;
pub mod parallel;
pub mod published;

pub use comm::{CommKind, CommOp, Link, Overlap, Phase};
pub use gpu::Gpu;
pub use iteration::{IdealNetwork, Iteration, IterationTime, Network};
pub use job::{GpuSpec, Job, JobError, JobSpec, ModelSpec};
pub use model::{Mla, Model, Moe};
pub use parallel::{Group, Parallelism, PipelineSchedule, RankOrder, Sharding};
