//! rdmalab's packet-level discrete-event simulator.
//!
//! ```text
//!   engine/    time, event queues (PackedQueue: 4-ary heap of packed keys; EventQueue:
//!              generic) + per-link FIFOs, packet slab, ledger, trace hash
//!   event.rs   the IB world's closed event set, the Fast/Generic loop modes, Core
//!              (the engine parts a step uses)
//!   net.rs     Links: port records, serialization, propagation, link-level
//!              credits, wake-ups — shared by every node model; Topology
//!   ib/        InfiniBand models: forward (LFTs, SL→VL, QP routes), switch
//!              (output queues, VL arbitration, per-VL input buffers, adaptive
//!              routing), hca (RC/UD transport, verbs-shaped API), step (Cx)
//!   sim.rs     the world: builds the parts from a fabric + routing tables, runs
//!              the event loop, dispatches by node model
//!   deadlock   credit-loop deadlock detection
//!   metrics    counters, utilisation, stalls, samples; JSON/CSV
//!   workload/  perftest-like tests, matrices (permutation, all-to-all, incast),
//!              htsim connection matrices; latency histograms and flow reports
//!   scenario   the TOML scenario format
//!   capture    a chosen port's packets to pcap through crates/wire
//! ```
//!
//! Options beyond the base IB model (off by default): IB congestion control
//! (`IbConfig::cc`: FECN at congestion roots, BECN, CCT pacing) and adaptive
//! routing (`IbConfig::adaptive_routing`: least-queued shortest-path port, PSN
//! reordering at RC responders).
//!
//! The engine knows nothing of InfiniBand; a node model is one arm of
//! [`sim::NodeModel`], and the event enum [`sim::Event`] is closed, so Ethernet
//! switches and RoCE NICs are added as new arms next to the IB ones.

pub mod capture;
pub mod config;
pub mod deadlock;
pub mod engine;
pub mod event;
pub mod ib;
pub mod metrics;
pub mod net;
pub mod packet;
pub mod roce;
pub mod scenario;

pub mod sim;
#[cfg(any(test, feature = "testutil"))]
pub mod testutil;
pub mod workload;

pub use config::{EngineConfig, Forwarding, IbConfig, VlArbConfig};
pub use deadlock::{DeadlockReport, WaitingQueue};
pub use engine::Time;
pub use ib::hca::{Cqe, CqeOp, QpId, QpOptions};
pub use sim::{RunStatus, Sim};

/// Errors of building or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A configuration field is out of range.
    #[error("accept configuration field `{field}`: expected {expected}, got {got}")]
    Config {
        field: &'static str,
        expected: &'static str,
        got: String,
    },
    /// A node has no LID for the port a QP needs.
    #[error("find a LID for {node} port {port} (did the SM assign one?)")]
    NoLid { node: String, port: u8 },
    /// A QP was asked of a node that is not a channel adapter.
    #[error("create a QP on {node}: it is not a channel adapter")]
    NotCa { node: String },
    /// A port is not cabled.
    #[error("use {node} port {port}: it is not cabled")]
    Uncabled { node: String, port: u8 },
    /// A work request does not fit the QP.
    #[error("post to QP {qp}: {why}")]
    BadPost { qp: u32, why: String },
    /// A node id is out of range.
    #[error("find node {0}: no such node")]
    NoNode(u32),
    /// The routing tables do not match the fabric.
    #[error("use the routing tables: {0}")]
    Tables(String),
    /// The conservation ledger does not balance.
    #[error(transparent)]
    Ledger(#[from] engine::LedgerError),
}

impl SimError {
    /// A fault of the model, not of its input: the ledger did not balance.
    pub fn is_internal(&self) -> bool {
        matches!(self, SimError::Ledger(_))
    }
}
