//! The cluster a training job runs on, built and routed: InfiniBand by our SM,
//! or Ethernet with ECMP and the RoCE world's settings.

use super::*;

/// A scalable-unit cluster for `gpus` GPUs, built and routed by our SM.
pub(super) struct Built {
    pub(super) fabric: Fabric,
    pub(super) routing: BuiltRouting,
    pub(super) sus: u32,
    pub(super) per_su: u32,
    pub(super) route_s: f64,
}

/// What a built cluster forwards by.
pub(super) enum BuiltRouting {
    Ib(sm::RoutingTables),
    Eth(ethcp::EcmpTable, ethcp::HashConfig, Box<sim::roce::net::RoceConfig>),
}

impl Built {
    pub(super) fn route(&self) -> Route<'_> {
        match &self.routing {
            BuiltRouting::Ib(t) => Route::Ib(t),
            BuiltRouting::Eth(t, h, c) => Route::Eth(t, *h, c),
        }
    }

    /// Units and servers per unit for `gpus` GPUs: `cluster.sus`, else as few as
    /// hold them (at least two servers).
    pub(super) fn units(cluster: &TrainCluster, gpus: u32) -> (u32, u32) {
        let servers_needed = gpus.div_ceil(cluster.gpus_per_server.max(1)).max(2);
        match cluster.sus {
            Some(n) => (n, cluster.servers_per_su),
            None if servers_needed <= cluster.servers_per_su => (1, servers_needed),
            None => (servers_needed.div_ceil(cluster.servers_per_su), cluster.servers_per_su),
        }
    }

    /// `sus` units of `per_su` servers, routed with ftree (up/down if the tree is
    /// not regular).
    pub(super) fn new(cluster: &TrainCluster, (sus, per_su): (u32, u32)) -> Result<Built, TrainError> {
        let g = cluster.gpus_per_server.max(1);
        let tech = if cluster.fabric.is_ethernet() {
            crate::tco::Tech::Ethernet
        } else {
            crate::tco::Tech::InfiniBand
        };
        let rate = crate::cluster::link_rate(tech, cluster.nic_gbps).map_err(TrainError::Cluster)?;
        let fabric = fabric::generate::superpod(&fabric::generate::SuperPodParams {
            sus,
            servers_per_su: per_su,
            rails: g,
            radix: cluster.radix,
            uplinks: cluster.leaf_uplinks,
            rate,
            cabling: fabric::Cabling::default(),
            ..fabric::generate::SuperPodParams::default()
        })
        .map_err(TrainError::Cluster)?;
        let routed = std::time::Instant::now();
        let routing = match cluster.fabric {
            TrainFabric::Infiniband if !cluster.lossy_hops.is_empty() => {
                return Err(TrainError::Jobs(format!(
                    "--lossy-hop {}: a lossy hop is a RoCEv2 misconfiguration (the RDMA DSCP mapped to a lossy class); InfiniBand's credits have no such class",
                    cluster.lossy_hops.join(", ")
                )));
            }
            TrainFabric::Infiniband => {
                let o = sm::run::RunOptions {
                    engines: vec![sm::routing::EngineKind::Ftree, sm::routing::EngineKind::UpDn],
                    validate: false,
                    ..Default::default()
                };
                BuiltRouting::Ib(sm::run::run(&fabric, &o).map_err(TrainError::Route)?.0)
            }
            f @ (TrainFabric::Rocev2 | TrainFabric::Rocev2PfcOnly | TrainFabric::Rocev2Lossy) => {
                // compare's variant settings; the switches' hash seed follows the
                // run's, as compare's does
                let (pfc, dcqcn) = match f {
                    TrainFabric::Rocev2 => (true, true),
                    TrainFabric::Rocev2PfcOnly => (true, false),
                    _ => (false, true),
                };
                let mut cfg = crate::compare::roce_variant_config(
                    &fabric,
                    cluster.nic_gbps,
                    u64::from(cluster.hash_seed),
                    pfc,
                    dcqcn,
                )
                .map_err(|e| TrainError::Jobs(e.to_string()))?;
                for h in &cluster.lossy_hops {
                    let sw = crate::cluster::switch_named(&fabric, h).ok_or_else(|| {
                        TrainError::Jobs(format!(
                            "--lossy-hop {h:?} is not a switch of this cluster (its leaves are named like {:?}, its spines like {:?})",
                            fabric.nodes.iter().find(|n| n.kind == fabric::NodeKind::Switch).map_or("", |n| n.name.as_str()),
                            fabric.nodes.iter().rev().find(|n| n.kind == fabric::NodeKind::Switch).map_or("", |n| n.name.as_str()),
                        ))
                    })?;
                    cfg.switch.lossy_rdma_switches.push(sw);
                }
                BuiltRouting::Eth(
                    ethcp::EcmpTable::build(&fabric, cfg.routing.ecmp_convergence.as_ps()),
                    cfg.routing.hash,
                    Box::new(cfg),
                )
            }
        };
        Ok(Built {
            fabric,
            routing,
            sus,
            per_su,
            route_s: routed.elapsed().as_secs_f64(),
        })
    }

    /// How the fabric was routed, in words.
    pub(super) fn routed_by(&self) -> String {
        match &self.routing {
            BuiltRouting::Ib(_) => "the SM (ftree)".into(),
            BuiltRouting::Eth(_, h, _) => format!("ECMP over shortest paths, a per-QP hash of seed {}", h.seed),
        }
    }

    /// The cluster in words, as the report prints it.
    pub(super) fn describe(&self, cluster: &TrainCluster) -> String {
        let lossy = if cluster.lossy_hops.is_empty() {
            String::new()
        } else {
            format!(", RDMA DSCP lossy on {}", cluster.lossy_hops.join(", "))
        };
        format!(
            "{} unit(s) × {} servers × {} GPUs, {} {} Gb/s, radix {}{}{lossy}",
            self.sus,
            self.per_su,
            cluster.gpus_per_server.max(1),
            match cluster.fabric {
                TrainFabric::Infiniband => "InfiniBand",
                TrainFabric::Rocev2 => "RoCEv2 (ECMP; PFC, ECN, DCQCN)",
                TrainFabric::Rocev2PfcOnly => "RoCEv2 (ECMP; PFC only)",
                TrainFabric::Rocev2Lossy => "RoCEv2 (ECMP; no PFC, lossy)",
            },
            cluster.nic_gbps,
            cluster.radix,
            cluster
                .leaf_uplinks
                .map_or(String::new(), |u| format!(", {u} uplinks per leaf"))
        )
    }
}
