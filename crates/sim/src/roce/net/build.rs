//! Building a RoCE world from a fabric, a configuration and flows, in named
//! steps: the port tables ([`PortTables`]), the switch and NIC records, the
//! checks of the flows and overrides, then the parts assembled and the first
//! events scheduled. Every check that can fail runs before the world exists,
//! in the order of the steps (MTU, buffers, RoCEv1 paths, id limits, flow
//! ends, overrides, capture port).

use super::switch::switch_rng;
use super::*;

/// The per-port tables while the world is built (they become [`Links`]).
pub(super) struct PortTables {
    /// Global index of each node's port 0, and the total at the end.
    pub(super) base: Vec<u32>,
    pub(super) ports: Vec<Port>,
    pub(super) pc: Vec<PortCold>,
    pub(super) peer: Vec<u32>,
}

/// The switch and NIC records, and which one each node is.
struct Nodes {
    maps: QosMaps,
    role: Vec<(bool, u32)>,
    switches: Vec<Switch>,
    nics: Vec<Nic>,
}

impl RoceSim {
    /// Build the world for `fabric` (switches and CAs; every CA has its NIC on
    /// port 1) with `flows`.
    pub fn new(fabric: &Fabric, cfg: RoceConfig, flows: &[FlowSpec]) -> Result<RoceSim, RoceError> {
        if cfg.nic.mtu == 0 || cfg.nic.mtu > 9000 {
            return Err(RoceError::Config {
                field: "mtu",
                why: format!("{} is not a payload size of 1..=9000 bytes", cfg.nic.mtu),
            });
        }
        let mut pt = PortTables::build(fabric, &cfg);
        let nodes = Nodes::build(fabric, &cfg, &pt)?;
        pt.set_owners(&nodes.role);
        check_flows(fabric, &cfg, flows, &pt)?;
        let mut fl = Vec::with_capacity(flows.len());
        for f in flows {
            let line = pt.pc[(pt.base[f.src.idx()] + 1) as usize].bps.max(1);
            fl.push(Flow::new(*f, &cfg, line, false));
        }
        let mut nics = nodes.nics;
        for (k, f) in flows.iter().enumerate() {
            nics[nodes.role[f.src.idx()].1 as usize].flows.push(k as u32);
        }
        check_overrides(fabric, &cfg)?;
        let horizon = calendar_horizon(&cfg, &pt.pc);
        let sw = Switching::new(fabric, &cfg, nodes.switches, pt.ports.len(), fl.len());
        let links = Links::new(pt, nodes.maps);
        let hosts = Hosts::new(&cfg, nics, fl);
        let mut sim = RoceSim {
            now: Time::ZERO,
            q: PackedQueue::with_horizon(horizon),
            trace: TraceHash::default(),
            live: 0,
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            role: unsafe { crate::engine::Table::trusted(nodes.role) },
            links,
            sw,
            hosts,
            faults: Faults::new(&cfg),
            obs: Observe::new(),
            ledger: RoceLedger::default(),
            fct: Vec::new(),
            pfc: Vec::new(),
            completions: Vec::new(),
            ecn_marks: 0,
            cnps_sent: 0,
            events: 0,
            wd_log: Vec::new(),
            driven: false,
            threads_used: 1,
            one_thread_why: None,
            outbox: Vec::new(),
            outbox_int: Vec::new(),
            fabric: fabric.clone(),
            cfg,
        };
        for (k, f) in flows.iter().enumerate() {
            sim.push_ev(f.start, Ev::FlowStart { flow: k as u32 });
        }
        if let Some((node, port)) = sim.cfg.observe.capture {
            if node.idx() >= fabric.nodes.len() || usize::from(port) >= fabric.node(node).ports.len() {
                return Err(RoceError::Config {
                    field: "capture",
                    why: format!("node {} has no port {port}", node.0),
                });
            }
            sim.obs.capture_gp = sim.links.port_base[node.idx()] + u32::from(port);
        }
        sim.arm_periodic();
        // Faulty NICs start pausing at once.
        for i in 0..sim.hosts.nics.len() {
            if sim.hosts.nics[i].rx.faulty {
                sim.nic_pause_update(i as u32);
            }
        }
        Ok(sim)
    }
}

impl PortTables {
    /// Every node's ports, numbered globally, with their links' rate, delay
    /// (plus the switch pipeline on a switch's side), peer and loss injection.
    fn build(fabric: &Fabric, cfg: &RoceConfig) -> PortTables {
        let n = fabric.nodes.len();
        let mut port_base = Vec::with_capacity(n + 1);
        let mut ports = Vec::new();
        let mut pc = Vec::new();
        let mut peer = Vec::new();
        port_base.push(0u32);
        for node in fabric.nodes.iter() {
            for p in 0..node.ports.len() {
                ports.push(Port {
                    // Set below, once the switches and NICs are numbered.
                    owner: NONE,
                    num: p as u8,
                    ser: Serializer::new(1),
                    prop: Time::ZERO,
                    busy_until: Time::ZERO,
                    wake_at: Time::NEVER,
                    pause_max: Time::ZERO,
                    fate: 0,
                    has_ctrl: false,
                    qmask: 0,
                    tx_bytes: 0,
                    tail_hint: 0,
                });
                pc.push(PortCold {
                    pace_ppm: 0,
                    bps: 0,
                    link: NONE,
                    ctrl: VecDeque::new(),
                    paused: PausedTx::default(),
                    pausegen: Box::new(PauseGen::new(cfg.pfc.pause_quanta)),
                    pause_timer_at: Time::NEVER,
                    data_sent: 0,
                    loss_every: 0,
                });
                peer.push(NONE);
            }
            port_base.push(ports.len() as u32);
        }
        for (li, l) in fabric.links.iter().enumerate() {
            let a = port_base[l.a.node.idx()] + u32::from(l.a.port);
            let b = port_base[l.b.node.idx()] + u32::from(l.b.port);
            let bps = l.rate.data_bps();
            let every = cfg
                .faults
                .loss_every
                .iter()
                .find(|(x, _)| x.idx() == li)
                .map_or(0, |x| x.1);
            for (g, pg, node) in [(a, b, l.a.node), (b, a, l.b.node)] {
                peer[g as usize] = pg;
                let p = &mut ports[g as usize];
                p.ser = Serializer::new(bps);
                let pipeline = if fabric.node(node).kind == NodeKind::Switch {
                    cfg.switch.switch_latency
                } else {
                    Time::ZERO
                };
                p.prop = Time(l.delay_ps) + pipeline;
                if every > 0 {
                    p.fate |= Port::LOSSY;
                }
                let ppm = cfg.nic.payload_ppm;
                let paced = fabric.node(node).kind != NodeKind::Switch && ppm > 0 && ppm < 1_000_000;
                if paced {
                    p.fate |= Port::PACED;
                }
                let c = &mut pc[g as usize];
                c.bps = bps;
                c.link = li as u32;
                c.loss_every = every;
                if paced {
                    c.pace_ppm = ppm;
                }
            }
        }
        PortTables {
            base: port_base,
            ports,
            pc,
            peer,
        }
    }

    /// Stamp each port with its switch or NIC (`Port::owner`) and mark the
    /// uncabled ones.
    fn set_owners(&mut self, role: &[(bool, u32)]) {
        for (i, &(is_sw, idx)) in role.iter().enumerate() {
            for p in &mut self.ports[self.base[i] as usize..self.base[i + 1] as usize] {
                p.owner = (idx << 1) | u32::from(is_sw);
            }
        }
        for (p, &to) in self.ports.iter_mut().zip(&self.peer) {
            if to == NONE {
                p.fate |= Port::UNCABLED;
            }
        }
    }
}

impl Nodes {
    /// A record per switch (its MMU sized for its ports, RED, watchdogs, hash)
    /// and per NIC (its receive pipeline), in node order.
    fn build(fabric: &Fabric, cfg: &RoceConfig, pt: &PortTables) -> Result<Nodes, RoceError> {
        let mut maps = QosMaps::default();
        if !cfg.pfc.enabled {
            maps.pfc_enable = 0;
        }
        let mut role = vec![(false, NONE); fabric.nodes.len()];
        let mut switches = Vec::new();
        let mut nics = Vec::new();
        let nic_bps = fabric
            .links
            .iter()
            .filter(|l| fabric.node(l.a.node).kind == NodeKind::Ca || fabric.node(l.b.node).kind == NodeKind::Ca)
            .map(|l| l.rate.data_bps())
            .min()
            .unwrap_or(100_000_000_000);
        for (i, node) in fabric.nodes.iter().enumerate() {
            match node.kind {
                NodeKind::Switch | NodeKind::Router => {
                    role[i] = (true, switches.len() as u32);
                    switches.push(build_switch(cfg, &maps, pt, i, node, nic_bps)?);
                }
                NodeKind::Ca => {
                    role[i] = (false, nics.len() as u32);
                    nics.push(build_nic(cfg, pt, i));
                }
            }
        }
        Ok(Nodes {
            maps,
            role,
            switches,
            nics,
        })
    }
}

/// Switch `i`'s record: its MMU (HPCC's ns-3 buffer layout with headroom for
/// its ports' speed and cable), RED per port, watchdogs, ECMP hash seed and
/// RED/ECN random stream.
fn build_switch(
    cfg: &RoceConfig,
    maps: &QosMaps,
    pt: &PortTables,
    i: usize,
    node: &fabric::Node,
    nic_bps: u64,
) -> Result<Switch, RoceError> {
    let (ports, pc) = (&pt.ports, &pt.pc);
    let base = pt.base[i] as usize;
    let np = node.ports.len();
    let bps: Vec<u64> = (0..np).map(|p| pc[base + p].bps).collect();
    let delay: Vec<u64> = (0..np).map(|p| ports[base + p].prop.0).collect();
    let mut mc = MmuConfig::hpcc_ns3(0, &bps, &delay, nic_bps, None);
    mc.buffer_bytes = cfg.switch.buffer_bytes;
    mc.maps = maps.clone();
    if cfg.switch.lossy_rdma_switches.contains(&NodeId(i as u32)) {
        mc.maps.dscp_to_tc[usize::from(DSCP_ROCE)] = 0;
    }
    // Headroom: HPCC's 3 × rate × delay, but at least two MTU frames and the
    // peer's response at 100G (IEEE worst case has both).
    for (p, h) in mc.headroom.iter_mut().enumerate() {
        let min = 2 * u64::from(cfg.nic.mtu + ROCEV2_HEADERS + 20) + hpcc_headroom_bytes(bps[p], 0);
        // At 200G and above the bytes in flight after XOFF (cable both
        // ways, the frame on the wire at each end, the peer's reaction)
        // exceed HPCC's 3 × rate × delay; take NVIDIA's xoff formula for
        // the port's speed and cable (mlx5 `calculate_xoff`,
        // simulators-and-cc.md §2.2): 400G, 20 m → about 146 KB.
        let mlx5 = if bps[p] > 0 {
            let cable_m = (delay[p] / fabric::model::DEFAULT_PS_PER_METRE).min(u64::from(u32::MAX)) as u32;
            crate::roce::buffer::mlx5_nic_xoff_bytes((bps[p] / 1_000_000_000) as u32, cable_m, cfg.nic.mtu)
        } else {
            0
        };
        *h = (*h).max(min).max(mlx5);
    }
    let red: Vec<Option<Red>> = bps
        .iter()
        .map(|&b| {
            if !cfg.switch.ecn || b == 0 {
                return None;
            }
            cfg.switch
                .red
                .iter()
                .find(|(r, _)| *r == b)
                .map(|x| x.1)
                .or(match &cfg.nic.cc {
                    CongestionControl::Dcqcn(p) => Some(p.red),
                    CongestionControl::Dctcp(p) => Some(p.red),
                    CongestionControl::None | CongestionControl::Hpcc(_) => None,
                })
        })
        .collect();
    let reserved = mc.reserved_per_pg * (np * NPRIO) as u64;
    let lossless = (0..NPRIO as u8).filter(|&p| maps.lossless(p)).count() as u64;
    let headroom: u64 = mc.headroom.iter().map(|h| h * lossless).sum();
    // The shared pool must hold at least a few frames per port, or every PG
    // pauses at once and can never resume.
    if cfg.switch.buffer_bytes < reserved + headroom + 4 * np as u64 * u64::from(cfg.nic.mtu + ROCEV2_HEADERS) {
        return Err(RoceError::Config {
            field: "buffer_bytes",
            why: format!(
                "{} B on {} leaves no shared pool: its reserves take {reserved} B and its PFC headroom {headroom} B",
                cfg.switch.buffer_bytes, node.name
            ),
        });
    }
    let sw_maps = mc.maps.clone();
    let mmu = Mmu::new(mc, np).map_err(|e| RoceError::Config {
        field: "buffer_bytes",
        why: format!("switch {}: {e}", node.name),
    })?;
    let wd = cfg.switch.watchdog.unwrap_or_default();
    Ok(Switch {
        node: i as u32,
        base: pt.base[i],
        nports: np,
        maps: sw_maps,
        mmu,
        // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
        q_tx: unsafe { crate::engine::Table::trusted(vec![0; np * NPRIO]) },
        sched: unsafe { crate::engine::Table::trusted(vec![Scheduler::default(); np]) },
        wd: unsafe { crate::engine::Table::trusted(vec![Watchdog::new(wd); np * NPRIO]) },
        wd_stormed: unsafe { crate::engine::Table::trusted(vec![false; np * NPRIO]) },
        hash: HashConfig {
            seed: cfg.routing.hash.seed ^ (i as u32),
            ..cfg.routing.hash
        },
        red: unsafe { crate::engine::Table::trusted(red) },
        rng: switch_rng(cfg.seed, i as u32),
        xoff: Vec::new(),
    })
}

/// NIC `i`'s record (its port is port 1), its receive pipeline as configured.
fn build_nic(cfg: &RoceConfig, pt: &PortTables, i: usize) -> Nic {
    let gp = pt.base[i] + 1;
    let NicRxConfig {
        size,
        xoff_at: xoff,
        xon_at: xon,
        drain_bps: drain,
    } = cfg.nic.nic_rx;
    let mut rx = NicRx::new(size, xoff, xon);
    rx.faulty = cfg.faults.faulty_nics.contains(&NodeId(i as u32));
    rx.stall_prevention = cfg.nic.nic_stall_prevention;
    Nic {
        node: i as u32,
        gp,
        flows: Table::default(),
        rr: 0,
        ctrl: Ring::default(),
        rx,
        last_drain: Time::ZERO,
        drain_bps: drain,
        timer_at: Time::NEVER,
        np: CnpPacer::default(),
        xoff_on: false,
    }
}

/// The flows' paths fit RoCEv1 when it is on, the ids fit an event, and every
/// flow runs between two hosts.
fn check_flows(fabric: &Fabric, cfg: &RoceConfig, flows: &[FlowSpec], pt: &PortTables) -> Result<(), RoceError> {
    if let Some(mode) = cfg.routing.rocev1 {
        for (k, f) in flows.iter().enumerate() {
            ethcp::check_roce_v1(fabric, f.src, f.dst, mode).map_err(|why| RoceError::RoceV1 { flow: k, why })?;
        }
    }
    // Event ids are packed into 24 bits (engine `PackedQueue`).
    if flows.len() >= 1 << ID_BITS || pt.ports.len() >= 1 << ID_BITS || fabric.links.len() >= 1 << ID_BITS {
        return Err(RoceError::Config {
            field: "flows",
            why: format!("at most {} flows, ports and links each", (1u32 << ID_BITS) - 1),
        });
    }
    let n = fabric.nodes.len();
    for (k, f) in flows.iter().enumerate() {
        for node in [f.src, f.dst] {
            if node.idx() >= n || fabric.node(node).kind != NodeKind::Ca {
                let name = if node.idx() < n {
                    fabric.node(node).name.clone()
                } else {
                    format!("#{}", node.0)
                };
                return Err(RoceError::NotNic { flow: k, node: name });
            }
        }
    }
    Ok(())
}

/// An override's port is a switch egress port: it indexes the switch's
/// queues and MMU tables on every packet it routes.
fn check_overrides(fabric: &Fabric, cfg: &RoceConfig) -> Result<(), RoceError> {
    let n = fabric.nodes.len();
    for &(sw, dst, port) in &cfg.routing.route_overrides {
        let ok = sw.idx() < n
            && matches!(fabric.node(sw).kind, NodeKind::Switch | NodeKind::Router)
            && usize::from(port) < fabric.node(sw).ports.len();
        if !ok {
            return Err(RoceError::Config {
                field: "route_overrides",
                why: format!(
                    "({}, {}, {port}): the first node must be a switch and {port} one of its ports",
                    sw.0, dst.0
                ),
            });
        }
    }
    Ok(())
}

/// The horizon of the event queue's calendar wheel.
///
/// Most events are scheduled a frame's time ahead (a port's next wake-up,
/// the next arrival behind a FIFO head, a NIC's pacing): size the calendar
/// wheel to a few MTU frames at the slowest link (512 slots at 100G). The
/// first arrival on an idle link, a cable's delay ahead, and the timers wait
/// in the queue's heap instead. The wheel's slot buffers are touched in turn,
/// so a short wheel keeps them in cache (the 2,048 slots that reached a
/// whole cable ahead streamed ~1.5 MB per cycle): ~5% less CPU, +0.3%
/// instructions. The order of events does not depend on it.
fn calendar_horizon(cfg: &RoceConfig, pc: &[PortCold]) -> Time {
    let frame = u64::from(cfg.nic.mtu + ROCEV2_HEADERS);
    pc.iter()
        .filter(|c| c.bps > 0)
        .map(|c| Time(4 * crate::engine::time::serialization_ps(frame, c.bps)))
        .max()
        .unwrap_or(Time::ns(400))
}
