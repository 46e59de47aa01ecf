//! What a sweep reports: the issues met on the way and the heavy sweep's figures.

use fabric::{Fabric, Guid};
use serde_json::{Value, json};

use super::PkeyReport;
use crate::lids::LidReport;
use crate::routing::RouteOutcome;
use crate::run::Phase;
use crate::validate::Validation;

/// A problem met during a sweep; the sweep carries on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Issue {
    /// The reply carried a non-zero MAD status.
    BadStatus {
        path: Vec<u8>,
        attr: &'static str,
        status: u16,
    },
    /// The reply was for another attribute.
    WrongAttribute {
        path: Vec<u8>,
        expected: &'static str,
        got: u16,
    },
    /// The reply was shorter than a MAD.
    Truncated {
        path: Vec<u8>,
        attr: &'static str,
        len: usize,
    },
    /// The reply did not parse.
    Unparsable {
        path: Vec<u8>,
        attr: &'static str,
        error: String,
    },
    /// Two places in the fabric answer with the same node GUID.
    DuplicateGuid {
        guid: Guid,
        path: Vec<u8>,
        first_path: Vec<u8>,
    },
    /// No answer after all retries.
    NoAnswer { path: Vec<u8>, attr: &'static str },
    /// The transport refused a request.
    Transport { error: String },
    /// Routing failed on the discovered fabric.
    Routing { error: String },
    /// The partitions could not be applied as configured.
    Partitions { error: String },
}

pub(super) fn path_str(p: &[u8]) -> String {
    let mut s = String::from("0");
    for x in p {
        s.push(',');
        s.push_str(&x.to_string());
    }
    s
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Issue::BadStatus { path, attr, status } => {
                write!(
                    f,
                    "DR path {}: {attr} answered with status {status:#06x}",
                    path_str(path)
                )
            }
            Issue::WrongAttribute { path, expected, got } => {
                write!(
                    f,
                    "DR path {}: asked for {expected}, got attribute {got:#06x}",
                    path_str(path)
                )
            }
            Issue::Truncated { path, attr, len } => {
                write!(f, "DR path {}: {attr} reply truncated to {len} bytes", path_str(path))
            }
            Issue::Unparsable { path, attr, error } => write!(f, "DR path {}: {attr} reply: {error}", path_str(path)),
            Issue::DuplicateGuid { guid, path, first_path } => write!(
                f,
                "duplicate node GUID {guid} at DR path {} (first seen at {})",
                path_str(path),
                path_str(first_path)
            ),
            Issue::NoAnswer { path, attr } => write!(f, "DR path {}: no answer to {attr}", path_str(path)),
            Issue::Transport { error } => write!(f, "transport: {error}"),
            Issue::Routing { error } => write!(f, "routing: {error}"),
            Issue::Partitions { error } => write!(f, "partitions: {error}"),
        }
    }
}

/// What a heavy sweep did.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    pub phases: Vec<Phase>,
    pub smps_sent: u64,
    pub smps_received: u64,
    pub resends: u64,
    pub switches: usize,
    pub cas: usize,
    pub links: usize,
    pub issues: Vec<Issue>,
    pub lids: LidReport,
    pub outcome: Option<RouteOutcome>,
    pub vls_used: u8,
    pub lft_blocks_sent: u64,
    pub lft_blocks_unchanged: u64,
    pub sl2vl_sent: u64,
    pub ports_active: u64,
    /// What differs from the previous sweep: links and nodes gone or new, LIDs moved,
    /// LFT entries changed.
    pub changes: Vec<String>,
    pub lft_entries_changed: u64,
    pub validation: Option<Validation>,
    pub subnet_up: bool,
    /// Traps received during the sweep.
    pub traps: Vec<u16>,
    /// The P_Key step, when partitions are configured.
    pub pkeys: Option<PkeyReport>,
}

impl SweepReport {
    /// JSON summary.
    pub fn to_json(&self, f: Option<&Fabric>) -> Value {
        let mut v = json!({
            "phases": self.phases.iter().map(|p| json!({"name": p.name, "us": p.micros})).collect::<Vec<_>>(),
            "smps_sent": self.smps_sent,
            "smps_received": self.smps_received,
            "resends": self.resends,
            "switches": self.switches,
            "cas": self.cas,
            "links": self.links,
            "issues": self.issues.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
            "lids": {"ports": self.lids.ports, "kept": self.lids.kept, "moved": self.lids.moved, "max_lid": self.lids.max_lid},
            "engine": self.outcome.as_ref().map(|o| o.engine.name()),
            "fallbacks": self.outcome.as_ref().map(|o| o.fallbacks.iter().map(|(e, w)| json!({"engine": e.name(), "error": w})).collect::<Vec<_>>()),
            "vls_used": self.vls_used,
            "lft_blocks_sent": self.lft_blocks_sent,
            "lft_blocks_unchanged": self.lft_blocks_unchanged,
            "sl2vl_sent": self.sl2vl_sent,
            "ports_active": self.ports_active,
            "changes": self.changes,
            "lft_entries_changed": self.lft_entries_changed,
            "traps": self.traps,
            "subnet_up": self.subnet_up,
            "validation": match (&self.validation, f) { (Some(v), Some(f)) => v.to_json(f), _ => Value::Null },
        });
        // Only with partitions configured: the report is unchanged without them.
        if let Some(p) = &self.pkeys {
            v["pkeys"] = json!({
                "partitions": p.partitions, "ports": p.ports, "enforced": p.enforced,
                "blocks_sent": p.blocks_sent, "blocks_unchanged": p.blocks_unchanged, "fell_back": p.fell_back,
            });
        }
        v
    }
}
