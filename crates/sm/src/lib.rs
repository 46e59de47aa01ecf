//! The rdmalab Subnet Manager: discovery, LID assignment, routing engines, LFT and
//! SL2VL programming, sweeps and traps, validation, OpenSM-format dumps.
//!
//! ```text
//!   Fabric ──freeze──▶ FlatFabric ──lids::assign──▶ RoutingTables (LIDs)
//!                                   └─routing::route(engines…)──▶ RoutingTables (LFTs, SL2VL)
//!   RoutingTables ──validate::validate──▶ Validation (reachability, hops, credit loops, balance)
//!   RoutingTables ──dump::*──▶ opensm-lfts.dump, opensm-subnet.lst, guid2lid, opensm-sl2vl.dump
//!
//!   sweep::SubnetManager ──SMP bytes──▶ dyn sma::Transport (sma::InProcess answers from a Fabric)
//!        heavy_sweep: discover → model → lids → routing → program (LFT blocks, SL2VL, ACTIVE)
//!        light_sweep / poll: SwitchInfo.PortStateChange + Trap 128 → heavy sweep + change report
//!
//!   umad_daemon::run ── mastership (SMInfo: DISCOVERING/STANDBY/MASTER, handover) ──▶ SubnetManager
//!        over umad::UmadTransport (libibumad, dlopen'ed at run time) or any other Transport
//! ```
//!
//! Entry points: [`run::run`] (LIDs + routing + validation straight from a model),
//! [`sweep::SubnetManager::heavy_sweep`] (the same through SMPs), [`validate::validate`]
//! (pure checks of any tables, ours or read from OpenSM with [`dump::parse_lfts_dump`]).

pub mod dump;
pub mod index;
pub mod lids;
pub mod mastership;
pub mod partitions;
pub mod routing;
pub mod run;
pub mod sma;
pub mod sweep;
pub mod tables;
pub mod testkit;
pub mod umad;
pub mod umad_daemon;
pub mod validate;

pub use tables::{Lft, NO_ROUTE, PathSl, RoutingTables, Sl2Vl};
pub use validate::{Validation, validate};
