//! All-to-all at flow level without its per-chunk graph.
//!
//! The packet worlds run all-to-all with PXN ([`crate::collective::Schedule`]):
//! rank (server `s`, GPU `h`) sends `size / n` to every other rank; data for
//! (server `d`, GPU `k`) first crosses NVLink to GPU `k` of server `s` and then
//! rail `k` to server `d`. So NIC `k` of `s` sends to NIC `k` of `d` the data of
//! all `g` GPUs of `s`, as `g` messages on one connection. Here those are two
//! messages per NIC pair: GPU `k`'s own at the start, and the other `g − 1`
//! GPUs' together when their NVLink hops deliver them (each GPU's NVLink port
//! sends in the schedule's order, so they arrive at about the same time). The
//! connections are numbered in the order the schedule first names them
//! (server, destination server, rail), as the per-chunk run opens them before
//! it starts, so ECMP hashes them to the same paths.
//!
//! The NVLink hops run beside the network: a GPU forwards `(g − 1) · servers`
//! messages through its NVLink port, first in first out. The collective ends
//! when the last network message arrives or, if later, when the last message
//! through a GPU's NVLink port has crossed the network alone (the bound that
//! decides small sizes, where the network is idle by then).

use flow::path::Ports;
use flow::{FlowSim, Step};

use super::FlowWorld;
use super::ring::{nic, route};
use crate::collective::CollectiveSpec;
use crate::runner::{NetCounters, RunError, ScheduleRun};

/// Run the all-to-all `spec` (on at least two servers) on `w`.
pub(super) fn run(
    w: &FlowWorld<'_>,
    spec: &CollectiveSpec,
    queued: &mut Vec<fabric::Endpoint>,
) -> Result<(ScheduleRun, NetCounters), RunError> {
    let (nodes, g) = (spec.nodes, spec.gpus);
    let per_pair = spec.size_bytes / spec.ranks();
    let f = w.fabric;
    let mut sim = FlowSim::new();
    let ports = Ports::build(f, &mut sim);
    // a GPU's NVLink port sends its messages in the schedule's order (by
    // destination server, then GPU); the message for (server d, GPU k) is about
    // the (d · (g − 1) + k)-th, and the g − 1 GPUs that forward to NIC k reach
    // it at about the same time
    let nvl_ser = (per_pair as f64 / w.nvl.bytes_per_s * 1e12).round() as u64;
    let forwarded_at = |d: u32, k: u32| (u64::from(d * (g - 1) + k) + 1) * nvl_ser + w.nvl.latency_ps;
    let mut posts: Vec<(u64, flow::ConnId, u64)> = Vec::new();
    let mut k = 0u32;
    let mut tail = 0u64;
    // connections numbered as the schedule first names them (`Network::open`):
    // server by server, then destination server, then rail
    for s in 0..nodes {
        for d in (0..nodes).filter(|&d| d != s) {
            for h in 0..g {
                let (a, b) = (nic(w, s, h)?, nic(w, d, h)?);
                let (data, ack) = route(w, a, b, k)?;
                k += 1;
                // the packet worlds' messages are `per_pair` long
                let (uses, l) = flow::path::costs_for(f, &ports, &w.wire, &data, &ack, per_pair);
                // one forwarded message alone on the pair: line rate and latency
                if let Some(&e) = data.first() {
                    let bps = ports.bps(e).max(1) as f64;
                    let ser = per_pair as f64 * w.wire.at_nic(w.wire.data_weight_for(per_pair)) * 8e12 / bps;
                    tail = tail.max(ser.round() as u64 + l);
                }
                let conn = sim.open(uses, l, f64::INFINITY).map_err(RunError::Flow)?;
                // GPU h's own message needs no NVLink hop; the others' come after theirs
                posts.push((0, conn, per_pair));
                if g > 1 {
                    posts.push((forwarded_at(d, h), conn, u64::from(g - 1) * per_pair));
                }
            }
        }
    }
    posts.sort_by_key(|p| p.0);
    let mut next = 0;
    let mut last = 0u64;
    loop {
        while next < posts.len() && posts[next].0 <= sim.now_ps() {
            sim.post(posts[next].1, posts[next].2, 0).map_err(RunError::Flow)?;
            next += 1;
        }
        let until = posts.get(next).map_or(u64::MAX, |p| p.0);
        match sim.advance(until).map_err(RunError::Flow)? {
            Step::Delivered(d) => last = last.max(d.iter().map(|x| x.done_ps).max().unwrap_or(0)),
            Step::Idle if next >= posts.len() => break,
            Step::Idle | Step::Reached => {}
        }
    }
    sim.check().map_err(RunError::Flow)?;
    queued.extend(super::queued_ports(f, &ports, &sim));
    // every NVLink message of one GPU, one after the other, and the last one's latency
    let nvl_bytes = u64::from(g - 1) * u64::from(nodes) * per_pair;
    let nvl = (nvl_bytes as f64 / w.nvl.bytes_per_s * 1e12).round() as u64 + w.nvl.latency_ps;
    // the last message a GPU forwards leaves its NVLink port at `nvl` and then
    // crosses the network: a bound when the connections are otherwise idle
    let time = last.max(nvl + tail);
    let c = sim.counters();
    Ok((
        ScheduleRun {
            time_ps: time,
            probe_latency_ps: Vec::new(),
            max_nic_bytes: u64::from(nodes - 1) * u64::from(g) * per_pair,
        },
        NetCounters {
            delivered: c.bytes_delivered.div_ceil(u64::from(w.wire.mtu.max(1))),
            events: c.events,
            sim_us: time as f64 / 1e6,
            ..NetCounters::default()
        },
    ))
}
