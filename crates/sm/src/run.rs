//! One SM pass over a fabric model, with phase timings: LID assignment, routing (engine
//! list with visible fallback), validation. [`crate::sweep`] does the same through
//! SMPs; this is the direct path used when the model is trusted (planning a fabric
//! that is not cabled yet) and by benchmarks.

use std::time::Instant;

use fabric::{Fabric, NodeId};
use serde_json::{Value, json};
use thiserror::Error;

use crate::lids::{self, Guid2Lid, LidError, LidReport};
use crate::routing::{self, EngineKind, RouteError, RouteOptions, RouteOutcome};
use crate::tables::RoutingTables;
use crate::validate::{self, Validation};

/// What to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Engines to try, in order.
    pub engines: Vec<EngineKind>,
    /// LID mask control, 0..=7.
    pub lmc: u8,
    /// Roots, compute nodes, VL budget.
    pub route: RouteOptions,
    /// The SM's port; default: the first node of the fabric (ibsim's convention).
    pub sm_port: Option<(NodeId, u8)>,
    /// A guid2lid cache to honour.
    pub guid2lid: Option<Guid2Lid>,
    /// Run the validation checks.
    pub validate: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            engines: vec![EngineKind::MinHop],
            lmc: 0,
            route: RouteOptions::default(),
            sm_port: None,
            guid2lid: None,
            validate: true,
        }
    }
}

/// A failed run.
#[derive(Debug, Error)]
pub enum RunError {
    #[error("the fabric is empty")]
    Empty,
    #[error("cannot assign LIDs")]
    Lids(#[from] LidError),
    #[error("cannot route")]
    Route(#[from] RouteError),
    /// Switches in separate planes, joined only through CA ports: each is a
    /// subnet of its own (a subnet manager's directed-route SMPs never cross a
    /// CA), so one SM cannot bring them up together.
    #[error(
        "the fabric has {planes} switch planes joined only through CA ports ({sample}): each plane is its own subnet with its own subnet manager; bring each up on its own"
    )]
    Planes {
        /// How many.
        planes: usize,
        /// A switch of each, named.
        sample: String,
    },
}

/// One timed phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub micros: u64,
}

/// What a run did.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub phases: Vec<Phase>,
    pub lids: LidReport,
    pub outcome: RouteOutcome,
    pub vls_used: u8,
    pub validation: Option<Validation>,
}

impl RunReport {
    /// JSON summary with node names.
    pub fn to_json(&self, f: &Fabric) -> Value {
        json!({
            "phases": self.phases.iter().map(|p| json!({"name": p.name, "us": p.micros})).collect::<Vec<_>>(),
            "lids": {"ports": self.lids.ports, "kept": self.lids.kept, "moved": self.lids.moved, "max_lid": self.lids.max_lid},
            "engine": self.outcome.engine.name(),
            "fallbacks": self.outcome.fallbacks.iter().map(|(e, why)| json!({"engine": e.name(), "error": why})).collect::<Vec<_>>(),
            "vls_used": self.vls_used,
            "validation": self.validation.as_ref().map(|v| v.to_json(f)),
        })
    }
}

/// Time `f` into `phases`.
pub(crate) fn timed<T>(phases: &mut Vec<Phase>, name: &'static str, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let r = f();
    phases.push(Phase {
        name,
        micros: t0.elapsed().as_micros() as u64,
    });
    r
}

/// Assign LIDs, route and validate `f` directly from the model.
pub fn run(f: &Fabric, o: &RunOptions) -> Result<(RoutingTables, RunReport), RunError> {
    let sm_port = match o.sm_port {
        Some(p) => p,
        None => lids::default_sm_port(f).ok_or(RunError::Empty)?,
    };
    let mut phases = Vec::new();
    let flat = timed(&mut phases, "freeze", || f.freeze());
    let planes = switch_planes(&flat);
    if planes.len() > 1 {
        return Err(RunError::Planes {
            planes: planes.len(),
            sample: planes
                .iter()
                .map(|&n| f.node(n).name.clone())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let (mut t, lids) = timed(&mut phases, "lids", || {
        lids::assign(f, sm_port, o.lmc, o.guid2lid.as_ref())
    })?;
    let outcome = timed(&mut phases, "routing", || {
        routing::route(f, &flat, &mut t, &o.engines, &o.route)
    })?;
    let validation = o
        .validate
        .then(|| timed(&mut phases, "validate", || validate::validate(&flat, &t)));
    let vls_used = t.vls_used;
    Ok((
        t,
        RunReport {
            phases,
            lids,
            outcome,
            vls_used,
            validation,
        },
    ))
}

/// The planes: switch-connected components that some CA joins with ports in
/// two or more of them (the components a subnet manager's discovery reaches
/// from different ports of one adapter), as the first switch of each. Empty
/// when no CA spans components: a switch or leaf cut off by a failure is not
/// a plane, just unreachable.
fn switch_planes(flat: &fabric::FlatFabric) -> Vec<fabric::NodeId> {
    use fabric::{NodeId, NodeKind};
    let n = flat.num_nodes();
    let mut comp = vec![u32::MAX; n];
    let mut firsts = Vec::new();
    for start in 0..n {
        let s = NodeId(start as u32);
        if comp[start] != u32::MAX || flat.kind(s) != NodeKind::Switch {
            continue;
        }
        let c = firsts.len() as u32;
        firsts.push(s);
        comp[start] = c;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            for a in flat.neighbors(v) {
                if comp[a.peer.idx()] == u32::MAX && flat.kind(a.peer) == NodeKind::Switch {
                    comp[a.peer.idx()] = c;
                    stack.push(a.peer);
                }
            }
        }
    }
    let mut joined = std::collections::BTreeSet::new();
    for v in 0..n {
        if flat.kind(NodeId(v as u32)) == NodeKind::Switch {
            continue;
        }
        let comps: std::collections::BTreeSet<u32> = flat
            .neighbors(NodeId(v as u32))
            .iter()
            .filter(|a| flat.kind(a.peer) == NodeKind::Switch)
            .map(|a| comp[a.peer.idx()])
            .collect();
        if comps.len() > 1 {
            joined.extend(comps);
        }
    }
    joined.into_iter().map(|c| firsts[c as usize]).collect()
}

/// Read a GUID list file (OpenSM `root_guid_file` / `cn_guid_file`: one GUID per line,
/// `0x` optional, `#` comments). `file` names the source in errors.
pub fn parse_guid_list(text: &str, file: &str) -> Result<Vec<fabric::Guid>, String> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let h = line
            .strip_prefix("0x")
            .or_else(|| line.strip_prefix("0X"))
            .unwrap_or(line);
        let g = u64::from_str_radix(h, 16).map_err(|_| {
            format!(
                "{file}:{}: expected a GUID such as 0x0002c90300001234, got {raw:?}",
                i + 1
            )
        })?;
        out.push(fabric::Guid(g));
    }
    Ok(out)
}
