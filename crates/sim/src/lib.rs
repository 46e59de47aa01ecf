//! rdmalab's packet-level discrete-event simulator.
//!
//! Three parts, each a top-level module that owns its state; the two worlds share
//! the engine and never reach into each other:
//!
//! ```text
//!   engine/    time, event queues (PackedQueue: 4-ary heap of packed keys; EventQueue:
//!              generic) + per-link FIFOs, packet slab, ledger, trace hash, Table
//!   ib/        the InfiniBand world
//!     sim.rs     Sim: builds the parts from a fabric + routing tables, runs the
//!                event loop, dispatches by node model (the only `impl Sim`)
//!     event.rs   the closed event set, the Fast/Generic loop modes, Core (the
//!                engine parts a step uses)
//!     net.rs     Links: port records, serialization, propagation, link-level
//!                credits, wake-ups, shared by every node model; Topology
//!     forward    LFTs, SL→VL, QP routes;  switch: output queues, VL arbitration,
//!                per-VL input buffers, adaptive routing;  hca: RC/UD transport,
//!                verbs-shaped API;  step: Cx, what a model's step borrows
//!     deadlock   credit-loop deadlock detection;  metrics: counters, samples
//!     workload/  perftest-like tests, matrices, htsim connection matrices
//!     scenario   the `sim run` TOML format;  capture: a port's packets to pcap
//!   roce/      the Ethernet world: RoCEv2/v1 NICs (RC, go-back-N, DCQCN, HPCC,
//!              DCTCP), shared-buffer switches with PFC/ECN, forwarding by the
//!              ECMP tables of `ethcp`, background TCP, the IPoIB host cost model
//! ```
//!
//! Options beyond the base IB model (off by default): IB congestion control
//! (`IbConfig::cc`: FECN at congestion roots, BECN, CCT pacing) and adaptive
//! routing (`IbConfig::adaptive_routing`: least-queued shortest-path port, PSN
//! reordering at RC responders).
//!
//! The engine knows nothing of either fabric. Each world has its own closed event
//! enum ([`ib::event::Event`]; the RoCE world's in `roce::net`) and node models
//! ([`ib::net::NodeModel`]), so neither hot loop dispatches on link type.

pub mod engine;
pub mod ib;
pub mod roce;

// The InfiniBand world's scenario runner, workloads, configuration and capture,
// under the names the other crates use.
#[cfg(any(test, feature = "testutil"))]
pub use ib::testutil;
pub use ib::{capture, config, metrics, scenario, workload};

pub use config::{EngineConfig, Forwarding, IbConfig, VlArbConfig};
pub use engine::Time;
pub use ib::deadlock::{DeadlockReport, WaitingQueue};
pub use ib::hca::{Cqe, CqeOp, QpId, QpOptions};
pub use ib::sim::{RunStatus, Sim};

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
