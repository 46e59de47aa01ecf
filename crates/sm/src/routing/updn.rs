//! Up*/Down* and fat-tree routing.
//!
//! Both rank switches by breadth-first distance from a set of roots and order them by
//! `(rank, GUID)`: a hop towards a smaller key is "up", towards a larger key "down".
//! Legal routes are up* down*; since the key is a strict total order, the channel
//! dependency graph of such routes is acyclic (Schroeder et al., "Autonet", 1991; the
//! rule OpenSM's updn and ftree enforce, reference §1.2).
//!
//! Per destination switch d (all LIDs hanging off d share the work):
//! - `down[s]`: shortest down-only distance from s to d (a BFS from d that climbs to
//!   smaller keys);
//! - a switch with a down-only route takes it (its min-hop down ports are the
//!   candidates), so a packet that has turned down never needs to climb again;
//! - any other switch climbs: `reach[s] = 1 + min reach[up neighbour]`, computed in key
//!   order so neighbours above are final first.
//!
//! `UpDn` picks among candidates by per-port LID count (like minhop). `Ftree` checks
//! that the fabric is a fat tree (leaves at one rank, every cable joining adjacent
//! ranks) and picks up-ports by destination index modulo the up-arity of each level
//! (d-mod-k, Zahavi et al., "Optimized InfiniBand fat-tree routing for shift all-to-all
//! communication patterns", 2010, the idea behind OpenSM's ftree): on a complete fat tree
//! every up link and down link carries the same number of routes.

use fabric::Guid;

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts, least_loaded};
use crate::tables::RoutingTables;

const INF: u32 = u32::MAX;

/// Shared machinery and scratch of the two engines.
#[derive(Debug, Default)]
struct Ranked {
    rank: Vec<u32>,
    key: Vec<u32>,
    by_key: Vec<u32>,
    down: Vec<u32>,
    reach: Vec<u32>,
    queue: Vec<u32>,
    cand_off: Vec<u32>,
    cands: Vec<u8>,
    /// Per switch: true when its candidates towards the current d go down.
    goes_down: Vec<bool>,
    /// Per port slot: peer switch (u32::MAX = none).
    peer_sw: Vec<u32>,
    /// Switches that reach d, farthest first.
    order: Vec<u32>,
    bucket: Vec<u32>,
    cnt: Vec<u32>,
    /// Routes (source end port → destination LID) per port slot so far.
    weight: Vec<u32>,
}

impl Ranked {
    fn index_ports(&mut self, g: &SwitchGraph) {
        self.peer_sw.clear();
        self.peer_sw.resize(g.port_slots(), INF);
        for s in 0..g.len() as u32 {
            for a in g.isls(s) {
                self.peer_sw[g.pidx(s, a.port)] = a.peer;
            }
        }
        self.weight.clear();
        self.weight.resize(g.port_slots(), 0);
        self.cnt.clear();
        self.cnt.resize(g.len(), 0);
    }

    /// Order the switches that reach d by decreasing distance (counting sort).
    fn order_by_reach(&mut self) {
        let maxr = self.reach.iter().copied().filter(|&r| r != INF).max().unwrap_or(0) as usize;
        self.bucket.clear();
        self.bucket.resize(maxr + 2, 0);
        let mut n = 0;
        for &r in &self.reach {
            if r != INF {
                self.bucket[maxr - r as usize + 1] += 1;
                n += 1;
            }
        }
        for i in 1..self.bucket.len() {
            self.bucket[i] += self.bucket[i - 1];
        }
        self.order.clear();
        self.order.resize(n, 0);
        for (s, &r) in self.reach.iter().enumerate() {
            if r != INF {
                let b = maxr - r as usize;
                self.order[self.bucket[b] as usize] = s as u32;
                self.bucket[b] += 1;
            }
        }
    }

    /// After `lid`'s entries are written: push the end ports of every switch along the
    /// new routes, adding them to the per-port route weights.
    fn push_routes(&mut self, g: &SwitchGraph, t: &RoutingTables, lid: usize, d: u32) {
        for &s in &self.order {
            self.cnt[s as usize] = g.ends_at[s as usize];
        }
        for &s in &self.order {
            let c = self.cnt[s as usize];
            if s == d || c == 0 {
                continue;
            }
            let p = t.lft[g.sw_node[s as usize].idx()].ports[lid];
            if p == crate::tables::NO_ROUTE {
                continue;
            }
            let i = g.pidx(s, p);
            self.weight[i] = self.weight[i].saturating_add(c);
            let nx = self.peer_sw[i];
            if nx != INF {
                self.cnt[nx as usize] += c;
            }
        }
    }

    fn rank_from(&mut self, g: &SwitchGraph, roots: &[u32]) {
        g.bfs(roots, &mut self.rank, &mut self.queue);
        self.by_key.clear();
        self.by_key.extend(0..g.len() as u32);
        let rank = &self.rank;
        self.by_key.sort_by_key(|&s| (rank[s as usize], g.guid[s as usize].0));
        self.key.clear();
        self.key.resize(g.len(), 0);
        for (i, &s) in self.by_key.iter().enumerate() {
            self.key[s as usize] = i as u32;
        }
    }

    /// Distances and candidate ports towards destination switch d.
    fn towards(&mut self, g: &SwitchGraph, d: u32) {
        self.distances(g, d);
        self.candidates(g, d);
    }

    /// `down` and `reach` towards destination switch d.
    fn distances(&mut self, g: &SwitchGraph, d: u32) {
        let n = g.len();
        self.down.clear();
        self.down.resize(n, INF);
        self.queue.clear();
        self.down[d as usize] = 0;
        self.queue.push(d);
        let mut h = 0;
        while h < self.queue.len() {
            let x = self.queue[h];
            h += 1;
            let kx = self.key[x as usize];
            let dx = self.down[x as usize] + 1;
            for a in g.isls(x) {
                let s = a.peer as usize;
                if self.key[s] < kx && self.down[s] == INF {
                    self.down[s] = dx;
                    self.queue.push(a.peer);
                }
            }
        }
        self.reach.clear();
        self.reach.resize(n, INF);
        for &s in &self.by_key {
            let su = s as usize;
            if self.down[su] != INF {
                self.reach[su] = self.down[su];
                continue;
            }
            let ks = self.key[su];
            let mut best = INF;
            for a in g.isls(s) {
                if self.key[a.peer as usize] < ks {
                    best = best.min(self.reach[a.peer as usize]);
                }
            }
            if best != INF {
                self.reach[su] = best + 1;
            }
        }
    }

    /// Candidate ports of every switch towards d (after [`Ranked::distances`]).
    fn candidates(&mut self, g: &SwitchGraph, d: u32) {
        let n = g.len();
        self.cand_off.clear();
        self.cands.clear();
        self.goes_down.clear();
        self.goes_down.resize(n, false);
        self.cand_off.push(0);
        for s in 0..n as u32 {
            let su = s as usize;
            let ks = self.key[su];
            if s != d && self.down[su] != INF {
                self.goes_down[su] = true;
                let want = self.down[su] - 1;
                for a in g.isls(s) {
                    let p = a.peer as usize;
                    if self.key[p] > ks && self.down[p] == want {
                        self.cands.push(a.port);
                    }
                }
            } else if s != d && self.reach[su] != INF {
                let want = self.reach[su] - 1;
                for a in g.isls(s) {
                    let p = a.peer as usize;
                    if self.key[p] < ks && self.reach[p] == want {
                        self.cands.push(a.port);
                    }
                }
            }
            self.cand_off.push(self.cands.len() as u32);
        }
    }

    #[inline]
    fn cands_of(&self, s: u32) -> &[u8] {
        &self.cands[self.cand_off[s as usize] as usize..self.cand_off[s as usize + 1] as usize]
    }

    /// Route switch d's own LID(s) at every switch: the lightest legal port (down-only
    /// when a down path exists, else up), as [`Ranked::fill`] would pick, without
    /// building candidate lists or pushing weights.
    fn switch_lid(&self, g: &SwitchGraph, t: &mut RoutingTables, d: u32, dests: &[super::Dest]) {
        for s in 0..g.len() as u32 {
            let lft = &mut t.lft[g.sw_node[s as usize].idx()].ports;
            if s == d {
                for de in dests {
                    lft[de.base as usize] = de.port;
                }
                continue;
            }
            let su = s as usize;
            let ks = self.key[su];
            let (down, want) = if self.down[su] != INF {
                (true, self.down[su] - 1)
            } else if self.reach[su] != INF {
                (false, self.reach[su] - 1)
            } else {
                continue;
            };
            let base = g.port_base[su] as usize;
            let mut best = None;
            let mut bw = u32::MAX;
            for a in g.isls(s) {
                let p = a.peer as usize;
                let ok = if down {
                    self.key[p] > ks && self.down[p] == want
                } else {
                    self.key[p] < ks && self.reach[p] == want
                };
                if ok {
                    let w = self.weight[base + a.port as usize];
                    if w < bw {
                        bw = w;
                        best = Some(a.port);
                    }
                }
            }
            if let Some(p) = best {
                for de in dests {
                    lft[de.base as usize] = p;
                }
            }
        }
    }

    /// Every switch with end ports reaches d (else the engine cannot serve the fabric).
    fn check_sources(&self, g: &SwitchGraph, d: u32, engine: &'static str) -> Result<(), RouteError> {
        for s in g.leaves() {
            if self.reach[s as usize] == INF {
                let lid = g.dests_at(d).first().map(|x| x.base).unwrap_or(0);
                return Err(RouteError::NoRoute {
                    engine,
                    from: format!("{}", g.guid[s as usize]),
                    lid,
                });
            }
        }
        Ok(())
    }
}

/// Switches furthest (in ISL hops) from any switch with end ports; a single lowest-GUID
/// switch when that distance is 0 (every switch hosts end ports, e.g. a torus).
fn detect_roots(g: &SwitchGraph, scratch: &mut Ranked) -> Vec<u32> {
    let leaves: Vec<u32> = g.leaves().collect();
    if leaves.is_empty() {
        return (0..g.len() as u32)
            .min_by_key(|&s| g.guid[s as usize].0)
            .into_iter()
            .collect();
    }
    g.bfs(&leaves, &mut scratch.rank, &mut scratch.queue);
    let maxd = scratch.rank.iter().copied().filter(|&d| d != INF).max().unwrap_or(0);
    let far: Vec<u32> = (0..g.len() as u32)
        .filter(|&s| scratch.rank[s as usize] == maxd)
        .collect();
    if maxd == 0 {
        return far
            .into_iter()
            .min_by_key(|&s| g.guid[s as usize].0)
            .into_iter()
            .collect();
    }
    far
}

/// Up*/Down* routing.
#[derive(Debug, Default)]
pub struct UpDn {
    r: Ranked,
    /// Roots used by the last run.
    pub roots: Vec<u32>,
}

impl RoutingEngine for UpDn {
    fn name(&self) -> &'static str {
        "updn"
    }

    fn route(&mut self, g: &SwitchGraph, opts: &RouteOptions, t: &mut RoutingTables) -> Result<(), RouteError> {
        if !opts.root_guids.is_empty() {
            let roots = root_switches(g, t, &opts.root_guids, "updn")?;
            return self.route_with(g, t, roots);
        }
        // Detected roots: the switches furthest from the end ports (the top tier of a
        // tree). On irregular fabrics several such roots may leave some pair without a
        // legal up*/down* route; a single root always has one (every switch climbs its
        // BFS-tree parents to it, and it reaches everything going down), so retry with
        // the lowest-GUID candidate.
        let roots = detect_roots(g, &mut self.r);
        match self.route_with(g, t, roots.clone()) {
            Err(RouteError::NoRoute { .. }) if roots.len() > 1 => {
                let one = roots
                    .iter()
                    .copied()
                    .min_by_key(|&s| g.guid[s as usize].0)
                    .into_iter()
                    .collect();
                self.route_with(g, t, one)
            }
            other => other,
        }
    }
}

impl UpDn {
    fn route_with(&mut self, g: &SwitchGraph, t: &mut RoutingTables, roots: Vec<u32>) -> Result<(), RouteError> {
        self.r.rank_from(g, &roots);
        self.roots = roots;
        alloc_lfts(g, t);
        self.r.index_ports(g);
        for d in 0..g.len() as u32 {
            let dests = g.dests_at(d);
            if dests.is_empty() {
                continue;
            }
            if dests.iter().all(|x| !x.is_end) {
                // A switch's own LID: management traffic, not balanced into the route
                // weights, so pick the lightest legal port directly (no candidate lists).
                self.r.distances(g, d);
                self.r.switch_lid(g, t, d, dests);
                continue;
            }
            self.r.towards(g, d);
            self.r.check_sources(g, d, "updn")?;
            self.r.fill(g, t, d, |s, c, _, w, _| lightest(g, s, c, w));
        }
        Ok(())
    }
}

impl Ranked {
    /// Write d's LIDs into every switch's LFT, one LID at a time, choosing among the
    /// candidates with `pick(switch, candidates, dest index in g.dests, route weights
    /// per port slot, goes down)`, then pushing the new routes into the weights.
    fn fill(
        &mut self,
        g: &SwitchGraph,
        t: &mut RoutingTables,
        d: u32,
        mut pick: impl FnMut(u32, &[u8], usize, &[u32], bool) -> u8,
    ) {
        self.order_by_reach();
        let first = g.dest_off[d as usize] as usize;
        for (i, de) in g.dests_at(d).iter().enumerate() {
            for k in 0..de.count {
                let lid = (de.base + k) as usize;
                for s in 0..g.len() as u32 {
                    let lft = &mut t.lft[g.sw_node[s as usize].idx()].ports;
                    if s == d {
                        lft[lid] = de.port;
                        continue;
                    }
                    let c = self.cands_of(s);
                    if !c.is_empty() {
                        lft[lid] = pick(s, c, first + i, &self.weight, self.goes_down[s as usize]);
                    }
                }
                if de.is_end {
                    // Switch LIDs carry management traffic only: balance CA routes.
                    self.push_routes(g, t, lid, d);
                }
            }
        }
    }
}

/// The candidate with the fewest routes so far (ties to the first).
#[inline]
fn lightest(g: &SwitchGraph, s: u32, c: &[u8], weight: &[u32]) -> u8 {
    c[least_loaded(c, weight, g.port_base[s as usize] as usize)]
}

/// Root switches from GUIDs: a switch GUID, or a CA node/port GUID meaning the switch
/// it is cabled to (OpenSM `root_guid_file` semantics).
fn root_switches(
    g: &SwitchGraph,
    t: &RoutingTables,
    guids: &[Guid],
    engine: &'static str,
) -> Result<Vec<u32>, RouteError> {
    let _ = t;
    let mut out = Vec::new();
    for &guid in guids {
        if let Some(s) = g.guid.iter().position(|&x| x == guid) {
            out.push(s as u32);
        } else if let Some(s) = g.end_guid_switch(guid) {
            out.push(s);
        } else {
            return Err(RouteError::UnknownRoot { engine, guid });
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Fat-tree routing.
#[derive(Debug)]
pub struct Ftree {
    r: Ranked,
    /// Up ports by destination index modulo up-arity (d-mod-k) instead of by weight.
    pub dmodk: bool,
    height: Vec<u32>,
    div: Vec<u64>,
    dest_index: Vec<u64>,
    /// Roots used by the last run.
    pub roots: Vec<u32>,
}

impl Default for Ftree {
    fn default() -> Self {
        Ftree {
            r: Ranked::default(),
            dmodk: true,
            height: Vec::new(),
            div: Vec::new(),
            dest_index: Vec::new(),
            roots: Vec::new(),
        }
    }
}

impl Ftree {
    /// One routing pass; returns the most routes on one switch-to-switch port.
    fn pass(&mut self, g: &SwitchGraph, t: &mut RoutingTables, dmodk: bool) -> Result<u32, RouteError> {
        alloc_lfts(g, t);
        self.r.index_ports(g);
        for d in 0..g.len() as u32 {
            let dests = g.dests_at(d);
            if dests.is_empty() {
                continue;
            }
            self.r.towards(g, d);
            if dests.iter().any(|x| x.is_end) {
                self.r.check_sources(g, d, "ftree")?;
            }
            let (height, div, dest_index) = (&self.height, &self.div, &self.dest_index);
            self.r.fill(g, t, d, |s, c, di, w, down| {
                if down || !dmodk {
                    lightest(g, s, c, w)
                } else {
                    let h = height[s as usize] as usize;
                    c[((dest_index[di] / div[h]) % c.len() as u64) as usize]
                }
            });
        }
        Ok(self.max_isl_weight(g))
    }

    fn max_isl_weight(&self, g: &SwitchGraph) -> u32 {
        (0..g.port_slots())
            .filter(|&i| self.r.peer_sw[i] != INF)
            .map(|i| self.r.weight[i])
            .max()
            .unwrap_or(0)
    }

    /// True when every switch-to-switch port between the same two heights carries the
    /// same number of routes.
    fn even_per_tier(&self, g: &SwitchGraph) -> bool {
        let mut seen: std::collections::BTreeMap<(u32, u32), u32> = Default::default();
        for s in 0..g.len() as u32 {
            for a in g.isls(s) {
                let w = self.r.weight[g.pidx(s, a.port)];
                let key = (self.height[s as usize], self.height[a.peer as usize]);
                if *seen.entry(key).or_insert(w) != w {
                    return false;
                }
            }
        }
        true
    }

    fn check_tree(&mut self, g: &SwitchGraph, leaves: &[u32]) -> Result<u32, RouteError> {
        let bad = |why: String| RouteError::NotAFatTree { engine: "ftree", why };
        let rank = &self.r.rank;
        if rank.contains(&INF) {
            return Err(bad("some switches are not connected to the roots".into()));
        }
        let lr = rank[leaves[0] as usize];
        if let Some(&l) = leaves.iter().find(|&&l| rank[l as usize] != lr) {
            return Err(bad(format!(
                "leaf switches sit at different ranks ({} at {}, {} at {})",
                g.guid[leaves[0] as usize], lr, g.guid[l as usize], rank[l as usize]
            )));
        }
        if lr == 0 {
            return Err(bad("the leaf switches are the roots (tree rank 1)".into()));
        }
        if lr + 1 > 8 {
            return Err(bad(format!("tree rank {} exceeds 8", lr + 1)));
        }
        for s in 0..g.len() as u32 {
            for a in g.isls(s) {
                let (rs, rp) = (rank[s as usize], rank[a.peer as usize]);
                if rs.abs_diff(rp) != 1 {
                    return Err(bad(format!(
                        "the cable {}/P{} - {}/P{} joins ranks {rs} and {rp}",
                        g.guid[s as usize], a.port, g.guid[a.peer as usize], a.peer_port
                    )));
                }
            }
        }
        Ok(lr)
    }
}

impl RoutingEngine for Ftree {
    fn name(&self) -> &'static str {
        "ftree"
    }

    fn route(&mut self, g: &SwitchGraph, opts: &RouteOptions, t: &mut RoutingTables) -> Result<(), RouteError> {
        if t.lmc > 0 {
            // As OpenSM's ftree (osm_ucast_ftree.c:4074): LMC > 0 is not supported.
            return Err(RouteError::Unsupported {
                engine: "ftree",
                what: format!("LMC {} > 0 is not supported", t.lmc),
            });
        }
        // Compute nodes: the listed ports, else every end port.
        let is_cn = |d: &super::Dest| -> bool {
            d.is_end && (opts.cn_guids.is_empty() || opts.cn_guids.iter().any(|&x| g.end_guid(d) == Some(x)))
        };
        let mut leaves: Vec<u32> = (0..g.len() as u32)
            .filter(|&s| g.dests_at(s).iter().any(is_cn))
            .collect();
        leaves.dedup();
        if leaves.is_empty() {
            return Err(RouteError::NotAFatTree {
                engine: "ftree",
                why: "no compute-node ports".into(),
            });
        }
        let roots = if opts.root_guids.is_empty() {
            // The top of the tree: furthest from every switch with end ports (I/O
            // nodes included, so a compute-node list does not move the roots).
            let all_leaves: Vec<u32> = g.leaves().collect();
            g.bfs(&all_leaves, &mut self.r.rank, &mut self.r.queue);
            let maxd = self.r.rank.iter().copied().filter(|&d| d != INF).max().unwrap_or(0);
            (0..g.len() as u32)
                .filter(|&s| self.r.rank[s as usize] == maxd)
                .collect()
        } else {
            root_switches(g, t, &opts.root_guids, "ftree")?
        };
        self.r.rank_from(g, &roots);
        let leaf_rank = self.check_tree(g, &leaves)?;
        self.roots = roots;
        // Height above the leaves, and the up-arity of each height for d-mod-k.
        self.height.clear();
        self.height
            .extend(self.r.rank.iter().map(|&r| leaf_rank.saturating_sub(r)));
        let levels = leaf_rank as usize + 1;
        let mut upk = vec![1u64; levels];
        for s in 0..g.len() as u32 {
            let rs = self.r.rank[s as usize];
            let ups = g.isls(s).iter().filter(|a| self.r.rank[a.peer as usize] < rs).count() as u64;
            let h = self.height[s as usize] as usize;
            upk[h] = upk[h].max(ups.max(1));
        }
        self.div.clear();
        let mut acc = 1u64;
        for &k in &upk {
            self.div.push(acc);
            acc = acc.saturating_mul(k);
        }
        // Destination index: compute nodes in (leaf, port) order first, then the rest.
        self.dest_index.clear();
        self.dest_index.resize(g.dests.len(), 0);
        let mut j = 0u64;
        for (i, d) in g.dests.iter().enumerate() {
            if is_cn(d) {
                self.dest_index[i] = j;
                j += 1;
            }
        }
        for (i, d) in g.dests.iter().enumerate() {
            if !is_cn(d) {
                self.dest_index[i] = j;
                j += 1;
            }
        }
        // Pass 1: d-mod-k up ports (perfectly even on complete fat trees). When the
        // result is not even per tier (an irregularly cabled tree), pass 2 routes by
        // route weight and the pass with the lighter busiest port wins.
        let first = self.pass(g, t, self.dmodk)?;
        if self.dmodk && !self.even_per_tier(g) {
            let saved: Vec<Vec<u8>> = g.sw_node.iter().map(|n| t.lft[n.idx()].ports.clone()).collect();
            let second = self.pass(g, t, false)?;
            if second > first {
                for (n, ports) in g.sw_node.iter().zip(saved) {
                    t.lft[n.idx()].ports = ports;
                }
            }
        }
        Ok(())
    }
}
