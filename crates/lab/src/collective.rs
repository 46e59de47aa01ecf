//! NCCL-like collectives decomposed into point-to-point transfers.
//!
//! The cluster is `nodes × gpus` ranks (rank = node · gpus + gpu). GPU `g` of every
//! node owns NIC `g`, which sits on rail `g` of a rail-optimized fabric. NCCL opens
//! one channel per rail; channel `c` carries `1/gpus` of the data and crosses the
//! network only on rail `c`: its ring visits each node's GPUs in the order
//! `c, c+1, …, c-1 (mod gpus)` over NVLink, and the last GPU hands the data to NIC `c`
//! over NVLink (NCCL's PXN, "proxy across NVLink", since 2.12), so every inter-node hop
//! of channel `c` goes NIC `c` → rail `c` → NIC `c`.
//!
//! A [`Schedule`] is a dependency graph: a transfer starts when every transfer in
//! its `deps` has been delivered. The simulator executes it; [`Schedule::ideal_time_ps`]
//! gives the fabric-contention-free estimate used to check the simulator.
//!
//! busbw factors are nccl-tests' (`src/*.cu`, `doc/PERFORMANCE.md`, nccl-tests 2.19.6):
//! all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n.

use serde::{Deserialize, Serialize};

/// A collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Collective {
    /// Ring all-reduce: reduce-scatter then all-gather around each channel's ring.
    AllReduceRing,
    /// Tree all-reduce: per channel, reduce up a binary tree of nodes and broadcast
    /// back down (NCCL's double binary tree halves data over two mirrored trees).
    AllReduceTree,
    /// Ring all-gather.
    AllGather,
    /// Ring reduce-scatter.
    ReduceScatter,
    /// All-to-all with PXN: data for (node j, gpu h) goes over NVLink to GPU h of
    /// the sender's node, then over rail h.
    AllToAll,
    /// All-reduce with in-network aggregation (NCCL's CollNet over SHARP, with
    /// NVLink SHARP inside the server where the scenario's GPUs have it): each
    /// server reduces inside over NVLink, NIC `r` sends its shard up rail `r`'s
    /// aggregation tree of switches once and receives the result once
    /// ([`crate::sharp`]). InfiniBand switches only; flow level only (the
    /// switches, not the ranks, reduce, so there is no point-to-point schedule).
    AllReduceSharp,
}

impl Collective {
    /// Every collective, in report order.
    pub const ALL: [Collective; 5] = [
        Collective::AllReduceRing,
        Collective::AllReduceTree,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllToAll,
    ];

    /// nccl-tests' bus-bandwidth factor for `n` ranks (nccl-tests keeps the
    /// all-reduce factor for CollNet and NVLS, so their busbw can exceed the
    /// wire's: nccl-tests#212, #312).
    pub fn busbw_factor(self, n: u32) -> f64 {
        let n = f64::from(n);
        match self {
            Collective::AllReduceRing | Collective::AllReduceTree | Collective::AllReduceSharp => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => (n - 1.0) / n,
        }
    }

    /// Name as nccl-tests spells the test binary's op.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduceRing => "all_reduce (ring)",
            Collective::AllReduceTree => "all_reduce (tree)",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllToAll => "alltoall",
            Collective::AllReduceSharp => "all_reduce (SHARP)",
        }
    }

    /// Short identifier used in scenario files and JSON.
    pub fn id(self) -> &'static str {
        match self {
            Collective::AllReduceRing => "all-reduce-ring",
            Collective::AllReduceTree => "all-reduce-tree",
            Collective::AllGather => "all-gather",
            Collective::ReduceScatter => "reduce-scatter",
            Collective::AllToAll => "all-to-all",
            Collective::AllReduceSharp => "all-reduce-sharp",
        }
    }
}

/// algbw and busbw in GB/s (1e9 bytes/s) as nccl-tests prints them. `size` is the
/// nccl-tests size column: the per-rank buffer for all-reduce, the total for the
/// others (`count · typesize · nranks`).
pub fn nccl_bandwidth(op: Collective, size_bytes: u64, nranks: u32, time_ps: u64) -> (f64, f64) {
    if time_ps == 0 {
        return (0.0, 0.0);
    }
    let algbw = size_bytes as f64 / (time_ps as f64 * 1e-12) / 1e9;
    (algbw, algbw * op.busbw_factor(nranks))
}

/// A rank: GPU `gpu` of node `node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Rank {
    pub node: u32,
    pub gpu: u32,
}

/// How a transfer travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Via {
    /// Inside a node over NVLink/NVSwitch.
    NvLink,
    /// Over the network on `rail`: NIC `rail` of the source node to NIC `rail` of the
    /// destination node.
    Rail(u32),
}

/// One point-to-point transfer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer {
    pub src: Rank,
    pub dst: Rank,
    pub bytes: u64,
    pub via: Via,
    /// Transfers that must be delivered before this one starts (indices into
    /// [`Schedule::transfers`], always smaller than this transfer's own index).
    pub deps: Vec<u32>,
}

/// A collective as a dependency graph of transfers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    pub op: Collective,
    pub nodes: u32,
    pub gpus: u32,
    /// The nccl-tests size column for this run.
    pub size_bytes: u64,
    pub transfers: Vec<Transfer>,
}

/// Bandwidth and latency of the two kinds of hop, for [`Schedule::ideal_time_ps`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HopCost {
    /// Bytes per second.
    pub bytes_per_s: f64,
    /// Fixed latency per transfer, picoseconds.
    pub latency_ps: u64,
}

/// Why a schedule could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScheduleError {
    #[error("a collective needs at least 2 ranks, got {nodes} nodes × {gpus} GPUs")]
    TooFewRanks { nodes: u32, gpus: u32 },
    #[error("message size {size} B is too small to split over {parts} chunks")]
    TooSmall { size: u64, parts: u64 },
    /// The collective reduces in the switches: it has no point-to-point schedule.
    #[error("{op} reduces in the switches and has no point-to-point schedule; it runs at flow level only")]
    InNetwork { op: &'static str },
}

/// A collective to run: what [`Schedule::build`] takes, so a world that models the
/// collective without its per-chunk graph need not build it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CollectiveSpec {
    pub op: Collective,
    pub nodes: u32,
    pub gpus: u32,
    /// The nccl-tests size column.
    pub size_bytes: u64,
}

impl CollectiveSpec {
    /// The spec, once [`Schedule::build`] would accept it.
    pub fn new(op: Collective, nodes: u32, gpus: u32, size_bytes: u64) -> Result<CollectiveSpec, ScheduleError> {
        let s = CollectiveSpec {
            op,
            nodes,
            gpus,
            size_bytes,
        };
        s.check()?;
        Ok(s)
    }

    /// The checks [`Schedule::build`] makes, without building.
    fn check(&self) -> Result<(), ScheduleError> {
        let (nodes, gpus, size) = (self.nodes, self.gpus, self.size_bytes);
        let n = u64::from(nodes) * u64::from(gpus);
        if n < 2 || gpus == 0 {
            return Err(ScheduleError::TooFewRanks { nodes, gpus });
        }
        let parts = match self.op {
            Collective::AllReduceRing | Collective::ReduceScatter | Collective::AllGather => n * u64::from(gpus),
            Collective::AllReduceTree => u64::from(gpus) * tree_pipeline(size / u64::from(gpus)),
            Collective::AllToAll => n,
            // one shard per rail
            Collective::AllReduceSharp => u64::from(gpus),
        };
        if size < parts {
            return Err(ScheduleError::TooSmall { size, parts });
        }
        Ok(())
    }

    /// The per-chunk schedule.
    pub fn schedule(&self) -> Result<Schedule, ScheduleError> {
        Schedule::build(self.op, self.nodes, self.gpus, self.size_bytes)
    }

    /// Ranks.
    pub fn ranks(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.gpus)
    }

    /// A ring collective's steps per channel (all-reduce 2(n−1), all-gather and
    /// reduce-scatter n−1) and its chunk, as [`Schedule::build`] cuts them; `None`
    /// for the others.
    pub fn ring_steps(&self) -> Option<(u64, u64)> {
        let n = self.ranks();
        let steps = match self.op {
            Collective::AllReduceRing => 2 * (n - 1),
            Collective::ReduceScatter | Collective::AllGather => n - 1,
            Collective::AllReduceTree | Collective::AllToAll | Collective::AllReduceSharp => return None,
        };
        Some((steps, self.size_bytes / u64::from(self.gpus) / n))
    }

    /// The rank at ring position `pos` of channel `channel` (see [`Schedule`]'s
    /// ring: channel c visits each node's GPUs c, c+1, …).
    pub fn ring_rank(&self, channel: u32, pos: u64) -> Rank {
        let g = u64::from(self.gpus);
        Rank {
            node: (pos / g) as u32,
            gpu: ((u64::from(channel) + pos % g) % g) as u32,
        }
    }
}

/// Chunks per channel of the tree all-reduce for `per_channel` bytes: 512 KiB
/// chunks, an even number from 2 to 64.
fn tree_pipeline(per_channel: u64) -> u64 {
    (per_channel / (512 << 10)).clamp(2, 64) & !1
}

impl Schedule {
    /// Build the schedule of `op` for `size_bytes` (nccl-tests' size column) on
    /// `nodes × gpus` ranks.
    pub fn build(op: Collective, nodes: u32, gpus: u32, size_bytes: u64) -> Result<Schedule, ScheduleError> {
        let n = u64::from(nodes) * u64::from(gpus);
        if n < 2 || gpus == 0 {
            return Err(ScheduleError::TooFewRanks { nodes, gpus });
        }
        let mut s = Schedule {
            op,
            nodes,
            gpus,
            size_bytes,
            transfers: Vec::new(),
        };
        match op {
            Collective::AllReduceRing => s.ring(size_bytes, 2 * (n - 1))?,
            // Reduce-scatter and all-gather move (n-1) chunks of size/n each; their
            // nccl-tests size is the total, so the per-rank buffer is size/n · n.
            Collective::ReduceScatter | Collective::AllGather => s.ring(size_bytes, n - 1)?,
            Collective::AllReduceTree => s.tree(size_bytes)?,
            Collective::AllToAll => s.all_to_all(size_bytes)?,
            Collective::AllReduceSharp => return Err(ScheduleError::InNetwork { op: op.id() }),
        }
        Ok(s)
    }

    fn rank_of_ring_pos(&self, channel: u32, pos: u64) -> Rank {
        let g = u64::from(self.gpus);
        let node = (pos / g) as u32;
        let gpu = ((u64::from(channel) + pos % g) % g) as u32;
        Rank { node, gpu }
    }

    fn push(&mut self, src: Rank, dst: Rank, bytes: u64, deps: Vec<u32>) -> u32 {
        let via = if src.node == dst.node {
            Via::NvLink
        } else {
            Via::Rail(dst.gpu)
        };
        // Under PXN the inter-node hop leaves from the NIC of the destination's rail.
        self.transfers.push(Transfer {
            src,
            dst,
            bytes,
            via,
            deps,
        });
        (self.transfers.len() - 1) as u32
    }

    /// Ring with `steps` steps per channel; the buffer per channel is split into n chunks.
    fn ring(&mut self, buffer: u64, steps: u64) -> Result<(), ScheduleError> {
        let n = u64::from(self.nodes) * u64::from(self.gpus);
        let parts = n * u64::from(self.gpus);
        if buffer < parts {
            return Err(ScheduleError::TooSmall { size: buffer, parts });
        }
        // For all-gather/reduce-scatter the nccl-tests size is the total of all ranks'
        // chunks; for all-reduce it is the per-rank buffer. Both split into n chunks.
        let per_channel = buffer / u64::from(self.gpus);
        let chunk = per_channel / n;
        for c in 0..self.gpus {
            // ids[pos] = index of the transfer sent by ring position pos at the previous step
            let mut prev: Vec<Option<u32>> = vec![None; n as usize];
            for _step in 0..steps {
                let mut cur = vec![None; n as usize];
                for pos in 0..n {
                    let src = self.rank_of_ring_pos(c, pos);
                    // The wrap-around (last GPU of node N-1 to the first of node 0) uses
                    // the same rule: the ring position after n-1 is 0.
                    let dst = self.rank_of_ring_pos(c, (pos + 1) % n);
                    // A step's chunk can go once the predecessor's chunk of the previous
                    // step has arrived (it is reduced or copied into it). Sends of one
                    // rank queue on its link in step order; NCCL keeps up to
                    // NCCL_STEPS = 8 slices in flight, so the link is not idle between
                    // steps.
                    let mut deps = Vec::with_capacity(1);
                    if let Some(d) = prev[((pos + n - 1) % n) as usize] {
                        deps.push(d);
                    }
                    let id = self.push_ring(src, dst, chunk, deps, c);
                    cur[pos as usize] = Some(id);
                }
                prev = cur;
            }
        }
        Ok(())
    }

    fn push_ring(&mut self, src: Rank, dst: Rank, bytes: u64, deps: Vec<u32>, channel: u32) -> u32 {
        let via = if src.node == dst.node {
            Via::NvLink
        } else {
            Via::Rail(channel)
        };
        self.transfers.push(Transfer {
            src,
            dst,
            bytes,
            via,
            deps,
        });
        (self.transfers.len() - 1) as u32
    }

    /// Per channel c: reduce along the intra-node chain to GPU c, then up a binary tree
    /// of nodes (rail c), then broadcast down and along the chain. Data is cut into
    /// `pipeline` chunks that flow one behind the other (NCCL pipelines its trees).
    fn tree(&mut self, buffer: u64) -> Result<(), ScheduleError> {
        // NCCL moves tree data in slices of a few hundred KiB; cut each channel's
        // share into 512 KiB chunks (an even number, 2 to 64) so the two trees
        // alternate evenly and the pipeline fills quickly.
        let g = self.gpus;
        let per_channel = buffer / u64::from(g);
        let pipeline = tree_pipeline(per_channel);
        let parts = u64::from(g) * pipeline;
        if buffer < parts {
            return Err(ScheduleError::TooSmall { size: buffer, parts });
        }
        let chunk = buffer / parts;
        let nodes = self.nodes;
        for c in 0..g {
            // Only data dependencies are edges of the graph: chunks that share a link
            // queue at its sender in the order they become ready, as on a NIC or an
            // NVLink port (ordering them by creation would chain the two trees).
            for k in 0..pipeline {
                // up: chain within node ends at GPU c; `ready[node]` = transfer that
                // delivered this chunk's partial sum to GPU c of that node.
                let mut ready: Vec<Option<u32>> = vec![None; nodes as usize];
                for node in 0..nodes {
                    let mut last: Option<u32> = None;
                    // chain c+g-1 → c+g-2 → … → c+1 → c (the broadcast runs the other way,
                    // so the two never share a directed NVLink edge)
                    for i in (1..g).rev() {
                        let from = Rank { node, gpu: (c + i) % g };
                        let to = Rank {
                            node,
                            gpu: (c + i - 1) % g,
                        };
                        let deps: Vec<u32> = last.into_iter().collect();
                        let id = self.push_ring(from, to, chunk, deps, c);
                        last = Some(id);
                    }
                    ready[node as usize] = last;
                }
                // NCCL's double binary tree: consecutive chunks alternate between a
                // tree in heap order over the nodes and its mirror image, in which
                // every inner node of the first is a leaf, so each NIC carries about
                // the same load (Sanders et al., "Two-tree algorithms for full bandwidth
                // broadcast, reduction and scan", Parallel Computing 2009).
                let mirror = k % 2 == 1;
                let phys = |pos: u32| if mirror { nodes - 1 - pos } else { pos };
                // up the tree (parent of position i is (i-1)/2), deepest first so
                // children are done before parents send.
                let mut up_done: Vec<Vec<u32>> = vec![Vec::new(); nodes as usize];
                for pos in (1..nodes).rev() {
                    let parent = (pos - 1) / 2;
                    let from = Rank {
                        node: phys(pos),
                        gpu: c,
                    };
                    let to = Rank {
                        node: phys(parent),
                        gpu: c,
                    };
                    let mut deps: Vec<u32> = ready[phys(pos) as usize].into_iter().collect();
                    deps.extend(up_done[pos as usize].iter().copied());
                    let id = self.push_ring(from, to, chunk, deps, c);
                    up_done[parent as usize].push(id);
                }
                // the root has the full sum once its chain and children are in
                let mut root_deps: Vec<u32> = ready[phys(0) as usize].into_iter().collect();
                root_deps.extend(up_done[0].iter().copied());
                // down the tree; `have[pos]` = what delivered the result to that position
                let mut have: Vec<Vec<u32>> = vec![Vec::new(); nodes as usize];
                have[0] = root_deps;
                for pos in 1..nodes {
                    let parent = (pos - 1) / 2;
                    let from = Rank {
                        node: phys(parent),
                        gpu: c,
                    };
                    let to = Rank {
                        node: phys(pos),
                        gpu: c,
                    };
                    let mut deps = have[parent as usize].clone();
                    deps.extend(up_done[pos as usize].iter().copied());
                    let id = self.push_ring(from, to, chunk, deps, c);
                    have[pos as usize] = vec![id];
                }
                // broadcast along the chain inside each node: c → c+1 → … → c-1
                for node in 0..nodes {
                    // phys is its own inverse: the position of a node is phys(node)
                    let mut last_deps = have[phys(node) as usize].clone();
                    for i in 0..g - 1 {
                        let from = Rank { node, gpu: (c + i) % g };
                        let to = Rank {
                            node,
                            gpu: (c + i + 1) % g,
                        };
                        let deps = last_deps.clone();
                        let id = self.push_ring(from, to, chunk, deps, c);
                        last_deps = vec![id];
                    }
                }
            }
        }
        Ok(())
    }

    /// Every rank sends `size/n` bytes to every other rank (nccl-tests' size is one
    /// rank's send buffer). Cross-node data is first moved over NVLink to the GPU on
    /// the destination's rail (PXN), then sent over that rail.
    fn all_to_all(&mut self, total: u64) -> Result<(), ScheduleError> {
        let n = u64::from(self.nodes) * u64::from(self.gpus);
        if total < n {
            return Err(ScheduleError::TooSmall { size: total, parts: n });
        }
        // nccl-tests' alltoall size is one rank's buffer: count · typesize · nranks,
        // with `count` elements for each peer.
        let per_pair = total / n;
        for sn in 0..self.nodes {
            for sg in 0..self.gpus {
                let src = Rank { node: sn, gpu: sg };
                for dn in 0..self.nodes {
                    for dg in 0..self.gpus {
                        let dst = Rank { node: dn, gpu: dg };
                        if src == dst {
                            continue;
                        }
                        // same server (NVLink) or already on the destination's rail
                        if sn == dn || sg == dg {
                            self.push(src, dst, per_pair, Vec::new());
                        } else {
                            let hop = self.push(src, Rank { node: sn, gpu: dg }, per_pair, Vec::new());
                            self.push(Rank { node: sn, gpu: dg }, dst, per_pair, vec![hop]);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Contention-free completion time: every transfer starts when its dependencies
    /// are delivered and its sender's port for that hop kind is free, and takes
    /// `latency + bytes / bandwidth`, ports serving in order of readiness. The fabric
    /// itself is assumed free of contention, so the packet simulation should not beat
    /// it by more than rounding.
    pub fn ideal_time_ps(&self, nvlink: HopCost, nic: HopCost) -> u64 {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = self.transfers.len();
        // dependents lists and pending-dependency counts
        let mut pending: Vec<u32> = self.transfers.iter().map(|t| t.deps.len() as u32).collect();
        let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, t) in self.transfers.iter().enumerate() {
            for &d in &t.deps {
                dependents[d as usize].push(i as u32);
            }
        }
        let mut ready_at = vec![0u64; n];
        // Serve transfers in order of the time they became ready (ties by index), so
        // each egress port is FIFO in ready time and no port idles while work waits.
        let mut heap: BinaryHeap<Reverse<(u64, u32)>> = (0..n as u32)
            .filter(|&i| pending[i as usize] == 0)
            .map(|i| Reverse((0, i)))
            .collect();
        let mut nvl_free = std::collections::BTreeMap::<Rank, u64>::new();
        let mut nic_free = std::collections::BTreeMap::<(u32, u32), u64>::new();
        let mut end = 0;
        while let Some(Reverse((ready, i))) = heap.pop() {
            let t = &self.transfers[i as usize];
            let (cost, free) = match t.via {
                Via::NvLink => (nvlink, nvl_free.entry(t.src).or_insert(0)),
                Via::Rail(r) => (nic, nic_free.entry((t.src.node, r)).or_insert(0)),
            };
            let start = ready.max(*free);
            let ser = (t.bytes as f64 / cost.bytes_per_s * 1e12).round() as u64;
            *free = start + ser;
            let done = start + ser + cost.latency_ps;
            end = end.max(done);
            for &d in &dependents[i as usize] {
                let d = d as usize;
                ready_at[d] = ready_at[d].max(done);
                pending[d] -= 1;
                if pending[d] == 0 {
                    heap.push(Reverse((ready_at[d], d as u32)));
                }
            }
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NVL: HopCost = HopCost {
        bytes_per_s: 450e9,
        latency_ps: 1_000_000,
    };
    const NIC: HopCost = HopCost {
        bytes_per_s: 50e9,
        latency_ps: 2_000_000,
    };

    #[test]
    fn busbw_factors_match_nccl_tests() {
        assert!((Collective::AllReduceRing.busbw_factor(16) - 1.875).abs() < 1e-12);
        assert!((Collective::AllGather.busbw_factor(16) - 0.9375).abs() < 1e-12);
        let (alg, bus) = nccl_bandwidth(Collective::AllReduceRing, 1_000_000_000, 16, 100_000_000_000);
        assert!((alg - 10.0).abs() < 1e-9);
        assert!((bus - 18.75).abs() < 1e-9);
    }

    #[test]
    fn ring_all_reduce_moves_2_n_minus_1_over_n_of_the_buffer_per_rank() {
        let (nodes, gpus, size) = (4u32, 8u32, 64u64 << 20);
        let s = Schedule::build(Collective::AllReduceRing, nodes, gpus, size).unwrap();
        let n = u64::from(nodes * gpus);
        // Every rank sends 2(n-1) chunks of size/(g·n) on each of g channels.
        assert_eq!(s.transfers.len() as u64, u64::from(gpus) * n * 2 * (n - 1));
        let per_rank_sent: u64 = s
            .transfers
            .iter()
            .filter(|t| t.src == Rank { node: 1, gpu: 3 })
            .map(|t| t.bytes)
            .sum();
        // ...and it sits on every channel's ring.
        let expect = u64::from(gpus) * 2 * (n - 1) * (size / u64::from(gpus) / n);
        assert_eq!(per_rank_sent, expect);
        // Channel c crosses the network only on rail c; each node boundary once per step.
        for t in &s.transfers {
            if let Via::Rail(r) = t.via {
                assert_eq!(
                    t.src.gpu,
                    (r + gpus - 1) % gpus,
                    "PXN: last GPU of the node ring sends on rail {r}"
                );
                assert_eq!(t.dst.gpu, r);
            }
        }
        // deps always point backwards
        for (i, t) in s.transfers.iter().enumerate() {
            assert!(t.deps.iter().all(|&d| (d as usize) < i));
        }
    }

    #[test]
    fn ring_ideal_busbw_is_the_nic_rate_times_rails() {
        // Large messages: busbw → gpus × NIC rate (8 × 50 GB/s = 400 GB/s per node).
        let s = Schedule::build(Collective::AllReduceRing, 4, 8, 1 << 30).unwrap();
        let t = s.ideal_time_ps(NVL, NIC);
        let (_, bus) = nccl_bandwidth(Collective::AllReduceRing, 1 << 30, 32, t);
        assert!(bus > 380.0 && bus <= 400.0, "busbw {bus}");
    }

    #[test]
    fn tree_and_all_to_all_complete_and_reach_every_rank() {
        let s = Schedule::build(Collective::AllReduceTree, 4, 4, 16 << 20).unwrap();
        for node in 0..4 {
            for gpu in 0..4 {
                let r = Rank { node, gpu };
                assert!(s.transfers.iter().any(|t| t.dst == r) || (node == 0 && gpu == 0));
            }
        }
        assert!(s.ideal_time_ps(NVL, NIC) > 0);
        let a = Schedule::build(Collective::AllToAll, 2, 4, 8 << 20).unwrap();
        // cross-node pairs: 8 ranks × 4 remote ranks; each goes through NVLink unless gpu matches
        let rail: Vec<_> = a.transfers.iter().filter(|t| matches!(t.via, Via::Rail(_))).collect();
        assert_eq!(rail.len(), 8 * 4);
        assert!(
            rail.iter()
                .all(|t| matches!(t.via, Via::Rail(r) if r == t.dst.gpu && t.src.gpu == t.dst.gpu))
        );
    }

    #[test]
    fn rejects_degenerate_inputs() {
        assert!(matches!(
            Schedule::build(Collective::AllReduceRing, 1, 1, 1 << 20),
            Err(ScheduleError::TooFewRanks { .. })
        ));
        assert!(matches!(
            Schedule::build(Collective::AllReduceRing, 2, 8, 10),
            Err(ScheduleError::TooSmall { .. })
        ));
    }
}
#[cfg(test)]
mod tree_tests {
    use super::*;

    #[test]
    fn double_binary_tree_balances_the_nics_and_pipelines() {
        let nvl = HopCost {
            bytes_per_s: 450e9,
            latency_ps: 1_000_000,
        };
        let nic = HopCost {
            bytes_per_s: 50e9,
            latency_ps: 500_000,
        };
        let size = 256u64 << 20;
        let s = Schedule::build(Collective::AllReduceTree, 16, 8, size).unwrap();
        // every node's NIC on each rail sends about the same: inner in one tree, leaf in the other
        let mut sent = std::collections::BTreeMap::<(u32, u32), u64>::new();
        for t in &s.transfers {
            if let Via::Rail(r) = t.via {
                *sent.entry((t.src.node, r)).or_default() += t.bytes;
            }
        }
        let (lo, hi) = (sent.values().min().unwrap(), sent.values().max().unwrap());
        assert!(*hi as f64 / *lo as f64 <= 3.0, "NIC load {lo}..{hi}");
        let t = s.ideal_time_ps(nvl, nic);
        let (_, bus) = nccl_bandwidth(Collective::AllReduceTree, size, 128, t);
        let per_nic = bus / 8.0;
        assert!(per_nic > 30.0 && per_nic < 50.0, "tree busbw per NIC {per_nic}");
        // no dependency chains one chunk behind another: the critical path with
        // unlimited ports is a small part of the run
        let mut done = vec![0u64; s.transfers.len()];
        for (i, tr) in s.transfers.iter().enumerate() {
            let r = tr.deps.iter().map(|&d| done[d as usize]).max().unwrap_or(0);
            let c = match tr.via {
                Via::NvLink => nvl,
                Via::Rail(_) => nic,
            };
            done[i] = r + (tr.bytes as f64 / c.bytes_per_s * 1e12) as u64 + c.latency_ps;
        }
        assert!(*done.iter().max().unwrap() < t / 4);
    }
}
