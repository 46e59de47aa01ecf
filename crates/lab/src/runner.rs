//! Executes a collective [`Schedule`] on the packet-level simulator.
//!
//! NVLink hops are modelled here, outside the network simulator: each GPU's NVLink
//! egress is a FIFO server at the scenario's bandwidth plus a fixed latency, which
//! is what NVSwitch gives a GPU (full bisection inside the node). Network hops are
//! RC SENDs between the two NICs of the transfer's rail, posted on the simulator at
//! the simulated instant their dependencies are met; a transfer is done when the
//! receiver's completion appears. The two clocks are one: the driver advances the
//! simulator to the next NVLink completion or probe instant and never past it.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use fabric::{Fabric, NodeId, NodeKind};
use sim::{CqeOp, QpId, QpOptions, RunStatus, Sim, Time};

use crate::collective::{HopCost, Rank, Schedule, Via};

/// Where each (server, rail) NIC is in the fabric.
#[derive(Clone, Debug)]
pub struct NicMap {
    /// `nic[server][rail]`
    pub nic: Vec<Vec<NodeId>>,
}

impl NicMap {
    /// Group the fabric's CAs by server (their `host`), in node order, which the rail
    /// generator makes rail order.
    pub fn from_fabric(f: &Fabric) -> Result<NicMap, RunError> {
        let mut nic: Vec<Vec<NodeId>> = vec![Vec::new(); f.hosts.len()];
        for id in f.nodes_of(NodeKind::Ca) {
            let h = f.node(id).host.ok_or_else(|| RunError::Topology(format!("adapter {} belongs to no server", f.node(id).name)))?;
            nic[h.0 as usize].push(id);
        }
        if nic.is_empty() || nic.iter().any(|v| v.len() != nic[0].len()) {
            return Err(RunError::Topology("servers do not all have the same number of NICs".into()));
        }
        Ok(NicMap { nic })
    }
}

/// Why a schedule could not be run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("topology: {0}")]
    Topology(String),
    #[error("simulator")]
    Sim(#[from] sim::SimError),
    #[error("the fabric deadlocked: {0}")]
    Deadlock(String),
    #[error("the run went idle with {0} transfers never completed")]
    Stalled(usize),
}

/// Small-message probes sent while the collective runs.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSpec {
    pub bytes: u64,
    pub interval_ps: u64,
}

/// What one schedule run measured.
#[derive(Clone, Debug, Default)]
pub struct ScheduleRun {
    /// Completion time of the last transfer, from the start.
    pub time_ps: u64,
    /// One-way latency of every probe, picoseconds.
    pub probe_latency_ps: Vec<u64>,
    /// Bytes sent by the busiest NIC.
    pub max_nic_bytes: u64,
}

const PROBE_TAG: u64 = 1 << 63;

/// Run `s` on `sim` (built on the fabric that `nics` describes).
pub fn run_schedule(sim: &mut Sim, nics: &NicMap, s: &Schedule, nvlink: HopCost, probe: Option<ProbeSpec>) -> Result<ScheduleRun, RunError> {
    let n = s.transfers.len();
    let start = sim.now();
    let mut pending: Vec<u32> = s.transfers.iter().map(|t| t.deps.len() as u32).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, t) in s.transfers.iter().enumerate() {
        for &d in &t.deps {
            dependents[d as usize].push(i as u32);
        }
    }
    let mut ready_at = vec![start.0; n];
    // transfers whose dependencies are met, by (ready time, index)
    let mut ready: BinaryHeap<Reverse<(u64, u32)>> = (0..n as u32).filter(|&i| pending[i as usize] == 0).map(|i| Reverse((start.0, i))).collect();
    // NVLink transfers in flight, by (completion time, index)
    let mut nvl_done: BinaryHeap<Reverse<(u64, u32)>> = BinaryHeap::new();
    let mut nvl_free: BTreeMap<Rank, u64> = BTreeMap::new();
    // RC QP per ordered NIC pair; the receiver's completions arrive in posting order
    let mut qps: BTreeMap<(NodeId, NodeId), QpId> = BTreeMap::new();
    // probes get QPs of their own, as a latency-sensitive application's would: on
    // the same NICs and links, but not queued behind the collective's messages
    let mut probe_qps: BTreeMap<(NodeId, NodeId), QpId> = BTreeMap::new();
    // (tag, post time) per receiving QP
    let mut in_order: BTreeMap<QpId, VecDeque<(u64, u64)>> = BTreeMap::new();
    let mut peer_of: BTreeMap<QpId, QpId> = BTreeMap::new();
    let mut remaining = n;
    let mut out = ScheduleRun::default();
    let mut nic_bytes: BTreeMap<NodeId, u64> = BTreeMap::new();

    // probes: NIC (server i, rail r) → (server i+1, rail r), every interval
    let servers = nics.nic.len();
    let rails = nics.nic.first().map_or(0, Vec::len);
    let mut next_probe = probe.map(|p| start.0 + p.interval_ps);

    let qp_for = |sim: &mut Sim, a: NodeId, b: NodeId, qps: &mut BTreeMap<(NodeId, NodeId), QpId>, peer_of: &mut BTreeMap<QpId, QpId>| -> Result<QpId, RunError> {
        if let Some(&q) = qps.get(&(a, b)) {
            return Ok(q);
        }
        let (qa, qb) = sim.create_rc_pair(a, b, &QpOptions::default())?;
        qps.insert((a, b), qa);
        peer_of.insert(qa, qb);
        Ok(qa)
    };

    while remaining > 0 {
        // start everything that is ready now
        while let Some(&Reverse((t, i))) = ready.peek() {
            if t > sim.now().0 {
                break;
            }
            ready.pop();
            let tr = &s.transfers[i as usize];
            match tr.via {
                Via::NvLink => {
                    let free = nvl_free.entry(tr.src).or_insert(0);
                    let begin = t.max(*free);
                    let ser = (tr.bytes as f64 / nvlink.bytes_per_s * 1e12).round() as u64;
                    *free = begin + ser;
                    nvl_done.push(Reverse((begin + ser + nvlink.latency_ps, i)));
                }
                Via::Rail(r) => {
                    let a = nics.nic[tr.src.node as usize][r as usize];
                    let b = nics.nic[tr.dst.node as usize][r as usize];
                    let q = qp_for(sim, a, b, &mut qps, &mut peer_of)?;
                    sim.post_send(q, tr.bytes, u64::from(i))?;
                    *nic_bytes.entry(a).or_default() += tr.bytes;
                    in_order.entry(peer_of[&q]).or_default().push_back((u64::from(i), sim.now().0));
                }
            }
        }
        // post probes that are due
        if let (Some(p), Some(t)) = (probe, next_probe) {
            if t <= sim.now().0 {
                for srv in 0..servers {
                    for r in 0..rails {
                        let a = nics.nic[srv][r];
                        let b = nics.nic[(srv + 1) % servers][r];
                        if a == b {
                            continue;
                        }
                        let q = qp_for(sim, a, b, &mut probe_qps, &mut peer_of)?;
                        sim.post_send(q, p.bytes, PROBE_TAG)?;
                        in_order.entry(peer_of[&q]).or_default().push_back((PROBE_TAG, sim.now().0));
                    }
                }
                next_probe = Some(t + p.interval_ps);
            }
        }
        // NVLink completions due now
        while let Some(&Reverse((t, i))) = nvl_done.peek() {
            if t > sim.now().0 {
                break;
            }
            nvl_done.pop();
            remaining -= 1;
            out.time_ps = out.time_ps.max(t - start.0);
            release(i, t, &dependents, &mut pending, &mut ready_at, &mut ready);
        }
        if remaining == 0 {
            break;
        }
        // advance the simulator to the next local instant
        let mut until = u64::MAX;
        if let Some(&Reverse((t, _))) = ready.peek() {
            until = until.min(t);
        }
        if let Some(&Reverse((t, _))) = nvl_done.peek() {
            until = until.min(t);
        }
        if let Some(t) = next_probe {
            until = until.min(t);
        }
        let until = Time(until);
        match sim.run(until) {
            RunStatus::Completion => {
                while let Some(node) = sim.next_cq_event() {
                    while let Some(c) = sim.poll_cq(node) {
                        if c.op != CqeOp::Recv {
                            continue;
                        }
                        let Some((tag, posted)) = in_order.get_mut(&c.qp).and_then(VecDeque::pop_front) else { continue };
                        if tag == PROBE_TAG {
                            out.probe_latency_ps.push(c.done.0.saturating_sub(posted));
                            continue;
                        }
                        let i = tag as u32;
                        remaining -= 1;
                        out.time_ps = out.time_ps.max(c.done.0 - start.0);
                        release(i, c.done.0, &dependents, &mut pending, &mut ready_at, &mut ready);
                    }
                }
            }
            RunStatus::TimeLimit => {}
            RunStatus::Idle => {
                if ready.is_empty() && nvl_done.is_empty() && next_probe.is_none() {
                    return Err(RunError::Stalled(remaining));
                }
                if until == Time::NEVER {
                    return Err(RunError::Stalled(remaining));
                }
            }
            RunStatus::Deadlock(d) => return Err(RunError::Deadlock(d.to_string())),
        }
    }
    out.max_nic_bytes = nic_bytes.values().copied().max().unwrap_or(0);
    // let the last probes and ACKs drain so the next run starts clean
    loop {
        match sim.run(Time::NEVER) {
            RunStatus::Completion => {
                while let Some(node) = sim.next_cq_event() {
                    while let Some(c) = sim.poll_cq(node) {
                        if c.op == CqeOp::Recv {
                            if let Some((PROBE_TAG, posted)) = in_order.get_mut(&c.qp).and_then(VecDeque::pop_front) {
                                out.probe_latency_ps.push(c.done.0.saturating_sub(posted));
                            }
                        }
                    }
                }
            }
            RunStatus::Idle | RunStatus::TimeLimit => break,
            RunStatus::Deadlock(d) => return Err(RunError::Deadlock(d.to_string())),
        }
    }
    Ok(out)
}

fn release(i: u32, t: u64, dependents: &[Vec<u32>], pending: &mut [u32], ready_at: &mut [u64], ready: &mut BinaryHeap<Reverse<(u64, u32)>>) {
    for &d in &dependents[i as usize] {
        let d = d as usize;
        ready_at[d] = ready_at[d].max(t);
        pending[d] -= 1;
        if pending[d] == 0 {
            ready.push(Reverse((ready_at[d], d as u32)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster;
    use crate::collective::{Collective, nccl_bandwidth};
    use crate::scenario::Cluster;
    use crate::tco::Tech;
    use sim::{EngineConfig, IbConfig};

    fn small() -> (Fabric, sm::RoutingTables) {
        let c = Cluster { servers: 4, gpus_per_server: 2, nic_gbps: 400, radix: 16, host_leaf_m: 2.0, leaf_spine_m: 20.0 };
        let f = cluster::build(&c, Tech::InfiniBand).unwrap();
        let o = sm::run::RunOptions { engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn], ..Default::default() };
        let (t, _) = sm::run::run(&f, &o).unwrap();
        (f, t)
    }

    const NVL: HopCost = HopCost { bytes_per_s: 450e9, latency_ps: 1_000_000 };

    #[test]
    fn ring_all_reduce_on_infiniband_approaches_the_nic_rate_and_matches_the_ideal() {
        let (f, t) = small();
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut s = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
        let size = 16u64 << 20;
        let sched = Schedule::build(Collective::AllReduceRing, 4, 2, size).unwrap();
        let run = run_schedule(&mut s, &nics, &sched, NVL, None).unwrap();
        s.check_ledger().unwrap();
        assert_eq!(s.ledger().total_dropped(), 0);
        // the packet-level time is close to the contention-free estimate with a
        // 400G NIC carrying 4096-byte payloads in 4122-byte packets
        let eff = 4096.0 / (4096.0 + 26.0);
        let ideal = sched.ideal_time_ps(NVL, HopCost { bytes_per_s: 50e9 * eff, latency_ps: 500_000 });
        let ratio = run.time_ps as f64 / ideal as f64;
        assert!((0.9..1.15).contains(&ratio), "sim {} ps vs ideal {} ps", run.time_ps, ideal);
        let (_, bus) = nccl_bandwidth(Collective::AllReduceRing, size, 8, run.time_ps);
        let per_nic = bus / 2.0;
        assert!(per_nic > 40.0 && per_nic < 50.0 * eff, "busbw per NIC {per_nic}");
    }

    #[test]
    fn probes_measure_latency_and_same_seed_repeats() {
        let (f, t) = small();
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut a = Vec::new();
        for _ in 0..2 {
            let mut s = Sim::new(&f, &t, IbConfig::default(), EngineConfig::default()).unwrap();
            let sched = Schedule::build(Collective::AllToAll, 4, 2, 4 << 20).unwrap();
            let run = run_schedule(&mut s, &nics, &sched, NVL, Some(ProbeSpec { bytes: 64, interval_ps: 5_000_000 })).unwrap();
            assert!(!run.probe_latency_ps.is_empty());
            // a 64-byte probe takes at least serialization + 2 cable hops + one switch
            assert!(run.probe_latency_ps.iter().all(|&l| l > 130_000));
            a.push((run.time_ps, run.probe_latency_ps, s.trace_hash()));
        }
        assert_eq!(a[0], a[1]);
    }
}
