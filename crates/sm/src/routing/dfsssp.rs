//! A deadlock-free engine of the DFSSSP class (Domke, Hoefler, Nagel, "Deadlock-Free
//! Oblivious Routing for Arbitrary Topologies", IPDPS 2011; OpenSM `osm_ucast_dfsssp.c`,
//! reference §1.2).
//!
//! 1. Balanced shortest paths: destinations are routed one LID at a time; each switch
//!    takes, among its min-hop ports, the one whose channel already carries the fewest
//!    source→destination routes (a global weight, updated after every LID by pushing
//!    the number of sources through the new routing tree). Unlike SSSP's weighted
//!    Dijkstra this stays on minimal paths, which keeps the work per LID at
//!    O(switches + ISL ports).
//! 2. Virtual-lane layers: a path is (source switch, destination LID); every path
//!    starts in layer 0. While a layer's channel dependency graph has a cycle, the
//!    cycle edge used by the fewest paths ("weakest", as `get_weakest_link_in_cycle`
//!    in OpenSM) is broken by moving those paths to the next layer. More layers than
//!    data VLs is an error naming both numbers.
//! 3. Layer = the path's SL (`RoutingTables::path_sl`, by source and destination
//!    LID); SL2VL maps SL i to VL i on every switch port pair, so each layer travels
//!    on its own VL.
//!
//! The dependency graph is held as a bitset per channel over the output ports of the
//! next switch (a channel's successor always sits on its peer switch), so building it
//! needs no sorting or hashing.

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts};
use crate::tables::{NO_ROUTE, PathSl, RoutingTables, Sl2Vl};
use fabric::Lid;

const NONE: u32 = u32::MAX;

/// The DFSSSP-class engine with its scratch buffers.
#[derive(Debug, Default)]
pub struct Dfsssp {
    dist: Vec<u32>,
    queue: Vec<u32>,
    weight: Vec<u32>,
    cand_off: Vec<u32>,
    cands: Vec<u8>,
    cnt: Vec<u32>,
    /// Per switch port slot: the peer switch (or NONE).
    peer_sw: Vec<u32>,
    peer_port: Vec<u8>,
    /// Destination LIDs, ascending, with the switch owning them.
    lids: Vec<(u16, u32)>,
    layer: Vec<u8>,
    bits: Vec<u64>,
    words: usize,
    color: Vec<u8>,
    stack: Vec<(u32, u32)>,
    seen: Vec<u32>,
    epoch: u32,
    /// Source switches (those with end ports); paths are (source switch, LID).
    srcs: Vec<u32>,
    lid_src: Vec<u32>,
    /// Layers used by the last run.
    pub layers: u8,
}

impl Dfsssp {
    fn index_ports(&mut self, g: &SwitchGraph) {
        self.peer_sw.clear();
        self.peer_sw.resize(g.port_slots(), NONE);
        self.peer_port.clear();
        self.peer_port.resize(g.port_slots(), 0);
        for s in 0..g.len() as u32 {
            for a in g.isls(s) {
                let i = g.pidx(s, a.port);
                self.peer_sw[i] = a.peer;
                self.peer_port[i] = a.peer_port;
            }
        }
    }

    fn balanced_paths(&mut self, g: &SwitchGraph, t: &mut RoutingTables) {
        let ns = g.len() as u32;
        self.weight.clear();
        self.weight.resize(g.port_slots(), 0);
        self.cnt.clear();
        self.cnt.resize(g.len(), 0);
        for d in 0..ns {
            let dests = g.dests_at(d);
            if dests.is_empty() {
                continue;
            }
            g.bfs(&[d], &mut self.dist, &mut self.queue);
            self.cand_off.clear();
            self.cands.clear();
            self.cand_off.push(0);
            for s in 0..ns {
                let ds = self.dist[s as usize];
                if ds != u32::MAX && ds > 0 {
                    for a in g.isls(s) {
                        if self.dist[a.peer as usize] == ds - 1 {
                            self.cands.push(a.port);
                        }
                    }
                }
                self.cand_off.push(self.cands.len() as u32);
            }
            for de in dests {
                for k in 0..de.count {
                    let lid = (de.base + k) as usize;
                    for &s in &self.queue {
                        let lft = &mut t.lft[g.sw_node[s as usize].idx()].ports;
                        if s == d {
                            lft[lid] = de.port;
                            continue;
                        }
                        let c = &self.cands[self.cand_off[s as usize] as usize..self.cand_off[s as usize + 1] as usize];
                        let base = g.port_base[s as usize] as usize;
                        let mut best = c[0];
                        let mut bw = u32::MAX;
                        for &p in c {
                            let w = self.weight[base + p as usize];
                            if w < bw {
                                bw = w;
                                best = p;
                            }
                        }
                        lft[lid] = best;
                    }
                    if !de.is_end {
                        continue; // switch LIDs carry management traffic only
                    }
                    // Push the sources of every switch down the new tree, farthest first.
                    for &s in &self.queue {
                        self.cnt[s as usize] = g.ends_at[s as usize];
                    }
                    for &s in self.queue.iter().rev() {
                        if s == d {
                            continue;
                        }
                        let c = self.cnt[s as usize];
                        if c == 0 {
                            continue;
                        }
                        let p = t.lft[g.sw_node[s as usize].idx()].ports[lid];
                        let i = g.pidx(s, p);
                        self.weight[i] = self.weight[i].saturating_add(c);
                        let nx = self.peer_sw[i];
                        if nx != NONE {
                            self.cnt[nx as usize] += c;
                        }
                    }
                }
            }
        }
    }

    /// Build the dependency bitsets of one layer: every path (source switch, LID) in
    /// the layer adds an edge per consecutive pair of channels. Paths to one LID share
    /// suffixes, so a walk stops at a switch already walked for that LID in this layer.
    fn build_layer(&mut self, g: &SwitchGraph, t: &RoutingTables, layer: u8) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        let nl = self.lids.len();
        for k in 0..nl {
            let (lid, d) = self.lids[k];
            let lid = lid as usize;
            self.epoch = self.epoch.wrapping_add(1);
            if self.epoch == 0 {
                self.seen.iter_mut().for_each(|x| *x = 0);
                self.epoch = 1;
            }
            for li in 0..self.srcs.len() {
                if self.layer[li * nl + k] != layer {
                    continue;
                }
                let mut s = self.srcs[li];
                let mut prev = usize::MAX;
                let mut hops = 0;
                while s != d && hops <= g.len() {
                    let p = t.lft[g.sw_node[s as usize].idx()].ports[lid];
                    if p == NO_ROUTE {
                        break;
                    }
                    if prev != usize::MAX {
                        self.bits[prev * self.words + (p as usize >> 6)] |= 1u64 << (p & 63);
                    }
                    if self.seen[s as usize] == self.epoch {
                        break;
                    }
                    self.seen[s as usize] = self.epoch;
                    hops += 1;
                    let a = g.pidx(s, p);
                    let nx = self.peer_sw[a];
                    if nx == NONE || nx == d {
                        break; // d delivers to the end port: no successor channel
                    }
                    prev = a;
                    s = nx;
                }
            }
        }
    }

    /// Paths (index `li * nl + k`) of `layer` that use the channel pair a -> b.
    fn users(&self, g: &SwitchGraph, t: &RoutingTables, layer: u8, a: usize, b: usize, out: &mut Vec<usize>) {
        out.clear();
        let (sa, pa) = self.slot_owner(g, a);
        let (sb, pb) = self.slot_owner(g, b);
        let nl = self.lids.len();
        let la = &t.lft[g.sw_node[sa as usize].idx()].ports;
        let lb = &t.lft[g.sw_node[sb as usize].idx()].ports;
        for k in 0..nl {
            let (lid, d) = self.lids[k];
            let lid = lid as usize;
            if la[lid] != pa || lb[lid] != pb || d == sb {
                continue;
            }
            for li in 0..self.srcs.len() {
                if self.layer[li * nl + k] != layer {
                    continue;
                }
                // Does the path from srcs[li] to lid pass sa?
                let mut s = self.srcs[li];
                let mut hops = 0;
                while s != d && hops <= g.len() {
                    if s == sa {
                        out.push(li * nl + k);
                        break;
                    }
                    let p = t.lft[g.sw_node[s as usize].idx()].ports[lid];
                    if p == NO_ROUTE {
                        break;
                    }
                    let nx = self.peer_sw[g.pidx(s, p)];
                    if nx == NONE {
                        break;
                    }
                    s = nx;
                    hops += 1;
                }
            }
        }
    }

    /// One cycle of the current bitset graph as channel (port slot) ids, or None.
    fn find_cycle(&mut self, g: &SwitchGraph) -> Option<Vec<usize>> {
        let n = g.port_slots();
        self.color.clear();
        self.color.resize(n, 0);
        let w = self.words;
        for start in 0..n {
            if self.color[start] != 0 || self.bits[start * w..(start + 1) * w].iter().all(|&x| x == 0) {
                continue;
            }
            self.stack.clear();
            self.stack.push((start as u32, 0));
            self.color[start] = 1;
            while let Some(&mut (v, ref mut pos)) = self.stack.last_mut() {
                let vu = v as usize;
                // Next set bit at or after *pos.
                let mut next = None;
                let mut b = *pos as usize;
                while b < w * 64 {
                    let word = self.bits[vu * w + (b >> 6)] >> (b & 63);
                    if word == 0 {
                        b = (b | 63) + 1;
                        continue;
                    }
                    b += word.trailing_zeros() as usize;
                    next = Some(b);
                    break;
                }
                match next {
                    Some(q) => {
                        *pos = q as u32 + 1;
                        let nx = self.peer_sw[vu];
                        let tgt = g.pidx(nx, q as u8);
                        match self.color[tgt] {
                            0 => {
                                self.color[tgt] = 1;
                                self.stack.push((tgt as u32, 0));
                            }
                            1 => {
                                let from = self.stack.iter().position(|&(x, _)| x as usize == tgt).unwrap_or(0);
                                return Some(self.stack[from..].iter().map(|&(x, _)| x as usize).collect());
                            }
                            _ => {}
                        }
                    }
                    None => {
                        self.color[vu] = 2;
                        self.stack.pop();
                    }
                }
            }
        }
        None
    }
}

impl RoutingEngine for Dfsssp {
    fn name(&self) -> &'static str {
        "dfsssp"
    }

    fn route(&mut self, g: &SwitchGraph, opts: &RouteOptions, t: &mut RoutingTables) -> Result<(), RouteError> {
        let max_vls = opts.max_vls.clamp(1, 15);
        alloc_lfts(g, t);
        self.index_ports(g);
        self.balanced_paths(g, t);
        self.lids.clear();
        for d in &g.dests {
            for k in 0..d.count {
                self.lids.push((d.base + k, d.sw));
            }
        }
        self.lids.sort_unstable();
        self.srcs.clear();
        self.srcs.extend(g.leaves());
        let mut src_index = vec![NONE; g.len()];
        for (i, &s) in self.srcs.iter().enumerate() {
            src_index[s as usize] = i as u32;
        }
        // The source switch of each LID's owner (for path SLs).
        self.lid_src.clear();
        self.lid_src
            .extend(self.lids.iter().map(|&(_, sw)| src_index[sw as usize]));
        self.layer.clear();
        self.layer.resize(self.srcs.len() * self.lids.len(), 0);
        let max_slots = g.slots.iter().copied().max().unwrap_or(1) as usize;
        self.words = max_slots.div_ceil(64);
        self.bits.clear();
        self.bits.resize(g.port_slots() * self.words, 0);
        self.seen.clear();
        self.seen.resize(g.len(), 0);
        self.epoch = 0;
        let mut layer = 0u8;
        let mut users = Vec::new();
        let mut best_users = Vec::new();
        loop {
            self.build_layer(g, t, layer);
            while let Some(cycle) = self.find_cycle(g) {
                // Weakest edge of the cycle: the one the fewest paths of this layer use.
                best_users.clear();
                let mut found = false;
                for i in 0..cycle.len() {
                    self.users(g, t, layer, cycle[i], cycle[(i + 1) % cycle.len()], &mut users);
                    if !users.is_empty() && (!found || users.len() < best_users.len()) {
                        std::mem::swap(&mut users, &mut best_users);
                        found = true;
                    }
                }
                if !found {
                    break;
                }
                if layer + 1 >= max_vls {
                    return Err(RouteError::NotEnoughVls {
                        engine: "dfsssp",
                        needed: layer + 2,
                        available: max_vls,
                    });
                }
                for &u in &best_users {
                    self.layer[u] = layer + 1;
                }
                self.build_layer(g, t, layer);
            }
            if !self.layer.contains(&(layer + 1)) {
                break;
            }
            layer += 1;
        }
        self.layers = layer + 1;
        t.vls_used = self.layers;
        if self.layers > 1 {
            let n = self.lids.len();
            if n.checked_mul(n).is_none_or(|x| x > 1 << 28) {
                return Err(RouteError::Unsupported {
                    engine: "dfsssp",
                    what: format!("{n} LIDs need a {n}x{n} path-SL table, too large"),
                });
            }
            // Source LID -> its source switch's index in `srcs` (switch LIDs of
            // switches without end ports use SL 0: management traffic).
            let nl = n;
            let mut sl = vec![0u8; n * n];
            for (a_idx, &(_, owner_sw)) in self.lids.iter().enumerate() {
                let _ = owner_sw;
                let src_sw = self.lid_src[a_idx];
                if src_sw == NONE {
                    continue;
                }
                let li = src_sw as usize;
                sl[a_idx * n..(a_idx + 1) * n].copy_from_slice(&self.layer[li * nl..(li + 1) * nl]);
            }
            t.path_sl = Some(PathSl {
                lids: self.lids.iter().map(|&(l, _)| Lid(l)).collect(),
                sl,
            });
            let mut ident: Sl2Vl = [0; 16];
            for (i, v) in ident.iter_mut().enumerate() {
                *v = (i % self.layers as usize) as u8;
            }
            let mut sl2vl = vec![Vec::new(); t.lft.len()];
            for (s, &node) in g.sw_node.iter().enumerate() {
                let k = g.slots[s] as usize;
                sl2vl[node.idx()] = vec![vec![ident; k]; k];
            }
            t.sl2vl = Some(sl2vl);
        }
        Ok(())
    }
}

impl Dfsssp {
    fn slot_owner(&self, g: &SwitchGraph, slot: usize) -> (u32, u8) {
        let s = g.port_base.partition_point(|&b| b as usize <= slot) - 1;
        (s as u32, (slot - g.port_base[s] as usize) as u8)
    }
}
