//! Faults and what watches for them: link failures and ECMP convergence, the
//! PFC watchdog, and the PFC deadlock search (a cycle of paused queues).

use super::*;

/// Faults and their watch: the PFC watchdog's period and action, link failures
/// scheduled, which periodic checks are armed, and the deadlock search's
/// suspect cycle and verdict.
#[derive(Clone)]
pub(super) struct Faults {
    /// The PFC watchdog's poll period (`Time::NEVER`: no watchdog).
    pub(super) wd_period: Time,
    /// The PFC watchdog's action is drop / forward (`cfg.watchdog`, read per hop).
    pub(super) wd_drop: bool,
    pub(super) wd_forward: bool,
    /// Link failures scheduled ([`RoceSim::fail_link_at`]).
    pub(super) link_events: u32,
    /// Bit 0: the watchdog poll is scheduled; bit 1: the deadlock check is.
    pub(super) timers_armed: u8,
    /// A candidate deadlock cycle seen at the last check, with the packets each
    /// of its queues had sent: `(egress port, priority, packets sent)`.
    pub(super) suspect: Option<Vec<(u32, u8, u64)>>,
    /// The deadlock found, once found: a later run reports it again.
    pub(super) deadlock: Option<PfcDeadlock>,
}

impl Faults {
    /// The watchdog as configured, nothing failed or suspected yet.
    pub(super) fn new(cfg: &RoceConfig) -> Faults {
        Faults {
            wd_period: cfg.switch.watchdog.map_or(Time::NEVER, |w| w.poll),
            wd_drop: cfg.switch.watchdog.is_some_and(|w| w.action == WdAction::Drop),
            wd_forward: cfg.switch.watchdog.is_some_and(|w| w.action == WdAction::Forward),
            link_events: 0,
            timers_armed: 0,
            suspect: None,
            deadlock: None,
        }
    }
}

impl RoceSim {
    /// The PFC watchdog's poll: every switch queue's watchdog sees its sample;
    /// the next poll is scheduled while anything is left to do.
    pub(super) fn on_wd_poll(&mut self) {
        self.watchdog_poll();
        if self.hosts.flows_left > 0 || self.live > 0 {
            self.push_ev(self.now + self.faults.wd_period, Ev::WdPoll);
        } else {
            self.faults.timers_armed &= !1;
        }
    }

    /// The periodic deadlock check; `Some` when it found one.
    pub(super) fn on_check(&mut self) -> Option<RoceStatus> {
        // A cycle of paused queues is a deadlock when nothing at all moved
        // for a whole period, or when the same cycle is found twice with
        // none of its queues having sent a packet in between (other
        // traffic may still flow around a partial deadlock).
        if self.live > 0 {
            let stalled = self.obs.progress == self.obs.last_progress;
            match self.find_cycle() {
                Some(c) => {
                    let key: Vec<(u32, u8, u64)> = c.iter().map(|&(g, q)| (g, q, self.queue_sent(g, q))).collect();
                    if stalled || self.faults.suspect.as_ref() == Some(&key) {
                        let d = self.describe_cycle(&c);
                        self.faults.deadlock = Some(d.clone());
                        return Some(RoceStatus::Deadlock(d));
                    }
                    self.faults.suspect = Some(key);
                }
                None => self.faults.suspect = None,
            }
        }
        self.obs.last_progress = self.obs.progress;
        if self.hosts.flows_left > 0 || self.live > 0 {
            self.push_ev(self.now + self.cfg.observe.deadlock_check, Ev::Check);
        } else {
            self.faults.timers_armed &= !2;
        }
        None
    }

    /// Link `link` fails: both its ports go down, ECMP starts converging (and,
    /// with local repair, the switches next to it route around it at once).
    pub(super) fn on_link_fail(&mut self, link: u32) {
        let l = &self.fabric.links[link as usize];
        for e in [l.a, l.b] {
            let g = self.links.port_base[e.node.idx()] + u32::from(e.port);
            self.links.ports[g as usize].fate |= Port::DOWN;
        }
        self.sw.ecmp.fail_link(LinkId(link), self.now.as_ps());
        self.sw.route_cache.fill(NO_ROUTE);
        if self.cfg.routing.local_repair {
            let mut v = EcmpTable::build(&self.fabric, 0);
            for (li, l) in self.fabric.links.iter().enumerate() {
                let g = self.links.port_base[l.a.node.idx()] + u32::from(l.a.port);
                if self.links.ports[g as usize].down() {
                    v.fail_link(LinkId(li as u32), self.now.as_ps());
                }
            }
            v.poll(&self.fabric, self.now.as_ps());
            self.sw.local_view = Some(v);
        }
        let t = Time::ps(self.sw.ecmp.next_deadline_ps());
        self.push_ev(t, Ev::Converge);
    }

    /// ECMP's convergence deadline: the routes change, the route cache empties.
    pub(super) fn on_converge(&mut self) {
        if self.sw.ecmp.poll(&self.fabric, self.now.as_ps()) {
            self.sw.local_view = None;
        }
        self.sw.route_cache.fill(NO_ROUTE);
    }

    /// Fail `link` at `at`: packets sent into it are lost; ECMP shrinks after the
    /// convergence delay.
    pub fn fail_link_at(&mut self, link: LinkId, at: Time) {
        self.faults.link_events += 1;
        self.push_ev(at, Ev::LinkFail { link: link.0 });
    }

    /// The deadlock found, if any.
    pub fn deadlock(&self) -> Option<&PfcDeadlock> {
        self.faults.deadlock.as_ref()
    }

    /// Schedule the watchdog poll and the deadlock check if they are not.
    pub(super) fn arm_periodic(&mut self) {
        if self.faults.wd_period != Time::NEVER && self.faults.timers_armed & 1 == 0 {
            self.faults.timers_armed |= 1;
            self.push_ev(self.now + self.faults.wd_period, Ev::WdPoll);
        }
        if self.cfg.observe.deadlock_check > Time::ZERO && self.faults.timers_armed & 2 == 0 {
            self.faults.timers_armed |= 2;
            self.push_ev(self.now + self.cfg.observe.deadlock_check, Ev::Check);
        }
    }

    pub(super) fn watchdog_poll(&mut self) {
        let Some(cfg) = self.cfg.switch.watchdog else { return };
        let now = self.now;
        for si in 0..self.sw.switches.len() {
            let node = self.sw.switches[si].node;
            let base = self.links.port_base[node as usize];
            let nports = self.sw.switches[si].nports;
            for port in 0..nports {
                let gp = base + port as u32;
                if self.links.peer[gp as usize] == NONE {
                    continue;
                }
                for q in 0..NPRIO {
                    if !self.links.maps.lossless(q as u8) {
                        continue;
                    }
                    // The watchdogs are port-major, the queues and flags queue-major.
                    let wi = port * NPRIO + q;
                    let qi = q * nports + port;
                    let pt = &self.links.pc[gp as usize];
                    let sample = QueueSample {
                        occupancy_bytes: self.sw.switches[si].mmu.egress_bytes(port, q as u8),
                        tx_pkts: self.sw.switches[si].q_tx[qi],
                        pfc_rx_frames: pt.paused.frames[q],
                        paused_ps: pt.paused.paused_total(now, q as u8),
                    };
                    let Some(ev) = self.sw.switches[si].wd[wi].poll(sample) else {
                        continue;
                    };
                    self.wd_log.push((
                        now,
                        self.fabric.nodes[node as usize].name.clone(),
                        port as u8,
                        q as u8,
                        ev,
                    ));
                    match ev {
                        WdEvent::Stormed => {
                            self.sw.switches[si].wd_stormed[qi] = true;
                            match cfg.action {
                                WdAction::Drop => {
                                    // Drain the queue: its packets are dropped and released.
                                    let ei = self.eqi(q, gp);
                                    while let Some(e) = self.sw.eq[ei].pop_front() {
                                        self.sw.switches[si].mmu.release(
                                            usize::from(e.in_port),
                                            e.pg,
                                            port,
                                            q as u8,
                                            u32::from(e.p.wire),
                                        );
                                        self.drop_pkt(e.p, RoceDrop::Watchdog);
                                    }
                                    self.links.ports[gp as usize].qmask &= !(1 << q);
                                    self.resume_check(si as u32);
                                }
                                WdAction::Forward => self.kick(gp),
                                WdAction::Alert => {}
                            }
                        }
                        WdEvent::Restored => {
                            self.sw.switches[si].wd_stormed[qi] = false;
                        }
                    }
                }
            }
        }
    }

    /// A cycle of switch egress ports, each holding lossless packets it may not
    /// send because the next switch paused it, where the next switch's paused
    /// ingress holds packets queued for the next port in the cycle.
    pub(super) fn find_cycle(&self) -> Option<Vec<(u32, u8)>> {
        self.find_cycle_with(|_| self)
    }

    /// [`Self::find_cycle`] reading each switch port's queues and pause state
    /// from the world `at(port)` (a split run's part that owns it); this
    /// world gives the topology.
    pub(super) fn find_cycle_with<'a>(&'a self, at: impl Fn(u32) -> &'a RoceSim) -> Option<Vec<(u32, u8)>> {
        let now = self.now;
        // blocked[gp] = egress port with a non-empty, paused lossless queue.
        let mut edges: Vec<(u32, u32, u8)> = Vec::new();
        for s in self.sw.switches.iter() {
            let base = self.links.port_base[s.node as usize];
            for port in 0..s.nports {
                let gp = base + port as u32;
                for q in 0..NPRIO {
                    if !self.links.maps.lossless(q as u8)
                        || at(gp).sw.eq[self.eqi(q, gp)].is_empty()
                        || !at(gp).links.pc[gp as usize].paused.is_paused(now, q as u8)
                    {
                        continue;
                    }
                    // The peer switch's ingress (peer port) is paused; which of its
                    // egress ports hold packets from that ingress?
                    let peer = self.links.peer[gp as usize];
                    let (is_sw, pi) = self.links.ports[peer as usize].owner();
                    if !is_sw {
                        continue;
                    }
                    let ps = &self.sw.switches[pi as usize];
                    let in_num = self.links.ports[peer as usize].num;
                    let pbase = self.links.port_base[ps.node as usize];
                    for (qq, pp) in (0..NPRIO).flat_map(|qq| (0..ps.nports).map(move |pp| (qq, pp))) {
                        let out = pbase + pp as u32;
                        if at(out).sw.eq[self.eqi(qq, out)].iter().any(|p| p.in_port == in_num) {
                            edges.push((gp, out, q as u8));
                        }
                    }
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        // Follow edges from each blocked port; a revisit closes a cycle.
        let blocked: std::collections::BTreeSet<u32> = edges.iter().map(|e| e.0).collect();
        for &start in &blocked {
            let mut path = vec![start];
            // prios[i]: the paused priority of path[i]'s queue on the edge taken from it.
            let mut prios: Vec<u8> = Vec::new();
            let mut cur = start;
            for _ in 0..=blocked.len() {
                let Some(&(_, nxt, q)) = edges.iter().find(|e| e.0 == cur && blocked.contains(&e.1)) else {
                    break;
                };
                prios.push(q);
                if let Some(pos) = path.iter().position(|&x| x == nxt) {
                    return Some(path[pos..].iter().copied().zip(prios[pos..].iter().copied()).collect());
                }
                path.push(nxt);
                cur = nxt;
            }
        }
        None
    }

    /// Name the queues of a cycle found by [`Self::find_cycle`].
    pub(super) fn describe_cycle(&self, c: &[(u32, u8)]) -> PfcDeadlock {
        let cycle = c
            .iter()
            .map(|&(g, q)| {
                let p = &self.links.ports[g as usize];
                (self.fabric.nodes[self.node_of(g) as usize].name.clone(), p.num, q)
            })
            .collect();
        PfcDeadlock { at: self.now, cycle }
    }

    /// Packets switch egress queue (`gp`, `q`) has sent.
    pub(super) fn queue_sent(&self, gp: u32, q: u8) -> u64 {
        let p = &self.links.ports[gp as usize];
        let si = p.owner().1;
        let s = &self.sw.switches[si as usize];
        s.q_tx[usize::from(q) * s.nports + usize::from(p.num)]
    }
}
