//! OpenSM-format outputs (reference infiniband-sm.md §2.3–2.4) and a reader for
//! `opensm-lfts.dump`, so tables can be compared with OpenSM's on the same fabric.
//!
//! - [`lfts_dump`]: `opensm-lfts.dump` (`dump_ucast_lfts`, `opensm/osm_dump.c`), also
//!   what `opensm -R file -U` loads;
//! - [`subnet_lst`]: `opensm-subnet.lst` (`dump_topology_node`), one line per directed
//!   link, the input of `ibdmchk -s`;
//! - `opensm-sl2vl.dump` from [`sl2vl_dump`];
//! - guid2lid: [`crate::lids::Guid2Lid::to_text`].
//!
//! Switches and CAs are listed by ascending LID, as OpenSM's dumps of discovered
//! fabrics are.

use std::fmt::Write as _;

use fabric::{Fabric, IbSpeed, Lid, LinkRate, NodeId, NodeKind};
use thiserror::Error;

use crate::tables::RoutingTables;

fn kind_long(k: NodeKind) -> &'static str {
    match k {
        NodeKind::Switch => "Switch",
        NodeKind::Ca => "Channel Adapter",
        NodeKind::Router => "Router",
    }
}

/// Switch node ids ordered by their LID (switches without LIDs last, by id).
fn switches_by_lid(f: &Fabric, t: &RoutingTables) -> Vec<NodeId> {
    let mut v: Vec<NodeId> = f.nodes_of(NodeKind::Switch).collect();
    v.sort_by_key(|&n| (t.lid_of(n, 0).map(|l| l.0).unwrap_or(u16::MAX), n));
    v
}

/// `opensm-lfts.dump`.
pub fn lfts_dump(f: &Fabric, t: &RoutingTables) -> String {
    let mut s = String::new();
    let max_lid = t.lid_owner.len().saturating_sub(1);
    for n in switches_by_lid(f, t) {
        let node = &f.nodes[n.idx()];
        let lid = t.lid_of(n, 0).map(|l| l.0).unwrap_or(0);
        let _ = writeln!(
            s,
            "Unicast lids [0-{max_lid}] of switch Lid {lid} guid 0x{:016x} ('{}'):",
            node.node_guid.0, node.desc
        );
        let lft = &t.lft[n.idx()];
        let mut count = 0;
        for l in 1..=max_lid {
            let Some(port) = lft.get(Lid(l as u16)) else { continue };
            count += 1;
            match t.owner(Lid(l as u16)) {
                Some((o, op)) => {
                    let on = &f.nodes[o.idx()];
                    let _ = writeln!(
                        s,
                        "0x{l:04x} {port:03} # {} portguid 0x{:016x}: '{}'",
                        kind_long(on.kind),
                        on.port_guid(op).0,
                        on.desc
                    );
                }
                None => {
                    let _ = writeln!(s, "0x{l:04x} {port:03} # unknown node and type");
                }
            }
        }
        let _ = writeln!(s, "{count} lids dumped");
    }
    s
}

/// OpenSM's SPD= value: the lane rate in Gb/s as `dump_topology_node` prints it.
fn spd(rate: LinkRate) -> &'static str {
    match rate {
        LinkRate::Ib { speed, .. } => match speed {
            IbSpeed::Sdr => "2.5",
            IbSpeed::Ddr => "5",
            IbSpeed::Qdr => "10",
            IbSpeed::Fdr10 => "10",
            IbSpeed::Fdr => "14",
            IbSpeed::Edr => "25",
            IbSpeed::Hdr => "50",
            IbSpeed::Ndr => "100",
            IbSpeed::Xdr => "200",
        },
        LinkRate::Eth { .. } => "?",
    }
}

/// `opensm-subnet.lst`: one line per directed link. `sm_node` is printed as `SW-SM`
/// (or `CA-SM`).
pub fn subnet_lst(f: &Fabric, t: &RoutingTables, sm_node: Option<NodeId>) -> String {
    let mut s = String::new();
    let end = |n: NodeId, p: u8, wide_vendor: bool| -> String {
        let node = &f.nodes[n.idx()];
        let mut ty = match node.kind {
            NodeKind::Switch => "SW".to_string(),
            NodeKind::Ca => "CA".to_string(),
            NodeKind::Router => "Rt".to_string(),
        };
        if Some(n) == sm_node {
            ty.push_str("-SM");
        }
        let lid_port = if node.kind == NodeKind::Switch { 0 } else { p };
        let lid = t.lid_of(n, lid_port).map(|l| l.0).unwrap_or(0);
        let pg = if node.kind == NodeKind::Switch {
            node.node_guid
        } else {
            node.port_guid(p)
        };
        // OpenSM prints the local VenID with 6 digits and the remote one with 8.
        let ven = if wide_vendor {
            format!("{:08X}", node.vendor_id)
        } else {
            format!("{:06X}", node.vendor_id)
        };
        format!(
            "{{ {ty} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{:016x} VenID:{ven} DevID:{:04X} Rev:{:08X} {{{}}} LID:{:04X} PN:{:02X} }}",
            node.num_ports(),
            node.sys_image_guid.0,
            node.node_guid.0,
            pg.0,
            node.device_id,
            0,
            node.desc,
            lid,
            p
        )
    };
    for (i, node) in f.nodes.iter().enumerate() {
        let n = NodeId(i as u32);
        for p in node.port_nums() {
            let Some((peer, link)) = f.peer(n, p) else { continue };
            let l = f.link(link);
            let width = match l.rate {
                LinkRate::Ib { width, .. } => width.name().to_string(),
                LinkRate::Eth { .. } => "?".to_string(),
            };
            let _ = writeln!(
                s,
                "{} {} PHY={width} LOG=ACT SPD={}",
                end(n, p, false),
                end(peer.node, peer.port, true),
                spd(l.rate)
            );
        }
    }
    s
}

/// `opensm-sl2vl.dump`: per switch every (in, out) pair, per CA port one line, as
/// OpenSM writes it for engines that program SL2VL. Without SL2VL tables every SL maps
/// to VL 0 and the dump says so in the same layout.
pub fn sl2vl_dump(f: &Fabric, t: &RoutingTables) -> String {
    let mut s = String::new();
    let header = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n#--------------------------------------------------------\n";
    let rule = "#--------------------------------------------------------\n";
    let row = |s: &mut String, i: usize, o: usize, m: &[u8; 16]| {
        let _ = write!(s, "{i:<3} {o:<3} : ");
        for v in m {
            let _ = write!(s, "{v:<2} ");
        }
        s.push('\n');
    };
    // CA ports map SL to VL the way the engine's layers expect: SL i -> VL i mod VLs.
    let mut ca_map = [0u8; 16];
    for (i, v) in ca_map.iter_mut().enumerate() {
        *v = (i % t.vls_used.max(1) as usize) as u8;
    }
    let mut entries: Vec<(u16, NodeId, u8)> = Vec::new();
    for (i, lids) in t.base_lid.iter().enumerate() {
        for (p, &l) in lids.iter().enumerate() {
            if l.0 != 0 {
                entries.push((l.0, NodeId(i as u32), p as u8));
            }
        }
    }
    entries.sort();
    for (lid, n, p) in entries {
        let node = &f.nodes[n.idx()];
        if node.kind == NodeKind::Switch {
            let _ = write!(
                s,
                "Switch 0x{:016x}, base LID {lid}, \"{}\"\n{header}",
                node.node_guid.0, node.desc
            );
            let np = node.num_ports() as usize;
            for o in 1..=np {
                for i in 0..=np {
                    let m = t
                        .sl2vl
                        .as_ref()
                        .and_then(|x| x.get(n.idx()))
                        .and_then(|x| x.get(i))
                        .and_then(|x| x.get(o))
                        .copied()
                        .unwrap_or([0; 16]);
                    row(&mut s, i, o, &m);
                }
            }
        } else {
            let _ = write!(
                s,
                "{} 0x{:016x}, base LID {lid}, \"{}\"\n{header}",
                kind_long(node.kind),
                node.port_guid(p).0,
                node.desc
            );
            let m = if t.sl2vl.is_some() { ca_map } else { [0; 16] };
            row(&mut s, 0, 0, &m);
        }
        s.push_str(rule);
        s.push('\n');
    }
    s
}

/// Errors reading an `opensm-lfts.dump`.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LftsDumpError {
    #[error("{file}:{line}: {what}")]
    Syntax { file: String, line: usize, what: String },
    #[error("{file}:{line}: switch GUID {guid:#018x} is not in the fabric")]
    UnknownSwitch { file: String, line: usize, guid: u64 },
    #[error("{file}:{line}: port GUID {guid:#018x} is not in the fabric")]
    UnknownPort { file: String, line: usize, guid: u64 },
}

/// Read an `opensm-lfts.dump` into tables for `f`: switch LIDs from the block headers,
/// end-port LIDs from the `portguid` comments (LMC inferred from LIDs per port), LFTs
/// from the entries. Lets OpenSM's tables be validated and compared with ours.
pub fn parse_lfts_dump(f: &Fabric, text: &str, file: &str) -> Result<RoutingTables, LftsDumpError> {
    let mut t = RoutingTables::empty_for(f);
    let syn = |line: usize, what: &str| LftsDumpError::Syntax {
        file: file.into(),
        line,
        what: what.into(),
    };
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    let mut cur: Option<NodeId> = None;
    let mut owners: Vec<Option<(NodeId, u8)>> = Vec::new();
    let mut per_port: std::collections::BTreeMap<(NodeId, u8), Vec<u16>> = Default::default();
    // Port GUID -> (node, port)
    let mut by_port_guid = std::collections::HashMap::new();
    for (i, node) in f.nodes.iter().enumerate() {
        if node.kind == NodeKind::Switch {
            by_port_guid.insert(node.node_guid, (NodeId(i as u32), 0u8));
        } else {
            for p in node.port_nums() {
                by_port_guid.insert(node.port_guid(p), (NodeId(i as u32), p));
            }
        }
    }
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        if let Some(rest) = line.strip_prefix("Unicast lids [") {
            let g = rest
                .split(" guid ")
                .nth(1)
                .and_then(|x| x.split_whitespace().next())
                .ok_or_else(|| syn(ln, "expected ` guid 0x…` in the header"))?;
            let g = hex(g).ok_or_else(|| syn(ln, "bad switch GUID"))?;
            let n = f.by_guid(fabric::Guid(g)).ok_or(LftsDumpError::UnknownSwitch {
                file: file.into(),
                line: ln,
                guid: g,
            })?;
            let lid = rest
                .split(" Lid ")
                .nth(1)
                .and_then(|x| x.split_whitespace().next())
                .and_then(|x| x.parse::<u16>().ok())
                .ok_or_else(|| syn(ln, "expected `Lid <n>` in the header"))?;
            per_port.entry((n, 0)).or_default().push(lid);
            cur = Some(n);
        } else if line.starts_with("0x") {
            let n = cur.ok_or_else(|| syn(ln, "entry before any `Unicast lids` header"))?;
            let mut it = line.split_whitespace();
            let lid = it.next().and_then(hex).ok_or_else(|| syn(ln, "bad LID"))? as usize;
            let port: u8 = it
                .next()
                .and_then(|x| x.parse().ok())
                .ok_or_else(|| syn(ln, "bad port"))?;
            let lft = &mut t.lft[n.idx()].ports;
            if lft.len() <= lid {
                lft.resize(lid + 1, crate::tables::NO_ROUTE);
            }
            lft[lid] = port;
            if let Some(pg) = line.split("portguid ").nth(1).and_then(|x| x.split(':').next()) {
                let g = hex(pg).ok_or_else(|| syn(ln, "bad port GUID"))?;
                let owner = *by_port_guid.get(&fabric::Guid(g)).ok_or(LftsDumpError::UnknownPort {
                    file: file.into(),
                    line: ln,
                    guid: g,
                })?;
                if owners.len() <= lid {
                    owners.resize(lid + 1, None);
                }
                if owners[lid].is_none() {
                    owners[lid] = Some(owner);
                    per_port.entry(owner).or_default().push(lid as u16);
                }
            }
        }
    }
    let mut lmc = 0u8;
    for ((n, p), lids) in &per_port {
        let lo = *lids.iter().min().unwrap_or(&0);
        t.base_lid[n.idx()][*p as usize] = Lid(lo);
        if f.nodes[n.idx()].kind != NodeKind::Switch {
            let mut c = lids.clone();
            c.sort_unstable();
            c.dedup();
            while (1usize << lmc) < c.len() {
                lmc += 1;
            }
        }
    }
    t.lmc = lmc;
    let max = owners
        .len()
        .max(per_port.values().flatten().map(|&l| l as usize + 1).max().unwrap_or(0));
    owners.resize(max, None);
    for ((n, p), lids) in &per_port {
        for &l in lids {
            owners[l as usize] = Some((*n, *p));
        }
    }
    t.lid_owner = owners;
    Ok(t)
}
