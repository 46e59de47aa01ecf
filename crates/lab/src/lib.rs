//! The lab: scenarios, the comparison runner, collectives, the user's RoCE
//! configuration as a simulator variant, and the advisor.

pub mod advisor;
pub mod cluster;
pub mod collective;
pub mod compare;
mod driver;
pub mod endpoints;
pub mod failure;
pub mod failure_cost;
pub mod flow_world;
pub mod import;
pub mod results;
pub mod roce_variant;
pub mod runner;
pub mod scenario;
pub mod sharp;
pub mod tco;
pub mod train;

pub use advisor::{Advice, Answers, Basis, Confidence, Evidence, FabricKind, Favours, Role, advise};
pub use collective::{Collective, Rank, Schedule, Transfer, Via, nccl_bandwidth};
pub use failure_cost::{FailureCost, FailureModel};
pub use results::{CompareResults, VariantResult};
pub use scenario::{Scenario, ScenarioError, ScenarioFile, Variant, VariantFabric};
pub use tco::{PriceSource, PriceTable, SourceStatus, Sources, Tco, Tech};
