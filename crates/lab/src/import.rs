//! A comparison on a fabric the user brings: `cluster.topology` names a file
//! (ibnetdiscover, ibsim net, HPCC or rdmalab JSON; `fabric::format`), read
//! once when the scenario loads, and built both ways from it — the same nodes
//! and cables, every link at the InfiniBand or the Ethernet rate of its speed.
//!
//! Servers and rails come from the adapters' NodeDescriptions where they have
//! the form real hosts give them (`gpu07 mlx5_3`: host, then RDMA device, whose
//! number is the rail; `fabric::format::infer_hosts`), or from a mapping file
//! (`cluster.mapping`), one adapter a line:
//!
//! ```text
//! # NODE SERVER RAIL: a channel adapter by node name, node GUID or port GUID
//! hca-17      node03  0
//! 0x0002c90300a1b2c4 node03 1
//! ```
//!
//! Errors name the file and line (a malformed line, a node that is no adapter of
//! the topology, an adapter or a (server, rail) given twice) or the scenario
//! field (an adapter in no server, servers of unequal rails, a shape that does
//! not match the `[cluster]` numbers written beside the file).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use fabric::{Fabric, NodeId, NodeKind};

/// Why a user's fabric cannot be the cluster: the field or file line, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// The scenario field the error belongs to.
    pub field: &'static str,
    /// What is wrong, with the file and line where there is one.
    pub reason: String,
}

/// Read `topology` (relative to `base`), apply `mapping` if given, and check that
/// every adapter sits in a server with the same number of rails.
pub fn read(base: Option<&Path>, topology: &str, mapping: Option<&str>) -> Result<Arc<Fabric>, ImportError> {
    let at = |p: &str| base.map_or_else(|| Path::new(p).to_path_buf(), |b| b.join(p));
    let tpath = at(topology);
    let (mut f, _) =
        fabric::format::read_file(&tpath, None, &fabric::format::ReadOptions::default()).map_err(|e| ImportError {
            field: "cluster.topology",
            reason: e.to_string(),
        })?;
    match mapping {
        Some(m) => {
            let mpath = at(m);
            let text = std::fs::read_to_string(&mpath).map_err(|e| ImportError {
                field: "cluster.mapping",
                reason: format!("cannot read {}: {e}", mpath.display()),
            })?;
            apply_mapping(
                &mut f,
                &mpath.display().to_string(),
                &tpath.display().to_string(),
                &text,
            )?;
        }
        None => fabric::format::infer_hosts(&mut f),
    }
    check_servers(&f, mapping.is_some())?;
    Ok(Arc::new(f))
}

/// Give every adapter the mapping file names its server and rail, by writing its
/// NodeDescription in the hosts' own form (`SERVER mlx5_RAIL`) and grouping from
/// there, so a mapped fabric and a described one are one code path.
pub fn apply_mapping(f: &mut Fabric, file: &str, topology: &str, text: &str) -> Result<(), ImportError> {
    let err = |line: usize, why: String| ImportError {
        field: "cluster.mapping",
        reason: format!("{file}:{line}: {why}"),
    };
    // every adapter by name, node GUID and port GUIDs
    let mut by: BTreeMap<String, NodeId> = BTreeMap::new();
    let mut by_guid: BTreeMap<u64, NodeId> = BTreeMap::new();
    for id in f.nodes_of(NodeKind::Ca) {
        let n = f.node(id);
        by.insert(n.name.clone(), id);
        by_guid.insert(n.node_guid.0, id);
        for p in n.port_nums() {
            by_guid.insert(n.ports[p as usize].guid.0, id);
        }
    }
    let mut seen: BTreeMap<NodeId, usize> = BTreeMap::new();
    let mut slots: BTreeMap<(String, u32), usize> = BTreeMap::new();
    let mut assigned: Vec<(NodeId, String, u32)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let words: Vec<&str> = body.split_whitespace().collect();
        let [node, server, rail] = words[..] else {
            return Err(err(
                line,
                format!("expected `NODE SERVER RAIL` (three words), found {:?}", body),
            ));
        };
        let rail: u32 = rail
            .parse()
            .map_err(|_| err(line, format!("rail {rail:?} is not a number (0, 1, …)")))?;
        let id = by
            .get(node)
            .copied()
            .or_else(|| parse_guid(node).and_then(|g| by_guid.get(&g).copied()))
            .ok_or_else(|| {
                let what = match f.by_name(node) {
                    Some(x) => format!("{node} is a {:?} of {topology}, not a channel adapter", f.node(x).kind),
                    None => {
                        format!("{node} names no channel adapter of {topology} (by node name, node GUID or port GUID)")
                    }
                };
                err(line, what)
            })?;
        if let Some(first) = seen.insert(id, line) {
            return Err(err(line, format!("{node} is mapped twice (first on line {first})")));
        }
        if let Some(first) = slots.insert((server.to_string(), rail), line) {
            return Err(err(
                line,
                format!("server {server} rail {rail} is given twice (first on line {first})"),
            ));
        }
        assigned.push((id, server.to_string(), rail));
    }
    if let Some(id) = f.nodes_of(NodeKind::Ca).find(|id| !seen.contains_key(id)) {
        return Err(ImportError {
            field: "cluster.mapping",
            reason: format!(
                "{file}: the adapter {} of {topology} is on no line: give every adapter its server and rail",
                f.node(id).name
            ),
        });
    }
    f.hosts.clear();
    for n in &mut f.nodes {
        n.host = None;
    }
    for (id, server, rail) in assigned {
        f.nodes[id.idx()].desc = format!("{server} mlx5_{rail}");
    }
    fabric::format::infer_hosts(f);
    Ok(())
}

fn parse_guid(s: &str) -> Option<u64> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u64::from_str_radix(h, 16).ok()
}

/// Every adapter in a server, every server with the same rails 0..n.
fn check_servers(f: &Fabric, mapped: bool) -> Result<(), ImportError> {
    let field = if mapped { "cluster.mapping" } else { "cluster.topology" };
    if let Some(id) = f.nodes_of(NodeKind::Ca).find(|&id| f.node(id).host.is_none()) {
        return Err(ImportError {
            field,
            reason: format!(
                "the adapter {} (NodeDescription {:?}) belongs to no server: its description is not `HOST DEVICE` with an RDMA device such as mlx5_0; give cluster.mapping",
                f.node(id).name,
                f.node(id).desc
            ),
        });
    }
    let mut rails: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for id in f.nodes_of(NodeKind::Ca) {
        let n = f.node(id);
        let h = n.host.expect("checked above").0;
        let rail = rail_of(&n.desc).ok_or_else(|| ImportError {
            field,
            reason: format!(
                "the adapter {}'s NodeDescription {:?} gives no rail number",
                n.name, n.desc
            ),
        })?;
        if !rails.entry(h).or_default().insert(rail) {
            return Err(ImportError {
                field,
                reason: format!("server {} has two adapters on rail {rail}", f.hosts[h as usize].name),
            });
        }
    }
    let first: Vec<u32> = rails
        .values()
        .next()
        .map(|r| r.iter().copied().collect())
        .unwrap_or_default();
    let want: Vec<u32> = (0..first.len() as u32).collect();
    for (h, r) in &rails {
        let got: Vec<u32> = r.iter().copied().collect();
        if got != want {
            return Err(ImportError {
                field,
                reason: format!(
                    "server {} has rails {got:?}; every server needs rails {want:?} (one adapter per GPU, the same on each server)",
                    f.hosts[*h as usize].name
                ),
            });
        }
    }
    Ok(())
}

/// The rail an adapter's NodeDescription gives: the number of its RDMA device
/// (`gpu07 mlx5_3` → 3).
pub fn rail_of(desc: &str) -> Option<u32> {
    let dev = desc.split_whitespace().nth(1)?;
    let digits: String = dev.chars().rev().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return None;
    }
    digits.chars().rev().collect::<String>().parse().ok()
}

/// What the `[cluster]` numbers must be for this fabric: (servers, GPUs per
/// server, NIC Gb/s, the largest switch's ports).
pub fn shape(f: &Fabric) -> (u32, u32, u32, u32) {
    let servers = f.hosts.len() as u32;
    let per = f.nodes_of(NodeKind::Ca).count() as u32 / servers.max(1);
    let nic = f
        .nodes_of(NodeKind::Ca)
        .find_map(|id| {
            f.peer(id, 1)
                .map(|(_, l)| (f.link(l).rate.data_bps() / 1_000_000_000) as u32)
        })
        .unwrap_or(0);
    let radix = f
        .nodes_of(NodeKind::Switch)
        .map(|id| f.node(id).num_ports() as u32)
        .max()
        .unwrap_or(0);
    (servers, per, nic, radix)
}

/// `f` with every link at `tech`'s rate of its speed.
pub fn retype(f: &Fabric, tech: crate::tco::Tech) -> Result<Fabric, fabric::GenError> {
    let mut g = f.clone();
    for l in &mut g.links {
        let gbps = (l.rate.data_bps() / 1_000_000_000) as u32;
        l.rate = crate::cluster::link_rate(tech, gbps)?;
    }
    Ok(g)
}
