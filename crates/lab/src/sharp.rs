//! In-network reduction for the all-reduce ([`Collective::AllReduceSharp`]):
//! SHARP aggregation trees on InfiniBand switches between servers, and NVLink
//! SHARP (NVLS) on the NVSwitch inside a server.
//!
//! Sources: `failures-isolation-sweeps.md` §3 (SHARP generations, NVLS, how NCCL
//! exposes them) and the NCCL maintainers' figures quoted there.
//!
//! **Between servers (CollNet over SHARP).** The Aggregation Manager builds one
//! tree of switch aggregation nodes per job and rail: NCCL opens one aggregation
//! flow per HCA rail, so the leaves must be rail-aligned (HPC-X 2.26
//! "NCCL-RDMA-SHARP Plugins"). NIC `r` of every server sends its shard (the
//! server's partial sum of `S / G`, `G` NICs per server) up rail `r`'s tree once;
//! every switch adds its children's streams and sends one stream up; the root's
//! result streams back down the same tree and every NIC receives it once. So a
//! NIC sends `S / G` and receives `S / G`, against `2(n − 1)/n · S / G` each way
//! on a ring of `n` ranks ([`nic_bytes`]), and every tree link carries the shard
//! once in each direction however many servers sit below it.
//!
//! ```text
//!            root (spine)          up: one stream per link, summed at each switch
//!           /            \         down: the result, multicast the same way
//!      leaf su0-r     leaf su1-r
//!      / | \          / | \
//!   NIC r of each server of the unit
//! ```
//!
//! The tree here is the union of the SM's LFT routes from the job's leaves to
//! the root switch's LID: routing is by destination, so every switch on those
//! routes has one parent and the union is a tree on real cables, the links the
//! rest of the traffic uses ([`build_trees`]). The root is the switch that every
//! leaf of the rail reaches in the fewest hops, preferring switches no other
//! tree uses yet; a switch carries at most [`SAT_FLOWS_PER_SWITCH`] streaming
//! trees.
//!
//! **Inside a server.** Before the network, the server's `G` GPUs reduce their
//! buffers so GPU `r` holds the server's sum of shard `r`; after it, they gather
//! the result. Either an all-to-all over NVLink (NCCL's CollNetDirect: each GPU
//! sends and receives `2(G − 1)/G · S` over NVLink) or NVLink SHARP (NCCL's NVLS:
//! the NVSwitch reads every GPU's copy of a shard and adds them, then multicasts
//! the result: `(G + 1)/G · S` each way, [`InServer::nvlink_factor`]). The
//! network stage cannot run faster than the NVLink stage feeds it, which bounds
//! each rail's flow ([`InServer::nic_bound`]).
//!
//! Ethernet switches have no SHARP: a RoCE variant cannot run this collective.

use fabric::{Endpoint, Fabric, NodeId, NodeKind};

use crate::collective::Collective;

/// Streaming aggregation trees one switch can serve at once: "max 2" streaming
/// flows per switch (HPC-X 2.26 "NCCL-RDMA-SHARP Plugins";
/// failures-isolation-sweeps.md §3.1).
pub const SAT_FLOWS_PER_SWITCH: u32 = 2;

/// SHARP streaming aggregation's throughput as a share of the network's
/// point-to-point bandwidth: HDR MPI_Allreduce reaches ≈ 95–96% of it (Graham et
/// al., "SHARP Streaming-Aggregation Hardware Design and Evaluation", ISC 2020,
/// LNCS 12151; failures-isolation-sweeps.md §3.1). The midpoint caps each tree's
/// aggregation nodes.
pub const SAT_EFFICIENCY: f64 = 0.955;

/// NVLink bandwidth NCCL achieves over the line rate: "450GB/s is the line rate.
/// With the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of
/// 370GB/s" (a maintainer, NVIDIA/nccl-tests#212, H100). Applied to the
/// scenario's NVLink line rate for NVLink stages inside a server.
pub const NVLINK_NCCL_EFFICIENCY: f64 = 370.0 / 450.0;

/// NVLS all-reduce algbw on one 8 × H100 SXM server, GB/s: "about 273"
/// (NVIDIA/nccl#1455) and "~275GB/s", busbw ≈ 480 (a maintainer,
/// NVIDIA/nccl-tests#212); the midpoint. [`NVLS_EFFICIENCY`] is fitted on it.
pub const NVLS_ALGBW_8X_H100_GBS: f64 = 274.0;

/// H100 NVLink4 line rate per GPU and direction, GB/s (18 links × 25 GB/s;
/// NVIDIA H100 datasheet; nccl-tests#212).
pub const H100_NVLINK_GBS: f64 = 450.0;

/// The NVLink rate NVLS moves its `(G + 1)/G · S` per GPU at, over the line
/// rate: fitted so that 8 × H100 gives [`NVLS_ALGBW_8X_H100_GBS`]
/// (274 × 9/8 / 450 = 0.685). The busbw of 5 to 7 GPUs is then predicted
/// (docs/VALIDATION.md §15).
pub const NVLS_EFFICIENCY: f64 = NVLS_ALGBW_8X_H100_GBS * 9.0 / 8.0 / H100_NVLINK_GBS;

/// How a server reduces before, and gathers after, the network stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InServer {
    /// All-to-all over NVLink (NCCL's CollNetDirect).
    AllToAll,
    /// NVLink SHARP on the NVSwitch (NCCL's NVLS).
    Nvls,
}

impl InServer {
    /// NCCL's algorithm name for the whole all-reduce across servers
    /// (NVIDIA/nccl#1725 quoting #919: CollNetDirect = all-to-all inside the node
    /// + CollNet between; NVLS = NVLink SHARP inside + CollNet between).
    pub fn nccl_algo(self) -> &'static str {
        match self {
            InServer::AllToAll => "CollNetDirect",
            InServer::Nvls => "NVLS",
        }
    }

    /// NVLink bytes each GPU sends (and receives) per byte of the buffer among
    /// `g` GPUs. All-to-all: a reduce-scatter and an all-gather, `(g − 1)/g`
    /// each. NVLS [derived from the NVSwitch's multicast and reduction, NVIDIA
    /// blog "Upgrading Multi-GPU Interconnectivity with the Third-Generation
    /// NVIDIA NVSwitch", 2022]: the switch reads every shard from every GPU (a GPU
    /// sends `S`) and returns each GPU its reduced shard (`S/g`); each GPU then
    /// stores its shard once (`S/g`) and the switch multicasts it to all (a GPU
    /// receives `S`): `(g + 1)/g` each way.
    pub fn nvlink_factor(self, g: u32) -> f64 {
        if g <= 1 {
            return 0.0;
        }
        let g = f64::from(g);
        match self {
            InServer::AllToAll => 2.0 * (g - 1.0) / g,
            InServer::Nvls => (g + 1.0) / g,
        }
    }

    /// The NVLink rate this stage runs at, bytes/s, for a line rate of
    /// `line_bytes_per_s` per GPU and direction.
    pub fn effective_bytes_per_s(self, line_bytes_per_s: f64) -> f64 {
        match self {
            InServer::AllToAll => line_bytes_per_s * NVLINK_NCCL_EFFICIENCY,
            InServer::Nvls => line_bytes_per_s * NVLS_EFFICIENCY,
        }
    }

    /// The all-reduce algbw this stage allows, bytes/s (infinite for one GPU).
    pub fn algbw_bound(self, g: u32, line_bytes_per_s: f64) -> f64 {
        let k = self.nvlink_factor(g);
        if k == 0.0 {
            return f64::INFINITY;
        }
        self.effective_bytes_per_s(line_bytes_per_s) / k
    }

    /// The rate, bytes/s, at which this stage feeds one NIC its shard: the
    /// algbw bound shared by the server's `g` NICs.
    pub fn nic_bound(self, g: u32, line_bytes_per_s: f64) -> f64 {
        self.algbw_bound(g, line_bytes_per_s) / f64::from(g.max(1))
    }

    /// The stage a server with `nvls` hardware uses: NVLS where it feeds the
    /// NICs faster than the all-to-all, as NCCL's tuner picks the faster
    /// algorithm.
    pub fn choose(nvls: bool, g: u32, line_bytes_per_s: f64) -> InServer {
        if nvls && InServer::Nvls.algbw_bound(g, line_bytes_per_s) > InServer::AllToAll.algbw_bound(g, line_bytes_per_s)
        {
            InServer::Nvls
        } else {
            InServer::AllToAll
        }
    }
}

/// The all-reduce algbw of one server of `g` GPUs, bytes/s, with NVLS
/// hardware or without: the faster of the ring (`2(g − 1)/g · S` per GPU at
/// NCCL's effective NVLink rate, busbw = that rate) and NVLS.
pub fn single_server_algbw(g: u32, nvlink_line_bytes_per_s: f64, nvls: bool) -> f64 {
    let ring = InServer::AllToAll.algbw_bound(g, nvlink_line_bytes_per_s);
    if nvls {
        ring.max(InServer::Nvls.algbw_bound(g, nvlink_line_bytes_per_s))
    } else {
        ring
    }
}

/// Bytes one NIC sends (and receives) for an all-reduce of `size` on `servers`
/// × `g` ranks: a ring `2(n − 1)/n · size/g`; SHARP `size/g` (its shard up the
/// tree once, the result down once).
pub fn nic_bytes(op: Collective, servers: u32, g: u32, size: u64) -> f64 {
    let shard = size as f64 / f64::from(g.max(1));
    match op {
        Collective::AllReduceSharp => shard,
        _ => op.busbw_factor(servers * g) * shard,
    }
}

/// One rail's aggregation tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    /// The rail (NIC index) whose NICs it reduces.
    pub rail: u32,
    /// The root switch.
    pub root: NodeId,
    /// The switches whose aggregation nodes it uses, root included, by id.
    pub switches: Vec<NodeId>,
    /// The up direction's egress ports: every member NIC's port and every
    /// non-root switch's port toward its parent, each once.
    pub up: Vec<Endpoint>,
    /// The down direction's egress ports: the other end of every up port.
    pub down: Vec<Endpoint>,
    /// Each member NIC's path to the root, egress ports from the NIC.
    pub paths: Vec<Vec<Endpoint>>,
}

impl Tree {
    /// Switches from a member NIC to the root, root included, on the longest
    /// member path.
    pub fn height(&self) -> usize {
        self.paths.iter().map(Vec::len).max().unwrap_or(0)
    }
}

/// Why no aggregation trees could be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SharpError {
    /// A member NIC has no cable.
    #[error("{nic} has no cabled port for the aggregation tree")]
    NoPort {
        /// The NIC's name.
        nic: String,
    },
    /// No switch can be the root of a rail's tree.
    #[error(
        "no aggregation tree for rail {rail}: every switch that its {leaves} leaves reach by the SM's routes already serves {SAT_FLOWS_PER_SWITCH} streaming aggregation trees, the most one switch runs (HPC-X 2.26)"
    )]
    NoTree {
        /// The rail.
        rail: u32,
        /// Leaves under the rail's NICs.
        leaves: usize,
    },
    /// The fabric is not InfiniBand.
    #[error(
        "SHARP aggregates in InfiniBand switches (Quantum HDR or newer); {fabric} has no in-network reduction, so all-reduce-sharp cannot run on it"
    )]
    NotInfiniband {
        /// What the fabric is.
        fabric: String,
    },
}

/// The first cabled port of `n`.
fn cabled_port(f: &Fabric, n: NodeId) -> Option<Endpoint> {
    f.node(n)
        .port_nums()
        .find(|&p| f.peer(n, p).is_some())
        .map(|port| Endpoint { node: n, port })
}

/// Longest switch-to-switch walk before a route is taken for a loop.
const MAX_WALK: usize = 16;

/// The SM's route from switch `from` to switch `to` (its port-0 LID): the
/// egress ports taken, or `None` when a switch has no entry or the route
/// loops or leaves the switches.
fn walk(f: &Fabric, t: &sm::RoutingTables, from: NodeId, to: NodeId) -> Option<Vec<Endpoint>> {
    let lid = t.lid_of(to, 0)?;
    let mut out = Vec::new();
    let mut at = from;
    while at != to {
        if out.len() >= MAX_WALK {
            return None;
        }
        let port = t.lft.get(at.idx())?.get(lid)?;
        let (peer, _) = f.peer(at, port)?;
        if f.node(peer.node).kind != NodeKind::Switch {
            return None;
        }
        out.push(Endpoint { node: at, port });
        at = peer.node;
    }
    Some(out)
}

/// Build one aggregation tree per rail, as the Aggregation Manager would for a
/// job whose NIC `r` of server `s` is `nics[s][r]`: rails in order, each rooted
/// at the switch its leaves reach in the fewest hops by the SM's routes
/// (`tables`), then the one the fewest earlier trees use, then the one with the
/// fewest switches, then the lowest id, among roots whose trees pass no switch
/// that already serves [`SAT_FLOWS_PER_SWITCH`] trees.
pub fn build_trees(f: &Fabric, tables: &sm::RoutingTables, nics: &[Vec<NodeId>]) -> Result<Vec<Tree>, SharpError> {
    let rails = nics.first().map_or(0, Vec::len);
    let switches: Vec<NodeId> = f.nodes_of(NodeKind::Switch).collect();
    let mut load = vec![0u32; f.nodes.len()];
    let mut trees = Vec::with_capacity(rails);
    for r in 0..rails {
        // member NIC ports and the leaves they hang from
        let mut ports = Vec::with_capacity(nics.len());
        for row in nics {
            let n = row[r];
            let p = cabled_port(f, n).ok_or_else(|| SharpError::NoPort {
                nic: f.node(n).name.clone(),
            })?;
            let (leaf, _) = f.peer(n, p.port).expect("a cabled port has a peer");
            ports.push((p, leaf.node));
        }
        let mut leaves: Vec<NodeId> = ports.iter().map(|p| p.1).collect();
        leaves.sort();
        leaves.dedup();
        // (height, trees on its switches, switches, root id) → the walks
        type Key = (usize, u32, usize, NodeId);
        let mut best: Option<(Key, Vec<Vec<Endpoint>>, Vec<NodeId>)> = None;
        for &c in &switches {
            let Some(walks) = leaves
                .iter()
                .map(|&l| walk(f, tables, l, c))
                .collect::<Option<Vec<Vec<Endpoint>>>>()
            else {
                continue;
            };
            let mut sw: Vec<NodeId> = walks
                .iter()
                .flatten()
                .map(|e| e.node)
                .chain(leaves.iter().copied())
                .collect();
            sw.push(c);
            sw.sort();
            sw.dedup();
            if sw.iter().any(|s| load[s.idx()] >= SAT_FLOWS_PER_SWITCH) {
                continue;
            }
            let key: Key = (
                walks.iter().map(Vec::len).max().unwrap_or(0),
                sw.iter().map(|s| load[s.idx()]).sum(),
                sw.len(),
                c,
            );
            if best.as_ref().is_none_or(|b| key < b.0) {
                best = Some((key, walks, sw));
            }
        }
        let Some(((_, _, _, root), walks, sw)) = best else {
            return Err(SharpError::NoTree {
                rail: r as u32,
                leaves: leaves.len(),
            });
        };
        for s in &sw {
            load[s.idx()] += 1;
        }
        let mut up: Vec<Endpoint> = ports.iter().map(|p| p.0).collect();
        up.extend(walks.iter().flatten().copied());
        up.sort();
        up.dedup();
        let down = up
            .iter()
            .map(|e| f.peer(e.node, e.port).expect("an up port is cabled").0)
            .collect();
        let paths = ports
            .iter()
            .map(|(p, leaf)| {
                let i = leaves.binary_search(leaf).expect("every member's leaf is listed");
                std::iter::once(*p).chain(walks[i].iter().copied()).collect()
            })
            .collect();
        trees.push(Tree {
            rail: r as u32,
            root,
            switches: sw,
            up,
            down,
            paths,
        });
    }
    Ok(trees)
}

/// One all-reduce run at flow level on the InfiniBand build of a cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct AllReduceRun {
    /// Ring or SHARP.
    pub op: Collective,
    /// Ranks (servers × GPUs).
    pub gpus: u32,
    /// The nccl-tests size column (the per-rank buffer), bytes.
    pub size: u64,
    /// Completion, microseconds.
    pub time_us: f64,
    /// nccl-tests' algbw, GB/s.
    pub algbw_gbs: f64,
    /// nccl-tests' busbw ÷ NICs per server, GB/s.
    pub busbw_per_nic_gbs: f64,
    /// Bytes one NIC sent.
    pub nic_bytes: u64,
    /// The SHARP run's in-server stage.
    pub in_server: Option<InServer>,
    /// The SHARP run's trees: (rail, root switch name, switches, height).
    pub trees: Vec<(u32, String, usize, usize)>,
}

/// Run `op` (ring or SHARP all-reduce) of `size` at flow level on the
/// InfiniBand build of `cluster` routed by the SM (ftree, then updn), with
/// `gpu`'s NVLink: what docs/VALIDATION.md §15 tabulates.
pub fn all_reduce_at_flow_level(
    cluster: &crate::scenario::Cluster,
    gpu: &crate::scenario::Gpu,
    op: Collective,
    size: u64,
) -> Result<AllReduceRun, crate::compare::CompareError> {
    use crate::compare::CompareError;
    use crate::driver::{Job, JobOut, World};
    let f = crate::cluster::build(cluster, crate::tco::Tech::InfiniBand)?;
    let o = sm::run::RunOptions {
        engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
        validate: false,
        ..Default::default()
    };
    let (t, _) = sm::run::run(&f, &o)?;
    let err = |source| CompareError::Run {
        variant: "ib".into(),
        source,
    };
    let nics = crate::runner::NicMap::from_fabric(&f).map_err(err)?;
    let g = cluster.gpus_per_server;
    let spec =
        crate::collective::CollectiveSpec::new(op, cluster.servers, g, size).map_err(|e| CompareError::Variant {
            variant: "ib".into(),
            message: e.to_string(),
        })?;
    let mut w = crate::flow_world::FlowWorld {
        fabric: &f,
        routing: crate::flow_world::FlowRouting::Ib(t),
        wire: crate::flow_world::ib_wire(&sim::IbConfig::default()),
        nics,
        nvl: crate::collective::HopCost {
            bytes_per_s: gpu.nvlink_gbytes * 1e9,
            latency_ps: gpu.nvlink_latency_ns * 1000,
        },
        per_chunk: false,
        cc: None,
        handover: None,
        nvls: gpu.nvls,
    };
    let (run, in_server, trees) = if op == Collective::AllReduceSharp {
        let (r, _) = crate::flow_world::sharp::run_full(&w, &spec, &mut Vec::new()).map_err(err)?;
        let trees = r
            .trees
            .iter()
            .map(|t| (t.rail, f.node(t.root).name.clone(), t.switches.len(), t.height()))
            .collect();
        (r.run, Some(r.in_server), trees)
    } else {
        match w.run(&Job::Collective(spec, None), false).map_err(err)? {
            (JobOut::Schedule(r), _) => (r, None, Vec::new()),
            (JobOut::Messages(_), _) => unreachable!("a collective job returns a schedule run"),
        }
    };
    let n = cluster.servers * g;
    let (algbw, busbw) = crate::collective::nccl_bandwidth(op, size, n, run.time_ps);
    Ok(AllReduceRun {
        op,
        gpus: n,
        size,
        time_us: run.time_ps as f64 / 1e6,
        algbw_gbs: algbw,
        busbw_per_nic_gbs: busbw / f64::from(g),
        nic_bytes: run.max_nic_bytes,
        in_server,
        trees,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: f64 = H100_NVLINK_GBS * 1e9;

    /// Bytes per NIC: a ring sends 2(n − 1)/n of the shard, SHARP the shard.
    #[test]
    fn a_nic_sends_its_shard_once_with_sharp_and_twice_less_a_bit_on_a_ring() {
        let size = 1u64 << 30;
        for (servers, ring) in [(16u32, 2.0 * 127.0 / 128.0), (128, 2.0 * 1023.0 / 1024.0)] {
            let r = nic_bytes(Collective::AllReduceRing, servers, 8, size);
            let s = nic_bytes(Collective::AllReduceSharp, servers, 8, size);
            assert_eq!(s, (size / 8) as f64);
            assert!((r / s - ring).abs() < 1e-12, "{servers}: {r} / {s}");
        }
    }

    #[test]
    fn nvlink_factors_and_bounds_are_the_closed_forms() {
        assert_eq!(InServer::AllToAll.nvlink_factor(8), 1.75);
        assert_eq!(InServer::Nvls.nvlink_factor(8), 1.125);
        assert_eq!(InServer::Nvls.nvlink_factor(1), 0.0);
        // 450 × 370/450 / 1.75 = 211.4 GB/s
        let a = InServer::AllToAll.algbw_bound(8, H100) / 1e9;
        assert!((a - 370.0 / 1.75).abs() < 1e-9, "{a}");
        // NVLS on 8 × H100 is the fitted figure
        let n = InServer::Nvls.algbw_bound(8, H100) / 1e9;
        assert!((n - NVLS_ALGBW_8X_H100_GBS).abs() < 1e-9, "{n}");
        assert!((NVLS_EFFICIENCY - 0.685).abs() < 1e-12);
        // per NIC: 274 / 8 and 211.4 / 8
        assert!((InServer::Nvls.nic_bound(8, H100) / 1e9 - 34.25).abs() < 1e-9);
        assert_eq!(InServer::choose(true, 8, H100), InServer::Nvls);
        assert_eq!(InServer::choose(false, 8, H100), InServer::AllToAll);
        // at 4 GPUs NVLS no longer beats the all-to-all
        assert_eq!(InServer::choose(true, 4, H100), InServer::AllToAll);
    }

    /// The published NVLS busbw on one 8 × H100 server against the GPU count
    /// (NVIDIA/nccl#1455: 2–4 GPUs ≈ 370, 5 ≈ 420, 6 ≈ 440, 7 ≈ 460, 8 ≈ 480 GB/s)
    /// and the ring's ≈ 365–370 (nccl#1455, nccl-tests#212): the model, fitted on
    /// 8 GPUs' algbw alone, within 2.5% at every count.
    #[test]
    fn nvls_busbw_against_the_gpu_count_matches_the_published_curve() {
        for (g, published) in [
            (2u32, 370.0),
            (3, 370.0),
            (4, 370.0),
            (5, 420.0),
            (6, 440.0),
            (7, 460.0),
            (8, 480.0),
        ] {
            let alg = single_server_algbw(g, H100, true) / 1e9;
            let bus = alg * Collective::AllReduceSharp.busbw_factor(g);
            let gap = bus / published - 1.0;
            eprintln!(
                "{g} GPUs: busbw {bus:.1} GB/s, published {published}, gap {:+.1}%",
                gap * 100.0
            );
            assert!(gap.abs() < 0.025, "{g} GPUs: {bus} against {published}");
        }
        // without NVLS every count is the ring's 370
        let bus = single_server_algbw(8, H100, false) / 1e9 * 1.75;
        assert!((bus - 370.0).abs() < 1e-9);
    }
}

#[cfg(test)]
mod flow_tests {
    use super::*;
    use crate::scenario::{Cluster, Gpu};

    /// A DGX SuperPOD-style cluster of `gpus` H100-class GPUs: 8 per server, 32
    /// servers per scalable unit (one unit of 16 at 128 GPUs), `gbps` NICs.
    pub(crate) fn pod(gpus: u32, gbps: u32) -> Cluster {
        let servers = gpus / 8;
        Cluster {
            scalable_units: Some(servers.div_ceil(32)),
            sharp: true,
            ..Cluster::rail(servers, 8, gbps, 64)
        }
    }

    fn ib(c: &Cluster) -> (Fabric, sm::RoutingTables, Vec<Vec<NodeId>>) {
        let f = crate::cluster::build(c, crate::tco::Tech::InfiniBand).unwrap();
        let o = sm::run::RunOptions {
            engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
            validate: false,
            ..Default::default()
        };
        let (t, _) = sm::run::run(&f, &o).unwrap();
        let nics = crate::runner::NicMap::from_fabric(&f).unwrap().nic;
        (f, t, nics)
    }

    /// On four scalable units each rail's tree is its four leaves under one
    /// spine, a different spine per rail; every tree edge is a cable of the
    /// fabric, and each member's path is its NIC, its leaf and the root. On one
    /// unit a rail's tree is its leaf alone.
    #[test]
    fn trees_are_rail_aligned_on_real_cables_and_spread_over_the_spines() {
        let (f, t, nics) = ib(&pod(1024, 400));
        let trees = build_trees(&f, &t, &nics).unwrap();
        assert_eq!(trees.len(), 8);
        let mut roots: Vec<NodeId> = trees.iter().map(|t| t.root).collect();
        roots.sort();
        roots.dedup();
        assert_eq!(roots.len(), 8, "one spine per rail");
        for tr in &trees {
            assert!(f.node(tr.root).name.starts_with("spine"), "{}", f.node(tr.root).name);
            // 4 leaves of this rail and the root
            assert_eq!(tr.switches.len(), 5);
            for s in &tr.switches {
                let name = &f.node(*s).name;
                assert!(*s == tr.root || name.ends_with(&format!("rail{}", tr.rail)), "{name}");
            }
            // 128 NIC ports and 4 leaf uplinks up, as many ports down
            assert_eq!((tr.up.len(), tr.down.len()), (132, 132));
            for (u, d) in tr.up.iter().zip(&tr.down) {
                assert_eq!(f.peer(u.node, u.port).unwrap().0, *d);
            }
            assert_eq!(tr.paths.len(), 128);
            assert!(tr.paths.iter().all(|p| p.len() == 2));
            assert_eq!(tr.height(), 2);
        }
        let (f, t, nics) = ib(&pod(256, 400));
        for tr in build_trees(&f, &t, &nics).unwrap() {
            assert_eq!(tr.switches, vec![tr.root]);
            assert_eq!(f.node(tr.root).name, format!("su0-rail{}", tr.rail));
            assert_eq!(tr.up.len(), 32);
        }
    }

    /// Two units whose leaves have two uplinks each share one spine: its two
    /// streaming flows go to rails 0 and 1, and rail 2 has no tree.
    #[test]
    fn a_switch_serves_at_most_two_streaming_trees() {
        let mut c = pod(512, 400);
        c.leaf_uplinks = Some(2);
        let (f, t, nics) = ib(&c);
        assert_eq!(f.nodes_of(NodeKind::Switch).count(), 17, "16 leaves, 1 spine");
        let e = build_trees(&f, &t, &nics).unwrap_err();
        assert_eq!(e, SharpError::NoTree { rail: 2, leaves: 2 });
        assert!(
            e.to_string().contains("already serves 2 streaming aggregation trees"),
            "{e}"
        );
    }

    /// Where the NIC is the bottleneck (HDR NICs, 200 Gb/s, under H100 NVLink)
    /// SHARP's busbw per NIC is 1.9× the ring's at 1,024 GPUs: each NIC sends
    /// its shard once instead of 2(n − 1)/n times. The bytes per NIC are the
    /// closed forms, and a second run gives the same figures.
    #[test]
    fn sharp_beats_the_ring_where_the_nic_is_the_bottleneck() {
        let c = pod(1024, 200);
        let gpu = Gpu::default();
        let size = 1u64 << 30;
        let ring = all_reduce_at_flow_level(&c, &gpu, Collective::AllReduceRing, size).unwrap();
        let sh = all_reduce_at_flow_level(&c, &gpu, Collective::AllReduceSharp, size).unwrap();
        assert_eq!(sh.nic_bytes, size / 8);
        let want = nic_bytes(Collective::AllReduceRing, 128, 8, size);
        assert!(
            (ring.nic_bytes as f64 / want - 1.0).abs() < 1e-6,
            "{} vs {want}",
            ring.nic_bytes
        );
        let gain = sh.busbw_per_nic_gbs / ring.busbw_per_nic_gbs;
        assert!(
            gain > 1.85 && gain < 1.95,
            "SHARP {} ring {}",
            sh.busbw_per_nic_gbs,
            ring.busbw_per_nic_gbs
        );
        // the NIC carries SAT's share of its payload rate: 0.955 × 200 Gb/s × 4096/4122
        let per_nic = sh.algbw_gbs / 8.0;
        let sat = SAT_EFFICIENCY * 25.0 * 4096.0 / 4122.0;
        assert!((per_nic / sat - 1.0).abs() < 0.005, "{per_nic} vs {sat}");
        assert_eq!(
            all_reduce_at_flow_level(&c, &gpu, Collective::AllReduceSharp, size).unwrap(),
            sh
        );
        assert_eq!(sh.in_server, Some(InServer::AllToAll));
    }

    /// On H100 with 400G NICs the NVLink stage bounds SHARP (as the NCCL
    /// maintainer notes for DGX A100, NVIDIA/nccl#320): algbw at the all-to-all's
    /// 370/1.75 = 211 GB/s, or NVLS's 274 GB/s with NVLink SHARP.
    #[test]
    fn on_h100_with_ndr_the_nvlink_stage_bounds_sharp() {
        let c = pod(1024, 400);
        for (nvls, bound) in [(false, 370.0 / 1.75), (true, NVLS_ALGBW_8X_H100_GBS)] {
            let gpu = Gpu { nvls, ..Gpu::default() };
            let r = all_reduce_at_flow_level(&c, &gpu, Collective::AllReduceSharp, 1 << 30).unwrap();
            assert!(
                r.algbw_gbs < bound && r.algbw_gbs > 0.995 * bound,
                "nvls {nvls}: {} vs {bound}",
                r.algbw_gbs
            );
        }
    }

    /// Ethernet switches have no SHARP: a RoCE flow world refuses the collective.
    #[test]
    fn ethernet_refuses_sharp_by_name() {
        use crate::driver::{Job, World};
        let c = pod(128, 400);
        let f = crate::cluster::build(&c, crate::tco::Tech::Ethernet).unwrap();
        let cfg = sim::roce::net::RoceConfig::default();
        let mut w = crate::flow_world::FlowWorld {
            fabric: &f,
            routing: crate::flow_world::FlowRouting::Eth {
                table: ethcp::EcmpTable::build(&f, cfg.routing.ecmp_convergence.as_ps()),
                hash: cfg.routing.hash,
                rocev1: false,
            },
            wire: crate::flow_world::roce_wire(&cfg),
            nics: crate::runner::NicMap::from_fabric(&f).unwrap(),
            nvl: crate::collective::HopCost {
                bytes_per_s: 450e9,
                latency_ps: 1_000_000,
            },
            per_chunk: false,
            cc: None,
            handover: None,
            nvls: false,
        };
        let spec = crate::collective::CollectiveSpec::new(Collective::AllReduceSharp, 16, 8, 1 << 20).unwrap();
        let Err(e) = w.run(&Job::Collective(spec, None), false) else {
            panic!("RoCE ran SHARP")
        };
        let crate::runner::RunError::Sharp(SharpError::NotInfiniband { .. }) = &e else {
            panic!("{e:?}")
        };
        assert!(
            std::error::Error::source(&e)
                .unwrap()
                .to_string()
                .contains("Ethernet (RoCE) has no in-network reduction")
        );
    }
}
