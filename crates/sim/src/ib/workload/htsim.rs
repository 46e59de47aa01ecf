//! htsim connection matrices, read as-is (grammar of
//! `sim/datacenter/connection_matrix.cpp::load` in Broadcom/csg-htsim; shared
//! reference §1.4):
//!
//! ```text
//! Nodes <N>
//! Connections <C>
//! [Triggers <T>]
//! [Failures <F>]
//! <src>-><dst> [id <flowid>] (start <t> | trigger <tid>) [size <bytes>]
//!              [send_done_trigger <tid>] [recv_done_trigger <tid>] [prio <p>]
//! trigger id <tid> (oneshot | multishot | barrier) [count <n>]
//! failure switch_type (TOR|AGG|CORE) switch_id <i> link_id <j>
//! ```
//!
//! `#` starts a comment. Start times are microseconds (htsim's `timeFromUs`);
//! size 0 is an endless flow. Failures are parsed and reported as unsupported:
//! rdmalab injects faults through its own scenario format.

use crate::engine::Time;

use super::matrix::{Flow, FlowOp, Matrix, Start, Trigger, TriggerKind};

/// A malformed connection matrix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("read connection matrix {file} line {line}: {msg}")]
pub struct CmError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

/// Parse a connection matrix; `file` names it in errors.
pub fn parse_connection_matrix(text: &str, file: &str) -> Result<Matrix, CmError> {
    let err = |line: usize, msg: String| CmError {
        file: file.to_string(),
        line,
        msg,
    };
    let mut nodes: Option<u32> = None;
    let mut conns: Option<usize> = None;
    let mut declared_triggers: Option<usize> = None;
    let mut flows = Vec::new();
    let mut triggers: Vec<Trigger> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let toks: Vec<&str> = line.split_whitespace().collect();
        let num = |k: usize, what: &str| -> Result<u64, CmError> {
            toks.get(k)
                .ok_or_else(|| err(ln, format!("expected {what} after `{}`", toks[k - 1])))?
                .parse::<u64>()
                .map_err(|_| err(ln, format!("expected {what} (an unsigned integer), got `{}`", toks[k])))
        };
        match toks[0] {
            "Nodes" => nodes = Some(num(1, "the node count")? as u32),
            "Connections" => conns = Some(num(1, "the connection count")? as usize),
            "Triggers" => declared_triggers = Some(num(1, "the trigger count")? as usize),
            "Failures" => {
                if num(1, "the failure count")? > 0 {
                    return Err(err(
                        ln,
                        "link failures in a connection matrix are not supported; use the scenario's faults".into(),
                    ));
                }
            }
            "failure" => {
                return Err(err(
                    ln,
                    "link failures are not supported; use the scenario's faults".into(),
                ));
            }
            "trigger" => {
                if toks.get(1) != Some(&"id") {
                    return Err(err(
                        ln,
                        "expected `trigger id <tid> (oneshot|multishot|barrier)`".into(),
                    ));
                }
                let id = num(2, "a trigger id")? as u32;
                let kind = match toks.get(3).copied() {
                    Some("oneshot") => TriggerKind::Oneshot,
                    Some("multishot") => TriggerKind::Multishot,
                    Some("barrier") => TriggerKind::Barrier,
                    other => {
                        return Err(err(
                            ln,
                            format!("expected oneshot, multishot or barrier, got {other:?}"),
                        ));
                    }
                };
                let mut count = 1;
                if toks.get(4) == Some(&"count") {
                    count = num(5, "a count")? as u32;
                } else if kind == TriggerKind::Barrier {
                    return Err(err(ln, "a barrier trigger needs `count <n>`".into()));
                }
                if triggers.iter().any(|t| t.id == id) {
                    return Err(err(ln, format!("trigger {id} is defined twice")));
                }
                triggers.push(Trigger { id, kind, count });
            }
            t if t.contains("->") => {
                let (s, d) = t.split_once("->").expect("contains");
                let src = s
                    .parse::<u32>()
                    .map_err(|_| err(ln, format!("expected `<src>-><dst>`, got `{t}`")))?;
                let dst = d
                    .parse::<u32>()
                    .map_err(|_| err(ln, format!("expected `<src>-><dst>`, got `{t}`")))?;
                let mut f = Flow {
                    id: flows.len() as u32 + 1,
                    src,
                    dst,
                    bytes: u64::MAX,
                    start: None,
                    send_done_trigger: None,
                    recv_done_trigger: None,
                    op: FlowOp::Write,
                    prio: 0,
                };
                let mut k = 1;
                let mut start = None;
                while k < toks.len() {
                    let v = num(k + 1, &format!("a value for `{}`", toks[k]))?;
                    match toks[k] {
                        "id" => f.id = v as u32,
                        "start" => start = Some(Start::At(Time::us(v))),
                        "trigger" => start = Some(Start::Trigger(v as u32)),
                        "size" => f.bytes = if v == 0 { u64::MAX } else { v },
                        "send_done_trigger" => f.send_done_trigger = Some(v as u32),
                        "recv_done_trigger" => {
                            f.recv_done_trigger = Some(v as u32);
                            f.op = FlowOp::Send;
                        }
                        "prio" => f.prio = v as u8,
                        other => return Err(err(ln, format!("unknown connection attribute `{other}`"))),
                    }
                    k += 2;
                }
                f.start =
                    Some(start.ok_or_else(|| err(ln, "a connection needs `start <t>` or `trigger <tid>`".into()))?);
                flows.push(f);
            }
            other => return Err(err(ln, format!("unknown line starting `{other}`"))),
        }
    }
    let hosts = nodes.ok_or_else(|| err(0, "missing `Nodes <N>`".into()))?;
    if let Some(c) = conns
        && c != flows.len()
    {
        return Err(err(
            0,
            format!("`Connections {c}` but {} connections listed", flows.len()),
        ));
    }
    if let Some(t) = declared_triggers
        && t != triggers.len()
    {
        return Err(err(
            0,
            format!("`Triggers {t}` but {} triggers defined", triggers.len()),
        ));
    }
    for f in &flows {
        if f.src >= hosts || f.dst >= hosts {
            return Err(err(
                0,
                format!(
                    "connection {} names host {}->{} but Nodes is {hosts}",
                    f.id, f.src, f.dst
                ),
            ));
        }
        for t in [
            f.send_done_trigger,
            f.recv_done_trigger,
            f.start.and_then(|s| s.trigger()),
        ]
        .into_iter()
        .flatten()
        {
            if !triggers.iter().any(|x| x.id == t) {
                return Err(err(0, format!("connection {} uses undefined trigger {t}", f.id)));
            }
        }
    }
    Ok(Matrix { hosts, flows, triggers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_perm_and_triggers() {
        let m = parse_connection_matrix(
            "Nodes 4\nConnections 3\nTriggers 1\n0->1 id 7 start 5 size 1000\n1->2 trigger 1 size 0 # c\n\
             2->3 start 0 size 10 send_done_trigger 1\ntrigger id 1 oneshot\n",
            "t.cm",
        )
        .unwrap();
        assert_eq!(m.hosts, 4);
        assert_eq!(m.flows[0].id, 7);
        assert_eq!(m.flows[0].start, Some(Start::At(Time::us(5))));
        assert_eq!(m.flows[1].bytes, u64::MAX);
        assert_eq!(m.flows[1].start, Some(Start::Trigger(1)));
        assert_eq!(m.triggers[0].kind, TriggerKind::Oneshot);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_connection_matrix("Nodes 4\n0->9 start 0\n", "x.cm").unwrap_err();
        assert!(e.msg.contains("Nodes is 4"), "{e}");
        let e = parse_connection_matrix("Nodes 4\n0->1 start x\n", "x.cm").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_connection_matrix("Nodes 4\n0->1 size 5\n", "x.cm").unwrap_err();
        assert!(e.msg.contains("start"));
        let e = parse_connection_matrix("Nodes 2\nConnections 2\n0->1 start 0\n", "x.cm").unwrap_err();
        assert!(e.msg.contains("Connections 2"));
    }
}
