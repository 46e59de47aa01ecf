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

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts};
use crate::tables::RoutingTables;

const INF: u32 = u32::MAX;

/// LIDs routed together, switch by switch (bounds the per-LID route counters to
/// switches × CHUNK).
const CHUNK: usize = 64;

/// One destination LID being routed.
#[derive(Clone, Copy, Debug, Default)]
struct Job {
    lid: u32,
    /// Index of its destination in `g.dests`.
    di: u32,
    /// Port of the destination switch towards it (0 = the switch itself).
    port: u8,
    /// A CA/router port (its routes are counted in the weights).
    end: bool,
}

/// An ISL seen from one end: peer switch and local port.
#[derive(Clone, Copy, Debug)]
struct Hop {
    peer: u32,
    port: u8,
}

/// d-mod-k inputs of [`Ftree`]: height of each switch above the leaves, the divisor per
/// height and each destination's index.
#[derive(Clone, Copy, Debug)]
struct DModK<'a> {
    height: &'a [u32],
    div: &'a [u64],
    dest_index: &'a [u64],
}

/// Shared machinery and scratch of the two engines.
#[derive(Debug, Default)]
struct Ranked {
    rank: Vec<u32>,
    key: Vec<u32>,
    by_key: Vec<u32>,
    /// ISLs of each switch towards smaller keys (`up`) and larger keys (`dn`), each in
    /// the switch's ISL order: `up[up_off[s]..up_off[s+1]]`.
    up_off: Vec<u32>,
    up: Vec<Hop>,
    dn_off: Vec<u32>,
    dn: Vec<Hop>,
    down: Vec<u32>,
    reach: Vec<u32>,
    queue: Vec<u32>,
    /// Per port slot: peer switch (u32::MAX = none).
    peer_sw: Vec<u32>,
    /// Switches that reach d, farthest first.
    order: Vec<u32>,
    bucket: Vec<u32>,
    /// Routes towards each LID of the chunk entering each switch: `cnt[s * m + j]`.
    cnt: Vec<u32>,
    /// Routes (source end port → destination LID) per port slot so far.
    weight: Vec<u32>,
    jobs: Vec<Job>,
    /// Candidate ports of one switch and their weights (contiguous, for [`argmin`]).
    cbuf: Vec<u8>,
    cw: Vec<u32>,
    /// d-mod-k candidate index per LID of the chunk, per (height, up-arity) met.
    memo_key: Vec<(u32, u32)>,
    memo: Vec<u16>,
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
        self.up_off.clear();
        self.up.clear();
        self.dn_off.clear();
        self.dn.clear();
        self.up_off.push(0);
        self.dn_off.push(0);
        for s in 0..g.len() as u32 {
            let ks = self.key[s as usize];
            for a in g.isls(s) {
                let kp = self.key[a.peer as usize];
                let h = Hop {
                    peer: a.peer,
                    port: a.port,
                };
                if kp < ks {
                    self.up.push(h);
                } else if kp > ks {
                    self.dn.push(h);
                }
            }
            self.up_off.push(self.up.len() as u32);
            self.dn_off.push(self.dn.len() as u32);
        }
    }

    #[inline]
    fn ups(&self, s: u32) -> &[Hop] {
        &self.up[self.up_off[s as usize] as usize..self.up_off[s as usize + 1] as usize]
    }

    /// `down` and `reach` towards destination switch d:
    /// - `down[s]`: shortest down-only distance from s to d (a BFS from d that climbs
    ///   to smaller keys);
    /// - `reach[s]`: `down[s]` when finite, else `1 + min reach[up neighbour]`,
    ///   computed in key order so neighbours above are final first.
    fn distances(&mut self, d: u32) {
        let n = self.key.len();
        self.down.clear();
        self.down.resize(n, INF);
        self.queue.clear();
        self.down[d as usize] = 0;
        self.queue.push(d);
        let mut h = 0;
        while h < self.queue.len() {
            let x = self.queue[h];
            h += 1;
            let dx = self.down[x as usize] + 1;
            let (lo, hi) = (self.up_off[x as usize] as usize, self.up_off[x as usize + 1] as usize);
            for a in &self.up[lo..hi] {
                let s = a.peer as usize;
                if self.down[s] == INF {
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
            let mut best = INF;
            for a in self.ups(s) {
                best = best.min(self.reach[a.peer as usize]);
            }
            if best != INF {
                self.reach[su] = best + 1;
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

    /// Write d's LIDs into every switch's LFT (after [`Ranked::distances`]).
    ///
    /// The candidates of a switch s are its legal min-hop ports: down ports to
    /// switches one down-hop closer when s has a down-only route (so a packet that has
    /// turned down never climbs again), else up ports to switches one hop closer. Each
    /// LID goes to the candidate with the fewest routes so far (ties to the first), or
    /// with `dm`, up-going switches pick by destination index modulo the up-arity.
    /// Every route from a source end port to an end LID is then counted on the ports
    /// it crosses.
    ///
    /// Switches are visited farthest first, all LIDs of a chunk at each: a switch's
    /// choices only change its own ports' weights, and the routes entering it come
    /// from farther switches, already done. That gives the same tables as routing one
    /// LID at a time over all switches, with each switch's state in cache.
    fn fill(&mut self, g: &SwitchGraph, t: &mut RoutingTables, d: u32, dm: Option<DModK<'_>>) {
        self.order_by_reach();
        self.jobs.clear();
        let first = g.dest_off[d as usize] as usize;
        for (i, de) in g.dests_at(d).iter().enumerate() {
            for k in 0..de.count {
                self.jobs.push(Job {
                    lid: de.base as u32 + k as u32,
                    di: (first + i) as u32,
                    port: de.port,
                    end: de.is_end,
                });
            }
        }
        let jobs = std::mem::take(&mut self.jobs);
        for chunk in jobs.chunks(CHUNK) {
            self.fill_chunk(g, t, d, chunk, dm);
        }
        self.jobs = jobs;
    }

    fn fill_chunk(&mut self, g: &SwitchGraph, t: &mut RoutingTables, d: u32, chunk: &[Job], dm: Option<DModK<'_>>) {
        let m = chunk.len();
        let Ranked {
            dn_off,
            dn,
            up_off,
            up,
            down,
            reach,
            peer_sw,
            order,
            cnt,
            weight,
            cbuf,
            cw,
            memo_key,
            memo,
            ..
        } = self;
        if cnt.len() < g.len() * m {
            cnt.resize(g.len() * m, 0);
        }
        for &s in order.iter() {
            let e = g.ends_at[s as usize];
            let row = &mut cnt[s as usize * m..(s as usize + 1) * m];
            for (c, j) in row.iter_mut().zip(chunk) {
                *c = if j.end { e } else { 0 };
            }
        }
        memo_key.clear();
        memo.clear();
        for &s in order.iter() {
            let su = s as usize;
            let lft = &mut t.lft[g.sw_node[su].idx()].ports;
            if s == d {
                for j in chunk {
                    lft[j.lid as usize] = j.port;
                }
                continue;
            }
            let goes_down = down[su] != INF;
            cbuf.clear();
            if goes_down {
                let want = down[su] - 1;
                for h in &dn[dn_off[su] as usize..dn_off[su + 1] as usize] {
                    if down[h.peer as usize] == want {
                        cbuf.push(h.port);
                    }
                }
            } else {
                let want = reach[su] - 1;
                for h in &up[up_off[su] as usize..up_off[su + 1] as usize] {
                    if reach[h.peer as usize] == want {
                        cbuf.push(h.port);
                    }
                }
            }
            let nc = cbuf.len();
            if nc == 0 {
                continue;
            }
            let base = g.port_base[su] as usize;
            let row = su * m;
            if nc == 1 {
                let p = cbuf[0];
                let i = base + p as usize;
                let nx = peer_sw[i];
                let mut sum = 0u64;
                for (j, job) in chunk.iter().enumerate() {
                    lft[job.lid as usize] = p;
                    if job.end {
                        let c = cnt[row + j];
                        sum += c as u64;
                        if nx != INF && c != 0 {
                            cnt[nx as usize * m + j] += c;
                        }
                    }
                }
                weight[i] = (weight[i] as u64 + sum).min(u32::MAX as u64) as u32;
                continue;
            }
            match dm {
                Some(dm) if !goes_down => {
                    // d-mod-k: the index depends on the LID, the height and the arity.
                    let h = dm.height[su];
                    let at = match memo_key.iter().position(|&k| k == (h, nc as u32)) {
                        Some(k) => k * m,
                        None => {
                            memo_key.push((h, nc as u32));
                            let dv = dm.div[h as usize];
                            memo.extend(
                                chunk
                                    .iter()
                                    .map(|j| ((dm.dest_index[j.di as usize] / dv) % nc as u64) as u16),
                            );
                            memo.len() - m
                        }
                    };
                    for (j, job) in chunk.iter().enumerate() {
                        let p = cbuf[memo[at + j] as usize];
                        lft[job.lid as usize] = p;
                        if job.end {
                            let c = cnt[row + j];
                            if c != 0 {
                                let i = base + p as usize;
                                weight[i] = weight[i].saturating_add(c);
                                let nx = peer_sw[i];
                                if nx != INF {
                                    cnt[nx as usize * m + j] += c;
                                }
                            }
                        }
                    }
                }
                _ => {
                    // Lightest candidate: weights gathered, updated locally, written back.
                    cw.clear();
                    cw.extend(cbuf.iter().map(|&p| weight[base + p as usize]));
                    for (j, job) in chunk.iter().enumerate() {
                        let k = argmin(cw);
                        let p = cbuf[k];
                        lft[job.lid as usize] = p;
                        if job.end {
                            let c = cnt[row + j];
                            if c != 0 {
                                cw[k] = cw[k].saturating_add(c);
                                let nx = peer_sw[base + p as usize];
                                if nx != INF {
                                    cnt[nx as usize * m + j] += c;
                                }
                            }
                        }
                    }
                    for (k, &p) in cbuf.iter().enumerate() {
                        weight[base + p as usize] = cw[k];
                    }
                }
            }
        }
    }
}

/// Index of the first smallest value of `w` (non-empty).
#[inline]
fn argmin(w: &[u32]) -> usize {
    let mut best = 0;
    let mut bw = w[0];
    for (k, &x) in w.iter().enumerate().skip(1) {
        if x < bw {
            bw = x;
            best = k;
        }
    }
    best
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
            self.r.distances(d);
            // A switch's own LID is management traffic: routed on the lightest legal
            // port but not counted in the weights, and no source needs to reach it.
            if dests.iter().any(|x| x.is_end) {
                self.r.check_sources(g, d, "updn")?;
            }
            self.r.fill(g, t, d, None);
        }
        Ok(())
    }
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
            self.r.distances(d);
            if dests.iter().any(|x| x.is_end) {
                self.r.check_sources(g, d, "ftree")?;
            }
            let dm = DModK {
                height: &self.height,
                div: &self.div,
                dest_index: &self.dest_index,
            };
            self.r.fill(g, t, d, dmodk.then_some(dm));
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
