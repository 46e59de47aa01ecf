//! `rdmalab sm run`: the Subnet Manager's sweep and run reports as text.

use std::fmt::Write as _;

use fabric::Fabric;

/// A heavy sweep through SMPs (`rdmalab sm run`): discovery, phases, SMPs, LIDs,
/// engine, programming, validation and whether the subnet came up.
pub fn sweep_text(f: Option<&Fabric>, rep: &sm::sweep::SweepReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "heavy sweep: {} switches, {} CAs, {} links discovered",
        rep.switches, rep.cas, rep.links
    );
    for p in &rep.phases {
        let _ = writeln!(o, "  phase {:<10} {:>10.3} ms", p.name, p.micros as f64 / 1000.0);
    }
    let _ = writeln!(
        o,
        "SMPs: {} sent, {} answered, {} resent",
        rep.smps_sent, rep.smps_received, rep.resends
    );
    for i in &rep.issues {
        let _ = writeln!(o, "  issue: {i}");
    }
    let _ = writeln!(
        o,
        "lids: {} ports, max LID {}, {} kept from guid2lid, {} moved",
        rep.lids.ports, rep.lids.max_lid, rep.lids.kept, rep.lids.moved
    );
    if let Some(oc) = &rep.outcome {
        for (e, why) in &oc.fallbacks {
            let _ = writeln!(o, "engine {e} failed, falling back: {why}");
        }
        let _ = writeln!(
            o,
            "engine: {} ({} VL{})",
            oc.engine,
            rep.vls_used,
            if rep.vls_used == 1 { "" } else { "s" }
        );
    }
    let _ = writeln!(
        o,
        "programming: {} LFT blocks sent ({} unchanged), {} SL2VL tables, {} ports ACTIVE",
        rep.lft_blocks_sent, rep.lft_blocks_unchanged, rep.sl2vl_sent, rep.ports_active
    );
    if let (Some(v), Some(f)) = (&rep.validation, f) {
        o.push_str(&validation_text(f, v));
    }
    let _ = writeln!(o, "subnet {}", if rep.subnet_up { "UP" } else { "NOT UP" });
    o
}

/// A direct run of the SM (`rdmalab sm run --direct`): the fabric, phases, LIDs,
/// engine and validation.
pub fn summary_text(f: &Fabric, rep: &sm::run::RunReport) -> String {
    let mut o = String::new();
    let sw = f.count(fabric::NodeKind::Switch);
    let ca = f.count(fabric::NodeKind::Ca);
    let _ = writeln!(o, "fabric: {sw} switches, {ca} CAs, {} links", f.links.len());
    for p in &rep.phases {
        let _ = writeln!(o, "  phase {:<10} {:>10.3} ms", p.name, p.micros as f64 / 1000.0);
    }
    let _ = writeln!(
        o,
        "lids: {} ports, max LID {}, {} kept from guid2lid, {} moved",
        rep.lids.ports, rep.lids.max_lid, rep.lids.kept, rep.lids.moved
    );
    for (e, why) in &rep.outcome.fallbacks {
        let _ = writeln!(o, "engine {e} failed, falling back: {why}");
    }
    let _ = writeln!(
        o,
        "engine: {} ({} VL{})",
        rep.outcome.engine,
        rep.vls_used,
        if rep.vls_used == 1 { "" } else { "s" }
    );
    if let Some(v) = &rep.validation {
        o.push_str(&validation_text(f, v));
    }
    o
}

/// The SM's validation of its routes: reachability, credit loops, balance.
pub fn validation_text(f: &Fabric, v: &sm::Validation) -> String {
    let mut o = String::new();
    let r = &v.routes;
    let _ = writeln!(
        o,
        "reachability: {} of {} CA-to-CA pairs arrive; {} non-minimal; max hops {}",
        r.pairs - r.unreachable,
        r.pairs,
        r.non_minimal,
        r.max_hops
    );
    for x in &r.failures {
        let _ = writeln!(o, "  unreachable: {}", x.describe(f));
    }
    let _ = match v.credit_loops.describe(f) {
        Some(c) => writeln!(o, "credit loops: FOUND {c}"),
        None => writeln!(
            o,
            "credit loops: none ({} channels, {} dependencies, {} VLs)",
            v.credit_loops.channels, v.credit_loops.dependencies, v.credit_loops.vls_used
        ),
    };
    let busiest = v
        .loads
        .busiest_isl
        .map(|(n, p)| format!(" at {}/P{p}", f.nodes[n.idx()].name))
        .unwrap_or_default();
    let _ = writeln!(
        o,
        "balance: max {} routes on one switch-to-switch port{busiest}",
        v.loads.max_routes_isl
    );
    let _ = writeln!(o, "validation: {}", if v.ok() { "ok" } else { "FAILED" });
    o
}

/// The line `sm run --umad` prints when it has opened its port.
pub fn umad_port_line(p: &sm::umad::LocalPort) -> String {
    format!(
        "port {}/{}: GUID {}, LID {}, state {}",
        p.ca, p.port, p.port_guid, p.lid, p.state
    )
}

/// One event of the SM on a real port, stamped with seconds since it started.
pub fn umad_event_line(elapsed_s: f64, e: &sm::umad_daemon::Event<'_>) -> String {
    format!("[{elapsed_s:9.3} s] {}", sm::umad_daemon::event_line(e))
}

/// How the SM on a real port ended, in one line.
pub fn umad_exit_text(out: &sm::umad_daemon::Outcome) -> String {
    format!(
        "exit: state {} after {} heavy and {} light sweeps{}\n",
        sm::umad_daemon::state_name(out.state),
        out.heavy_sweeps,
        out.light_sweeps,
        if out.subnet_up { ", subnet up" } else { "" }
    )
}

/// How the SM on a real port ended, as JSON, with its last sweep's report.
pub fn umad_exit_json(out: &sm::umad_daemon::Outcome, last_sweep: Option<serde_json::Value>) -> serde_json::Value {
    serde_json::json!({
        "state": sm::umad_daemon::state_name(out.state),
        "heavy_sweeps": out.heavy_sweeps,
        "light_sweeps": out.light_sweeps,
        "subnet_up": out.subnet_up,
        "master": out.master.as_ref().map(|m| format!("{}", m.info.guid)),
        "last_sweep": last_sweep,
    })
}
