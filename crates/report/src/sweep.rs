//! `rdmalab sweep`: a study's state and its merged table.

use std::fmt::Write as _;

use sweep::Merged;
use sweep::merge::Spread;

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
        "\nwrote {}, {} and {}",
        out.join("merged.json").display(),
        out.join("merged.csv").display(),
        out.join("report.html").display()
    );
    o
}

/// The merged study as one self-contained HTML page: the state of the shards,
/// the recommendation per swept value, each metric's median (with its min and
/// max over the other fields and seeds) against each numeric swept field, and
/// the spreads as a table. Every figure is a number of merged.json.
pub fn html(m: &Merged) -> String {
    use crate::html::{Block, Document, Table, Tone};
    use crate::svg::{Chart, Scale, Series, TickFormat};
    let mut blocks = vec![Block::Paragraph(format!(
        "{} shards: {} done, {} failed, {} missing. Swept: {}.",
        m.shards,
        m.done,
        m.failed,
        m.missing,
        m.fields.join(", ")
    ))];
    blocks.push(Block::Heading("Recommendation per swept value".into()));
    blocks.push(Block::Table(Table {
        id: "decisions".into(),
        caption: "shards recommending each technology, by the value of one swept field".into(),
        header: vec!["field".into(), "value".into(), "recommendation (shards)".into()],
        rows: m
            .decisions
            .iter()
            .map(|d| {
                let counts: Vec<String> = d.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
                vec![
                    (d.field.clone(), Tone::Plain),
                    (d.value.clone(), Tone::Plain),
                    (
                        counts.join(", "),
                        if d.counts.len() > 1 { Tone::Warn } else { Tone::Plain },
                    ),
                ]
            })
            .collect(),
    }));
    blocks.push(Block::Heading("Metrics against the swept fields".into()));
    for field in &m.fields {
        let numeric = m
            .spreads
            .iter()
            .filter(|s| &s.field == field)
            .all(|s| s.value.parse::<f64>().is_ok());
        if !numeric {
            continue;
        }
        let mut metrics: Vec<&str> = m
            .spreads
            .iter()
            .filter(|s| &s.field == field)
            .map(|s| s.metric.as_str())
            .collect();
        metrics.sort_unstable();
        metrics.dedup();
        for metric in metrics {
            let pts: Vec<&Spread> = m
                .spreads
                .iter()
                .filter(|s| &s.field == field && s.metric == metric)
                .collect();
            let series = |name: &str, f: &dyn Fn(&Spread) -> f64| Series {
                name: name.into(),
                points: {
                    let mut p: Vec<(f64, f64)> = pts
                        .iter()
                        .map(|s| (s.value.parse::<f64>().unwrap_or(f64::NAN), f(s)))
                        .collect();
                    p.sort_by(|a, b| a.0.total_cmp(&b.0));
                    p
                },
                step: false,
            };
            blocks.push(Block::Chart(Chart {
                id: format!("{field}-{metric}").replace(['.', ' '], "-"),
                title: format!("{metric} against {field}"),
                x_label: field.clone(),
                y_label: metric.into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                x_fmt: TickFormat::Number,
                y_fmt: TickFormat::Number,
                series: vec![
                    series("median", &|s| s.median),
                    series("min", &|s| s.min),
                    series("max", &|s| s.max),
                ],
            }));
        }
    }
    blocks.push(Block::Heading("Every spread".into()));
    blocks.push(Block::Table(Table {
        id: "spreads".into(),
        caption: "each metric over the shards that share one swept value".into(),
        header: ["field", "value", "metric", "n", "min", "median", "max"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        rows: m
            .spreads
            .iter()
            .map(|s| {
                vec![
                    (s.field.clone(), Tone::Plain),
                    (s.value.clone(), Tone::Plain),
                    (s.metric.clone(), Tone::Plain),
                    (s.n.to_string(), Tone::Plain),
                    (format!("{}", s.min), Tone::Plain),
                    (format!("{}", s.median), Tone::Plain),
                    (format!("{}", s.max), Tone::Plain),
                ]
            })
            .collect(),
    }));
    Document {
        title: format!("rdmalab sweep: {}", m.study),
        subtitle: "merged study (merged.json, merged.csv beside this page)".into(),
        blocks,
    }
    .render()
}
