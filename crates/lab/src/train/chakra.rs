//! A Chakra execution trace (what ASTRA-sim reads) run as `train` runs a job:
//! its collectives placed over every rank and priced on the fabric, its
//! compute from the nodes' durations, the iteration its dependency graph's
//! critical path.

use super::*;

/// Why a Chakra trace cannot run.
#[derive(Debug, thiserror::Error)]
pub enum ChakraError {
    /// The trace could not be read or formed into work.
    #[error(transparent)]
    Trace(#[from] workload::chakra::Error),
    /// Building, routing or pricing failed.
    #[error(transparent)]
    Train(#[from] TrainError),
}

/// One iteration of a Chakra trace on a scalable-unit cluster: its `n` ranks
/// placed as a tp 1, pp 1, dp `n` job (packed by `cluster.placement`), every
/// collective over all ranks priced on the fabric, and rank 0's dependency
/// graph replayed with unlimited streams (a node starts once what it depends
/// on is done), as ASTRA-sim's feeder issues ready nodes.
pub fn run_chakra(
    t: &workload::chakra::Trace,
    cluster: &TrainCluster,
    pricing: Pricing,
    seed: u64,
) -> Result<TrainRun, ChakraError> {
    use workload::chakra::{Work, critical_path};
    let wall = std::time::Instant::now();
    let (ops, steps) = t.ops()?;
    let gpus = t.ranks.len() as u32;
    // a job of the trace's ranks, for placement (its model and GPU only name
    // the ideal network's NVLink: an H100's)
    let job = Job {
        name: t.prefix.clone(),
        model: workload::model::Model::preset("llama3-8b").expect("the llama3-8b preset"),
        gpu: workload::gpu::Gpu::preset("h100").expect("the h100 preset"),
        gpus,
        parallel: workload::parallel::Parallelism {
            dp: Some(gpus),
            ..workload::parallel::Parallelism::default()
        },
        seq_len: 1,
        global_batch: u64::from(gpus),
        micro_batch: 1,
        router_skew: 1.0,
    };
    let super::aicb::Imported {
        built,
        placed,
        priced,
        price,
    } = super::aicb::Imported::price(cluster, &job, &ops, pricing, seed)?;
    let (f, route_s) = (&built.fabric, built.route_s);
    let compute: f64 = steps
        .iter()
        .map(|s| match s.work {
            Work::Compute(x) => x,
            _ => 0.0,
        })
        .sum();
    let iter = |time: &dyn Fn(&OpPrice) -> f64| {
        let total = critical_path(&steps, |w| match *w {
            Work::Compute(x) => x,
            Work::Comm(k) => time(&priced[k]),
            Work::None => 0.0,
        });
        let compute_path = critical_path(&steps, |w| match *w {
            Work::Compute(x) => x,
            _ => 0.0,
        });
        IterTime {
            compute_s: compute,
            bubble_s: 0.0,
            exposed_comm_s: total - compute_path,
            total_s: total,
            // the trace gives times, not FLOPs
            tflops_per_gpu: f64::NAN,
        }
    };
    let ideal = iter(&|o: &OpPrice| o.ideal_s);
    let on_fabric = iter(&|o: &OpPrice| o.fabric_s);
    let network: u64 = ops
        .iter()
        .map(|op| (op.kind.bus_factor(op.ranks) * op.bytes as f64).round() as u64 * op.count)
        .sum();
    Ok(TrainRun {
        job: t.prefix.clone(),
        model: format!(
            "Chakra execution trace, {} ranks, version {:?}, {} nodes on rank 0",
            gpus,
            t.ranks[0].version,
            t.ranks[0].nodes.len()
        ),
        gpus,
        parallel: format!("every collective over all {gpus} ranks"),
        cluster: built.describe(cluster),
        placement: describe_placement(cluster.placement, &placed, built.per_su as usize),
        routed_by: built.routed_by(),
        beside: String::new(),
        joint: None,
        servers: built.sus * built.per_su,
        switches: f.count(fabric::NodeKind::Switch) as u32,
        engine: engine_name(pricing),
        efficiency: f64::NAN,
        efficiency_source: "compute from the nodes' duration_micros".into(),
        ops: priced,
        bytes_per_rank: vec![GroupBytes {
            group: workload::comm::Group::Dp,
            network,
            nvlink: 0,
        }],
        ideal,
        fabric: on_fabric,
        build_s: wall.elapsed().as_secs_f64(),
        route_s,
        price,
    })
}
