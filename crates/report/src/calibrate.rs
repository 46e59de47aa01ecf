//! `rdmalab calibrate`: the fitted parameters per fabric with their residuals,
//! the rows left out of the fits and why, what `compare --calibration` will
//! apply, and where the file went.

use std::fmt::Write as _;

use calibrate::{Calibrated, Fabric, Scope, Unit};

fn value(v: f64, u: Unit) -> String {
    match u {
        Unit::Ns => format!("{v:.1}"),
        Unit::NsPerByte => format!("{v:.4}"),
        Unit::Us => format!("{v:.2}"),
        Unit::GBps => format!("{v:.3}"),
    }
}

/// The summary `rdmalab calibrate` prints.
pub fn summary(c: &Calibrated, out: &std::path::Path) -> String {
    let cal = &c.calibration;
    let mut o = String::new();
    let fabrics: Vec<Fabric> = Fabric::ALL
        .into_iter()
        .filter(|f| cal.sources.iter().any(|s| s.fabric == *f))
        .collect();
    let _ = writeln!(
        o,
        "rdmalab calibrate: {} file(s); {}",
        cal.sources.len(),
        fabrics.iter().map(|f| f.label()).collect::<Vec<_>>().join(" and ")
    );
    for f in &fabrics {
        let tests: Vec<&str> = cal
            .sources
            .iter()
            .filter(|s| s.fabric == *f)
            .map(|s| s.test.as_str())
            .collect();
        let _ = writeln!(o, "\n{} ({})", f.label(), tests.join(", "));
        let _ = writeln!(
            o,
            "  {:<20} {:<19} {:>12} {:<5} {:>9} {:>5}",
            "scope", "parameter", "value", "unit", "residual", "rows"
        );
        for p in cal.parameters.iter().filter(|p| p.fabric == *f) {
            let _ = writeln!(
                o,
                "  {:<20} {:<19} {:>12} {:<5} {:>8.2}% {:>5}",
                p.scope.name(),
                p.name.name(),
                value(p.value, p.unit),
                p.unit.name(),
                p.residual * 100.0,
                p.rows
            );
        }
    }
    let _ = writeln!(
        o,
        "\nresidual: largest |fitted - measured| / measured over the rows fitted (0 for a value as printed)"
    );
    // each left-out row once (nccl-tests rows carry two series)
    let mut left: Vec<(&str, usize, u64, Scope, &str)> = Vec::new();
    for r in &c.rows {
        if let Some(why) = &r.excluded
            && !left.iter().any(|l| l.0 == r.path && l.1 == r.line)
        {
            left.push((&r.path, r.line, r.size, r.scope, why));
        }
    }
    if !left.is_empty() {
        let _ = writeln!(o, "\nrows left out of the fits ({}):", left.len());
        for (path, line, size, scope, why) in left {
            let _ = writeln!(o, "  {}:{line} {} {size} B: {why}", path, scope.name());
        }
    }
    let notes: Vec<String> = cal
        .sources
        .iter()
        .flat_map(|s| s.notes.iter().map(move |n| format!("  {}: {n}", s.path)))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "\nnotes:");
        for n in notes {
            let _ = writeln!(o, "{n}");
        }
    }
    let _ = writeln!(o);
    for f in Fabric::ALL {
        match cal.endpoint(f) {
            Some(e) => {
                let _ = writeln!(
                    o,
                    "compare --calibration applies to {}: NIC send latency {:.1} ns, receive latency {:.1} ns",
                    f.label(),
                    e.tx_ns,
                    e.rx_ns
                );
            }
            None if fabrics.contains(&f) => {
                let _ = writeln!(
                    o,
                    "compare --calibration applies nothing to {}: its endpoint latencies need ib_write_lat and ib_send_lat",
                    f.label()
                );
            }
            None => {}
        }
    }
    let _ = writeln!(o, "wrote {}", out.display());
    o
}
