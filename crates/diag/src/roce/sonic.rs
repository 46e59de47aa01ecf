//! SONiC CONFIG_DB reader: nested and flat (redis-dump) JSON, compound keys, port
//! lists and ranges, and both reference styles.
//!
//! Forms accepted (roce-config.md §1.1; samples in `shared/formats/sonic`):
//!
//! ```text
//! nested   {"TABLE": {"key": {"field": "value"}}}          config_db.json, qos.json
//! flat     {"TABLE|key": {"field": "value"}}               redis-dump, db_migrator inputs
//! keys     "Ethernet0|3-4"   "Ethernet0,Ethernet4|3"   "Ethernet0-8|3"   "host|asic0|Ethernet0|3"
//! refs     "AZURE"   "[DSCP_TO_TC_MAP|AZURE]"                new and old (DB ≤ 3.0.1) styles
//! ```
//!
//! Values are kept as strings, the way CONFIG_DB stores them; numbers and booleans
//! written as JSON scalars are accepted and turned into their text. The whole file is
//! held as `BTreeMap`s so every walk over it is in a stable order.

use std::collections::BTreeMap;

use crate::roce::error::LintError;

/// One CONFIG_DB entry: field → value.
pub type Fields = BTreeMap<String, String>;

/// table → key (as written) → fields.
pub type Tables = BTreeMap<String, BTreeMap<String, Fields>>;

/// A value that could not be read as a field (null or a nested object); reported by
/// the linter as `invalid-value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// Table.
    pub table: String,
    /// Key as written (empty for a whole table).
    pub key: String,
    /// Field, when one field was bad.
    pub field: Option<String>,
    /// What was wrong.
    pub what: String,
}

/// A parsed CONFIG_DB file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigDb {
    /// table -> key -> fields.
    pub tables: Tables,
    /// Entries or fields that could not be read, in file order.
    pub malformed: Vec<Malformed>,
    /// True when at least one key used the flat `TABLE|key` form.
    pub flat: bool,
}

impl ConfigDb {
    /// Parse a config_db JSON text. `file` names the file in errors.
    pub fn parse(file: &str, text: &str) -> Result<ConfigDb, LintError> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| LintError::Json {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            // serde_json's text ends in " at line L column C", which the error repeats.
            msg: {
                let m = e.to_string();
                m.rsplit_once(" at line ")
                    .map_or(m.clone(), |(head, _)| head.to_string())
            },
        })?;
        let top = v.as_object().ok_or_else(|| LintError::NotConfigDb {
            file: file.to_string(),
            what: format!("the top level is {}, expected an object of tables", json_kind(&v)),
        })?;
        let mut db = ConfigDb::default();
        for (k, val) in top {
            if let Some((table, key)) = k.split_once('|') {
                db.flat = true;
                db.add_entry(table, key, val);
            } else {
                match val.as_object() {
                    Some(entries) => {
                        db.tables.entry(k.clone()).or_default();
                        for (key, ev) in entries {
                            db.add_entry(k, key, ev);
                        }
                    }
                    None => db.malformed.push(Malformed {
                        table: k.clone(),
                        key: String::new(),
                        field: None,
                        what: format!("table is {}, expected an object of keys", json_kind(val)),
                    }),
                }
            }
        }
        Ok(db)
    }

    fn add_entry(&mut self, table: &str, key: &str, val: &serde_json::Value) {
        let Some(obj) = val.as_object() else {
            self.malformed.push(Malformed {
                table: table.to_string(),
                key: key.to_string(),
                field: None,
                what: format!("entry is {}, expected an object of fields", json_kind(val)),
            });
            return;
        };
        let mut fields = Fields::new();
        for (f, fv) in obj {
            match scalar_text(fv) {
                Some(s) => {
                    fields.insert(f.clone(), s);
                }
                None => self.malformed.push(Malformed {
                    table: table.to_string(),
                    key: key.to_string(),
                    field: Some(f.clone()),
                    what: format!("value is {}, expected a string", json_kind(fv)),
                }),
            }
        }
        self.tables
            .entry(table.to_string())
            .or_default()
            .entry(key.to_string())
            .or_default()
            .extend(fields);
    }

    /// Entries of `table` (empty when absent).
    pub fn table(&self, table: &str) -> impl Iterator<Item = (&String, &Fields)> {
        self.tables.get(table).into_iter().flat_map(|t| t.iter())
    }

    /// True when the file has `table`.
    pub fn has_table(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// One entry.
    pub fn get(&self, table: &str, key: &str) -> Option<&Fields> {
        self.tables.get(table)?.get(key)
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Strings as is; numbers and booleans as their text; arrays of scalars joined by
/// commas (CONFIG_DB list fields such as `members@`); null and objects are not fields.
fn scalar_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        serde_json::Value::Array(a) => {
            let parts: Option<Vec<String>> = a
                .iter()
                .map(|x| match x {
                    serde_json::Value::Array(_) | serde_json::Value::Object(_) | serde_json::Value::Null => None,
                    other => scalar_text(other),
                })
                .collect();
            parts.map(|p| p.join(","))
        }
        serde_json::Value::Null | serde_json::Value::Object(_) => None,
    }
}

/// A reference from one entry to another, in either style.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ref {
    /// The table named in an old-style `[TABLE|name]` reference.
    pub table: Option<String>,
    /// The referenced key.
    pub name: String,
}

/// Parse a reference value: `AZURE` or `[DSCP_TO_TC_MAP|AZURE]`.
/// `None` for an empty value or SONiC's literal `NULL`.
pub fn parse_ref(v: &str) -> Option<Ref> {
    let v = v.trim();
    if v.is_empty() || v == "NULL" {
        return None;
    }
    if let Some(inner) = v.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return Some(match inner.split_once('|') {
            Some((t, n)) => Ref {
                table: Some(t.to_string()),
                name: n.to_string(),
            },
            None => Ref {
                table: None,
                name: inner.to_string(),
            },
        });
    }
    Some(Ref {
        table: None,
        name: v.to_string(),
    })
}

/// Parse a comma-separated list of references (`profile_list`), each in either style.
pub fn parse_ref_list(v: &str) -> Vec<Ref> {
    v.split(',').filter_map(parse_ref).collect()
}

/// A compound key split into its ports and (for PG/queue tables) its index range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// Port names, expanded from comma lists and `Ethernet0-8` ranges.
    pub ports: Vec<String>,
    /// Expanded PG/queue ids from `3`, `3-4` or `0,1`; empty when the table has none.
    pub ids: Vec<u8>,
}

/// Why a key could not be expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError(pub String);

/// Split `key` of a table whose keys end in an index (`BUFFER_PG`, `BUFFER_QUEUE`,
/// `QUEUE`) when `indexed`, or of a port-keyed table otherwise. VOQ keys
/// `host|asic|port|q` keep the last two parts. Port ranges `Ethernet0-8` expand over
/// `known_ports` (the PORT table) when it is given, since SONiC port numbers step by
/// lane count; without a PORT table every number in the range is taken.
pub fn split_key(key: &str, indexed: bool, known_ports: &[String]) -> Result<Key, KeyError> {
    let parts: Vec<&str> = key.split('|').collect();
    let (port_part, id_part) = if indexed {
        if parts.len() < 2 {
            return Err(KeyError(format!("key {key:?} has no '|<index>' part")));
        }
        (parts[parts.len() - 2], Some(parts[parts.len() - 1]))
    } else {
        (*parts.last().unwrap_or(&key), None)
    };
    let ports = expand_ports(port_part, known_ports)?;
    let ids = match id_part {
        Some(s) => parse_id_list(s).map_err(|e| KeyError(format!("key {key:?}: {e}")))?,
        None => Vec::new(),
    };
    Ok(Key { ports, ids })
}

/// Expand `Ethernet0,Ethernet4` and `Ethernet0-8` port lists.
pub fn expand_ports(s: &str, known_ports: &[String]) -> Result<Vec<String>, KeyError> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(KeyError(format!("empty port name in {s:?}")));
        }
        match port_range(item) {
            Some((prefix, lo, hi)) => {
                if lo > hi {
                    return Err(KeyError(format!("port range {item:?} runs backwards")));
                }
                if known_ports.is_empty() {
                    if hi - lo > 4096 {
                        return Err(KeyError(format!("port range {item:?} is implausibly long")));
                    }
                    for n in lo..=hi {
                        out.push(format!("{prefix}{n}"));
                    }
                } else {
                    for p in known_ports {
                        if let Some(n) = p.strip_prefix(prefix).and_then(|d| d.parse::<u32>().ok())
                            && (lo..=hi).contains(&n)
                            && p[prefix.len()..].chars().all(|c| c.is_ascii_digit())
                        {
                            out.push(p.clone());
                        }
                    }
                }
            }
            None => out.push(item.to_string()),
        }
    }
    Ok(out)
}

/// `Ethernet0-8` → ("Ethernet", 0, 8).
fn port_range(item: &str) -> Option<(&str, u32, u32)> {
    let (a, b) = item.split_once('-')?;
    let digits_at = a.find(|c: char| c.is_ascii_digit())?;
    let prefix = &a[..digits_at];
    if prefix.is_empty() {
        return None;
    }
    let lo: u32 = a[digits_at..].parse().ok()?;
    let hi: u32 = b.strip_prefix(prefix).unwrap_or(b).parse().ok()?;
    Some((prefix, lo, hi))
}

/// `3`, `3-4`, `0,1,2`, `0-2,5` → ids (each 0..=255).
pub fn parse_id_list(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (a, b),
            None => (item, item),
        };
        let lo: u8 = lo
            .parse()
            .map_err(|_| format!("{item:?} is not an index or index range"))?;
        let hi: u8 = hi
            .parse()
            .map_err(|_| format!("{item:?} is not an index or index range"))?;
        if lo > hi {
            return Err(format!("range {item:?} runs backwards"));
        }
        out.extend(lo..=hi);
    }
    Ok(out)
}

/// A priority list such as `pfc_enable` (YANG pattern `([0-7](,[0-7])*)?`).
pub fn parse_prio_list(s: &str) -> Result<Vec<u8>, String> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for item in s.split(',') {
        let p: u8 = item
            .trim()
            .parse()
            .map_err(|_| format!("{item:?} is not a priority 0..7"))?;
        if p > 7 {
            return Err(format!("priority {p} is outside 0..7"));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// A `{"<from>": "<to>"}` map table entry (DSCP→TC, TC→PG, TC→queue, PFC→queue).
pub fn parse_u8_map(fields: &Fields, max_from: u8, max_to: u8) -> Result<BTreeMap<u8, u8>, String> {
    let mut m = BTreeMap::new();
    for (k, v) in fields {
        let from: u8 = k.trim().parse().map_err(|_| format!("key {k:?} is not a number"))?;
        let to: u8 = v
            .trim()
            .parse()
            .map_err(|_| format!("value {v:?} for {k} is not a number"))?;
        if from > max_from {
            return Err(format!("key {from} is above {max_from}"));
        }
        if to > max_to {
            return Err(format!("value {to} for {from} is above {max_to}"));
        }
        m.insert(from, to);
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_and_flat_forms_agree() {
        let nested = r#"{"BUFFER_PG": {"Ethernet4|3-4": {"profile": "p"}}}"#;
        let flat = r#"{"BUFFER_PG|Ethernet4|3-4": {"profile": "p"}}"#;
        let a = ConfigDb::parse("a", nested).unwrap();
        let b = ConfigDb::parse("b", flat).unwrap();
        assert_eq!(a.tables, b.tables);
        assert!(b.flat && !a.flat);
    }

    #[test]
    fn keys_expand() {
        let k = split_key("Ethernet0,Ethernet4|3-4", true, &[]).unwrap();
        assert_eq!(k.ports, vec!["Ethernet0", "Ethernet4"]);
        assert_eq!(k.ids, vec![3, 4]);
        let known: Vec<String> = ["Ethernet0", "Ethernet4", "Ethernet8", "Ethernet12"]
            .map(String::from)
            .to_vec();
        let k = split_key("Ethernet0-8", false, &known).unwrap();
        assert_eq!(k.ports, vec!["Ethernet0", "Ethernet4", "Ethernet8"]);
        let k = split_key("Ethernet0-2", false, &[]).unwrap();
        assert_eq!(k.ports, vec!["Ethernet0", "Ethernet1", "Ethernet2"]);
        let k = split_key("str2-7250-lc1-1|asic0|Ethernet0|3", true, &[]).unwrap();
        assert_eq!(k.ports, vec!["Ethernet0"]);
        assert_eq!(k.ids, vec![3]);
        assert!(split_key("Ethernet0", true, &[]).is_err());
        assert!(split_key("Ethernet0|4-3", true, &[]).is_err());
    }

    #[test]
    fn refs_in_both_styles() {
        assert_eq!(
            parse_ref("AZURE"),
            Some(Ref {
                table: None,
                name: "AZURE".into()
            })
        );
        assert_eq!(
            parse_ref("[BUFFER_PROFILE|pg_lossless_100000_40m_profile]"),
            Some(Ref {
                table: Some("BUFFER_PROFILE".into()),
                name: "pg_lossless_100000_40m_profile".into()
            })
        );
        assert_eq!(parse_ref("NULL"), None);
        assert_eq!(parse_ref_list("[BUFFER_PROFILE|a],b").len(), 2);
    }

    #[test]
    fn prio_list_pattern() {
        assert_eq!(parse_prio_list("3,4").unwrap(), vec![3, 4]);
        assert_eq!(parse_prio_list("").unwrap(), Vec::<u8>::new());
        assert!(parse_prio_list("8").is_err());
        assert!(parse_prio_list("3;4").is_err());
    }

    #[test]
    fn json_errors_carry_line_and_column() {
        let e = ConfigDb::parse(
            "x.json",
            "{\n  \"PORT\": {\n    \"Ethernet0\": {\"mtu\": 9100,}\n  }\n}",
        )
        .unwrap_err();
        match e {
            LintError::Json { line, column, .. } => {
                assert_eq!(line, 3);
                assert!(column > 20, "column {column}");
            }
            other => panic!("{other:?}"),
        }
    }
}
