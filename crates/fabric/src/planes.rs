//! A fabric as the traffic of its NICs' ports sees it: one [`PortPlane`] per
//! switch plane, each with every NIC port cabled into it as an adapter of its
//! own.
//!
//! Multi-plane designs (Alibaba HPN's dual plane, SIGCOMM'24 §4) are separate
//! subnets that meet only inside the NICs: each plane has its own subnet
//! manager, its own LIDs or addresses, its own routes. A dual-ToR NIC (HPN
//! §4.1) has two ports in one plane. Every simulator here sends from one port
//! per adapter, so a job on such a fabric is priced plane by plane, each NIC
//! port an endpoint of its own: what NCCL does when it is given a NIC's ports
//! as separate devices (`NCCL_IB_HCA=mlx5_0:1,mlx5_0:2`), connecting port `j`
//! of one NIC to port `j` of its peer.

use crate::{Fabric, ModelError, NodeId, NodeKind, NodeSpec};

/// One switch plane of a fabric with the NIC ports cabled into it.
#[derive(Clone, Debug)]
pub struct PortPlane {
    /// The plane's switches (names, GUIDs and cables as in the source) and one
    /// single-port adapter per source NIC port cabled into the plane: a NIC's
    /// first such port keeps the NIC's name, description and node GUID; a
    /// further one (the second port of a dual-ToR pair) is named
    /// `NAME-pP` and takes that port's GUID as its node GUID. Servers are
    /// the source's, in its order.
    pub fabric: Fabric,
    /// Each source node's endpoints in this plane (indexed by source node;
    /// empty for switches and for NICs with no port here), in port order:
    /// (the source port, its adapter here).
    pub ends: Vec<Vec<(u8, NodeId)>>,
}

/// The source fabric's switch planes (switch-connected components, in the
/// order of each one's first switch), each with the NIC ports cabled into it.
/// A port cabled to another adapter (back to back) belongs to no plane and is
/// left out. Fails only where the split adapters' names or GUIDs collide with
/// another node's.
pub fn port_planes(f: &Fabric) -> Result<Vec<PortPlane>, ModelError> {
    let n = f.nodes.len();
    let mut comp = vec![u32::MAX; n];
    let mut planes = 0u32;
    for start in f.nodes_of(NodeKind::Switch) {
        if comp[start.idx()] != u32::MAX {
            continue;
        }
        comp[start.idx()] = planes;
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            for p in f.node(v).port_nums() {
                if let Some((e, _)) = f.peer(v, p)
                    && f.node(e.node).kind == NodeKind::Switch
                    && comp[e.node.idx()] == u32::MAX
                {
                    comp[e.node.idx()] = planes;
                    stack.push(e.node);
                }
            }
        }
        planes += 1;
    }
    let plane_of = |e: crate::Endpoint| {
        f.peer(e.node, e.port)
            .map(|(peer, _)| comp[peer.node.idx()])
            .filter(|&c| c != u32::MAX)
    };
    let mut out = Vec::with_capacity(planes as usize);
    for c in 0..planes {
        let mut g = Fabric::new();
        for h in &f.hosts {
            g.add_host(h.name.clone());
        }
        // (source endpoint) → (plane node, its port)
        let mut at = std::collections::HashMap::new();
        let mut ends = vec![Vec::new(); n];
        for id in f.node_ids() {
            let node = f.node(id);
            let spec = |name: String, desc: String, guid, ports: u8| NodeSpec {
                kind: node.kind,
                name,
                desc,
                node_guid: guid,
                sys_image_guid: Some(node.sys_image_guid),
                port_guids: None,
                num_ports: ports,
                vendor_id: node.vendor_id,
                device_id: node.device_id,
                enhanced_port0: node.enhanced_port0,
                level: node.level,
                host: node.host,
            };
            if node.kind == NodeKind::Switch {
                if comp[id.idx()] != c {
                    continue;
                }
                let s = g.add_node(spec(
                    node.name.clone(),
                    node.desc.clone(),
                    node.node_guid,
                    node.num_ports(),
                ))?;
                for p in node.port_nums() {
                    at.insert((id, p), (s, p));
                }
                continue;
            }
            for p in node.port_nums() {
                let e = crate::Endpoint { node: id, port: p };
                if plane_of(e) != Some(c) {
                    continue;
                }
                let first = ends[id.idx()].is_empty();
                let (name, desc, guid) = if first {
                    (node.name.clone(), node.desc.clone(), node.node_guid)
                } else {
                    (
                        format!("{}-p{p}", node.name),
                        format!("{} port {p}", node.desc),
                        node.port_guid(p),
                    )
                };
                let mut s = spec(name, desc, guid, 1);
                s.port_guids = Some(vec![node.port_guid(p)]);
                let a = g.add_node(s)?;
                ends[id.idx()].push((p, a));
                at.insert((id, p), (a, 1));
            }
        }
        for l in &f.links {
            let (Some(&(a, pa)), Some(&(b, pb))) = (at.get(&(l.a.node, l.a.port)), at.get(&(l.b.node, l.b.port)))
            else {
                continue;
            };
            let k = g.connect_with_delay(a, pa, b, pb, l.rate, l.length_m, l.delay_ps)?;
            g.links[k.idx()].efficiency = l.efficiency;
        }
        out.push(PortPlane { fabric: g, ends });
    }
    Ok(out)
}

/// Whether some NIC of `f` has more than one port cabled (planes or dual
/// ToRs): a job on it is priced on [`port_planes`].
pub fn has_multiport_nics(f: &Fabric) -> bool {
    f.nodes_of(NodeKind::Ca)
        .any(|id| f.node(id).port_nums().filter(|&p| f.peer(id, p).is_some()).count() > 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{SuperPodParams, superpod};

    fn pod(planes: u32, dual_tor: bool) -> Fabric {
        superpod(&SuperPodParams {
            sus: 2,
            servers_per_su: 4,
            rails: 2,
            radix: 16,
            planes,
            dual_tor,
            ..SuperPodParams::default()
        })
        .unwrap()
    }

    /// Two planes become two subnets of one port per NIC; their switches,
    /// cables and names are the source's, and nothing joins them.
    #[test]
    fn two_planes_split_into_two_subnets_of_one_port_per_nic() {
        let f = pod(2, false);
        assert!(has_multiport_nics(&f));
        let planes = port_planes(&f).unwrap();
        assert_eq!(planes.len(), 2);
        let cas = f.count(NodeKind::Ca);
        let sw = f.count(NodeKind::Switch);
        let mut links = 0;
        for (k, p) in planes.iter().enumerate() {
            let g = &p.fabric;
            assert_eq!(g.count(NodeKind::Ca), cas);
            assert_eq!(g.count(NodeKind::Switch), sw / 2);
            assert!(
                g.nodes_of(NodeKind::Switch)
                    .all(|s| g.node(s).name.starts_with(&format!("p{k}-")))
            );
            assert_eq!(g.hosts.len(), f.hosts.len());
            for ca in f.nodes_of(NodeKind::Ca) {
                let e = &p.ends[ca.idx()];
                assert_eq!(e.len(), 1, "{}", f.node(ca).name);
                let m = g.node(e[0].1);
                assert_eq!(
                    (m.name.as_str(), m.num_ports(), m.host),
                    (f.node(ca).name.as_str(), 1, f.node(ca).host)
                );
                // its one port is the source's port k+1, on plane k's leaf
                assert_eq!(m.port_guid(1), f.node(ca).port_guid(k as u8 + 1));
                assert_eq!(e[0].0, k as u8 + 1);
                let (leaf, _) = g.peer(e[0].1, 1).unwrap();
                let (src_leaf, _) = f.peer(ca, k as u8 + 1).unwrap();
                assert_eq!(g.node(leaf.node).name, f.node(src_leaf.node).name);
            }
            links += g.links.len();
        }
        assert_eq!(links, f.links.len(), "every cable is in exactly one plane");
    }

    /// Dual ToRs keep one plane whose NICs have two endpoints, the second
    /// named for its port and on the pair's other leaf.
    #[test]
    fn dual_tors_give_every_nic_two_endpoints_on_the_pair() {
        let f = pod(1, true);
        let planes = port_planes(&f).unwrap();
        assert_eq!(planes.len(), 1);
        let p = &planes[0];
        assert_eq!(p.fabric.links.len(), f.links.len());
        assert_eq!(p.fabric.count(NodeKind::Ca), 2 * f.count(NodeKind::Ca));
        let ca = f.nodes_of(NodeKind::Ca).next().unwrap();
        let e = &p.ends[ca.idx()];
        assert_eq!(e.len(), 2);
        let name = &f.node(ca).name;
        assert_eq!((e[0].0, e[1].0), (1, 2));
        assert_eq!(p.fabric.node(e[1].1).name, format!("{name}-p2"));
        let leaf = |n| p.fabric.node(p.fabric.peer(n, 1).unwrap().0.node).name.clone();
        assert!(
            leaf(e[0].1).ends_with("-a") && leaf(e[1].1).ends_with("-b"),
            "{} {}",
            leaf(e[0].1),
            leaf(e[1].1)
        );
    }

    /// One plane of single-port NICs comes back node for node.
    #[test]
    fn a_single_plane_comes_back_node_for_node() {
        let f = pod(1, false);
        assert!(!has_multiport_nics(&f));
        let p = port_planes(&f).unwrap().remove(0);
        assert!(f.diff(&p.fabric).is_empty(), "{:?}", f.diff(&p.fabric));
        assert_eq!(p.fabric.nodes.len(), f.nodes.len());
        for id in f.node_ids() {
            assert_eq!(f.node(id).name, p.fabric.node(id).name);
        }
    }
}
