//! rdmalab's native JSON: every field of the model, so write → read gives an equal
//! [`Fabric`]. GUIDs are strings (`"0x0002c90301000000"`) because JSON numbers lose
//! precision beyond 2^53 in most readers.
//!
//! ```json
//! { "format": "rdmalab-fabric", "version": 1,
//!   "hosts": ["gpu00", …],
//!   "nodes": [{ "kind": "switch", "name": "leaf00", "desc": "leaf00",
//!               "node_guid": "0x…", "sys_image_guid": "0x…", "vendor_id": 713,
//!               "device_id": 53744, "enhanced_port0": true, "level": 1, "host": null,
//!               "ports": [{ "guid": "0x…", "lid": null, "lmc": 0 }, …] }, …],
//!   "links": [{ "a": [0, 1], "b": [54, 1], "rate": {"kind": "ib", "speed": "NDR",
//!               "width": "4x"}, "length_m": 2.0, "delay_ps": 10000 }, …] }
//! ```
//! `ports` holds ports 0..=NumPorts (a CA's port 0 is a placeholder).

use serde::{Deserialize, Serialize};
use wire::{Guid, Lid};

use super::{ParseError, ParseErrorKind as K};
use crate::model::{Fabric, HostId, NodeId, NodeKind, NodeSpec};
use crate::rate::LinkRate;

const MAGIC: &str = "rdmalab-fabric";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    format: String,
    version: u32,
    hosts: Vec<String>,
    nodes: Vec<JNode>,
    links: Vec<JLink>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JNode {
    kind: String,
    name: String,
    desc: String,
    node_guid: String,
    sys_image_guid: String,
    vendor_id: u32,
    device_id: u16,
    enhanced_port0: bool,
    level: Option<u8>,
    host: Option<u32>,
    ports: Vec<JPort>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JPort {
    guid: String,
    lid: Option<u16>,
    lmc: u8,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct JLink {
    a: (u32, u8),
    b: (u32, u8),
    rate: LinkRate,
    length_m: f64,
    delay_ps: u64,
}

fn g(x: Guid) -> String {
    format!("0x{:016x}", x.0)
}

/// Write the lossless JSON form (pretty-printed, deterministic).
pub fn write_json(fab: &Fabric) -> String {
    let doc = Doc {
        format: MAGIC.into(),
        version: VERSION,
        hosts: fab.hosts.iter().map(|h| h.name.clone()).collect(),
        nodes: fab
            .nodes
            .iter()
            .map(|n| JNode {
                kind: n.kind.name().into(),
                name: n.name.clone(),
                desc: n.desc.clone(),
                node_guid: g(n.node_guid),
                sys_image_guid: g(n.sys_image_guid),
                vendor_id: n.vendor_id,
                device_id: n.device_id,
                enhanced_port0: n.enhanced_port0,
                level: n.level,
                host: n.host.map(|h| h.0),
                ports: n
                    .ports
                    .iter()
                    .map(|p| JPort {
                        guid: g(p.guid),
                        lid: p.lid.map(|l| l.0),
                        lmc: p.lmc,
                    })
                    .collect(),
            })
            .collect(),
        links: fab
            .links
            .iter()
            .map(|l| JLink {
                a: (l.a.node.0, l.a.port),
                b: (l.b.node.0, l.b.port),
                rate: l.rate,
                length_m: l.length_m,
                delay_ps: l.delay_ps,
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc).expect("the JSON model has only serialisable fields");
    s.push('\n');
    s
}

/// The 1-based line where each element of the top-level `nodes` and `links` arrays
/// starts, found by a small scan that skips strings: serde does not keep positions,
/// and errors about a node or link should point at it.
fn element_lines(text: &str) -> (Vec<usize>, Vec<usize>) {
    let (mut nodes, mut links) = (Vec::new(), Vec::new());
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut in_str, mut esc) = (false, false);
    let mut last_key = String::new();
    let mut cur = String::new();
    let mut array: Option<bool> = None; // Some(true) nodes, Some(false) links
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
                if depth == 1 {
                    last_key = std::mem::take(&mut cur);
                }
            } else if depth == 1 {
                cur.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                cur.clear();
            }
            '[' | '{' => {
                if c == '[' && depth == 1 {
                    array = match last_key.as_str() {
                        "nodes" => Some(true),
                        "links" => Some(false),
                        _ => None,
                    };
                }
                if c == '{' && depth == 2 {
                    match array {
                        Some(true) => nodes.push(line),
                        Some(false) => links.push(line),
                        None => {}
                    }
                }
                depth += 1;
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (nodes, links)
}

/// Byte offset → 1-based line.
fn line_of(text: &str, line: usize) -> usize {
    line.max(1).min(text.lines().count().max(1))
}

/// Read the JSON form. Errors name the line of the JSON syntax error, or the node /
/// link index whose content is wrong.
pub fn read_json(file: &str, text: &str) -> Result<Fabric, ParseError> {
    let doc: Doc = serde_json::from_str(text)
        .map_err(|e| ParseError::new(file, line_of(text, e.line()), K::Json(e.to_string())))?;
    let (node_lines, link_lines) = element_lines(text);
    let at_node = |i: usize| node_lines.get(i).copied().unwrap_or(1);
    let at_link = |i: usize| link_lines.get(i).copied().unwrap_or(1);
    let bad_node = |i: usize, what: String| ParseError::new(file, at_node(i), K::Json(what));
    let bad_link = |i: usize, what: String| ParseError::new(file, at_link(i), K::Json(what));
    if doc.format != MAGIC || doc.version != VERSION {
        return Err(ParseError::new(
            file,
            1,
            K::Expected {
                expected: format!("\"format\": \"{MAGIC}\", \"version\": {VERSION}"),
                found: format!("{:?} version {}", doc.format, doc.version),
            },
        ));
    }
    let pg = |s: &str, at: &str, i: usize| -> Result<Guid, ParseError> {
        s.strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .map(Guid)
            .ok_or_else(|| {
                bad_node(
                    i,
                    format!("{at}: expected a GUID such as \"0x0002c90301000000\", found {s:?}"),
                )
            })
    };
    let mut fab = Fabric::new();
    for h in &doc.hosts {
        fab.add_host(h.clone());
    }
    for (i, n) in doc.nodes.iter().enumerate() {
        let at = format!("nodes[{i}] ({:?})", n.name);
        let kind = match n.kind.as_str() {
            "switch" => NodeKind::Switch,
            "ca" => NodeKind::Ca,
            "router" => NodeKind::Router,
            k => {
                return Err(bad_node(
                    i,
                    format!("{at}: expected kind \"switch\", \"ca\" or \"router\", found {k:?}"),
                ));
            }
        };
        if n.ports.len() < 2 || n.ports.len() > 255 {
            return Err(bad_node(
                i,
                format!(
                    "{at}: expected 2 to 255 port entries (port 0 and ports 1..=n), found {}",
                    n.ports.len()
                ),
            ));
        }
        let guid = pg(&n.node_guid, &at, i)?;
        let mut spec = if kind == NodeKind::Switch {
            NodeSpec::switch(n.name.clone(), guid, (n.ports.len() - 1) as u8)
        } else {
            let mut s = NodeSpec::ca(n.name.clone(), guid, (n.ports.len() - 1) as u8);
            s.kind = kind;
            s.port_guids = Some(
                n.ports[1..]
                    .iter()
                    .map(|p| pg(&p.guid, &at, i))
                    .collect::<Result<_, _>>()?,
            );
            s
        };
        spec.desc = n.desc.clone();
        spec.sys_image_guid = Some(pg(&n.sys_image_guid, &at, i)?);
        spec.vendor_id = n.vendor_id;
        spec.device_id = n.device_id;
        spec.enhanced_port0 = n.enhanced_port0;
        spec.level = n.level;
        if let Some(h) = n.host {
            if h as usize >= doc.hosts.len() {
                return Err(bad_node(
                    i,
                    format!("{at}: host {h} does not exist ({} hosts)", doc.hosts.len()),
                ));
            }
            spec.host = Some(HostId(h));
        }
        let id = fab.add_node(spec).map_err(|e| bad_node(i, format!("{at}: {e}")))?;
        let node = fab.node_mut(id);
        for (p, jp) in n.ports.iter().enumerate() {
            if kind == NodeKind::Switch && pg(&jp.guid, &at, i)? != guid {
                return Err(bad_node(
                    i,
                    format!("{at}: port {p} GUID {} differs from the switch's node GUID", jp.guid),
                ));
            }
            if kind != NodeKind::Switch && p == 0 {
                node.ports[0].guid = pg(&jp.guid, &at, i)?;
            }
            node.ports[p].lid = jp.lid.map(Lid);
            node.ports[p].lmc = jp.lmc;
        }
    }
    for (i, l) in doc.links.iter().enumerate() {
        let at = format!("links[{i}]");
        for (n, _) in [l.a, l.b] {
            if n as usize >= fab.nodes.len() {
                return Err(bad_link(
                    i,
                    format!("{at}: node {n} does not exist ({} nodes)", fab.nodes.len()),
                ));
            }
        }
        if !(l.length_m.is_finite() && l.length_m >= 0.0) {
            return Err(bad_link(
                i,
                format!("{at}: expected a non-negative length_m, found {}", l.length_m),
            ));
        }
        fab.connect_with_delay(
            NodeId(l.a.0),
            l.a.1,
            NodeId(l.b.0),
            l.b.1,
            l.rate,
            l.length_m,
            l.delay_ps,
        )
        .map_err(|e| bad_link(i, format!("{at}: {e}")))?;
    }
    Ok(fab)
}
