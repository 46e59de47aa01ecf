//! Readers for the files an InfiniBand subnet leaves behind, and the writer of
//! `opensm.fdbs` (the routing input of `ibdmchk`).
//!
//! Grammars (infiniband-sm.md §2.3–2.4):
//!
//! ```text
//! opensm-lfts.dump   Unicast lids [0-36] of switch Lid 1 guid 0x…('desc'):     -> sm::dump::parse_lfts_dump
//!                    0x0002 001 # Channel Adapter portguid 0x…: 'H-1'
//! ibroute / dump_fts Unicast lids [0x0-0x6] of switch Lid 1 guid 0x… (desc):    (ibroute)
//!                    Unicast lids [0x0-0x6] of switch DR path slid 0; dlid 0; 0,3 guid 0x… (desc):  (dump_fts)
//!                      Lid  Out   Destination
//!                           Port     Info
//!                    0x0001 000 : (Switch portguid 0x…: 'Switch1')
//!                    0x0005 001 : (path #2 out of 4: portguid 0x…)          LMC > 0
//!                    0x0000 255 : (path #0 - illegal port)                   ibroute -a
//!                    6 valid lids dumped
//! opensm-subnet.lst  { CA Ports:02 SystemGUID:… NodeGUID:… PortGUID:… VenID:… DevID:… Rev:… {desc} LID:0002 PN:01 }
//!                    { …remote end… } PHY=4x LOG=ACT SPD=2.5            one line per directed link
//! opensm-sl2vl.dump  Switch 0x<guid>, base LID 1, "desc"  |  Channel Adapter 0x<portguid>, base LID 2, "desc"
//!                    #in out : 0  1 … 15
//!                    0   1   : 0  1  2 … 7               16 VLs per (in, out) row
//! guid2lid           0x<port guid> 0x<min lid> 0x<max lid>                 -> sm::lids::Guid2Lid
//! ```
//!
//! One file because the readers share one line lexer and error type and the fdbs writer
//! is the inverse of the LFT reader; each grammar is a few hundred lines with its
//! tests.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use fabric::{Fabric, Guid, IbSpeed, IbWidth, Lid, LinkRate, NodeId, NodeKind, NodeSpec};
use sm::tables::{NO_ROUTE, RoutingTables, Sl2Vl};

use crate::finding::{Finding, Location, Severity};
use crate::ib::error::DumpError;
use crate::ib::rules;

fn syntax(file: &str, line: usize, expected: &str, got: &str) -> DumpError {
    DumpError::Syntax {
        file: file.to_string(),
        line,
        expected: expected.to_string(),
        got: got.chars().take(100).collect(),
    }
}

fn hex_u64(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
    if h.is_empty() || h.len() > 16 {
        return None;
    }
    u64::from_str_radix(h, 16).ok()
}

/// Map port GUID → (node, port); switches answer for port 0 with their node GUID.
fn port_guid_index(f: &Fabric) -> HashMap<Guid, (NodeId, u8)> {
    let mut m = HashMap::new();
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        if node.is_switch() {
            m.insert(node.node_guid, (n, 0));
        } else {
            for p in node.port_nums() {
                m.insert(node.port_guid(p), (n, p));
            }
        }
    }
    m
}

/// Which LFT dump format a text is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoutesFormat {
    /// OpenSM's `opensm-lfts.dump`.
    OpensmLfts,
    /// `ibroute` or `dump_fts` output.
    Ibroute,
}

/// Tell the LFT dump format from the text.
pub fn detect_routes(text: &str) -> Option<RoutesFormat> {
    for l in text.lines() {
        let l = l.trim_end();
        if l.starts_with("Unicast lids [") && l.contains("DR path") {
            return Some(RoutesFormat::Ibroute);
        }
        if l.starts_with("0x") {
            let mut it = l.split_whitespace();
            let _ = it.next();
            let _ = it.next();
            return Some(if it.next() == Some(":") {
                RoutesFormat::Ibroute
            } else {
                RoutesFormat::OpensmLfts
            });
        }
        if l.trim_start().starts_with("Lid  Out") {
            return Some(RoutesFormat::Ibroute);
        }
    }
    None
}

/// Read an LFT dump of either format into tables for `f`.
pub fn parse_routes(f: &Fabric, text: &str, file: &str) -> Result<RoutingTables, DumpError> {
    match detect_routes(text) {
        Some(RoutesFormat::OpensmLfts) => Ok(sm::dump::parse_lfts_dump(f, text, file)?),
        Some(RoutesFormat::Ibroute) => parse_ibroute(f, text, file),
        None => Err(syntax(
            file,
            1,
            "an opensm-lfts.dump, ibroute or dump_fts LFT dump ('Unicast lids [' blocks)",
            "",
        )),
    }
}

/// Read `ibroute` / `dump_fts` output (one or several switches).
pub fn parse_ibroute(f: &Fabric, text: &str, file: &str) -> Result<RoutingTables, DumpError> {
    let mut t = RoutingTables::empty_for(f);
    let index = port_guid_index(f);
    let mut cur: Option<NodeId> = None;
    let mut in_mcast = false;
    let mut lids_of: BTreeMap<(NodeId, u8), Vec<u16>> = BTreeMap::new();
    let mut blocks = 0usize;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.trim_end();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Unicast lids [") {
            in_mcast = false;
            blocks += 1;
            let g = rest
                .split(" guid ")
                .nth(1)
                .and_then(|x| x.split_whitespace().next())
                .ok_or_else(|| syntax(file, ln, "' guid 0x<16 hex digits>' in the block header", line))?;
            let g = hex_u64(g).ok_or_else(|| syntax(file, ln, "a switch GUID", g))?;
            let n = f.by_guid(Guid(g)).ok_or(DumpError::UnknownGuid {
                file: file.into(),
                line: ln,
                guid: Guid(g),
                what: "switch",
            })?;
            if !f.node(n).is_switch() {
                return Err(syntax(
                    file,
                    ln,
                    "the GUID of a switch",
                    &format!("{} is a {}", Guid(g), f.node(n).kind.name()),
                ));
            }
            if let Some(l) = rest.split(" Lid ").nth(1).and_then(|x| x.split_whitespace().next()) {
                let l: u16 = l
                    .parse()
                    .map_err(|_| syntax(file, ln, "a decimal switch LID after 'Lid'", l))?;
                lids_of.entry((n, 0)).or_default().push(l);
            }
            cur = Some(n);
            continue;
        }
        if line.starts_with("Multicast mlids") {
            in_mcast = true;
            continue;
        }
        if in_mcast
            || trimmed.starts_with("Lid ")
            || trimmed.starts_with("Port ")
            || trimmed.starts_with("Mlid ")
            || trimmed.ends_with("lids dumped")
            || trimmed.ends_with("mlids dumped")
            || trimmed.starts_with('#')
        {
            continue;
        }
        if !line.starts_with("0x") {
            return Err(syntax(
                file,
                ln,
                "'Unicast lids [' header, '0x<lid> <port> : (...)' entry or 'N valid lids dumped'",
                line,
            ));
        }
        let n = cur.ok_or_else(|| syntax(file, ln, "a 'Unicast lids [' header before the first entry", line))?;
        let mut it = line.split_whitespace();
        let lid_s = it.next().unwrap_or("");
        let lid = hex_u64(lid_s)
            .filter(|&l| l <= 0xbfff)
            .ok_or_else(|| syntax(file, ln, "a unicast LID 0x0000..0xbfff", lid_s))? as usize;
        let port_s = it.next().unwrap_or("");
        let port: u8 = port_s
            .parse()
            .map_err(|_| syntax(file, ln, "an output port 0..255", port_s))?;
        if port != NO_ROUTE && port > f.node(n).num_ports() {
            return Err(syntax(
                file,
                ln,
                &format!("a port of {} (0..={})", f.node(n).name, f.node(n).num_ports()),
                port_s,
            ));
        }
        let lft = &mut t.lft[n.idx()].ports;
        if lft.len() <= lid {
            lft.resize(lid + 1, NO_ROUTE);
        }
        lft[lid] = port;
        if let Some(pg) = line.split("portguid ").nth(1) {
            let pg = pg.split([':', ')', ' ']).next().unwrap_or("");
            let g = hex_u64(pg).ok_or_else(|| syntax(file, ln, "a port GUID after 'portguid'", pg))?;
            let owner = *index.get(&Guid(g)).ok_or(DumpError::UnknownGuid {
                file: file.into(),
                line: ln,
                guid: Guid(g),
                what: "port",
            })?;
            let v = lids_of.entry(owner).or_default();
            if !v.contains(&(lid as u16)) {
                v.push(lid as u16);
            }
        }
    }
    if blocks == 0 {
        return Err(syntax(file, 1, "at least one 'Unicast lids [' block", ""));
    }
    set_lids(f, &mut t, &lids_of);
    Ok(t)
}

/// Fill base LIDs, owners and the LMC from the LIDs seen per port.
fn set_lids(f: &Fabric, t: &mut RoutingTables, lids_of: &BTreeMap<(NodeId, u8), Vec<u16>>) {
    let mut lmc = 0u8;
    let mut max = 0usize;
    for ((n, p), lids) in lids_of {
        let lo = lids.iter().copied().min().unwrap_or(0);
        t.base_lid[n.idx()][*p as usize] = Lid(lo);
        if !f.node(*n).is_switch() {
            let mut c = lids.clone();
            c.sort_unstable();
            c.dedup();
            while (1usize << lmc) < c.len() && lmc < 7 {
                lmc += 1;
            }
        }
        max = max.max(lids.iter().copied().max().unwrap_or(0) as usize);
    }
    t.lmc = t.lmc.max(lmc);
    if t.lid_owner.len() <= max {
        t.lid_owner.resize(max + 1, None);
    }
    for ((n, p), lids) in lids_of {
        for &l in lids {
            t.lid_owner[l as usize] = Some((*n, *p));
        }
    }
}

/// Apply an OpenSM `guid2lid` file: every listed port gets its LID range, which
/// overrides what the LFT dump implied.
pub fn apply_guid2lid(
    f: &Fabric,
    t: &mut RoutingTables,
    g2l: &sm::lids::Guid2Lid,
    file: &str,
) -> Result<(), DumpError> {
    let index = port_guid_index(f);
    let mut lids_of: BTreeMap<(NodeId, u8), Vec<u16>> = BTreeMap::new();
    for (g, (lo, hi)) in &g2l.map {
        let owner = *index.get(g).ok_or(DumpError::UnknownGuid {
            file: file.into(),
            line: 0,
            guid: *g,
            what: "port",
        })?;
        lids_of.insert(owner, (lo.0..=hi.0).collect());
    }
    set_lids(f, t, &lids_of);
    Ok(())
}

/// One end of a directed link in `opensm-subnet.lst`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetEnd {
    /// Node type.
    pub kind: NodeKind,
    /// The SM runs on this node (`SW-SM`, `CA-SM`).
    pub sm: bool,
    /// NodeInfo:NumPorts.
    pub num_ports: u8,
    /// System image GUID.
    pub sys_guid: Guid,
    /// Node GUID.
    pub node_guid: Guid,
    /// Port GUID (switches: the node GUID).
    pub port_guid: Guid,
    /// Vendor id.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u16,
    /// NodeDescription.
    pub desc: String,
    /// LID (switches: of port 0).
    pub lid: u16,
    /// Port number.
    pub port: u8,
}

/// One line of `opensm-subnet.lst`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetLink {
    /// 1-based line in the file.
    pub line: usize,
    /// Local end.
    pub a: SubnetEnd,
    /// Remote end.
    pub b: SubnetEnd,
    /// PHY= link width.
    pub width: Option<IbWidth>,
    /// SPD= lane speed.
    pub speed: Option<IbSpeed>,
    /// LOG= (ACT, ARM, INI, DOWN).
    pub state: String,
}

/// A parsed `opensm-subnet.lst`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubnetLst {
    /// The file, for errors.
    pub file: String,
    /// Directed links in file order.
    pub links: Vec<SubnetLink>,
}

struct Cursor<'a> {
    s: &'a str,
    file: &'a str,
    line: usize,
}

impl<'a> Cursor<'a> {
    fn eat(&mut self, lit: &str) -> Result<(), DumpError> {
        let t = self.s.trim_start();
        match t.strip_prefix(lit) {
            Some(r) => {
                self.s = r;
                Ok(())
            }
            None => Err(syntax(self.file, self.line, &format!("{lit:?}"), t)),
        }
    }
    fn word(&mut self) -> &'a str {
        let t = self.s.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        self.s = &t[end..];
        &t[..end]
    }
    fn field_hex(&mut self, key: &str) -> Result<u64, DumpError> {
        self.eat(key)?;
        let w = self.word();
        hex_u64(w).ok_or_else(|| syntax(self.file, self.line, &format!("hex digits after {key}"), w))
    }
}

fn parse_end(c: &mut Cursor<'_>) -> Result<SubnetEnd, DumpError> {
    c.eat("{")?;
    let ty = c.word();
    let (kind, sm) = match ty {
        "CA" => (NodeKind::Ca, false),
        "CA-SM" => (NodeKind::Ca, true),
        "SW" => (NodeKind::Switch, false),
        "SW-SM" => (NodeKind::Switch, true),
        t if t.starts_with("Rt") => (NodeKind::Router, t.ends_with("-SM")),
        other => {
            return Err(syntax(c.file, c.line, "a node type CA, SW, SW-SM or Rt", other));
        }
    };
    let num_ports = c.field_hex("Ports:")?;
    let sys_guid = c.field_hex("SystemGUID:")?;
    let node_guid = c.field_hex("NodeGUID:")?;
    let port_guid = c.field_hex("PortGUID:")?;
    let vendor_id = c.field_hex("VenID:")?;
    let device_id = c.field_hex("DevID:")?;
    let _rev = c.field_hex("Rev:")?;
    c.eat("{")?;
    // The description runs to the "} LID:" that follows it (it may hold braces).
    let end =
        c.s.find("} LID:")
            .ok_or_else(|| syntax(c.file, c.line, "'{<description>} LID:'", c.s))?;
    let desc = c.s[..end].to_string();
    c.s = &c.s[end + 1..];
    let lid = c.field_hex("LID:")?;
    let port = c.field_hex("PN:")?;
    c.eat("}")?;
    let small = |v: u64, max: u64, what: &str| -> Result<u64, DumpError> {
        if v > max {
            Err(syntax(c.file, c.line, what, &format!("{v:#x}")))
        } else {
            Ok(v)
        }
    };
    Ok(SubnetEnd {
        kind,
        sm,
        num_ports: small(num_ports, 254, "Ports: at most 0xFE")? as u8,
        sys_guid: Guid(sys_guid),
        node_guid: Guid(node_guid),
        port_guid: Guid(port_guid),
        vendor_id: small(vendor_id, 0xff_ffff_ffff, "a vendor id")? as u32,
        device_id: small(device_id, 0xffff, "DevID: at most 0xFFFF")? as u16,
        desc,
        lid: small(lid, 0xffff, "LID: at most 0xFFFF")? as u16,
        port: small(port, 254, "PN: at most 0xFE")? as u8,
    })
}

fn spd(s: &str) -> Option<IbSpeed> {
    Some(match s {
        "2.5" => IbSpeed::Sdr,
        "5" => IbSpeed::Ddr,
        "10" => IbSpeed::Qdr,
        "14" => IbSpeed::Fdr,
        "25" => IbSpeed::Edr,
        "50" => IbSpeed::Hdr,
        "100" => IbSpeed::Ndr,
        "200" => IbSpeed::Xdr,
        _ => return None,
    })
}

/// Parse `opensm-subnet.lst` (also ibdiagnet v1's `ibdiagnet.lst`, the same format).
pub fn parse_subnet_lst(text: &str, file: &str) -> Result<SubnetLst, DumpError> {
    let mut out = SubnetLst {
        file: file.to_string(),
        links: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let mut c = Cursor { s: raw, file, line: ln };
        let a = parse_end(&mut c)?;
        let b = parse_end(&mut c)?;
        let mut width = None;
        let mut speed = None;
        let mut state = String::new();
        for w in c.s.split_whitespace() {
            if let Some(v) = w.strip_prefix("PHY=") {
                width = Some(
                    v.parse::<IbWidth>()
                        .map_err(|_| syntax(file, ln, "PHY=1x|2x|4x|8x|12x", v))?,
                );
            } else if let Some(v) = w.strip_prefix("LOG=") {
                state = v.to_string();
            } else if let Some(v) = w.strip_prefix("SPD=") {
                speed = Some(spd(v).ok_or_else(|| syntax(file, ln, "SPD=2.5|5|10|14|25|50|100|200", v))?);
            } else {
                return Err(syntax(file, ln, "PHY=, LOG= or SPD= after the two ends", w));
            }
        }
        out.links.push(SubnetLink {
            line: ln,
            a,
            b,
            width,
            speed,
            state,
        });
    }
    if out.links.is_empty() {
        return Err(syntax(
            file,
            1,
            "at least one '{ … } { … } PHY=… LOG=… SPD=…' link line",
            "",
        ));
    }
    Ok(out)
}

/// A fabric built from `opensm-subnet.lst`, with the LIDs it records and what was
/// inconsistent in it (duplicate GUIDs and LIDs become findings, not errors).
pub struct SubnetFabric {
    /// The fabric.
    pub fabric: Fabric,
    /// LID of each (node, port) (switch: port 0) as recorded.
    pub lids: BTreeMap<(NodeId, u8), u16>,
    /// Conflicts found while building it.
    pub findings: Vec<Finding>,
}

impl SubnetLst {
    /// Build the fabric: nodes by NodeGUID (first record wins), links once per pair of
    /// ends. Conflicting records (the same NodeGUID with another type, port count or
    /// description; one PortGUID on two nodes; one LID on two ports) are reported.
    pub fn to_fabric(&self) -> Result<SubnetFabric, DumpError> {
        let file = self.file.as_str();
        let mut fab = Fabric::new();
        let mut findings = Vec::new();
        let mut first: BTreeMap<Guid, (&SubnetEnd, usize)> = BTreeMap::new();
        let mut port_guids: BTreeMap<Guid, BTreeMap<u8, Guid>> = BTreeMap::new();
        let mut port_owner: BTreeMap<Guid, (Guid, u8, usize)> = BTreeMap::new();
        let loc = |line: usize| Location::file(file).at_line(line);
        for l in &self.links {
            for e in [&l.a, &l.b] {
                match first.get(&e.node_guid) {
                    None => {
                        first.insert(e.node_guid, (e, l.line));
                    }
                    Some((f0, line0)) if f0.kind != e.kind || f0.num_ports != e.num_ports || f0.desc != e.desc => {
                        findings.push(rules::finding(
                            rules::DUPLICATE_GUID,
                            Severity::Error,
                            loc(l.line),
                            format!(
                                "node GUID {} is both {} {:?} ({} ports, line {line0}) and {} {:?} ({} ports)",
                                e.node_guid,
                                f0.kind.name(),
                                f0.desc,
                                f0.num_ports,
                                e.kind.name(),
                                e.desc,
                                e.num_ports
                            ),
                            "give every node a unique GUID (a cloned or badly flashed device)".into(),
                        ));
                    }
                    Some(_) => {}
                }
                if e.kind != NodeKind::Switch {
                    port_guids.entry(e.node_guid).or_default().insert(e.port, e.port_guid);
                }
                let key_port = if e.kind == NodeKind::Switch { 0 } else { e.port };
                match port_owner.get(&e.port_guid) {
                    Some(&(g, p, line0)) if g != e.node_guid || p != key_port => findings.push(rules::finding(
                        rules::DUPLICATE_GUID,
                        Severity::Error,
                        loc(l.line),
                        format!(
                            "port GUID {} is on {g}/P{p} (line {line0}) and on {}/P{key_port}",
                            e.port_guid, e.node_guid
                        ),
                        "give every port a unique GUID".into(),
                    )),
                    Some(_) => {}
                    None => {
                        port_owner.insert(e.port_guid, (e.node_guid, key_port, l.line));
                    }
                }
            }
        }
        // Nodes, in GUID order so the build is deterministic whatever the line order.
        for (g, (e, _)) in &first {
            let name = match e.kind {
                NodeKind::Switch => format!("S-{:016x}", g.0),
                NodeKind::Ca => format!("H-{:016x}", g.0),
                NodeKind::Router => format!("R-{:016x}", g.0),
            };
            let mut spec = match e.kind {
                NodeKind::Switch => NodeSpec::switch(name, *g, e.num_ports.max(1)),
                _ => NodeSpec::ca(name, *g, e.num_ports.max(1)),
            };
            spec.kind = e.kind;
            spec.desc = e.desc.clone();
            spec.sys_image_guid = Some(e.sys_guid);
            spec.vendor_id = e.vendor_id;
            spec.device_id = e.device_id;
            if e.kind != NodeKind::Switch {
                let known = port_guids.get(g);
                spec.port_guids = Some(
                    (1..=e.num_ports.max(1))
                        .map(|p| {
                            known
                                .and_then(|k| k.get(&p))
                                .copied()
                                .unwrap_or(Guid(g.0.wrapping_add(p as u64)))
                        })
                        .collect(),
                );
            }
            fab.add_node(spec).map_err(|source| DumpError::Model {
                file: file.into(),
                line: 0,
                source,
            })?;
        }
        let mut lids: BTreeMap<(NodeId, u8), u16> = BTreeMap::new();
        let mut lid_users: BTreeMap<u16, Vec<(NodeId, u8, usize)>> = BTreeMap::new();
        for l in &self.links {
            let na = fab.by_guid(l.a.node_guid).expect("node added");
            let nb = fab.by_guid(l.b.node_guid).expect("node added");
            for (n, e) in [(na, &l.a), (nb, &l.b)] {
                let p = if e.kind == NodeKind::Switch { 0 } else { e.port };
                if e.lid != 0 && lids.insert((n, p), e.lid).is_none() {
                    lid_users.entry(e.lid).or_default().push((n, p, l.line));
                }
            }
            if l.a.port == 0
                || l.b.port == 0
                || l.a.port > fab.node(na).num_ports()
                || l.b.port > fab.node(nb).num_ports()
            {
                return Err(syntax(
                    file,
                    l.line,
                    "port numbers within each node's Ports: count",
                    &format!("{}/{}", l.a.port, l.b.port),
                ));
            }
            if let Some((peer, _)) = fab.peer(na, l.a.port)
                && peer.node == nb
                && peer.port == l.b.port
            {
                continue; // the reverse direction of a link already added
            }
            // A port with two different peers: two devices answer to one GUID.
            let taken = [(na, l.a.port, &l.a), (nb, l.b.port, &l.b)]
                .into_iter()
                .find_map(|(n, p, e)| fab.peer(n, p).map(|(peer, _)| (p, e, peer)));
            if let Some((p, e, peer)) = taken {
                findings.push(rules::finding(
                    rules::DUPLICATE_GUID,
                    Severity::Error,
                    loc(l.line),
                    format!(
                        "port {p} of node GUID {} ({:?}) is cabled to both {}/P{} and another peer: two devices share this GUID",
                        e.node_guid,
                        e.desc,
                        fab.node(peer.node).desc,
                        peer.port
                    ),
                    "give every node a unique GUID".into(),
                ));
                continue;
            }
            let rate = LinkRate::ib(l.speed.unwrap_or(IbSpeed::Sdr), l.width.unwrap_or(IbWidth::X4));
            fab.connect(na, l.a.port, nb, l.b.port, rate, 0.0)
                .map_err(|source| DumpError::Model {
                    file: file.into(),
                    line: l.line,
                    source,
                })?;
        }
        for (lid, users) in &lid_users {
            if users.len() > 1 {
                let who: Vec<String> = users
                    .iter()
                    .map(|(n, p, line)| format!("{}/P{p} (line {line})", fab.node(*n).desc))
                    .collect();
                findings.push(rules::finding(
                    rules::DUPLICATE_LID,
                    Severity::Error,
                    loc(users[1].2),
                    format!("LID {lid} is used by {}", who.join(" and ")),
                    "let the SM reassign LIDs (opensm -r / clear guid2lid) so every port has its own".into(),
                ));
            }
        }
        Ok(SubnetFabric {
            fabric: fab,
            lids,
            findings,
        })
    }
}

/// Read `opensm-sl2vl.dump` into the `[node][in][out]` SL→VL tables of switches (CA
/// blocks are checked for syntax; CAs do not forward).
pub fn parse_sl2vl(f: &Fabric, text: &str, file: &str) -> Result<Vec<Vec<Vec<Sl2Vl>>>, DumpError> {
    let mut out: Vec<Vec<Vec<Sl2Vl>>> = f
        .nodes
        .iter()
        .map(|n| {
            if n.is_switch() {
                vec![vec![[0u8; 16]; n.ports.len()]; n.ports.len()]
            } else {
                Vec::new()
            }
        })
        .collect();
    let index = port_guid_index(f);
    let mut cur: Option<NodeId> = None;
    let mut blocks = 0;
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let header = ["Switch ", "Channel Adapter ", "Router "]
            .iter()
            .find_map(|p| line.strip_prefix(p).map(|r| (*p, r)));
        if let Some((kind, rest)) = header {
            let g = rest.split([',', ' ']).next().unwrap_or("");
            let g = hex_u64(g).ok_or_else(|| syntax(file, ln, "0x<GUID> after the node type", g))?;
            blocks += 1;
            cur = if kind == "Switch " {
                let n = f.by_guid(Guid(g)).ok_or(DumpError::UnknownGuid {
                    file: file.into(),
                    line: ln,
                    guid: Guid(g),
                    what: "switch",
                })?;
                Some(n)
            } else {
                index.get(&Guid(g)).ok_or(DumpError::UnknownGuid {
                    file: file.into(),
                    line: ln,
                    guid: Guid(g),
                    what: "port",
                })?;
                None
            };
            continue;
        }
        let (ports, vls) = line
            .split_once(':')
            .ok_or_else(|| syntax(file, ln, "'<in> <out> : <16 VLs>' or a node header", line))?;
        let mut pit = ports.split_whitespace();
        let (Some(ip), Some(op), None) = (pit.next(), pit.next(), pit.next()) else {
            return Err(syntax(file, ln, "two port numbers before ':'", ports));
        };
        let ip: usize = ip.parse().map_err(|_| syntax(file, ln, "an input port number", ip))?;
        let op: usize = op.parse().map_err(|_| syntax(file, ln, "an output port number", op))?;
        let v: Vec<u8> = vls
            .split_whitespace()
            .map(|x| x.parse::<u8>().ok().filter(|&v| v < 16))
            .collect::<Option<_>>()
            .ok_or_else(|| syntax(file, ln, "16 VL numbers 0..15", vls))?;
        let v: Sl2Vl = v
            .try_into()
            .map_err(|_| syntax(file, ln, "exactly 16 VL numbers", vls))?;
        if blocks == 0 {
            return Err(syntax(
                file,
                ln,
                "a 'Switch 0x…' or 'Channel Adapter 0x…' header first",
                line,
            ));
        }
        if let Some(n) = cur {
            let np = f.node(n).ports.len();
            if ip >= np || op >= np {
                return Err(syntax(
                    file,
                    ln,
                    &format!("ports 0..{} of {}", np - 1, f.node(n).name),
                    &format!("{ip} {op}"),
                ));
            }
            out[n.idx()][ip][op] = v;
        }
    }
    if blocks == 0 {
        return Err(syntax(
            file,
            1,
            "an opensm-sl2vl.dump ('Switch 0x…, base LID …' blocks)",
            "",
        ));
    }
    Ok(out)
}

/// `opensm.fdbs` (OpenSM `dump_ucast_routes`): the LFT input of `ibdmchk -f`.
/// Hops are the shortest switch-graph distance to the LID's owner, "Optimal" whether
/// the chosen port lies on such a path, as OpenSM computes them.
pub fn fdbs_dump(f: &Fabric, t: &RoutingTables) -> String {
    let mut s = String::new();
    let dist = hop_distances(f, t);
    let mut sws: Vec<NodeId> = f.nodes_of(NodeKind::Switch).collect();
    sws.sort_by_key(|&n| (t.lid_of(n, 0).map(|l| l.0).unwrap_or(u16::MAX), n));
    for n in sws {
        let _ = writeln!(s, "dump_ucast_routes: Switch 0x{:016x}", f.node(n).node_guid.0);
        s.push_str("LID    : Port : Hops : Optimal\n");
        let lft = &t.lft[n.idx()];
        // OpenSM lists every LID up to the top one, UNREACHABLE where the LFT has no port.
        let top = t.lid_owner.len().max(lft.ports.len());
        for lid in 1..top {
            let port = lft.ports.get(lid).copied().unwrap_or(NO_ROUTE);
            if port == NO_ROUTE {
                if t.owner(Lid(lid as u16)).is_some() {
                    let _ = writeln!(s, "0x{lid:04X} : UNREACHABLE");
                }
                continue;
            }
            // Hops through the chosen port, and whether that is the least (OpenSM's
            // osm_switch_get_hop_count on the chosen port vs the best one).
            let (hops, optimal) = match t.owner(Lid(lid as u16)) {
                Some((dn, dp)) => {
                    let best = dist.get(&(n, dn, dp)).copied();
                    let via = if port == 0 {
                        Some(0)
                    } else {
                        f.peer(n, port).and_then(|(e, _)| {
                            if e.node == dn && (e.port == dp || f.node(dn).is_switch()) {
                                Some(1)
                            } else {
                                dist.get(&(e.node, dn, dp)).map(|h| h + 1)
                            }
                        })
                    };
                    (via.unwrap_or(0xff), via.is_some() && via == best)
                }
                None => (0xff, false),
            };
            let _ = writeln!(
                s,
                "0x{lid:04X} : {port:03}  : {hops:02}   : {}",
                if optimal { "yes" } else { "no" }
            );
        }
    }
    s
}

/// Hop distance from every switch to every LID-owning port: (switch, node, port) → hops.
fn hop_distances(f: &Fabric, t: &RoutingTables) -> HashMap<(NodeId, NodeId, u8), u32> {
    let mut out = HashMap::new();
    let mut owners: Vec<(NodeId, u8)> = t.lid_owner.iter().flatten().copied().collect();
    owners.sort();
    owners.dedup();
    for (dn, dp) in owners {
        // BFS over switches backwards from the owner.
        let mut q = std::collections::VecDeque::new();
        let mut seen: HashMap<NodeId, u32> = HashMap::new();
        if f.node(dn).is_switch() {
            seen.insert(dn, 0);
            q.push_back(dn);
        } else if let Some((e, _)) = f.peer(dn, dp)
            && f.node(e.node).is_switch()
        {
            seen.insert(e.node, 1);
            q.push_back(e.node);
        }
        while let Some(n) = q.pop_front() {
            let d = seen[&n];
            for p in f.node(n).port_nums() {
                if let Some((e, _)) = f.peer(n, p)
                    && f.node(e.node).is_switch()
                    && !seen.contains_key(&e.node)
                {
                    seen.insert(e.node, d + 1);
                    q.push_back(e.node);
                }
            }
        }
        for (n, d) in seen {
            out.insert((n, dn, dp), d);
        }
    }
    out
}

/// Read a path-SL file: ibdm's `0x<source node GUID> <dlid> <sl>` lines (what
/// `ibdmchk -c` reads), or OpenSM-style blocks (`Channel Adapter 0x<port GUID>, …`
/// followed by `0x<dlid> : <sl>` lines). Fills `t.path_sl` over the CA LIDs.
pub fn parse_path_sl(f: &Fabric, t: &mut RoutingTables, text: &str, file: &str) -> Result<(), DumpError> {
    let index = port_guid_index(f);
    // End-port LIDs (all LMC LIDs of CA/router ports), sorted.
    let mut lids: Vec<Lid> = Vec::new();
    for (l, o) in t.lid_owner.iter().enumerate() {
        if let Some((n, _)) = o
            && !f.node(*n).is_switch()
        {
            lids.push(Lid(l as u16));
        }
    }
    let n = lids.len();
    let pos = |l: u16| lids.binary_search(&Lid(l)).ok();
    let mut sl = vec![0u8; n * n];
    let mut cur: Option<(NodeId, u8)> = None;
    let set = |src: (NodeId, u8), dlid: u16, v: u8, ln: usize, sl: &mut [u8]| -> Result<(), DumpError> {
        let di =
            pos(dlid).ok_or_else(|| syntax(file, ln, "a destination LID owned by a CA port", &dlid.to_string()))?;
        let node = f.node(src.0);
        let ports: Vec<u8> = if src.1 == 0 {
            node.port_nums().collect()
        } else {
            vec![src.1]
        };
        for p in ports {
            if let Some(base) = t.lid_of(src.0, p) {
                let span = 1u16 << t.lmc.min(7);
                for l in base.0..base.0 + span {
                    if let Some(si) = pos(l) {
                        sl[si * n + di] = v;
                    }
                }
            }
        }
        Ok(())
    };
    for (i, raw) in text.lines().enumerate() {
        let ln = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line
            .strip_prefix("Channel Adapter ")
            .or_else(|| line.strip_prefix("Switch "))
        {
            let g = rest.split([',', ' ']).next().unwrap_or("");
            let g = hex_u64(g).ok_or_else(|| syntax(file, ln, "0x<port GUID> after the node type", g))?;
            cur = Some(*index.get(&Guid(g)).ok_or(DumpError::UnknownGuid {
                file: file.into(),
                line: ln,
                guid: Guid(g),
                what: "port",
            })?);
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            [lid, ":", v] => {
                let src = cur
                    .ok_or_else(|| syntax(file, ln, "a 'Channel Adapter 0x…' header before '0x<lid> : <sl>'", line))?;
                let l = hex_u64(lid)
                    .filter(|&l| l <= 0xbfff)
                    .ok_or_else(|| syntax(file, ln, "a hex LID", lid))?;
                let v: u8 = v
                    .parse()
                    .ok()
                    .filter(|&v| v < 16)
                    .ok_or_else(|| syntax(file, ln, "an SL 0..15", v))?;
                set(src, l as u16, v, ln, &mut sl)?;
            }
            [g, lid, v] => {
                let g = hex_u64(g).ok_or_else(|| syntax(file, ln, "0x<source GUID>", g))?;
                let src = match f.by_guid(Guid(g)) {
                    Some(n) => (n, 0),
                    None => *index.get(&Guid(g)).ok_or(DumpError::UnknownGuid {
                        file: file.into(),
                        line: ln,
                        guid: Guid(g),
                        what: "source",
                    })?,
                };
                let l: u16 = lid
                    .parse()
                    .map_err(|_| syntax(file, ln, "a decimal destination LID", lid))?;
                let v: u8 = v
                    .parse()
                    .ok()
                    .filter(|&v| v < 16)
                    .ok_or_else(|| syntax(file, ln, "an SL 0..15", v))?;
                set(src, l, v, ln, &mut sl)?;
            }
            _ => {
                return Err(syntax(file, ln, "'0x<guid> <dlid> <sl>' or '0x<lid> : <sl>'", line));
            }
        }
    }
    t.path_sl = Some(sm::tables::PathSl { lids, sl });
    Ok(())
}

/// The path SLs in ibdm's format (`ibdmchk -c`): `0x<source node GUID> <dlid> <sl>`
/// for every CA port base LID and destination CA LID.
pub fn psl_dump(f: &Fabric, t: &RoutingTables) -> String {
    let mut s = String::new();
    let Some(p) = &t.path_sl else { return s };
    let n = p.lids.len();
    for (si, sl) in p.lids.iter().enumerate() {
        let Some((node, port)) = t.owner(*sl) else {
            continue;
        };
        if t.lid_of(node, port) != Some(*sl) {
            continue; // only base LIDs stand for the source port
        }
        for (di, dl) in p.lids.iter().enumerate() {
            if si != di {
                let _ = writeln!(s, "0x{:016x} {} {}", f.node(node).node_guid.0, dl.0, p.sl[si * n + di]);
            }
        }
    }
    s
}

/// The switch SL→VL tables in ibdm's format (`ibdmchk -d`):
/// `0x<switch GUID> <in> <out> 0x(vl0)(vl1) … 0x(vl14)(vl15)`.
pub fn slvl_dump(f: &Fabric, t: &RoutingTables) -> String {
    let mut s = String::new();
    let Some(m) = &t.sl2vl else { return s };
    for n in f.nodes_of(NodeKind::Switch) {
        let Some(tab) = m.get(n.idx()) else { continue };
        for (i, row) in tab.iter().enumerate() {
            for (o, vl) in row.iter().enumerate() {
                if o == 0 {
                    continue;
                }
                let _ = write!(s, "0x{:016x} {i} {o}", f.node(n).node_guid.0);
                for pair in vl.chunks(2) {
                    let _ = write!(s, " 0x{:x}{:x}", pair[0] & 15, pair[1] & 15);
                }
                s.push('\n');
            }
        }
    }
    s
}
