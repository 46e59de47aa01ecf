//! A fabric at a glance: counts, tiers, oversubscription, bisection bandwidth,
//! diameter and a bill of materials. A plain serde struct, so the cost model and
//! the reports read it as data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{Fabric, NodeId, NodeKind};

/// Passive copper (DAC) reaches about 3 m at 50–100 Gb/s per lane (NVIDIA LinkX
/// HDR/NDR DACs are sold up to 2–3 m; IEEE 802.3ck 100GBASE-CR1 targets 2 m), so
/// longer cables are optical.
pub const COPPER_MAX_M: f64 = 3.0;

/// Node counts by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    pub switches: usize,
    pub cas: usize,
    pub routers: usize,
}

/// Port counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortCounts {
    /// Physical switch ports (port 0 not counted).
    pub switch_ports: usize,
    /// Switch ports with a cable.
    pub switch_ports_cabled: usize,
    /// CA and router ports.
    pub endpoint_ports: usize,
    /// CA and router ports with a cable.
    pub endpoint_ports_cabled: usize,
}

/// One tier of switches (level 1 = leaf, 2 = spine, 3 = core).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tier {
    pub level: u8,
    pub switches: usize,
    /// Cables down to the tier below (hosts for level 1).
    pub down_links: usize,
    /// Cables up to the tier above.
    pub up_links: usize,
    /// Cables to switches of the same tier (tori, meshes).
    pub peer_links: usize,
    pub down_bps: u64,
    pub up_bps: u64,
    /// `down_bps / up_bps`; `None` for the top tier (no uplinks).
    pub oversubscription: Option<f64>,
}

/// Cables in one length class at one rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CableLine {
    /// "copper" (≤ [`COPPER_MAX_M`]) or "optical".
    pub medium: String,
    /// Upper bound of the length class in metres (the part one would order).
    pub up_to_m: f64,
    /// Link rate, as `4xNDR` or `400G`.
    pub rate: String,
    pub count: usize,
}

/// What to buy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bom {
    /// Switches by port count.
    pub switches_by_radix: BTreeMap<u8, usize>,
    /// Cables by medium, length class and rate, shortest first.
    pub cables: Vec<CableLine>,
    pub copper_cables: usize,
    pub optical_cables: usize,
    /// One pluggable optical transceiver at each end of every optical cable, by rate.
    pub transceivers_by_rate: BTreeMap<String, usize>,
    pub transceivers: usize,
    /// Total cable length in metres.
    pub cable_metres: f64,
}

/// The whole summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub nodes: KindCounts,
    /// Servers (hosts grouping adapters); 0 when the file does not say.
    pub servers: usize,
    pub ports: PortCounts,
    pub links: usize,
    /// Links by rate.
    pub links_by_rate: BTreeMap<String, usize>,
    /// Switch tiers, lowest first; `levels_inferred` says whether levels came from the
    /// generator or from hop distance to the nearest CA.
    pub tiers: Vec<Tier>,
    pub levels_inferred: bool,
    /// Sum of the host-link rates.
    pub host_bps: u64,
    /// Bisection bandwidth in bits per second (one direction).
    pub bisection_bps: u64,
    /// `bisection_bps / (host_bps / 2)`: 1.0 is full bisection.
    pub bisection_ratio: f64,
    /// How the bisection was found: "tier-cut" (exact for fat trees / Clos) or
    /// "bfs-cut" (an upper bound, for fabrics with links inside a tier).
    pub bisection_method: String,
    /// Largest number of links on a shortest path between two CAs (through
    /// switches); `None` when some CAs cannot reach each other.
    pub diameter_hops: Option<u32>,
    pub bom: Bom,
}

/// Tier of every node: generator levels when every node has one, else CAs/routers
/// 0 and switches 1 + hops to the nearest switch with a CA.
pub fn levels(f: &Fabric) -> (Vec<u8>, bool) {
    if f.nodes.iter().all(|n| n.level.is_some()) {
        return (f.nodes.iter().map(|n| n.level.unwrap_or(0)).collect(), false);
    }
    let flat = f.freeze();
    let mut lvl = vec![u8::MAX; f.nodes.len()];
    let mut queue = std::collections::VecDeque::new();
    for id in f.node_ids() {
        if f.node(id).kind != NodeKind::Switch {
            lvl[id.idx()] = 0;
            for a in flat.neighbors(id) {
                if flat.kind(a.peer) == NodeKind::Switch && lvl[a.peer.idx()] == u8::MAX {
                    lvl[a.peer.idx()] = 1;
                    queue.push_back(a.peer);
                }
            }
        }
    }
    while let Some(n) = queue.pop_front() {
        let d = lvl[n.idx()].saturating_add(1);
        for a in flat.neighbors(n) {
            if flat.kind(a.peer) == NodeKind::Switch && lvl[a.peer.idx()] == u8::MAX {
                lvl[a.peer.idx()] = d;
                queue.push_back(a.peer);
            }
        }
    }
    for l in &mut lvl {
        if *l == u8::MAX {
            *l = 1; // a switch with no CA anywhere below it
        }
    }
    (lvl, true)
}

/// Length class (metres) a cable is ordered in.
fn length_class(m: f64) -> f64 {
    const CLASSES: [f64; 16] = [
        0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0, 500.0, 2_000.0, 10_000.0, 40_000.0,
    ];
    CLASSES.into_iter().find(|&c| m <= c + 1e-9).unwrap_or(m.ceil())
}

/// Summarise a fabric.
pub fn summarize(f: &Fabric) -> Summary {
    let (lvl, inferred) = levels(f);
    let mut nodes = KindCounts::default();
    let mut ports = PortCounts::default();
    let mut bom = Bom::default();
    for n in &f.nodes {
        let cabled = n.port_nums().filter(|&p| n.ports[p as usize].link.is_some()).count();
        match n.kind {
            NodeKind::Switch => {
                nodes.switches += 1;
                ports.switch_ports += n.num_ports() as usize;
                ports.switch_ports_cabled += cabled;
                *bom.switches_by_radix.entry(n.num_ports()).or_default() += 1;
            }
            k => {
                if k == NodeKind::Ca {
                    nodes.cas += 1;
                } else {
                    nodes.routers += 1;
                }
                ports.endpoint_ports += n.num_ports() as usize;
                ports.endpoint_ports_cabled += cabled;
            }
        }
    }
    let max_level = f
        .node_ids()
        .filter(|&n| f.node(n).is_switch())
        .map(|n| lvl[n.idx()])
        .max()
        .unwrap_or(0);
    let mut tiers: Vec<Tier> = (1..=max_level)
        .map(|level| Tier {
            level,
            switches: 0,
            down_links: 0,
            up_links: 0,
            peer_links: 0,
            down_bps: 0,
            up_bps: 0,
            oversubscription: None,
        })
        .collect();
    for id in f.node_ids() {
        if f.node(id).is_switch() {
            tiers[lvl[id.idx()] as usize - 1].switches += 1;
        }
    }
    let mut links_by_rate: BTreeMap<String, usize> = BTreeMap::new();
    let mut cables: BTreeMap<(bool, u64, String), usize> = BTreeMap::new();
    let mut host_bps = 0u64;
    let mut tree_like = true;
    // capacity between level t and t + 1, t = 0..max_level
    let mut cut = vec![0u64; max_level as usize + 1];
    for l in &f.links {
        let bps = l.rate.data_bps();
        let rate = l.rate.to_string();
        *links_by_rate.entry(rate.clone()).or_default() += 1;
        let optical = l.length_m > COPPER_MAX_M;
        let class = length_class(l.length_m);
        *cables.entry((optical, class.to_bits(), rate.clone())).or_default() += 1;
        bom.cable_metres += l.length_m;
        if optical {
            bom.optical_cables += 1;
            *bom.transceivers_by_rate.entry(rate).or_default() += 2;
            bom.transceivers += 2;
        } else {
            bom.copper_cables += 1;
        }
        let (a, b) = (l.a.node, l.b.node);
        let (la, lb) = (lvl[a.idx()], lvl[b.idx()]);
        let (sa, sb) = (f.node(a).is_switch(), f.node(b).is_switch());
        if sa != sb {
            host_bps += bps;
        }
        let (lo, hi, lo_id, hi_id) = if la <= lb { (la, lb, a, b) } else { (lb, la, b, a) };
        if lo == hi {
            if sa && sb {
                tiers[lo as usize - 1].peer_links += 1;
            }
            tree_like = false;
            continue;
        }
        if hi != lo + 1 {
            tree_like = false;
        }
        cut[lo as usize] += bps;
        if f.node(hi_id).is_switch() {
            let t = &mut tiers[hi as usize - 1];
            t.down_links += 1;
            t.down_bps += bps;
        }
        if f.node(lo_id).is_switch() {
            let t = &mut tiers[lo as usize - 1];
            t.up_links += 1;
            t.up_bps += bps;
        }
    }
    for t in &mut tiers {
        t.oversubscription = (t.up_bps > 0).then(|| t.down_bps as f64 / t.up_bps as f64);
    }
    bom.cables = cables
        .into_iter()
        .map(|((optical, class, rate), count)| CableLine {
            medium: if optical { "optical" } else { "copper" }.into(),
            up_to_m: f64::from_bits(class),
            rate,
            count,
        })
        .collect();
    bom.cables.sort_by(|a, b| {
        a.up_to_m
            .total_cmp(&b.up_to_m)
            .then(a.medium.cmp(&b.medium))
            .then(a.rate.cmp(&b.rate))
    });
    let (bisection_bps, method) = if tree_like && max_level > 0 {
        (
            cut.iter().copied().filter(|&c| c > 0).min().unwrap_or(0) / 2,
            "tier-cut",
        )
    } else {
        (bfs_cut(f), "bfs-cut")
    };
    let half = host_bps / 2;
    Summary {
        nodes,
        servers: f.hosts.len(),
        ports,
        links: f.links.len(),
        links_by_rate,
        tiers,
        levels_inferred: inferred,
        host_bps,
        bisection_bps,
        bisection_ratio: if half > 0 {
            bisection_bps as f64 / half as f64
        } else {
            0.0
        },
        bisection_method: method.into(),
        diameter_hops: diameter(f),
        bom,
    }
}

/// Split the switches in two halves (by attached host bandwidth) along a
/// breadth-first order from a peripheral switch and return the capacity of the
/// switch-to-switch links across the split: an upper bound on the bisection.
fn bfs_cut(f: &Fabric) -> u64 {
    let flat = f.freeze();
    let switches: Vec<NodeId> = f.nodes_of(NodeKind::Switch).collect();
    if switches.len() < 2 {
        return 0;
    }
    // Double sweep: the farthest switch from switch 0 is peripheral.
    let d0 = flat.bfs_hops(switches[0]);
    let far = *switches
        .iter()
        .filter(|s| d0[s.idx()] != u32::MAX)
        .max_by_key(|s| (d0[s.idx()], std::cmp::Reverse(s.0)))
        .unwrap();
    let host_bw = |s: NodeId| -> u64 {
        flat.neighbors(s)
            .iter()
            .filter(|a| flat.kind(a.peer) != NodeKind::Switch)
            .map(|a| f.link(a.link).rate.data_bps())
            .sum()
    };
    // Several starts (the peripheral switch, then evenly spaced ones) on small
    // fabrics, since Kernighan–Lin finds a local optimum; the best cut wins.
    let n = switches.len();
    let mut starts = vec![far];
    if n <= 512 {
        starts.extend((1..8).map(|k| switches[k * n / 8]));
    }
    let mut best_cut = u64::MAX;
    for start in starts {
        let d = flat.bfs_hops(start);
        let mut order = switches.clone();
        order.sort_by_key(|s| (d[s.idx()], s.0));
        let total: u64 = order.iter().map(|&s| host_bw(s)).sum();
        // Put the prefix of the order whose host bandwidth is closest to half on one
        // side, keeping at least one switch on each side.
        let (mut acc, mut best, mut best_gap) = (0u64, 1usize, u64::MAX);
        for (i, &s) in order.iter().enumerate().take(order.len() - 1) {
            acc += host_bw(s);
            let gap = (acc * 2).abs_diff(total);
            if gap < best_gap {
                (best, best_gap) = (i + 1, gap);
            }
        }
        let mut side = vec![false; f.nodes.len()];
        for &s in &order[..best] {
            side[s.idx()] = true;
        }
        refine(f, &flat, &switches, &mut side, &host_bw);
        let cut = f
            .links
            .iter()
            .filter(|l| {
                f.node(l.a.node).is_switch()
                    && f.node(l.b.node).is_switch()
                    && side[l.a.node.idx()] != side[l.b.node.idx()]
            })
            .map(|l| l.rate.data_bps())
            .sum();
        best_cut = best_cut.min(cut);
    }
    best_cut
}

/// Improve a balanced cut with Kernighan–Lin passes (Kernighan & Lin, "An
/// Efficient Heuristic Procedure for Partitioning Graphs", Bell Syst. Tech. J. 1970):
/// each pass tentatively swaps the best pair of unlocked switches (equal host
/// bandwidth, so balance holds) again and again, even at a loss, then keeps the
/// prefix of swaps with the largest total gain. This straightens the diagonal cut a
/// breadth-first order gives on a torus into a planar one. Candidates per step are
/// the 24 best of each side, so a pass is O(n² log n); it runs up to 4,096 switches
/// and 20 passes, beyond which the breadth-first cut stands as the bound.
fn refine(
    f: &Fabric,
    flat: &crate::flat::FlatFabric,
    switches: &[NodeId],
    side: &mut [bool],
    host_bw: &dyn Fn(NodeId) -> u64,
) {
    let n = switches.len();
    if n > 4096 {
        return;
    }
    let mut local = vec![usize::MAX; f.nodes.len()];
    for (i, &s) in switches.iter().enumerate() {
        local[s.idx()] = i;
    }
    let hb: Vec<u64> = switches.iter().map(|&s| host_bw(s)).collect();
    // switch-to-switch adjacency with capacities, parallel cables merged
    let adj: Vec<Vec<(usize, i128)>> = switches
        .iter()
        .map(|&s| {
            let mut v: Vec<(usize, i128)> = Vec::new();
            for a in flat.neighbors(s) {
                let j = local[a.peer.idx()];
                if j == usize::MAX {
                    continue;
                }
                let c = f.link(a.link).rate.data_bps() as i128;
                match v.iter_mut().find(|(k, _)| *k == j) {
                    Some(e) => e.1 += c,
                    None => v.push((j, c)),
                }
            }
            v
        })
        .collect();
    let w = |a: usize, b: usize| adj[a].iter().find(|(k, _)| *k == b).map(|e| e.1).unwrap_or(0);
    let mut s_side: Vec<bool> = switches.iter().map(|s| side[s.idx()]).collect();
    for _ in 0..20 {
        let mut d: Vec<i128> = (0..n)
            .map(|i| {
                adj[i]
                    .iter()
                    .map(|&(j, c)| if s_side[j] != s_side[i] { c } else { -c })
                    .sum()
            })
            .collect();
        let mut locked = vec![false; n];
        let mut swaps: Vec<(usize, usize)> = Vec::new();
        let (mut cum, mut best, mut best_k) = (0i128, 0i128, 0usize);
        loop {
            let top = |want: bool, d: &[i128], locked: &[bool]| {
                let mut v: Vec<usize> = (0..n).filter(|&i| s_side[i] == want && !locked[i]).collect();
                v.sort_by_key(|&i| (std::cmp::Reverse(d[i]), i));
                v.truncate(24);
                v
            };
            let (ta, tb) = (top(true, &d, &locked), top(false, &d, &locked));
            let mut pick: Option<(i128, usize, usize)> = None;
            for &a in &ta {
                for &b in &tb {
                    if hb[a] != hb[b] {
                        continue;
                    }
                    let g = d[a] + d[b] - 2 * w(a, b);
                    if pick.is_none_or(|(pg, _, _)| g > pg) {
                        pick = Some((g, a, b));
                    }
                }
            }
            let Some((g, a, b)) = pick else { break };
            // Update gains as if a and b had moved.
            for &(x, c) in &adj[a] {
                d[x] += if s_side[x] == s_side[a] { 2 * c } else { -2 * c };
            }
            for &(x, c) in &adj[b] {
                d[x] += if s_side[x] == s_side[b] { 2 * c } else { -2 * c };
            }
            s_side[a] = false;
            s_side[b] = true;
            locked[a] = true;
            locked[b] = true;
            swaps.push((a, b));
            cum += g;
            if cum > best {
                (best, best_k) = (cum, swaps.len());
            }
        }
        for &(a, b) in swaps[best_k..].iter().rev() {
            s_side[a] = true;
            s_side[b] = false;
        }
        if best <= 0 {
            break;
        }
    }
    for (i, &s) in switches.iter().enumerate() {
        side[s.idx()] = s_side[i];
    }
}

/// CA-to-CA diameter in links, by bit-parallel breadth-first search (64 sources per
/// pass) over the switches that have CAs: O(S/64 · D · L) for S such switches,
/// diameter D and L switch links, so a 65,536-host fat tree takes milliseconds.
/// Exact when each CA hangs off one switch; with multi-homed CAs an upper bound.
/// Planes (switch components a CA joins only through its ports) each count on
/// their own; a CA missing from a plane makes the fabric disconnected (`None`).
pub fn diameter(f: &Fabric) -> Option<u32> {
    let flat = f.freeze();
    let n = f.nodes.len();
    let mut edge = vec![false; n]; // switch with a CA
    let mut ca_count = 0usize;
    let mut direct = 0u32;
    for id in f.node_ids() {
        if f.node(id).kind == NodeKind::Switch {
            continue;
        }
        ca_count += 1;
        for a in flat.neighbors(id) {
            if flat.kind(a.peer) == NodeKind::Switch {
                edge[a.peer.idx()] = true;
            } else {
                direct = direct.max(1);
            }
        }
    }
    if ca_count < 2 {
        return Some(0);
    }
    // switch components: planes are separate ones, joined only through the
    // CAs that have a port in each (CAs do not forward)
    let comp = switch_components(&flat, n);
    let comps: std::collections::BTreeSet<u32> = (0..n).filter(|&i| edge[i]).map(|i| comp[i]).collect();
    if comps.len() > 1 {
        // every CA must reach every component, or some pair shares none
        for id in f.node_ids() {
            if f.node(id).kind == NodeKind::Switch {
                continue;
            }
            let touched: std::collections::BTreeSet<u32> = flat
                .neighbors(id)
                .iter()
                .filter(|a| flat.kind(a.peer) == NodeKind::Switch)
                .map(|a| comp[a.peer.idx()])
                .collect();
            if touched != comps {
                return None;
            }
        }
    }
    let sources: Vec<usize> = (0..n).filter(|&i| edge[i]).collect();
    if sources.is_empty() {
        return if direct > 0 && f.links.len() * 2 >= ca_count {
            Some(1)
        } else {
            None
        };
    }
    let mut worst = 0u32;
    let mut vis = vec![0u64; n];
    let mut front = vec![0u64; n];
    let mut next = vec![0u64; n];
    for chunk in sources.chunks(64) {
        vis.iter_mut().for_each(|v| *v = 0);
        front.iter_mut().for_each(|v| *v = 0);
        for (b, &s) in chunk.iter().enumerate() {
            vis[s] |= 1 << b;
            front[s] |= 1 << b;
        }
        let all: u64 = if chunk.len() == 64 {
            u64::MAX
        } else {
            (1u64 << chunk.len()) - 1
        };
        let mut d = 0u32;
        loop {
            d += 1;
            let mut any = false;
            next.iter_mut().for_each(|v| *v = 0);
            for (v, &fv) in front.iter().enumerate() {
                if fv == 0 || flat.kind(NodeId(v as u32)) != NodeKind::Switch {
                    continue;
                }
                for a in flat.neighbors(NodeId(v as u32)) {
                    if flat.kind(a.peer) == NodeKind::Switch {
                        next[a.peer.idx()] |= fv;
                    }
                }
            }
            for v in 0..n {
                let new = next[v] & !vis[v];
                if new != 0 {
                    vis[v] |= new;
                    any = true;
                    if edge[v] {
                        worst = worst.max(d);
                    }
                }
                front[v] = new;
            }
            if !any {
                break;
            }
        }
        // each source reaches every edge switch of its own component
        let mut same = vec![0u64; comps.len()];
        for (b, &c) in chunk.iter().enumerate() {
            let k = comps.iter().position(|&x| x == comp[c]).expect("an edge switch's");
            same[k] |= 1 << b;
        }
        if sources.iter().any(|&s| {
            let k = comps.iter().position(|&x| x == comp[s]).expect("an edge switch's");
            vis[s] & same[k] & all != same[k] & all
        }) {
            return None;
        }
    }
    Some(worst + 2)
}

/// A component label per node, over switch-to-switch links only.
fn switch_components(flat: &crate::FlatFabric, n: usize) -> Vec<u32> {
    let mut comp = vec![u32::MAX; n];
    let mut next = 0;
    for start in 0..n {
        if comp[start] != u32::MAX || flat.kind(NodeId(start as u32)) != NodeKind::Switch {
            continue;
        }
        comp[start] = next;
        let mut stack = vec![start];
        while let Some(v) = stack.pop() {
            for a in flat.neighbors(NodeId(v as u32)) {
                let w = a.peer.idx();
                if comp[w] == u32::MAX && flat.kind(a.peer) == NodeKind::Switch {
                    comp[w] = next;
                    stack.push(w);
                }
            }
        }
        next += 1;
    }
    comp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::*;

    #[test]
    fn ft648_summary() {
        let f = leaf_spine(&LeafSpineParams::default()).unwrap();
        let s = summarize(&f);
        assert_eq!(
            s.nodes,
            KindCounts {
                switches: 54,
                cas: 648,
                routers: 0
            }
        );
        assert_eq!(s.tiers.len(), 2);
        assert_eq!(s.tiers[0].oversubscription, Some(1.0));
        assert_eq!(s.tiers[1].oversubscription, None);
        assert_eq!(s.bisection_bps, 648 / 2 * 400_000_000_000);
        assert_eq!(s.bisection_ratio, 1.0);
        assert_eq!(s.diameter_hops, Some(4));
        assert_eq!(s.bom.switches_by_radix.get(&36), Some(&54));
        assert_eq!(s.bom.copper_cables, 648);
        assert_eq!(s.bom.optical_cables, 648);
        assert_eq!(s.bom.transceivers, 2 * 648);
        assert!(!s.levels_inferred);
    }

    #[test]
    fn oversubscribed_and_inferred_levels() {
        let mut f = leaf_spine(&LeafSpineParams {
            oversubscription: 3.0,
            ..Default::default()
        })
        .unwrap();
        for n in &mut f.nodes {
            n.level = None;
        }
        let s = summarize(&f);
        assert!(s.levels_inferred);
        assert_eq!(s.tiers[0].oversubscription, Some(3.0));
        assert!((s.bisection_ratio - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn three_tier_and_torus() {
        let f = fat_tree3(&FatTree3Params {
            pods: Some(8),
            ..Default::default()
        })
        .unwrap();
        let s = summarize(&f);
        assert_eq!(s.tiers.len(), 3);
        assert_eq!(s.diameter_hops, Some(6));
        assert_eq!(s.bisection_ratio, 1.0);
        let t = torus(&TorusParams {
            dims: [4, 4, 4],
            ..Default::default()
        })
        .unwrap();
        let s = summarize(&t);
        assert_eq!(s.bisection_method, "bfs-cut");
        // 2 + 2 + 2 hops at most between switches of a 4-ary 3-cube, plus the host links
        assert_eq!(s.diameter_hops, Some(8));
        // the best cut of a 4×4×4 torus crosses 2 × 16 cables: full bisection
        assert_eq!(s.bisection_bps, 32 * 400_000_000_000);
        assert!(s.tiers[0].peer_links == 192);
        let m = multi_pod(&MultiPodParams::default()).unwrap();
        let s = summarize(&m);
        assert_eq!(s.tiers[1].oversubscription, Some(2.0));
        assert_eq!(s.bom.cables.last().unwrap().up_to_m, 2000.0);
    }
}
