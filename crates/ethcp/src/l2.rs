//! RoCEv1's layer-2 limits: RoCEv1 frames (EtherType 0x8915, no IP header) cannot
//! be routed, so a connection must stay inside one layer-2 domain; [`check_roce_v1`]
//! refuses a path that needs a router and names the hop.

use fabric::{Fabric, NodeId, NodeKind};

/// How the Ethernet switches of a RoCE fabric forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L2Mode {
    /// Every switch routes at layer 3 (the usual RoCEv2 Clos: a subnet per ToR).
    /// Hosts on the same leaf share a layer-2 domain; any other path is routed.
    RoutedAtLeaf,
    /// The switches bridge one flat layer-2 domain; only router nodes route.
    FlatL2,
}

/// A RoCEv1 path that cannot exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoceV1Error {
    /// The two hosts sit in different layer-2 domains.
    #[error(
        "connect {src} to {dst} with RoCEv1: the path crosses the layer-3 hop {hop}, and RoCEv1 frames \
         (EtherType 0x8915, GRH but no IP header) cannot be routed; RoCEv1 works only inside one layer-2 \
         domain: use RoCEv2 (UDP/IP) or put both hosts in one domain"
    )]
    NeedsRouter {
        /// The source host's name.
        src: String,
        /// The destination host's name.
        dst: String,
        /// The first node on the path that routes instead of bridging.
        hop: String,
    },
    /// No path at all.
    #[error("connect {src} to {dst} with RoCEv1: no layer-2 path")]
    NoPath {
        /// The source host's name.
        src: String,
        /// The destination host's name.
        dst: String,
    },
}

/// Check that a RoCEv1 connection from host `src` to host `dst` stays in one
/// layer-2 domain under `mode`.
pub fn check_roce_v1(fab: &Fabric, src: NodeId, dst: NodeId, mode: L2Mode) -> Result<(), RoceV1Error> {
    let flat = fab.freeze();
    let name = |n: NodeId| fab.node(n).name.clone();
    // Layer-2 reachability: hosts and bridging switches; routers never bridge.
    let bridges = |x: NodeId| match mode {
        L2Mode::FlatL2 => flat.kind(x) == NodeKind::Switch,
        L2Mode::RoutedAtLeaf => flat.kind(x) == NodeKind::Switch && flat.neighbors(x).iter().any(|a| a.peer == src),
    };
    let mut seen = vec![false; flat.num_nodes()];
    let mut stack = vec![src];
    seen[src.idx()] = true;
    while let Some(x) = stack.pop() {
        if x == dst {
            return Ok(());
        }
        if x != src && !bridges(x) {
            continue;
        }
        for a in flat.neighbors(x) {
            if !seen[a.peer.idx()] {
                seen[a.peer.idx()] = true;
                stack.push(a.peer);
            }
        }
    }
    // Name the first layer-3 hop on a shortest path, for the explanation.
    let d = flat.bfs_hops(dst);
    let mut x = src;
    let mut hops = 0;
    while x != dst && hops < 64 {
        let next = flat
            .neighbors(x)
            .iter()
            .filter(|a| d[a.peer.idx()] < d[x.idx()])
            .map(|a| a.peer)
            .next();
        let Some(nx) = next else { break };
        if nx != dst && !bridges(nx) {
            return Err(RoceV1Error::NeedsRouter {
                src: name(src),
                dst: name(dst),
                hop: name(nx),
            });
        }
        x = nx;
        hops += 1;
    }
    // Routers are not transit nodes for bfs_hops: look for one adjacent to the L2 region.
    for (i, s) in seen.iter().enumerate() {
        if *s && flat.kind(NodeId(i as u32)) == NodeKind::Router {
            return Err(RoceV1Error::NeedsRouter {
                src: name(src),
                dst: name(dst),
                hop: name(NodeId(i as u32)),
            });
        }
    }
    Err(RoceV1Error::NoPath {
        src: name(src),
        dst: name(dst),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_fabric::leaf_spine_2x2;
    use fabric::{Guid, LinkRate, NodeSpec};

    #[test]
    fn roce_v1_is_refused_across_a_layer3_hop() {
        let (f, _, _, hosts) = leaf_spine_2x2();
        assert!(check_roce_v1(&f, hosts[0], hosts[1], L2Mode::RoutedAtLeaf).is_ok());
        let e = check_roce_v1(&f, hosts[0], hosts[2], L2Mode::RoutedAtLeaf).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("cannot be routed") && msg.contains("spine"), "{msg}");
        assert!(check_roce_v1(&f, hosts[0], hosts[2], L2Mode::FlatL2).is_ok());
        // A router between two L2 islands.
        let mut g = Fabric::new();
        let r = LinkRate::eth(100).unwrap();
        let a = g.add_node(NodeSpec::ca("a", Guid(0x100), 1)).unwrap();
        let b = g.add_node(NodeSpec::ca("b", Guid(0x200), 1)).unwrap();
        let s1 = g.add_node(NodeSpec::switch("s1", Guid(1), 2)).unwrap();
        let s2 = g.add_node(NodeSpec::switch("s2", Guid(2), 2)).unwrap();
        let mut rt = NodeSpec::switch("rtr", Guid(3), 2);
        rt.kind = NodeKind::Router;
        let rtr = g.add_node(rt).unwrap();
        g.connect(a, 1, s1, 1, r, 1.0).unwrap();
        g.connect(s1, 2, rtr, 1, r, 1.0).unwrap();
        g.connect(rtr, 2, s2, 1, r, 1.0).unwrap();
        g.connect(s2, 2, b, 1, r, 1.0).unwrap();
        let e = check_roce_v1(&g, a, b, L2Mode::FlatL2).unwrap_err();
        assert!(
            matches!(&e, RoceV1Error::NeedsRouter { hop, .. } if hop == "rtr"),
            "{e}"
        );
    }
}
