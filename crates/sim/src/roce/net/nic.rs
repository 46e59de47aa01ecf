//! NICs: QPs (requester and responder), rate control (DCQCN, DCTCP, HPCC),
//! the NIC's transmit arbitration between control frames, TCP and RDMA, its
//! receive pipeline and the pauses it sends, and the verbs-style API
//! (`open_qp`, `post`) and TCP flows a driver adds.

use super::*;

/// The hosts: each NIC's record ([`Nic`]: its flows, control frames, receive
/// pipeline), every RDMA flow's requester, responder and rate control
/// ([`Flow`]), background TCP, HPCC's INT headers in flight and the messages
/// delivered to an outside driver.
#[derive(Clone)]
pub(super) struct Hosts {
    /// NIC records, by NIC index (`RoceSim::role`).
    pub(super) nics: Table<Nic>,
    /// RDMA flows and QPs, by flow index (the packets' `flow`).
    pub(super) flows: Table<Flow>,
    /// Flows given at build time that have not finished.
    pub(super) flows_left: usize,
    /// Background TCP on the lossy class (empty unless [`RoceSim::add_tcp_flow`]).
    pub(super) tcp: TcpWorld,
    /// INT headers of HPCC packets in flight (empty unless the run uses HPCC).
    pub(super) int: IntStore,
    /// The run uses HPCC: gates every INT and window check, so other runs
    /// never touch a flow's HPCC state.
    pub(super) hpcc_on: bool,
    /// Messages of dynamic QPs received whole since the last `take_delivered`.
    pub(super) delivered: Vec<Delivered>,
}

impl Hosts {
    /// The NICs and flows built by `build`, no TCP flows yet.
    pub(super) fn new(cfg: &RoceConfig, nics: Vec<Nic>, flows: Vec<Flow>) -> Hosts {
        Hosts {
            tcp: TcpWorld::new(nics.len()),
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            nics: unsafe { crate::engine::Table::trusted(nics) },
            flows_left: flows.len(),
            flows: unsafe { crate::engine::Table::trusted(flows) },
            int: IntStore::default(),
            hpcc_on: matches!(cfg.nic.cc, CongestionControl::Hpcc(_)),
            delivered: Vec::new(),
        }
    }
}

/// Per-NIC state.
#[derive(Clone)]
pub(super) struct Nic {
    pub(super) node: u32,
    pub(super) gp: u32,
    pub(super) flows: Table<u32>,
    pub(super) rr: usize,
    pub(super) ctrl: Ring<Pkt>,
    pub(super) rx: NicRx,
    pub(super) last_drain: Time,
    pub(super) drain_bps: u64,
    pub(super) timer_at: Time,
    /// The port's CNP limiter, for profiles that pace CNPs per port.
    pub(super) np: CnpPacer,
    /// The NIC's port asserts XOFF on the RDMA priority (mirrors its pause
    /// generator, which only [`RoceSim::nic_pause_update`] drives).
    pub(super) xoff_on: bool,
}

/// Per-flow state.
#[derive(Clone)]
pub(super) struct Flow {
    pub(super) spec: FlowSpec,
    pub(super) req: Requester,
    pub(super) rp: Option<ReactionPoint>,
    pub(super) dctcp: Option<DctcpRp>,
    /// Boxed: a DCQCN flow carries 8 bytes for it, not ~150.
    pub(super) hpcc: Option<Box<HpccRp>>,
    pub(super) next_ok: Time,
    pub(super) resp: Responder,
    pub(super) np: CnpPacer,
    pub(super) started: bool,
    pub(super) done: Option<Time>,
    pub(super) delivered_bytes: u64,
    /// A QP opened with [`RoceSim::open_qp`]: messages come from
    /// [`RoceSim::post`], one at a time, and never "finish" the flow.
    pub(super) dynamic: bool,
    /// Dynamic QPs: (tag, post time) of each message, in posting order, until
    /// its last packet is received in order.
    pub(super) rx_tags: VecDeque<(u64, Time)>,
}

impl Flow {
    /// Flow `spec` from a NIC of `line` bits/s, with the rate control the
    /// configuration names; `dynamic`: a QP opened with [`RoceSim::open_qp`]
    /// (started at once, its messages posted one at a time).
    pub(super) fn new(spec: FlowSpec, cfg: &RoceConfig, line: u64, dynamic: bool) -> Flow {
        let rp = match &cfg.nic.cc {
            CongestionControl::Dcqcn(p) => Some(ReactionPoint::new(p.for_line(line))),
            CongestionControl::None | CongestionControl::Dctcp(_) | CongestionControl::Hpcc(_) => None,
        };
        let rc = RequesterConfig {
            mtu: cfg.nic.mtu,
            recovery: cfg.nic.recovery,
            rto: cfg.nic.rto,
        };
        Flow {
            spec,
            req: Requester::new(rc, Psn::new(0)),
            rp,
            dctcp: dctcp_for(&cfg.nic.cc, line),
            hpcc: hpcc_for(&cfg.nic.cc, line),
            next_ok: Time::ZERO,
            resp: Responder::new(Psn::new(0), cfg.nic.ack_every, cfg.nic.recovery),
            np: CnpPacer::default(),
            started: dynamic,
            done: None,
            delivered_bytes: 0,
            dynamic,
            rx_tags: VecDeque::new(),
        }
    }

    /// HPCC: the QP's window is full (unacknowledged packets × MTU, as ns-3
    /// counts bytes between `snd_una` and `snd_nxt`).
    #[inline]
    pub(super) fn window_bound(&self, mtu: u32) -> bool {
        self.hpcc.as_ref().is_some_and(|h| {
            let (una, nxt) = self.req.window();
            h.window_bound(una.distance_to(nxt).max(0) as u64 * u64::from(mtu))
        })
    }
}

/// A DCTCP sender for a NIC of `line` bits/s, if the run uses DCTCP.
pub(super) fn dctcp_for(cc: &CongestionControl, line: u64) -> Option<DctcpRp> {
    match cc {
        CongestionControl::Dctcp(p) => Some(DctcpRp::new(crate::roce::dctcp::DctcpParams {
            line_bps: line as f64,
            ..p.clone()
        })),
        _ => None,
    }
}

/// An HPCC sender for a NIC of `line` bits/s, if the run uses HPCC.
pub(super) fn hpcc_for(cc: &CongestionControl, line: u64) -> Option<Box<HpccRp>> {
    match cc {
        CongestionControl::Hpcc(p) => Some(Box::new(HpccRp::new(crate::roce::hpcc_cc::HpccParams {
            line_bps: line as f64,
            ..p.clone()
        }))),
        _ => None,
    }
}

/// [`crate::engine::time::serialization_ps`] (exact, rounded up) in 64-bit
/// arithmetic when the numerator fits, as it does for any frame (bytes · 8 · 10¹²
/// < 2⁶⁴ up to 2.3 MB): a DCQCN sender paces every packet at its own rate, so
/// this division is per packet, and the 128-bit one is a library call.
#[inline]
pub(super) fn pace_ps(bytes: u64, bps: u64) -> u64 {
    match bytes.checked_mul(8_000_000_000_000) {
        Some(num) => num.div_ceil(bps),
        None => crate::engine::time::serialization_ps(bytes, bps),
    }
}

impl RoceSim {
    /// Open a QP from host `src` to host `dst` for messages posted later with
    /// [`post`](Self::post) (the verbs-style use, e.g. a collective runner).
    /// Its UDP source port comes from its QP numbers, so QPs between the same
    /// hosts spread over ECMP. Returns the QP's handle.
    pub fn open_qp(&mut self, src: NodeId, dst: NodeId) -> Result<u32, RoceError> {
        let k = self.hosts.flows.len();
        for node in [src, dst] {
            if node.idx() >= self.role.len() || self.role[node.idx()].0 || self.fabric.node(node).kind != NodeKind::Ca {
                let name = if node.idx() < self.role.len() {
                    self.fabric.node(node).name.clone()
                } else {
                    format!("#{}", node.0)
                };
                return Err(RoceError::NotNic { flow: k, node: name });
            }
        }
        if k + 1 >= 1 << ID_BITS {
            return Err(RoceError::Config {
                field: "flows",
                why: format!("at most {} QPs", (1u32 << ID_BITS) - 1),
            });
        }
        if let Some(mode) = self.cfg.routing.rocev1 {
            ethcp::check_roce_v1(&self.fabric, src, dst, mode).map_err(|why| RoceError::RoceV1 { flow: k, why })?;
        }
        let qpn = 0x100 + 2 * k as u32;
        let spec = FlowSpec {
            src,
            dst,
            size: 0,
            messages: 0,
            start: self.now,
            sport: ethcp::roce_udp_sport(qpn, qpn + 1),
            dport: 0,
        };
        let nic = self.role[src.idx()].1;
        let gp = self.hosts.nics[nic as usize].gp;
        let line = self.links.pc[gp as usize].bps.max(1);
        self.hosts.flows.push(Flow::new(spec, &self.cfg, line, true));
        self.hosts.nics[nic as usize].flows.push(k as u32);
        // The new QP's entries (`[(flow * 2 + dir) * switches + switch]`) go at the end.
        for _ in 0..2 * self.sw.switches.len() {
            self.sw.route_cache.push(NO_ROUTE);
        }
        Ok(k as u32)
    }

    /// Declare that an outside driver feeds this world with [`open_qp`](Self::open_qp)
    /// and [`post`](Self::post): from now on `run` never reports `Done`, and an idle
    /// world lets the clock run to `until` (the driver's next instant).
    pub fn drive(&mut self) {
        self.driven = true;
    }

    /// Set the TCP parameters (before the first [`add_tcp_flow`](Self::add_tcp_flow)).
    pub fn set_tcp_config(&mut self, cfg: TcpConfig) -> Result<(), RoceError> {
        cfg.validate()
            .map_err(|(field, why)| RoceError::Config { field, why })?;
        if !self.hosts.tcp.is_empty() {
            return Err(RoceError::Config {
                field: "tcp",
                why: "set the TCP configuration before adding TCP flows".into(),
            });
        }
        self.hosts.tcp.set_config(cfg);
        Ok(())
    }

    /// Add a TCP connection on the lossy class ([`crate::roce::tcp`]); returns its
    /// index for [`tcp`](Self::tcp)'s per-flow counters.
    pub fn add_tcp_flow(&mut self, spec: TcpFlowSpec) -> Result<u32, RoceError> {
        let k = self.hosts.tcp.len();
        for node in [spec.src, spec.dst] {
            if node.idx() >= self.role.len() || self.role[node.idx()].0 || self.fabric.node(node).kind != NodeKind::Ca {
                let name = if node.idx() < self.role.len() {
                    self.fabric.node(node).name.clone()
                } else {
                    format!("#{}", node.0)
                };
                return Err(RoceError::NotNic { flow: k, node: name });
            }
        }
        if spec.src == spec.dst {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("flow {k} sends from {} to itself", self.fabric.node(spec.src).name),
            });
        }
        if spec
            .on_off
            .is_some_and(|(on, _)| on == Time::ZERO || spec.rate_bps == 0)
        {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("flow {k}: an on/off source needs an on-time above 0 and a rate above 0"),
            });
        }
        if k + 1 >= 1 << ID_BITS {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("at most {} TCP flows", (1u32 << ID_BITS) - 1),
            });
        }
        let nic = self.role[spec.src.idx()].1;
        let f = self.hosts.tcp.add(nic, spec);
        let gp = self.hosts.nics[nic as usize].gp;
        if self.links.peer[gp as usize] != NONE {
            self.schedule_wake(gp, spec.start.max(self.now));
        }
        Ok(f)
    }

    /// The TCP flows (counters, windows, drops).
    pub fn tcp(&self) -> &TcpWorld {
        &self.hosts.tcp
    }

    /// Post a message of `bytes` on QP `qp` now (SEND; delivered in posting order).
    pub fn post(&mut self, qp: u32, bytes: u64, tag: u64) -> Result<(), RoceError> {
        let Some(f) = self.hosts.flows.get_mut(qp as usize).filter(|f| f.dynamic) else {
            return Err(RoceError::Config {
                field: "qp",
                why: format!("{qp} is not a QP opened with open_qp"),
            });
        };
        f.req.post(tag, bytes, self.now);
        f.rx_tags.push_back((tag, self.now));
        let nic = self.role[f.spec.src.idx()].1;
        let gp = self.hosts.nics[nic as usize].gp;
        self.kick(gp);
        self.arm_periodic();
        Ok(())
    }

    /// Take the messages delivered since the last call.
    pub fn take_delivered(&mut self) -> Vec<Delivered> {
        std::mem::take(&mut self.hosts.delivered)
    }

    /// Flow `k` from a caller of the public look-ups: checked in every build
    /// (the tables are indexed unchecked in release builds only with the
    /// simulator's own ids).
    pub(super) fn flow_at(&self, k: usize) -> &Flow {
        assert!(
            k < self.hosts.flows.len(),
            "no flow {k}: {} flows",
            self.hosts.flows.len()
        );
        &self.hosts.flows[k]
    }

    /// Payload bytes delivered in order to flow `k`'s receiver.
    pub fn flow_delivered(&self, k: usize) -> u64 {
        self.flow_at(k).delivered_bytes
    }

    /// Completion time of flow `k`.
    pub fn flow_done(&self, k: usize) -> Option<Time> {
        self.flow_at(k).done
    }

    /// The requester counters of flow `k`.
    pub fn flow_counters(&self, k: usize) -> crate::roce::transport::RequesterCounters {
        self.flow_at(k).req.counters
    }

    /// Current DCQCN or DCTCP rate of flow `k` (bits/s), if it runs either.
    pub fn flow_rate(&self, k: usize) -> Option<f64> {
        let f = self.flow_at(k);
        f.rp.as_ref()
            .map(ReactionPoint::rate)
            .or(f.dctcp.as_ref().map(DctcpRp::rate))
            .or(f.hpcc.as_deref().map(HpccRp::rate))
    }

    /// The HPCC counters of flow `k`, if it runs HPCC.
    pub fn flow_hpcc(&self, k: usize) -> Option<crate::roce::hpcc_cc::HpccCounters> {
        self.flow_at(k).hpcc.as_ref().map(|h| h.counters)
    }

    /// INT headers held by packets in flight (HPCC; 0 once a run drains).
    pub fn int_live(&self) -> usize {
        self.hosts.int.live()
    }

    /// HPCC packets sent without INT because 65,535 headers were in flight.
    pub fn int_overflow(&self) -> u64 {
        self.hosts.int.overflow
    }

    /// The DCTCP counters of flow `k`, if it runs DCTCP.
    pub fn flow_dctcp(&self, k: usize) -> Option<crate::roce::dctcp::DctcpCounters> {
        self.flow_at(k).dctcp.as_ref().map(|d| d.counters)
    }

    pub(super) fn flow_start(&mut self, k: u32) {
        let f = &mut self.hosts.flows[k as usize];
        f.started = true;
        for m in 0..f.spec.messages.max(1) {
            // Messages are posted together; PSNs are allocated, packets are built
            // only when the port sends them.
            f.req.post(u64::from(m), f.spec.size, self.now);
        }
        let nic = self.role[f.spec.src.idx()].1;
        let gp = self.hosts.nics[nic as usize].gp;
        self.kick(gp);
    }

    pub(super) fn nic_ctrl(&mut self, nic: u32, pk: Pkt) {
        let p = self.new_pkt(pk);
        self.hosts.nics[nic as usize].ctrl.push_back(p);
        let gp = self.hosts.nics[nic as usize].gp;
        self.kick(gp);
    }

    pub(super) fn nic_pick(&mut self, nic: u32) -> Result<Pkt, Time> {
        let now = self.now;
        let n = &self.hosts.nics[nic as usize];
        let gp = n.gp;
        let until = self.pause_until(gp);
        let mut wait = Time::NEVER;
        // ACK/NAK/CNP first (HPCC ACK_HIGH_PRIO); each honours PFC on its priority.
        if let Some(pk) = n.ctrl.front() {
            let (_, pg, _) = self.links.maps.classify(pk.dscp);
            if self.cfg.nic.ack_high_prio || until[usize::from(pg)] <= now || !self.links.maps.lossless(pg) {
                let ctrl = &mut self.hosts.nics[nic as usize].ctrl;
                let p = ctrl.pop_front().expect("front");
                if ctrl.is_empty() {
                    // Reuse the ring's first slot (see `switch_pick`).
                    ctrl.clear();
                }
                return Ok(p);
            }
            wait = wait.min(until[usize::from(pg)]);
        }
        if !self.hosts.tcp.sends(nic) {
            return self.nic_pick_rdma(nic, wait);
        }
        // RDMA and TCP share the port by the NIC's ETS (tcp.rs).
        let mut tcp_idle = false;
        if self.hosts.tcp.tcp_first(nic) {
            match self.nic_pick_tcp(nic, false) {
                Ok(p) => return Ok(p),
                Err(t) => {
                    wait = wait.min(t);
                    tcp_idle = true;
                }
            }
        }
        match self.nic_pick_rdma(nic, wait) {
            Ok(p) => {
                self.hosts.tcp.served(nic, false, u32::from(p.wire), tcp_idle);
                Ok(p)
            }
            Err(w) if tcp_idle => Err(w),
            Err(w) => self.nic_pick_tcp(nic, true).map_err(|t| t.min(w)),
        }
    }

    /// A TCP segment from NIC `nic` if one may go now (`rdma_idle`: RDMA had none).
    pub(super) fn nic_pick_tcp(&mut self, nic: u32, rdma_idle: bool) -> Result<Pkt, Time> {
        let seg = self.hosts.tcp.pick(nic, self.now)?;
        self.hosts.tcp.served(nic, true, seg.wire, rdma_idle);
        // Segments are at most 9000 bytes (TcpConfig::validate).
        Ok(self.new_pkt(Pkt {
            kind: Kind::TcpData,
            flow: seg.flow,
            seq: seg.seq,
            wire: seg.wire as u16,
            dscp: self.hosts.tcp.config().dscp,
            ..Pkt::default()
        }))
    }

    /// The next RDMA data packet of NIC `nic` (`wait`: the earliest time found so far).
    pub(super) fn nic_pick_rdma(&mut self, nic: u32, mut wait: Time) -> Result<Pkt, Time> {
        let now = self.now;
        let n = &self.hosts.nics[nic as usize];
        let gp = n.gp;
        let until = self.pause_until(gp);
        let data_prio = self.links.maps.classify(DSCP_ROCE).1;
        if until[usize::from(data_prio)] > now && self.links.maps.lossless(data_prio) {
            return Err(wait.min(until[usize::from(data_prio)]));
        }
        let nf = n.flows.len();
        for k in 0..nf {
            // (rr + k) mod nf without a division: rr < nf and k < nf.
            let i = if n.rr + k >= nf { n.rr + k - nf } else { n.rr + k };
            let fi = n.flows[i] as usize;
            let f = &self.hosts.flows[fi];
            if !f.started || !f.req.has_data() || (self.hosts.hpcc_on && f.window_bound(self.cfg.nic.mtu)) {
                // A window-bound HPCC QP waits for an ACK (which kicks the NIC).
                continue;
            }
            if f.next_ok > now {
                wait = wait.min(f.next_ok);
                continue;
            }
            self.hosts.nics[nic as usize].rr = if i + 1 == nf { 0 } else { i + 1 };
            let f = &mut self.hosts.flows[fi];
            let tx = f.req.next_packet(now).expect("has data");
            let hpcc = self.hosts.hpcc_on;
            let wire = tx.payload + ROCEV2_HEADERS + if hpcc { INT_BYTES } else { 0 };
            let rate = match (&f.rp, &f.dctcp, &f.hpcc) {
                (Some(rp), _, _) => rp.rate_bps(),
                (None, Some(d), _) => d.rate_bps(),
                (None, None, Some(h)) => h.rate_bps(),
                (None, None, None) => self.links.pc[gp as usize].bps,
            };
            if let Some(rp) = f.rp.as_mut() {
                rp.on_sent(now, u64::from(wire));
            }
            f.next_ok = now + Time(pace_ps(u64::from(wire), rate.max(1)));
            let int = if hpcc { self.hosts.int.alloc() } else { 0 };
            // Payloads are at most the MTU, 9000 bytes (checked in `new`); the
            // payload is the wire size less the headers (`RoceSim::payload`).
            debug_assert!(wire <= u32::from(u16::MAX));
            let mut flags = 0;
            if tx.first {
                flags |= Pkt::FIRST;
            }
            if tx.last {
                flags |= Pkt::LAST;
            }
            let p = self.new_pkt(Pkt {
                kind: Kind::Data,
                flow: fi as u32,
                seq: tx.psn.value(),
                wire: wire as u16,
                dscp: DSCP_ROCE,
                hops: 0,
                flags,
                int,
            });
            self.arm_flow_timers(nic, fi);
            return Ok(p);
        }
        Err(wait)
    }

    pub(super) fn arm_flow_timers(&mut self, nic: u32, fi: usize) {
        let f = &self.hosts.flows[fi];
        let t = f
            .req
            .next_deadline()
            .min(f.rp.as_ref().map_or(Time::NEVER, ReactionPoint::next_deadline));
        self.arm_nic(nic, t);
    }

    pub(super) fn arm_nic(&mut self, nic: u32, t: Time) {
        let n = &mut self.hosts.nics[nic as usize];
        if t < n.timer_at {
            n.timer_at = t;
            self.push_ev(t, Ev::NicTimer { nic });
        }
    }

    pub(super) fn nic_timer(&mut self, nic: u32) {
        let now = self.now;
        let mut next = Time::NEVER;
        let mut kick = false;
        for i in 0..self.hosts.nics[nic as usize].flows.len() {
            let fi = self.hosts.nics[nic as usize].flows[i] as usize;
            let f = &mut self.hosts.flows[fi];
            if let Some(rp) = f.rp.as_mut() {
                rp.poll(now);
                next = next.min(rp.next_deadline());
            }
            if f.req.poll(now) {
                kick = true;
            }
            next = next.min(f.req.next_deadline());
        }
        if self.hosts.tcp.sends(nic) {
            kick |= self.hosts.tcp.poll(nic, now);
            next = next.min(self.hosts.tcp.next_deadline(nic));
        }
        // Host drain and the NIC's stall prevention.
        self.nic_drain(nic);
        if self.hosts.nics[nic as usize].rx.poll(now) {
            self.nic_pause_update(nic);
        }
        next = next.min(self.hosts.nics[nic as usize].rx.next_deadline());
        if self.hosts.nics[nic as usize].drain_bps > 0 && self.hosts.nics[nic as usize].rx.used() > 0 {
            next = next.min(now + Time::us(1));
        }
        if next != Time::NEVER {
            self.arm_nic(nic, next);
        }
        if kick {
            let gp = self.hosts.nics[nic as usize].gp;
            self.kick(gp);
        }
    }

    pub(super) fn nic_drain(&mut self, nic: u32) {
        let now = self.now;
        let n = &mut self.hosts.nics[nic as usize];
        if n.drain_bps == 0 {
            return;
        }
        let dt = now.saturating_sub(n.last_drain);
        n.last_drain = now;
        let bytes = (u128::from(dt.0) * u128::from(n.drain_bps) / 8 / 1_000_000_000_000) as u64;
        let mut left = bytes.min(n.rx.used());
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX)) as u32;
            n.rx.on_drain(now, chunk);
            left -= u64::from(chunk);
        }
        self.nic_pause_update(nic);
    }

    /// Send XOFF/XON from the NIC as its receive buffer asks.
    pub(super) fn nic_pause_update(&mut self, nic: u32) {
        if !self.cfg.pfc.enabled && !self.hosts.nics[nic as usize].rx.faulty {
            return;
        }
        let n = &mut self.hosts.nics[nic as usize];
        let gp = n.gp;
        let want = n.rx.wants_pause();
        if !want && !n.xoff_on {
            // Nothing asserted and nothing to assert (every packet at a healthy
            // NIC): the port's pause generator (a cold line) would answer None.
            let t = n.rx.next_deadline();
            if t != Time::NEVER {
                self.arm_nic(nic, t);
            }
            return;
        }
        n.xoff_on = want;
        let prio = self.links.maps.classify(DSCP_ROCE).1;
        let bps = self.links.pc[gp as usize].bps;
        let f = if want {
            self.links.pc[gp as usize].pausegen.xoff(self.now, prio, bps)
        } else {
            self.links.pc[gp as usize].pausegen.xon(prio)
        };
        if let Some(f) = f {
            self.send_pause(gp, f);
        }
        let t = self.hosts.nics[nic as usize].rx.next_deadline();
        if t != Time::NEVER {
            self.arm_nic(nic, t);
        }
    }

    pub(super) fn nic_arrive(&mut self, nic: u32, p: Pkt) {
        let now = self.now;
        let pk = p;
        let mut p = p;
        match pk.kind {
            Kind::Data => {
                self.nic_drain(nic);
                let ok = self.hosts.nics[nic as usize].rx.on_arrive(now, u32::from(pk.wire));
                if !ok {
                    self.nic_pause_update(nic);
                    let why = if self.hosts.nics[nic as usize].rx.faulty {
                        RoceDrop::FaultyNic
                    } else {
                        RoceDrop::NicRxDiscard
                    };
                    self.drop_pkt(p, why);
                    return;
                }
                if self.hosts.nics[nic as usize].drain_bps == 0 {
                    self.hosts.nics[nic as usize].rx.on_drain(now, u32::from(pk.wire));
                } else {
                    let t = now + Time::us(1);
                    self.arm_nic(nic, t);
                }
                self.nic_pause_update(nic);
                let fi = pk.flow as usize;
                let payload = self.payload(&pk);
                let verdict =
                    self.hosts.flows[fi]
                        .resp
                        .on_packet(pk.psn(), payload, pk.has(Pkt::FIRST), pk.has(Pkt::LAST));
                // DCTCP: the ACK echoes the CE mark of the packet that triggered it
                // (HPCC ns-3 sets the ACK's CNP flag).
                let echo = pk.has(Pkt::CE) && matches!(self.cfg.nic.cc, CongestionControl::Dctcp(_));
                let reply = |kind: Kind, psn: u32| Pkt {
                    kind,
                    flow: pk.flow,
                    seq: psn,
                    wire: ACK_BYTES as u16,
                    dscp: DSCP_ROCE,
                    hops: 0,
                    flags: if echo && kind == Kind::Ack { Pkt::CE } else { 0 },
                    int: 0,
                };
                // HPCC: the first ACK/NAK this packet triggers echoes its INT
                // (ns-3 copies the IntHeader into the ACK), 42 bytes more on the wire.
                let mut int = pk.int;
                p.int = 0;
                if int != 0 {
                    // The switches wrote hops 0..hops−1 (the first MAX_HOPS of them).
                    let h = self.hosts.int.get_mut(int);
                    h.n = pk.hops.min(crate::roce::hpcc_cc::MAX_HOPS as u8);
                    h.rx = now;
                }
                let mut reply = |kind: Kind, psn: u32| {
                    let mut r = reply(kind, psn);
                    if int != 0 {
                        r.int = int;
                        r.wire += INT_BYTES as u16;
                        int = 0;
                    }
                    r
                };
                match verdict {
                    RxVerdict::Accept { ack } => {
                        self.hosts.flows[fi].delivered_bytes += u64::from(payload);
                        self.obs.progress += 1;
                        if pk.has(Pkt::LAST)
                            && self.hosts.flows[fi].dynamic
                            && let Some((tag, posted)) = self.hosts.flows[fi].rx_tags.pop_front()
                        {
                            self.hosts.delivered.push(Delivered { tag, posted, done: now });
                        }
                        if let Some(a) = ack {
                            self.nic_ctrl(nic, reply(Kind::Ack, a.value()));
                        }
                    }
                    RxVerdict::Duplicate { ack } => self.nic_ctrl(nic, reply(Kind::Ack, ack.value())),
                    RxVerdict::OutOfOrder { nak: Some(e) } => self.nic_ctrl(nic, reply(Kind::Nak, e.value())),
                    RxVerdict::OutOfOrder { nak: None } => {}
                }
                if pk.has(Pkt::CE) {
                    let (interval, per_port) = match &self.cfg.nic.cc {
                        CongestionControl::Dcqcn(p) => (p.cnp_interval, p.cnp_per_port),
                        CongestionControl::None | CongestionControl::Dctcp(_) | CongestionControl::Hpcc(_) => {
                            (Time::NEVER, false)
                        }
                    };
                    let send = interval != Time::NEVER
                        && if per_port {
                            self.hosts.nics[nic as usize].np.on_marked(now, interval)
                        } else {
                            self.hosts.flows[fi].np.on_marked(now, interval)
                        };
                    if send {
                        self.cnps_sent += 1;
                        let mut c = reply(Kind::Cnp, 0);
                        c.wire = CNP_BYTES as u16;
                        c.dscp = DSCP_CNP;
                        self.nic_ctrl(nic, c);
                    }
                }
                if int != 0 {
                    // No ACK/NAK went out for this packet: its INT ends here.
                    self.hosts.int.release(int);
                }
                self.deliver(p);
            }
            Kind::Ack | Kind::Nak => {
                let fi = pk.flow as usize;
                let mut done = Vec::new();
                if pk.kind == Kind::Ack {
                    let f = &mut self.hosts.flows[fi];
                    f.req.on_ack(now, pk.psn(), &mut done);
                    if let Some(d) = f.dctcp.as_mut() {
                        d.on_ack(pk.psn().next(), pk.has(Pkt::CE), Psn::new(0), f.req.window().1);
                    }
                } else {
                    self.hosts.flows[fi].req.on_nak(now, pk.psn(), &mut done);
                }
                if pk.int != 0 {
                    // HPCC reacts to ACKs and NAKs alike (ns-3 ReceiveAck → HandleAckHp).
                    let f = &mut self.hosts.flows[fi];
                    if let Some(h) = f.hpcc.as_mut() {
                        let next = if pk.kind == Kind::Ack {
                            pk.psn().next()
                        } else {
                            pk.psn()
                        };
                        h.on_ack(next, self.hosts.int.get(pk.int), f.req.window().1);
                    }
                }
                self.deliver(p);
                for c in done {
                    self.completions.push((fi as u32, c));
                }
                let f = &self.hosts.flows[fi];
                if !f.dynamic
                    && f.done.is_none()
                    && !f.req.outstanding()
                    && f.req.counters.completed >= u64::from(f.spec.messages.max(1))
                {
                    let f = &mut self.hosts.flows[fi];
                    f.done = Some(now);
                    self.hosts.flows_left -= 1;
                    let spec = f.spec;
                    self.fct.push(FctRecord {
                        sip: host_ip(spec.src.0),
                        dip: host_ip(spec.dst.0),
                        sport: spec.sport,
                        dport: spec.dport,
                        size: spec.size * u64::from(spec.messages.max(1)),
                        start_ns: spec.start.0 / 1000,
                        fct_ns: (now - spec.start).0 / 1000,
                        standalone_ns: 0,
                    });
                }
                self.arm_flow_timers(nic, fi);
                let gp = self.hosts.nics[nic as usize].gp;
                self.kick(gp);
            }
            Kind::Cnp => {
                let fi = pk.flow as usize;
                if let Some(rp) = self.hosts.flows[fi].rp.as_mut() {
                    rp.on_cnp(now);
                }
                self.deliver(p);
                self.arm_flow_timers(nic, fi);
            }
            Kind::TcpData => {
                let (ack, ece) = self.hosts.tcp.on_data(pk.flow, pk.tcp_seq(), pk.has(Pkt::CE));
                self.deliver(p);
                let a = Pkt {
                    kind: Kind::TcpAck,
                    flow: pk.flow,
                    seq: ack,
                    wire: crate::roce::tcp::TCP_HEADERS as u16,
                    dscp: pk.dscp,
                    flags: if ece { Pkt::CE } else { 0 },
                    ..Pkt::default()
                };
                self.nic_ctrl(nic, a);
            }
            Kind::TcpAck => {
                self.deliver(p);
                if self.hosts.tcp.on_ack(pk.flow, pk.tcp_seq(), pk.has(Pkt::CE), now) {
                    let gp = self.hosts.nics[nic as usize].gp;
                    self.kick(gp);
                }
                let t = self.hosts.tcp.next_deadline(nic);
                self.arm_nic(nic, t);
            }
            Kind::Pause => unreachable!("handled in arrive"),
        }
    }
}
