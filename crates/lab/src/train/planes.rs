//! A job on NICs with several ports: planes (Alibaba HPN's dual plane, each
//! port on its own plane) and dual ToRs (two ports of one plane on a leaf
//! pair). NCCL given a NIC's ports as devices of their own stripes each
//! connection's data over them, port `j` to the peer's port `j`: every
//! message is split evenly over the ports. Planes meet only inside the NICs,
//! so each plane is priced on its own ([`fabric::planes::port_planes`]: its
//! own SM or ECMP, its own packet world), with every port in it an endpoint,
//! and an operation takes as long as its slowest plane.

use super::*;

/// A job's network over every plane of its cluster: one [`FabricNetwork`]
/// per plane, each carrying its share of every message.
pub struct PlaneNets<'a> {
    pub(super) nets: Vec<FabricNetwork<'a>>,
}

impl<'a> FabricNetwork<'a> {
    /// Place `job` on `servers` of `fabric` (indices, in rank order: the job's
    /// server `k` is `servers[k]`).
    pub fn placed(
        fabric: &'a Fabric,
        routing: Route<'a>,
        job: &'a Job,
        pricing: Pricing,
        seed: u64,
        servers: &[usize],
    ) -> Result<Self, PlaceError> {
        let nics = NicMap::from_fabric(fabric).map_err(PlaceError::Rails)?;
        let ends: Vec<Vec<Vec<Option<NodeId>>>> = nics
            .nic
            .iter()
            .map(|s| s.iter().map(|&n| vec![Some(n)]).collect())
            .collect();
        let nic_gbs = fabric.links.first().map_or(50.0, |l| l.rate.data_bps() as f64 / 8e9);
        Self::placed_ends(fabric, routing, job, pricing, seed, servers, &ends, (nic_gbs, 1))
    }

    /// Place `job` on `servers`, each server's NICs by `ends[server][rail]`:
    /// the NIC's endpoints in `fabric`, one slot per port it has in it
    /// (`None`: that port is down); every message carries `1/share.1` of its
    /// bytes (this plane's share), and what is not on the fabric crosses it
    /// at `share.0` GB/s per NIC.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn placed_ends(
        fabric: &'a Fabric,
        routing: Route<'a>,
        job: &'a Job,
        pricing: Pricing,
        seed: u64,
        servers: &[usize],
        ends: &[Vec<Vec<Option<NodeId>>>],
        (nic_gbs, share): (f64, u32),
    ) -> Result<Self, PlaceError> {
        // the training flows follow RoCEv1's layer-2 forwarding themselves
        // (MAC-only hashing, `engines`); what else the flow engine leaves out
        // still refuses
        let l3 = |cfg: &sim::roce::net::RoceConfig| {
            let mut c = cfg.clone();
            c.routing.rocev1 = None;
            c
        };
        if let (Route::Eth(_, _, cfg), Pricing::Flow) = (routing, pricing)
            && let Some(why) = crate::flow_world::FlowWorld::refusal(&l3(cfg), false)
        {
            return Err(PlaceError::FlowRefused(why));
        }
        let g = ends.first().map_or(0, Vec::len);
        let usable = servers.iter().filter(|&&s| s < ends.len()).count();
        if (job.gpus as usize) > usable * g {
            return Err(PlaceError::TooLarge {
                gpus: job.gpus,
                servers: usable,
                nics: g,
            });
        }
        let mut sides = BTreeMap::new();
        let mut nic_of_rank = Vec::with_capacity(job.gpus as usize);
        for r in 0..job.gpus as usize {
            let e = &ends[servers[r / g]][r % g];
            let Some(first) = e.iter().flatten().next().copied() else {
                return Err(PlaceError::NoPort {
                    nic: format!("server {}'s NIC {}", servers[r / g], r % g),
                });
            };
            nic_of_rank.push(first);
            if e.len() > 1 {
                sides.insert(first, e.clone());
            }
        }
        Ok(FabricNetwork {
            fabric,
            routing,
            job,
            nic_of_rank,
            sides,
            share: share.max(1),
            wire: match routing {
                Route::Ib(_) => crate::flow_world::ib_wire(&sim::IbConfig::default()),
                Route::Eth(..) => engines::roce_wire(),
            },
            // what is not on the fabric crosses it at the NICs' rate
            ideal: IdealNetwork::new(&job.gpu, nic_gbs),
            pricing,
            seed,
            cache: RefCell::new(BTreeMap::new()),
            fallback: RefCell::new(Vec::new()),
            effort: RefCell::new(PriceEffort::default()),
            background: Vec::new(),
            qps: 1,
            ib_cfg: sim::IbConfig::default(),
            roce_nic: None,
            tcp: None,
            details: RefCell::new(BTreeMap::new()),
        })
    }

    /// Split each message over the NICs' ports (port `j` to the peer's port
    /// `j`) and each port's share over `qps` QPs (lanes `0..qps`), as a
    /// collective library stripes a connection over its devices and QPs. A
    /// port that is down hands its share to the NIC's first live one (a
    /// bond failing over): on a dual-ToR pair with a leaf down, that share
    /// leaves or reaches the NIC through the other leaf.
    pub(super) fn striped(&self, msgs: &[Message]) -> Vec<(NodeId, NodeId, u64, u16)> {
        if self.sides.is_empty() {
            return lanes(msgs, self.qps);
        }
        let mut out = Vec::new();
        for &(a, b, n) in msgs {
            let (sa, sb) = (self.sides.get(&a), self.sides.get(&b));
            let k = sa.map_or(1, Vec::len).max(sb.map_or(1, Vec::len));
            let end = |s: Option<&Vec<Option<NodeId>>>, first: NodeId, j: usize| {
                s.and_then(|v| v.get(j).copied().flatten()).unwrap_or(first)
            };
            for j in 0..k {
                let part = n / k as u64 + u64::from((j as u64) < n % k as u64);
                if part > 0 {
                    out.extend(lanes(&[(end(sa, a, j), end(sb, b, j), part)], self.qps));
                }
            }
        }
        out
    }
}

impl<'a> PlaneNets<'a> {
    /// One fabric's network as a job's (no planes).
    pub fn single(net: FabricNetwork<'a>) -> Self {
        PlaneNets { nets: vec![net] }
    }

    /// Place `job` on `servers` of every plane of `built`.
    pub(super) fn on(
        built: &'a Built,
        job: &'a Job,
        pricing: Pricing,
        seed: u64,
        servers: &[usize],
    ) -> Result<Self, PlaceError> {
        let mut nets = Vec::with_capacity(built.planes.len());
        match &built.nics {
            None => {
                let p = &built.planes[0];
                nets.push(FabricNetwork::placed(
                    &built.fabric,
                    p.route(),
                    job,
                    pricing,
                    seed,
                    servers,
                )?);
            }
            Some((nics, ports)) => {
                let rate = built
                    .fabric
                    .links
                    .first()
                    .map_or(50.0, |l| l.rate.data_bps() as f64 / 8e9);
                let share = built.planes.len() as u32;
                for (k, p) in built.planes.iter().enumerate() {
                    let view = p.view.as_ref().expect("a multi-port cluster is priced on its planes");
                    // the NICs' ports in this plane, as slots
                    let mut slots: Vec<u8> = view.ends.iter().flatten().map(|e| e.0).collect();
                    slots.sort_unstable();
                    slots.dedup();
                    let ends: Vec<Vec<Vec<Option<NodeId>>>> = nics
                        .nic
                        .iter()
                        .map(|s| {
                            s.iter()
                                .map(|n| {
                                    let e = &view.ends[n.idx()];
                                    slots
                                        .iter()
                                        .map(|&port| e.iter().find(|x| x.0 == port).map(|x| x.1))
                                        .collect()
                                })
                                .collect()
                        })
                        .collect();
                    // a NIC the job needs with every port here down
                    let g = ends.first().map_or(1, Vec::len).max(1);
                    for r in 0..job.gpus as usize {
                        let Some(&s) = servers.get(r / g) else { break };
                        if let Some(e) = ends.get(s).and_then(|v| v.get(r % g))
                            && e.iter().all(Option::is_none)
                        {
                            return Err(PlaceError::NoPort {
                                nic: format!("{} (rank {r}) on plane {k}", built.fabric.node(nics.nic[s][r % g]).name),
                            });
                        }
                    }
                    nets.push(FabricNetwork::placed_ends(
                        &view.fabric,
                        p.route(),
                        job,
                        pricing,
                        seed,
                        servers,
                        &ends,
                        (rate * f64::from(*ports), share),
                    )?);
                }
            }
        }
        Ok(PlaneNets { nets })
    }

    /// Run every operation of `it` that crosses the fabric on every plane.
    pub fn price(&self, it: &workload::iteration::Iteration) -> Result<(), PlaceError> {
        self.price_ops(&it.ops)
    }

    /// Run every operation of `ops` that crosses the fabric on every plane.
    pub fn price_ops(&self, ops: &[CommOp]) -> Result<(), PlaceError> {
        self.nets.iter().try_for_each(|n| n.price_ops(ops))
    }

    /// Each plane's busiest operation's messages (what this job puts beside
    /// another's, plane by plane), and its label.
    pub(super) fn busiest(&self, it: &workload::iteration::Iteration) -> (String, Vec<Vec<Message>>) {
        let mut label = String::new();
        let mut msgs = Vec::with_capacity(self.nets.len());
        for n in &self.nets {
            let (l, m) = n.busiest(it);
            label = l;
            msgs.push(m);
        }
        (label, msgs)
    }

    /// Run another job's messages (plane by plane) beside each operation.
    pub(super) fn beside(&mut self, msgs: &[Vec<Message>]) {
        for (n, m) in self.nets.iter_mut().zip(msgs) {
            n.beside(m);
        }
    }

    /// The contention-free network of the job's NICs (every port).
    pub fn ideal(&self) -> IdealNetwork {
        self.nets[0].ideal
    }

    /// Operations priced without contention, by label.
    pub fn contention_free(&self) -> Vec<String> {
        self.nets[0].contention_free()
    }

    /// What pricing has cost on every plane together.
    pub fn effort(&self) -> PriceEffort {
        self.nets
            .iter()
            .map(FabricNetwork::effort)
            .fold(PriceEffort::default(), |a, e| PriceEffort {
                ops_run: a.ops_run + e.ops_run,
                messages: a.messages + e.messages,
                events: a.events + e.events,
                wall_s: a.wall_s + e.wall_s,
            })
    }

    /// What the run of `op` found on its slowest plane, with the drops,
    /// retransmissions, pauses and CNPs of every plane.
    pub fn detail(&self, op: &CommOp) -> Option<OpDetail> {
        let mut worst: Option<(f64, OpDetail)> = None;
        let (mut drops, mut retx, mut pause, mut cnps) = (0, 0, 0.0, 0);
        for n in &self.nets {
            let Some(d) = n.detail(op) else { continue };
            drops += d.drops;
            retx += d.retransmissions;
            pause += d.pause_us;
            cnps += d.cnps;
            let t = n.op_time_s(op);
            if worst.as_ref().is_none_or(|w| t > w.0) {
                worst = Some((t, d));
            }
        }
        worst.map(|(_, d)| OpDetail {
            drops,
            retransmissions: retx,
            pause_us: pause,
            cnps,
            ..d
        })
    }
}

impl Network for PlaneNets<'_> {
    /// The slowest plane's price: an operation is done when every port's
    /// share is.
    fn op_time_s(&self, op: &CommOp) -> f64 {
        self.nets.iter().map(|n| n.op_time_s(op)).fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::job::JobSpec;

    /// Mixtral 8x7B on 64 GPUs, TP 2 and EP 8 (the CLI's moe-64 fixture).
    fn moe() -> JobSpec {
        JobSpec::from_toml(
            "name = \"moe-64\"\nmodel = \"mixtral-8x7b\"\ngpu = \"h100\"\ngpus = 64\nseq_len = 4096\nglobal_batch = 64\nrouter_skew = 1.25\n\
             [parallel]\ntp = 2\nep = 8\n",
        )
        .unwrap()
    }

    fn cluster(planes: u32, dual_tor: bool) -> TrainCluster {
        TrainCluster {
            sus: Some(2),
            servers_per_su: 4,
            leaf_uplinks: Some(2),
            placement: Placement::Scattered,
            planes,
            dual_tor,
            ..TrainCluster::default()
        }
    }

    /// The same 400G NICs as one port, two planes of 200G, a dual-ToR pair of
    /// 200G ports, or both (four 100G ports): on InfiniBand every message is
    /// split over the ports and each plane routed by its own SM, and the job
    /// takes what it takes on one plane (within 0.5%), with a message per
    /// port on the fabric.
    #[test]
    fn planes_and_dual_tors_carry_a_job_as_one_port_of_their_bandwidth_does() {
        let one = run_job(&moe(), &cluster(1, false), Pricing::Flow, None, 1).unwrap();
        assert!(one.fabric.total_s > one.ideal.total_s, "{:?}", one.fabric);
        for (planes, dual, ports) in [(2, false, 2), (1, true, 2), (2, true, 4)] {
            let r = run_job(&moe(), &cluster(planes, dual), Pricing::Flow, None, 1).unwrap();
            assert_eq!(r.ideal, one.ideal, "{planes} {dual}");
            let q = r.fabric.total_s / one.fabric.total_s;
            assert!((q - 1.0).abs() < 0.005, "{planes} plane(s), dual {dual}: {q}");
            assert_eq!(r.price.messages, ports * one.price.messages, "{planes} {dual}");
            assert!(
                r.routed_by.contains(&format!("{planes} planes")) == (planes > 1),
                "{}",
                r.routed_by
            );
            assert!(
                r.cluster
                    .contains(&format!("each NIC {ports} ports of {} Gb/s", 400 / ports)),
                "{}",
                r.cluster
            );
        }
    }

    /// A misconfigured leaf (the RDMA DSCP lossy) on one plane of two drops
    /// only that plane's half of the traffic: the expert all-to-all loses
    /// about half of what the same error costs a single-plane fabric, and
    /// still more than the tuned fabric (measured 2026-12-05 on 64 GPUs:
    /// 74.5 ms on one plane, 37.2 ms on two, 2.46 ms tuned).
    #[test]
    fn a_lossy_leaf_on_one_plane_costs_only_that_planes_share() {
        let ep = |r: &TrainRun| r.ops.iter().find(|o| o.op.label == "ep").map(|o| o.fabric_s).unwrap();
        let roce = |planes, hop: &str| {
            let c = TrainCluster {
                sus: None,
                planes,
                fabric: TrainFabric::Rocev2,
                lossy_hops: if hop.is_empty() { vec![] } else { vec![hop.to_string()] },
                ..TrainCluster::default()
            };
            let pricing = Pricing::Hybrid {
                cap: 512 << 10,
                full: 16 << 20,
            };
            run_job(&moe(), &c, pricing, None, 1).unwrap()
        };
        let tuned = ep(&roce(2, ""));
        let one = ep(&roce(1, "su0-rail0"));
        let half = ep(&roce(2, "p0-su0-rail0"));
        assert!(tuned * 5.0 < half, "tuned {tuned} s, one plane lossy of two {half} s");
        let q = half / one;
        assert!((0.35..0.65).contains(&q), "two planes {half} s over one {one} s: {q}");
    }

    /// A NIC speed the ports cannot share evenly, and a lossy hop named as
    /// on a single plane, are refused by name.
    #[test]
    fn an_uneven_port_split_and_a_plane_less_switch_name_are_refused() {
        let c = TrainCluster {
            planes: 3,
            ..cluster(1, false)
        };
        let e = chain(&run_job(&moe(), &c, Pricing::Flow, None, 1).unwrap_err());
        assert!(e.contains("nic_gbps") && e.contains("3 ports"), "{e}");
        let c = TrainCluster {
            planes: 2,
            fabric: TrainFabric::Rocev2,
            lossy_hops: vec!["su0-rail0".into()],
            ..cluster(1, false)
        };
        let e = run_job(&moe(), &c, Pricing::Flow, None, 1).unwrap_err().to_string();
        assert!(e.contains("\"su0-rail0\"") && e.contains("p0-su0-rail0"), "{e}");
    }

    /// A leaf down. On dual ToRs the NICs under it keep their other port:
    /// the job runs, their whole share through the pair's surviving leaf at
    /// half their bandwidth, and the iteration pays for it. Measured
    /// 2026-12-05 on two units of four servers with two uplinks per leaf:
    /// 1.447 s healthy, 2.348 s with su0-rail0-a down (1.62×): the
    /// data-parallel reduction 125 → 251 ms, the surviving leaf's two
    /// uplinks carrying both halves of rail 0's unit-crossing traffic. On
    /// single ToRs the NICs under it are lost and the job, which needs them,
    /// is refused naming one.
    #[test]
    fn a_leaf_down_costs_a_dual_tor_job_bandwidth_and_a_single_tor_job_its_nics() {
        let down = |c: TrainCluster, leaf: &str| TrainCluster {
            failed: vec![leaf.to_string()],
            ..c
        };
        let healthy = run_job(&moe(), &cluster(1, true), Pricing::Flow, None, 1).unwrap();
        let failed = run_job(&moe(), &down(cluster(1, true), "su0-rail0-a"), Pricing::Flow, None, 1).unwrap();
        assert!(failed.cluster.ends_with("down: su0-rail0-a"), "{}", failed.cluster);
        let q = failed.fabric.total_s / healthy.fabric.total_s;
        assert!(
            (q - 1.62).abs() < 0.03,
            "{} s against {} s: {q}",
            failed.fabric.total_s,
            healthy.fabric.total_s
        );
        // RoCEv2 (hybrid): the surviving port's double share pauses its
        // leaf, the pauses spread and go-back-N times out behind them
        // (measured: the expert all-to-all 3.77 → 38.2 ms, retransmissions
        // 791 → 2,626)
        let roce = |c: TrainCluster| {
            let c = TrainCluster {
                fabric: TrainFabric::Rocev2,
                ..c
            };
            let pricing = Pricing::Hybrid {
                cap: 512 << 10,
                full: 16 << 20,
            };
            let r = run_job(&moe(), &c, pricing, None, 1).unwrap();
            let ep = r.ops.iter().find(|o| o.op.label == "ep").unwrap();
            let d = ep.detail.clone().unwrap();
            (ep.fabric_s * 1e3, d.retransmissions, d.pause_us / 1e3, d.drops)
        };
        let ok = roce(cluster(1, true));
        let dn = roce(down(cluster(1, true), "su0-rail0-a"));
        assert!(dn.0 > 5.0 * ok.0, "{ok:?} → {dn:?}");
        // the figures docs/TRAINING.md quotes: ms, retransmissions, ms of pause
        for (got, want) in [(ok.0, 3.77), (dn.0, 38.2), (ok.2, 159.0), (dn.2, 239.5)] {
            assert!((got / want - 1.0).abs() < 0.02, "{got} against {want}: {ok:?} → {dn:?}");
        }
        assert_eq!((ok.1, dn.1, ok.3, dn.3), (791, 2626, 0, 0));
        let e = run_job(&moe(), &down(cluster(1, false), "su0-rail0"), Pricing::Flow, None, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("mlx5_0") && e.contains("no live port"), "{e}");
        let e = run_job(&moe(), &down(cluster(1, true), "su0-rail9-a"), Pricing::Flow, None, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--fail \"su0-rail9-a\" is not a switch"), "{e}");
    }

    /// Two jobs in a joint schedule on two planes (every plane's ports in one
    /// flow network, one clock) take what they take on one plane of the
    /// same NIC bandwidth: 7.12 ms against 6.86 alone at seed 1.
    #[test]
    fn the_joint_schedule_runs_over_every_plane_on_one_clock() {
        let spec = JobSpec::from_toml(include_str!("../../../../examples/train/small-128.toml")).unwrap();
        let two = [spec.clone(), spec];
        let joint = |planes| {
            let c = TrainCluster {
                sus: Some(4),
                servers_per_su: 8,
                leaf_uplinks: Some(2),
                placement: Placement::Scattered,
                planes,
                ..TrainCluster::default()
            };
            run_jobs(&two, &c, Pricing::Flow, None, 1).unwrap()[0]
                .joint
                .clone()
                .unwrap()
        };
        let (one, dual) = (joint(1), joint(2));
        assert!((one.mean_s * 1e3 - 7.12).abs() < 0.01, "{one:?}");
        assert!((dual.mean_s / one.mean_s - 1.0).abs() < 0.005, "{one:?} {dual:?}");
        assert!((dual.alone_s / one.alone_s - 1.0).abs() < 0.005, "{one:?} {dual:?}");
    }
}
