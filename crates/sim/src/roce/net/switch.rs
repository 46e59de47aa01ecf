//! Switch forwarding: classification, ECMP routing (with the per-flow route
//! cache), MMU admission and release, egress arbitration, RED/ECN marking at
//! dequeue, HPCC INT and the XON re-check.

use super::*;

/// The switches: each one's record ([`Switch`]: QoS maps, MMU, schedulers,
/// RED, watchdogs), the egress queues of every port and the forwarding state
/// they read per packet (ECMP groups, static overrides, the per-flow route
/// cache, the local repair view after a link failure).
#[derive(Clone)]
pub(super) struct Switching {
    /// Switch records, by switch index (`RoceSim::role`).
    pub(super) switches: Table<Switch>,
    /// Switch egress queues, `[q * ports + gp]` by global port (queue-major: the
    /// data queue's ring headers of neighbouring ports share lines); a wake-up's
    /// queue is found from its port alone, without the switch's record. NIC
    /// ports have theirs, always empty.
    pub(super) eq: Table<HeadRing<Queued>>,
    /// The ECMP groups every switch hashes over (converging after a link failure).
    pub(super) ecmp: EcmpTable,
    /// Static routes `(switch node, destination node, egress port)`, checked first.
    pub(super) overrides: Vec<(u32, u32, u8)>,
    /// ECMP egress per (flow, direction, switch): `[(flow * 2 + dir) * switches + switch]`,
    /// [`NO_ROUTE`] until first hashed; cleared when the ECMP groups change.
    pub(super) route_cache: Table<u8>,
    /// With `local_repair`, from a link failure to ECMP convergence: the routes
    /// of the switches next to the failure (shortest paths without it).
    pub(super) local_view: Option<EcmpTable>,
}

impl Switching {
    /// The switches built by `build`, their egress queues (`ports` global
    /// ports × [`NPRIO`]), the ECMP groups of `fabric`, the configured
    /// overrides and an empty route cache for `flows` flows.
    pub(super) fn new(
        fabric: &Fabric,
        cfg: &RoceConfig,
        switches: Vec<Switch>,
        ports: usize,
        flows: usize,
    ) -> Switching {
        let nsw = switches.len();
        // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
        unsafe {
            Switching {
                eq: crate::engine::Table::trusted(vec![HeadRing::default(); ports * NPRIO]),
                switches: crate::engine::Table::trusted(switches),
                ecmp: EcmpTable::build(fabric, cfg.routing.ecmp_convergence.as_ps()),
                overrides: cfg
                    .routing
                    .route_overrides
                    .iter()
                    .map(|(s, d, p)| (s.0, d.0, *p))
                    .collect(),
                route_cache: crate::engine::Table::trusted(vec![NO_ROUTE; flows * 2 * nsw]),
                local_view: None,
            }
        }
    }
}

/// Per-switch state (its egress queues are `Switching::eq`). `repr(C)`, hot
/// fields first: what every arrival and dequeue reads (the QoS maps, the port
/// count, the counter and RED tables, the XOFF list) sits in the first three lines, then the MMU (whose
/// own hot fields come first too).
#[repr(C)]
#[derive(Clone)]
pub(super) struct Switch {
    /// This switch's DSCP → TC → PG/queue maps (a misconfigured hop differs).
    pub(super) maps: QosMaps,
    /// Ports.
    pub(super) nports: usize,
    /// Packets sent per egress queue, `[q * nports + local_port]` (queue-major: the
    /// data queue's counters of all ports share a few lines).
    pub(super) q_tx: Table<u64>,
    pub(super) red: Table<Option<Red>>,
    /// This switch's own random stream for RED/ECN marking, seeded from the
    /// run's seed and the switch's node: its draws follow this switch's
    /// dequeues alone, whatever other switches do (see `RoceSim::run`).
    pub(super) rng: Pcg64Mcg,
    /// Ingress (port, PG) with XOFF asserted: re-checked on every release, since
    /// the threshold rises for all of them as the shared pool frees.
    pub(super) xoff: Vec<(u8, u8)>,
    /// Watchdog action in force per `[q * nports + port]`.
    pub(super) wd_stormed: Table<bool>,
    pub(super) node: u32,
    /// Global index of port 0 (`Links::port_base` of `node`, kept beside it:
    /// an arrival finds its egress port from this line).
    pub(super) base: u32,
    pub(super) mmu: Mmu,
    pub(super) sched: Table<Scheduler>,
    pub(super) wd: Table<Watchdog>,
    pub(super) hash: HashConfig,
}

/// A packet in a switch egress queue, with what its dequeue needs: the ingress
/// port (local) and PG its bytes are charged to.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Queued {
    pub(super) p: Pkt,
    pub(super) in_port: u8,
    pub(super) pg: u8,
}

/// Switch `node`'s RED/ECN random stream: the run's seed mixed with the
/// node's index (so each switch draws from a stream of its own, and a switch's
/// stream does not depend on which other switches exist).
pub(super) fn switch_rng(seed: u64, node: u32) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ (u64::from(node) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl RoceSim {
    /// Prefetch the packet switch port `gp` would send next from its lowest
    /// non-empty queue (a hint for an upcoming wake-up; no effect on results).
    /// A NIC port's mask is always 0.
    #[inline]
    pub(super) fn prefetch_egress(&self, gp: u32) {
        let port = &self.links.ports[gp as usize];
        // The link-FIFO slot the send will write: the one after the last written
        // (a store into a line last touched a send ago, long out of cache).
        prefetch::addr((port.tail_hint + KeyedFifo::<Pkt>::SLOT_BYTES) as *const u8);
        let mask = port.qmask;
        if mask != 0 {
            // The head is in the queue's header line, which this reads; the pop
            // moves the packet after it there from the ring: start loading that.
            if let Some(next) = self.sw.eq[self.eqi(mask.trailing_zeros() as usize, gp)].second() {
                prefetch::whole(next);
            }
            // The switch record's dequeue half (port count, counter and RED
            // tables, XOFF list, the MMU's pool and tables): lines 1 to 4.
            let sw = (&self.sw.switches[port.owner().1 as usize] as *const Switch).cast::<u8>();
            for l in 1..5 {
                prefetch::addr(sw.wrapping_add(64 * l));
            }
        }
    }

    /// The egress port of switch `si` for `pk`: a static override, else the
    /// ECMP member its 5-tuple hashes to (cached per flow, direction and switch:
    /// every packet of a QP in one direction carries the same 5-tuple).
    #[inline]
    pub(super) fn route(&mut self, si: u32, pk: &Pkt) -> Option<u8> {
        let sw = &self.sw.switches[si as usize];
        if !self.sw.overrides.is_empty() {
            let dst = self.ends(pk).1;
            if let Some(o) = self.sw.overrides.iter().find(|o| o.0 == sw.node && o.1 == dst) {
                return Some(o.2);
            }
        }
        if pk.kind.is_tcp() {
            // Background TCP flows have their own ids: hashed every time.
            return self.route_hashed(si, pk);
        }
        let dir = usize::from(pk.kind != Kind::Data);
        let ci = (pk.flow as usize * 2 + dir) * self.sw.switches.len() + si as usize;
        let c = self.sw.route_cache[ci];
        if c != NO_ROUTE {
            return Some(c);
        }
        let out = self.route_hashed(si, pk);
        if let Some(o) = out {
            self.sw.route_cache[ci] = o;
        }
        out
    }

    pub(super) fn route_hashed(&self, si: u32, pk: &Pkt) -> Option<u8> {
        let sw = &self.sw.switches[si as usize];
        let (sport, dport, proto) = if pk.kind.is_tcp() {
            // TCP hashes its own ports; the ACK direction swaps them.
            let (s, d) = self.hosts.tcp.ports(pk.flow);
            if pk.kind == Kind::TcpData { (s, d, 6) } else { (d, s, 6) }
        } else {
            (self.hosts.flows[pk.flow as usize].spec.sport, 4791, 17)
        };
        // Both directions of a QP hash its UDP source port (the responder
        // answers with the same entropy), addresses in packet direction.
        let (src, dst) = self.ends(pk);
        let key = if self.cfg.routing.rocev1.is_some() {
            // RoCEv1 has no IP/UDP header: a switch hashes MAC addresses only.
            FlowKey::rocev1(src, dst, pk.flow)
        } else {
            FlowKey {
                sip: host_ip(src),
                dip: host_ip(dst),
                sport,
                dport,
                proto,
                smac: 0,
                dmac: 0,
                dqpn: pk.flow,
            }
        };
        let h = if self.cfg.routing.rocev1.is_some() {
            HashConfig {
                fields: field::L2,
                ..sw.hash
            }
            .hash(&key)
        } else {
            sw.hash.hash(&key)
        };
        let out = self.sw.ecmp.next_port(NodeId(sw.node), NodeId(dst), h)?;
        if let Some(v) = &self.sw.local_view {
            // The switch knows its own link is down: it takes its repaired route.
            if self.links.ports[(self.links.port_base[sw.node as usize] + u32::from(out)) as usize].down() {
                return v.next_port(NodeId(sw.node), NodeId(dst), h);
            }
        }
        Some(out)
    }

    pub(super) fn switch_arrive(&mut self, si: u32, gp: u32, mut p: Pkt) {
        let in_port = self.links.ports[gp as usize].num;
        let pk = p;
        // A router drops a packet whose TTL would reach 0 (RFC 1812 §5.3.1).
        if IP_TTL - p.hops <= 1 {
            self.drop_pkt(p, RoceDrop::TtlExpired);
            return;
        }
        p.hops += 1;
        let (_, pg, queue) = self.sw.switches[si as usize].maps.classify(pk.dscp);
        let Some(out) = self.route(si, &pk) else {
            self.drop_pkt(p, RoceDrop::NoRoute);
            return;
        };
        let s = &mut self.sw.switches[si as usize];
        let qi = usize::from(queue) * s.nports + usize::from(out);
        // The configuration first: without a dropping watchdog the per-queue flag
        // (a line of its own) is not read.
        if self.faults.wd_drop && s.wd_stormed[qi] {
            self.drop_pkt(p, RoceDrop::Watchdog);
            return;
        }
        match s
            .mmu
            .admit(usize::from(in_port), pg, usize::from(out), queue, u32::from(pk.wire))
        {
            Admit::Drop(d) => {
                let why = match d {
                    MmuDrop::LossyOverThreshold => RoceDrop::LossyOverThreshold,
                    MmuDrop::HeadroomOverflow if pk.has(Pkt::WD_FWD) => RoceDrop::Watchdog,
                    MmuDrop::HeadroomOverflow => RoceDrop::HeadroomOverflow,
                };
                self.drop_pkt(p, why);
            }
            Admit::Ok { xoff, .. } => {
                p.set(Pkt::WD_FWD, false);
                let e = Queued { p, in_port, pg };
                let og = s.base + u32::from(out);
                if !xoff && self.links.ports[og as usize].qmask == 0 && self.may_send_now(og, queue) {
                    // Cut-through: the egress port is idle, nothing else is queued
                    // there and this queue is not paused, so queueing the packet
                    // and kicking the port would dequeue it again at once. Skip
                    // the ring (a cache miss each way); the dequeue work and the
                    // send are the same, in the same order.
                    let p = self.switch_dequeued(si, og, usize::from(out), usize::from(queue), e);
                    self.transmit(og, p);
                    return;
                }
                let ei = self.eqi(usize::from(queue), og);
                self.sw.eq[ei].push_back(e);
                self.links.ports[og as usize].qmask |= 1 << queue;
                let s = &mut self.sw.switches[si as usize];
                if xoff {
                    s.xoff.push((in_port, pg));
                    let bps = self.links.pc[gp as usize].bps;
                    if let Some(f) = self.links.pc[gp as usize].pausegen.xoff(self.now, pg, bps) {
                        self.send_pause(gp, f);
                    }
                }
                self.kick(og);
            }
        }
    }

    pub(super) fn switch_pick(&mut self, si: u32, gp: u32) -> Result<Pkt, Time> {
        let now = self.now;
        let port = self.links.ports[gp as usize].num as usize;
        let mask = self.links.ports[gp as usize].qmask;
        if mask == 0 {
            return Err(Time::NEVER);
        }
        // Nothing paused (the common case): the cold pause state is not read.
        let any_paused = self.links.ports[gp as usize].pause_max > now;
        let q = if mask.is_power_of_two() && !any_paused {
            // Fast path: one non-empty queue, nothing paused: no arbitration
            // (what `switch_arbitrate` would choose, without its set-up).
            mask.trailing_zeros() as usize
        } else {
            self.switch_arbitrate(si, gp, port, mask, any_paused)?
        };
        let ei = q * self.links.ports.len() + gp as usize;
        let eq = &mut self.sw.eq[ei];
        // Emptied, the queue's ring starts again at its first slot (`HeadRing`):
        // a queue that mostly holds a packet or two reuses the same line instead
        // of walking the whole capacity a past burst gave it.
        let p = eq.pop_front().expect("picked");
        if eq.is_empty() {
            self.links.ports[gp as usize].qmask &= !(1 << q);
        }
        Ok(self.switch_dequeued(si, gp, port, q, p))
    }

    /// The queue switch port `gp` (local `port`, non-empty queues `mask`) serves
    /// next: the only non-empty one, else the scheduler's choice, among the queues
    /// no pause holds back; `Err` with the time the first pause ends when all are.
    #[inline(never)]
    pub(super) fn switch_arbitrate(
        &mut self,
        si: u32,
        gp: u32,
        port: usize,
        mask: u8,
        any_paused: bool,
    ) -> Result<usize, Time> {
        let now = self.now;
        let forward = self.faults.wd_forward;
        let s = &mut self.sw.switches[si as usize];
        let paused = &self.links.pc[gp as usize].paused;
        let stormed = &s.wd_stormed;
        let nports = s.nports;
        // PFC priority p pauses queue p (SONiC MAP_PFC_PRIORITY_TO_QUEUE AZURE is identity).
        let blocked = |q: usize| any_paused && paused.until(q as u8) > now && !(forward && stormed[q * nports + port]);
        let chosen = if mask.is_power_of_two() {
            let q = mask.trailing_zeros() as usize;
            (!blocked(q)).then_some(q)
        } else {
            let (qs, n) = (&self.sw.eq, self.links.ports.len());
            s.sched[port].pick(|q| {
                let p = qs[q * n + gp as usize].front()?;
                if blocked(q) {
                    return None;
                }
                Some(u32::from(p.p.wire))
            })
        };
        chosen.ok_or_else(|| {
            let mut wait = Time::NEVER;
            for q in 0..NPRIO {
                let u = paused.until(q as u8);
                if mask & (1 << q) != 0 && u > now {
                    wait = wait.min(u);
                }
            }
            wait
        })
    }

    /// May switch egress port `gp` send a packet of queue `q` right now, with
    /// nothing else queued at it: exactly when [`Self::kick`] would call
    /// [`Self::try_tx`] and [`Self::switch_pick`] would pick queue `q`.
    #[inline(always)]
    pub(super) fn may_send_now(&self, gp: u32, q: u8) -> bool {
        let port = &self.links.ports[gp as usize];
        let now = self.now;
        if port.fate & Port::UNCABLED != 0 || port.busy_until > now || port.wake_at <= now || port.has_ctrl {
            return false;
        }
        if port.pause_max <= now || self.links.pc[gp as usize].paused.until(q) <= now {
            return true;
        }
        // Paused, unless a forwarding watchdog ignores pauses on this queue.
        let (_, si) = port.owner();
        let s = &self.sw.switches[si as usize];
        self.faults.wd_forward && s.wd_stormed[usize::from(q) * s.nports + usize::from(port.num)]
    }

    /// The dequeue-time work of switch `si` for packet `p` leaving egress queue
    /// (`port`, `q`) through `gp` now: watchdog mark, RED/ECN on the queue's
    /// bytes, MMU release, HPCC INT, XON re-check.
    #[inline(always)]
    pub(super) fn switch_dequeued(&mut self, si: u32, gp: u32, port: usize, q: usize, e: Queued) -> Pkt {
        let now = self.now;
        let forward = self.faults.wd_forward;
        let s = &mut self.sw.switches[si as usize];
        let qi = q * s.nports + port;
        let qlen = s.mmu.egress_at(port, q as u8);
        let mut p = e.p;
        p.set(Pkt::WD_FWD, forward && s.wd_stormed[qi]);
        s.q_tx[qi] += 1;
        let pk = p;
        // RED/ECN at dequeue on the egress queue's bytes (HPCC ns-3).
        if (pk.kind == Kind::Data || (pk.kind == Kind::TcpData && self.hosts.tcp.ect()))
            && let Some(red) = &s.red[port]
            && red.should_mark(qlen, &mut s.rng)
            && !p.has(Pkt::CE)
        {
            p.set(Pkt::CE, true);
            self.ecn_marks += 1;
        }
        s.mmu
            .release(usize::from(e.in_port), e.pg, port, q as u8, u32::from(pk.wire));
        if pk.int != 0 && pk.kind == Kind::Data {
            // HPCC INT at egress (data only: an ACK carries its data packet's
            // records back untouched) (ns-3 SwitchNode::SwitchNotifyDequeue): the
            // port's bytes sent with this packet, its queue (every class) after
            // the dequeue, now, the link rate.
            let qlen = (0..NPRIO as u8).map(|c| s.mmu.egress_at(port, c)).sum();
            let g = &self.links.ports[gp as usize];
            self.hosts.int.get_mut(pk.int).set(
                usize::from(pk.hops).saturating_sub(1),
                IntHop {
                    ts: now,
                    tx_bytes: g.tx_bytes + u64::from(pk.wire),
                    qlen,
                    rate_bps: self.links.pc[gp as usize].bps,
                },
            );
        }
        // TCP moving on its own class is no sign that the RDMA class is not deadlocked.
        self.obs.progress += u64::from(!pk.kind.is_tcp());
        if !s.xoff.is_empty() {
            self.resume_check(si);
        }
        p
    }

    /// XON every paused ingress PG of switch `si` that may resume now.
    pub(super) fn resume_check(&mut self, si: u32) {
        let s = &mut self.sw.switches[si as usize];
        if s.xoff.is_empty() {
            return;
        }
        let node = s.node;
        let mut i = 0;
        while i < self.sw.switches[si as usize].xoff.len() {
            let (port, pg) = self.sw.switches[si as usize].xoff[i];
            // `Mmu::release` may already have cleared the PG (its own in-port check).
            let m = &mut self.sw.switches[si as usize].mmu;
            if !m.pg_paused(usize::from(port), pg) || m.check_resume(usize::from(port), pg) {
                self.sw.switches[si as usize].xoff.swap_remove(i);
                let ig = self.links.port_base[node as usize] + u32::from(port);
                if let Some(f) = self.links.pc[ig as usize].pausegen.xon(pg) {
                    self.send_pause(ig, f);
                }
            } else {
                i += 1;
            }
        }
    }
}
