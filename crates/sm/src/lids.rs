//! LID assignment with LMC, stable across sweeps and restarts.
//!
//! Follows OpenSM's LID manager (`opensm/osm_lid_mgr.c`, reference infiniband-sm.md
//! §1.5): every end port gets 2^LMC consecutive LIDs aligned to 2^LMC; switch port 0 gets
//! one LID (LMC is not applied to enhanced port 0) but its start is still aligned, as the
//! measured LMC=2 run shows (switches at 1 and 8, CAs at 4–7, 12–15, …); the SM's own
//! port is assigned first; a port keeps the range recorded in the `guid2lid` cache when
//! that range is free; unicast LIDs are 0x0001–0xBFFF (IBA vol. 1 §4.1.3).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use fabric::{Fabric, Guid, Lid, NodeId, NodeKind};
use thiserror::Error;

use crate::tables::RoutingTables;

/// Highest unicast LID (IBA vol. 1 §4.1.3).
pub const MAX_UNICAST_LID: u16 = 0xbfff;

/// LID assignment failures.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LidError {
    #[error("LMC {0} is out of range (0..=7)")]
    BadLmc(u8),
    #[error(
        "the unicast LID space (0x0001-0xbfff, 49151 LIDs) cannot hold {needed} LIDs: {switches} switches and {end_ports} CA ports with LMC {lmc}"
    )]
    Exhausted {
        needed: usize,
        switches: usize,
        end_ports: usize,
        lmc: u8,
    },
    #[error("SM port {port} of node {node} does not exist")]
    BadSmPort { node: u32, port: u8 },
}

/// Errors reading a guid2lid file.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Guid2LidError {
    #[error("{file}:{line}: expected `0x<guid> 0x<min lid> 0x<max lid>`, got {text:?}")]
    Syntax { file: String, line: usize, text: String },
    #[error("{file}:{line}: LID range {min:#06x}-{max:#06x} is not a valid unicast range")]
    BadRange {
        file: String,
        line: usize,
        min: u16,
        max: u16,
    },
    #[error("{file}:{line}: port GUID {guid} appears twice")]
    Duplicate { file: String, line: usize, guid: Guid },
}

/// OpenSM's `guid2lid` cache: port GUID → [min LID, max LID], ordered by GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guid2Lid {
    pub map: BTreeMap<Guid, (Lid, Lid)>,
}

impl Guid2Lid {
    /// Parse the OpenSM cache format (reference §2.4: records separated by blank lines,
    /// each `0x%016x 0x%04x 0x%04x`). `file` names the source in errors.
    pub fn parse(text: &str, file: &str) -> Result<Guid2Lid, Guid2LidError> {
        let mut map = BTreeMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let syntax = || Guid2LidError::Syntax {
                file: file.to_string(),
                line: i + 1,
                text: raw.to_string(),
            };
            let mut it = line.split_whitespace();
            let hex = |s: Option<&str>| -> Result<u64, Guid2LidError> {
                let s = s.ok_or_else(syntax)?;
                let h = s
                    .strip_prefix("0x")
                    .or_else(|| s.strip_prefix("0X"))
                    .ok_or_else(syntax)?;
                u64::from_str_radix(h, 16).map_err(|_| syntax())
            };
            let g = hex(it.next())?;
            let lo = hex(it.next())?;
            let hi = hex(it.next())?;
            if it.next().is_some() {
                return Err(syntax());
            }
            if lo == 0 || hi < lo || hi > MAX_UNICAST_LID as u64 {
                return Err(Guid2LidError::BadRange {
                    file: file.to_string(),
                    line: i + 1,
                    min: lo as u16,
                    max: hi as u16,
                });
            }
            if map.insert(Guid(g), (Lid(lo as u16), Lid(hi as u16))).is_some() {
                return Err(Guid2LidError::Duplicate {
                    file: file.to_string(),
                    line: i + 1,
                    guid: Guid(g),
                });
            }
        }
        Ok(Guid2Lid { map })
    }

    /// Write in OpenSM's format (one record per port, blank line between records),
    /// ordered by GUID.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        for (g, (lo, hi)) in &self.map {
            let _ = writeln!(s, "0x{:016x} 0x{:04x} 0x{:04x}\n", g.0, lo.0, hi.0);
        }
        s
    }

    /// The ranges recorded in `t` (every port with a LID), keyed by port GUID.
    pub fn from_tables(f: &Fabric, t: &RoutingTables) -> Guid2Lid {
        let mut map = BTreeMap::new();
        for (i, lids) in t.base_lid.iter().enumerate() {
            let node = &f.nodes[i];
            for (p, &l) in lids.iter().enumerate() {
                if l.0 == 0 {
                    continue;
                }
                let n = if node.kind == NodeKind::Switch {
                    1
                } else {
                    1u16 << t.lmc
                };
                map.insert(node.port_guid(p as u8), (l, Lid(l.0 + n - 1)));
            }
        }
        Guid2Lid { map }
    }
}

/// What [`assign`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LidReport {
    /// Ports that received LIDs.
    pub ports: usize,
    /// Ports that kept their cached range.
    pub kept: usize,
    /// Ports whose cached range was taken or misaligned and had to move.
    pub moved: usize,
    /// Highest LID in use.
    pub max_lid: u16,
}

/// Assign LIDs to every switch (port 0) and every cabled CA/router port, the SM's port
/// `sm` first, keeping the `prior` cache where possible. Ports are visited in
/// breadth-first order from the SM node (ties by port number), so the result does not
/// depend on node numbering; nodes the SM cannot reach get no LID.
pub fn assign(
    f: &Fabric,
    sm: (NodeId, u8),
    lmc: u8,
    prior: Option<&Guid2Lid>,
) -> Result<(RoutingTables, LidReport), LidError> {
    if lmc > 7 {
        return Err(LidError::BadLmc(lmc));
    }
    let (smn, smp) = sm;
    if smn.idx() >= f.nodes.len() || smp as usize >= f.nodes[smn.idx()].ports.len() {
        return Err(LidError::BadSmPort { node: smn.0, port: smp });
    }
    let mut t = RoutingTables::empty_for(f);
    t.lmc = lmc;
    let flat = f.freeze();
    // BFS order of nodes from the SM node (transit through switches only).
    let mut order = Vec::with_capacity(f.nodes.len());
    let mut seen = vec![false; f.nodes.len()];
    seen[smn.idx()] = true;
    order.push(smn);
    let mut h = 0;
    while h < order.len() {
        let n = order[h];
        h += 1;
        if n != smn && f.nodes[n.idx()].kind != NodeKind::Switch {
            continue;
        }
        for a in flat.neighbors(n) {
            if !seen[a.peer.idx()] {
                seen[a.peer.idx()] = true;
                order.push(a.peer);
            }
        }
    }
    // Ports to assign, SM port first.
    let mut ports: Vec<(NodeId, u8)> = Vec::new();
    let sm_slot = if f.nodes[smn.idx()].kind == NodeKind::Switch {
        0
    } else {
        smp
    };
    ports.push((smn, sm_slot));
    for &n in &order {
        let node = &f.nodes[n.idx()];
        if node.kind == NodeKind::Switch {
            if n != smn {
                ports.push((n, 0));
            }
        } else {
            for p in node.port_nums() {
                if (n, p) != (smn, sm_slot) && node.ports[p as usize].link.is_some() {
                    ports.push((n, p));
                }
            }
        }
    }
    let size = |n: NodeId| -> u16 {
        if f.nodes[n.idx()].kind == NodeKind::Switch {
            1
        } else {
            1 << lmc
        }
    };
    let switches = ports
        .iter()
        .filter(|(n, _)| f.nodes[n.idx()].kind == NodeKind::Switch)
        .count();
    let end_ports = ports.len() - switches;
    let needed = switches + (end_ports << lmc);
    let exhausted = || LidError::Exhausted {
        needed,
        switches,
        end_ports,
        lmc,
    };
    if needed > MAX_UNICAST_LID as usize {
        return Err(exhausted());
    }
    let align = 1u16 << lmc;
    let mut used = vec![false; MAX_UNICAST_LID as usize + 1];
    used[0] = true;
    let mut rep = LidReport::default();
    let mut pending = Vec::new();
    // First pass: cached ranges that fit.
    for &(n, p) in &ports {
        let node = &f.nodes[n.idx()];
        let want = size(n);
        let got = prior.and_then(|c| c.map.get(&node.port_guid(p))).copied();
        if let Some((lo, hi)) = got {
            let ok = hi.0 - lo.0 + 1 == want
                && (want == 1 || lo.0 % align == 0)
                && hi.0 <= MAX_UNICAST_LID
                && (lo.0..=hi.0).all(|l| !used[l as usize]);
            if ok {
                for l in lo.0..=hi.0 {
                    used[l as usize] = true;
                }
                t.base_lid[n.idx()][p as usize] = lo;
                rep.kept += 1;
                continue;
            }
            rep.moved += 1;
        }
        pending.push((n, p));
    }
    // Second pass: the lowest free aligned range, in port order.
    let mut cursor = align as usize;
    if pending.first() == Some(&ports[0]) && size(ports[0].0) == 1 {
        // A switch SM's port 0 takes LID 1 when it has no cached LID (OpenSM gives the
        // SM port the first LID; a CA SM's range stays 2^LMC aligned).
        cursor = 1;
    }
    for (n, p) in pending {
        let want = size(n) as usize;
        loop {
            let lo = cursor.div_ceil(align as usize) * align as usize;
            let lo = if cursor == 1 { 1 } else { lo };
            if lo + want - 1 > MAX_UNICAST_LID as usize {
                return Err(exhausted());
            }
            if (lo..lo + want).all(|l| !used[l]) {
                used[lo..lo + want].fill(true);
                t.base_lid[n.idx()][p as usize] = Lid(lo as u16);
                cursor = lo + want;
                break;
            }
            cursor = lo + 1;
        }
    }
    // Owner table.
    let mut max_lid = 0u16;
    for (i, lids) in t.base_lid.iter().enumerate() {
        for &l in lids.iter() {
            if l.0 != 0 {
                max_lid = max_lid.max(l.0 + size(NodeId(i as u32)) - 1);
            }
        }
    }
    t.lid_owner = vec![None; max_lid as usize + 1];
    for (i, lids) in t.base_lid.iter().enumerate() {
        let n = NodeId(i as u32);
        for (p, &l) in lids.iter().enumerate() {
            if l.0 != 0 {
                rep.ports += 1;
                for k in 0..size(n) {
                    t.lid_owner[(l.0 + k) as usize] = Some((n, p as u8));
                }
            }
        }
    }
    rep.max_lid = max_lid;
    Ok((t, rep))
}

/// The default SM attachment: the first node of the fabric (ibsim attaches clients to
/// the first node of the net file), port 0 for a switch, else its first cabled port.
pub fn default_sm_port(f: &Fabric) -> Option<(NodeId, u8)> {
    let node = f.nodes.first()?;
    if node.kind == NodeKind::Switch {
        return Some((NodeId(0), 0));
    }
    node.port_nums()
        .find(|&p| node.ports[p as usize].link.is_some())
        .map(|p| (NodeId(0), p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::{LinkRate, NodeSpec};

    /// Two switches, two 1-port CAs; the SM on h0.
    fn fabric() -> Fabric {
        let mut f = Fabric::new();
        let h0 = f.add_node(NodeSpec::ca("h0", Guid(0x100000), 1)).unwrap();
        let s0 = f.add_node(NodeSpec::switch("s0", Guid(0x200000), 4)).unwrap();
        let s1 = f.add_node(NodeSpec::switch("s1", Guid(0x200001), 4)).unwrap();
        let h1 = f.add_node(NodeSpec::ca("h1", Guid(0x100002), 1)).unwrap();
        f.connect(h0, 1, s0, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s0, 2, s1, 2, LinkRate::NDR_4X, 1.0).unwrap();
        f.connect(s1, 1, h1, 1, LinkRate::NDR_4X, 1.0).unwrap();
        f
    }

    #[test]
    fn ca_sm_first_and_aligned_with_lmc() {
        let f = fabric();
        let (t, rep) = assign(&f, (NodeId(0), 1), 2, None).unwrap();
        // SM port first, aligned to 4: LIDs 4..7; then s0 at 8, s1 at 12, h1 at 16..19.
        assert_eq!(t.lid_of(NodeId(0), 1), Some(Lid(4)));
        assert_eq!(t.lid_of(NodeId(1), 0), Some(Lid(8)));
        assert_eq!(t.lid_of(NodeId(2), 0), Some(Lid(12)));
        assert_eq!(t.lid_of(NodeId(3), 1), Some(Lid(16)));
        assert_eq!(t.owner(Lid(19)), Some((NodeId(3), 1)));
        assert_eq!(rep.max_lid, 19);
        let (t0, _) = assign(&f, (NodeId(0), 1), 0, None).unwrap();
        assert_eq!(t0.lid_of(NodeId(0), 1), Some(Lid(1)));
    }

    #[test]
    fn guid2lid_parse_errors_name_file_and_line() {
        let e = Guid2Lid::parse("0x0000000000100001 0x0004 0x0007\n\nbogus\n", "cache/guid2lid").unwrap_err();
        assert!(e.to_string().starts_with("cache/guid2lid:3:"), "{e}");
        let e = Guid2Lid::parse("0x1 0x0008 0x0004\n", "g").unwrap_err();
        assert!(matches!(e, Guid2LidError::BadRange { line: 1, .. }));
        let e = Guid2Lid::parse("0x1 0x1 0x1\n0x1 0x2 0x2\n", "g").unwrap_err();
        assert!(matches!(e, Guid2LidError::Duplicate { line: 2, .. }));
        // The sample OpenSM 3.3.23 wrote over ibsim (reference §2.4) parses.
        let text = include_str!("../tests/data/opensm-cache/sim-2sw4hca.lmc2.guid2lid");
        let g = Guid2Lid::parse(text, "sample").unwrap();
        assert_eq!(g.map.get(&Guid(0x100004)), Some(&(Lid(12), Lid(15))));
        assert_eq!(g.map.len(), 6);
        let again = Guid2Lid::parse(&g.to_text(), "ours").unwrap();
        assert_eq!(again, g);
    }
}
