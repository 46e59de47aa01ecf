//! One table over a study: every shard's swept values and headline metrics, each
//! metric's spread against each swept field, and the recommendation per value.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::run::{ShardState, shard_dir, state};
use crate::study::Study;

/// One shard's row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// Shard index.
    pub index: usize,
    /// Swept field → value as the study wrote it.
    pub point: BTreeMap<String, String>,
    /// `done`, `failed` or `missing`.
    pub state: &'static str,
    /// The last error of a failed shard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `infiniband`, `rocev2` or `neither`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<String>,
    /// Metric → value (ring busbw per NIC per variant, incast completion,
    /// drops, TCO per technology).
    pub metrics: BTreeMap<String, f64>,
}

/// A metric's spread over the shards that share one value of one field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub field: String,
    pub value: String,
    pub metric: String,
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// The recommendation's count at one value of one field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub field: String,
    pub value: String,
    /// Recommendation → shards.
    pub counts: BTreeMap<String, usize>,
}

/// The merged study.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Merged {
    pub study: String,
    pub fields: Vec<String>,
    pub shards: usize,
    pub done: usize,
    pub failed: usize,
    pub missing: usize,
    pub rows: Vec<Row>,
    pub spreads: Vec<Spread>,
    pub decisions: Vec<Decision>,
}

/// What one shard's results.json says, as metrics.
fn metrics(v: &serde_json::Value) -> (Option<String>, BTreeMap<String, f64>) {
    let mut m = BTreeMap::new();
    for var in v["variants"].as_array().into_iter().flatten() {
        let id = var["id"].as_str().unwrap_or("?");
        let ring = var["collectives"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["op"] == "all-reduce-ring")
            .and_then(|c| c["rows"].as_array().and_then(|r| r.last()).cloned());
        if let Some(r) = ring {
            if let Some(b) = r["busbw_per_nic"].as_f64() {
                m.insert(format!("{id}.ring_busbw_gbs"), b);
            }
            if let Some(t) = r["time_us"].as_f64() {
                m.insert(format!("{id}.ring_time_us"), t);
            }
        }
        if let Some(t) = var["incast"]["completion_us"].as_f64() {
            m.insert(format!("{id}.incast_us"), t);
        }
        if let Some(d) = var["counters"]["drops"].as_f64() {
            m.insert(format!("{id}.drops"), d);
        }
    }
    for t in v["advice"]["tco"].as_array().into_iter().flatten() {
        if let (Some(tech), Some(total)) = (t["tech"].as_str(), t["total_usd"].as_f64()) {
            m.insert(format!("tco.{tech}_usd"), total);
        }
    }
    (v["advice"]["recommendation"].as_str().map(str::to_string), m)
}

fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Merge every shard of `study` in `out`.
pub fn merge(study: &Study, out: &Path) -> Merged {
    let mut rows = Vec::with_capacity(study.shards.len());
    let (mut done, mut failed, mut missing) = (0, 0, 0);
    for s in &study.shards {
        let point = s.point.iter().map(|(k, v)| (k.clone(), value_text(v))).collect();
        let mut row = Row {
            index: s.index,
            point,
            state: "missing",
            error: None,
            recommendation: None,
            metrics: BTreeMap::new(),
        };
        match state(out, s.index) {
            ShardState::Done => {
                let p = shard_dir(out, s.index).join("results.json");
                match std::fs::read(&p)
                    .map_err(|e| e.to_string())
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string()))
                {
                    Ok(v) => {
                        done += 1;
                        row.state = "done";
                        (row.recommendation, row.metrics) = metrics(&v);
                    }
                    Err(e) => {
                        failed += 1;
                        row.state = "failed";
                        row.error = Some(format!("{}: {e}", p.display()));
                    }
                }
            }
            ShardState::Failed { last, .. } => {
                failed += 1;
                row.state = "failed";
                row.error = Some(last);
            }
            ShardState::Missing => missing += 1,
        }
        rows.push(row);
    }
    let mut spreads = Vec::new();
    let mut decisions = Vec::new();
    for field in &study.fields {
        let mut by: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.state == "done") {
            if let Some(v) = r.point.get(field) {
                by.entry(v.clone()).or_default().push(r);
            }
        }
        for (value, rs) in &by {
            let mut names: Vec<&String> = rs.iter().flat_map(|r| r.metrics.keys()).collect();
            names.sort();
            names.dedup();
            for metric in names {
                let mut xs: Vec<f64> = rs.iter().filter_map(|r| r.metrics.get(metric).copied()).collect();
                xs.sort_by(f64::total_cmp);
                spreads.push(Spread {
                    field: field.clone(),
                    value: value.clone(),
                    metric: metric.clone(),
                    n: xs.len(),
                    min: xs[0],
                    median: xs[xs.len() / 2],
                    max: xs[xs.len() - 1],
                });
            }
            let mut counts = BTreeMap::new();
            for r in rs {
                *counts
                    .entry(r.recommendation.clone().unwrap_or_else(|| "none".into()))
                    .or_insert(0) += 1;
            }
            decisions.push(Decision {
                field: field.clone(),
                value: value.clone(),
                counts,
            });
        }
    }
    Merged {
        study: study.name.clone(),
        fields: study.fields.clone(),
        shards: study.shards.len(),
        done,
        failed,
        missing,
        rows,
        spreads,
        decisions,
    }
}

/// Every shard as CSV: index, the swept fields, state, recommendation, then
/// every metric any shard has.
pub fn csv(m: &Merged) -> String {
    let mut names: Vec<&String> = m.rows.iter().flat_map(|r| r.metrics.keys()).collect();
    names.sort();
    names.dedup();
    let quote = |s: &str| {
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut o = String::from("shard");
    for f in &m.fields {
        o.push(',');
        o.push_str(&quote(f));
    }
    o.push_str(",state,recommendation");
    for n in &names {
        o.push(',');
        o.push_str(&quote(n));
    }
    o.push('\n');
    for r in &m.rows {
        o.push_str(&r.index.to_string());
        for f in &m.fields {
            o.push(',');
            o.push_str(&quote(r.point.get(f).map_or("", String::as_str)));
        }
        o.push(',');
        o.push_str(r.state);
        o.push(',');
        o.push_str(r.recommendation.as_deref().unwrap_or(""));
        for n in &names {
            o.push(',');
            if let Some(x) = r.metrics.get(*n) {
                o.push_str(&format!("{x}"));
            }
        }
        o.push('\n');
    }
    o
}
