//! `rdmalab sweep`: a study's state and its merged table.

use std::fmt::Write as _;

use sweep::Merged;

/// Done, failed and missing shards, with each failed shard's last error.
pub fn status(m: &Merged) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "study {}: {} shards, {} done, {} failed, {} missing",
        m.study, m.shards, m.done, m.failed, m.missing
    );
    for r in m.rows.iter().filter(|r| r.state == "failed") {
        let _ = writeln!(o, "  shard {:05} failed: {}", r.index, r.error.as_deref().unwrap_or(""));
    }
    o
}

/// Shards Slurm still holds, by state (empty when none).
pub fn queued(q: &std::collections::BTreeMap<usize, String>) -> String {
    if q.is_empty() {
        return String::new();
    }
    let mut by: std::collections::BTreeMap<&str, usize> = Default::default();
    for s in q.values() {
        *by.entry(s.as_str()).or_default() += 1;
    }
    let parts: Vec<String> = by.iter().map(|(s, n)| format!("{n} {}", s.to_lowercase())).collect();
    format!("in Slurm's queue: {}\n", parts.join(", "))
}

/// The decision per swept value and each metric's spread.
pub fn merged(m: &Merged, out: &std::path::Path) -> String {
    let mut o = status(m);
    for d in &m.decisions {
        let counts: Vec<String> = d.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(o, "{} = {}: recommendation {}", d.field, d.value, counts.join(", "));
    }
    let _ = writeln!(
        o,
        "\n{:<24} {:>10} {:<28} {:>4} {:>12} {:>12} {:>12}",
        "field", "value", "metric", "n", "min", "median", "max"
    );
    for s in &m.spreads {
        let _ = writeln!(
            o,
            "{:<24} {:>10} {:<28} {:>4} {:>12.4} {:>12.4} {:>12.4}",
            s.field, s.value, s.metric, s.n, s.min, s.median, s.max
        );
    }
    let _ = writeln!(
        o,
        "\nwrote {} and {}",
        out.join("merged.json").display(),
        out.join("merged.csv").display()
    );
    o
}
