//! MinHop: shortest paths with per-port LID-count equalisation (OpenSM's default
//! engine, `doc/current-routing.txt` "basic routing algorithm", reference §1.1).
//!
//! Hop counts are computed once per destination *switch* (every LID hanging off it
//! shares them); each switch then gives each destination LID the min-hop port with the
//! fewest LIDs so far. Switches are the outer loop so one LFT is written at a time.

use super::{RouteError, RouteOptions, RoutingEngine, SwitchGraph, alloc_lfts};
use crate::tables::RoutingTables;

/// The minhop engine, with its reusable scratch buffers.
#[derive(Debug, Default)]
pub struct MinHop {
    dist: Vec<u32>,
    queue: Vec<u32>,
    load: Vec<u32>,
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
            let dests = g.dests_at(d);
            let m: u32 = dests.iter().map(|de| de.count as u32).sum();
            // One pass per switch: collect its min-hop ports towards d (on the stack)
            // and hand d's LIDs to them.
            let mut c = [0u8; 256];
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
                let ds = self.dist[s as usize];
                if ds == u32::MAX {
                    continue; // unreachable from s: validation reports the pairs
                }
                let base = g.port_base[s as usize] as usize;
                if m == 1 {
                    // A single LID (a switch's own): the least-loaded min-hop port.
                    let mut best = 0u8;
                    let mut bl = u32::MAX;
                    for a in g.isls(s) {
                        if self.dist[a.peer as usize] == ds - 1 {
                            let l = self.load[base + a.port as usize];
                            if l < bl {
                                bl = l;
                                best = a.port;
                            }
                        }
                    }
                    self.load[base + best as usize] += 1;
                    lft[dests[0].base as usize] = best;
                    continue;
                }
                let mut k = 0;
                for a in g.isls(s) {
                    if self.dist[a.peer as usize] == ds - 1 && k < c.len() {
                        c[k] = a.port;
                        k += 1;
                    }
                }
                let c = &c[..k];
                if c.len() == 1 {
                    let i = base + c[0] as usize;
                    for de in dests {
                        for k in 0..de.count {
                            lft[(de.base + k) as usize] = c[0];
                        }
                    }
                    self.load[i] += m;
                    continue;
                }
                // Greedy least-loaded choice (ties to the earliest candidate) for all
                // of d's LIDs at once. Candidate i is picked at load levels l_i, l_i+1,
                // …, so the greedy sequence is: for each level v from the lowest load,
                // the candidates whose load is v, in candidate order. O(m + k·spread)
                // instead of O(m·k).
                let mut v = c.iter().map(|&p| self.load[base + p as usize]).min().unwrap_or(0);
                let mut di = 0usize;
                let mut dk = 0u16;
                let mut left = m;
                while left > 0 {
                    for &p in c {
                        if left == 0 {
                            break;
                        }
                        let l = &mut self.load[base + p as usize];
                        if *l == v {
                            *l += 1;
                            lft[(dests[di].base + dk) as usize] = p;
                            left -= 1;
                            dk += 1;
                            if dk == dests[di].count {
                                dk = 0;
                                di += 1;
                            }
                        }
                    }
                    v += 1;
                }
            }
        }
        Ok(())
    }
}
