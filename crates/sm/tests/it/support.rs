//! Shared helpers: build tables for a fabric with a given engine list.

use fabric::{Fabric, FlatFabric};
use sm::lids;
use sm::routing::{self, EngineKind, RouteOptions, RouteOutcome};
use sm::{RoutingTables, Validation, validate};

pub fn read_net(name: &str) -> Fabric {
    let p = sm::testkit::shared_formats().join("ibsim-net").join(name);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    sm::testkit::ibsim_net(&text).unwrap()
}

pub struct Routed {
    pub flat: FlatFabric,
    pub t: RoutingTables,
    pub outcome: RouteOutcome,
}

pub fn route(f: &Fabric, engines: &[EngineKind], lmc: u8, opts: &RouteOptions) -> Result<Routed, routing::RouteError> {
    let sm = lids::default_sm_port(f).unwrap();
    let (mut t, _) = lids::assign(f, sm, lmc, None).unwrap();
    let flat = f.freeze();
    let outcome = routing::route(f, &flat, &mut t, engines, opts)?;
    Ok(Routed { flat, t, outcome })
}

pub fn routed(f: &Fabric, e: EngineKind) -> (Routed, Validation) {
    let r = route(f, &[e], 0, &RouteOptions::default()).unwrap_or_else(|err| panic!("{e}: {err}"));
    let v = validate(&r.flat, &r.t);
    (r, v)
}
