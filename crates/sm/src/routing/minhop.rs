//! MinHop: shortest paths with per-port LID-count equalisation (OpenSM's default
//! engine, `doc/current-routing.txt` "basic routing algorithm", reference §1.1).
//!
//! Hop counts are computed once per destination *switch* (every LID hanging off it
//! shares them); each switch then gives each destination LID the min-hop port with the
//! fewest LIDs so far. Switches are the outer loop so one LFT is written at a time.

use std::cmp::Reverse;

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts};
use crate::tables::RoutingTables;

/// The minhop engine, with its reusable scratch buffers.
#[derive(Debug, Default)]
pub struct MinHop {
    dist: Vec<u32>,
    queue: Vec<u32>,
    load: Vec<u32>,
    cand_off: Vec<u32>,
    cands: Vec<u8>,
    heap: Vec<Reverse<(u32, u16)>>,
}

impl RoutingEngine for MinHop {
    fn name(&self) -> &'static str {
        "minhop"
    }

    fn route(&mut self, g: &SwitchGraph, _opts: &RouteOptions, t: &mut RoutingTables) -> Result<(), RouteError> {
        alloc_lfts(g, t);
        self.load.clear();
        self.load.resize(g.port_slots(), 0);
        let ns = g.len() as u32;
        for d in 0..ns {
            if g.dests_at(d).is_empty() {
                continue;
            }
            g.bfs(&[d], &mut self.dist, &mut self.queue);
            // Min-hop candidate ports of every switch towards d.
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
            let dests = g.dests_at(d);
            for s in 0..ns {
                let node = g.sw_node[s as usize];
                let lft = &mut t.lft[node.idx()].ports;
                if s == d {
                    for de in dests {
                        for k in 0..de.count {
                            lft[(de.base + k) as usize] = de.port;
                        }
                    }
                    continue;
                }
                let c = &self.cands[self.cand_off[s as usize] as usize..self.cand_off[s as usize + 1] as usize];
                if c.is_empty() {
                    continue; // unreachable from s: validation reports the pairs
                }
                let base = g.port_base[s as usize] as usize;
                let m: u32 = dests.iter().map(|de| de.count as u32).sum();
                if m == 1 && c.len() > 1 {
                    let i = super::least_loaded(c, &self.load, base);
                    self.load[base + c[i] as usize] += 1;
                    lft[dests[0].base as usize] = c[i];
                    continue;
                }
                if c.len() == 1 {
                    let i = base + c[0] as usize;
                    for de in dests {
                        for k in 0..de.count {
                            lft[(de.base + k) as usize] = c[0];
                        }
                        self.load[i] += de.count as u32;
                    }
                    continue;
                }
                // Greedy least-loaded choice (ties to the earliest candidate) for all
                // of d's LIDs at once: a min-heap on (load, candidate index) gives the
                // same sequence as rescanning the candidates for every LID.
                self.heap.clear();
                self.heap.extend(c.iter().enumerate().map(|(i, &p)| Reverse((self.load[base + p as usize], i as u16))));
                let mut heap = std::collections::BinaryHeap::from(std::mem::take(&mut self.heap));
                for de in dests {
                    for k in 0..de.count {
                        let mut top = heap.peek_mut().expect("candidates are not empty");
                        let Reverse((l, i)) = *top;
                        lft[(de.base + k) as usize] = c[i as usize];
                        *top = Reverse((l + 1, i));
                    }
                }
                for Reverse((l, i)) in heap.iter() {
                    self.load[base + c[*i as usize] as usize] = *l;
                }
                self.heap = heap.into_vec();
            }
        }
        Ok(())
    }
}
