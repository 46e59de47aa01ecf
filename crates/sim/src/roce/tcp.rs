//! Kernel TCP in the RoCE world: long-lived (optionally rate-limited) flows from
//! the hosts on the lossy traffic class, sharing NIC ports, switch buffers and
//! links with RoCE.
//!
//! ```text
//!   host app ──(rate_bps, or backlogged)──▶ sender: cwnd, ssthresh, RTO
//!     segments of `mss` on DSCP 0 → TC0/PG0/queue 0 (no PFC: the MMU drops over
//!     its dynamic threshold) ─▶ switches ─▶ receiver: cumulative ACK per segment
//!     (ECE echoes CE) on the same class ─▶ sender
//!   NIC port: RoCE data and TCP share it by ETS (deficit by bytes, weights as the
//!   switches' DWRR); ACKs ride the NIC's control queue ahead of data.
//! ```
//!
//! Congestion control is Reno with SACK-based loss recovery, as Linux runs it
//! (RFC 5681 slow start and congestion avoidance; fast retransmit on the third
//! duplicate ACK; recovery per RFC 6675: `ssthresh = flight/2`, every hole the
//! receiver's SACK blocks reveal is retransmitted, and one segment goes out per
//! segment that leaves the network, as PRR's conservation bound does, RFC 6937)
//! and, when segments are ECN-capable, DCTCP on top (RFC 8257:
//! `alpha ← (1−g)·alpha + g·F` once per window of data, `cwnd ← cwnd·(1−alpha/2)`
//! at most once per window on ECE). An RTO restarts from `snd_una` with a
//! window of one segment (go-back-N, as Linux does after a timeout).
//!
//! SACK blocks are not carried in the ACK frames: the sender reads the
//! receiver's out-of-order ranges when an ACK arrives (they are at most half an
//! RTT newer than the blocks a real ACK would carry, and not limited to 3 or 4).
//! The flight is also capped by the receive window (`rwnd_bytes`).
//!
//! Cost: every segment and ACK is O(1) except the receiver's out-of-order list,
//! a short sorted `Vec` of segment ranges (it grows only while holes exist) and
//! the hole search in recovery (a binary search in it).
//! Sequence numbers count segments, not bytes: every segment carries a full
//! `mss` (the application writes whole segments), so nothing is lost by it.
//!
//! This module holds the protocol state only; [`crate::roce::net::RoceSim`]
//! moves the packets (its `Kind::TcpData` / `Kind::TcpAck`).
//!
//! One file because the sender (cwnd, ssthresh, RTO, NewReno/DCTCP) and the receiver
//! (cumulative ACKs, out-of-order buffer) of one connection are one model with one
//! sequence space; the model is about 810 lines, the rest its tests.

use fabric::NodeId;

use crate::engine::Time;

/// Bytes of a TCP/IPv4 frame around its payload: Ethernet 14 + IPv4 20 + TCP 20
/// + timestamps option 12 (Linux sends it by default, `net.ipv4.tcp_timestamps`)
/// + FCS 4.
pub const TCP_HEADERS: u32 = 70;

/// Congestion control of the TCP flows.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TcpCc {
    /// NewReno; segments are not ECN-capable, so only drops signal congestion.
    NewReno,
    /// DCTCP: segments are ECT(0), switches mark them like RoCE (the port's
    /// RED/ECN curve on the TCP queue's bytes), `g` is the EWMA gain (1/16 in
    /// RFC 8257 §4.2 and Linux `dctcp_shift_g` 4).
    Dctcp {
        /// EWMA gain of the marked fraction.
        g: f64,
    },
}

/// Parameters of the TCP flows.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per segment: 8948 = a 9000-byte jumbo MTU − 40 (IPv4 + TCP)
    /// − 12 (timestamps), what Linux advertises on the jumbo-frame Ethernet AI
    /// clusters use.
    pub mss: u32,
    /// Initial window, segments (RFC 6928 and Linux `TCP_INIT_CWND`: 10).
    pub init_cwnd: u32,
    /// Minimum retransmission timeout. Linux's default `TCP_RTO_MIN` is 200 ms,
    /// longer than a whole collective here; datacenters lower it per route
    /// (`ip route … rto_min 1ms`, 1 ms being the finest a HZ=1000 kernel can
    /// time), as Vasudevan et al. (SIGCOMM 2009, "Safe and effective fine-grained
    /// TCP retransmissions for datacenter communication") argue. Default 1 ms.
    pub rto_min: Time,
    /// RTO before the first RTT sample (RFC 6298 says 1 s; a datacenter host
    /// with `rto_min` 1 ms starts at the same order). Default 1 ms.
    pub rto_init: Time,
    /// Ceiling of the backed-off RTO. Default 64 ms.
    pub rto_max: Time,
    /// Receive window, bytes: the most a flow keeps unacknowledged. Default
    /// 6 MiB, Linux's `net.ipv4.tcp_rmem` maximum (6291456).
    pub rwnd_bytes: u64,
    /// Congestion control.
    pub cc: TcpCc,
    /// DSCP of data and ACKs (0 = best effort → the lossy class).
    pub dscp: u8,
    /// ETS weights at the sending NIC: `[tcp, rdma]`. The default (14, 15)
    /// mirrors the switches' DWRR weights for queue 0 and queue 3 (SONiC
    /// `qos_config.j2`, see [`crate::roce::buffer::Scheduler`]).
    pub nic_weights: [u32; 2],
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 8948,
            init_cwnd: 10,
            rto_min: Time::ms(1),
            rto_init: Time::ms(1),
            rto_max: Time::ms(64),
            rwnd_bytes: 6_291_456,
            cc: TcpCc::NewReno,
            dscp: 0,
            nic_weights: [14, 15],
        }
    }
}

impl TcpConfig {
    /// Check the values; `Err((field, why))`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.mss == 0 || self.mss > 9000 {
            return Err((
                "tcp.mss",
                format!("{} is not a segment size of 1..=9000 bytes", self.mss),
            ));
        }
        if self.init_cwnd == 0 {
            return Err(("tcp.init_cwnd", "0 segments would never send".into()));
        }
        if self.rto_min == Time::ZERO || self.rto_max < self.rto_min || self.rto_init < self.rto_min {
            return Err((
                "tcp.rto_min",
                format!(
                    "need 0 < rto_min ({}) ≤ rto_init ({}) and rto_min ≤ rto_max ({})",
                    self.rto_min, self.rto_init, self.rto_max
                ),
            ));
        }
        if self.rwnd_bytes < u64::from(self.mss) {
            return Err((
                "tcp.rwnd_bytes",
                format!("{} B is less than one segment", self.rwnd_bytes),
            ));
        }
        if let TcpCc::Dctcp { g } = self.cc
            && !(g > 0.0 && g <= 1.0)
        {
            return Err(("tcp.cc", format!("DCTCP gain {g} is outside (0, 1]")));
        }
        if self.dscp > 63 {
            return Err(("tcp.dscp", format!("{} is not a DSCP (0..=63)", self.dscp)));
        }
        if self.nic_weights.contains(&0) {
            return Err(("tcp.nic_weights", "an ETS weight of 0 starves its class".into()));
        }
        Ok(())
    }
}

/// One TCP connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpFlowSpec {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Application write rate, bits/s of payload; 0 = always backlogged.
    pub rate_bps: u64,
    /// When the application starts writing.
    pub start: Time,
    /// When it stops writing (`Time::NEVER` = never); data written before is
    /// still delivered.
    pub stop: Time,
    /// On/off source: the application writes only during the first `on` of every
    /// `on + off` period counted from `start` (needs `rate_bps` > 0). `None` =
    /// always on.
    pub on_off: Option<(Time, Time)>,
    /// TCP source port (the ECMP entropy).
    pub sport: u16,
    /// TCP destination port.
    pub dport: u16,
}

/// Counters of one flow (or summed over flows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpCounters {
    /// Segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Segments sent again (fast retransmit, partial ACK, after an RTO).
    pub retransmits: u64,
    /// Fast retransmits (third duplicate ACK).
    pub fast_retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Window reductions on ECE (DCTCP).
    pub ecn_reductions: u64,
    /// Payload bytes delivered in order to the receiving application.
    pub delivered_bytes: u64,
    /// Payload bytes the application wrote.
    pub offered_bytes: u64,
}

impl TcpCounters {
    fn add(&mut self, o: &TcpCounters) {
        self.segments_sent += o.segments_sent;
        self.retransmits += o.retransmits;
        self.fast_retransmits += o.fast_retransmits;
        self.timeouts += o.timeouts;
        self.ecn_reductions += o.ecn_reductions;
        self.delivered_bytes += o.delivered_bytes;
        self.offered_bytes += o.offered_bytes;
    }
}

/// A segment the sender hands to its NIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSeg {
    /// Flow index.
    pub flow: u32,
    /// Segment number.
    pub seq: u32,
    /// Payload bytes.
    pub payload: u32,
    /// Bytes on the wire.
    pub wire: u32,
}

#[derive(Clone, Debug)]
struct TcpFlow {
    spec: TcpFlowSpec,
    // sender
    snd_una: u32,
    snd_nxt: u32,
    snd_max: u32,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    recover: u32,
    in_recovery: bool,
    rtx_pending: Option<u32>,
    /// Recovery: the next segment to consider for retransmission.
    rtx_next: u32,
    /// Recovery: segments that may be sent (one per segment that left the network).
    credit: i64,
    srtt: u64,
    rttvar: u64,
    rto: Time,
    rto_at: Time,
    timed: Option<(u32, Time)>,
    // DCTCP
    alpha: f64,
    win_end: u32,
    win_acked: u32,
    win_marked: u32,
    cut_until: u32,
    // receiver
    rcv_nxt: u32,
    ooo: Vec<(u32, u32)>,
    c: TcpCounters,
}

/// The NIC's two-class ETS: RDMA and TCP share the port by bytes, in proportion
/// to their weights, while both have something to send (start-time fair
/// queueing on a virtual clock: a class that was idle restarts level with the
/// other, so it can neither bank credit nor be starved).
#[derive(Clone, Copy, Debug, Default)]
struct Ets {
    /// Virtual finish of each class, bytes × 1 000 / weight: `[tcp, rdma]`.
    vt: [u64; 2],
}

/// Every TCP flow of a RoCE world.
#[derive(Clone, Debug)]
pub struct TcpWorld {
    cfg: TcpConfig,
    /// Receive window in segments.
    rwnd: f64,
    flows: Vec<TcpFlow>,
    /// Sending flows per NIC index.
    by_nic: Vec<Vec<u32>>,
    rr: Vec<u32>,
    ets: Vec<Ets>,
    /// Drops of TCP data and ACKs, indexed like [`crate::roce::net::RoceDrop::ALL`].
    pub drops: [u64; crate::roce::net::RoceDrop::ALL.len()],
}

impl TcpWorld {
    /// No flows yet, for `nics` NICs.
    pub fn new(nics: usize) -> TcpWorld {
        TcpWorld {
            cfg: TcpConfig::default(),
            rwnd: (TcpConfig::default().rwnd_bytes / u64::from(TcpConfig::default().mss)) as f64,
            flows: Vec::new(),
            by_nic: vec![Vec::new(); nics],
            rr: vec![0; nics],
            ets: vec![Ets::default(); nics],
            drops: [0; crate::roce::net::RoceDrop::ALL.len()],
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Replace the configuration (before any flow is added).
    pub fn set_config(&mut self, cfg: TcpConfig) {
        debug_assert!(self.flows.is_empty());
        self.rwnd = (cfg.rwnd_bytes / u64::from(cfg.mss)).max(1) as f64;
        self.cfg = cfg;
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// No flows?
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Are segments ECN-capable (switches may mark them)?
    #[inline]
    pub fn ect(&self) -> bool {
        matches!(self.cfg.cc, TcpCc::Dctcp { .. })
    }

    /// Does NIC `nic` send TCP?
    #[inline]
    pub fn sends(&self, nic: u32) -> bool {
        // The first test keeps a world without TCP off the per-NIC list.
        !self.flows.is_empty() && !self.by_nic[nic as usize].is_empty()
    }

    /// Add a flow sent by NIC index `nic`; returns its index.
    pub fn add(&mut self, nic: u32, spec: TcpFlowSpec) -> u32 {
        let k = self.flows.len() as u32;
        let cwnd = f64::from(self.cfg.init_cwnd);
        self.flows.push(TcpFlow {
            spec,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            cwnd,
            ssthresh: f64::INFINITY,
            dupacks: 0,
            recover: 0,
            in_recovery: false,
            rtx_pending: None,
            rtx_next: 0,
            credit: 0,
            srtt: 0,
            rttvar: 0,
            rto: self.cfg.rto_init,
            rto_at: Time::NEVER,
            timed: None,
            alpha: 1.0,
            win_end: 0,
            win_acked: 0,
            win_marked: 0,
            cut_until: 0,
            rcv_nxt: 0,
            ooo: Vec::new(),
            c: TcpCounters::default(),
        });
        self.by_nic[nic as usize].push(k);
        k
    }

    /// Flow `k`'s specification.
    pub fn spec(&self, k: u32) -> &TcpFlowSpec {
        &self.flows[k as usize].spec
    }

    /// Flow `k`'s counters (`offered_bytes` as of `now`).
    pub fn counters(&self, k: u32, now: Time) -> TcpCounters {
        let f = &self.flows[k as usize];
        let mut c = f.c;
        c.offered_bytes = self.app_segs(f, now).min(u64::from(u32::MAX)) * u64::from(self.cfg.mss);
        if f.spec.rate_bps == 0 {
            // A backlogged application offers what TCP takes.
            c.offered_bytes = u64::from(f.snd_max) * u64::from(self.cfg.mss);
        }
        c
    }

    /// Counters summed over every flow.
    pub fn totals(&self, now: Time) -> TcpCounters {
        let mut t = TcpCounters::default();
        for k in 0..self.flows.len() {
            t.add(&self.counters(k as u32, now));
        }
        t
    }

    /// Current congestion window of flow `k`, segments.
    pub fn cwnd(&self, k: u32) -> f64 {
        self.flows[k as usize].cwnd
    }

    /// DCTCP's alpha of flow `k`.
    pub fn alpha(&self, k: u32) -> f64 {
        self.flows[k as usize].alpha
    }

    /// Segments the application has written by `now` (u64::MAX = backlogged).
    #[inline]
    fn app_segs(&self, f: &TcpFlow, now: Time) -> u64 {
        if now < f.spec.start {
            return 0;
        }
        if f.spec.rate_bps == 0 {
            return if now < f.spec.stop {
                u64::MAX
            } else {
                u64::from(f.snd_max)
            };
        }
        let t = now.min(f.spec.stop).0 - f.spec.start.0;
        let t = match f.spec.on_off {
            None => t,
            Some((on, off)) => (t / (on.0 + off.0)) * on.0 + (t % (on.0 + off.0)).min(on.0),
        };
        let bytes = u128::from(t) * u128::from(f.spec.rate_bps) / 8 / 1_000_000_000_000;
        (bytes / u128::from(self.cfg.mss)).min(u128::from(u32::MAX)) as u64
    }

    /// When the application will have written segment `seg` (NEVER if it stops first).
    fn app_time(&self, f: &TcpFlow, seg: u32) -> Time {
        if f.spec.rate_bps == 0 {
            return if f.spec.stop == Time::NEVER {
                f.spec.start
            } else {
                Time::NEVER
            };
        }
        let bytes = u128::from(seg + 1) * u128::from(self.cfg.mss);
        let mut ps = (bytes * 8 * 1_000_000_000_000).div_ceil(u128::from(f.spec.rate_bps));
        if let Some((on, off)) = f.spec.on_off {
            // `ps` of writing time: whole on-periods before, then the rest of one.
            let (on, period) = (u128::from(on.0), u128::from(on.0 + off.0));
            let k = ps.saturating_sub(1) / on;
            ps = k * period + (ps - k * on);
        }
        let t = Time(f.spec.start.0.saturating_add(ps.min(u128::from(u64::MAX)) as u64));
        if t > f.spec.stop { Time::NEVER } else { t }
    }

    /// Can flow `f` send a segment now? `Err(t)`: not before `t`.
    #[inline]
    fn ready(&self, f: &TcpFlow, now: Time) -> Result<(), Time> {
        if f.rtx_pending.is_some() {
            return Ok(());
        }
        if f.in_recovery {
            if f.credit <= 0 {
                return Err(Time::NEVER);
            }
            if next_hole(f).is_some() {
                return Ok(());
            }
        } else {
            let win = f.cwnd.floor().max(1.0).min(self.rwnd);
            if f64::from(f.snd_nxt - f.snd_una) >= win {
                return Err(Time::NEVER);
            }
        }
        let next = next_to_send(f);
        if next < f.snd_max {
            // Going back after an RTO: old data the receiver has not SACKed.
            return Ok(());
        }
        if f64::from(next - f.snd_una) >= self.rwnd {
            return Err(Time::NEVER);
        }
        if u64::from(next) < self.app_segs(f, now) {
            Ok(())
        } else {
            Err(self.app_time(f, next).max(now))
        }
    }

    /// Has NIC `nic` a segment it could send now?
    pub fn has_work(&self, nic: u32, now: Time) -> bool {
        self.by_nic[nic as usize]
            .iter()
            .any(|&k| self.ready(&self.flows[k as usize], now).is_ok())
    }

    /// Should the NIC offer TCP the port before RDMA (ETS)?
    #[inline]
    pub fn tcp_first(&self, nic: u32) -> bool {
        let e = &self.ets[nic as usize];
        e.vt[0] <= e.vt[1]
    }

    /// The NIC sent `bytes` of class `tcp` (else RDMA); `other_idle`: the other
    /// class had nothing to send.
    pub fn served(&mut self, nic: u32, tcp: bool, bytes: u32, other_idle: bool) {
        let w = self.cfg.nic_weights;
        let e = &mut self.ets[nic as usize];
        let (c, o) = if tcp { (0, 1) } else { (1, 0) };
        if other_idle {
            // The idle class may not bank credit: it restarts level with us.
            e.vt[o] = e.vt[o].max(e.vt[c]);
        }
        e.vt[c] += u64::from(bytes) * 1000 / u64::from(w[c]);
        // Keep the clocks small (only their difference matters).
        let m = e.vt[0].min(e.vt[1]);
        if m > 1 << 60 {
            e.vt[0] -= m;
            e.vt[1] -= m;
        }
    }

    /// The next segment NIC `nic` may send now, round robin over its flows, or
    /// the earliest time one could (NEVER: waiting for ACKs).
    pub fn pick(&mut self, nic: u32, now: Time) -> Result<TcpSeg, Time> {
        let n = self.by_nic[nic as usize].len();
        let mut wait = Time::NEVER;
        for i in 0..n {
            let j = (self.rr[nic as usize] as usize + i) % n;
            let k = self.by_nic[nic as usize][j];
            match self.ready(&self.flows[k as usize], now) {
                Ok(()) => {
                    self.rr[nic as usize] = ((j + 1) % n) as u32;
                    return Ok(self.emit(k, now));
                }
                Err(t) => wait = wait.min(t),
            }
        }
        Err(wait)
    }

    fn emit(&mut self, k: u32, now: Time) -> TcpSeg {
        let mss = self.cfg.mss;
        let f = &mut self.flows[k as usize];
        let seq = if let Some(s) = f.rtx_pending.take() {
            f.c.retransmits += 1;
            // Karn: no RTT sample across a retransmission.
            f.timed = None;
            s
        } else if let Some(h) = f.in_recovery.then(|| next_hole(f)).flatten() {
            f.credit -= 1;
            f.rtx_next = h + 1;
            f.c.retransmits += 1;
            f.timed = None;
            h
        } else {
            if f.in_recovery {
                f.credit -= 1;
            }
            let s = next_to_send(f);
            f.snd_nxt = s + 1;
            if s < f.snd_max {
                f.c.retransmits += 1;
                f.timed = None;
            } else {
                f.snd_max = s + 1;
                if f.timed.is_none() {
                    f.timed = Some((s, now));
                }
            }
            s
        };
        f.c.segments_sent += 1;
        if f.rto_at == Time::NEVER {
            f.rto_at = now + f.rto;
        }
        TcpSeg {
            flow: k,
            seq,
            payload: mss,
            wire: mss + TCP_HEADERS,
        }
    }

    /// The earliest retransmission deadline among NIC `nic`'s flows.
    pub fn next_deadline(&self, nic: u32) -> Time {
        self.by_nic[nic as usize]
            .iter()
            .map(|&k| self.flows[k as usize].rto_at)
            .min()
            .unwrap_or(Time::NEVER)
    }

    /// Fire the retransmission timers of NIC `nic` due at `now`; true if a
    /// flow now has a segment to send.
    pub fn poll(&mut self, nic: u32, now: Time) -> bool {
        let mut kick = false;
        for i in 0..self.by_nic[nic as usize].len() {
            let k = self.by_nic[nic as usize][i] as usize;
            let rto_max = self.cfg.rto_max;
            let f = &mut self.flows[k];
            if f.rto_at > now {
                continue;
            }
            if f.snd_una >= f.snd_max {
                f.rto_at = Time::NEVER;
                continue;
            }
            // RFC 5681 §3.1 / RFC 6298 §5: halve, restart from one segment, back off.
            let flight = f64::from(f.snd_max - f.snd_una);
            f.ssthresh = (flight / 2.0).max(2.0);
            f.cwnd = 1.0;
            f.snd_nxt = f.snd_una;
            f.rtx_pending = None;
            f.in_recovery = false;
            f.credit = 0;
            f.dupacks = 0;
            f.recover = f.snd_max;
            f.timed = None;
            f.c.timeouts += 1;
            f.rto = Time((f.rto.0.saturating_mul(2)).min(rto_max.0));
            f.rto_at = now + f.rto;
            kick = true;
        }
        kick
    }

    /// Receiver of flow `k` takes segment `seq` (`ce`: marked); returns the
    /// cumulative ACK to send and whether it echoes CE.
    pub fn on_data(&mut self, k: u32, seq: u32, ce: bool) -> (u32, bool) {
        let mss = u64::from(self.cfg.mss);
        let f = &mut self.flows[k as usize];
        if seq == f.rcv_nxt {
            f.rcv_nxt += 1;
            f.c.delivered_bytes += mss;
            // Holes filled: the ranges that now start at rcv_nxt follow.
            while let Some(&(a, b)) = f.ooo.first() {
                if a > f.rcv_nxt {
                    break;
                }
                if b > f.rcv_nxt {
                    f.c.delivered_bytes += u64::from(b - f.rcv_nxt) * mss;
                    f.rcv_nxt = b;
                }
                f.ooo.remove(0);
            }
        } else if seq > f.rcv_nxt {
            insert_range(&mut f.ooo, seq);
        }
        (f.rcv_nxt, ce)
    }

    /// Sender of flow `k` takes a cumulative ACK; true if it may send more.
    pub fn on_ack(&mut self, k: u32, ack: u32, ece: bool, now: Time) -> bool {
        let cfg_min = self.cfg.rto_min;
        let rto_max = self.cfg.rto_max;
        let cc = self.cfg.cc;
        let f = &mut self.flows[k as usize];
        if ack > f.snd_max {
            return false;
        }
        if let TcpCc::Dctcp { g } = cc {
            // RFC 8257 §3.3: the fraction of bytes acknowledged with ECE, per window.
            let acked = ack.saturating_sub(f.snd_una).max(1);
            f.win_acked += acked;
            if ece {
                f.win_marked += acked;
            }
            if ack > f.win_end {
                let frac = f64::from(f.win_marked) / f64::from(f.win_acked.max(1));
                f.alpha = (1.0 - g) * f.alpha + g * frac;
                f.win_acked = 0;
                f.win_marked = 0;
                f.win_end = f.snd_nxt;
            }
            if ece && ack >= f.cut_until && !f.in_recovery {
                f.cwnd = (f.cwnd * (1.0 - f.alpha / 2.0)).max(1.0);
                f.ssthresh = f.cwnd;
                f.cut_until = f.snd_max;
                f.c.ecn_reductions += 1;
            }
        }
        if ack > f.snd_una {
            let acked = f64::from(ack - f.snd_una);
            f.snd_una = ack;
            if f.snd_nxt < ack {
                f.snd_nxt = ack;
            }
            if f.rtx_pending.is_some_and(|s| s < ack) {
                f.rtx_pending = None;
            }
            if let Some((s, t)) = f.timed
                && s < ack
            {
                // RFC 6298 §2, with Linux's RTO = srtt + max(4·rttvar, rto_min)
                // (`tcp_set_rto`, rttvar floored at rto_min).
                let r = (now - t).0;
                if f.srtt == 0 {
                    f.srtt = r;
                    f.rttvar = r / 2;
                } else {
                    let d = f.srtt.abs_diff(r);
                    f.rttvar = (3 * f.rttvar + d) / 4;
                    f.srtt = (7 * f.srtt + r) / 8;
                }
                f.rto = Time(f.srtt + (4 * f.rttvar).max(cfg_min.0)).min(rto_max);
                f.timed = None;
            }
            if f.in_recovery {
                if ack >= f.recover {
                    // Every hole of the loss window is filled: recovery ends at ssthresh.
                    f.in_recovery = false;
                    f.cwnd = f.ssthresh;
                } else {
                    // A retransmission arrived: one more may go.
                    f.credit += 1;
                    f.rtx_next = f.rtx_next.max(ack);
                }
            } else if f.cwnd < f.ssthresh {
                f.cwnd += acked;
            } else {
                f.cwnd += acked / f.cwnd;
            }
            f.dupacks = 0;
            f.rto_at = if f.snd_una < f.snd_max {
                now + f.rto
            } else {
                Time::NEVER
            };
            return true;
        }
        if ack == f.snd_una && f.snd_una < f.snd_max {
            f.dupacks += 1;
            if f.dupacks == 3 && !f.in_recovery && ack >= f.recover {
                // Fast retransmit now; then send when the flight (three segments
                // have left) has fallen to the halved window.
                let flight = f64::from(f.snd_max - f.snd_una);
                f.ssthresh = (flight / 2.0).max(2.0);
                f.cwnd = f.ssthresh;
                f.credit = (f.ssthresh - (flight - 3.0)).floor() as i64;
                f.recover = f.snd_max;
                f.in_recovery = true;
                f.rtx_pending = Some(f.snd_una);
                f.rtx_next = f.snd_una + 1;
                f.c.fast_retransmits += 1;
                return true;
            }
            if f.in_recovery {
                f.credit += 1;
                return f.credit > 0;
            }
        }
        false
    }

    /// Count a dropped TCP packet (reason index as [`crate::roce::net::RoceDrop::ALL`]).
    pub fn on_drop(&mut self, reason: usize) {
        self.drops[reason] += 1;
    }

    /// ECMP key parts of flow `k`: (source port, destination port).
    #[inline]
    pub fn ports(&self, k: u32) -> (u16, u16) {
        let s = &self.flows[k as usize].spec;
        (s.sport, s.dport)
    }
}

/// The segment `snd_nxt` stands for: after an RTO sent it back to `snd_una`, the
/// segments the receiver already holds (its SACK ranges) are skipped, as Linux's
/// SACK scoreboard does.
#[inline]
fn next_to_send(f: &TcpFlow) -> u32 {
    let mut pos = f.snd_nxt.max(f.rcv_nxt);
    if pos >= f.snd_max {
        return f.snd_nxt.max(pos.min(f.snd_max));
    }
    let r = &f.ooo;
    let mut i = r.partition_point(|&(_, b)| b <= pos);
    while i < r.len() && r[i].0 <= pos {
        pos = r[i].1;
        i += 1;
    }
    pos.min(f.snd_max)
}

/// The first segment at or after `rtx_next`, below `recover`, that the receiver
/// has not got (its SACK ranges), if any: RFC 6675 `NextSeg()` rule 1, where a
/// segment is deemed lost once anything above it was received.
#[inline]
fn next_hole(f: &TcpFlow) -> Option<u32> {
    let mut pos = f.rtx_next.max(f.snd_una).max(f.rcv_nxt);
    let r = &f.ooo;
    let mut i = r.partition_point(|&(_, b)| b <= pos);
    while i < r.len() {
        let (a, b) = r[i];
        if a > pos {
            return (pos < f.recover).then_some(pos);
        }
        pos = b;
        i += 1;
    }
    // Above the highest SACKed segment nothing is known lost.
    None
}

/// Add segment `s` to the sorted, disjoint half-open ranges.
fn insert_range(r: &mut Vec<(u32, u32)>, s: u32) {
    let i = r.partition_point(|&(_, b)| b < s);
    if i < r.len() && r[i].0 <= s && s < r[i].1 {
        return;
    }
    if i < r.len() && r[i].1 == s {
        r[i].1 = s + 1;
        if i + 1 < r.len() && r[i + 1].0 == s + 1 {
            r[i].1 = r[i + 1].1;
            r.remove(i + 1);
        }
    } else if i < r.len() && r[i].0 == s + 1 {
        r[i].0 = s;
    } else {
        r.insert(i, (s, s + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TcpFlowSpec {
        TcpFlowSpec {
            src: NodeId(0),
            dst: NodeId(1),
            rate_bps: 0,
            start: Time::ZERO,
            stop: Time::NEVER,
            on_off: None,
            sport: 40000,
            dport: 5201,
        }
    }

    #[test]
    fn ranges_merge_and_fill() {
        let mut r = Vec::new();
        for s in [5, 7, 6, 3, 9, 8] {
            insert_range(&mut r, s);
        }
        assert_eq!(r, vec![(3, 4), (5, 10)]);
        insert_range(&mut r, 4);
        assert_eq!(r, vec![(3, 10)]);
        insert_range(&mut r, 6);
        assert_eq!(r, vec![(3, 10)]);
    }

    #[test]
    fn receiver_acks_cumulatively_across_a_hole() {
        let mut w = TcpWorld::new(2);
        let k = w.add(0, spec());
        assert_eq!(w.on_data(k, 0, false), (1, false));
        assert_eq!(w.on_data(k, 2, true), (1, true));
        assert_eq!(w.on_data(k, 3, false), (1, false));
        assert_eq!(w.on_data(k, 1, false), (4, false));
        assert_eq!(w.counters(k, Time::ZERO).delivered_bytes, 4 * 8948);
    }

    #[test]
    fn three_dup_acks_retransmit_and_halve() {
        let mut w = TcpWorld::new(1);
        let k = w.add(0, spec());
        let now = Time::us(1);
        // Initial window: 10 segments, then the window is full.
        for s in 0..10 {
            assert_eq!(w.pick(0, now).unwrap().seq, s);
        }
        assert_eq!(w.pick(0, now), Err(Time::NEVER));
        assert!(w.on_ack(k, 1, false, Time::us(10)));
        // Slow start: cwnd 11 → two more segments.
        assert_eq!(w.pick(0, now).unwrap().seq, 10);
        assert_eq!(w.pick(0, now).unwrap().seq, 11);
        for _ in 0..2 {
            assert!(!w.on_ack(k, 1, false, Time::us(11)));
        }
        assert!(w.on_ack(k, 1, false, Time::us(11)));
        assert_eq!(w.cwnd(k), 11.0 / 2.0);
        let r = w.pick(0, now).unwrap();
        assert_eq!(r.seq, 1);
        let c = w.counters(k, now);
        assert_eq!((c.retransmits, c.fast_retransmits, c.timeouts), (1, 1, 0));
        // Full ACK ends recovery at ssthresh.
        assert!(w.on_ack(k, 12, false, Time::us(20)));
        assert_eq!(w.cwnd(k), 5.5);
    }

    #[test]
    fn rto_goes_back_to_one_segment_and_backs_off() {
        let mut w = TcpWorld::new(1);
        let k = w.add(0, spec());
        for _ in 0..10 {
            w.pick(0, Time::ZERO).unwrap();
        }
        assert_eq!(w.next_deadline(0), Time::ms(1));
        assert!(w.poll(0, Time::ms(1)));
        assert_eq!(w.cwnd(k), 1.0);
        assert_eq!(w.pick(0, Time::ms(1)).unwrap().seq, 0);
        assert_eq!(w.pick(0, Time::ms(1)), Err(Time::NEVER));
        assert_eq!(w.next_deadline(0), Time::ms(3));
        let c = w.counters(k, Time::ms(1));
        assert_eq!((c.timeouts, c.retransmits), (1, 1));
    }

    #[test]
    fn after_an_rto_segments_the_receiver_holds_are_not_sent_again() {
        let mut w = TcpWorld::new(1);
        let k = w.add(0, spec());
        for _ in 0..10 {
            w.pick(0, Time::ZERO).unwrap();
        }
        // 0, 1 and 2 are lost; 3..10 arrive.
        for s in 3..10 {
            assert_eq!(w.on_data(k, s, false), (0, false));
        }
        assert!(w.poll(0, Time::ms(1)));
        assert_eq!(w.pick(0, Time::ms(1)).unwrap().seq, 0);
        assert_eq!(w.on_data(k, 0, false).0, 1);
        w.on_ack(k, 1, false, Time::ms(2));
        assert_eq!(w.pick(0, Time::ms(2)).unwrap().seq, 1);
        assert_eq!(w.on_data(k, 1, false).0, 2);
        w.on_ack(k, 2, false, Time::ms(2));
        assert_eq!(w.pick(0, Time::ms(2)).unwrap().seq, 2);
        // 3..10 are SACKed: the next segment is new data.
        assert_eq!(w.pick(0, Time::ms(2)).unwrap().seq, 10);
        assert_eq!(w.counters(k, Time::ms(2)).retransmits, 3);
    }

    #[test]
    fn rate_limited_application_paces_segments() {
        let mut w = TcpWorld::new(1);
        let mut s = spec();
        s.rate_bps = 8948 * 8 * 1_000_000; // one segment per µs
        w.add(0, s);
        assert_eq!(w.pick(0, Time::ZERO), Err(Time::us(1)));
        assert_eq!(w.pick(0, Time::us(1)).unwrap().seq, 0);
        assert_eq!(w.pick(0, Time::us(1)), Err(Time::us(2)));
        assert_eq!(w.pick(0, Time::ns(3500)).unwrap().seq, 1);
        assert_eq!(w.pick(0, Time::ns(3500)).unwrap().seq, 2);
        assert_eq!(w.pick(0, Time::ns(3500)), Err(Time::us(4)));
    }

    #[test]
    fn an_on_off_source_writes_only_while_on() {
        let mut w = TcpWorld::new(1);
        let mut s = spec();
        s.rate_bps = 8948 * 8 * 1_000_000; // one segment per µs while on
        s.on_off = Some((Time::us(2), Time::us(3)));
        let k = w.add(0, s);
        assert_eq!(w.pick(0, Time::us(1)).unwrap().seq, 0);
        assert_eq!(w.pick(0, Time::us(2)).unwrap().seq, 1);
        // Off from 2 to 5 µs: segment 2 is written 1 µs into the next on-period.
        assert_eq!(w.pick(0, Time::us(4)), Err(Time::us(6)));
        assert_eq!(w.pick(0, Time::us(6)).unwrap().seq, 2);
        assert_eq!(w.pick(0, Time::us(7)).unwrap().seq, 3);
        assert_eq!(w.pick(0, Time::us(7)), Err(Time::us(11)));
        assert_eq!(w.counters(k, Time::us(100)).offered_bytes, 40 * 8948);
    }

    #[test]
    fn dctcp_cuts_by_alpha_once_per_window() {
        let mut w = TcpWorld::new(1);
        w.set_config(TcpConfig {
            cc: TcpCc::Dctcp { g: 1.0 / 16.0 },
            ..TcpConfig::default()
        });
        let k = w.add(0, spec());
        for _ in 0..10 {
            w.pick(0, Time::ZERO).unwrap();
        }
        w.on_ack(k, 1, true, Time::us(5));
        let after = w.cwnd(k);
        // alpha starts at 1 (Linux dctcp_alpha_on_init): cut by half once.
        assert!(after < 6.0, "{after}");
        w.on_ack(k, 2, true, Time::us(6));
        assert!(w.cwnd(k) >= after, "second ECE in the same window must not cut again");
        assert_eq!(w.counters(k, Time::ZERO).ecn_reductions, 1);
    }

    #[test]
    fn ets_shares_by_weight_and_idle_class_banks_nothing() {
        let mut w = TcpWorld::new(1);
        w.set_config(TcpConfig {
            nic_weights: [1, 3],
            ..TcpConfig::default()
        });
        let (mut tcp, mut rdma) = (0u64, 0u64);
        for _ in 0..4000 {
            if w.tcp_first(0) {
                w.served(0, true, 1000, false);
                tcp += 1000;
            } else {
                w.served(0, false, 1000, false);
                rdma += 1000;
            }
        }
        let share = tcp as f64 / (tcp + rdma) as f64;
        assert!((share - 0.25).abs() < 0.01, "{share}");
        // RDMA alone for a long time, then TCP returns: it may not take the port
        // for more than one packet's worth before RDMA gets a turn.
        for _ in 0..1000 {
            w.served(0, false, 1000, true);
        }
        assert!(w.tcp_first(0));
        w.served(0, true, 1000, false);
        assert!(!w.tcp_first(0));
    }
}

/// TCP inside the packet-level RoCE world.
#[cfg(test)]
mod sim_tests {
    use super::*;
    use crate::roce::fixtures::{flow, star};
    use crate::roce::net::{CongestionControl, RoceConfig, RoceDrop, RoceSim};

    fn tcp(src: NodeId, dst: NodeId, sport: u16) -> TcpFlowSpec {
        TcpFlowSpec {
            src,
            dst,
            rate_bps: 0,
            start: Time::ZERO,
            stop: Time::NEVER,
            on_off: None,
            sport,
            dport: 5201,
        }
    }

    /// PFC on priority 3, no ECN, no DCQCN: RDMA is greedy and lossless.
    fn pfc_only() -> RoceConfig {
        RoceConfig {
            nic: crate::roce::net::NicConfig {
                cc: CongestionControl::None,
                ..Default::default()
            },
            switch: crate::roce::net::SwitchConfig {
                ecn: false,
                ..Default::default()
            },
            ..RoceConfig::default()
        }
    }

    /// Payload bits/s delivered to TCP flow `k` between `a` and `b`.
    fn goodput(sim: &mut RoceSim, k: u32, a: Time, b: Time) -> f64 {
        sim.run(a);
        let x = sim.tcp().counters(k, a).delivered_bytes;
        sim.run(b);
        let y = sim.tcp().counters(k, b).delivered_bytes;
        (y - x) as f64 * 8.0 / (b - a).as_secs_f64()
    }

    #[test]
    fn a_tcp_flow_alone_reaches_near_line_rate() {
        let (f, _, h) = star(2);
        let mut sim = RoceSim::new(&f, pfc_only(), &[]).unwrap();
        sim.drive();
        let k = sim.add_tcp_flow(tcp(h[0], h[1], 40000)).unwrap();
        let bps = goodput(&mut sim, k, Time::ms(1), Time::ms(4));
        // 100G carries 8948 payload bytes per 9018 on the wire: 99.2 Gb/s at most.
        let bound = 100e9 * 8948.0 / 9018.0;
        assert!(bps > 0.97 * bound && bps <= bound * 1.001, "{bps:.3e} of {bound:.3e}");
        assert_eq!(sim.ledger.total_dropped(), 0);
        assert!(sim.ledger_balances());
        let c = sim.tcp().counters(k, sim.now());
        assert_eq!((c.retransmits, c.timeouts), (0, 0));
    }

    #[test]
    fn tcp_beside_lossless_rdma_takes_its_dwrr_share() {
        let (f, _, h) = star(3);
        // A greedy RDMA flow and a backlogged TCP flow into h2's port: DWRR 15 : 14.
        let mut sim = RoceSim::new(&f, pfc_only(), &[flow(h[0], h[2], 1 << 34, 1, Time::ZERO, 10000)]).unwrap();
        sim.drive();
        let k = sim.add_tcp_flow(tcp(h[1], h[2], 40000)).unwrap();
        let rx0 = sim.tx_bytes(h[2], 1);
        let bps = goodput(&mut sim, k, Time::ms(2), Time::ms(8));
        let share = bps / 100e9;
        let fair = 14.0 / 29.0;
        assert!(
            share > fair * 0.9 && share < fair * 1.05,
            "TCP got {share:.3} of the link, DWRR share {fair:.3}"
        );
        let rdma = sim.flow_delivered(0) as f64 * 8.0 / sim.now().as_secs_f64() / 100e9;
        assert!(rdma > 0.45, "RDMA got {rdma:.3}");
        assert_eq!(sim.ledger.lossless_faults(), 0);
        assert_eq!(sim.ledger.dropped_lossless.iter().sum::<u64>(), 0);
        assert!(sim.ledger_balances());
        let _ = rx0;
    }

    /// Four TCP senders and two lossless RDMA senders into one host: the lossy
    /// class overflows, TCP retransmits and still delivers; RDMA drops nothing.
    /// `ecn`: the tuned fabric (ECN marking and DCQCN), else PFC only.
    fn incast(cc: TcpCc, ecn: bool, seed: u64) -> RoceSim {
        let (f, _, h) = star(7);
        let base = if ecn {
            RoceConfig {
                nic: crate::roce::net::NicConfig {
                    cc: CongestionControl::Dcqcn(crate::roce::dcqcn::Profile::HpccNs3.params(100_000_000_000)),
                    ..Default::default()
                },
                ..RoceConfig::default()
            }
        } else {
            pfc_only()
        };
        let cfg = RoceConfig {
            switch: crate::roce::net::SwitchConfig {
                buffer_bytes: 4 << 20,
                ..base.switch
            },
            seed,
            ..base
        };
        let rdma = [
            flow(h[0], h[6], 1 << 34, 1, Time::ZERO, 10000),
            flow(h[1], h[6], 1 << 34, 1, Time::ZERO, 10002),
        ];
        let mut sim = RoceSim::new(&f, cfg, &rdma).unwrap();
        sim.drive();
        sim.set_tcp_config(TcpConfig {
            cc,
            ..TcpConfig::default()
        })
        .unwrap();
        for i in 2..6 {
            sim.add_tcp_flow(tcp(h[i], h[6], 40000 + i as u16)).unwrap();
        }
        sim.run(Time::ms(10));
        sim
    }

    #[test]
    fn lossy_class_drops_cause_retransmissions_while_rdma_loses_nothing() {
        let sim = incast(TcpCc::NewReno, false, 1);
        let t = sim.tcp().totals(sim.now());
        let lossy = RoceDrop::ALL
            .iter()
            .position(|r| *r == RoceDrop::LossyOverThreshold)
            .unwrap();
        assert!(sim.tcp().drops[lossy] > 0, "no TCP drops: {t:?}");
        assert_eq!(sim.tcp().drops.iter().sum::<u64>(), sim.ledger.total_dropped());
        assert!(t.retransmits > 0 && t.fast_retransmits > 0, "{t:?}");
        assert!(
            t.retransmits >= sim.tcp().drops[lossy] / 2,
            "{t:?} {:?}",
            sim.tcp().drops
        );
        // TCP keeps about its share of the 100G port despite the losses.
        let tcp_share = t.delivered_bytes as f64 * 8.0 / 0.01 / 100e9;
        assert!(tcp_share > 0.3 && tcp_share < 0.5, "{tcp_share:.3}");
        assert_eq!(sim.ledger.dropped_lossless.iter().sum::<u64>(), 0);
        assert!(sim.flow_delivered(0) > 0 && sim.flow_delivered(1) > 0);
        assert!(sim.ledger_balances());
    }

    #[test]
    fn dctcp_on_an_ecn_marked_class_reacts_to_marks_and_drops_less() {
        let reno = incast(TcpCc::NewReno, true, 1);
        let dctcp = incast(TcpCc::Dctcp { g: 1.0 / 16.0 }, true, 1);
        let (r, d) = (reno.tcp().totals(reno.now()), dctcp.tcp().totals(dctcp.now()));
        assert_eq!(r.ecn_reductions, 0);
        assert!(d.ecn_reductions > 0, "{d:?}");
        let (rd, dd) = (
            reno.tcp().drops.iter().sum::<u64>(),
            dctcp.tcp().drops.iter().sum::<u64>(),
        );
        assert!(dd < rd, "DCTCP dropped {dd}, NewReno {rd}");
        assert!(d.delivered_bytes > r.delivered_bytes / 2, "{d:?} vs {r:?}");
    }

    #[test]
    fn same_seed_same_run() {
        let a = incast(TcpCc::NewReno, true, 7);
        let b = incast(TcpCc::NewReno, true, 7);
        assert_eq!(a.trace_hash(), b.trace_hash());
        assert_eq!(a.tcp().totals(a.now()), b.tcp().totals(b.now()));
        assert_eq!(a.ledger, b.ledger);
    }

    #[test]
    fn bad_flows_and_settings_are_refused() {
        let (f, sw, h) = star(2);
        let mut sim = RoceSim::new(&f, pfc_only(), &[]).unwrap();
        assert!(sim.add_tcp_flow(tcp(h[0], sw, 1)).is_err());
        assert!(sim.add_tcp_flow(tcp(h[0], h[0], 1)).is_err());
        let on_off_backlogged = TcpFlowSpec {
            on_off: Some((Time::us(1), Time::us(1))),
            ..tcp(h[0], h[1], 1)
        };
        let e = sim.add_tcp_flow(on_off_backlogged).unwrap_err().to_string();
        assert!(e.contains("on/off"), "{e}");
        let bad = TcpConfig {
            rto_min: Time::ZERO,
            ..TcpConfig::default()
        };
        let e = sim.set_tcp_config(bad).unwrap_err().to_string();
        assert!(e.contains("tcp.rto_min"), "{e}");
        sim.add_tcp_flow(tcp(h[0], h[1], 1)).unwrap();
        assert!(sim.set_tcp_config(TcpConfig::default()).is_err());
    }
}
