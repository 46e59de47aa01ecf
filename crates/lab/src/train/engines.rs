//! The engines behind [`FabricNetwork`]'s pricing: max-min fair flows on the
//! fabric's routes (with the ports' loads), and the fabric's packet world.

use super::*;

/// What a flow run found.
pub(super) struct FlowRun {
    /// The last of this job's messages done, ps.
    pub(super) last_ps: u64,
    pub(super) events: u64,
    pub(super) hottest: Option<(String, f64)>,
    pub(super) imbalance: Option<f64>,
}

/// The member of group `g` (of `n`) that receives the most of a skewed
/// all-to-all: a splitmix64 draw from the seed and the group.
pub(super) fn hot_member(seed: u64, g: u64, n: usize) -> usize {
    let mut z = seed ^ g.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x686f_745f_6578_7074;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % n.max(1) as u64) as usize
}

/// Split each message over `k` QPs (lane 0..k), as a collective library
/// stripes a connection's data over its QPs.
pub(super) fn lanes(msgs: &[Message], k: u32) -> Vec<(NodeId, NodeId, u64, u16)> {
    let k = u64::from(k.max(1));
    let mut out = Vec::with_capacity(msgs.len() * k as usize);
    for &(a, b, n) in msgs {
        for q in 0..k {
            let part = n / k + u64::from(q < n % k);
            if part > 0 {
                out.push((a, b, part, q as u16));
            }
        }
    }
    out
}

/// The wire model of RoCEv2 as `compare` runs its tuned variant, with the
/// ideal NICs `train` gives InfiniBand too: Ethernet, IPv4, UDP, BTH, ICRC and
/// FCS per 4096-byte packet, an ACK per packet (the RoCE world's default),
/// store-and-forward switches of 600 ns (`compare`'s Ethernet switch).
pub(super) fn roce_wire() -> WireModel {
    WireModel {
        mtu: 4096,
        overhead: sim::roce::net::ROCEV2_HEADERS,
        ack_bytes: sim::roce::net::ACK_BYTES,
        ack_every: sim::roce::net::NicConfig::default().ack_every,
        switch_latency_ps: 600_000,
        store_and_forward: true,
        endpoint_ps: 0,
        nic_payload_ppm: 0,
    }
}

impl FabricNetwork<'_> {
    /// Run `flows` (TCP, on the lossy class, with `cfg`) beside every
    /// operation's RoCE packet runs: storage and other TCP traffic on a
    /// converged fabric. The flow level has no TCP: an operation priced by
    /// flows alone does not see it; a hybrid one sees it in its packet factor.
    pub fn with_tcp(mut self, flows: Vec<sim::roce::tcp::TcpFlowSpec>, cfg: sim::roce::tcp::TcpConfig) -> Self {
        self.tcp = (!flows.is_empty()).then_some((flows, cfg));
        self
    }

    /// This job's messages (tag 0) and what runs beside them (tag 1) as
    /// max-min fair flows, each (pair, lane) on its own connection.
    pub(super) fn flow(
        &self,
        msgs: &[(NodeId, NodeId, u64, u16)],
        bg: &[(NodeId, NodeId, u64, u16)],
    ) -> Result<FlowRun, crate::runner::RunError> {
        use crate::runner::RunError;
        let mut sim = FlowSim::new();
        let ports = Ports::build(self.fabric, &mut sim);
        let mut conns = BTreeMap::new();
        // this job's bytes on each port's egress (the flows' resource indices):
        // its hottest port and uplink imbalance are its own, not the traffic
        // beside it
        let all = msgs
            .iter()
            .map(|&(a, b, n, q)| (a, b, n, q, 0u64))
            .chain(bg.iter().map(|&(a, b, n, q)| (a, b, n, q, 1u64)));
        for (na, nb, bytes, q, tag) in all {
            let c = match conns.get_mut(&(na, nb, q, tag)) {
                Some((c, _, sent)) => {
                    *sent += bytes;
                    *c
                }
                None => {
                    let (data, ack) = match self.routing {
                        Route::Ib(t) => (
                            flow::path::ib_route(self.fabric, t, na, nb),
                            flow::path::ib_route(self.fabric, t, nb, na),
                        ),
                        Route::Eth(table, hash, cfg) => {
                            let r = flow::path::EthRouting {
                                table,
                                hash,
                                rocev1: cfg.routing.rocev1.is_some(),
                            };
                            let k = conns.len() as u32;
                            (r.route(self.fabric, na, nb, k), r.route(self.fabric, nb, na, k))
                        }
                    };
                    let (data, ack) = (data.map_err(RunError::FlowPath)?, ack.map_err(RunError::FlowPath)?);
                    let c = flow::path::open(&mut sim, self.fabric, &ports, &self.wire, &data, &ack)
                        .map_err(RunError::Flow)?;
                    let path: Vec<u32> = data.iter().filter_map(|&e| ports.resource(e)).collect();
                    conns.insert((na, nb, q, tag), (c, path, bytes));
                    c
                }
            };
            sim.post(c, bytes, tag).map_err(RunError::Flow)?;
        }
        let mut last = 0u64;
        loop {
            match sim.advance(u64::MAX).map_err(RunError::Flow)? {
                Step::Delivered(d) => {
                    last = last.max(d.iter().filter(|x| x.tag == 0).map(|x| x.done_ps).max().unwrap_or(0))
                }
                Step::Idle => break,
                Step::Reached => {}
            }
        }
        sim.check().map_err(RunError::Flow)?;
        let events = sim.counters().events;
        // this job's bytes on each port's egress, and the most one of its
        // connections puts there: its hottest port and uplink imbalance are
        // its own, not the traffic's beside it
        let mut own: Vec<(f64, f64)> = Vec::new();
        for ((.., tag), (_, path, sent)) in &conns {
            if *tag != 0 {
                continue;
            }
            for &r in path {
                if own.len() <= r as usize {
                    own.resize(r as usize + 1, (0.0, 0.0));
                }
                let o = &mut own[r as usize];
                *o = (o.0 + *sent as f64, o.1.max(*sent as f64));
            }
        }
        let (hottest, imbalance) = self.port_loads(&ports, &own);
        Ok(FlowRun {
            last_ps: last,
            events,
            hottest,
            imbalance,
        })
    }

    /// The busiest switch egress port (name, seconds its bytes keep it busy)
    /// and ECMP's uplink imbalance, from (bytes, most bytes of one
    /// connection) on each port, indexed by the ports' flow resources.
    fn port_loads(&self, ports: &Ports, carried: &[(f64, f64)]) -> (Option<(String, f64)>, Option<f64>) {
        use fabric::NodeKind;
        let f = self.fabric;
        let mut hottest: Option<(String, f64)> = None;
        // (bytes up, most on one uplink, uplinks, largest connection) of the
        // leaf sending the most up
        let mut busiest_leaf = (0.0f64, 0.0f64, 0usize, 0.0f64);
        for sw in f.nodes_of(NodeKind::Switch) {
            let node = f.node(sw);
            let leaf = node
                .port_nums()
                .any(|p| f.peer(sw, p).is_some_and(|(e, _)| f.node(e.node).kind == NodeKind::Ca));
            let mut up = (0.0f64, 0.0f64, 0usize, 0.0f64);
            for p in node.port_nums() {
                let e = fabric::Endpoint { node: sw, port: p };
                let (Some(r), Some((peer, _))) = (ports.resource(e), f.peer(sw, p)) else {
                    continue;
                };
                let (bytes, one) = carried.get(r as usize).copied().unwrap_or((0.0, 0.0));
                let bps = ports.bps(e) as f64;
                if bps > 0.0 && bytes > 0.0 {
                    let busy = bytes * 8.0 / bps;
                    if hottest.as_ref().is_none_or(|h| busy > h.1) {
                        hottest = Some((format!("{}/{}", node.name, p), busy));
                    }
                }
                if leaf && f.node(peer.node).kind == NodeKind::Switch {
                    up = (up.0 + bytes, up.1.max(bytes), up.2 + 1, up.3.max(one));
                }
            }
            if up.0 > busiest_leaf.0 {
                busiest_leaf = up;
            }
        }
        // ECMP's imbalance where it matters: at the leaf that sends the most
        // up, its busiest uplink over the least any spreading of whole
        // connections could put on one (the mean over all its uplinks, or the
        // largest connection if that is more). 1.0: hashing did as well as
        // possible; two equal connections on one uplink of many: 2.0. One
        // connection on one of 32 uplinks is 1.0, not 32: no hash splits it.
        let (sum, max, n, one) = busiest_leaf;
        let imbalance = (sum > 0.0).then(|| max / (sum / n.max(1) as f64).max(one));
        (hottest, imbalance)
    }

    /// This job's messages (tags below `msgs.len()`) and what runs beside
    /// them packet by packet, in the fabric's packet world: the time to the
    /// last of this job's deliveries, and the run's counters.
    pub(super) fn packet(
        &self,
        msgs: &[(NodeId, NodeId, u64, u16)],
        bg: &[(NodeId, NodeId, u64, u16)],
    ) -> Result<(u64, crate::runner::NetCounters), crate::runner::RunError> {
        use crate::runner::{IbNet, Network as _, RoceNet};
        match self.routing {
            Route::Eth(_, _, cfg) => {
                let mut sim = sim::roce::net::RoceSim::new(self.fabric, cfg.clone(), &[])?;
                if let Some((flows, tcp)) = &self.tcp {
                    sim.set_tcp_config(tcp.clone())?;
                    for f in flows {
                        sim.add_tcp_flow(*f)?;
                    }
                }
                let mut net = RoceNet::new(&mut sim, self.fabric);
                let t = match self.roce_nic {
                    Some((tx, rx)) => post_lanes(&mut crate::runner::NicDelay::new(&mut net, tx, rx), msgs, bg)?,
                    None => post_lanes(&mut net, msgs, bg)?,
                };
                Ok((t, net.counters()?))
            }
            Route::Ib(tables) => {
                let mut sim = sim::Sim::new(
                    self.fabric,
                    tables,
                    self.ib_cfg.clone(),
                    sim::EngineConfig {
                        seed: self.seed,
                        ..sim::EngineConfig::default()
                    },
                )?;
                let mut net = IbNet::new(&mut sim);
                let t = post_lanes(&mut net, msgs, bg)?;
                Ok((t, net.counters()?))
            }
        }
    }
}

/// Post `msgs` and then `bg` on their lanes' QPs, run to the last delivery,
/// and return the time to the last of `msgs`' deliveries, ps.
fn post_lanes(
    net: &mut dyn crate::runner::Network,
    msgs: &[(NodeId, NodeId, u64, u16)],
    bg: &[(NodeId, NodeId, u64, u16)],
) -> Result<u64, crate::runner::RunError> {
    use crate::runner::{Class, NetStep, RunError};
    let class = |q: u16| if q == 0 { Class::Bulk } else { Class::Lane(q) };
    let start = net.now_ps();
    for (k, &(a, b, n, q)) in msgs.iter().chain(bg).enumerate() {
        net.post(a, b, class(q), n, k as u64)?;
    }
    let mut left = msgs.len() + bg.len();
    let mut end = start;
    while left > 0 {
        match net.advance(u64::MAX)? {
            NetStep::Delivered(ds) => {
                left -= ds.len();
                end = ds
                    .iter()
                    .filter(|d| (d.tag as usize) < msgs.len())
                    .map(|d| d.done_ps)
                    .fold(end, u64::max);
            }
            NetStep::Reached => {}
            NetStep::Idle => return Err(RunError::Stalled(left)),
            NetStep::Deadlock(d) => return Err(RunError::Deadlock(d)),
        }
    }
    Ok(end - start)
}
