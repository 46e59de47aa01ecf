//! What runs on the cluster, independent of any network: training jobs as a
//! model × a parallelism × a GPU type, and one iteration of a job as arithmetic —
//! FLOPs, the bytes each GPU sends per parallelism, the pipeline bubble — that a
//! network model turns into time.
//!
//! - [`model`]: transformer dimensions and the published presets (Llama 3
//!   8B/70B/405B, Mixtral 8x7B, DeepSeek-V3), parameter counts from dimensions.
//! - [`gpu`]: GPU presets (H100, H200, B200, A100).
//! - [`job`]: a job as a scenario writes it, checked field by field.
//! - [`iteration`]: FLOPs, bytes per GPU, bubble, ideal iteration time.

pub mod aicb;
pub mod gpu;
pub mod iteration;
pub mod job;
pub mod model;
pub mod published;

pub use gpu::Gpu;
pub use job::{Job, JobError, JobSpec, Parallelism, Schedule, Sharding};
pub use model::{Mla, Model, Moe};
