//! A study file: a base comparison scenario and the axes to vary, expanded into
//! shards, each a complete scenario checked by the same loader `compare` uses.
//!
//! ```toml
//! name = "nic-speed"
//! scenario = "base.toml"        # relative to the study file; default: built-in
//!
//! [grid]                        # every combination, in key order
//! "cluster.nic_gbps" = [200, 400]
//! seed = [1, 2, 3]
//!
//! [[points]]                    # or: explicit points, each a set of fields
//! "cluster.servers" = 8
//!
//! [random]                      # or: a seeded sample of ranges
//! samples = 20
//! seed = 7
//! "cluster.servers" = { min = 4, max = 16 }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lab::Scenario;
use rand::{Rng, SeedableRng};

/// Why a study cannot be expanded.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// The study file could not be read.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The study file is not TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse { path: String, message: String },
    /// A swept field that no scenario has.
    #[error("{path}: `{field}` is not a scenario field{hint} (`rdmalab scenario explain` lists them)")]
    UnknownField { path: String, field: String, hint: String },
    /// An axis with no value, or a range that holds none.
    #[error("{path}: `{field}`: {why}")]
    Empty { path: String, field: String, why: String },
    /// A point that the scenario loader refuses.
    #[error("{path}: shard {shard} ({point}): {source}")]
    Point {
        path: String,
        shard: usize,
        point: String,
        #[source]
        source: Box<lab::ScenarioError>,
    },
    /// The base scenario could not be read.
    #[error("{path}: base scenario")]
    Base {
        path: String,
        #[source]
        source: Box<lab::ScenarioError>,
    },
}

/// One shard: the values it sets and the scenario they make.
#[derive(Clone, Debug, PartialEq)]
pub struct Shard {
    /// Index in the study, from 0.
    pub index: usize,
    /// Field → value, in the study's key order.
    pub point: BTreeMap<String, toml::Value>,
    /// The scenario as it will run.
    pub scenario: Scenario,
}

/// An expanded study.
#[derive(Clone, Debug, PartialEq)]
pub struct Study {
    /// The study's name.
    pub name: String,
    /// The swept fields, in order.
    pub fields: Vec<String>,
    /// Every shard.
    pub shards: Vec<Shard>,
    /// The study file's text, kept beside the shards.
    pub text: String,
    /// The base scenario every shard starts from.
    pub base: Scenario,
}

/// Fields a study may set: every comparison field `scenario explain` lists.
fn known(field: &str) -> bool {
    lab::scenario::FIELDS.iter().any(|(f, _, _)| *f == field)
}

fn hint(field: &str) -> String {
    let last = field.rsplit('.').next().unwrap_or(field);
    let close: Vec<&str> = lab::scenario::FIELDS
        .iter()
        .map(|(f, _, _)| *f)
        .filter(|f| f.ends_with(last) || f.contains(last) || last.contains(f.rsplit('.').next().unwrap_or(f)))
        .take(3)
        .collect();
    if close.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", close.join(", "))
    }
}

/// Set the dotted `field` of a scenario's TOML form to `v`.
fn set(table: &mut toml::Table, field: &str, v: toml::Value) {
    let mut parts: Vec<&str> = field.split('.').collect();
    let last = parts.pop().unwrap_or(field);
    let mut t = table;
    for p in parts {
        t = t
            .entry(p)
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .expect("a scenario section is a table");
    }
    t.insert(last.to_string(), v);
}

impl Study {
    /// Read and expand a study file.
    pub fn load(path: &Path) -> Result<Study, StudyError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| StudyError::Io {
            path: p.clone(),
            source,
        })?;
        Study::parse(&text, path)
    }

    /// Expand study text; `path` names it and anchors the base scenario's path.
    pub fn parse(text: &str, path: &Path) -> Result<Study, StudyError> {
        Study::parse_with(text, path, None)
    }

    /// The study a study folder holds: its study.toml over its base.toml (the
    /// base scenario as it was when the study was laid out).
    pub fn from_out(out: &Path) -> Result<Study, StudyError> {
        let bp = out.join("base.toml");
        let base = Scenario::load(&bp).map_err(|source| StudyError::Base {
            path: bp.display().to_string(),
            source: Box::new(source),
        })?;
        let sp = out.join("study.toml");
        let text = std::fs::read_to_string(&sp).map_err(|source| StudyError::Io {
            path: sp.display().to_string(),
            source,
        })?;
        Study::parse_with(&text, &sp, Some(base))
    }

    fn parse_with(text: &str, path: &Path, given_base: Option<Scenario>) -> Result<Study, StudyError> {
        let p = path.display().to_string();
        let parse = |message: String| StudyError::Parse {
            path: p.clone(),
            message,
        };
        let mut t: toml::Table = toml::from_str(text).map_err(|e| parse(e.to_string().trim_end().to_string()))?;
        for k in t.keys() {
            if !["name", "scenario", "grid", "points", "random"].contains(&k.as_str()) {
                return Err(parse(format!(
                    "unknown key `{k}`; a study has name, scenario, and one of [grid], [[points]], [random]"
                )));
            }
        }
        let name = match t.remove("name") {
            Some(toml::Value::String(s)) => s,
            Some(_) => return Err(parse("`name` must be a string".into())),
            None => return Err(parse("missing `name`".into())),
        };
        let base = match (given_base, t.remove("scenario")) {
            (Some(b), _) => b,
            (None, None) => Scenario::default_rail(),
            (None, Some(toml::Value::String(s))) => {
                let b: PathBuf = path.parent().unwrap_or(Path::new(".")).join(&s);
                Scenario::load(&b).map_err(|source| StudyError::Base {
                    path: p.clone(),
                    source: Box::new(source),
                })?
            }
            (None, Some(_)) => return Err(parse("`scenario` must be a path string".into())),
        };
        let check = |field: &str| -> Result<(), StudyError> {
            if known(field) {
                Ok(())
            } else {
                Err(StudyError::UnknownField {
                    path: p.clone(),
                    field: field.into(),
                    hint: hint(field),
                })
            }
        };
        let forms = ["grid", "points", "random"]
            .iter()
            .filter(|k| t.contains_key(**k))
            .count();
        if forms != 1 {
            return Err(parse(format!(
                "give exactly one of [grid], [[points]], [random] (found {forms})"
            )));
        }
        let mut points: Vec<BTreeMap<String, toml::Value>> = Vec::new();
        let mut fields: Vec<String> = Vec::new();
        if let Some(g) = t.remove("grid") {
            let g = g.as_table().ok_or_else(|| parse("[grid] must be a table".into()))?;
            points.push(BTreeMap::new());
            for (field, vals) in g {
                check(field)?;
                let vals = vals.as_array().ok_or_else(|| StudyError::Empty {
                    path: p.clone(),
                    field: field.clone(),
                    why: "a grid axis is a list of values".into(),
                })?;
                if vals.is_empty() {
                    return Err(StudyError::Empty {
                        path: p.clone(),
                        field: field.clone(),
                        why: "an empty list: the grid would have no point".into(),
                    });
                }
                fields.push(field.clone());
                points = points
                    .into_iter()
                    .flat_map(|pt| {
                        vals.iter().map(move |v| {
                            let mut q = pt.clone();
                            q.insert(field.clone(), v.clone());
                            q
                        })
                    })
                    .collect();
            }
        } else if let Some(list) = t.remove("points") {
            let list = list
                .as_array()
                .ok_or_else(|| parse("[[points]] must be an array of tables".into()))?;
            if list.is_empty() {
                return Err(parse("[[points]] is empty".into()));
            }
            for pt in list {
                let pt = pt
                    .as_table()
                    .ok_or_else(|| parse("each [[points]] entry is a table".into()))?;
                let mut q = BTreeMap::new();
                for (field, v) in pt {
                    check(field)?;
                    if !fields.contains(field) {
                        fields.push(field.clone());
                    }
                    q.insert(field.clone(), v.clone());
                }
                points.push(q);
            }
        } else if let Some(r) = t.remove("random") {
            let mut r = r
                .as_table()
                .cloned()
                .ok_or_else(|| parse("[random] must be a table".into()))?;
            let int = |v: Option<toml::Value>, k: &str| -> Result<i64, StudyError> {
                v.and_then(|v| v.as_integer())
                    .ok_or_else(|| parse(format!("[random] needs an integer `{k}`")))
            };
            let samples = int(r.remove("samples"), "samples")?;
            let seed = int(r.remove("seed"), "seed")?;
            if samples < 1 {
                return Err(StudyError::Empty {
                    path: p.clone(),
                    field: "random.samples".into(),
                    why: format!("{samples}: at least one sample"),
                });
            }
            let mut ranges = Vec::new();
            for (field, v) in &r {
                check(field)?;
                let rt = v.as_table().ok_or_else(|| StudyError::Empty {
                    path: p.clone(),
                    field: field.clone(),
                    why: "a range is { min = …, max = … }".into(),
                })?;
                let (lo, hi) = (rt.get("min").cloned(), rt.get("max").cloned());
                match (lo, hi) {
                    (Some(toml::Value::Integer(a)), Some(toml::Value::Integer(b))) if a <= b => {
                        ranges.push((field.clone(), toml::Value::Integer(a), toml::Value::Integer(b)))
                    }
                    (Some(toml::Value::Float(a)), Some(toml::Value::Float(b))) if a <= b => {
                        ranges.push((field.clone(), toml::Value::Float(a), toml::Value::Float(b)))
                    }
                    _ => {
                        return Err(StudyError::Empty {
                            path: p.clone(),
                            field: field.clone(),
                            why: "an empty range: min and max must be numbers of one kind with min ≤ max".into(),
                        });
                    }
                }
                fields.push(field.clone());
            }
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed as u64);
            for _ in 0..samples {
                let mut q = BTreeMap::new();
                for (field, lo, hi) in &ranges {
                    let v = match (lo, hi) {
                        (toml::Value::Integer(a), toml::Value::Integer(b)) => {
                            toml::Value::Integer(rng.random_range(*a..=*b))
                        }
                        (toml::Value::Float(a), toml::Value::Float(b)) => {
                            toml::Value::Float(if a == b { *a } else { rng.random_range(*a..*b) })
                        }
                        _ => unreachable!("ranges are checked to be of one kind"),
                    };
                    q.insert(field.clone(), v);
                }
                points.push(q);
            }
        }
        let base_toml: toml::Table = toml::from_str(&base.to_toml()).map_err(|e| parse(e.to_string()))?;
        let mut shards = Vec::with_capacity(points.len());
        for (index, point) in points.into_iter().enumerate() {
            let mut st = base_toml.clone();
            for (f, v) in &point {
                set(&mut st, f, v.clone());
            }
            let text = toml::to_string_pretty(&st).map_err(|e| parse(e.to_string()))?;
            let scenario =
                Scenario::from_toml(&text, &format!("{p} shard {index}")).map_err(|source| StudyError::Point {
                    path: p.clone(),
                    shard: index,
                    point: describe(&point),
                    source: Box::new(source),
                })?;
            shards.push(Shard { index, point, scenario });
        }
        Ok(Study {
            name,
            fields,
            shards,
            text: text.to_string(),
            base,
        })
    }
}

/// A point in words: `cluster.nic_gbps=400, seed=2`.
pub fn describe(point: &BTreeMap<String, toml::Value>) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
