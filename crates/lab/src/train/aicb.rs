//! A SimAI/AICB workload file run as `train` runs a job: its operations placed
//! and priced on the fabric, its compute from the file's ticks.

use super::*;

/// Why an imported workload cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The header lacks a key placement needs.
    #[error("{file}: the header has no {key:?}; placing the job on a cluster needs it")]
    Missing {
        /// The file.
        file: String,
        /// The header key.
        key: &'static str,
    },
    /// The file's operations could not be formed.
    #[error(transparent)]
    Aicb(#[from] workload::aicb::Error),
    /// Building, routing or pricing failed.
    #[error(transparent)]
    Train(#[from] TrainError),
}

/// How many times per iteration a rank runs `op` of an imported workload: the
/// layer lines' forward and input-gradient collectives once per micro-batch, the
/// weight-gradient ones once per iteration (gradients accumulate over the
/// micro-batches and reduce once, as SimAI runs a `ga` > 1 workload), the
/// pipeline sends as the file's count says.
fn aicb_times(op: &CommOp, m: u64) -> u64 {
    match (op.group, op.overlap) {
        (workload::comm::Group::Pp, _) => op.count,
        (_, workload::comm::Overlap::Backward) => op.count,
        _ => op.count * m,
    }
}

/// One iteration of a SimAI/AICB workload file on a scalable-unit cluster: the
/// file's operations placed as [`FabricNetwork`] places a generated job (packed,
/// Megatron rank order, tp·pp·dp = `all_gpus`) and priced on the fabric; compute
/// from the file's Ticks (1 ns each). The iteration, per micro-batch `ga` times:
/// every layer's forward and backward compute with its forward and
/// input-gradient collectives exposed, and the pipeline's sends; then the
/// weight-gradient collectives, hidden behind one micro-batch's backward compute
/// as far as it lasts; the 1F1B bubble `(pp − 1)` micro-batches of the stage; the
/// weight update. (SimAI's own scheduler overlaps more finely; this is its
/// critical path at the granularity of the file's columns.)
pub fn run_aicb(
    w: &workload::aicb::Workload,
    cluster: &TrainCluster,
    pricing: Pricing,
    seed: u64,
) -> Result<TrainRun, ImportError> {
    use workload::comm::{Overlap, Phase};
    let wall = std::time::Instant::now();
    let h = &w.header;
    let missing = |key| ImportError::Missing {
        file: w.file.clone(),
        key,
    };
    let gpus = h.all_gpus.ok_or_else(|| missing("all_gpus"))?;
    let g = cluster.gpus_per_server.max(1);
    let (p, dp) = w.parallelism();
    let dp = dp.ok_or_else(|| missing("all_gpus"))?;
    let m = u64::from(h.ga.unwrap_or(1).max(1));
    let ops = w.ops(g)?;
    // a job with the file's parallelism, for placement (its model and GPU only
    // name the ideal network's NVLink: an H100's)
    let gpu = workload::gpu::Gpu::preset("h100").expect("the h100 preset");
    let job = Job {
        name: w.file.clone(),
        model: workload::model::Model::preset("llama3-8b").expect("the llama3-8b preset"),
        gpu,
        gpus,
        parallel: workload::parallel::Parallelism {
            dp: Some(dp),
            ..p.clone()
        },
        seq_len: 1,
        global_batch: u64::from(dp) * m,
        micro_batch: 1,
        router_skew: 1.0,
    };
    let Imported {
        built,
        placed,
        priced,
        price,
    } = Imported::price(cluster, &job, &ops, pricing, seed)?;
    let (f, route_s) = (&built.fabric, built.route_s);
    let ns = |x: u64| x as f64 * 1e-9;
    let fwd_c: f64 = w.layers.iter().map(|l| ns(l.fwd.compute_ns)).sum();
    let bwd_c: f64 = w.layers.iter().map(|l| ns(l.ig.compute_ns + l.wg.compute_ns)).sum();
    let update: f64 = w.layers.iter().map(|l| ns(l.wg_update_ns)).sum();
    let mf = m as f64;
    let iter = |t: &dyn Fn(&OpPrice) -> f64| {
        // per micro-batch: exposed collectives and one send each way
        let per_mb: f64 = priced
            .iter()
            .filter(|o| o.op.overlap == Overlap::Exposed)
            .map(|o| {
                let per = aicb_times(&o.op, m) as f64 / mf;
                t(o) * per
            })
            .sum();
        let wg: f64 = priced
            .iter()
            .filter(|o| o.op.overlap == Overlap::Backward && o.op.phase == Phase::Backward)
            .map(|o| t(o) * o.op.count as f64)
            .sum();
        let exposed_wg = (wg - bwd_c).max(0.0);
        let stage_mb = fwd_c + bwd_c + per_mb;
        let bubble = f64::from(p.pp.saturating_sub(1)) * stage_mb;
        let compute = mf * (fwd_c + bwd_c) + update;
        let exposed = mf * per_mb + exposed_wg;
        IterTime {
            compute_s: compute,
            bubble_s: bubble,
            exposed_comm_s: exposed,
            total_s: compute + bubble + exposed,
            // the file gives times, not FLOPs
            tflops_per_gpu: f64::NAN,
        }
    };
    let ideal = iter(&|o: &OpPrice| o.ideal_s);
    let on_fabric = iter(&|o: &OpPrice| o.fabric_s);
    let mut bytes: BTreeMap<u8, (workload::comm::Group, u64, u64)> = BTreeMap::new();
    for op in &ops {
        let b = (op.kind.bus_factor(op.ranks) * op.bytes as f64).round() as u64 * aicb_times(op, m);
        let e = bytes.entry(op.group as u8).or_insert((op.group, 0, 0));
        match op.link {
            Link::Network => e.1 += b,
            Link::NvLink => e.2 += b,
        }
    }
    Ok(TrainRun {
        job: w.file.clone(),
        model: format!("SimAI/AICB workload, {:?}, {} layer lines", h.policy, w.layers.len()),
        gpus,
        parallel: format!("tp {} · pp {} · dp {dp} · ep {} · ga {m}", p.tp, p.pp, p.ep),
        cluster: built.describe(cluster),
        placement: describe_placement(cluster.placement, &placed, built.per_su as usize),
        routed_by: built.routed_by(),
        beside: String::new(),
        joint: None,
        servers: built.sus * built.per_su,
        switches: f.count(fabric::NodeKind::Switch) as u32,
        engine: engine_name(pricing),
        efficiency: f64::NAN,
        efficiency_source: "compute from the file's Ticks (1 ns each)".into(),
        ops: priced,
        bytes_per_rank: bytes
            .into_values()
            .map(|(group, network, nvlink)| GroupBytes { group, network, nvlink })
            .collect(),
        ideal,
        fabric: on_fabric,
        build_s: wall.elapsed().as_secs_f64(),
        route_s,
        price,
    })
}

/// An imported workload's job placed on its cluster and its operations priced.
pub(super) struct Imported {
    pub(super) built: Built,
    /// The servers it took.
    pub(super) placed: Vec<usize>,
    /// Every operation on the ideal network and on the fabric.
    pub(super) priced: Vec<OpPrice>,
    /// What the pricing took.
    pub(super) price: PriceEffortOut,
}

impl Imported {
    /// Build `cluster` for `job`, place it by `cluster.placement` and price
    /// `ops` on the fabric.
    pub(super) fn price(
        cluster: &TrainCluster,
        job: &Job,
        ops: &[CommOp],
        pricing: Pricing,
        seed: u64,
    ) -> Result<Imported, TrainError> {
        let built = Built::new(cluster, Built::units(cluster, job.gpus))?;
        let placed = cluster.placement.servers(
            (built.sus * built.per_su) as usize,
            built.per_su as usize,
            job.gpus.div_ceil(cluster.gpus_per_server.max(1)) as usize,
            seed,
        );
        let fab = PlaneNets::on(&built, job, pricing, seed, &placed).map_err(TrainError::Place)?;
        fab.price_ops(ops).map_err(TrainError::Place)?;
        let ideal_net = fab.ideal();
        let priced = ops
            .iter()
            .map(|op| OpPrice {
                op: op.clone(),
                ideal_s: ideal_net.op_time_s(op),
                fabric_s: fab.op_time_s(op),
                on_fabric: !fab.contention_free().contains(&op.label),
                detail: fab.detail(op),
            })
            .collect();
        let e = fab.effort();
        let price = PriceEffortOut {
            ops_run: e.ops_run,
            messages: e.messages,
            events: e.events,
            wall_s: e.wall_s,
        };
        drop(fab);
        Ok(Imported {
            built,
            placed,
            priced,
            price,
        })
    }
}
