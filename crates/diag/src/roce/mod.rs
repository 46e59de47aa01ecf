//! The RoCE configuration linter: SONiC switch config plus NIC QoS/DCQCN state in,
//! findings out (roce-config.md §5).
//!
//! ```text
//! files ──detect──┬─ config_db JSON ─► sonic::ConfigDb ─┐
//!                 ├─ mlnx_qos output ─► nic::MlnxQos ───┼─► rules::run ─► LintReport
//!                 └─ sysfs dump ──────► nic::SysfsNic ──┘
//! ```

pub mod error;
pub mod headroom;
pub mod nic;
pub mod rules;
pub mod sonic;
pub mod trace;

use serde::Serialize;

pub use error::LintError;
pub use rules::{ALL as RULES, DscpSource, Intent, Rule};

use crate::finding::{self, Counts, Finding};

/// What kind of file a lint input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InputKind {
    /// SONiC config_db JSON.
    ConfigDb,
    /// `mlnx_qos` output.
    MlnxQos,
    /// `path:value` sysfs dump.
    Sysfs,
}

/// A parsed input file.
#[derive(Clone, Debug)]
pub enum Parsed {
    /// A switch configuration.
    ConfigDb(sonic::ConfigDb),
    /// A NIC QoS state.
    MlnxQos(nic::MlnxQos),
    /// NIC DCQCN/RoCE settings, one per interface or device.
    Sysfs(Vec<nic::SysfsNic>),
}

/// Recognise and parse one file's text. JSON (first non-blank byte `{`) is config_db;
/// text with `Priority trust state:` or `PFC configuration:` is mlnx_qos output; text
/// whose first data line starts with `/sys/` is a sysfs dump.
pub fn parse_input(file: &str, text: &str) -> Result<Parsed, LintError> {
    let t = text.trim_start_matches('\u{feff}').trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        return sonic::ConfigDb::parse(file, text).map(Parsed::ConfigDb);
    }
    if text.contains("Priority trust state:") || text.contains("PFC configuration:") {
        return nic::MlnxQos::parse(file, text).map(Parsed::MlnxQos);
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    if first.is_some_and(|l| l.starts_with("/sys/")) {
        return nic::parse_sysfs(file, text).map(Parsed::Sysfs);
    }
    Err(LintError::UnknownFormat { file: file.to_string() })
}

/// Options of a lint run.
#[derive(Clone, Debug, Default)]
pub struct LintOptions {
    /// The DSCP RDMA traffic uses, when no NIC dump says it.
    pub rdma_dscp: Option<u8>,
    /// The DSCP of CNPs, when no NIC dump says it.
    pub cnp_dscp: Option<u8>,
}

/// A file the linter read.
#[derive(Clone, Debug, Serialize)]
pub struct InputFile {
    /// The path as given.
    pub path: String,
    /// What it was read as.
    pub kind: InputKind,
}

/// Result of a lint run.
#[derive(Clone, Debug, Serialize)]
pub struct LintReport {
    /// Files read, with their kind.
    pub files: Vec<InputFile>,
    /// The RDMA DSCPs the rules checked.
    pub rdma_dscps: Vec<u8>,
    /// True when the RDMA DSCP was assumed rather than read or given.
    pub rdma_dscp_assumed: bool,
    /// The CNP DSCP the rules checked.
    pub cnp_dscp: u8,
    /// True when the CNP DSCP was assumed.
    pub cnp_dscp_assumed: bool,
    /// Findings, errors first.
    pub findings: Vec<Finding>,
    /// Findings by severity.
    pub counts: Counts,
}

impl LintReport {
    /// True when any finding is an error.
    pub fn has_errors(&self) -> bool {
        self.counts.errors > 0
    }

    /// Terminal form: one line per finding, the rules' rationale, a summary.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        for f in &self.findings {
            s.push_str(&finding::render_line(f));
            s.push('\n');
        }
        if !self.findings.is_empty() {
            s.push_str("why these matter:\n");
            for l in finding::render_why(&self.findings) {
                s.push_str(&l);
                s.push('\n');
            }
        }
        let dscps: Vec<String> = self.rdma_dscps.iter().map(u8::to_string).collect();
        s.push_str(&format!(
            "lint roce: {} file(s), RDMA DSCP {}{}, CNP DSCP {}{}: {} error(s), {} warning(s), {} info\n",
            self.files.len(),
            dscps.join(","),
            if self.rdma_dscp_assumed { " (assumed)" } else { "" },
            self.cnp_dscp,
            if self.cnp_dscp_assumed { " (assumed)" } else { "" },
            self.counts.errors,
            self.counts.warnings,
            self.counts.infos
        ));
        s
    }

    /// JSON form (pretty, stable field order).
    pub fn render_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }
}

/// Lint already-read files: `(name, text)` pairs.
pub fn lint_texts(files: &[(String, String)], opts: &LintOptions) -> Result<LintReport, LintError> {
    let mut parsed = Vec::with_capacity(files.len());
    for (name, text) in files {
        parsed.push((name.as_str(), parse_input(name, text)?));
    }
    Ok(lint_parsed(&parsed, opts))
}

/// Lint files on disk.
pub fn lint_paths(paths: &[std::path::PathBuf], opts: &LintOptions) -> Result<LintReport, LintError> {
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        let name = p.display().to_string();
        let bytes = std::fs::read(p).map_err(|source| LintError::Io {
            file: name.clone(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| LintError::Nic {
            file: name.clone(),
            line: 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            expected: "UTF-8 text".into(),
            got: "invalid UTF-8".into(),
        })?;
        files.push((name, text));
    }
    lint_texts(&files, opts)
}

/// Lint parsed inputs.
pub fn lint_parsed(parsed: &[(&str, Parsed)], opts: &LintOptions) -> LintReport {
    let mut inp = rules::Inputs {
        switches: vec![],
        qos: vec![],
        sysfs: vec![],
        rdma_dscp: opts.rdma_dscp,
        cnp_dscp: opts.cnp_dscp,
    };
    let mut files = Vec::new();
    for (name, p) in parsed {
        match p {
            Parsed::ConfigDb(db) => {
                inp.switches.push(rules::SwitchIn { file: name, db });
                files.push(InputFile {
                    path: name.to_string(),
                    kind: InputKind::ConfigDb,
                });
            }
            Parsed::MlnxQos(q) => {
                inp.qos.push((name, q));
                files.push(InputFile {
                    path: name.to_string(),
                    kind: InputKind::MlnxQos,
                });
            }
            Parsed::Sysfs(v) => {
                inp.sysfs.extend(v.iter().map(|n| (*name, n)));
                files.push(InputFile {
                    path: name.to_string(),
                    kind: InputKind::Sysfs,
                });
            }
        }
    }
    let (it, mut findings) = rules::run(&inp);
    finding::normalize(&mut findings);
    LintReport {
        files,
        rdma_dscps: it.rdma_dscps.clone(),
        rdma_dscp_assumed: it.rdma_source == DscpSource::Assumed,
        cnp_dscp: it.cnp_dscp,
        cnp_dscp_assumed: it.cnp_source == DscpSource::Assumed,
        counts: Counts::of(&findings),
        findings,
    }
}
