//! The flow-level engine as a world the driver runs jobs in: the same fabric, the
//! same forwarding (the SM's LFTs, or the Ethernet control plane's ECMP with the
//! packet world's per-QP hash) and the same NIC map as the packet worlds, with
//! messages as fluid flows at max-min fair rates (`flow`).
//!
//! What it models: link rates with each fabric's header and ACK bytes, path
//! latency (cables, switch pipelines, store-and-forward serialization),
//! contention and ECMP collisions as shared max-min bottlenecks, NVLink hops (the
//! driver's, as for every world). What it does not, and so refuses rather than
//! guess ([`FlowWorld::refusal`]): latency probes (microsecond tail latency needs
//! queues), drops on lossy hops and their go-back-N recovery, background TCP,
//! IPoIB's kernel costs, deadlock formation and pause storms.

use std::collections::BTreeMap;

use fabric::{Fabric, NodeId};
use flow::path::{EthRouting, Ports, WireModel};
use flow::{ConnId, FlowSim, Step};

use crate::collective::{Collective, HopCost};

mod all_to_all;
mod ring;
pub(crate) mod sharp;
use crate::driver::{Job, JobOut, World, WorldStats};
use crate::runner::{Class, Delivered, NetCounters, NetStep, Network, NicMap, RunError};

/// The flow engine's measured agreement with the packet level, as `compare`
/// states it beside every number it produced: completion time of every
/// collective and size, flow over packet, by `scripts/flow-validate` at 128,
/// 512 and 1,024 GPUs (docs/VALIDATION.md §9; the 128-GPU bound is asserted by
/// `compare_at_flow_level_agrees_with_the_packet_level_on_the_default_cluster`).
pub const VALIDATED: &str = "validated against the packet level at 128–1,024 GPUs: median error under 0.6%, worst 9.2% (all-to-all of 1 MiB at 1,024 GPUs, flow fast; docs/VALIDATION.md §9)";

/// What the flow engine's traffic-matrix runs (`sim run --engine flow`) were
/// checked against, as the reports print it.
pub const MATRIX_VALIDATED: &str = "validated against the packet level on fat-tree traffic: the same flows complete, median FCT within 2% (16-host permutation), per-flow goodput 3.5–5.9% below it (endless permutations on 432 and 1,024 hosts; docs/VALIDATION.md §9)";

/// How a flow world finds its paths.
pub(crate) enum FlowRouting {
    /// InfiniBand: the SM's tables.
    Ib(sm::RoutingTables),
    /// Ethernet: ECMP groups and the packet world's hash.
    Eth {
        table: ethcp::EcmpTable,
        hash: ethcp::HashConfig,
        rocev1: bool,
    },
}

impl FlowRouting {
    /// The data and ACK paths of connection number `k` (its QP's place in the
    /// hash) from `a` to `b`.
    pub(crate) fn paths(
        &self,
        f: &Fabric,
        a: NodeId,
        b: NodeId,
        k: u32,
    ) -> Result<(Vec<fabric::Endpoint>, Vec<fabric::Endpoint>), RunError> {
        let (data, ack) = match self {
            FlowRouting::Ib(t) => (flow::path::ib_route(f, t, a, b), flow::path::ib_route(f, t, b, a)),
            FlowRouting::Eth { table, hash, rocev1 } => {
                let r = EthRouting {
                    table,
                    hash: *hash,
                    rocev1: *rocev1,
                };
                (r.route(f, a, b, k), r.route(f, b, a, k))
            }
        };
        Ok((data.map_err(RunError::FlowPath)?, ack.map_err(RunError::FlowPath)?))
    }
}

/// A variant's world at flow level.
pub(crate) struct FlowWorld<'a> {
    pub fabric: &'a Fabric,
    pub routing: FlowRouting,
    pub wire: WireModel,
    pub nics: NicMap,
    pub nvl: HopCost,
    /// Run ring collectives chunk by chunk, as the packet worlds do, instead of
    /// as one flow per channel's ring (`ring`): slower, for checking the latter.
    pub per_chunk: bool,
    /// The variant's congestion control (DCQCN, HPCC), which reacts to queues
    /// the flow engine does not model: a job that queues at a switch port under
    /// it runs in `handover` instead.
    pub cc: Option<String>,
    /// The packet world a job is handed to.
    pub handover: Option<Box<dyn World + 'a>>,
    /// The servers' NVSwitches reduce (NVLink SHARP): the SHARP all-reduce may
    /// use NVLS inside each server (`crate::sharp::InServer`).
    pub nvls: bool,
}

/// Switch egress ports that were the saturated bottleneck of two or more
/// flows: where the fabric queues packets.
fn queued_ports(f: &Fabric, ports: &Ports, sim: &FlowSim) -> Vec<fabric::Endpoint> {
    sim.shared_bottlenecks()
        .into_iter()
        .filter_map(|r| ports.endpoint(r))
        .filter(|e| f.node(e.node).kind == fabric::NodeKind::Switch)
        .collect()
}

/// The wire model of native InfiniBand RC SENDs as the packet world builds them:
/// LRH 8 + BTH 12 + ICRC 4 + VCRC 2 per packet (IBA vol. 1 §5.4, §7.8), an ACK
/// (LRH + BTH + AETH 4 + ICRC + VCRC = 30 bytes) every `ack_every` packets,
/// cut-through switches.
pub(crate) fn ib_wire(cfg: &sim::IbConfig) -> WireModel {
    WireModel {
        mtu: cfg.mtu,
        overhead: 26,
        ack_bytes: 30,
        ack_every: cfg.ack_every,
        switch_latency_ps: cfg.switch_latency_ps,
        store_and_forward: cfg.forwarding == sim::ib::config::Forwarding::StoreAndForward,
        endpoint_ps: cfg.hca_tx_latency_ps + cfg.hca_rx_latency_ps,
        nic_payload_ppm: cfg.hca_payload_ppm,
    }
}

/// The wire model of RoCEv2 as the packet world builds it: Ethernet, IPv4, UDP,
/// BTH, ICRC and FCS per packet (`sim::roce::net::ROCEV2_HEADERS`), an ACK of
/// `ACK_BYTES` every `ack_every` packets, store-and-forward switches with the
/// configured pipeline latency.
pub(crate) fn roce_wire(cfg: &sim::roce::net::RoceConfig) -> WireModel {
    WireModel {
        mtu: cfg.nic.mtu,
        overhead: sim::roce::net::ROCEV2_HEADERS,
        ack_bytes: sim::roce::net::ACK_BYTES,
        ack_every: cfg.nic.ack_every,
        switch_latency_ps: cfg.switch.switch_latency.0,
        store_and_forward: true,
        endpoint_ps: 0,
        nic_payload_ppm: cfg.nic.payload_ppm,
    }
}

impl FlowWorld<'_> {
    /// Run `job` as flows; the switch ports it queues at go to `queued`.
    fn run_flows(&self, job: &Job<'_>, queued: &mut Vec<fabric::Endpoint>) -> Result<(JobOut, NetCounters), RunError> {
        // rings and all-to-all as a few flows; the tree chunk by chunk (its
        // per-chunk dependencies keep it well below an ideal pipeline, which no
        // coarser model here reproduces within the validation's bound)
        if let Job::Collective(spec, _) = job
            && spec.nodes > 1
            && !self.per_chunk
            && spec.op != Collective::AllReduceTree
        {
            let (out, net) = if spec.op == Collective::AllToAll {
                all_to_all::run(self, spec, queued)?
            } else {
                ring::run(self, spec, queued)?
            };
            return Ok((JobOut::Schedule(out), net));
        }
        let mut sim = FlowSim::new();
        let ports = Ports::build(self.fabric, &mut sim);
        let mut net = FlowNet {
            sim,
            ports,
            fabric: self.fabric,
            routing: &self.routing,
            wire: self.wire,
            conns: BTreeMap::new(),
        };
        // latency probes need queues the flow engine does not have: the job runs without them
        let job = match job {
            Job::Collective(s, _) => Job::Collective(*s, None),
            Job::Messages(m) => Job::Messages(m),
        };
        let r = crate::driver::run_on(&mut net, &self.nics, &job, self.nvl)?;
        queued.extend(queued_ports(self.fabric, &net.ports, &net.sim));
        Ok(r)
    }

    /// Why a RoCE variant cannot run at flow level, naming the setting: the flow
    /// engine has no drops, no PFC pause dynamics and no TCP.
    pub(crate) fn refusal(cfg: &sim::roce::net::RoceConfig, background_tcp: bool) -> Option<String> {
        if !cfg.switch.lossy_rdma_switches.is_empty() {
            return Some("lossy_hops: drops and go-back-N recovery on a lossy hop".into());
        }
        if !cfg.pfc.enabled {
            return Some("pfc = false: without PFC a congested queue drops, and drops are not modelled".into());
        }
        if background_tcp {
            return Some("background_tcp_load: TCP's loss-driven congestion control".into());
        }
        if cfg.routing.rocev1.is_some() {
            return Some("RoCEv1's layer-2 forwarding".into());
        }
        None
    }
}

impl World for FlowWorld<'_> {
    fn run(&mut self, job: &Job<'_>, background: bool) -> Result<(JobOut, WorldStats), RunError> {
        let mut queued = Vec::new();
        // SHARP as one flow per rail's aggregation tree (it has no per-chunk
        // form); credits, no end-to-end congestion control to hand over to
        if let Job::Collective(spec, _) = job
            && spec.op == Collective::AllReduceSharp
        {
            let (r, net) = sharp::run_full(self, spec, &mut queued)?;
            let note = sharp::describe(&r, self.fabric);
            return Ok((
                JobOut::Schedule(r.run),
                WorldStats {
                    net,
                    sharp: Some(note),
                    ..WorldStats::default()
                },
            ));
        }
        let (out, net) = self.run_flows(job, &mut queued)?;
        if let (Some(cc), false) = (&self.cc, queued.is_empty())
            && let Some(packet) = self.handover.as_mut()
        {
            let (op, size) = match job {
                Job::Collective(s, _) => (Some(s.op), Some(s.size_bytes)),
                Job::Messages(_) => (None, None),
            };
            let mut ports: Vec<String> = queued
                .iter()
                .map(|e| format!("{}/{}", self.fabric.node(e.node).name, e.port))
                .collect();
            ports.sort();
            ports.dedup();
            let (out, mut stats) = packet.run(job, background)?;
            stats.handed_over = Some(crate::results::HandedOver {
                op,
                size,
                why: format!(
                    "queues at {} switch port(s) (e.g. {}), where {cc} reacts",
                    ports.len(),
                    ports[0]
                ),
            });
            return Ok((out, stats));
        }
        Ok((
            out,
            WorldStats {
                net,
                ..WorldStats::default()
            },
        ))
    }

    fn nics(&self) -> &NicMap {
        &self.nics
    }
}

/// The flow engine as a [`Network`].
struct FlowNet<'a> {
    sim: FlowSim,
    ports: Ports,
    fabric: &'a Fabric,
    routing: &'a FlowRouting,
    wire: WireModel,
    conns: BTreeMap<(NodeId, NodeId, Class), ConnId>,
}

impl FlowNet<'_> {
    /// The connection for (a, b, class), opened for messages of `bytes` (the
    /// first message's size; a schedule's messages on one pair are alike).
    fn conn(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64) -> Result<ConnId, RunError> {
        if let Some(&c) = self.conns.get(&(a, b, class)) {
            return Ok(c);
        }
        let k = self.conns.len() as u32;
        let f = self.fabric;
        let (data, ack) = self.routing.paths(f, a, b, k)?;
        let (uses, latency) = flow::path::costs_for(f, &self.ports, &self.wire, &data, &ack, bytes);
        let c = self.sim.open(uses, latency, f64::INFINITY).map_err(RunError::Flow)?;
        self.conns.insert((a, b, class), c);
        Ok(c)
    }
}

impl Network for FlowNet<'_> {
    fn now_ps(&self) -> u64 {
        self.sim.now_ps()
    }

    fn open(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64) -> Result<(), RunError> {
        self.conn(a, b, class, bytes).map(|_| ())
    }

    fn post(&mut self, a: NodeId, b: NodeId, class: Class, bytes: u64, tag: u64) -> Result<(), RunError> {
        let c = self.conn(a, b, class, bytes)?;
        self.sim.post(c, bytes, tag).map_err(RunError::Flow)
    }

    fn advance(&mut self, until_ps: u64) -> Result<NetStep, RunError> {
        Ok(match self.sim.advance(until_ps).map_err(RunError::Flow)? {
            Step::Delivered(d) => NetStep::Delivered(
                d.into_iter()
                    .map(|d| Delivered {
                        tag: d.tag,
                        posted_ps: d.posted_ps,
                        done_ps: d.done_ps,
                    })
                    .collect(),
            ),
            Step::Reached => NetStep::Reached,
            Step::Idle => NetStep::Idle,
        })
    }

    /// Messages delivered count as the packets they would be at the wire
    /// model's MTU; the flow engine's events stand for the simulator's.
    fn counters(&mut self) -> Result<NetCounters, RunError> {
        self.sim.check().map_err(RunError::Flow)?;
        let c = self.sim.counters();
        Ok(NetCounters {
            delivered: c.bytes_delivered.div_ceil(u64::from(self.wire.mtu.max(1))),
            events: c.events,
            sim_us: self.sim.now_ps() as f64 / 1e6,
            ..NetCounters::default()
        })
    }
}

/// Why a connection matrix cannot run at flow level.
#[derive(Debug, thiserror::Error)]
pub enum MatrixFlowError {
    /// The matrix starts flows on triggers (htsim's send/receive-done events).
    #[error("flow {flow} starts on a trigger; the flow engine runs flows that start at a time")]
    Trigger {
        /// The flow's id.
        flow: u32,
    },
    /// A flow names a host the fabric does not have.
    #[error("flow {flow}: host {host} is not one of the {hosts} hosts")]
    NoHost {
        /// The flow's id.
        flow: u32,
        /// The host index.
        host: u32,
        /// Hosts in the fabric.
        hosts: usize,
    },
    /// A path could not be traced.
    #[error("flow engine: no path")]
    Path(#[from] flow::path::PathError),
    /// The flow engine's bookkeeping.
    #[error("flow engine")]
    Flow(#[from] flow::FlowError),
}

/// Run a connection matrix (`sim run`'s traffic) at flow level on InfiniBand
/// routed by `tables`: host `i` of the matrix is CA `hosts[i]`; every flow is one
/// connection posted at its start time; the run stops when every flow is done or
/// at `end_ps`. Returns the packet world's report shape (FCT, goodput per flow) and
/// the flow engine's counters.
pub fn run_matrix_flow(
    f: &Fabric,
    tables: &sm::RoutingTables,
    ib: &sim::IbConfig,
    hosts: &[NodeId],
    m: &sim::workload::Matrix,
    end_ps: u64,
) -> Result<(sim::workload::MatrixReport, flow::FlowCounters), MatrixFlowError> {
    use sim::workload::Start;
    let mut sim = FlowSim::new();
    let ports = Ports::build(f, &mut sim);
    let wire = ib_wire(ib);
    let mut order: Vec<(u64, usize)> = Vec::with_capacity(m.flows.len());
    for (k, fl) in m.flows.iter().enumerate() {
        let start = match fl.start {
            None => 0,
            Some(Start::At(t)) => t.0,
            Some(Start::Trigger(_)) => return Err(MatrixFlowError::Trigger { flow: fl.id }),
        };
        for h in [fl.src, fl.dst] {
            if h as usize >= hosts.len() {
                return Err(MatrixFlowError::NoHost {
                    flow: fl.id,
                    host: h,
                    hosts: hosts.len(),
                });
            }
        }
        order.push((start, k));
    }
    order.sort_unstable();
    let mut conns = vec![None; m.flows.len()];
    let mut finish: Vec<Option<u64>> = vec![None; m.flows.len()];
    let mut next = 0;
    loop {
        while next < order.len() && order[next].0 <= sim.now_ps() {
            let k = order[next].1;
            let fl = &m.flows[k];
            let (a, z) = (hosts[fl.src as usize], hosts[fl.dst as usize]);
            let data = flow::path::ib_route(f, tables, a, z)?;
            let ack = flow::path::ib_route(f, tables, z, a)?;
            let c = flow::path::open(&mut sim, f, &ports, &wire, &data, &ack)?;
            sim.post(c, fl.bytes, k as u64)?;
            conns[k] = Some(c);
            next += 1;
        }
        let until = order.get(next).map_or(end_ps, |o| o.0.min(end_ps));
        match sim.advance(until)? {
            Step::Delivered(d) => {
                for x in d {
                    finish[x.tag as usize] = Some(x.done_ps);
                }
            }
            Step::Reached | Step::Idle if sim.now_ps() >= end_ps => break,
            Step::Idle if next >= order.len() => break,
            Step::Reached | Step::Idle => {}
        }
    }
    sim.check()?;
    // the run's end: the last completion when every flow finished, else the limit
    let end = if finish.iter().all(Option::is_some) {
        finish.iter().flatten().copied().max().unwrap_or(0)
    } else {
        sim.now_ps().min(end_ps)
    };
    let mut fct = sim::workload::LatencyRecorder::default();
    let mut flows = Vec::with_capacity(m.flows.len());
    let mut aggregate = 0.0;
    for (k, fl) in m.flows.iter().enumerate() {
        let start = order.iter().find(|o| o.1 == k).map(|o| o.0);
        let started = conns[k].is_some();
        let delivered = match (finish[k], conns[k]) {
            (Some(_), _) => fl.bytes,
            (None, Some(c)) => sim.head_served(c) as u64,
            (None, None) => 0,
        };
        let f_ps = finish[k];
        if let (Some(fp), Some(s)) = (f_ps, start) {
            fct.record(fp - s);
        }
        let span = f_ps.unwrap_or(end).saturating_sub(start.unwrap_or(end));
        let goodput = if started && span > 0 {
            delivered as f64 * 8.0 / (span as f64 * 1e-12)
        } else {
            0.0
        };
        aggregate += goodput;
        flows.push(sim::workload::FlowResult {
            id: fl.id,
            src: fl.src,
            dst: fl.dst,
            bytes: (fl.bytes != u64::MAX).then_some(fl.bytes),
            start_ps: start.filter(|_| started),
            finish_ps: f_ps,
            fct_ps: f_ps.zip(start).map(|(a, b)| a - b),
            delivered_bytes: delivered,
            goodput_bps: goodput,
        });
    }
    let completed = finish.iter().filter(|x| x.is_some()).count();
    Ok((
        sim::workload::MatrixReport {
            flows,
            completed,
            fct: fct.stats(),
            aggregate_goodput_bps: aggregate,
            end_ps: end,
        },
        sim.counters(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster;
    use crate::collective::{Collective, CollectiveSpec};
    use crate::scenario::Cluster;
    use crate::tco::Tech;

    fn cluster(servers: u32) -> Cluster {
        Cluster::rail(servers, 8, 400, 64)
    }

    const NVL: HopCost = HopCost {
        bytes_per_s: 450e9,
        latency_ps: 1_000_000,
    };

    fn ib_times(c: &Cluster, op: Collective, size: u64) -> (u64, u64) {
        let f = cluster::build(c, Tech::InfiniBand).unwrap();
        let o = sm::run::RunOptions {
            engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
            ..Default::default()
        };
        let (t, _) = sm::run::run(&f, &o).unwrap();
        let nics = NicMap::from_fabric(&f).unwrap();
        let spec = CollectiveSpec::new(op, c.servers, c.gpus_per_server, size).unwrap();
        let sched = spec.schedule().unwrap();
        let mut fw = FlowWorld {
            fabric: &f,
            routing: FlowRouting::Ib(t.clone()),
            wire: ib_wire(&sim::IbConfig::default()),
            nics: nics.clone(),
            nvl: NVL,
            per_chunk: false,
            cc: None,
            handover: None,
            nvls: false,
        };
        let (JobOut::Schedule(fr), _) = fw.run(&Job::Collective(spec, None), false).unwrap() else {
            panic!()
        };
        let mut s = sim::Sim::new(&f, &t, sim::IbConfig::default(), sim::EngineConfig::default()).unwrap();
        let pr = crate::runner::run_schedule(&mut crate::runner::IbNet::new(&mut s), &nics, &sched, NVL, None).unwrap();
        (fr.time_ps, pr.time_ps)
    }

    /// Flow against packet level on InfiniBand, 32 GPUs: every collective within
    /// 5%, the flow engine's agreement target (docs/VALIDATION.md §9).
    #[test]
    fn collectives_at_flow_level_are_within_5_percent_of_the_packet_level_on_infiniband() {
        use Collective::*;
        for op in [AllReduceRing, AllReduceTree, AllGather, AllToAll] {
            for size in [1u64 << 20, 16 << 20] {
                let (flow, packet) = ib_times(&cluster(4), op, size);
                let r = flow as f64 / packet as f64;
                assert!(
                    (r - 1.0).abs() < 0.05,
                    "{op:?} {size}: flow {flow} ps, packet {packet} ps, ratio {r:.4}"
                );
            }
        }
    }

    /// The flow engine's Ethernet paths are the packet world's: every QP of an
    /// all-to-all between two servers' NICs on the 16-server Ethernet build, data
    /// and ACK direction, switch by switch (so ECMP collisions are the same).
    #[test]
    fn ethernet_paths_are_the_packet_worlds_qp_by_qp() {
        let c = cluster(16);
        let f = cluster::build(&c, Tech::Ethernet).unwrap();
        let cfg = sim::roce::net::RoceConfig::default();
        let mut rs = sim::roce::net::RoceSim::new(&f, cfg.clone(), &[]).unwrap();
        let table = ethcp::EcmpTable::build(&f, cfg.routing.ecmp_convergence.as_ps());
        let r = EthRouting {
            table: &table,
            hash: cfg.routing.hash,
            rocev1: false,
        };
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut spines = std::collections::BTreeSet::new();
        let mut n = 0;
        for a in &nics.nic[0] {
            for b in nics.nic[5].iter().chain(&nics.nic[11]) {
                let k = rs.open_qp(*a, *b).unwrap();
                let packet = rs.flow_path(k as usize);
                let flow: Vec<(String, u8)> = r
                    .route(&f, *a, *b, k)
                    .unwrap()
                    .into_iter()
                    .skip(1)
                    .map(|e| (f.node(e.node).name.clone(), e.port))
                    .collect();
                assert_eq!(flow, packet, "QP {k} from {} to {}", f.node(*a).name, f.node(*b).name);
                if flow.len() > 2 {
                    spines.insert(flow[1].0.clone());
                }
                n += 1;
            }
        }
        assert_eq!(n, 128);
        // the hash spreads the cross-rail QPs over more than one spine
        assert!(spines.len() > 1, "{spines:?}");
    }

    /// Flow against packet level on RoCEv2 with PFC and DCQCN (NVIDIA profile),
    /// 32 GPUs: within 5% (measured 2026-12-05 on the 128-GPU default: ratios
    /// 0.967–1.050 over every collective and size).
    #[test]
    fn collectives_at_flow_level_are_within_5_percent_of_the_packet_level_on_rocev2() {
        use Collective::*;
        let c = cluster(4);
        let f = cluster::build(&c, Tech::Ethernet).unwrap();
        let nics = NicMap::from_fabric(&f).unwrap();
        let mut cfg = sim::roce::net::RoceConfig::default();
        cfg.nic.mtu = 4096;
        cfg.nic.cc =
            sim::roce::net::CongestionControl::Dcqcn(sim::roce::dcqcn::Profile::NvidiaCx.params(400_000_000_000));
        cfg.switch.switch_latency = sim::Time(600_000);
        assert_eq!(FlowWorld::refusal(&cfg, false), None);
        for op in [AllReduceRing, AllGather, AllToAll] {
            let spec = CollectiveSpec::new(op, c.servers, c.gpus_per_server, 16 << 20).unwrap();
            let mut fw = FlowWorld {
                fabric: &f,
                routing: FlowRouting::Eth {
                    table: ethcp::EcmpTable::build(&f, cfg.routing.ecmp_convergence.as_ps()),
                    hash: cfg.routing.hash,
                    rocev1: false,
                },
                wire: roce_wire(&cfg),
                nics: nics.clone(),
                nvl: NVL,
                per_chunk: false,
                cc: None,
                handover: None,
                nvls: false,
            };
            let (JobOut::Schedule(fr), _) = fw.run(&Job::Collective(spec, None), false).unwrap() else {
                panic!()
            };
            let mut pw = crate::driver::RoceWorld {
                fabric: &f,
                cfg: cfg.clone(),
                nics: nics.clone(),
                nvl: NVL,
                tcp_flows: Vec::new(),
                tcp_cfg: sim::roce::tcp::TcpConfig::default(),
                nic_latency: None,
            };
            let (JobOut::Schedule(pr), _) = pw.run(&Job::Collective(spec, None), false).unwrap() else {
                panic!()
            };
            let r = fr.time_ps as f64 / pr.time_ps as f64;
            assert!(
                (r - 1.0).abs() < 0.05,
                "{op:?}: flow {} ps, packet {} ps, ratio {r:.4}",
                fr.time_ps,
                pr.time_ps
            );
        }
    }

    /// What the flow engine cannot model sends a RoCE variant to the packet level, named.
    #[test]
    fn lossy_pfc_off_and_background_tcp_are_refused_by_name() {
        let mut cfg = sim::roce::net::RoceConfig::default();
        assert_eq!(FlowWorld::refusal(&cfg, false), None);
        assert!(
            FlowWorld::refusal(&cfg, true)
                .unwrap()
                .starts_with("background_tcp_load")
        );
        cfg.pfc.enabled = false;
        assert!(FlowWorld::refusal(&cfg, false).unwrap().starts_with("pfc = false"));
        cfg.switch.lossy_rdma_switches = vec![NodeId(0)];
        assert!(FlowWorld::refusal(&cfg, false).unwrap().starts_with("lossy_hops"));
    }

    /// `sim run --engine flow` against the packet level on the 16-host fat tree of
    /// examples/sim: the same flows complete with the median FCT within 2%.
    #[test]
    fn a_traffic_matrix_at_flow_level_matches_the_packet_level_median_fct() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim/ft16-permutation-ib.toml");
        let sc = crate::ScenarioFile::load(&path).unwrap().packet_run(&path).unwrap();
        let f = sc.build_fabric().unwrap();
        let (t, _) = sc.route(&f).unwrap();
        let (packet, _) = sim::scenario::run(&sc, &f, &t, None, &mut |_| {}).unwrap();
        let packet = packet.matrix.unwrap();
        let hosts: Vec<NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
        let m = sim::scenario::traffic_matrix(&sc, hosts.len() as u32).unwrap().unwrap();
        let end = sc.end().unwrap().as_ps();
        let (flow, c) = run_matrix_flow(&f, &t, &sc.ib, &hosts, &m, end).unwrap();
        assert_eq!((flow.completed, packet.completed), (16, 16));
        let r = flow.fct.p50_ps as f64 / packet.fct.p50_ps as f64;
        assert!(
            (r - 1.0).abs() < 0.02,
            "p50 flow {} packet {}",
            flow.fct.p50_ps,
            packet.fct.p50_ps
        );
        assert_eq!(
            flow.end_ps, flow.fct.max_ps,
            "all done: the run ends at the last completion"
        );
        assert!(c.events > 0 && c.solves > 0);
    }

    /// docs/VALIDATION.md §9's flow-level goodput on endless permutations: 50.9 Gb/s
    /// per flow on ft432 (EDR) and 201.5 on a 1,024-host NDR fat tree, within 0.5%.
    #[test]
    fn endless_permutations_at_flow_level_give_the_documented_goodput() {
        let run = |text: &str, want_gbps: f64| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim/x.toml");
            let sc = sim::scenario::Scenario::parse(text, &path).unwrap();
            let f = sc.build_fabric().unwrap();
            let (t, _) = sc.route(&f).unwrap();
            let hosts: Vec<NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
            let m = sim::scenario::traffic_matrix(&sc, hosts.len() as u32).unwrap().unwrap();
            let (r, _) = run_matrix_flow(&f, &t, &sc.ib, &hosts, &m, sc.end().unwrap().as_ps()).unwrap();
            let per = r.aggregate_goodput_bps / 1e9 / r.flows.len() as f64;
            assert!(
                (per / want_gbps - 1.0).abs() < 0.005,
                "{per} Gb/s per flow, documented {want_gbps}"
            );
        };
        let ft432 = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim/ft432-permutation-ib.toml"),
        )
        .unwrap();
        run(&ft432, 50.9);
        run(
            "[fabric]\ngenerator = \"fat-tree3\"\nradix = 16\nrate = \"4xNDR\"\n[routing]\nengines = [\"ftree\"]\n[workload]\nkind = \"permutation\"\nbytes = 0\nend_us = 1000\n",
            201.5,
        );
    }
}

#[cfg(test)]
mod ring_tests {
    use super::*;
    use crate::cluster;
    use crate::collective::{Collective, CollectiveSpec};
    use crate::scenario::Cluster;
    use crate::tco::Tech;

    const NVL: HopCost = HopCost {
        bytes_per_s: 450e9,
        latency_ps: 1_000_000,
    };

    /// Ring collectives as one flow per channel, and all-to-all as two messages
    /// per NIC pair, against the same collectives run chunk by chunk on the same
    /// flow engine, on rail pods and scalable units (one oversubscribed).
    #[test]
    fn coarse_rings_and_all_to_all_match_the_per_chunk_run() {
        let clusters = [
            (4, None, None),
            (16, None, None),
            (16, Some(2), Some(2)),
            (32, Some(4), Some(1)),
        ];
        let mut dev = Vec::new();
        for (servers, sus, uplinks) in clusters {
            let c = Cluster {
                scalable_units: sus,
                leaf_uplinks: uplinks,
                ..Cluster::rail(servers, 8, 400, 64)
            };
            let f = cluster::build(&c, Tech::InfiniBand).unwrap();
            let o = sm::run::RunOptions {
                engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
                validate: false,
                ..Default::default()
            };
            let (t, _) = sm::run::run(&f, &o).unwrap();
            let nics = NicMap::from_fabric(&f).unwrap();
            for op in [
                Collective::AllReduceRing,
                Collective::AllGather,
                Collective::ReduceScatter,
                Collective::AllToAll,
            ] {
                for size in [1u64 << 20, 8 << 20, 64 << 20, 512 << 20] {
                    let spec = CollectiveSpec::new(op, c.servers, 8, size).unwrap();
                    let mut time = [0u64; 2];
                    for (i, per_chunk) in [false, true].into_iter().enumerate() {
                        let mut fw = FlowWorld {
                            fabric: &f,
                            routing: FlowRouting::Ib(t.clone()),
                            wire: ib_wire(&sim::IbConfig::default()),
                            nics: nics.clone(),
                            nvl: NVL,
                            per_chunk,
                            cc: None,
                            handover: None,
                            nvls: false,
                        };
                        let (JobOut::Schedule(r), _) = fw.run(&Job::Collective(spec, None), false).unwrap() else {
                            panic!()
                        };
                        time[i] = r.time_ps;
                    }
                    let r = time[0] as f64 / time[1] as f64;
                    eprintln!(
                        "{servers} {sus:?} {uplinks:?} {op:?} {size}: ring {} per-chunk {} ratio {r:.4}",
                        time[0], time[1]
                    );
                    dev.push((r - 1.0).abs());
                }
            }
        }
        dev.sort_by(f64::total_cmp);
        let (median, worst) = (dev[dev.len() / 2], dev[dev.len() - 1]);
        // measured 2026-12-05: 64 cases, median 0.00%, worst 2.9% (ring all-gather,
        // 4 servers, 8 MiB, where NVLink queueing the ring model leaves out is a
        // tenth of a step)
        assert!(median < 0.002 && worst < 0.03, "median {median}, worst {worst}");
    }
}

#[cfg(test)]
mod interference_tests;
