//! HPCC (Li et al., SIGCOMM'19) as HPCC ns-3 runs it (`CC_MODE 3`): in-band
//! telemetry (INT) written at each switch egress, echoed by the ACK, and a
//! window/rate computed from the most utilised hop.
//!
//! ```text
//!   data ──► switch egress: push (ts, tx bytes, queue bytes, link rate) ──► …
//!   receiver: the ACK carries the data packet's hops back
//!   sender, per ACK, per hop i (vs the hop's previous record):
//!     U_i = min(q, q_prev)·8/(B_i·T) + (Δtx·8/Δts)/B_i      T = base RTT
//!     U   = max U_i;  u ← (u·(T−τ) + U·τ)/T   (τ = that hop's Δts, ≤ T)
//!     k   = u/η;  k ≥ 1 or stage ≥ maxStage: R = R_c/k + R_AI, stage 0
//!                 else                        R = R_c + R_AI,   stage + 1
//!   an ACK past the PSN sent at the last reference update: R_c, stage ← R, …
//!   other ACKs (FAST_REACT): rate ← R, R_c and stage unchanged
//! ```
//!
//! Rules and their order follow the paper's Algorithm 1 and HPCC ns-3
//! (`RdmaHw::HandleAckHp`, `UpdateRateHp`, `FastReactHp` in
//! `simulation/src/point-to-point/model/rdma-hw.cc`): the queue term takes the
//! smaller of this and the previous queue sample, `SAMPLE_FEEDBACK` skips hops
//! with an empty queue on fast reactions, the rate stays in [`MIN_RATE`, line].
//! Rates stand in for windows (W = R·T), as ns-3's rate-paced QPs do.

use wire::Psn;

use crate::engine::time::Time;

/// Hops an INT header holds (ns-3 `IntHeader::maxHop`).
pub const MAX_HOPS: usize = 5;

/// Bytes INT adds to every data packet and ACK under HPCC: 5 hops × 8 bytes +
/// a 2-byte hop count (ns-3 `IntHeader::GetStaticSize`, NORMAL mode).
pub const INT_BYTES: u32 = 42;

/// One switch egress's record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// When the packet left the queue.
    pub ts: Time,
    /// Bytes the port had sent, this packet included.
    pub tx_bytes: u64,
    /// Bytes queued at the port (all classes) after the dequeue.
    pub qlen: u64,
    /// Link rate, bits/s.
    pub rate_bps: u64,
}

/// The hops a packet has crossed (the first [`MAX_HOPS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHeader {
    /// Records filled.
    pub n: u8,
    /// Records, in path order.
    pub hops: [IntHop; MAX_HOPS],
    /// When the data packet reached its destination (set there with `n`):
    /// every record is older.
    pub rx: Time,
}

impl IntHeader {
    /// Append a hop; past [`MAX_HOPS`] the record is not written (ns-3 alike).
    #[inline]
    pub fn push(&mut self, h: IntHop) {
        if usize::from(self.n) < MAX_HOPS {
            self.hops[usize::from(self.n)] = h;
            self.n += 1;
        }
    }

    /// Write hop `i` (0-based) without reading the header: the simulator knows
    /// `i` from the packet's switch count, so a switch only stores into the
    /// slot (no cache-miss stall); [`IntHeader::n`] is set once at the receiver.
    #[inline]
    pub fn set(&mut self, i: usize, h: IntHop) {
        if i < MAX_HOPS {
            self.hops[i] = h;
        }
    }
}

/// INT headers of packets in flight, by slot: packets carry a `u16` handle
/// (0 = none), which fits in the packet's padding, so a packet does not grow
/// and DCQCN runs never touch this. Cost: one 176-byte slot per HPCC packet in
/// flight, reused through a free list; at most 65,535 at once (more would
/// need 11.5 MB of headers in flight): past that a packet goes without INT and
/// [`IntStore::overflow`] counts it.
#[derive(Clone, Debug)]
pub struct IntStore {
    slots: Vec<IntHeader>,
    free: Vec<u16>,
    /// Packets sent without INT because every handle was in use.
    pub overflow: u64,
    /// Handles given are `base + 1 ..= base + cap` (a part of a split run
    /// has its own range: see [`Self::with_range`]).
    base: u16,
    cap: u16,
    /// Most headers held at once.
    peak: usize,
}

impl Default for IntStore {
    fn default() -> Self {
        IntStore::with_range(0, u16::MAX)
    }
}

impl IntStore {
    /// An empty store giving handles `base + 1 ..= base + cap` (`base + cap`
    /// at most 65,535).
    pub fn with_range(base: u16, cap: u16) -> IntStore {
        debug_assert!(u32::from(base) + u32::from(cap) <= u32::from(u16::MAX));
        IntStore {
            slots: Vec::new(),
            free: Vec::new(),
            overflow: 0,
            base,
            cap,
            peak: 0,
        }
    }

    /// A fresh empty header; returns its handle (≥ 1), or 0 when all are in use.
    pub fn alloc(&mut self) -> u16 {
        let h = match self.free.pop() {
            Some(i) => {
                self.slots[usize::from(i)] = IntHeader::default();
                self.base + i + 1
            }
            None if self.slots.len() < usize::from(self.cap) => {
                self.slots.push(IntHeader::default());
                self.base + self.slots.len() as u16
            }
            None => {
                self.overflow += 1;
                return 0;
            }
        };
        self.peak = self.peak.max(self.live());
        h
    }

    /// The header of handle `h` (≥ 1).
    #[inline]
    pub fn get(&self, h: u16) -> &IntHeader {
        &self.slots[usize::from(h - self.base) - 1]
    }

    /// Mutable header of handle `h` (≥ 1).
    #[inline]
    pub fn get_mut(&mut self, h: u16) -> &mut IntHeader {
        &mut self.slots[usize::from(h - self.base) - 1]
    }

    /// Return handle `h` (≥ 1) to the pool.
    pub fn release(&mut self, h: u16) {
        self.free.push(h - self.base - 1);
    }

    /// Most headers held at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The stores of a split run's parts made one (each part's handles kept:
    /// packets in flight hold them), every handle no part holds free; no
    /// overflow counted (the caller knows the run's).
    pub fn merged(parts: &[&IntStore]) -> IntStore {
        let mut m = IntStore::default();
        let len = parts
            .iter()
            .map(|p| usize::from(p.base) + p.slots.len())
            .max()
            .unwrap_or(0);
        m.slots = vec![IntHeader::default(); len];
        let mut held = vec![false; len];
        for p in parts {
            let b = usize::from(p.base);
            m.slots[b..b + p.slots.len()].clone_from_slice(&p.slots);
            held[b..b + p.slots.len()].iter_mut().for_each(|h| *h = true);
            for &f in &p.free {
                held[b + usize::from(f)] = false;
            }
            m.peak = m.peak.max(p.peak);
        }
        m.free = (0..len).rev().filter(|&i| !held[i]).map(|i| i as u16).collect();
        m
    }

    /// Headers held by packets in flight.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// HPCC knobs (HPCC ns-3 config keys in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct HpccParams {
    /// Line rate, the cap, bits/s.
    pub line_bps: f64,
    /// Base RTT T (third.cc: the largest host-pair RTT with `GLOBAL_T 1`).
    pub base_rtt: Time,
    /// Target utilisation η (`U_TARGET`, third.cc default 0.95).
    pub eta: f64,
    /// Multiplicative-increase stages before a forced reference reset
    /// (`MI_THRESH`, default 5).
    pub max_stage: u32,
    /// Additive increase W_AI as a rate, bits/s (`RATE_AI`).
    pub rate_ai_bps: f64,
    /// Rate floor, bits/s (`MIN_RATE`).
    pub min_rate_bps: f64,
    /// React on every ACK, not only once per RTT (`FAST_REACT`).
    pub fast_react: bool,
    /// Fast reactions skip hops whose queue is empty (`SAMPLE_FEEDBACK`).
    pub sample_feedback: bool,
    /// Bytes in flight allowed at line rate, the BDP `line·T/8` (`HAS_WIN`);
    /// 0 = no window, rate pacing only.
    pub window_bytes: u64,
    /// The window scales with the rate, W = BDP·R/line (`VAR_WIN`).
    pub var_win: bool,
}

/// Counters of one HPCC sender.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HpccCounters {
    /// Reference (once per RTT) updates.
    pub updates: u64,
    /// Per-ACK fast reactions that changed nothing in the reference.
    pub fast: u64,
    /// Updates that cut (u ≥ η or the stage limit).
    pub multiplicative: u64,
    /// The last normalised utilisation u.
    pub u: f64,
    /// Hops in the last INT header seen (the switches on the data path, ≤ 5).
    pub hops: u8,
}

/// The sender side of one QP.
#[derive(Clone, Debug)]
pub struct HpccRp {
    p: HpccParams,
    /// Rate in force (paces the QP).
    rate: f64,
    /// Reference rate R_c (W_c / T).
    cur_rate: f64,
    inc_stage: u32,
    u: f64,
    /// The reference updates when an ACK passes this PSN; `None` before the first ACK.
    last_update: Option<Psn>,
    prev: [IntHop; MAX_HOPS],
    /// Counters.
    pub counters: HpccCounters,
}

impl HpccRp {
    /// A sender at line rate, u = 1 (ns-3 `RdmaQueuePair` initial values).
    pub fn new(p: HpccParams) -> HpccRp {
        HpccRp {
            rate: p.line_bps,
            cur_rate: p.line_bps,
            p,
            inc_stage: 0,
            u: 1.0,
            last_update: None,
            prev: [IntHop::default(); MAX_HOPS],
            counters: HpccCounters::default(),
        }
    }

    /// Current rate, bits/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Current rate, whole bits/s (at least 1).
    pub fn rate_bps(&self) -> u64 {
        (self.rate as u64).max(1)
    }

    /// The window in force, bytes (0 = none): ns-3 `RdmaQueuePair::GetWin`,
    /// at least 1 byte when variable.
    pub fn window(&self) -> u64 {
        if self.p.window_bytes == 0 || !self.p.var_win {
            return self.p.window_bytes;
        }
        ((self.p.window_bytes as f64 * self.rate / self.p.line_bps) as u64).max(1)
    }

    /// May not send with `in_flight` bytes unacknowledged (ns-3 `IsWinBound`).
    #[inline]
    pub fn window_bound(&self, in_flight: u64) -> bool {
        let w = self.window();
        w != 0 && in_flight >= w
    }

    /// The parameters.
    pub fn params(&self) -> &HpccParams {
        &self.p
    }

    /// An ACK arrived acknowledging everything before `next`, echoing `int`;
    /// `snd_nxt` is the next PSN the sender will send.
    pub fn on_ack(&mut self, next: Psn, int: &IntHeader, snd_nxt: Psn) {
        self.counters.hops = int.n;
        // The records follow the data path: each hop dequeued it later than the
        // last, all before it arrived (not the ACK's way back).
        debug_assert!(
            int.hops[..usize::from(int.n)].windows(2).all(|w| w[0].ts < w[1].ts)
                && int.hops[..usize::from(int.n)].iter().all(|h| h.ts < int.rx),
            "INT hops not on the data path: {int:?}"
        );
        match self.last_update {
            None => {
                // First ACK: only the reference hops and where the first RTT ends.
                self.last_update = Some(snd_nxt);
                let n = usize::from(int.n);
                self.prev[..n].copy_from_slice(&int.hops[..n]);
            }
            Some(end) if end.distance_to(next) > 0 => self.update(int, snd_nxt, false),
            Some(_) if self.p.fast_react => self.update(int, snd_nxt, true),
            Some(_) => {}
        }
    }

    fn update(&mut self, int: &IntHeader, snd_nxt: Psn, fast: bool) {
        let t = self.p.base_rtt.0 as f64;
        let (mut umax, mut dt, mut any) = (0.0f64, 0.0f64, false);
        for (h, prev) in int.hops[..usize::from(int.n)].iter().zip(self.prev.iter_mut()) {
            if self.p.sample_feedback && fast && h.qlen == 0 {
                continue;
            }
            let tau = h.ts.0.saturating_sub(prev.ts.0);
            if tau == 0 || h.rate_bps == 0 {
                // The same sample again (or no rate): nothing to learn.
                continue;
            }
            any = true;
            let b = h.rate_bps as f64;
            let tx_rate = h.tx_bytes.saturating_sub(prev.tx_bytes) as f64 * 8.0 / (tau as f64 * 1e-12);
            let q = h.qlen.min(prev.qlen) as f64;
            let u = tx_rate / b + q * 8.0 / (b * t * 1e-12);
            if u > umax {
                umax = u;
                dt = tau as f64;
            }
            *prev = *h;
        }
        if !any {
            return;
        }
        let dt = dt.min(t);
        self.u = (self.u * (t - dt) + umax * dt) / t;
        self.counters.u = self.u;
        let k = self.u / self.p.eta;
        let (new_rate, stage) = if k >= 1.0 || self.inc_stage >= self.p.max_stage {
            (self.cur_rate / k + self.p.rate_ai_bps, 0)
        } else {
            (self.cur_rate + self.p.rate_ai_bps, self.inc_stage + 1)
        };
        self.rate = new_rate.clamp(self.p.min_rate_bps, self.p.line_bps);
        if fast {
            self.counters.fast += 1;
        } else {
            self.cur_rate = self.rate;
            self.inc_stage = stage;
            self.last_update = Some(snd_nxt);
            self.counters.updates += 1;
            self.counters.multiplicative += u64::from(stage == 0);
        }
    }
}

/// HPCC at 100G as third.cc sets it (η 0.95, 5 MI stages, 50 Mb/s AI,
/// fast reaction, VAR_WIN), with an 8 µs base RTT and a 100 KB window: for tests.
#[cfg(test)]
pub(crate) fn test_params() -> HpccParams {
    HpccParams {
        line_bps: 100e9,
        base_rtt: Time::us(8),
        eta: 0.95,
        max_stage: 5,
        rate_ai_bps: 50e6,
        min_rate_bps: 100e6,
        fast_react: true,
        sample_feedback: false,
        window_bytes: 100_000,
        var_win: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window follows the rate with VAR_WIN, is fixed without, and is
    /// absent at 0.
    #[test]
    fn window_scales_with_rate() {
        let mut h = HpccRp::new(test_params());
        assert_eq!(h.window(), 100_000);
        h.rate = 25e9;
        assert_eq!(h.window(), 25_000);
        assert!(h.window_bound(25_000) && !h.window_bound(24_999));
        h.p.var_win = false;
        assert_eq!(h.window(), 100_000);
        h.p.window_bytes = 0;
        assert!(!h.window_bound(u64::MAX));
    }

    /// One hop at `t_ns`, having sent `tx` bytes, with `q` bytes queued, 100G.
    fn hop(t_ns: u64, tx: u64, q: u64) -> IntHeader {
        let mut h = IntHeader::default();
        h.push(IntHop {
            ts: Time(t_ns * 1000),
            tx_bytes: tx,
            qlen: q,
            rate_bps: 100_000_000_000,
        });
        h.rx = Time(t_ns * 1000 + 1);
        h
    }

    /// A saturated hop with a standing queue of one BDP: U = 1 + 1 = 2, and with
    /// τ = T the EWMA takes it whole: R = R_c·η/2 + R_AI, once per RTT.
    #[test]
    fn cuts_by_utilisation_over_target() {
        let p = |v: u32| Psn::new(v);
        let mut h = HpccRp::new(test_params());
        h.on_ack(p(1), &hop(0, 0, 100_000), p(10));
        assert_eq!(h.rate(), 100e9);
        // 8 µs later: 100 KB sent (line rate), queue 100 KB = B·T.
        h.on_ack(p(11), &hop(8000, 100_000, 100_000), p(20));
        let want = 100e9 * 0.95 / 2.0 + 50e6;
        assert!((h.rate() - want).abs() < 1.0, "{}", h.rate());
        assert!((h.counters.u - 2.0).abs() < 1e-9);
        assert_eq!((h.counters.updates, h.counters.multiplicative), (1, 1));
        // An ACK inside the RTT reacts from the reference without moving it.
        h.on_ack(p(12), &hop(8800, 110_000, 100_000), p(21));
        assert_eq!(h.counters.fast, 1);
        assert!(h.rate() < want, "{}", h.rate());
    }

    /// An idle path: u decays below η, the rate grows by R_AI per update for
    /// `max_stage` updates, then the stage limit rescales by u/η.
    #[test]
    fn additive_increase_then_stage_limit() {
        let mut pr = test_params();
        pr.fast_react = false;
        pr.line_bps = 100e9;
        let mut h = HpccRp::new(pr);
        h.rate = 10e9;
        h.cur_rate = 10e9;
        // 10% utilisation, no queue, one update per 8 µs.
        let mut tx = 0;
        h.on_ack(Psn::new(1), &hop(0, tx, 0), Psn::new(2));
        let mut rates = Vec::new();
        for k in 1..=7u32 {
            tx += 10_000;
            h.on_ack(
                Psn::new(2 * k + 1),
                &hop(u64::from(k) * 8000, tx, 0),
                Psn::new(2 * k + 2),
            );
            rates.push(h.rate());
        }
        // u: 1 → 0.1 in one full-RTT sample, so stage increases (+50 Mb/s) …
        for w in rates[..5].windows(2) {
            assert!((w[1] - w[0] - 50e6).abs() < 1.0, "{rates:?}");
        }
        // … until the 6th update, at stage 5: R_c/(0.1/0.95) + R_AI, a jump.
        assert!(rates[5] > 9.0 * rates[4], "{rates:?}");
        assert!(rates.iter().all(|&r| r <= 100e9));
    }

    /// Without FAST_REACT an ACK inside the RTT changes nothing; the floor holds.
    #[test]
    fn no_fast_react_and_floor() {
        let mut pr = test_params();
        pr.fast_react = false;
        let mut h = HpccRp::new(pr);
        h.on_ack(Psn::new(1), &hop(0, 0, 500_000_000), Psn::new(100));
        h.on_ack(Psn::new(50), &hop(8000, 100_000, 500_000_000), Psn::new(100));
        assert_eq!(h.rate(), 100e9);
        // A huge queue (5000 BDPs) past the RTT: cut to the floor.
        h.on_ack(Psn::new(101), &hop(16000, 200_000, 500_000_000), Psn::new(200));
        assert_eq!(h.rate(), 100e6);
    }

    #[test]
    fn store_reuses_slots_and_caps_hops() {
        let mut s = IntStore::default();
        let a = s.alloc();
        let b = s.alloc();
        assert_ne!(a, b);
        for i in 0..7 {
            s.get_mut(a).push(IntHop {
                qlen: i,
                ..IntHop::default()
            });
        }
        assert_eq!(s.get(a).n, 5);
        assert_eq!(s.live(), 2);
        s.release(a);
        let c = s.alloc();
        assert_eq!(c, a);
        assert_eq!(s.get(c).n, 0);
        // 65,535 handles at most: then 0 (no INT), counted.
        while s.live() < usize::from(u16::MAX) {
            assert_ne!(s.alloc(), 0);
        }
        assert_eq!((s.alloc(), s.overflow), (0, 1));
        s.release(b);
        assert_eq!(s.alloc(), b);
    }
}
