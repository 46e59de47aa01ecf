//! A run split over threads: the fabric's nodes cut into parts, one part per
//! thread, stepped together in windows no longer than the shortest cable
//! between two parts (conservative parallel discrete-event simulation with
//! barrier-synchronised lookahead windows, as in Nicol's YAWNS: nothing a part
//! does inside a window can reach another part before the window ends).
//!
//! ```text
//!   window [T, T + L):  part 0 ── events of its nodes ──┐   packets sent over a cut
//!                       part 1 ── events of its nodes ──┤   cable go to the far part's
//!                                                       │   inbox: they arrive at or
//!   barrier: inboxes swapped, deadlock check if due  ◄──┘   after T + L, next window
//! ```
//!
//! Each part is a whole [`RoceSim`] that only ever runs the events of its own
//! nodes. Because the RoCE model orders the events of one picosecond by the
//! events themselves (see the module's "Event order"), each part runs its
//! events in the order one thread would, and the run gives the same results
//! as [`RoceSim::run`]: same events, same trace, same records. At the end the
//! parts are folded back into one world, which a later `run` continues.
//!
//! Runs the split does not cover yet (background TCP, a PFC watchdog, a faulty
//! NIC, link failures, packet capture, QPs driven from outside) run on one
//! thread. HPCC's INT headers cross with their packets; each part hands out
//! handles of its own range, and a run that might have run out of handles on
//! one thread is redone on one. A part cannot know mid-window that the others
//! are done too, so once every flow left could finish within one window (it
//! has fewer bytes left to deliver than its receiver's link carries in one),
//! the parts are folded back and the rest of the run goes on one thread: it
//! stops at the exact event that finishes the last flow, as one thread does.
//!
//! One file because the split, the windowed run and the fold back are one protocol over
//! the same per-part inboxes; the code is about 780 lines, the rest its random
//! split-run tests.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::*;

/// How the coordinator starts the parts' threads on a window and learns they
/// are through: they spin between windows (a window is tens to hundreds of
/// microseconds of work; waking a sleeping thread would cost a good part of
/// that).
#[derive(Default)]
struct Gate {
    epoch: AtomicU64,
    bound_hi: AtomicU64,
    bound_lo: AtomicU64,
    done: AtomicUsize,
    stop: AtomicBool,
    panicked: AtomicBool,
}

impl Gate {
    /// Start a window ending before `bound`.
    fn open(&self, bound: u128) {
        self.bound_hi.store((bound >> 64) as u64, Ordering::Relaxed);
        self.bound_lo.store(bound as u64, Ordering::Relaxed);
        self.done.store(0, Ordering::Relaxed);
        self.epoch.fetch_add(1, Ordering::Release);
    }

    fn bound(&self) -> u128 {
        (u128::from(self.bound_hi.load(Ordering::Relaxed)) << 64) | u128::from(self.bound_lo.load(Ordering::Relaxed))
    }

    /// Wait for an epoch after `seen`; returns it.
    fn wait_epoch(&self, seen: u64) -> u64 {
        spin_until(|| {
            let e = self.epoch.load(Ordering::Acquire);
            (e != seen).then_some(e)
        })
    }

    /// Wait until `n` threads finished the window.
    fn wait_done(&self, n: usize) {
        spin_until(|| {
            assert!(!self.panicked.load(Ordering::Acquire), "a part's thread panicked");
            (self.done.load(Ordering::Acquire) == n).then_some(())
        });
    }
}

/// Spin on `f` until it gives a value, yielding the core now and then.
fn spin_until<T>(mut f: impl FnMut() -> Option<T>) -> T {
    let mut n = 0u32;
    loop {
        if let Some(v) = f() {
            return v;
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(4096) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Tells the coordinator when a part's thread dies (it would wait for ever).
struct PanicWatch<'a>(&'a Gate);

impl Drop for PanicWatch<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.panicked.store(true, Ordering::Release);
        }
    }
}

/// A packet sent over a cut cable: its arrival time, the transmitting port
/// (its link's FIFO), the packet.
pub(super) type Crossing = (Time, u32, Pkt);

/// What reaches a part over cut cables in one window: the packets, and the
/// INT headers of the HPCC packets among them, in order.
#[derive(Default)]
struct Inbox {
    pkts: Vec<Crossing>,
    ints: Vec<crate::roce::hpcc_cc::IntHeader>,
}

/// How a split run ended.
enum Outcome {
    /// With this status.
    Ended(RoceStatus),
    /// Close to every flow's end: the rest runs on one thread.
    Tail,
}

/// The parts of a split run and what the coordinator keeps between windows.
struct Split {
    /// Part of each node.
    owner: Vec<u8>,
    /// Shortest cable between two parts.
    lookahead: Time,
}

/// Counters every part keeps for itself; the whole run's are the base plus
/// each part's change.
#[derive(Clone)]
struct Counters {
    live: u64,
    events: u64,
    sent: u64,
    ecn_marks: u64,
    cnps_sent: u64,
    progress: u64,
    flows_left: usize,
    trace: u64,
    ledger: RoceLedger,
    fct: usize,
    pfc: usize,
    completions: usize,
}

impl Counters {
    fn of(s: &RoceSim) -> Counters {
        Counters {
            live: s.live,
            events: s.events,
            sent: s.obs.sent,
            ecn_marks: s.ecn_marks,
            cnps_sent: s.cnps_sent,
            progress: s.obs.progress,
            flows_left: s.hosts.flows_left,
            trace: s.trace.0,
            ledger: s.ledger.clone(),
            fct: s.fct.len(),
            pfc: s.pfc.len(),
            completions: s.completions.len(),
        }
    }
}

impl Counters {
    /// Packets in flight and flows left in the whole world.
    fn whole<'a>(&self, parts: impl Iterator<Item = &'a RoceSim> + Clone) -> (u64, usize) {
        let live = total(self.live, parts.clone().map(|p| p.live));
        let left = total(self.flows_left as u64, parts.map(|p| p.hosts.flows_left as u64));
        (live, left as usize)
    }
}

/// `base` plus the change of every part from it.
fn total(base: u64, parts: impl Iterator<Item = u64>) -> u64 {
    parts.fold(base, |acc, x| acc.wrapping_add(x.wrapping_sub(base)))
}

impl RoceSim {
    /// Why this world cannot be split over threads yet, if it cannot.
    fn split_blocker(&self) -> Option<&'static str> {
        if self.driven || self.hosts.flows.iter().any(|f| f.dynamic) || !self.hosts.delivered.is_empty() {
            Some("the split does not cover QPs driven from outside yet")
        } else if !self.hosts.tcp.is_empty() {
            Some("the split does not cover background TCP yet")
        } else if self.hosts.int.live() > 0 {
            Some("INT headers are in flight from an earlier run")
        } else if self.faults.wd_period != Time::NEVER {
            Some("the split does not cover a PFC watchdog yet")
        } else if self.hosts.nics.iter().any(|n| n.rx.faulty) {
            Some("the split does not cover a faulty NIC yet")
        } else if self.faults.link_events > 0 || self.sw.local_view.is_some() {
            Some("the split does not cover link failures yet")
        } else if self.obs.capture_gp != NONE {
            Some("the split does not cover packet capture yet")
        } else if self.faults.deadlock.is_some() {
            Some("the world is deadlocked")
        } else {
            None
        }
    }

    /// How to split this world over `threads` threads, or why not.
    fn split_plan(&self, threads: usize) -> Result<Split, &'static str> {
        if let Some(why) = self.split_blocker() {
            return Err(why);
        }
        let owner = self.cut(threads);
        match self.lookahead(&owner) {
            Time::ZERO => Err("a cable of zero length joins two parts"),
            Time::NEVER => Err("no cable joins two parts"),
            lookahead => Ok(Split { owner, lookahead }),
        }
    }

    /// Cut the nodes into `n` parts of about equal work. A node's work is
    /// estimated from the flows: each flow's bytes (up to 1 GiB) count at its
    /// two hosts and at every switch on its data path and its ACK path. CAs go
    /// in their order into `n` runs of equal work (generators number the hosts
    /// of a pod together); then each switch, nearest the CAs first and the
    /// heaviest of a ring first, into the part most of its already placed
    /// neighbours are in, unless that part would exceed its share of the
    /// work: then into the one with most neighbours among those that would
    /// not, or the lightest. (Queueing, which this cannot see, still leaves
    /// one part of the 320-host permutation with about 10% more events.)
    fn cut(&self, n: usize) -> Vec<u8> {
        const UNSET: u8 = u8::MAX;
        let nodes = self.fabric.nodes.len();
        let mut work = vec![1.0f64; nodes];
        for k in 0..self.hosts.flows.len() {
            let spec = &self.hosts.flows[k].spec;
            let w = spec
                .size
                .saturating_mul(u64::from(spec.messages.max(1)))
                .clamp(1, 1 << 30) as f64;
            work[spec.src.idx()] += w;
            work[spec.dst.idx()] += w;
            // Data one way, as many ACKs the other (one per packet by default).
            for back in [false, true] {
                for (node, _) in self.flow_hops(k, back) {
                    work[node as usize] += w;
                }
            }
        }
        let share = work.iter().sum::<f64>() / n as f64 * 1.02;
        let mut owner = vec![UNSET; nodes];
        let mut load = vec![0f64; n];
        let cas: Vec<usize> = (0..nodes).filter(|&i| !self.role[i].0).collect();
        let ca_work: f64 = cas.iter().map(|&i| work[i]).sum();
        let mut acc = 0.0;
        for &i in &cas {
            let p = ((acc / ca_work * n as f64) as usize).min(n - 1);
            acc += work[i];
            owner[i] = p as u8;
            load[p] += work[i];
        }
        let neighbours = |i: usize| {
            let base = self.links.port_base[i];
            let np = self.fabric.nodes[i].ports.len() as u32;
            (0..np).filter_map(move |k| {
                let peer = self.links.peer[(base + k) as usize];
                (peer != NONE).then(|| self.node_of(peer) as usize)
            })
        };
        loop {
            // One ring of switches out from the placed nodes at a time.
            let mut ring: Vec<usize> = (0..nodes)
                .filter(|&i| owner[i] == UNSET && neighbours(i).any(|j| owner[j] != UNSET))
                .collect();
            // The heaviest first: the light ones then even out the parts.
            ring.sort_by(|&a, &b| work[b].total_cmp(&work[a]).then(a.cmp(&b)));
            if ring.is_empty() {
                break;
            }
            for i in ring {
                let mut votes = vec![0usize; n];
                for j in neighbours(i) {
                    if owner[j] != UNSET {
                        votes[owner[j] as usize] += 1;
                    }
                }
                let fits = |p: usize| load[p] + work[i] <= share;
                let best = (0..n)
                    .filter(|&p| fits(p))
                    .max_by(|&a, &b| votes[a].cmp(&votes[b]).then(load[b].total_cmp(&load[a])))
                    .unwrap_or_else(|| (0..n).min_by(|&a, &b| load[a].total_cmp(&load[b])).unwrap_or(0));
                owner[i] = best as u8;
                load[best] += work[i];
            }
        }
        // Nodes cabled to nothing placed: part 0.
        for o in owner.iter_mut().filter(|o| **o == UNSET) {
            *o = 0;
        }
        owner
    }

    /// The shortest cable joining two parts ([`Time::NEVER`] if none does).
    fn lookahead(&self, owner: &[u8]) -> Time {
        (0..self.links.ports.len())
            .filter(|&g| self.links.peer[g] != NONE)
            .filter(|&g| owner[self.node_of(g as u32) as usize] != owner[self.node_of(self.links.peer[g]) as usize])
            .map(|g| self.links.ports[g].prop)
            .min()
            .unwrap_or(Time::NEVER)
    }

    /// The part that runs event `w`.
    fn part_of(&self, owner: &[u8], w: EvWord) -> Option<u8> {
        let node = match w.ev() {
            Ev::Arrive { dir } => self.node_of(self.links.peer[dir as usize]),
            Ev::TxWake { gp } | Ev::PauseTimer { gp } => self.node_of(gp),
            Ev::FlowStart { flow } => self.hosts.flows[flow as usize].spec.src.0,
            Ev::NicTimer { nic } => self.hosts.nics[nic as usize].node,
            Ev::WdPoll | Ev::Check | Ev::LinkFail { .. } | Ev::Converge => return None,
        };
        Some(owner[node as usize])
    }

    /// [`RoceSim::run`] with the fabric split over `threads` threads: the same
    /// results, events and trace. Falls back to one thread where the split
    /// does not apply (see the module docs) or cannot gain (a cable of zero
    /// length between parts); [`RoceSim::why_one_thread`] then says why.
    pub fn run_threads(&mut self, until: Time, threads: usize) -> RoceStatus {
        let threads = threads.min(64);
        if threads <= 1 {
            return self.run(until);
        }
        let split = match self.split_plan(threads) {
            Ok(split) => split,
            Err(why) => {
                let status = self.run(until);
                self.one_thread_why = Some(why);
                return status;
            }
        };
        // Kept in case every flow finished inside a window after all (the
        // windows stop short of that: see `run_split`), to run again on one
        // thread and stop at the exact event.
        let start = self.clone();
        match self.run_split(&split, threads, until) {
            Some(Outcome::Ended(status)) => {
                self.threads_used = threads;
                status
            }
            Some(Outcome::Tail) => {
                let status = self.run(until);
                self.threads_used = threads;
                status
            }
            None => {
                *self = start;
                let status = self.run(until);
                self.one_thread_why = Some("INT handles ran near their limit, so the run was redone on one thread");
                status
            }
        }
    }

    /// Why the last [`RoceSim::run_threads`] asked for more than one thread
    /// ran on one (`None` after a split run, or after [`RoceSim::run`]).
    pub fn why_one_thread(&self) -> Option<&'static str> {
        self.one_thread_why
    }

    /// Whether some flow surely cannot finish before `end` (so neither can
    /// the run in a window from `t0` to `end`): it starts at `end` or later,
    /// or more of its bytes are still to be delivered than its receiver's
    /// link carries by then. Tries `witness` (the flow that said so last)
    /// first, and keeps the one that says so in it.
    fn some_flow_far(
        &self,
        parts: &[impl std::ops::Deref<Target = RoceSim>],
        owner: &[u8],
        witness: &mut usize,
        t0: Time,
        end: Time,
    ) -> bool {
        let far = |k: usize| -> bool {
            let spec = &self.hosts.flows[k].spec;
            if parts[owner[spec.src.idx()] as usize].hosts.flows[k].done.is_some() {
                return false;
            }
            if spec.start >= end {
                return true;
            }
            let total = u128::from(spec.size) * u128::from(spec.messages.max(1));
            let delivered = u128::from(parts[owner[spec.dst.idx()] as usize].hosts.flows[k].delivered_bytes);
            let bps = u128::from(self.links.pc[(self.links.port_base[spec.dst.idx()] + 1) as usize].bps);
            // Bytes the receiver's link carries in the window, rounded up.
            let can = (bps * u128::from(end.0.saturating_sub(t0.0))).div_ceil(8_000_000_000_000);
            total.saturating_sub(delivered) > can
        };
        if *witness < self.hosts.flows.len() && far(*witness) {
            return true;
        }
        match (0..self.hosts.flows.len()).find(|&k| far(k)) {
            Some(k) => {
                *witness = k;
                true
            }
            None => false,
        }
    }

    /// The split run: `Ended` with the run's status, or `Tail` when the flows
    /// left are close enough to done that one window might finish them all
    /// (the parts are folded back; the caller runs the rest on one thread, so
    /// that the run stops at the exact event that finishes it). `None` if the
    /// run was found finished after a window (the caller redoes it on one thread).
    fn run_split(&mut self, split: &Split, threads: usize, until: Time) -> Option<Outcome> {
        let owner = &split.owner;
        // The deadlock check is the coordinator's: it reads every part.
        let mut events: Vec<(Time, EvWord)> = Vec::with_capacity(self.q.len());
        while let Some(e) = self.q.pop() {
            events.push(e);
        }
        let mut check_at = None;
        for &(t, w) in &events {
            if w.ev() == Ev::Check {
                check_at = Some(check_at.map_or(t, |c: Time| c.min(t)));
            }
        }
        // Ports on a cut cable send into the far part's inbox.
        for g in 0..self.links.ports.len() {
            let peer = self.links.peer[g];
            if peer != NONE && owner[self.node_of(g as u32) as usize] != owner[self.node_of(peer) as usize] {
                self.links.ports[g].fate |= Port::CUT;
            }
        }
        let base = Counters::of(self);
        self.faults.timers_armed |= 2;
        let mut parts: Vec<RoceSim> = (0..threads).map(|_| self.clone()).collect();
        // Each part hands out INT handles of its own range: packets carry them
        // into the merged world at the end.
        let range = u16::MAX / threads as u16;
        for (k, p) in parts.iter_mut().enumerate() {
            p.hosts.int = crate::roce::hpcc_cc::IntStore::with_range(k as u16 * range, range);
        }
        // The most INT headers between parts at once (in no part's store).
        let mut int_transit = 0usize;
        for &(t, w) in &events {
            if let Some(p) = self.part_of(owner, w) {
                parts[p as usize].q.push_seq(t, tie(t, w), w);
            }
        }
        let parts: Vec<Mutex<RoceSim>> = parts.into_iter().map(Mutex::new).collect();
        let inboxes: Vec<Mutex<Inbox>> = (0..threads).map(|_| Mutex::new(Inbox::default())).collect();
        let gate = Gate::default();
        let lock = |k: usize| parts[k].lock().expect("a part's thread panicked");
        let status = std::thread::scope(|s| {
            for k in 1..threads {
                let (gate, parts, inboxes) = (&gate, &parts, &inboxes);
                s.spawn(move || {
                    let _watch = PanicWatch(gate);
                    let mut seen = 0;
                    loop {
                        seen = gate.wait_epoch(seen);
                        if gate.stop.load(Ordering::Acquire) {
                            break;
                        }
                        let bound = gate.bound();
                        let mut p = parts[k].lock().expect("part");
                        p.run_window(&mut inboxes[k].lock().expect("inbox"), bound);
                        drop(p);
                        gate.done.fetch_add(1, Ordering::AcqRel);
                    }
                });
            }
            let mut witness = 0;
            // The earliest arrival among the packets in the inboxes.
            let mut arriving: Option<Time> = None;
            let status = loop {
                let mut all: Vec<_> = (0..threads).map(lock).collect();
                // What the whole world would see before its next event.
                let (live, left) = base.whole(all.iter().map(|p| &**p));
                if left == 0 && live == 0 {
                    let events = total(base.events, all.iter().map(|p| p.events));
                    if events == base.events {
                        // Done before anything ran: nothing to redo.
                        break Some(Outcome::Ended(RoceStatus::Done));
                    }
                    break None;
                }
                // The next event anywhere: in a part's queue, or a packet in an
                // inbox, which its part queues at the start of the next window.
                let next = all
                    .iter_mut()
                    .filter_map(|p| p.q.first().map(|(t, _)| t))
                    .chain(arriving)
                    .min();
                let Some(t0) = [next, check_at].into_iter().flatten().min() else {
                    break Some(Outcome::Ended(if left == 0 {
                        RoceStatus::Done
                    } else {
                        RoceStatus::Stuck
                    }));
                };
                if t0 > until {
                    break Some(Outcome::Ended(RoceStatus::TimeLimit));
                }
                // The window: events before T + L, and not past the check or `until`.
                let check_key = check_at.map(|c| key(c, Ev::Check.pack().0));
                let bound = [
                    Some(time_key(t0 + split.lookahead)),
                    check_key,
                    Some(time_key(Time(until.0.saturating_add(1)))),
                ]
                .into_iter()
                .flatten()
                .min()
                .expect("bounds");
                if left == 0 || !self.some_flow_far(&all, owner, &mut witness, t0, Time((bound >> 64) as u64)) {
                    break Some(Outcome::Tail);
                }
                drop(all);
                gate.open(bound);
                {
                    let mut p = lock(0);
                    p.run_window(&mut inboxes[0].lock().expect("inbox"), bound);
                }
                gate.wait_done(threads - 1);
                let mut all: Vec<_> = (0..threads).map(lock).collect();
                // Hand each part the packets sent to it over cut cables.
                arriving = None;
                for p in all.iter_mut() {
                    let p = &mut **p;
                    let mut ints = p.outbox_int.drain(..);
                    for c in p.outbox.drain(..) {
                        let to = owner[self.node_of(self.links.peer[c.1 as usize]) as usize];
                        let mut inbox = inboxes[to as usize].lock().expect("inbox");
                        if c.2.int != 0 {
                            inbox.ints.push(ints.next().expect("an INT header per HPCC packet"));
                        }
                        arriving = Some(arriving.map_or(c.0, |a: Time| a.min(c.0)));
                        inbox.pkts.push(c);
                    }
                }
                int_transit = int_transit.max(inboxes.iter().map(|i| i.lock().expect("inbox").ints.len()).sum());
                if check_key == Some(bound) {
                    let tc = check_at.expect("at the check");
                    let mut views: Vec<&mut RoceSim> = all.iter_mut().map(|g| &mut **g).collect();
                    if let Some(d) = self.split_check(&mut views, &base, owner, tc) {
                        // The check that found it is not armed again, nor disarmed.
                        check_at = None;
                        break Some(Outcome::Ended(RoceStatus::Deadlock(d)));
                    }
                    let (live, left) = base.whole(all.iter().map(|p| &**p));
                    check_at = (left > 0 || live > 0).then(|| tc + self.cfg.observe.deadlock_check);
                }
            };
            gate.stop.store(true, Ordering::Release);
            gate.open(0);
            status
        });
        let status = status?;
        let parts: Vec<RoceSim> = parts.into_iter().map(|m| m.into_inner().expect("part")).collect();
        let inboxes: Vec<Inbox> = inboxes.into_iter().map(|m| m.into_inner().expect("inbox")).collect();
        // One thread would have run out of INT handles where a part did, or
        // may have where all parts' peaks and the headers between them reach
        // the 65,535 of one store: then the run is redone on one thread.
        let peaks: usize = parts.iter().map(|p| p.hosts.int.peak()).sum();
        if parts.iter().any(|p| p.hosts.int.overflow > 0) || peaks + int_transit >= usize::from(u16::MAX) {
            return None;
        }
        let ended = match &status {
            Outcome::Ended(s) => Some(s),
            Outcome::Tail => None,
        };
        self.fold_parts(parts, inboxes, &base, owner, check_at, until, ended);
        Some(status)
    }

    /// Queue the packets that reached this part over cut cables on their
    /// links, each HPCC packet's INT header under a handle of this part's.
    fn take_in(&mut self, inbox: &mut Inbox) {
        let mut ints = inbox.ints.drain(..);
        for (t, gp, mut p) in inbox.pkts.drain(..) {
            if p.int != 0 {
                let h = ints.next().expect("an INT header per HPCC packet");
                p.int = self.hosts.int.alloc();
                if p.int != 0 {
                    *self.hosts.int.get_mut(p.int) = h;
                }
            }
            let g = gp as usize;
            if self.links.link_fifo[g].push(&mut self.links.link_wide[g], t, p) {
                self.push_ev(t, Ev::Arrive { dir: gp });
            }
        }
    }

    /// Run this part's events before `bound` (a queue key), after queueing the
    /// packets that reached it over cut cables.
    fn run_window(&mut self, inbox: &mut Inbox, bound: u128) {
        self.take_in(inbox);
        let status = self.event_loop(Time::NEVER, bound, true);
        debug_assert!(status.is_none(), "a part's window ended with {status:?}");
    }

    /// The deadlock check at `tc` over every part's switches (the `Check`
    /// event of [`RoceSim::dispatch`], reading each port from its part).
    fn split_check(
        &mut self,
        parts: &mut [&mut RoceSim],
        base: &Counters,
        owner: &[u8],
        tc: Time,
    ) -> Option<PfcDeadlock> {
        for p in parts.iter_mut() {
            p.now = tc;
        }
        // The check is an event of the run: counted in part 0.
        parts[0].events += 1;
        parts[0].trace.add(tc.0, Ev::Check.pack().trace_word());
        let live = total(base.live, parts.iter().map(|p| p.live));
        let progress = total(base.progress, parts.iter().map(|p| p.obs.progress));
        let at = |g: u32| &*parts[owner[self.node_of(g) as usize] as usize];
        if live > 0 {
            let stalled = progress == self.obs.last_progress;
            match parts[0].find_cycle_with(at) {
                Some(c) => {
                    let key: Vec<(u32, u8, u64)> = c.iter().map(|&(g, q)| (g, q, at(g).queue_sent(g, q))).collect();
                    if stalled || self.faults.suspect.as_ref() == Some(&key) {
                        let mut d = parts[0].describe_cycle(&c);
                        d.at = tc;
                        self.faults.deadlock = Some(d.clone());
                        return Some(d);
                    }
                    self.faults.suspect = Some(key);
                }
                None => self.faults.suspect = None,
            }
        }
        self.obs.last_progress = progress;
        None
    }

    /// Fold the parts back into this world: each node's state from its part,
    /// counters summed, records in order, events not run queued again.
    #[expect(
        clippy::too_many_arguments,
        reason = "the split run's whole state at the fold; a struct would only bundle one call's locals"
    )]
    fn fold_parts(
        &mut self,
        mut parts: Vec<RoceSim>,
        inboxes: Vec<Inbox>,
        base: &Counters,
        owner: &[u8],
        check_at: Option<Time>,
        until: Time,
        status: Option<&RoceStatus>,
    ) {
        let part_of_node = |n: u32| owner[n as usize] as usize;
        for (k, mut inbox) in inboxes.into_iter().enumerate() {
            parts[k].take_in(&mut inbox);
        }
        let overflow = self.hosts.int.overflow;
        self.hosts.int =
            crate::roce::hpcc_cc::IntStore::merged(&parts.iter().map(|p| &p.hosts.int).collect::<Vec<_>>());
        self.hosts.int.overflow = overflow;
        let nports = self.links.ports.len();
        for g in 0..nports {
            let k = part_of_node(self.node_of(g as u32));
            let p = &parts[k];
            self.links.ports[g] = p.links.ports[g].clone();
            self.links.ports[g].fate &= !Port::CUT;
            self.links.pc[g] = p.links.pc[g].clone();
            for q in 0..NPRIO {
                let i = q * nports + g;
                self.sw.eq[i] = p.sw.eq[i].clone();
            }
            // A link's packets sit with the part that receives them.
            let peer = self.links.peer[g];
            if peer != NONE {
                let r = &parts[part_of_node(self.node_of(peer))];
                self.links.link_fifo[g] = r.links.link_fifo[g].clone();
                self.links.link_wide[g] = r.links.link_wide[g].clone();
            }
        }
        let nsw = self.sw.switches.len();
        for si in 0..nsw {
            let p = &parts[part_of_node(self.sw.switches[si].node)];
            self.sw.switches[si] = p.sw.switches[si].clone();
            for (f, _) in self.hosts.flows.iter().enumerate() {
                for dir in 0..2 {
                    let i = (f * 2 + dir) * nsw + si;
                    self.sw.route_cache[i] = p.sw.route_cache[i];
                }
            }
        }
        for ni in 0..self.hosts.nics.len() {
            let p = &parts[part_of_node(self.hosts.nics[ni].node)];
            self.hosts.nics[ni] = p.hosts.nics[ni].clone();
        }
        for fi in 0..self.hosts.flows.len() {
            let s = &parts[part_of_node(self.hosts.flows[fi].spec.src.0)].hosts.flows[fi];
            let d = &parts[part_of_node(self.hosts.flows[fi].spec.dst.0)].hosts.flows[fi];
            let f = &mut self.hosts.flows[fi];
            f.req = s.req.clone();
            f.rp = s.rp.clone();
            f.dctcp = s.dctcp.clone();
            f.hpcc = s.hpcc.clone();
            f.next_ok = s.next_ok;
            f.started = s.started;
            f.done = s.done;
            f.resp = d.resp.clone();
            f.np = d.np;
            f.delivered_bytes = d.delivered_bytes;
            f.rx_tags = d.rx_tags.clone();
        }
        (self.live, self.hosts.flows_left) = base.whole(parts.iter());
        self.events = total(base.events, parts.iter().map(|p| p.events));
        self.obs.sent = total(base.sent, parts.iter().map(|p| p.obs.sent));
        self.ecn_marks = total(base.ecn_marks, parts.iter().map(|p| p.ecn_marks));
        self.cnps_sent = total(base.cnps_sent, parts.iter().map(|p| p.cnps_sent));
        self.obs.progress = total(base.progress, parts.iter().map(|p| p.obs.progress));
        self.trace.0 = total(base.trace, parts.iter().map(|p| p.trace.0));
        let l = &mut self.ledger;
        l.created = total(base.ledger.created, parts.iter().map(|p| p.ledger.created));
        l.delivered = total(base.ledger.delivered, parts.iter().map(|p| p.ledger.delivered));
        for r in 0..l.dropped.len() {
            l.dropped[r] = total(base.ledger.dropped[r], parts.iter().map(|p| p.ledger.dropped[r]));
            l.dropped_lossless[r] = total(
                base.ledger.dropped_lossless[r],
                parts.iter().map(|p| p.ledger.dropped_lossless[r]),
            );
        }
        let mut fct: Vec<FctRecord> = Vec::new();
        let mut pfc: Vec<PfcRecord> = Vec::new();
        let mut completions: Vec<(u32, Completion)> = Vec::new();
        for p in &parts {
            fct.extend_from_slice(&p.fct[base.fct..]);
            pfc.extend_from_slice(&p.pfc[base.pfc..]);
            completions.extend_from_slice(&p.completions[base.completions..]);
        }
        self.fct.truncate(base.fct);
        self.fct.extend(fct);
        self.pfc.truncate(base.pfc);
        self.pfc.extend(pfc);
        self.completions.truncate(base.completions);
        self.completions.extend(completions);
        self.sort_records(base.fct, base.pfc, base.completions);
        // Events not run go back into the one queue (emptied at the start).
        for p in &mut parts {
            while let Some((t, w)) = p.q.pop() {
                self.q.push_seq(t, tie(t, w), w);
            }
        }
        match check_at {
            Some(t) => self.q.push_seq(t, tie(t, Ev::Check.pack()), Ev::Check.pack()),
            None if !matches!(status, Some(RoceStatus::Deadlock(_))) => self.faults.timers_armed &= !2,
            None => {}
        }
        self.now = match status {
            Some(RoceStatus::TimeLimit) => until.max(parts.iter().map(|p| p.now).max().unwrap_or(self.now)),
            Some(RoceStatus::Deadlock(d)) => d.at,
            _ => parts.iter().map(|p| p.now).max().unwrap_or(self.now),
        };
    }
}

/// The queue key of event `w` at `t` (see [`tie`]).
#[inline(always)]
pub(super) fn key(t: Time, w: u32) -> u128 {
    (u128::from(t.0) << 64) | (u128::from(tie(t, EvWord(w))) << EV_BITS) | u128::from(w)
}

/// The smallest queue key at `t`: before every event of that picosecond.
fn time_key(t: Time) -> u128 {
    u128::from(t.0) << 64
}

impl RoceSim {
    /// Panics, naming `what` and the first difference, unless `b` is the same
    /// world as `self`: everything a run reports (trace, counters, ledger,
    /// records, every flow's state) and the state a later run starts from
    /// (events queued, packets in flight, the queues' and pauses' summary).
    /// For tests of a split run (here and in the `ns3` crate); costs a walk of
    /// every flow and a state dump.
    #[cfg(any(test, feature = "testutil"))]
    pub fn assert_same_run(&self, b: &RoceSim, what: &str) {
        let a = self;
        assert_eq!(a.trace_hash(), b.trace_hash(), "{what}: trace");
        assert_eq!(
            (a.events, a.hops(), a.now()),
            (b.events, b.hops(), b.now()),
            "{what}: events, hops, now"
        );
        assert_eq!(
            (a.live, a.hosts.flows_left),
            (b.live, b.hosts.flows_left),
            "{what}: in flight, flows left"
        );
        assert_eq!(a.ledger, b.ledger, "{what}: ledger");
        assert_eq!(
            (a.ecn_marks, a.cnps_sent, a.obs.progress),
            (b.ecn_marks, b.cnps_sent, b.obs.progress),
            "{what}: marks"
        );
        assert_eq!(a.fct, b.fct, "{what}: fct records");
        assert_eq!(a.pfc, b.pfc, "{what}: pfc records");
        assert_eq!(a.completions, b.completions, "{what}: completions");
        for k in 0..a.hosts.flows.len() {
            assert_eq!(a.flow_delivered(k), b.flow_delivered(k), "{what}: flow {k} delivered");
            assert_eq!(a.flow_done(k), b.flow_done(k), "{what}: flow {k} done");
            assert_eq!(a.flow_counters(k), b.flow_counters(k), "{what}: flow {k} counters");
            assert_eq!(a.flow_rate(k), b.flow_rate(k), "{what}: flow {k} rate");
        }
        assert_eq!(a.q.len(), b.q.len(), "{what}: events queued");
        assert_eq!(a.state_summary(), b.state_summary(), "{what}: state");
        assert!(b.ledger_balances(), "{what}: ledger balances");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roce::fixtures::{flow, incast_flows, leaf_spine_2x2, ring4_bounce, star};
    use crate::roce::transport::Recovery;
    use fabric::NodeId;

    /// The default: DCQCN (hpcc-ns3 profile), PFC and ECN.
    fn dcqcn() -> RoceConfig {
        RoceConfig::default()
    }

    /// PFC pauses that cross the cut (a 2:1 incast across two leaves, PFC on,
    /// no congestion control), stopped before it is done.
    #[test]
    fn split_pfc_incast_across_leaves_is_the_same_run() {
        let (f, _, _, hosts) = leaf_spine_2x2(4);
        let flows: Vec<FlowSpec> = (0..4)
            .map(|i| flow(hosts[0][i], hosts[1][0], 4 << 20, 1, Time::ZERO, 10000 + i as u16))
            .chain((1..4).map(|i| flow(hosts[1][i], hosts[1][0], 4 << 20, 1, Time::ZERO, 11000 + i as u16)))
            .collect();
        let cfg = RoceConfig {
            nic: crate::roce::net::NicConfig {
                cc: CongestionControl::None,
                ..Default::default()
            },
            switch: crate::roce::net::SwitchConfig {
                ecn: false,
                buffer_bytes: 1 << 20,
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        let mut one = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
        assert_eq!(one.run(Time::us(300)), RoceStatus::TimeLimit);
        assert!(one.pfc.iter().any(|r| r.pause), "pauses: {:?}", one.pfc.len());
        let mut split = RoceSim::new(&f, cfg, &flows).unwrap();
        assert_eq!(split.run_threads(Time::us(300), 2), RoceStatus::TimeLimit);
        assert_eq!(split.last_threads(), 2);
        one.assert_same_run(&split, "incast across leaves");
    }

    /// A run that ends with every flow done (a 16:1 incast with DCQCN) stops
    /// at the same event: split until the flows are near their end, then on
    /// one thread (not redone from the start).
    #[test]
    fn split_run_that_finishes_stops_at_the_same_event() {
        let (f, _, h) = star(17);
        let flows = incast_flows(&h[..16], h[16], 256 << 10);
        let cfg = RoceConfig {
            nic: crate::roce::net::NicConfig {
                recovery: Recovery::GoBackN,
                ..dcqcn().nic
            },
            ..dcqcn()
        };
        let mut one = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
        assert_eq!(one.run(Time::ms(50)), RoceStatus::Done);
        let mut split = RoceSim::new(&f, cfg, &flows).unwrap();
        assert_eq!(split.run_threads(Time::ms(50), 2), RoceStatus::Done);
        assert_eq!(split.last_threads(), 2, "split, not redone on one thread");
        one.assert_same_run(&split, "incast to the end");
    }

    /// A PFC deadlock (Hu et al.'s bounce routes on a ring of four switches)
    /// is found by the split run's check, at the same check, with the same cycle.
    #[test]
    fn split_run_finds_the_same_deadlock() {
        let (f, cfg, flows) = ring4_bounce(4);
        let mut one = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
        let st = one.run(Time::ms(20));
        assert!(matches!(st, RoceStatus::Deadlock(_)), "{st:?}");
        let mut split = RoceSim::new(&f, cfg, &flows).unwrap();
        assert_eq!(split.run_threads(Time::ms(20), 2), st);
        assert_eq!(split.last_threads(), 2);
        one.assert_same_run(&split, "deadlock");
    }

    /// Found by the random runs below: at the end of a run the only packets
    /// left crossed the cut, nothing else was queued anywhere, and the window
    /// that would have taken them in never came (the next event was looked
    /// for in the parts' queues only). Two flows from one host, loss on one
    /// receiver's link, go-back-N: the same end at the same event.
    #[test]
    fn split_run_takes_in_packets_when_nothing_else_is_queued() {
        let (f, _, _, hosts) = leaf_spine_2x2(4);
        let all: Vec<NodeId> = hosts.concat();
        let flows = vec![
            flow(all[2], all[6], 690 << 10, 1, Time::us(13), 10001),
            flow(all[2], all[0], 848 << 10, 1, Time::us(6), 10003),
        ];
        let cfg = RoceConfig {
            nic: crate::roce::net::NicConfig {
                cc: CongestionControl::None,
                rto: Time::us(100),
                ..dcqcn().nic
            },
            switch: crate::roce::net::SwitchConfig {
                ecn: false,
                ..dcqcn().switch
            },
            pfc: crate::roce::net::PfcConfig {
                enabled: false,
                ..dcqcn().pfc
            },
            faults: crate::roce::net::FaultConfig {
                loss_every: vec![(f.peer(all[6], 1).unwrap().1, 97)],
                ..dcqcn().faults
            },
            ..dcqcn()
        };
        let mut one = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
        assert_eq!(one.run(Time::ms(20)), RoceStatus::Done);
        let mut split = RoceSim::new(&f, cfg, &flows).unwrap();
        assert_eq!(split.run_threads(Time::ms(20), 2), RoceStatus::Done);
        assert_eq!(split.last_threads(), 2);
        one.assert_same_run(&split, "last packets across the cut");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 12, ..Default::default() })]

        /// Random traffic on a 2 × 2 leaf-spine (PFC or not, ECN or not,
        /// DCQCN, HPCC or line rate, go-back-N or go-back-0, loss injected on one
        /// host link or not, deep or shallow buffers), split over 2 or 3
        /// threads and stopped at a random time or run to its end: the same
        /// world as one thread.
        #[test]
        fn split_random_runs_are_the_same_run(
            per_leaf in 2usize..=4,
            pairs in proptest::collection::vec((0usize..8, 0usize..8, 16u64..2048, 0u64..40), 1..10),
            pfc in proptest::bool::ANY,
            ecn in proptest::bool::ANY,
            cc in 0u8..3,
            go_back_0 in proptest::bool::ANY,
            loss in proptest::option::of(0usize..8),
            shallow in proptest::bool::ANY,
            threads in 2usize..=3,
            until_us in proptest::option::of(20u64..400),
        ) {
            let (f, _, _, hosts) = leaf_spine_2x2(per_leaf);
            let all: Vec<NodeId> = hosts.concat();
            let n = all.len();
            let flows: Vec<FlowSpec> = pairs
                .iter()
                .enumerate()
                .filter(|(_, (a, b, _, _))| a % n != b % n)
                .map(|(i, &(a, b, kib, start))| flow(all[a % n], all[b % n], kib << 10, 1, Time::us(start), 10000 + i as u16))
                .collect();
            proptest::prop_assume!(!flows.is_empty());
            let mut cfg = RoceConfig {
                nic: crate::roce::net::NicConfig {
                    recovery: if go_back_0 { Recovery::GoBack0 } else { Recovery::GoBackN },
                    rto: Time::us(100),
                    ..dcqcn().nic
                },
                switch: crate::roce::net::SwitchConfig {
                    ecn,
                    buffer_bytes: if shallow { 1 << 20 } else { 32 << 20 },
                    ..dcqcn().switch
                },
                pfc: crate::roce::net::PfcConfig {
                    enabled: pfc,
                    ..dcqcn().pfc
                },
                ..dcqcn()
            };
            match cc {
                0 => cfg.nic.cc = CongestionControl::None,
                1 => {}
                _ => {
                    // HPCC as third.cc sets it for 100G and a 4-hop base RTT.
                    cfg.nic.cc = CongestionControl::Hpcc(crate::roce::hpcc_cc::HpccParams {
                        base_rtt: Time::us(9),
                        window_bytes: 112_500,
                        ..crate::roce::hpcc_cc::test_params()
                    });
                }
            }
            if let Some(h) = loss {
                let host = all[h % n];
                cfg.faults.loss_every = vec![(f.peer(host, 1).unwrap().1, 97)];
            }
            let until = until_us.map_or(Time::ms(20), Time::us);
            let mut one = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
            let st = one.run(until);
            let mut split = RoceSim::new(&f, cfg.clone(), &flows).unwrap();
            proptest::prop_assert_eq!(split.run_threads(until, threads), st.clone());
            one.assert_same_run(&split, "random run");
            // Split twice, the second run going on from the first's world.
            let mut twice = RoceSim::new(&f, cfg, &flows).unwrap();
            twice.run_threads(Time(until.0 / 3), threads);
            proptest::prop_assert_eq!(twice.run_threads(until, threads), st);
            one.assert_same_run(&twice, "random run, split twice");
        }
    }

    /// What the split does not cover runs on one thread, and says so.
    #[test]
    fn split_falls_back_to_one_thread_where_it_does_not_apply() {
        let (f, _, h) = star(3);
        let flows = [flow(h[0], h[2], 1 << 20, 1, Time::ZERO, 10000)];
        let cfg = RoceConfig {
            switch: crate::roce::net::SwitchConfig {
                watchdog: Some(crate::roce::pfc::WdConfig::default()),
                ..dcqcn().switch
            },
            ..dcqcn()
        };
        let mut sim = RoceSim::new(&f, cfg, &flows).unwrap();
        assert_eq!(sim.run_threads(Time::ms(5), 2), RoceStatus::Done);
        assert_eq!(sim.last_threads(), 1);
        assert_eq!(
            sim.why_one_thread(),
            Some("the split does not cover a PFC watchdog yet")
        );
    }

    /// The cut keeps each host with its switch and the parts' ports within 10%,
    /// on ns-3 HPCC's 320-host fat tree (its topology file, kept with the `ns3`
    /// crate's copies of the simulator's files) with a permutation.
    #[test]
    fn cut_balances_a_fat_tree() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../ns3/testdata/hpcc/fat.txt");
        let text = std::fs::read_to_string(path).unwrap();
        let fabric = fabric::format::read_hpcc("fat.txt", &text).unwrap();
        let hosts: Vec<NodeId> = (0..fabric.nodes.len() as u32)
            .map(NodeId)
            .filter(|&n| fabric.node(n).kind == fabric::NodeKind::Ca)
            .collect();
        let flows: Vec<FlowSpec> = (0..hosts.len())
            .map(|i| {
                flow(
                    hosts[i],
                    hosts[(i + hosts.len() / 2) % hosts.len()],
                    1 << 20,
                    1,
                    Time::ZERO,
                    10000 + i as u16,
                )
            })
            .collect();
        let sim = RoceSim::new(&fabric, RoceConfig::default(), &flows).unwrap();
        let owner = sim.cut(2);
        let ports = |k: u8| -> usize {
            (0..owner.len())
                .filter(|&i| owner[i] == k)
                .map(|i| fabric.nodes[i].ports.len())
                .sum()
        };
        let (a, b) = (ports(0), ports(1));
        assert!(a.abs_diff(b) * 10 <= a + b, "ports {a} vs {b}");
        // Every host with its top-of-rack switch.
        for (i, n) in fabric.nodes.iter().enumerate() {
            if n.kind == fabric::NodeKind::Ca {
                let tor = sim.node_of(sim.links.peer[(sim.links.port_base[i] + 1) as usize]);
                assert_eq!(owner[i], owner[tor as usize], "host {} and its switch", n.name);
            }
        }
        assert_eq!(sim.lookahead(&owner), Time::us(1));
    }
}
