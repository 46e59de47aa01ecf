//! perftest over a comparison's NICs and switches.

use super::*;

/// perftest between two NICs of a comparison's fabric: what `ib_write_lat` and
/// `ib_write_bw` would print for the variants' NICs (`crate::endpoints`) on the
/// scenario's switches, two hosts under one leaf. InfiniBand with the SM's
/// routes and the HCA model; RoCEv2 as the tuned variant runs it (PFC, ECN,
/// DCQCN), its NIC latency through [`crate::runner::NicDelay`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfFabric {
    Infiniband,
    Rocev2,
}

/// What [`perftest`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfResult {
    /// One-way latency of a lone message (post to arrival), ns: the same for
    /// every iteration on an idle fabric.
    pub latency_ns: f64,
    /// Payload rate with `depth` messages of `size` outstanding, Gb/s.
    pub bw_gbps: f64,
}

/// Run `iters` lone messages of `lat_bytes` (latency) and `iters` messages of
/// `bw_bytes` with `depth` outstanding (bandwidth) between two NICs at
/// `nic_gbps` under one switch of the scenario's kind.
pub fn perftest(
    fabric: PerfFabric,
    nic_gbps: u32,
    lat_bytes: u64,
    bw_bytes: u64,
    iters: u64,
    depth: u64,
) -> Result<PerfResult, CompareError> {
    let mut s = Scenario::default_rail();
    s.cluster.servers = 2;
    s.cluster.gpus_per_server = 1;
    s.cluster.radix = 8;
    s.cluster.nic_gbps = nic_gbps;
    s.cluster.scalable_units = None;
    s.cluster.leaf_uplinks = None;
    let v = s
        .variants
        .iter()
        .find(|v| match (fabric, &v.fabric) {
            (PerfFabric::Infiniband, VariantFabric::Infiniband { .. }) => true,
            (
                PerfFabric::Rocev2,
                VariantFabric::Rocev2 {
                    pfc, dcqcn, lossy_hops, ..
                },
            ) => *pfc && dcqcn.is_some() && lossy_hops.is_empty(),
            _ => false,
        })
        .cloned()
        .expect("the default scenario has both");
    let tech = match fabric {
        PerfFabric::Infiniband => Tech::InfiniBand,
        PerfFabric::Rocev2 => Tech::Ethernet,
    };
    let f = cluster::build(&s.cluster, tech)?;
    let nics = nic_map(&v, &f)?;
    let (a, b) = (nics.nic[0][0], nics.nic[1][0]);
    let run = |net: &mut dyn crate::runner::Network| -> Result<PerfResult, RunError> {
        measure(net, a, b, lat_bytes, bw_bytes, iters, depth)
    };
    let err = |source| CompareError::Run {
        variant: v.id.clone(),
        source,
    };
    match (fabric, &v.fabric) {
        (PerfFabric::Infiniband, VariantFabric::Infiniband { engines }) => {
            let nic = Nic::of(None, None, &crate::endpoints::IB_HCA);
            let opts = sm::run::RunOptions {
                engines: engines.to_vec(),
                ..Default::default()
            };
            let (tables, _) = sm::run::run(&f, &opts)?;
            let mut sim = sim::Sim::new(&f, &tables, ib_config(nic), sim::EngineConfig::default())
                .map_err(|e| err(RunError::Sim(e)))?;
            run(&mut crate::runner::IbNet::new(&mut sim)).map_err(err)
        }
        (
            PerfFabric::Rocev2,
            VariantFabric::Rocev2 {
                pfc,
                dcqcn,
                ecn,
                lossy_hops,
                ..
            },
        ) => {
            let nic = Nic::of(None, None, &crate::endpoints::ROCE_NIC);
            let mut cfg = roce_config(&s, &v, &f, *pfc, *dcqcn, *ecn, lossy_hops)?;
            cfg.nic.payload_ppm = nic.payload_ppm;
            let mut sim = sim::roce::net::RoceSim::new(&f, cfg, &[]).map_err(|e| err(RunError::Roce(e)))?;
            let mut roce = crate::runner::RoceNet::new(&mut sim, &f);
            run(&mut crate::runner::NicDelay::new(
                &mut roce,
                nic.latency.tx_ps,
                nic.latency.rx_ps,
            ))
            .map_err(err)
        }
        _ => unreachable!("the variant was chosen by fabric"),
    }
}

/// [`perftest`]'s two measurements on one network.
fn measure(
    net: &mut dyn crate::runner::Network,
    a: NodeId,
    b: NodeId,
    lat_bytes: u64,
    bw_bytes: u64,
    iters: u64,
    depth: u64,
) -> Result<PerfResult, RunError> {
    use crate::runner::{Class, NetStep};
    let iters = iters.max(1);
    let mut one_way = Vec::with_capacity(iters as usize);
    for i in 0..iters {
        net.post(a, b, Class::Bulk, lat_bytes, i)?;
        loop {
            match net.advance(u64::MAX)? {
                NetStep::Delivered(ds) => {
                    one_way.extend(ds.iter().map(|d| d.done_ps - d.posted_ps));
                    break;
                }
                NetStep::Reached => {}
                NetStep::Idle => return Err(RunError::Stalled(1)),
                NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
            }
        }
        // let the ACKs drain: every sample starts on an idle fabric
        while !matches!(net.advance(u64::MAX)?, NetStep::Idle) {}
    }
    one_way.sort_unstable();
    let latency_ns = one_way[one_way.len() / 2] as f64 / 1e3;
    let start = net.now_ps();
    let (mut posted, mut done, mut last) = (0u64, 0u64, start);
    while posted < iters.min(depth.max(1)) {
        net.post(a, b, Class::Bulk, bw_bytes, iters + posted)?;
        posted += 1;
    }
    while done < iters {
        match net.advance(u64::MAX)? {
            NetStep::Delivered(ds) => {
                for d in ds {
                    done += 1;
                    last = last.max(d.done_ps);
                    if posted < iters {
                        net.post(a, b, Class::Bulk, bw_bytes, iters + posted)?;
                        posted += 1;
                    }
                }
            }
            NetStep::Reached => {}
            NetStep::Idle => return Err(RunError::Stalled((iters - done) as usize)),
            NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
        }
    }
    let bw_gbps = (iters * bw_bytes) as f64 * 8.0 / ((last - start).max(1) as f64 / 1e12) / 1e9;
    Ok(PerfResult { latency_ns, bw_gbps })
}
