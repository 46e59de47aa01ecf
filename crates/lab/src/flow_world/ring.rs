//! Ring collectives (ring all-reduce, all-gather, reduce-scatter) at flow level
//! without their per-chunk graph.
//!
//! The packet worlds run a ring as `S` steps per channel: at step `s` every ring
//! position `p` sends one chunk to `p + 1` once the chunk position `p − 1` sent it
//! at step `s − 1` has arrived, and a position's sends queue on its link in step
//! order ([`crate::collective::Schedule`]). At 1,024 GPUs that is 16.7 million
//! transfers per collective; here a channel's ring is one flow instead:
//!
//! - **Bandwidth.** Every network edge of a ring carries the same `S` chunks, and
//!   in steady state no edge can run ahead of the slowest (each step waits for
//!   the previous one upstream). So a ring is one max-min flow whose path is the
//!   union of its edges' paths, each link counted once per edge that crosses it,
//!   bounded by its share of NVLink (a GPU forwards `g − 1` channels' chunks over
//!   its NVLink, one per channel in which its ring successor is on its own
//!   server). Rings that share a spine share it fairly, and a ring that
//!   finishes frees its links for the others: the flow engine's own max-min
//!   with incremental re-solves. `T_bw` is when the ring's `S · chunk` bytes
//!   drain; `a = T_bw / S` is then one chunk's time on its network edges.
//! - **Latency.** With constant per-edge chunk times, the last delivery of the
//!   per-chunk schedule is the longest path through the (position, step) grid,
//!   where staying at a position costs its chunk time and moving to the
//!   predecessor costs the predecessor's chunk time plus its latency. A path
//!   that stays at a network edge costs `S · a + L`; one that moves every step
//!   costs the sum of `chunk time + latency` over the `S` positions it visits
//!   (the ring wraps, so `S = 2(n − 1)` visits most positions twice). In
//!   between, a path moves through a run of positions and stays the rest of
//!   its steps at a network edge among them: `S · a` plus the run's sum of
//!   `cost − a`, the best run found by a sliding window over the cycle. The
//!   time is the largest of these.
//!
//! docs/VALIDATION.md §9 measures this model against the per-chunk flow run and
//! the packet level.

use fabric::NodeId;
use flow::path::Ports;
use flow::{FlowSim, Step};

use super::FlowWorld;
use crate::collective::CollectiveSpec;
use crate::runner::{NetCounters, RunError, ScheduleRun};

/// Run the ring collective `spec` (a ring kind, on at least two servers) on `w`.
pub(super) fn run(
    w: &FlowWorld<'_>,
    spec: &CollectiveSpec,
    queued: &mut Vec<fabric::Endpoint>,
) -> Result<(ScheduleRun, NetCounters), RunError> {
    let (steps, chunk) = spec
        .ring_steps()
        .expect("run only for ring collectives, which have steps");
    let (nodes, g) = (spec.nodes, spec.gpus);
    let n = spec.ranks();
    let f = w.fabric;
    let mut sim = FlowSim::new();
    let ports = Ports::build(f, &mut sim);
    let nvl_bpps = w.nvl.bytes_per_s / 1e12;
    // a GPU forwards g − 1 channels' chunks over its NVLink at every step
    let bound = if g > 1 {
        nvl_bpps / f64::from(g - 1)
    } else {
        f64::INFINITY
    };
    // the network edges' latencies per channel, in ring order (node i → i + 1)
    let mut latency: Vec<Vec<u64>> = Vec::with_capacity(g as usize);
    // ECMP: connections are numbered in the order the schedule first names
    // them (channel by channel, node by node), as the per-chunk run opens them,
    // so the hash picks the same paths
    let mut k = 0u32;
    for c in 0..g {
        let mut uses = Vec::new();
        let mut lat = Vec::with_capacity(nodes as usize);
        for node in 0..nodes {
            let a = nic(w, node, c)?;
            let b = nic(w, (node + 1) % nodes, c)?;
            let (data, ack) = route(w, a, b, k)?;
            k += 1;
            // the packet worlds send it chunk by chunk
            let (u, l) = flow::path::costs_for(f, &ports, &w.wire, &data, &ack, chunk);
            uses.extend(u);
            lat.push(l);
        }
        let conn = sim.open(uses, 0, bound).map_err(RunError::Flow)?;
        sim.post(conn, steps * chunk, u64::from(c)).map_err(RunError::Flow)?;
        latency.push(lat);
    }
    let mut drained = vec![0u64; g as usize];
    loop {
        match sim.advance(u64::MAX).map_err(RunError::Flow)? {
            Step::Delivered(d) => {
                for x in d {
                    drained[x.tag as usize] = x.done_ps;
                }
            }
            Step::Idle => break,
            Step::Reached => {}
        }
    }
    sim.check().map_err(RunError::Flow)?;
    queued.extend(super::queued_ports(f, &ports, &sim));
    let nvl_ps = (chunk as f64 / nvl_bpps).round() as u64;
    let mut time = 0u64;
    for (c, lat) in latency.iter().enumerate() {
        let t_bw = drained[c];
        let a = t_bw as f64 / steps as f64;
        let stay = t_bw + lat.iter().copied().max().unwrap_or(0);
        // positions in ring order: g − 1 NVLink hops inside server i, then its
        // network edge; the path visiting the S positions that end at p
        let cost: Vec<f64> = lat
            .iter()
            .flat_map(|&l| {
                std::iter::repeat_n((nvl_ps + w.nvl.latency_ps) as f64, g as usize - 1)
                    .chain(std::iter::once(a + l as f64))
            })
            .collect();
        debug_assert_eq!(cost.len() as u64, n);
        let moved = longest_window(&cost, steps);
        let gain: Vec<f64> = cost.iter().map(|x| x - a).collect();
        let mixed = t_bw as f64 + best_walk(&gain, steps);
        time = time.max(stay.max(moved.max(mixed).round() as u64));
    }
    let c = sim.counters();
    Ok((
        ScheduleRun {
            time_ps: time,
            probe_latency_ps: Vec::new(),
            max_nic_bytes: steps * chunk,
        },
        NetCounters {
            delivered: c.bytes_delivered.div_ceil(u64::from(w.wire.mtu.max(1))),
            events: c.events,
            sim_us: time as f64 / 1e6,
            ..NetCounters::default()
        },
    ))
}

/// NIC `rail` of server `node`.
pub(super) fn nic(w: &FlowWorld<'_>, node: u32, rail: u32) -> Result<NodeId, RunError> {
    w.nics
        .nic
        .get(node as usize)
        .and_then(|r| r.get(rail as usize))
        .copied()
        .ok_or(RunError::Topology(crate::runner::TopologyError::MissingNic {
            server: node,
            rail,
        }))
}

/// The data and ACK paths of connection number `k` from `a` to `b`.
pub(super) fn route(
    w: &FlowWorld<'_>,
    a: NodeId,
    b: NodeId,
    k: u32,
) -> Result<(Vec<fabric::Endpoint>, Vec<fabric::Endpoint>), RunError> {
    w.routing.paths(w.fabric, a, b, k)
}

/// The largest sum of `len` consecutive entries of the cyclic sequence `cost`
/// ending anywhere (a window longer than the cycle wraps and counts entries again).
fn longest_window(cost: &[f64], len: u64) -> f64 {
    let n = cost.len() as u64;
    if n == 0 || len == 0 {
        return 0.0;
    }
    let total: f64 = cost.iter().sum();
    let (laps, rest) = (len / n, (len % n) as usize);
    let mut best = 0.0f64;
    if rest > 0 {
        // sliding window of `rest` entries over the doubled cycle
        let mut s: f64 = cost[..rest].iter().sum();
        best = s;
        for i in rest..rest + cost.len() {
            s += cost[i % cost.len()] - cost[(i - rest) % cost.len()];
            best = best.max(s);
        }
    }
    laps as f64 * total + best
}

/// The largest sum of a run of 1 to `max_len` consecutive entries of the cyclic
/// sequence `v`, where a run longer than the cycle goes round it again: whole
/// laps and a partial run.
fn best_walk(v: &[f64], max_len: u64) -> f64 {
    let n = v.len() as u64;
    if n == 0 {
        return 0.0;
    }
    let lap: f64 = v.iter().sum();
    let mut best = best_run(v, max_len.min(n) as usize);
    for q in 1..=max_len / n {
        let rest = (max_len - q * n).min(n) as usize;
        best = best.max(q as f64 * lap + best_run(v, rest).max(0.0));
    }
    best
}

/// The largest sum of a run of 1 to `max_len` consecutive entries of the
/// cyclic sequence `v` (`max_len` at most its length): prefix sums over two laps
/// and, for each end, the smallest prefix within reach (a monotone deque).
fn best_run(v: &[f64], max_len: usize) -> f64 {
    let n = v.len();
    if n == 0 || max_len == 0 {
        return 0.0;
    }
    let mut prefix = Vec::with_capacity(2 * n + 1);
    prefix.push(0.0);
    for i in 0..2 * n {
        prefix.push(prefix[i] + v[i % n]);
    }
    let mut best = f64::NEG_INFINITY;
    let mut low: std::collections::VecDeque<usize> = std::collections::VecDeque::new();
    for j in 1..prefix.len() {
        // candidates i in [j − max_len, j − 1]
        let i = j - 1;
        while low.back().is_some_and(|&b| prefix[b] >= prefix[i]) {
            low.pop_back();
        }
        low.push_back(i);
        while low.front().is_some_and(|&f| f + max_len < j) {
            low.pop_front();
        }
        if let Some(&f) = low.front() {
            best = best.max(prefix[j] - prefix[f]);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::{best_run, best_walk, longest_window};

    #[test]
    fn the_best_run_is_bounded_in_length_and_wraps() {
        let v = [-1.0, 3.0, -5.0, 2.0, 2.0];
        assert_eq!(best_run(&v, 1), 3.0);
        assert_eq!(best_run(&v, 2), 4.0);
        // 2 + 2 + (−1) + 3 across the wrap
        assert_eq!(best_run(&v, 4), 6.0);
        assert_eq!(best_run(&[-2.0, -1.0], 2), -1.0);
        // a run within one lap beats a lap (1) and a run of 3 (4)
        assert_eq!(best_walk(&v, 8), 6.0);
        assert_eq!(best_walk(&v, 4), 6.0);
        assert_eq!(best_walk(&[1.0, 1.0], 7), 7.0);
    }

    #[test]
    fn the_longest_window_wraps_the_cycle() {
        let c = [1.0, 5.0, 2.0, 0.0];
        assert_eq!(longest_window(&c, 1), 5.0);
        assert_eq!(longest_window(&c, 2), 7.0);
        assert_eq!(longest_window(&c, 4), 8.0);
        // two laps and the best single entry
        assert_eq!(longest_window(&c, 9), 21.0);
        assert_eq!(longest_window(&c, 0), 0.0);
    }
}
