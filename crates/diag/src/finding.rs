//! Findings: what a check or the linter reports, where, why it matters and the fix.
//!
//! Shared by the RoCE linter ([`crate::roce`]) and the InfiniBand checks
//! ([`crate::ib`]). Rendering is deterministic: findings are sorted by
//! (severity, rule, file, location, message) before they are printed.

use std::fmt;

use serde::Serialize;

/// How bad a finding is. Errors make the command exit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The configuration or fabric is broken: traffic will drop, deadlock or not flow.
    Error,
    /// Likely wrong or risky; works in the common case.
    Warning,
    /// Worth knowing; not a fault.
    Info,
}

impl Severity {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a finding is: a file and, inside it, a table/key/field (SONiC), a line, or
/// a node/port (InfiniBand).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Location {
    /// The file the finding comes from (as given on the command line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// SONiC table (`PORT_QOS_MAP`), or an InfiniBand object kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The key inside the table exactly as written (`Ethernet0|3-4`), or a node name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The field inside the entry (`pfc_enable`), or a port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 1-based line, for line-oriented inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Location {
    /// A location in `file` only.
    pub fn file(file: &str) -> Location {
        Location {
            file: Some(file.to_string()),
            ..Location::default()
        }
    }

    /// `file`, table, key, field.
    pub fn entry(file: &str, table: &str, key: &str, field: Option<&str>) -> Location {
        Location {
            file: Some(file.to_string()),
            table: Some(table.to_string()),
            key: Some(key.to_string()),
            field: field.map(str::to_string),
            line: None,
        }
    }

    /// Set the line.
    pub fn at_line(mut self, line: usize) -> Location {
        self.line = Some(line);
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wrote = false;
        if let Some(file) = &self.file {
            f.write_str(file)?;
            if let Some(l) = self.line {
                write!(f, ":{l}")?;
            }
            wrote = true;
        }
        if self.table.is_some() || self.key.is_some() {
            if wrote {
                f.write_str(" ")?;
            }
            // Comma-joined port keys can run to hundreds of characters; the terminal
            // shows a prefix (JSON keeps the whole key).
            let short;
            let key = match &self.key {
                Some(k) if k.chars().count() > 64 => {
                    short = format!(
                        "{}...({} chars)",
                        k.chars().take(40).collect::<String>(),
                        k.chars().count()
                    );
                    Some(&short)
                }
                other => other.as_ref(),
            };
            match (&self.table, key) {
                (Some(t), Some(k)) => write!(f, "{t}|{k}")?,
                (Some(t), None) => f.write_str(t)?,
                (None, Some(k)) => f.write_str(k)?,
                (None, None) => {}
            }
            wrote = true;
        }
        if let Some(fl) = &self.field {
            if wrote {
                f.write_str(" ")?;
            }
            write!(f, "[{fl}]")?;
        }
        Ok(())
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Rule id, e.g. `pfc-not-enabled` or `credit-loop`.
    pub rule: &'static str,
    /// How bad.
    pub severity: Severity,
    /// Where.
    pub location: Location,
    /// What is wrong, with the values involved.
    pub message: String,
    /// Why it matters (the rule's rationale, with its source).
    pub why: &'static str,
    /// What to change.
    pub fix: String,
}

impl Finding {
    fn sort_key(&self) -> (Severity, &'static str, &Location, &str) {
        (self.severity, self.rule, &self.location, &self.message)
    }
}

/// Sort findings into their canonical, deterministic order and drop exact duplicates.
pub fn normalize(findings: &mut Vec<Finding>) {
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
}

/// Counts by severity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Error findings.
    pub errors: usize,
    /// Warnings.
    pub warnings: usize,
    /// Informational findings.
    pub infos: usize,
}

impl Counts {
    /// Count `findings`.
    pub fn of(findings: &[Finding]) -> Counts {
        let mut c = Counts::default();
        for f in findings {
            match f.severity {
                Severity::Error => c.errors += 1,
                Severity::Warning => c.warnings += 1,
                Severity::Info => c.infos += 1,
            }
        }
        c
    }
}

/// One line per finding: `error   rule-id  location: message (fix: ...)`.
pub fn render_line(f: &Finding) -> String {
    format!(
        "{:<7} {:<20} {}: {} (fix: {})",
        f.severity.name(),
        f.rule,
        f.location,
        f.message,
        f.fix
    )
}

/// The "why" legend: each rule that fired, once, with its rationale.
pub fn render_why(findings: &[Finding]) -> Vec<String> {
    let mut seen: Vec<(&'static str, &'static str)> = findings.iter().map(|f| (f.rule, f.why)).collect();
    seen.sort();
    seen.dedup();
    seen.into_iter().map(|(r, w)| format!("  {r}: {w}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_display_forms() {
        let l = Location::entry("a.json", "PORT_QOS_MAP", "Ethernet0", Some("pfc_enable"));
        assert_eq!(l.to_string(), "a.json PORT_QOS_MAP|Ethernet0 [pfc_enable]");
        assert_eq!(Location::file("x.txt").at_line(7).to_string(), "x.txt:7");
    }

    #[test]
    fn normalize_sorts_errors_first_and_dedups() {
        let mk = |s, r: &'static str| Finding {
            rule: r,
            severity: s,
            location: Location::file("f"),
            message: "m".into(),
            why: "w",
            fix: "x".into(),
        };
        let mut v = vec![
            mk(Severity::Warning, "b"),
            mk(Severity::Error, "z"),
            mk(Severity::Error, "z"),
        ];
        normalize(&mut v);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].severity, Severity::Error);
        assert_eq!(
            Counts::of(&v),
            Counts {
                errors: 1,
                warnings: 1,
                infos: 0
            }
        );
    }
}
