//! Rail-optimized topology validation: the checks ibdiagnet's rail-optimized
//! topology validation stands for, on the cabling alone.
//!
//! A server's NICs are its host's channel adapters; NIC `r` is rail `r`, read
//! from a NodeDescription ending in `mlx5_R` (the form real hosts report) or, when
//! absent, from the NIC's place among its host's adapters. In a rail-optimized
//! design (DGX SuperPOD RA, "Network Fabrics"):
//! - every leaf carries one rail (`rail-mixed` otherwise);
//! - the servers whose rail-0 NICs share a leaf form a scalable unit, and every
//!   rail of the unit sits on one leaf (`rail-split` otherwise);
//! - no server has two NICs on one leaf (`rail-server`);
//! - a leaf has at least as many uplinks as NIC links, so the rail is
//!   non-blocking (`rail-uplinks` warns otherwise, with the ratio).

use std::collections::{BTreeMap, BTreeSet};

use fabric::{Fabric, NodeId, NodeKind};
use serde::Serialize;

use crate::finding::{Finding, Location, Severity};
use crate::ib::rules::{self, finding as mk};

/// What the rail validation found about the design.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RailSummary {
    /// Servers (hosts with at least one NIC).
    pub servers: usize,
    /// Rails (the most NICs a server has).
    pub rails: usize,
    /// Scalable units (groups of servers sharing their rail-0 leaf).
    pub units: usize,
    /// Leaves carrying NICs.
    pub leaves: usize,
    /// Cabled ports per NIC (the most any NIC has): 2 with dual ToRs or two
    /// planes, each port on a leaf of its own. Left out of JSON at 1, as
    /// before ports counted.
    #[serde(skip_serializing_if = "single")]
    pub ports_per_nic: usize,
}

fn single(n: &usize) -> bool {
    *n <= 1
}

/// The rail index of NIC `ca` whose host lists `siblings` (in node order).
fn rail_of(f: &Fabric, ca: NodeId, siblings: &[NodeId]) -> usize {
    let desc = &f.node(ca).desc;
    if let Some(i) = desc.rfind("mlx5_")
        && let Ok(r) = desc[i + 5..].trim().parse::<usize>()
    {
        return r;
    }
    siblings.iter().position(|&n| n == ca).unwrap_or(0)
}

fn loc(f: &Fabric, n: NodeId) -> Location {
    Location {
        key: Some(crate::ib::check::label(f, n).to_string()),
        ..Location::default()
    }
}

/// Validate `f` as a rail-optimized fabric; findings go to `out`.
pub fn check_rails(f: &Fabric, out: &mut Vec<Finding>) -> RailSummary {
    let mut nics: BTreeMap<u32, Vec<NodeId>> = BTreeMap::new();
    for id in f.nodes_of(NodeKind::Ca) {
        if let Some(h) = f.node(id).host {
            nics.entry(h.0).or_default().push(id);
        }
    }
    // each cabled port's leaf: (port, leaf), port 1 first
    let leaves_of = |ca: NodeId| -> Vec<(u8, NodeId)> {
        f.node(ca)
            .port_nums()
            .filter_map(|p| f.peer(ca, p).map(|(e, _)| (p, e.node)))
            .filter(|&(_, n)| f.node(n).kind == NodeKind::Switch)
            .collect()
    };
    let mut ports_per_nic = 0;
    // rails per leaf, servers per (server, leaf)
    let mut leaf_rails: BTreeMap<NodeId, BTreeSet<usize>> = BTreeMap::new();
    let mut unit_of_server: BTreeMap<u32, NodeId> = BTreeMap::new();
    let mut rails = 0;
    for (&h, list) in &nics {
        rails = rails.max(list.len());
        let mut seen: BTreeMap<NodeId, (usize, NodeId)> = BTreeMap::new();
        for &ca in list {
            let r = rail_of(f, ca, list);
            let ports = leaves_of(ca);
            ports_per_nic = ports_per_nic.max(ports.len());
            for (p, leaf) in ports {
                leaf_rails.entry(leaf).or_default().insert(r);
                if r == 0 && p == 1 {
                    unit_of_server.insert(h, leaf);
                }
                match seen.insert(leaf, (r, ca)) {
                    Some((_, other)) if other == ca => out.push(mk(
                        rules::RAIL_SERVER,
                        Severity::Error,
                        loc(f, ca),
                        format!(
                            "NIC {} has two ports on one leaf, {}: losing that leaf disconnects it",
                            f.node(ca).name,
                            f.node(leaf).name
                        ),
                        "cable a NIC's ports to different leaves (the two ToRs of its pair, or one per plane)".into(),
                    )),
                    Some((other, _)) => out.push(mk(
                        rules::RAIL_SERVER,
                        Severity::Error,
                        loc(f, ca),
                        format!(
                            "server {} has NICs of rails {other} and {r} on one leaf, {}",
                            f.hosts[h as usize].name,
                            f.node(leaf).name
                        ),
                        "cable each NIC of a server to its own rail's leaf".into(),
                    )),
                    None => {}
                }
            }
        }
    }
    for (&leaf, rs) in &leaf_rails {
        if rs.len() > 1 {
            out.push(mk(
                rules::RAIL_MIXED,
                Severity::Error,
                loc(f, leaf),
                format!(
                    "carries NICs of rails {}",
                    rs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
                ),
                "a rail-optimized leaf carries one NIC index of every server of its unit; re-cable the NICs of the other rails".into(),
            ));
        }
    }
    // units: servers sharing their rail-0 leaf; each rail of a unit on one leaf
    let mut units: BTreeMap<NodeId, Vec<u32>> = BTreeMap::new();
    for (&h, &leaf) in &unit_of_server {
        units.entry(leaf).or_default().push(h);
    }
    for servers in units.values() {
        // by (rail, NIC port): each port of a rail's NICs on one leaf
        let mut by_rail: BTreeMap<(usize, u8), BTreeMap<NodeId, Vec<u32>>> = BTreeMap::new();
        for &h in servers {
            let list = &nics[&h];
            for &ca in list {
                for (p, leaf) in leaves_of(ca) {
                    by_rail
                        .entry((rail_of(f, ca, list), p))
                        .or_default()
                        .entry(leaf)
                        .or_default()
                        .push(h);
                }
            }
        }
        for ((r, _), leaves) in by_rail {
            if leaves.len() > 1 {
                // name the leaf with the fewest of the unit's servers: the odd one out
                let (&odd, hs) = leaves.iter().min_by_key(|(_, v)| v.len()).expect("two leaves");
                out.push(mk(
                    rules::RAIL_SPLIT,
                    Severity::Error,
                    loc(f, odd),
                    format!(
                        "rail {r} of one scalable unit is spread over {} leaves; {} of its servers (e.g. {}) are on {}",
                        leaves.len(),
                        hs.len(),
                        f.hosts[hs[0] as usize].name,
                        f.node(odd).name
                    ),
                    "cable rail r of every server of a unit to the unit's one rail-r leaf".into(),
                ));
            }
        }
    }
    for &leaf in leaf_rails.keys() {
        let node = f.node(leaf);
        let (mut down, mut up) = (0u32, 0u32);
        for p in node.port_nums() {
            if let Some((e, _)) = f.peer(leaf, p) {
                match f.node(e.node).kind {
                    NodeKind::Switch | NodeKind::Router => up += 1,
                    NodeKind::Ca => down += 1,
                }
            }
        }
        if up < down {
            out.push(mk(
                rules::RAIL_UPLINKS,
                Severity::Warning,
                loc(f, leaf),
                format!(
                    "{down} NIC links and {up} uplinks: oversubscribed {:.2}:1",
                    f64::from(down) / f64::from(up.max(1))
                ),
                "a non-blocking rail needs as many uplinks as NIC links; add uplinks or accept the oversubscription"
                    .into(),
            ));
        }
    }
    RailSummary {
        servers: nics.len(),
        rails,
        units: units.len(),
        leaves: leaf_rails.len(),
        ports_per_nic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fabric::generate::{SuperPodParams, superpod};

    fn pod() -> Fabric {
        superpod(&SuperPodParams {
            sus: 2,
            ..SuperPodParams::default()
        })
        .unwrap()
    }

    #[test]
    fn a_generated_superpod_is_clean_and_its_design_is_recognised() {
        let mut out = Vec::new();
        let s = check_rails(&pod(), &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(
            s,
            RailSummary {
                servers: 64,
                rails: 8,
                units: 2,
                leaves: 16,
                ports_per_nic: 1,
            }
        );
    }

    /// Dual ToRs: both ports of every NIC on the two leaves of its pair is
    /// clean; a NIC with both ports on one leaf is named, since losing that
    /// leaf cuts it off.
    #[test]
    fn dual_tors_are_clean_and_a_nic_on_one_leaf_twice_is_named() {
        let f = superpod(&SuperPodParams {
            sus: 2,
            servers_per_su: 4,
            rails: 4,
            radix: 16,
            dual_tor: true,
            ..SuperPodParams::default()
        })
        .unwrap();
        let mut out = Vec::new();
        let s = check_rails(&f, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(
            (s.servers, s.rails, s.units, s.leaves, s.ports_per_nic),
            (8, 4, 2, 16, 2)
        );
        // gpu0's rail-0 NIC: port 2 moves from su0-rail0-b to a free port of su0-rail0-a
        let mut g = f.clone();
        let ca = g.by_name("gpu0-mlx5_0").unwrap();
        let a = g.by_name("su0-rail0-a").unwrap();
        let (_, link) = g.peer(ca, 2).unwrap();
        let l = g.disconnect(link).unwrap();
        g.connect(ca, 2, a, 16, l.rate, l.length_m).unwrap();
        let mut out = Vec::new();
        check_rails(&g, &mut out);
        assert!(
            out.iter()
                .any(|x| x.rule == "rail-server"
                    && x.message.contains("gpu0-mlx5_0 has two ports on one leaf, su0-rail0-a")),
            "{out:#?}"
        );
    }

    /// Swap the cables of two NICs: gpu00's rail-3 NIC and gpu40's rail-5 NIC
    /// (another unit) trade leaf ports.
    #[test]
    fn a_swapped_cable_is_named_by_each_rule_it_breaks() {
        let f = pod();
        let a = f.by_name("gpu00-mlx5_3").unwrap();
        let b = f.by_name("gpu40-mlx5_5").unwrap();
        let (la, _) = f.peer(a, 1).unwrap();
        let (lb, _) = f.peer(b, 1).unwrap();
        // rebuild the fabric with the two NICs' cables crossed
        let mut g = Fabric::new();
        for h in &f.hosts {
            g.add_host(h.name.clone());
        }
        for n in &f.nodes {
            let mut spec = if n.kind == NodeKind::Switch {
                fabric::NodeSpec::switch(n.name.clone(), n.node_guid, (n.ports.len() - 1) as u8)
            } else {
                fabric::NodeSpec::ca(n.name.clone(), n.node_guid, (n.ports.len() - 1) as u8)
            };
            spec.desc = n.desc.clone();
            spec.host = n.host;
            spec.level = n.level;
            g.add_node(spec).unwrap();
        }
        for l in &f.links {
            let (mut x, mut y) = (l.a, l.b);
            for e in [&mut x, &mut y] {
                if *e == la {
                    *e = lb;
                } else if *e == lb {
                    *e = la;
                }
            }
            g.connect(x.node, x.port, y.node, y.port, l.rate, l.length_m).unwrap();
        }
        let mut out = Vec::new();
        check_rails(&g, &mut out);
        let rules: BTreeSet<&str> = out.iter().map(|x| x.rule).collect();
        assert!(rules.contains("rail-mixed"), "{out:#?}");
        assert!(rules.contains("rail-split"), "{out:#?}");
        assert!(
            out.iter().any(|x| x.message.contains("carries NICs of rails 3, 5")),
            "{out:#?}"
        );
    }

    #[test]
    fn an_oversubscribed_leaf_is_a_warning_with_its_ratio() {
        let f = superpod(&SuperPodParams {
            sus: 1,
            uplinks: Some(16),
            ..SuperPodParams::default()
        })
        .unwrap();
        let mut out = Vec::new();
        check_rails(&f, &mut out);
        assert_eq!(out.len(), 8, "{out:#?}");
        assert!(
            out.iter()
                .all(|x| x.rule == "rail-uplinks" && x.message.contains("2.00:1"))
        );
    }
}
