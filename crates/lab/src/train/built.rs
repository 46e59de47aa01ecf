//! The cluster a training job runs on, built and routed: InfiniBand by our SM,
//! or Ethernet with ECMP and the RoCE world's settings.

use super::*;

/// A scalable-unit cluster for `gpus` GPUs, built and routed by our SM.
pub(super) struct Built {
    pub(super) fabric: Fabric,
    /// Its planes, each routed on its own: one, the fabric itself, when every
    /// NIC has one port; else [`fabric::planes::port_planes`]'s.
    pub(super) planes: Vec<Plane>,
    /// NICs with several ports: the NICs by server and rail, and the ports
    /// each has (planes × ToRs).
    pub(super) nics: Option<(NicMap, u32)>,
    pub(super) sus: u32,
    pub(super) per_su: u32,
    pub(super) route_s: f64,
}

/// What a built cluster forwards by.
pub(super) enum BuiltRouting {
    Ib(sm::RoutingTables),
    Eth(ethcp::EcmpTable, ethcp::HashConfig, Box<sim::roce::net::RoceConfig>),
}

/// One plane of a built cluster and what it forwards by.
pub(super) struct Plane {
    /// The plane with every NIC port an endpoint (`None`: the fabric itself).
    pub(super) view: Option<fabric::planes::PortPlane>,
    pub(super) routing: BuiltRouting,
}

impl Plane {
    pub(super) fn route(&self) -> Route<'_> {
        match &self.routing {
            BuiltRouting::Ib(t) => Route::Ib(t),
            BuiltRouting::Eth(t, h, c) => Route::Eth(t, *h, c),
        }
    }
}

impl Built {
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
        // a NIC's bandwidth over its ports: HPN's 400G NIC as two 200G ports
        let ports = cluster.planes.max(1) * if cluster.dual_tor { 2 } else { 1 };
        if !cluster.nic_gbps.is_multiple_of(ports) {
            return Err(TrainError::Cluster(fabric::GenError::Param {
                param: "nic_gbps",
                reason: format!(
                    "{} Gb/s does not split evenly over {ports} ports ({} plane(s){})",
                    cluster.nic_gbps,
                    cluster.planes,
                    if cluster.dual_tor { " × dual ToRs" } else { "" }
                ),
            }));
        }
        let rate = crate::cluster::link_rate(tech, cluster.nic_gbps / ports).map_err(TrainError::Cluster)?;
        let mut fabric = fabric::generate::superpod(&fabric::generate::SuperPodParams {
            sus,
            servers_per_su: per_su,
            rails: g,
            radix: cluster.radix,
            uplinks: cluster.leaf_uplinks,
            rate,
            cabling: fabric::Cabling::default(),
            planes: cluster.planes,
            dual_tor: cluster.dual_tor,
        })
        .map_err(TrainError::Cluster)?;
        // switches down: every cable of theirs unplugged (highest link first:
        // a removal renumbers the links above it)
        for name in &cluster.failed {
            let sw = crate::cluster::switch_named(&fabric, name)
                .filter(|&n| fabric.node(n).kind == fabric::NodeKind::Switch)
                .ok_or_else(|| {
                    TrainError::Jobs(format!(
                        "--fail {name:?} is not a switch of this cluster (its leaves are named like {:?})",
                        fabric
                            .nodes
                            .iter()
                            .find(|n| n.kind == fabric::NodeKind::Switch)
                            .map_or("", |n| n.name.as_str()),
                    ))
                })?;
            let mut links: Vec<fabric::LinkId> = fabric.node(sw).ports.iter().filter_map(|p| p.link).collect();
            links.sort_unstable_by(|a, b| b.cmp(a));
            for l in links {
                fabric.disconnect(l).map_err(|e| TrainError::Jobs(e.to_string()))?;
            }
        }
        let routed = std::time::Instant::now();
        let mut found = vec![false; cluster.lossy_hops.len()];
        let (planes, nics) = if ports > 1 || !cluster.failed.is_empty() {
            let nics = NicMap::from_fabric(&fabric).map_err(|e| TrainError::Place(PlaceError::Rails(e)))?;
            let mut planes = Vec::new();
            for view in fabric::planes::port_planes(&fabric).map_err(|e| TrainError::Jobs(e.to_string()))? {
                if view.ends.iter().all(Vec::is_empty) {
                    // a switch cut off by a failure, no NIC behind it
                    continue;
                }
                let routing = Self::route_plane(cluster, &view.fabric, &mut found)?;
                planes.push(Plane {
                    view: Some(view),
                    routing,
                });
            }
            (planes, Some((nics, ports)))
        } else {
            let routing = Self::route_plane(cluster, &fabric, &mut found)?;
            (vec![Plane { view: None, routing }], None)
        };
        if let Some(k) = found.iter().position(|f| !f) {
            let h = &cluster.lossy_hops[k];
            return Err(TrainError::Jobs(format!(
                "--lossy-hop {h:?} is not a switch of this cluster (its leaves are named like {:?}, its spines like {:?})",
                fabric
                    .nodes
                    .iter()
                    .find(|n| n.kind == fabric::NodeKind::Switch)
                    .map_or("", |n| n.name.as_str()),
                fabric
                    .nodes
                    .iter()
                    .rev()
                    .find(|n| n.kind == fabric::NodeKind::Switch)
                    .map_or("", |n| n.name.as_str()),
            )));
        }
        Ok(Built {
            fabric,
            planes,
            nics,
            sus,
            per_su,
            route_s: routed.elapsed().as_secs_f64(),
        })
    }

    /// Route one plane (the whole fabric when it has one): the SM's ftree
    /// (up/down if the tree is not regular), or ECMP with the variant's
    /// settings and the lossy hops of `cluster` found in it (marked in `found`).
    fn route_plane(cluster: &TrainCluster, fabric: &Fabric, found: &mut [bool]) -> Result<BuiltRouting, TrainError> {
        Ok(match cluster.fabric {
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
                BuiltRouting::Ib(sm::run::run(fabric, &o).map_err(TrainError::Route)?.0)
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
                    fabric,
                    cluster.nic_gbps / (cluster.planes.max(1) * if cluster.dual_tor { 2 } else { 1 }),
                    u64::from(cluster.hash_seed),
                    pfc,
                    dcqcn,
                )
                .map_err(|e| TrainError::Jobs(e.to_string()))?;
                for (h, seen) in cluster.lossy_hops.iter().zip(found.iter_mut()) {
                    if let Some(sw) = crate::cluster::switch_named(fabric, h) {
                        cfg.switch.lossy_rdma_switches.push(sw);
                        *seen = true;
                    }
                }
                BuiltRouting::Eth(
                    ethcp::EcmpTable::build(fabric, cfg.routing.ecmp_convergence.as_ps()),
                    cfg.routing.hash,
                    Box::new(cfg),
                )
            }
        })
    }

    /// How the fabric was routed, in words.
    pub(super) fn routed_by(&self) -> String {
        let each = match self.planes.len() {
            1 => String::new(),
            n => format!(", on each of {n} planes (its own subnet)"),
        };
        match &self.planes[0].routing {
            BuiltRouting::Ib(_) => format!("the SM (ftree){each}"),
            BuiltRouting::Eth(_, h, _) => format!("ECMP over shortest paths, a per-QP hash of seed {}{each}", h.seed),
        }
    }

    /// The cluster in words, as the report prints it.
    pub(super) fn describe(&self, cluster: &TrainCluster) -> String {
        let lossy = if cluster.lossy_hops.is_empty() {
            String::new()
        } else {
            format!(", RDMA DSCP lossy on {}", cluster.lossy_hops.join(", "))
        };
        let lossy = if cluster.failed.is_empty() {
            lossy
        } else {
            format!("{lossy}, down: {}", cluster.failed.join(", "))
        };
        let ports = match (cluster.planes.max(1), cluster.dual_tor) {
            (1, false) => String::new(),
            (p, d) => format!(
                ", each NIC {} ports of {} Gb/s ({} plane(s){})",
                p * (1 + u32::from(d)),
                cluster.nic_gbps / (p * (1 + u32::from(d))),
                p,
                if d { ", dual ToRs" } else { "" }
            ),
        };
        format!(
            "{} unit(s) × {} servers × {} GPUs, {} {} Gb/s, radix {}{}{ports}{lossy}",
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
