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
//! 2. Virtual-lane layers: every destination LID starts in layer 0. While a layer's
//!    channel dependency graph has a cycle, the cycle edge used by the fewest
//!    destinations ("weakest", as `get_weakest_link_in_cycle` in OpenSM) is broken by
//!    moving those destinations to the next layer. More layers than data VLs is an
//!    error naming both numbers.
//! 3. Layer = SL of every path to that destination; SL2VL maps SL i to VL i on every
//!    switch port pair, so each layer travels on its own VL.
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

    /// Add the dependencies of `lid` (owned by switch `d`) to the bitset graph: only
    /// channels on routes from switches with end ports (CA-to-CA traffic, as ibdm
    /// checks), walked once each thanks to the visit stamps.
    fn add_edges(&mut self, g: &SwitchGraph, t: &RoutingTables, lid: usize, d: u32) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.seen.iter_mut().for_each(|x| *x = 0);
            self.epoch = 1;
        }
        for s0 in 0..g.len() as u32 {
            if g.ends_at[s0 as usize] == 0 || s0 == d {
                continue;
            }
            let mut s = s0;
            let mut prev = usize::MAX;
            let mut hops = 0;
            loop {
                let p = t.lft[g.sw_node[s as usize].idx()].ports[lid];
                if p == NO_ROUTE {
                    break;
                }
                let a = g.pidx(s, p);
                if prev != usize::MAX {
                    self.bits[prev * self.words + (p as usize >> 6)] |= 1u64 << (p & 63);
                }
                if self.seen[s as usize] == self.epoch || hops > g.len() {
                    break;
                }
                self.seen[s as usize] = self.epoch;
                hops += 1;
                let nx = self.peer_sw[a];
                if nx == NONE {
                    break;
                }
                if nx == d {
                    // d delivers to the end port; that channel has no successor.
                    break;
                }
                prev = a;
                s = nx;
            }
        }
    }

    fn build_layer(&mut self, g: &SwitchGraph, t: &RoutingTables, layer: u8) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        for i in 0..self.lids.len() {
            if self.layer[i] == layer {
                let (lid, d) = self.lids[i];
                self.add_edges(g, t, lid as usize, d);
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
        self.layer.clear();
        self.layer.resize(self.lids.len(), 0);
        let max_slots = g.slots.iter().copied().max().unwrap_or(1) as usize;
        self.words = max_slots.div_ceil(64);
        self.bits.clear();
        self.bits.resize(g.port_slots() * self.words, 0);
        self.seen.clear();
        self.seen.resize(g.len(), 0);
        self.epoch = 0;
        let mut layer = 0u8;
        loop {
            self.build_layer(g, t, layer);
            while let Some(cycle) = self.find_cycle(g) {
                // Weakest edge of the cycle: used by the fewest destinations of this layer.
                let mut best: Option<(usize, usize)> = None;
                for i in 0..cycle.len() {
                    let a = cycle[i];
                    let b = cycle[(i + 1) % cycle.len()];
                    let (sa, pa) = self.slot_owner(g, a);
                    let (sb, pb) = self.slot_owner(g, b);
                    let la = &t.lft[g.sw_node[sa as usize].idx()].ports;
                    let lb = &t.lft[g.sw_node[sb as usize].idx()].ports;
                    let users = (0..self.lids.len())
                        .filter(|&k| {
                            let lid = self.lids[k].0 as usize;
                            self.layer[k] == layer && la[lid] == pa && lb[lid] == pb && self.lids[k].1 != sb
                        })
                        .count();
                    if users > 0 && best.is_none_or(|(_, u)| users < u) {
                        best = Some((i, users));
                    }
                }
                let Some((i, _)) = best else { break };
                if layer + 1 >= max_vls {
                    return Err(RouteError::NotEnoughVls { engine: "dfsssp", needed: layer + 2, available: max_vls });
                }
                let a = cycle[i];
                let b = cycle[(i + 1) % cycle.len()];
                let (sa, pa) = self.slot_owner(g, a);
                let (sb, pb) = self.slot_owner(g, b);
                for k in 0..self.lids.len() {
                    let lid = self.lids[k].0 as usize;
                    let la = t.lft[g.sw_node[sa as usize].idx()].ports[lid];
                    let lb = t.lft[g.sw_node[sb as usize].idx()].ports[lid];
                    if self.layer[k] == layer && la == pa && lb == pb && self.lids[k].1 != sb {
                        self.layer[k] = layer + 1;
                    }
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
            let mut row = vec![0u8; n];
            for k in 0..n {
                row[k] = self.layer[k];
            }
            let mut sl = Vec::with_capacity(n * n);
            for _ in 0..n {
                sl.extend_from_slice(&row);
            }
            t.path_sl = Some(PathSl { lids: self.lids.iter().map(|&(l, _)| Lid(l)).collect(), sl });
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
