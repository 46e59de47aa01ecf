//! The SHARP all-reduce at flow level ([`crate::sharp`]): one flow per rail over
//! its aggregation tree, on the fabric's own port resources.
//!
//! - **Bandwidth.** In steady state the shard streams up every tree link and the
//!   result streams down every tree link at one rate (each switch sends up what
//!   it has summed, the root sends down what it has finished). So rail `r`'s
//!   tree is one max-min flow whose path holds every up and every down egress
//!   port of the tree once, with the ACKs of each direction on the other, and
//!   the tree's aggregation nodes as one more resource at [`SAT_EFFICIENCY`] of
//!   the tree's slowest link's payload rate. The flow is bounded by what the
//!   NVLink stage inside the server feeds a NIC ([`InServer::nic_bound`]).
//!   Trees that share a cable share it fairly with each other; `T_bw` is when a
//!   rail's `S / G` bytes drain.
//! - **Latency.** A chunk crosses the deepest member's path up and down: the
//!   cables twice, every switch on the way up and down (the root once), the
//!   NICs' own latency, and one NVLink transfer before and after.
//!
//! The time is the latest rail's `T_bw` plus that latency.

use flow::path::Ports;
use flow::{FlowSim, Step, Use};

use super::FlowRouting;
use super::FlowWorld;
use super::ring::nic;
use crate::collective::CollectiveSpec;
use crate::runner::{NetCounters, RunError, ScheduleRun};
use crate::sharp::{InServer, SAT_EFFICIENCY, SharpError, Tree, build_trees};

/// What a SHARP run found besides its time: the trees and the in-server stage.
#[derive(Clone, Debug)]
pub(crate) struct SharpRun {
    pub run: ScheduleRun,
    pub trees: Vec<Tree>,
    pub in_server: InServer,
}

/// The run's algorithm and trees in one line, for the report's findings.
pub(crate) fn describe(r: &SharpRun, f: &fabric::Fabric) -> String {
    let mut roots: Vec<&str> = r.trees.iter().map(|t| f.node(t.root).name.as_str()).collect();
    roots.dedup();
    let shown = roots.iter().take(4).copied().collect::<Vec<_>>().join(", ");
    let more = if roots.len() > 4 { ", …" } else { "" };
    format!(
        "note: all-reduce-sharp ran as NCCL's {} ({} inside each server, SHARP between servers): {} aggregation trees, one per rail, rooted at {shown}{more}, at most {} switches from a NIC to its root; a switch serves at most {} trees",
        r.in_server.nccl_algo(),
        match r.in_server {
            InServer::Nvls => "NVLink SHARP on the NVSwitch",
            InServer::AllToAll => "an all-to-all over NVLink",
        },
        r.trees.len(),
        r.trees.iter().map(Tree::height).max().unwrap_or(0),
        crate::sharp::SAT_FLOWS_PER_SWITCH,
    )
}

/// Run the SHARP all-reduce `spec` on `w` (InfiniBand routing only), with the
/// trees and the in-server stage it used.
pub(crate) fn run_full(
    w: &FlowWorld<'_>,
    spec: &CollectiveSpec,
    queued: &mut Vec<fabric::Endpoint>,
) -> Result<(SharpRun, NetCounters), RunError> {
    let FlowRouting::Ib(tables) = &w.routing else {
        return Err(RunError::Sharp(SharpError::NotInfiniband {
            fabric: "Ethernet (RoCE)".into(),
        }));
    };
    let (nodes, g) = (spec.nodes, spec.gpus);
    let f = w.fabric;
    let mut members = Vec::with_capacity(nodes as usize);
    for s in 0..nodes {
        members.push((0..g).map(|r| nic(w, s, r)).collect::<Result<Vec<_>, _>>()?);
    }
    let trees = build_trees(f, tables, &members).map_err(RunError::Sharp)?;
    let shard = spec.size_bytes / u64::from(g);
    let in_server = InServer::choose(w.nvls, g, w.nvl.bytes_per_s);
    // bytes per picosecond
    let bound = in_server.nic_bound(g, w.nvl.bytes_per_s) / 1e12;
    let mut sim = FlowSim::new();
    let ports = Ports::build(f, &mut sim);
    let (dw, aw) = (w.wire.data_weight_for(shard), w.wire.ack_weight_for(shard));
    let mut latency = 0u64;
    for t in &trees {
        let mut uses = Vec::with_capacity(2 * (t.up.len() + t.down.len()) + 1);
        let mut slowest = u64::MAX;
        for &e in t.up.iter().chain(&t.down) {
            if let Some(res) = ports.resource(e) {
                // its own direction's data, the other direction's ACKs; a NIC's
                // egress at no more than its payload ceiling
                let data = if f.node(e.node).kind == fabric::NodeKind::Ca {
                    w.wire.at_nic(dw)
                } else {
                    dw
                };
                uses.push(Use { res, weight: data + aw });
            }
            slowest = slowest.min(ports.bps(e));
        }
        // the tree's aggregation nodes: payload at SAT's share of the slowest
        // link's payload rate (wire bytes per ps ÷ wire bytes per payload byte)
        let an = sim.add_resource(slowest as f64 / 8e12 / w.wire.data_weight() * SAT_EFFICIENCY);
        uses.push(Use { res: an, weight: 1.0 });
        let conn = sim.open(uses, 0, bound).map_err(RunError::Flow)?;
        sim.post(conn, shard, u64::from(t.rail)).map_err(RunError::Flow)?;
        // the deepest member: cables up and down, switches up and down (the root
        // once), the two NICs' pipelines, an NVLink hop on each side
        for p in &t.paths {
            let cables: u64 = p
                .iter()
                .filter_map(|e| f.peer(e.node, e.port).map(|(_, l)| f.link(l).delay_ps))
                .sum();
            let switches = 2 * p.len() as u64 - 1;
            let l = 2 * cables + switches * w.wire.switch_latency_ps + w.wire.endpoint_ps + 2 * w.nvl.latency_ps;
            latency = latency.max(l);
        }
    }
    let mut drained = 0u64;
    loop {
        match sim.advance(u64::MAX).map_err(RunError::Flow)? {
            Step::Delivered(d) => drained = drained.max(d.iter().map(|x| x.done_ps).max().unwrap_or(0)),
            Step::Idle => break,
            Step::Reached => {}
        }
    }
    sim.check().map_err(RunError::Flow)?;
    queued.extend(super::queued_ports(f, &ports, &sim));
    let time = drained + latency;
    let c = sim.counters();
    Ok((
        SharpRun {
            run: ScheduleRun {
                time_ps: time,
                probe_latency_ps: Vec::new(),
                max_nic_bytes: shard,
            },
            trees,
            in_server,
        },
        NetCounters {
            delivered: c.bytes_delivered.div_ceil(u64::from(w.wire.mtu.max(1))),
            events: c.events,
            sim_us: time as f64 / 1e6,
            ..NetCounters::default()
        },
    ))
}
