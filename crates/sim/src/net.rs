//! Ports and links, shared by every node model: serialization at the data rate,
//! propagation over the cable, link-level credits per VL (64-byte blocks, returned
//! over the link delay), VL arbitration, and the transmitter wake-up logic.
//!
//! A transmitter is woken (a [`Event::TxWake`]) only when it has work it could not
//! do at once: its line is busy, or its head packet waits for credits or for its
//! tail to arrive (cut-through). Credit returns are not events: they sit in a
//! per-port FIFO with their arrival times and are absorbed whenever the port next
//! looks at its credits; a port starved of credits is woken when the first return
//! lands. This keeps the event count near one per packet-link hop.

use crate::engine::prefetch;
use crate::engine::{PacketId, Time};
use crate::packet::{NO_ROUTE, flag};
use crate::sim::{Event, Mode, NONE, NodeModel, Sim};

/// What a model's picker decided for a free transmitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Send this packet now.
    Send(PacketId),
    /// Nothing can go now; look again at this time (or when credits return, if `NEVER`).
    Wait(Time),
}

/// The state of one VL's head packet at a switch output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    Empty,
    NoCredit,
    NotBefore(Time),
    Ready,
}

/// Per-port VL arbitration state (IBA vol. 1 §7.6.9): the current entry of each
/// table, the weight it has left in bytes, and the bytes sent from the high table
/// since the last low-priority packet.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ArbState {
    idx: [u16; 2],
    left: [i32; 2],
    hi_bytes: u32,
    last_table: u8,
}

/// Returns kept inline in a port record.
const RING: usize = 4;

/// Credit returns on their way back to one transmitter, sorted by landing time:
/// the earliest four inline (in the second cache line of the port's record, so a
/// look at the port brings them along), any more in a per-port spill deque. At
/// most a handful are on their way at once unless the port sits idle.
///
/// The inline returns sit in `t[..len]`, earliest first, and the unused slots
/// hold [`Time::NEVER`], so "has the earliest landed?" is one compare with no
/// length check, and taking it is a shift of four words.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct CreditRing {
    t: [u64; RING],
    /// `vl << 12 | blocks` (a packet is at most 1,024 blocks, a VL at most 14).
    vb: [u16; RING],
    len: u8,
    /// Credits (64-byte blocks) the transmitter holds on VL 0, the one data VL
    /// most fabrics run: kept here, on the line its returns land on, and not in
    /// [`Sim::credits`] (which holds VLs 1 and up). Read through [`Sim::held`].
    /// Cachegrind: 6% fewer L1 misses on the ft432 run.
    pub(crate) vl0: i32,
}

impl Default for CreditRing {
    fn default() -> Self {
        CreditRing {
            t: [Time::NEVER.0; RING],
            vb: [0; RING],
            len: 0,
            vl0: 0,
        }
    }
}

impl CreditRing {
    #[inline(always)]
    fn at(&self, k: usize) -> (Time, u8, u32) {
        (Time(self.t[k]), (self.vb[k] >> 12) as u8, u32::from(self.vb[k] & 0xfff))
    }

    /// When the earliest return lands (`NEVER` if none is on its way).
    #[inline(always)]
    fn first_time(&self) -> Time {
        Time(self.t[0])
    }

    /// Insert in time order (after equal times); the ring must have room.
    #[inline(always)]
    fn insert(&mut self, e: (Time, u8, u32)) {
        let mut k = self.len as usize;
        debug_assert!(k < RING);
        while k > 0 && self.t[k - 1] > e.0.0 {
            self.t[k] = self.t[k - 1];
            self.vb[k] = self.vb[k - 1];
            k -= 1;
        }
        self.t[k] = e.0.0;
        self.vb[k] = (u16::from(e.1) << 12) | e.2 as u16;
        self.len += 1;
    }

    /// Remove the latest return (the ring must not be empty).
    #[inline]
    fn pop_back(&mut self) -> (Time, u8, u32) {
        self.len -= 1;
        let k = self.len as usize;
        let e = self.at(k);
        self.t[k] = Time::NEVER.0;
        e
    }

    /// Remove the earliest return (the ring must not be empty).
    #[inline(always)]
    fn pop_front(&mut self) {
        self.t = [self.t[1], self.t[2], self.t[3], Time::NEVER.0];
        self.vb = [self.vb[1], self.vb[2], self.vb[3], 0];
        self.len -= 1;
    }
}

const _: () = assert!(RING == 4, "CreditRing::pop_front shifts four slots");

impl Sim {
    /// Credits transmitter `g` holds on data VL `vl` (see [`CreditRing::vl0`]).
    #[inline(always)]
    pub(crate) fn held(&self, g: usize, vl: usize) -> i32 {
        if vl == 0 {
            self.ports[g].cred.vl0
        } else {
            self.credits[g * self.nvl + vl]
        }
    }

    /// The credit returns on their way to `gp`, earliest first.
    pub(crate) fn credit_returns(&self, gp: u32) -> impl Iterator<Item = (Time, u8, u32)> + '_ {
        let r = &self.ports[gp as usize].cred;
        (0..r.len as usize)
            .map(move |k| r.at(k))
            .chain(self.credit_spill[gp as usize].iter().copied())
    }

    /// Ask for a wake-up of transmitter `gp` at `t` (keeps only the earliest).
    #[inline]
    pub(crate) fn schedule_wake(&mut self, gp: u32, t: Time) {
        let g = gp as usize;
        if t < self.ports[g].wake_at {
            self.ports[g].wake_at = t;
            self.q.push(t, Event::TxWake { gp });
        }
    }

    /// Credits returned to transmitter `gp`, landing at `t`. Inlined: every
    /// hop returns credits, and as a call its register saves cost as much as
    /// its work (callgrind: 18 of 34 instructions).
    #[inline(always)]
    pub(crate) fn push_credit(&mut self, gp: u32, t: Time, vl: u8, nblocks: u32) {
        // Returns come from packets leaving through different outputs with
        // different sizes, so they can land out of order: keep them sorted
        // (almost always an append) so absorbing stops at the right entry.
        debug_assert!(nblocks < 1 << 12 && vl < 16);
        let e = (t, vl, nblocks);
        let pt = &mut self.ports[gp as usize];
        if (pt.cred.len as usize) < RING {
            // The spill is empty whenever the ring has room.
            pt.cred.insert(e);
            if !pt.starved {
                return;
            }
        } else {
            self.spill_credit(gp, e);
        }
        self.credit_wake(gp, t);
    }

    /// [`Self::push_credit`] into a full ring.
    #[inline(never)]
    fn spill_credit(&mut self, gp: u32, e: (Time, u8, u32)) {
        let g = gp as usize;
        let t = e.0;
        let r = &mut self.ports[g].cred;
        let f = &mut self.credit_spill[g];
        if r.at(RING - 1).0 > t {
            // Earlier than the ring's last: that one moves to the spill's front.
            let last = r.pop_back();
            r.insert(e);
            f.push_front(last);
        } else if f.back().is_none_or(|b| b.0 <= t) {
            f.push_back(e);
        } else {
            let pos = f.iter().rposition(|x| x.0 <= t).map_or(0, |i| i + 1);
            f.insert(pos, e);
        }
    }

    /// A credit return landing at `t` was just queued for `gp`: if the port
    /// starves, wake it when it will have what its head packet needs.
    #[inline(never)]
    fn credit_wake(&mut self, gp: u32, t: Time) {
        let pt = &self.ports[gp as usize];
        if pt.starved {
            let (need_vl, need_blocks) = (pt.need_vl, pt.need_blocks);
            if need_blocks == 0 {
                self.schedule_wake(gp, t);
            } else if let Some(at) = self.credit_ready(gp, need_vl, u32::from(need_blocks), t) {
                self.schedule_wake(gp, at);
            }
        }
    }

    /// Apply every credit return that has landed by now.
    #[inline(always)]
    pub(crate) fn absorb_credits(&mut self, gp: u32) {
        let now = self.now.0;
        let r = &mut self.ports[gp as usize].cred;
        // Most looks find the earliest return still on its way (or none); most
        // of the rest find exactly one landed, on VL 0, with nothing spilled.
        if r.t[0] <= now {
            if r.t[1] > now && (r.len as usize) < RING && r.vb[0] >> 12 == 0 {
                r.vl0 += i32::from(r.vb[0] & 0xfff);
                r.pop_front();
            } else {
                self.absorb_landed(gp);
            }
        }
    }

    #[inline(never)]
    fn absorb_landed(&mut self, gp: u32) {
        let g = gp as usize;
        let nvl = self.nvl;
        let now = self.now.0;
        let Sim {
            ports,
            credits,
            credit_spill,
            ..
        } = self;
        let r = &mut ports[g].cred;
        let cr = &mut credits[g * nvl..(g + 1) * nvl];
        loop {
            // The spill holds returns only while the ring is full.
            let may_spill = r.len as usize == RING;
            while r.len > 0 && r.t[0] <= now {
                let vb = r.vb[0];
                let (vl, b) = (usize::from(vb >> 12), i32::from(vb & 0xfff));
                if vl == 0 {
                    r.vl0 += b;
                } else {
                    cr[vl] += b;
                }
                r.pop_front();
            }
            // Refill from the spill: its returns all land at or after the
            // ring's, so each is an append; the spill stays empty while the
            // ring has room.
            if !may_spill {
                return;
            }
            let spill = &mut credit_spill[g];
            if spill.is_empty() {
                return;
            }
            while (r.len as usize) < RING {
                match spill.pop_front() {
                    Some(e) => r.insert(e),
                    None => break,
                }
            }
            if r.first_time().0 > now {
                return;
            }
        }
    }

    /// The earliest time, not before `from`, at which transmitter `gp` will hold
    /// `nb` credits on `vl` counting the returns already on their way; `None` if
    /// those are not enough (a later return will wake it).
    #[inline]
    pub(crate) fn credit_ready(&self, gp: u32, vl: u8, nb: u32, from: Time) -> Option<Time> {
        let g = gp as usize;
        let mut avail = self.held(g, vl as usize);
        if avail >= nb as i32 {
            return Some(from);
        }
        let r = &self.ports[g].cred;
        for k in 0..r.len as usize {
            let (t, v, b) = r.at(k);
            if v == vl {
                avail += b as i32;
                if avail >= nb as i32 {
                    return Some(t.max(from));
                }
            }
        }
        for &(t, v, b) in &self.credit_spill[g] {
            if v == vl {
                avail += b as i32;
                if avail >= nb as i32 {
                    return Some(t.max(from));
                }
            }
        }
        None
    }

    /// Mark `gp` as waiting for `nb` credits on `vl` and return when it can go
    /// (`NEVER`: when a credit return not yet sent arrives).
    #[inline]
    pub(crate) fn starve(&mut self, gp: u32, vl: u8, nb: u32) -> Time {
        let g = gp as usize;
        self.ports[g].starved = true;
        self.ports[g].stalling = true;
        self.stats.stall_begin(g * self.nvl + vl as usize, self.now);
        if self.nvl == 1 {
            self.ports[g].need_vl = vl;
            self.ports[g].need_blocks = nb as u16;
            self.credit_ready(gp, vl, nb, self.now).unwrap_or(Time::NEVER)
        } else {
            // Several VLs compete: wake on the first return of any of them.
            self.ports[g].need_blocks = 0;
            self.credit_wait(gp)
        }
    }

    /// When the next credit return lands at `gp` (`NEVER` if none is on its way).
    #[inline]
    pub(crate) fn credit_wait(&self, gp: u32) -> Time {
        self.ports[gp as usize].cred.first_time()
    }

    /// Transmitter `gp` is free or was woken: send the next packet if one may go.
    pub(crate) fn try_tx<M: Mode>(&mut self, gp: u32) {
        let g = gp as usize;
        if self.ports[g].busy_until > self.now {
            self.schedule_wake(gp, self.ports[g].busy_until);
            return;
        }
        self.try_tx_idle::<M>(gp);
    }

    /// [`Self::try_tx`] on a line known to be idle.
    #[inline]
    fn try_tx_idle<M: Mode>(&mut self, gp: u32) {
        let g = gp as usize;
        self.absorb_credits(gp);
        self.ports[g].starved = false;
        let pick = match self.ports[g].model {
            NodeModel::IbSwitch => self.switch_pick::<M>(gp),
            NodeModel::IbHca => self.hca_pick(gp),
            NodeModel::None => Pick::Wait(Time::NEVER),
        };
        match pick {
            Pick::Send(p) => self.transmit::<M>(gp, p),
            Pick::Wait(t) => {
                self.stats.idle_looks += 1;
                if t != Time::NEVER {
                    self.schedule_wake(gp, t);
                }
            }
        }
    }

    /// Put packet `p` on the wire at `gp` now.
    ///
    /// Written against local borrows of the fields it touches (ports, packets,
    /// credits, the link FIFO): every packet-link hop runs through here, and with
    /// `self.x[i]` everywhere the compiler reloads each vector's pointer and length
    /// after every store.
    pub(crate) fn transmit<M: Mode>(&mut self, gp: u32, p: PacketId) {
        let g = gp as usize;
        let now = self.now;
        let nvl = self.data_vls::<M>();
        let route = {
            let (pt, pk) = (&self.ports[g], &self.pkts[p]);
            (self.is_plain::<M>() && pt.peer_model == NodeModel::IbSwitch && pk.flags & flag::VL15 == 0).then(|| {
                // A route covers every send its packets can make (see
                // `build_route`); the checked read costs a compare and keeps a
                // wrong index from reading another QP's route.
                let r = pk.route();
                match self.routes.get((r + u32::from(pk.hops)) as usize) {
                    Some(&code) if r != NO_ROUTE => {
                        debug_assert_eq!(code, self.lft_code(pt.peer_node as usize, pk.dlid, pt.peer));
                        code
                    }
                    _ => self.lft_code(pt.peer_node as usize, pk.dlid, pt.peer),
                }
            })
        };
        let Sim {
            ports,
            pkts,
            credits,
            stats,
            q,
            ib,
            ..
        } = self;
        let pk = pkts[p];
        let nb = pk.blocks();
        debug_assert!(nb as i32 <= self.max_blocks, "a packet larger than max_blocks");
        let vl15 = pk.flags & flag::VL15 != 0;
        let pt = &mut ports[g];
        if !vl15 {
            let ci = g * nvl + pk.vl as usize;
            if pk.vl == 0 {
                pt.cred.vl0 -= nb as i32;
            } else {
                credits[ci] -= nb as i32;
            }
            if pt.stalling {
                stats.stall_end(ci, now);
                if nvl == 1 {
                    pt.stalling = false;
                }
            }
        }
        let end = now + pt.ser.time(u32::from(pk.wire));
        pt.busy_until = end;
        pt.tx_bytes += u64::from(pk.wire);
        pt.tx_pkts = pt.tx_pkts.wrapping_add(1);
        let prop = pt.prop();
        let arrive = match pt.peer_model {
            NodeModel::IbSwitch => {
                let forwarding = if M::FAST {
                    crate::config::Forwarding::CutThrough
                } else {
                    ib.forwarding
                };
                let head_or_tail = match forwarding {
                    crate::config::Forwarding::CutThrough => now,
                    crate::config::Forwarding::StoreAndForward => end,
                };
                head_or_tail + prop + Time(ib.switch_latency_ps)
            }
            _ => end + prop + Time(ib.hca_rx_latency_ps),
        };
        stats.hops += 1;
        if !M::FAST && stats.capture == gp {
            stats.captured.push((now, pkts.full(p)));
        }
        let seq = q.next_seq();
        {
            let pm = &mut pkts[p];
            pm.hops = pm.hops.saturating_add(1);
            pm.tail_at = end + prop;
            pm.in_link = NONE;
        }
        if let Some(code) = route {
            // On the wire `in_link` carries the far switch's forwarding decision.
            pkts[p].in_link = code;
        }
        let ahead = pt.fifo.tail;
        if pt.fifo.push(pkts, p) {
            q.push_seq(arrive, seq, Event::Arrive { dir: gp });
        } else {
            // The packet ahead (whose line the push just wrote) will queue
            // this one's arrival when it arrives itself.
            let a = &mut pkts[ahead];
            a.next_at = arrive;
            a.set_next_seq(seq);
        }
        debug_assert_eq!(self.arrival_time(gp, &self.pkts[p]), arrive);
        if pk.in_link != NONE {
            // The packet leaves the switch input buffer it sat in once its last byte
            // is out; its credits travel back over the input link.
            self.release_input(pk.in_link, pk.in_vl, nb, vl15, end);
            if !vl15 {
                self.arb_charge::<M>(gp, u32::from(pk.wire));
            }
        }
        self.plan_next::<M>(gp, end);
    }

    /// When packet `pk`, on the link from transmitter `gp`, reaches the far node
    /// (its header for a cut-through switch, its tail otherwise), derived from its
    /// tail time: the check (in debug builds) of the arrival time the packet
    /// ahead of it carries (`PktHot::next_at`).
    #[inline]
    pub(crate) fn arrival_time(&self, gp: u32, pk: &crate::packet::PktHot) -> Time {
        let pt = &self.ports[gp as usize];
        match pt.peer_model {
            NodeModel::IbSwitch => {
                let head_or_tail = match self.ib.forwarding {
                    crate::config::Forwarding::CutThrough => pk.tail_at - pt.ser.time(u32::from(pk.wire)),
                    crate::config::Forwarding::StoreAndForward => pk.tail_at,
                };
                head_or_tail + Time(self.ib.switch_latency_ps)
            }
            _ => pk.tail_at + Time(self.ib.hca_rx_latency_ps),
        }
    }

    /// After a send that ends at `end`, wake the transmitter when its next packet
    /// can go: at `end` if it will have the credits, later if they are still on
    /// their way, or on a credit return if none is. With one VL the next packet is
    /// known exactly; with several, wake at `end` and let arbitration decide.
    ///
    /// With one data VL, a transmitter that holds credits for the largest
    /// packet the run can make will have them at `end` whatever comes next, so
    /// the next packet (a line that is usually cold) is not read: the wake-up
    /// comes at `end`, exactly as `credit_ready` would have said.
    #[inline]
    fn plan_next<M: Mode>(&mut self, gp: u32, end: Time) {
        let g = gp as usize;
        if self.one_vl::<M>() && self.ports[g].cred.vl0 >= self.max_blocks {
            let has_work = match self.ports[g].model {
                NodeModel::IbSwitch => {
                    prefetch::addr(self.pkts.hint_addr(self.ports[g].oq0.chain_head()));
                    self.ports[g].oq_len != 0
                }
                NodeModel::IbHca => self.hca_has_work(gp),
                NodeModel::None => false,
            };
            if has_work {
                self.schedule_wake(gp, end);
            }
            return;
        }
        let need = match self.ports[g].model {
            NodeModel::IbSwitch => {
                if self.ports[g].oq_len == 0 {
                    return;
                }
                if self.one_vl::<M>() {
                    match self.ports[g].oq0.front() {
                        Some(p) => Some((0u8, self.pkts[p].blocks())),
                        // Only VL15 is queued: not flow controlled.
                        None => None,
                    }
                } else {
                    None
                }
            }
            NodeModel::IbHca => {
                if !self.hca_has_work(gp) {
                    return;
                }
                if self.one_vl::<M>() {
                    self.hca_next_need(gp)
                } else {
                    None
                }
            }
            NodeModel::None => return,
        };
        match need {
            None => self.schedule_wake(gp, end),
            Some((vl, nb)) => match self.credit_ready(gp, vl, nb, end) {
                Some(t) => self.schedule_wake(gp, t),
                None => {
                    self.ports[g].starved = true;
                    self.ports[g].stalling = true;
                    self.ports[g].need_vl = vl;
                    self.ports[g].need_blocks = nb as u16;
                    self.stats.stall_begin(g * self.nvl + vl as usize, end);
                }
            },
        }
    }

    /// Free `nb` blocks of the input buffer (VL `vl`) that link `link` (named by
    /// its transmitting port) fills, at time `at`, and send the credits back
    /// over it. Only the link's own record is read: the input port is its peer.
    #[inline]
    pub(crate) fn release_input(&mut self, link: u32, vl: u8, nb: u32, vl15: bool, at: Time) {
        if vl15 {
            return;
        }
        let l = &self.ports[link as usize];
        let (in_gp, prop) = (l.peer, l.prop());
        let ui = in_gp as usize * self.nvl + vl as usize;
        self.in_buf[ui].used -= nb;
        self.push_credit(link, at + prop, vl, nb);
    }

    /// An end node consumed (or dropped) packet `p` that came over link
    /// `link` (named by its transmitting port): its buffer space is free now,
    /// and the credits travel back over the link. Only the link's record is
    /// read (a cable's delay is the same both ways), not the receiving port's.
    pub(crate) fn return_credits_now(&mut self, link: u32, p: PacketId) {
        let pk = &self.pkts[p];
        if pk.flags & flag::VL15 != 0 {
            return;
        }
        let (vl, nb) = (pk.vl, pk.blocks());
        let l = &self.ports[link as usize];
        debug_assert_eq!(l.prop(), self.ports[l.peer as usize].prop());
        self.push_credit(link, self.now + l.prop(), vl, nb);
    }

    /// State of the head packet of switch output queue (`gp`, `vl`).
    #[inline]
    pub(crate) fn head_state(&self, gp: u32, vl: usize) -> Head {
        let g = gp as usize;
        let Some(p) = self.oq_at(g, vl).front() else {
            return Head::Empty;
        };
        let pk = &self.pkts[p];
        if self.held(g, vl) < pk.blocks() as i32 {
            return Head::NoCredit;
        }
        // Cut-through must not underrun: the last byte cannot leave before it arrives.
        let earliest = pk.tail_at.saturating_sub(self.ports[g].ser.time(u32::from(pk.wire)));
        if earliest > self.now {
            return Head::NotBefore(earliest);
        }
        Head::Ready
    }

    /// Choose the data VL to send next at switch output `gp` by the VL arbitration
    /// tables, or say when to look again.
    pub(crate) fn arbitrate<M: Mode>(&mut self, gp: u32) -> Result<usize, Time> {
        let g = gp as usize;
        let mut wait = Time::NEVER;
        if self.one_vl::<M>() {
            return match self.head_state(gp, 0) {
                Head::Ready => Ok(0),
                Head::NoCredit => {
                    let p = self.ports[g].oq0.front().expect("head exists");
                    let nb = self.pkts[p].blocks();
                    Err(self.starve(gp, 0, nb))
                }
                Head::NotBefore(t) => Err(t),
                Head::Empty => Err(Time::NEVER),
            };
        }
        let st = self.arb[g];
        let limit = self.arb_cfg.high_limit;
        let high_first = limit == 255 || st.hi_bytes < u32::from(limit).max(1) * 4096;
        let order: [usize; 2] = if high_first { [0, 1] } else { [1, 0] };
        for t in order {
            let len = if t == 0 {
                self.arb_cfg.high.len()
            } else {
                self.arb_cfg.low.len()
            };
            for k in 0..len {
                let i = (st.idx[t] as usize + k) % len;
                let e = if t == 0 {
                    self.arb_cfg.high[i]
                } else {
                    self.arb_cfg.low[i]
                };
                if e.weight == 0 || e.vl as usize >= self.nvl {
                    continue;
                }
                match self.head_state(gp, e.vl as usize) {
                    Head::Ready => {
                        let a = &mut self.arb[g];
                        if k != 0 || a.left[t] <= 0 {
                            a.idx[t] = i as u16;
                            a.left[t] = i32::from(e.weight) * 64;
                        }
                        a.last_table = t as u8;
                        return Ok(e.vl as usize);
                    }
                    Head::NoCredit => {
                        self.ports[g].starved = true;
                        self.ports[g].stalling = true;
                        self.stats.stall_begin(g * self.nvl + e.vl as usize, self.now);
                        wait = wait.min(self.credit_wait(gp));
                    }
                    Head::NotBefore(tt) => wait = wait.min(tt),
                    Head::Empty => {}
                }
            }
        }
        Err(wait)
    }

    /// Charge a sent packet to the arbitration table entry that chose it.
    #[inline]
    fn arb_charge<M: Mode>(&mut self, gp: u32, wire: u32) {
        if self.one_vl::<M>() {
            return;
        }
        let a = &mut self.arb[gp as usize];
        let t = a.last_table as usize;
        a.left[t] -= wire as i32;
        let len = if t == 0 {
            self.arb_cfg.high.len()
        } else {
            self.arb_cfg.low.len()
        };
        if a.left[t] <= 0 && len > 0 {
            a.idx[t] = ((a.idx[t] as usize + 1) % len) as u16;
        }
        if t == 0 {
            a.hi_bytes = a.hi_bytes.saturating_add(wire);
        } else {
            a.hi_bytes = 0;
        }
    }
}

impl Sim {
    /// New work for transmitter `gp`: send now if the line is idle, otherwise make
    /// sure it is woken when the line frees.
    #[inline]
    pub(crate) fn kick<M: Mode>(&mut self, gp: u32) {
        let g = gp as usize;
        if self.ports[g].busy_until > self.now {
            self.schedule_wake(gp, self.ports[g].busy_until);
        } else if self.ports[g].wake_at > self.now {
            self.try_tx_idle::<M>(gp);
        }
    }
}

impl Sim {
    /// Check the transmitter invariants: every port with queued work is busy, has a
    /// wake-up scheduled, or waits for credits it lacks (and is marked starved, so
    /// the next credit return wakes it). Returns one line per violation (a lost
    /// wake-up would leave packets stranded and is a model bug).
    pub fn audit(&self) -> Vec<String> {
        let mut bad = Vec::new();
        for gp in 0..self.ports.len() {
            if self.ports[gp].peer == NONE {
                continue;
            }
            let has = match self.ports[gp].model {
                NodeModel::IbSwitch => self.ports[gp].oq_len > 0,
                NodeModel::IbHca => self.hca_has_work(gp as u32),
                NodeModel::None => false,
            };
            if !has || self.ports[gp].busy_until > self.now || self.ports[gp].wake_at != Time::NEVER {
                continue;
            }
            let name = &self.node_name[self.port_node[gp] as usize];
            let port = self.ports[gp].port_num;
            if !self.ports[gp].starved {
                bad.push(format!(
                    "{name} port {port}: work queued, line idle, no wake-up and not waiting for credits"
                ));
            } else if self.ports[gp].need_blocks == 0 && self.ports[gp].cred.len > 0
                || self.ports[gp].need_blocks > 0
                    && self
                        .credit_ready(
                            gp as u32,
                            self.ports[gp].need_vl,
                            u32::from(self.ports[gp].need_blocks),
                            self.now,
                        )
                        .is_some()
            {
                bad.push(format!(
                    "{name} port {port}: starved though enough credits are on their way, and no wake-up"
                ));
            } else if self.ports[gp].model == NodeModel::IbSwitch {
                for vl in 0..self.nvl {
                    if self.head_state(gp as u32, vl) == Head::Ready {
                        bad.push(format!(
                            "{name} port {port}: VL {vl} could send but nothing will wake it"
                        ));
                    }
                }
            }
        }
        bad
    }
}
