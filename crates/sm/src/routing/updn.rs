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
//!
//! One file because Up*/Down* and fat-tree routing share the ranking, the legal-turn
//! rule and the per-destination search; ftree differs only in how it spreads
//! destinations over up-ports.

use fabric::Guid;

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts};
use crate::tables::{NO_ROUTE, RoutingTables};

const INF: u32 = u32::MAX;

/// LIDs in the LFT write stage (two 64-entry LFT blocks).
const STAGE: usize = 128;
/// "Not staged: write the LFT directly" in `Ranked::dst`.
const DIRECT: u16 = u16::MAX;

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

/// An ISL seen from one end: peer switch (low 24 bits) and local port (high 8 bits),
/// packed so a switch's up list is 4 bytes an entry (switch counts stay far below 2^24:
/// a subnet has at most 49,151 LIDs).
#[derive(Clone, Copy, Debug)]
struct Hop(u32);

impl Hop {
    #[inline]
    fn new(peer: u32, port: u8) -> Hop {
        debug_assert!(peer < 1 << 24);
        Hop(peer | (port as u32) << 24)
    }
    #[inline]
    fn peer(self) -> u32 {
        self.0 & 0x00ff_ffff
    }
    #[inline]
    fn port(self) -> u8 {
        (self.0 >> 24) as u8
    }
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
    /// Switches with the same sequence of up (down) neighbours share a class: towards
    /// any d they get the same distance and their candidates sit at the same places in
    /// their up (down) lists, so both are worked out once per class and destination.
    ucls: Vec<u32>,
    dcls: Vec<u32>,
    /// Per up class: the destination pass its reach and candidates are for,
    /// the reach, and its candidates as positions `cpos[at..at + len]` in the up list.
    u_pass: Vec<u32>,
    u_reach: Vec<u32>,
    u_cpass: Vec<u32>,
    u_cand: Vec<(u32, u32)>,
    /// Per down class: the pass its candidates are for, and their positions.
    d_cpass: Vec<u32>,
    d_cand: Vec<(u32, u32)>,
    cpos: Vec<u16>,
    pass: u32,
    down: Vec<u32>,
    reach: Vec<u32>,
    queue: Vec<u32>,
    /// Routes (source end port → destination end LID) on each entry of `up` / `dn`
    /// so far: the route weights, kept beside the ISL lists the routes are chosen from.
    up_w: Vec<u32>,
    dn_w: Vec<u32>,
    /// Switches that reach d, farthest first.
    order: Vec<u32>,
    bucket: Vec<u32>,
    /// Routes towards each LID of the chunk entering each switch: `cnt[s * m + j]`
    /// (at most the number of end ports with a LID, < 49,152, so 16 bits suffice).
    cnt: Vec<u16>,
    /// Route weight per port slot, gathered from `up_w`/`dn_w` after a pass.
    weight: Vec<u32>,
    jobs: Vec<Job>,
    /// LFT writes for a window of [`STAGE`] LIDs, staged for every switch:
    /// `stage[s * STAGE + lid - stage_lo]`. Routing one destination switch writes a few
    /// bytes into every switch's LFT, each in a different cache line that is usually
    /// evicted before the next destination (whose LIDs are often next to these) comes;
    /// the stage keeps those bytes dense and writes each LFT line once per window.
    stage: Vec<u8>,
    stage_lo: u32,
    stage_dirty: u128,
    /// Per LID of the chunk: its offset in the stage, or [`DIRECT`].
    dst: Vec<u16>,
    /// Candidate weights of one switch (contiguous, for [`argmin`]).
    classes: std::collections::HashMap<Vec<u32>, u32>,
    seq: Vec<u32>,
    cw: Vec<u32>,
    /// d-mod-k candidate index per LID of the chunk, per (height, up-arity) met.
    memo_key: Vec<(u32, u32)>,
    memo: Vec<u16>,
    /// Per memo entry: the index every end-port LID of the chunk gets, when it is the
    /// same for all (above the leaves d-mod-k sends a whole leaf's CAs one way).
    memo_uni: Vec<Option<u16>>,
}

impl Ranked {
    /// Zero the route weights for a new pass.
    fn index_ports(&mut self) {
        self.up_w.clear();
        self.up_w.resize(self.up.len(), 0);
        self.dn_w.clear();
        self.dn_w.resize(self.dn.len(), 0);
    }

    /// The route weight of every port slot (ISL ports; 0 elsewhere) after a pass.
    fn gather_weights(&mut self, g: &SwitchGraph) {
        self.weight.clear();
        self.weight.resize(g.port_slots(), 0);
        for s in 0..g.len() {
            let b = g.port_base[s] as usize;
            for k in self.up_off[s] as usize..self.up_off[s + 1] as usize {
                self.weight[b + self.up[k].port() as usize] = self.up_w[k];
            }
            for k in self.dn_off[s] as usize..self.dn_off[s + 1] as usize {
                self.weight[b + self.dn[k].port() as usize] = self.dn_w[k];
            }
        }
    }

    /// The heaviest ISL port after a pass.
    fn max_isl_weight(&self) -> u32 {
        self.up_w.iter().chain(&self.dn_w).copied().max().unwrap_or(0)
    }

    /// An empty stage for a pass over `n` switches.
    fn stage_reset(&mut self, n: usize) {
        self.stage.clear();
        self.stage.resize(n * STAGE, NO_ROUTE);
        self.stage_lo = INF;
        self.stage_dirty = 0;
    }

    /// Write the staged LIDs into the LFT rows and empty the stage.
    fn stage_flush(&mut self, rows: &mut [Vec<u8>]) {
        let mut dirty = self.stage_dirty;
        while dirty != 0 {
            let a = dirty.trailing_zeros() as usize;
            let b = a + (dirty >> a).trailing_ones() as usize;
            let lo = self.stage_lo as usize;
            for (s, row) in rows.iter_mut().enumerate() {
                row[lo + a..lo + b].copy_from_slice(&self.stage[s * STAGE + a..s * STAGE + b]);
            }
            dirty &= if b == 128 { 0 } else { !0u128 << b };
        }
        if self.stage_dirty != 0 {
            self.stage.fill(NO_ROUTE);
        }
        self.stage_dirty = 0;
    }

    /// Place the chunk's LIDs: in the stage when they fall in its window, moving the
    /// window (after a flush) to a chunk of end-port LIDs that does not fit.
    fn stage_place(&mut self, rows: &mut [Vec<u8>], chunk: &[Job]) {
        let anchor = chunk.iter().find(|j| j.end).map(|j| j.lid);
        let inside = |lo: u32, lid: u32| lo != INF && lid >= lo && lid < lo + STAGE as u32;
        if let Some(a) = anchor
            && !inside(self.stage_lo, a)
        {
            self.stage_flush(rows);
            self.stage_lo = a & !63;
        }
        self.dst.clear();
        for j in chunk {
            if inside(self.stage_lo, j.lid) {
                let o = j.lid - self.stage_lo;
                self.stage_dirty |= 1u128 << o;
                self.dst.push(o as u16);
            } else {
                self.dst.push(DIRECT);
            }
        }
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
                let h = Hop::new(a.peer, a.port);
                if kp < ks {
                    self.up.push(h);
                } else if kp > ks {
                    self.dn.push(h);
                }
            }
            self.up_off.push(self.up.len() as u32);
            self.dn_off.push(self.dn.len() as u32);
        }
        let n = g.len();
        let (ucls, un) = self.classify(n, true);
        let (dcls, dn) = self.classify(n, false);
        (self.ucls, self.dcls) = (ucls, dcls);
        self.u_pass.clear();
        self.u_pass.resize(un, 0);
        self.u_reach.clear();
        self.u_reach.resize(un, INF);
        self.u_cpass.clear();
        self.u_cpass.resize(un, 0);
        self.u_cand.clear();
        self.u_cand.resize(un, (0, 0));
        self.d_cpass.clear();
        self.d_cpass.resize(dn, 0);
        self.d_cand.clear();
        self.d_cand.resize(dn, (0, 0));
        self.pass = 0;
    }

    /// Class of every switch by its sequence of up (or down) peers; returns the classes
    /// and their number.
    fn classify(&mut self, n: usize, up: bool) -> (Vec<u32>, usize) {
        self.classes.clear();
        let mut cls = Vec::with_capacity(n);
        for s in 0..n {
            let (off, list) = if up {
                (&self.up_off, &self.up)
            } else {
                (&self.dn_off, &self.dn)
            };
            self.seq.clear();
            self.seq
                .extend(list[off[s] as usize..off[s + 1] as usize].iter().map(|h| h.peer()));
            let next = self.classes.len() as u32;
            let c = match self.classes.get(&self.seq) {
                Some(&c) => c,
                None => {
                    self.classes.insert(self.seq.clone(), next);
                    next
                }
            };
            cls.push(c);
        }
        (cls, self.classes.len())
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
                let s = a.peer() as usize;
                if self.down[s] == INF {
                    self.down[s] = dx;
                    self.queue.push(a.peer());
                }
            }
        }
        self.reach.clear();
        self.reach.resize(n, INF);
        // A new pass: every class's reach and candidates are stale.
        self.pass = self.pass.wrapping_add(1);
        if self.pass == 0 {
            self.u_pass.fill(0);
            self.u_cpass.fill(0);
            self.d_cpass.fill(0);
            self.pass = 1;
        }
        let pass = self.pass;
        for &s in &self.by_key {
            let su = s as usize;
            if self.down[su] != INF {
                self.reach[su] = self.down[su];
                continue;
            }
            // The class's up neighbours all have smaller keys than its first member
            // met in key order, so their reach is final when it is worked out.
            let c = self.ucls[su] as usize;
            if self.u_pass[c] != pass {
                self.u_pass[c] = pass;
                let mut best = INF;
                for a in &self.up[self.up_off[su] as usize..self.up_off[su + 1] as usize] {
                    best = best.min(self.reach[a.peer() as usize]);
                }
                self.u_reach[c] = if best == INF { INF } else { best + 1 };
            }
            self.reach[su] = self.u_reach[c];
        }
        self.cpos.clear();
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
    fn fill(&mut self, g: &SwitchGraph, rows: &mut [Vec<u8>], d: u32, dm: Option<DModK<'_>>) {
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
            self.stage_place(rows, chunk);
            self.fill_chunk(g, rows, d, chunk, dm);
        }
        self.jobs = jobs;
    }

    fn fill_chunk(&mut self, g: &SwitchGraph, rows: &mut [Vec<u8>], d: u32, chunk: &[Job], dm: Option<DModK<'_>>) {
        let m = chunk.len();
        let Ranked {
            dn_off,
            dn,
            up_off,
            up,
            ucls,
            dcls,
            u_cpass,
            u_cand,
            d_cpass,
            d_cand,
            cpos,
            pass,
            down,
            reach,
            up_w,
            dn_w,
            order,
            cnt,
            cw,
            memo_key,
            memo,
            memo_uni,
            stage,
            dst,
            ..
        } = self;
        if cnt.len() < g.len() * m {
            cnt.resize(g.len() * m, 0);
        }
        let any_end = chunk.iter().any(|j| j.end);
        if any_end {
            for &s in order.iter() {
                let e = g.ends_at[s as usize] as u16;
                let row = &mut cnt[s as usize * m..(s as usize + 1) * m];
                for (c, j) in row.iter_mut().zip(chunk) {
                    *c = if j.end { e } else { 0 };
                }
            }
        }
        memo_key.clear();
        memo.clear();
        memo_uni.clear();
        let dst = &dst[..];
        for &s in order.iter() {
            let su = s as usize;
            let lft = &mut rows[su][..];
            let srow = &mut stage[su * STAGE..(su + 1) * STAGE];
            // Output port `p` for the chunk's LID number `j`.
            let mut put = |j: usize, lid: u32, p: u8| match dst[j] {
                DIRECT => lft[lid as usize] = p,
                o => srow[o as usize] = p,
            };
            if s == d {
                for (i, j) in chunk.iter().enumerate() {
                    put(i, j.lid, j.port);
                }
                continue;
            }
            // Candidates: positions in this switch's down (up) list, shared by its class.
            let goes_down = down[su] != INF;
            let (lo, hops, (at, nc)) = if goes_down {
                let lo = dn_off[su] as usize;
                let hops = &dn[lo..dn_off[su + 1] as usize];
                let c = dcls[su] as usize;
                if d_cpass[c] != *pass {
                    d_cpass[c] = *pass;
                    let want = down[su] - 1;
                    let at = cpos.len();
                    for (k, h) in hops.iter().enumerate() {
                        if down[h.peer() as usize] == want {
                            cpos.push(k as u16);
                        }
                    }
                    d_cand[c] = (at as u32, (cpos.len() - at) as u32);
                }
                (lo, hops, d_cand[c])
            } else {
                let lo = up_off[su] as usize;
                let hops = &up[lo..up_off[su + 1] as usize];
                let c = ucls[su] as usize;
                if u_cpass[c] != *pass {
                    u_cpass[c] = *pass;
                    let want = reach[su] - 1;
                    let at = cpos.len();
                    for (k, h) in hops.iter().enumerate() {
                        if reach[h.peer() as usize] == want {
                            cpos.push(k as u16);
                        }
                    }
                    u_cand[c] = (at as u32, (cpos.len() - at) as u32);
                }
                (lo, hops, u_cand[c])
            };
            let (at, nc) = (at as usize, nc as usize);
            if nc == 0 {
                continue;
            }
            let pos = &cpos[at..at + nc];
            // Route weights of this switch's candidate list (up or down entries).
            let w = if goes_down {
                &mut dn_w[lo..lo + hops.len()]
            } else {
                &mut up_w[lo..lo + hops.len()]
            };
            let row = su * m;
            if nc == 1 {
                let k = pos[0] as usize;
                let h = hops[k];
                for (i, j) in chunk.iter().enumerate() {
                    put(i, j.lid, h.port());
                }
                if any_end {
                    flow_all(cnt, m, su, h.peer() as usize, &mut w[k]);
                }
                continue;
            }
            match dm {
                Some(dm) if !goes_down => {
                    // d-mod-k: the index depends on the LID, the height and the arity.
                    let h = dm.height[su];
                    let mk = match memo_key.iter().position(|&k| k == (h, nc as u32)) {
                        Some(k) => k,
                        None => {
                            memo_key.push((h, nc as u32));
                            let dv = dm.div[h as usize];
                            let at = memo.len();
                            memo.extend(
                                chunk
                                    .iter()
                                    .map(|j| ((dm.dest_index[j.di as usize] / dv) % nc as u64) as u16),
                            );
                            let mut ends = chunk.iter().zip(&memo[at..]).filter(|(j, _)| j.end).map(|(_, &x)| x);
                            let first = ends.next();
                            memo_uni.push(first.filter(|&u| ends.all(|x| x == u)));
                            memo_key.len() - 1
                        }
                    };
                    let mat = mk * m;
                    if let Some(u) = memo_uni[mk] {
                        // Every end-port LID takes the same port: one row of route counts
                        // moves on at once.
                        let k = pos[u as usize] as usize;
                        let h = hops[k];
                        for (j, job) in chunk.iter().enumerate() {
                            let kj = if job.end {
                                k
                            } else {
                                pos[memo[mat + j] as usize] as usize
                            };
                            put(j, job.lid, hops[kj].port());
                        }
                        flow_all(cnt, m, su, h.peer() as usize, &mut w[k]);
                        continue;
                    }
                    for (j, job) in chunk.iter().enumerate() {
                        let k = pos[memo[mat + j] as usize] as usize;
                        let h = hops[k];
                        put(j, job.lid, h.port());
                        if job.end {
                            let c = cnt[row + j];
                            if c != 0 {
                                w[k] = w[k].saturating_add(c as u32);
                                cnt[h.peer() as usize * m + j] += c;
                            }
                        }
                    }
                }
                _ => {
                    // Lightest candidate: weights gathered, updated locally, written back.
                    cw.clear();
                    cw.extend(pos.iter().map(|&k| w[k as usize]));
                    for (j, job) in chunk.iter().enumerate() {
                        let i = argmin(cw);
                        let h = hops[pos[i] as usize];
                        put(j, job.lid, h.port());
                        if job.end {
                            let c = cnt[row + j];
                            if c != 0 {
                                cw[i] = cw[i].saturating_add(c as u32);
                                cnt[h.peer() as usize * m + j] += c;
                            }
                        }
                    }
                    for (i, &k) in pos.iter().enumerate() {
                        w[k as usize] = cw[i];
                    }
                }
            }
        }
    }
}

/// The packed ISL lists ([`Hop`]) number switches in 24 bits.
fn too_many_switches(g: &SwitchGraph, engine: &'static str) -> Result<(), RouteError> {
    if g.len() >= 1 << 24 {
        return Err(RouteError::Unsupported {
            engine,
            what: format!("{} switches (at most {} are supported)", g.len(), (1u32 << 24) - 1),
        });
    }
    Ok(())
}

/// Move all of switch `s`'s route counts (the chunk's `m` LIDs) on to switch `nx` and
/// add them to the weight `w` of the port between them. Non-end LIDs count 0.
#[inline]
fn flow_all(cnt: &mut [u16], m: usize, s: usize, nx: usize, w: &mut u32) {
    debug_assert_ne!(s, nx);
    let (src, dst) = if s < nx {
        let (a, b) = cnt.split_at_mut(nx * m);
        (&a[s * m..(s + 1) * m], &mut b[..m])
    } else {
        let (a, b) = cnt.split_at_mut(s * m);
        (&b[..m], &mut a[nx * m..(nx + 1) * m])
    };
    let mut sum = 0u64;
    for (d, &c) in dst.iter_mut().zip(src) {
        *d += c;
        sum += c as u64;
    }
    *w = (*w as u64 + sum).min(u32::MAX as u64) as u32;
}

/// Move the switches' LFTs out of `t` into a dense vector indexed by switch (the
/// engines write one switch row after another; the rows' headers stay in cache).
fn take_rows(g: &SwitchGraph, t: &mut RoutingTables) -> Vec<Vec<u8>> {
    g.sw_node
        .iter()
        .map(|n| std::mem::take(&mut t.lft[n.idx()].ports))
        .collect()
}

/// Put the rows of [`take_rows`] back.
fn put_rows(g: &SwitchGraph, t: &mut RoutingTables, rows: Vec<Vec<u8>>) {
    for (n, r) in g.sw_node.iter().zip(rows) {
        t.lft[n.idx()].ports = r;
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
        too_many_switches(g, "updn")?;
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
        self.r.index_ports();
        self.r.stage_reset(g.len());
        let mut rows = take_rows(g, t);
        let r = &mut self.r;
        let routed = (0..g.len() as u32).try_for_each(|d| {
            let dests = g.dests_at(d);
            if dests.is_empty() {
                return Ok(());
            }
            r.distances(d);
            // A switch's own LID is management traffic: routed on the lightest legal
            // port but not counted in the weights, and no source needs to reach it.
            if dests.iter().any(|x| x.is_end) {
                r.check_sources(g, d, "updn")?;
            }
            r.fill(g, &mut rows, d, None);
            Ok(())
        });
        self.r.stage_flush(&mut rows);
        put_rows(g, t, rows);
        routed
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
        self.r.index_ports();
        self.r.stage_reset(g.len());
        let mut rows = take_rows(g, t);
        let dm = DModK {
            height: &self.height,
            div: &self.div,
            dest_index: &self.dest_index,
        };
        let r = &mut self.r;
        let routed = (0..g.len() as u32).try_for_each(|d| {
            let dests = g.dests_at(d);
            if dests.is_empty() {
                return Ok(());
            }
            r.distances(d);
            if dests.iter().any(|x| x.is_end) {
                r.check_sources(g, d, "ftree")?;
            }
            r.fill(g, &mut rows, d, dmodk.then_some(dm));
            Ok(())
        });
        self.r.stage_flush(&mut rows);
        put_rows(g, t, rows);
        routed?;
        self.r.gather_weights(g);
        Ok(self.r.max_isl_weight())
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
        too_many_switches(g, "ftree")?;
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
