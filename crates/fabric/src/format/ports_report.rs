//! `ibnetdiscover -p` (`--ports`): one line per port (rdma-core
//! `infiniband-diags/ibnetdiscover.c`, `out_port_report`; shared InfiniBand reference
//! §2.1):
//!
//! ```text
//! CA     6  1 0x000000000010000a 4x SDR - SW     3  2 0x0000000000200001 ( 'Hca4' - 'Switch2' )
//! SW     3  8 0x0000000000200001 4x SDR                                    'Switch2'
//! ```
//! type, LID, port, port GUID, width, speed, then either the far end (type, LID,
//! port, port GUID) and both descriptions, or the local description of an unplugged
//! port. It lacks node GUIDs of CAs and port counts, so it cannot build a model on
//! its own; [`check_ports_report`] compares one against a model instead.

use std::collections::HashMap;

use wire::Guid;

use super::{ParseError, ParseErrorKind as K};
use crate::model::{Fabric, NodeId, NodeKind};
use crate::rate::{IbSpeed, IbWidth, LinkRate};

/// One end as the report shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportEnd {
    pub kind: NodeKind,
    pub lid: u16,
    pub port: u8,
    pub guid: Guid,
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportLine {
    pub line: usize,
    pub local: ReportEnd,
    /// `None` when ibnetdiscover printed `??` for width or speed.
    pub rate: Option<LinkRate>,
    pub peer: Option<ReportEnd>,
}

fn kind(t: &str) -> Option<NodeKind> {
    match t {
        "CA" => Some(NodeKind::Ca),
        "SW" => Some(NodeKind::Switch),
        "RT" => Some(NodeKind::Router),
        _ => None,
    }
}

/// Parse an `ibnetdiscover -p` report.
pub fn parse_ports_report(file: &str, text: &str) -> Result<Vec<ReportLine>, ParseError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let bad = |what: &str| {
            ParseError::new(
                file,
                ln,
                K::Expected {
                    expected: what.into(),
                    found: raw.chars().take(80).collect(),
                },
            )
        };
        let body = raw
            .split('\'')
            .next()
            .unwrap_or(raw)
            .trim_end()
            .trim_end_matches('(')
            .trim_end();
        let t: Vec<&str> = body.split_whitespace().collect();
        let end = |t: &[&str]| -> Option<ReportEnd> {
            Some(ReportEnd {
                kind: kind(t.first()?)?,
                lid: t.get(1)?.parse().ok()?,
                port: t.get(2)?.parse().ok()?,
                guid: Guid(u64::from_str_radix(t.get(3)?.strip_prefix("0x")?, 16).ok()?),
            })
        };
        let local = end(&t).ok_or_else(|| bad("<CA|SW|RT> <lid> <port> 0x<port guid> <width> <speed>"))?;
        let (w, sp) = (t.get(4).copied().unwrap_or(""), t.get(5).copied().unwrap_or(""));
        let rate = match (w.parse::<IbWidth>(), sp.parse::<IbSpeed>()) {
            (Ok(w), Ok(s)) => Some(LinkRate::ib(s, w)),
            _ if w.starts_with('?') || sp.starts_with('?') => None,
            _ => {
                return Err(ParseError::new(
                    file,
                    ln,
                    K::UnknownSpeed {
                        found: format!("{w} {sp}"),
                    },
                ));
            }
        };
        let peer = match t.get(6) {
            None => None,
            Some(&"-") => {
                Some(end(&t[7..]).ok_or_else(|| bad("'- <CA|SW|RT> <lid> <port> 0x<port guid>' for the far end"))?)
            }
            Some(_) => return Err(bad("'-' and the far end, or the description")),
        };
        out.push(ReportLine {
            line: ln,
            local,
            rate,
            peer,
        });
    }
    Ok(out)
}

/// Differences between a ports report and a model: ports, GUIDs, cabling and rates
/// (LIDs are the SM's and are not compared). Empty when they agree.
pub fn check_ports_report(fab: &Fabric, report: &[ReportLine]) -> Vec<String> {
    // A switch is found by its node GUID, a CA or router port by its port GUID.
    let mut by_port: HashMap<(Guid, u8), (NodeId, u8)> = HashMap::new();
    for id in fab.node_ids() {
        let n = fab.node(id);
        for p in n.port_nums() {
            let key = if n.is_switch() {
                (n.node_guid, p)
            } else {
                (n.ports[p as usize].guid, 0)
            };
            by_port.insert(key, (id, p));
        }
    }
    let find = |e: &ReportEnd| -> Option<(NodeId, u8)> {
        if e.kind == NodeKind::Switch {
            by_port.get(&(e.guid, e.port)).copied()
        } else {
            by_port.get(&(e.guid, 0)).copied().filter(|&(_, p)| p == e.port)
        }
    };
    let mut out = Vec::new();
    for r in report {
        let Some((n, p)) = find(&r.local) else {
            out.push(format!(
                "line {}: no port {} with GUID {} in the model",
                r.line, r.local.port, r.local.guid
            ));
            continue;
        };
        let link = fab.peer(n, p);
        match (&r.peer, link) {
            (None, None) => {}
            (None, Some(_)) => out.push(format!(
                "line {}: {} port {p} is cabled in the model, unplugged in the report",
                r.line,
                fab.node(n).name
            )),
            (Some(_), None) => out.push(format!(
                "line {}: {} port {p} is cabled in the report, unplugged in the model",
                r.line,
                fab.node(n).name
            )),
            (Some(pe), Some((e, l))) => {
                if find(pe) != Some((e.node, e.port)) {
                    out.push(format!(
                        "line {}: {} port {p} goes to {} port {} in the model, to {} port {} in the report",
                        r.line,
                        fab.node(n).name,
                        fab.node(e.node).name,
                        e.port,
                        pe.guid,
                        pe.port
                    ));
                }
                if let Some(rate) = r.rate
                    && rate != fab.link(l).rate
                {
                    out.push(format!(
                        "line {}: {} port {p} runs at {} in the model, {rate} in the report",
                        r.line,
                        fab.node(n).name,
                        fab.link(l).rate
                    ));
                }
            }
        }
    }
    out
}
