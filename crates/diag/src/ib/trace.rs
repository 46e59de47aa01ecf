//! `diag trace`: the path a packet takes through the LFTs, printed the way `ibtracert`
//! prints it (infiniband-diags `ibtracert.c`; sample in
//! `shared/formats/diag-output/sim-2sw4hca.lmc0.diags.txt`):
//!
//! ```text
//! From ca {0x0000000000100000} portnum 1 lid 2-2 "Hca1"
//! [1] -> switch port {0x0000000000200000}[1] lid 1-1 "Switch1"
//! [5] -> switch port {0x0000000000200001}[5] lid 3-3 "Switch2"
//! [2] -> ca port {0x000000000010000a}[1] lid 6-6 "Hca4"
//! To ca {0x0000000000100009} portnum 1 lid 6-6 "Hca4"
//! ```

use std::fmt::Write as _;

use fabric::{Fabric, Guid, Lid, NodeId, NodeKind};
use serde::Serialize;
use sm::tables::RoutingTables;

use crate::ib::check::label;
use crate::ib::error::DumpError;

/// One step: leave the previous node by `out_port`, enter `node` by `in_port`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceHop {
    /// Port the packet leaves the previous node by.
    pub out_port: u8,
    /// The node entered (description, else name).
    pub node: String,
    /// `ca`, `switch` or `router`.
    pub kind: &'static str,
    /// Node GUID of a switch, port GUID of a CA port.
    pub guid: String,
    /// Port the packet enters by.
    pub in_port: u8,
    /// LID of the entered port (switch: port 0).
    pub lid: u16,
}

/// A traced path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Trace {
    /// Source node.
    pub src: String,
    /// Source port.
    pub src_port: u8,
    /// Destination node.
    pub dst: String,
    /// Destination port.
    pub dst_port: u8,
    /// Destination LID looked up in the LFTs.
    pub dst_lid: u16,
    /// Hops in order.
    pub hops: Vec<TraceHop>,
    /// True when the walk reached the destination port.
    pub arrived: bool,
    /// Why the walk stopped early.
    pub stop: Option<String>,
    /// The ibtracert-format text.
    pub text: String,
}

/// Resolve an endpoint: a LID (`6`, `0x6`), a GUID (`0x0000000000100001`, node or
/// port), or a node name or description. Returns (node, port, LID).
pub fn resolve(f: &Fabric, t: &RoutingTables, spec: &str) -> Result<(NodeId, u8, Lid), DumpError> {
    let err = |why: String| DumpError::NoSuchEndpoint {
        what: spec.to_string(),
        why,
    };
    let s = spec.trim();
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
    let as_lid = match hex {
        Some(h) if h.len() <= 4 => u16::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None => s.parse::<u16>().ok(),
    };
    if let Some(l) = as_lid {
        let (n, p) = t.owner(Lid(l)).ok_or_else(|| err(format!("no port owns LID {l}")))?;
        return Ok((n, p, Lid(l)));
    }
    let by_node = |n: NodeId| -> Result<(NodeId, u8, Lid), DumpError> {
        let node = f.node(n);
        if node.is_switch() {
            let l = t.lid_of(n, 0).ok_or_else(|| err("the switch has no LID".into()))?;
            return Ok((n, 0, l));
        }
        for p in node.port_nums() {
            if let (Some(_), Some(l)) = (f.peer(n, p), t.lid_of(n, p)) {
                return Ok((n, p, l));
            }
        }
        Err(err("no cabled port with a LID".into()))
    };
    if let Some(h) = hex {
        let g = u64::from_str_radix(h, 16).map_err(|_| err("not a LID, GUID or node name".into()))?;
        if let Some(n) = f.by_guid(Guid(g)) {
            return by_node(n);
        }
        for n in f.node_ids() {
            for p in f.node(n).port_nums() {
                if !f.node(n).is_switch() && f.node(n).port_guid(p) == Guid(g) {
                    let l = t.lid_of(n, p).ok_or_else(|| err("the port has no LID".into()))?;
                    return Ok((n, p, l));
                }
            }
        }
        return Err(err("no node or port has this GUID".into()));
    }
    if let Some(n) = f.by_name(s) {
        return by_node(n);
    }
    let matches: Vec<NodeId> = f.node_ids().filter(|&n| f.node(n).desc == s).collect();
    match matches.as_slice() {
        [n] => by_node(*n),
        [] => Err(err("no node has this name or description".into())),
        _ => Err(err(format!("{} nodes have this description", matches.len()))),
    }
}

fn lid_range(t: &RoutingTables, f: &Fabric, n: NodeId, p: u8) -> String {
    match t.lid_of(n, p) {
        Some(l) => {
            let span = if f.node(n).is_switch() { 1 } else { 1u16 << t.lmc.min(7) };
            format!("{}-{}", l.0, l.0 + span - 1)
        }
        None => "0-0".into(),
    }
}

fn kind_word(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Ca => "ca",
        NodeKind::Switch => "switch",
        NodeKind::Router => "router",
    }
}

/// Trace from `src` to `dst` (endpoint specs as [`resolve`] takes them).
pub fn trace(f: &Fabric, t: &RoutingTables, src: &str, dst: &str) -> Result<Trace, DumpError> {
    let (sn, sp, _) = resolve(f, t, src)?;
    let (dn, dp, dlid) = resolve(f, t, dst)?;
    let mut text = String::new();
    let node_guid = |n: NodeId| format!("0x{:016x}", f.node(n).node_guid.0);
    let _ = writeln!(
        text,
        "From {} {{{}}} portnum {sp} lid {} \"{}\"",
        kind_word(f.node(sn).kind),
        node_guid(sn),
        lid_range(t, f, sn, sp),
        label(f, sn)
    );
    let mut hops = Vec::new();
    let mut stop = None;
    let (mut at, mut out_port) = (sn, sp);
    let mut arrived = sn == dn && sp == dp;
    // First hop out of a CA is its own port; a switch source looks up its LFT.
    let mut steps = 0;
    while !arrived {
        steps += 1;
        if steps > 64 {
            stop = Some("more than 64 hops: loop in the LFTs".to_string());
            break;
        }
        if f.node(at).is_switch() {
            match t.lft[at.idx()].get(dlid) {
                Some(0) => {
                    stop = Some(format!("{} forwards LID {} to its own port 0", label(f, at), dlid.0));
                    break;
                }
                Some(p) => out_port = p,
                None => {
                    stop = Some(format!("{} has no LFT entry for LID {}", label(f, at), dlid.0));
                    break;
                }
            }
        } else if steps > 1 {
            stop = Some(format!(
                "reached {} {}, not the destination",
                kind_word(f.node(at).kind),
                label(f, at)
            ));
            break;
        }
        let Some((peer, _)) = f.peer(at, out_port) else {
            stop = Some(format!("{} port {out_port} is not cabled (dead end)", label(f, at)));
            break;
        };
        let pn = f.node(peer.node);
        let (guid, lid_port) = if pn.is_switch() {
            (pn.node_guid, 0)
        } else {
            (pn.port_guid(peer.port), peer.port)
        };
        let _ = writeln!(
            text,
            "[{out_port}] -> {} port {{0x{:016x}}}[{}] lid {} \"{}\"",
            kind_word(pn.kind),
            guid.0,
            peer.port,
            lid_range(t, f, peer.node, lid_port),
            label(f, peer.node)
        );
        hops.push(TraceHop {
            out_port,
            node: label(f, peer.node).to_string(),
            kind: kind_word(pn.kind),
            guid: format!("0x{:016x}", guid.0),
            in_port: peer.port,
            lid: t.lid_of(peer.node, lid_port).map(|l| l.0).unwrap_or(0),
        });
        at = peer.node;
        arrived = at == dn && (pn.is_switch() || peer.port == dp);
    }
    if arrived {
        let _ = writeln!(
            text,
            "To {} {{{}}} portnum {dp} lid {} \"{}\"",
            kind_word(f.node(dn).kind),
            node_guid(dn),
            lid_range(t, f, dn, dp),
            label(f, dn)
        );
    } else if let Some(s) = &stop {
        let _ = writeln!(text, "-E- path stopped: {s}");
    }
    Ok(Trace {
        src: label(f, sn).to_string(),
        src_port: sp,
        dst: label(f, dn).to_string(),
        dst_port: dp,
        dst_lid: dlid.0,
        hops,
        arrived,
        stop,
        text,
    })
}
