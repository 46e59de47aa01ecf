//! Routing engines behind one trait, and the engine list with visible fallback.
//!
//! Every engine builds on the same [`SwitchGraph`] (switch-level topology + LIDs) and
//! fills `RoutingTables::lft` (and, for the deadlock-free engine, `sl2vl`, `path_sl`,
//! `vls_used`). Engines keep their scratch buffers across destinations; nothing is
//! allocated per destination in the hot loops.
//!
//! Engine list semantics (cf. OpenSM's "routing chaining", reference §1.1): engines
//! are tried in order and the first that succeeds wins; every failure is recorded in
//! [`RouteOutcome::fallbacks`] with its reason. Unlike OpenSM there is no silent minhop
//! fallback: if every listed engine fails, routing fails (list `minhop` last to get one).

mod dfsssp;
mod graph;
mod minhop;
mod updn;

use std::fmt;
use std::str::FromStr;

use fabric::{Fabric, FlatFabric, Guid};
use thiserror::Error;

pub use dfsssp::Dfsssp;
pub use graph::{Dest, IslPort, NONE, SwitchGraph};
pub use minhop::MinHop;
pub use updn::{Ftree, UpDn};

use crate::tables::{NO_ROUTE, RoutingTables};

/// Why an engine could not route.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum RouteError {
    #[error("{engine}: not enough virtual lanes: the routes need {needed} VL layers, {available} are available")]
    NotEnoughVls {
        engine: &'static str,
        needed: u8,
        available: u8,
    },
    #[error("{engine}: root GUID {guid} is not a switch or CA port of this fabric")]
    UnknownRoot { engine: &'static str, guid: Guid },
    #[error("{engine}: the fabric is not a fat tree: {why}")]
    NotAFatTree { engine: &'static str, why: String },
    #[error("{engine}: no route from switch {from} to LID {lid}")]
    NoRoute {
        engine: &'static str,
        from: String,
        lid: u16,
    },
    #[error("{engine}: {what}")]
    Unsupported { engine: &'static str, what: String },
    #[error("every routing engine failed: {}", .0.iter().map(|(e, why)| format!("{e}: {why}")).collect::<Vec<_>>().join("; "))]
    AllFailed(Vec<(EngineKind, String)>),
    #[error("no routing engine was given")]
    NoEngine,
}

/// The engines rdmalab provides, named as OpenSM names them (`minhop`, `updn`,
/// `ftree`, `dfsssp`) on the command line and in scenario files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// Shortest paths, LIDs spread over equal-cost ports (OpenSM's default engine).
    MinHop,
    /// Up*/Down*: shortest legal paths under a turn restriction from the roots.
    UpDn,
    /// Fat-tree routing: up*/down* with destination-modulo up-port spreading.
    Ftree,
    /// DFSSSP class: globally balanced shortest paths split into VL layers.
    Dfsssp,
}

impl EngineKind {
    /// Every engine.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::MinHop,
        EngineKind::UpDn,
        EngineKind::Ftree,
        EngineKind::Dfsssp,
    ];

    /// Name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::MinHop => "minhop",
            EngineKind::UpDn => "updn",
            EngineKind::Ftree => "ftree",
            EngineKind::Dfsssp => "dfsssp",
        }
    }

    /// A fresh engine of this kind.
    pub fn build(self) -> Box<dyn RoutingEngine> {
        match self {
            EngineKind::MinHop => Box::new(MinHop::default()),
            EngineKind::UpDn => Box::new(UpDn::default()),
            EngineKind::Ftree => Box::new(Ftree::default()),
            EngineKind::Dfsssp => Box::new(Dfsssp::default()),
        }
    }

    /// Parse a comma-separated list such as `ftree,updn,minhop`.
    pub fn parse_list(s: &str) -> Result<Vec<EngineKind>, String> {
        s.split(',').map(|x| x.trim().parse()).collect()
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EngineKind::ALL
            .into_iter()
            .find(|e| e.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown routing engine {s:?} (expected minhop, updn, ftree or dfsssp)"))
    }
}

/// Inputs an engine may use besides the topology.
#[derive(Clone, Debug)]
pub struct RouteOptions {
    /// Root switches for updn/ftree (a CA port GUID stands for the switch it is cabled
    /// to, as in OpenSM's `root_guid_file`). Empty = detect.
    pub root_guids: Vec<Guid>,
    /// Compute-node port GUIDs for ftree (`cn_guid_file`). Empty = every CA port.
    pub cn_guids: Vec<Guid>,
    /// Data VLs the deadlock-free engine may use (ibsim ports report VLCap VL0–7: 8).
    pub max_vls: u8,
}

impl Default for RouteOptions {
    fn default() -> Self {
        RouteOptions {
            root_guids: Vec::new(),
            cn_guids: Vec::new(),
            max_vls: 8,
        }
    }
}

/// A routing engine: builds on the switch graph and fills the tables' LFTs (and
/// optionally SL2VL and path SLs). LIDs are already assigned in `t`.
pub trait RoutingEngine {
    /// Name as on the command line.
    fn name(&self) -> &'static str;
    /// Compute the tables.
    fn route(&mut self, g: &SwitchGraph, opts: &RouteOptions, t: &mut RoutingTables) -> Result<(), RouteError>;
}

/// What [`route`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteOutcome {
    /// The engine whose tables are in effect.
    pub engine: EngineKind,
    /// Engines tried before it, with the reason each failed.
    pub fallbacks: Vec<(EngineKind, String)>,
}

/// Route with the first engine of `engines` that succeeds; see the module docs.
pub fn route(
    f: &Fabric,
    flat: &FlatFabric,
    t: &mut RoutingTables,
    engines: &[EngineKind],
    opts: &RouteOptions,
) -> Result<RouteOutcome, RouteError> {
    if engines.is_empty() {
        return Err(RouteError::NoEngine);
    }
    let g = SwitchGraph::new(f, flat, t);
    route_on(&g, t, engines, opts)
}

/// [`route`] on a prebuilt switch graph.
pub fn route_on(
    g: &SwitchGraph,
    t: &mut RoutingTables,
    engines: &[EngineKind],
    opts: &RouteOptions,
) -> Result<RouteOutcome, RouteError> {
    let mut fallbacks = Vec::new();
    for &k in engines {
        reset(t);
        match k.build().route(g, opts, t) {
            Ok(()) => return Ok(RouteOutcome { engine: k, fallbacks }),
            Err(e) => fallbacks.push((k, e.to_string())),
        }
    }
    reset(t);
    Err(RouteError::AllFailed(fallbacks))
}

fn reset(t: &mut RoutingTables) {
    for l in &mut t.lft {
        l.ports.clear();
    }
    t.sl2vl = None;
    t.path_sl = None;
    t.vls_used = 1;
}

/// Give every switch an LFT covering the LID space, all [`NO_ROUTE`] except its own
/// LID (port 0), reusing existing allocations.
pub(crate) fn alloc_lfts(g: &SwitchGraph, t: &mut RoutingTables) {
    for (s, &node) in g.sw_node.iter().enumerate() {
        let lft = &mut t.lft[node.idx()];
        lft.ports.clear();
        lft.ports.resize(g.lid_space, NO_ROUTE);
        for d in g.dests_at(s as u32) {
            if !d.is_end {
                lft.ports[d.base as usize] = 0;
            }
        }
    }
}
