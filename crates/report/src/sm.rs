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
    if let Some(p) = &rep.pkeys {
        let _ = writeln!(
            o,
            "partitions: {} (the default included){}, {} port P_Key tables, {} switch ports enforced; {} P_KeyTable blocks sent ({} unchanged)",
            p.partitions,
            if p.fell_back {
                ", FELL BACK to Default=0x7fff : ALL=full"
            } else {
                ""
            },
            p.ports,
            p.enforced,
            p.blocks_sent,
            p.blocks_unchanged
        );
    }
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

/// A partition plan resolved on a model (`sm run --direct --partitions`: nothing is
/// programmed), in one line.
pub fn partitions_plan_text(p: &sm::partitions::PkeyPlan) -> String {
    format!(
        "partitions: {} (the default included), {} port P_Key tables, {} switch ports enforced (resolved on the model, not programmed)\n",
        p.partitions.len(),
        p.tables.len(),
        p.enforced.len()
    )
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

#[cfg(test)]
mod tests {
    use fabric::generate::{LeafSpineParams, leaf_spine};
    use sm::routing::EngineKind;

    use super::*;

    /// A radix-4 leaf–spine: 4 leaves of 2 hosts, 2 spines.
    fn small() -> Fabric {
        leaf_spine(&LeafSpineParams {
            radix: 4,
            ..Default::default()
        })
        .unwrap()
    }

    /// Phase timings are the machine's, not the model's.
    fn masked(text: &str) -> String {
        text.lines()
            .map(|l| match l.strip_suffix(" ms") {
                Some(head) if l.starts_with("  phase ") => format!("{} [T] ms", head.rsplit_once(' ').unwrap().0),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn sweep_text_reports_discovery_lids_engine_and_a_subnet_up() {
        let f = small();
        let sm_port = sm::lids::default_sm_port(&f).unwrap();
        let opts = sm::sweep::SweepOptions {
            engines: vec![EngineKind::Ftree],
            ..Default::default()
        };
        let mut mgr = sm::sweep::SubnetManager::new(opts, sm_port.1.max(1));
        let rep = mgr.heavy_sweep(&mut sm::sma::InProcess::new(f, sm_port));
        let t = sweep_text(mgr.fabric.as_ref(), &rep);
        assert!(
            t.starts_with("heavy sweep: 6 switches, 8 CAs, 16 links discovered\n"),
            "{t}"
        );
        assert!(
            t.contains("lids: 14 ports, max LID 14, 0 kept from guid2lid, 0 moved\n"),
            "{t}"
        );
        assert!(
            t.contains("reachability: 56 of 56 CA-to-CA pairs arrive; 0 non-minimal"),
            "{t}"
        );
        assert!(t.ends_with("validation: ok\nsubnet UP\n"), "{t}");
        insta::assert_snapshot!(masked(&t));
    }

    #[test]
    fn direct_run_reports_lids_engine_and_validation() {
        let f = small();
        let o = sm::run::RunOptions {
            engines: vec![EngineKind::Ftree, EngineKind::UpDn],
            ..Default::default()
        };
        let (_, rep) = sm::run::run(&f, &o).unwrap();
        let t = summary_text(&f, &rep);
        assert!(t.starts_with("fabric: 6 switches, 8 CAs, 16 links\n"), "{t}");
        assert!(t.contains("engine: ftree (1 VL)\n"), "{t}");
        assert!(t.contains("credit loops: none ("), "{t}");
        insta::assert_snapshot!(masked(&t));
    }
}
