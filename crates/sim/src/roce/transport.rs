//! The RC transport of a RoCE NIC when the network may lose packets, and the
//! NIC's own flow-control state.
//!
//! * [`Requester`]: messages are cut into MTU packets with consecutive 24-bit
//!   PSNs; cumulative ACKs retire them; a NAK (sequence error) or the retransmit
//!   timer sends the requester back. [`Recovery::GoBackN`] resends from the first
//!   PSN the responder lacks; [`Recovery::GoBack0`] resends the whole message
//!   that holds it, as the NIC in Microsoft's deployment did (Guo et al.,
//!   SIGCOMM'16 §5: with a 1/256 drop rate and 4 MB messages it never finished a
//!   message: a livelock).
//! * [`Responder`]: accepts the expected PSN only; a duplicate is re-ACKed and
//!   discarded; a PSN past the expected one is dropped and answered with one NAK
//!   per gap (IBA vol. 1 §9.7.5.2: after a NAK-sequence-error the responder stays
//!   silent until the expected PSN arrives), then the responder waits. In
//!   go-back-0 the responder also throws away the partial message and expects
//!   it again from its first packet, so a message gets through only if all of
//!   its packets do in one attempt.
//! * [`NicRx`]: the NIC's receive buffer for the lossless priority: it asks for
//!   PFC XOFF above `xoff` bytes and XON below `xon`; a faulty NIC asks for XOFF
//!   forever (the pause storm of Guo et al. §4.3); the mlx5 "PFC stall
//!   prevention" watchdog stops pause generation once the receive pipeline has
//!   been stalled for its timeout (`pfc-prevention-tout`: 8 s default, `auto` =
//!   100 ms; shared RoCE reference §2.4).

use std::collections::VecDeque;

use wire::Psn;

use crate::engine::Time;

/// How the requester recovers from a loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// Resend from the first missing PSN.
    GoBackN,
    /// Resend the whole message holding the first missing PSN.
    GoBack0,
}

/// Requester parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequesterConfig {
    /// Payload bytes per packet (path MTU).
    pub mtu: u32,
    /// Recovery mode.
    pub recovery: Recovery,
    /// Retransmit timeout. IBA encodes the local ACK timeout as 4.096 µs ·
    /// 2^timeout (vol. 1 §9.7.6.1.3); NCCL's default `NCCL_IB_TIMEOUT` 20 gives
    /// about 4.3 s, far longer than a simulated run, so scenarios set their own.
    pub rto: Time,
}

/// One packet the requester wants to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPacket {
    /// Its PSN.
    pub psn: Psn,
    /// Payload bytes.
    pub payload: u32,
    /// Caller's id of the message it belongs to.
    pub msg: u64,
    /// First packet of the message.
    pub first: bool,
    /// Last packet of the message (carries AckReq).
    pub last: bool,
    /// Sent before (a retransmission).
    pub retransmit: bool,
}

/// A completed message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// Caller's id.
    pub msg: u64,
    /// Bytes.
    pub bytes: u64,
    /// When it was posted.
    pub posted: Time,
    /// When the ACK covering its last packet arrived.
    pub done: Time,
}

/// Requester counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RequesterCounters {
    /// Packets sent, first transmissions.
    pub sent: u64,
    /// Packets sent again.
    pub retransmitted: u64,
    /// NAKs received.
    pub naks: u64,
    /// Retransmit timeouts.
    pub timeouts: u64,
    /// Messages completed.
    pub completed: u64,
    /// Bytes of completed messages.
    pub completed_bytes: u64,
}

#[derive(Clone, Copy, Debug)]
struct Msg {
    id: u64,
    first: Psn,
    npkts: u32,
    bytes: u64,
    posted: Time,
}

/// The requester side of one RC QP. O(1) per packet except finding the message
/// of a PSN after a go-back (a scan of the outstanding messages).
#[derive(Clone, Debug)]
pub struct Requester {
    cfg: RequesterConfig,
    msgs: VecDeque<Msg>,
    /// PSN the next new message starts at.
    tail: Psn,
    /// Oldest unacknowledged PSN.
    una: Psn,
    /// Next PSN to send.
    nxt: Psn,
    /// One past the highest PSN ever sent.
    high: Psn,
    rto_due: Time,
    /// Counters.
    pub counters: RequesterCounters,
}

impl Requester {
    /// A requester starting at `psn`.
    pub fn new(cfg: RequesterConfig, psn: Psn) -> Requester {
        Requester {
            cfg,
            msgs: VecDeque::new(),
            tail: psn,
            una: psn,
            nxt: psn,
            high: psn,
            rto_due: Time::NEVER,
            counters: RequesterCounters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RequesterConfig {
        &self.cfg
    }

    /// Queue a message of `bytes` (at least one packet, even when empty).
    pub fn post(&mut self, msg: u64, bytes: u64, now: Time) {
        let npkts = bytes.div_ceil(u64::from(self.cfg.mtu)).max(1) as u32;
        self.msgs.push_back(Msg {
            id: msg,
            first: self.tail,
            npkts,
            bytes,
            posted: now,
        });
        self.tail = self.tail.add(npkts);
    }

    /// Is there a packet to send?
    pub fn has_data(&self) -> bool {
        self.nxt != self.tail
    }

    /// Is anything unacknowledged?
    pub fn outstanding(&self) -> bool {
        self.una != self.tail
    }

    /// Oldest unacknowledged PSN and next PSN to send.
    pub fn window(&self) -> (Psn, Psn) {
        (self.una, self.nxt)
    }

    fn msg_of(&self, psn: Psn) -> Option<&Msg> {
        self.msgs.iter().find(|m| {
            let d = m.first.distance_to(psn);
            d >= 0 && (d as u32) < m.npkts
        })
    }

    /// Build the next packet and advance (the caller puts it on the wire now).
    pub fn next_packet(&mut self, now: Time) -> Option<TxPacket> {
        if !self.has_data() {
            return None;
        }
        let m = *self.msg_of(self.nxt)?;
        let k = m.first.distance_to(self.nxt) as u32;
        let mtu = u64::from(self.cfg.mtu);
        let payload = if k + 1 == m.npkts {
            (m.bytes - u64::from(k) * mtu) as u32
        } else {
            self.cfg.mtu
        };
        let retransmit = self.nxt.distance_to(self.high) > 0;
        let p = TxPacket {
            psn: self.nxt,
            payload,
            msg: m.id,
            first: k == 0,
            last: k + 1 == m.npkts,
            retransmit,
        };
        self.nxt = self.nxt.next();
        if retransmit {
            self.counters.retransmitted += 1;
        } else {
            self.counters.sent += 1;
            self.high = self.nxt;
        }
        if self.rto_due == Time::NEVER {
            self.rto_due = now + self.cfg.rto;
        }
        Some(p)
    }

    /// A cumulative ACK for everything up to and including `psn` arrived.
    pub fn on_ack(&mut self, now: Time, psn: Psn, done: &mut Vec<Completion>) {
        let upto = psn.next();
        if self.una.distance_to(upto) <= 0 || upto.distance_to(self.high) < 0 {
            return; // stale or bogus
        }
        self.una = upto;
        if self.nxt.distance_to(self.una) > 0 {
            self.nxt = self.una;
        }
        while let Some(m) = self.msgs.front() {
            let last = m.first.add(m.npkts - 1);
            if last.distance_to(self.una) > 0 {
                done.push(Completion {
                    msg: m.id,
                    bytes: m.bytes,
                    posted: m.posted,
                    done: now,
                });
                self.counters.completed += 1;
                self.counters.completed_bytes += m.bytes;
                self.msgs.pop_front();
            } else {
                break;
            }
        }
        self.rto_due = if self.outstanding() && self.una != self.nxt {
            now + self.cfg.rto
        } else {
            Time::NEVER
        };
    }

    fn go_back(&mut self, to: Psn) {
        self.nxt = match self.cfg.recovery {
            Recovery::GoBackN => to,
            Recovery::GoBack0 => self.msg_of(to).map_or(to, |m| m.first),
        };
    }

    /// A NAK (sequence error) saying the responder expects `expected`: everything
    /// before it is acknowledged.
    pub fn on_nak(&mut self, now: Time, expected: Psn, done: &mut Vec<Completion>) {
        self.counters.naks += 1;
        if self.una.distance_to(expected) > 0 {
            self.on_ack(now, expected.sub(1), done);
        }
        self.go_back(expected);
        self.rto_due = now + self.cfg.rto;
    }

    /// When the retransmit timer fires.
    pub fn next_deadline(&self) -> Time {
        self.rto_due
    }

    /// Fire the retransmit timer if due: go back to the oldest unacknowledged PSN.
    /// Returns true on a timeout.
    pub fn poll(&mut self, now: Time) -> bool {
        if self.rto_due > now {
            return false;
        }
        if !self.outstanding() {
            self.rto_due = Time::NEVER;
            return false;
        }
        self.counters.timeouts += 1;
        self.go_back(self.una);
        self.rto_due = now + self.cfg.rto;
        true
    }
}

/// What the responder does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// In order: deliver; send this ACK now if `Some`.
    Accept { ack: Option<Psn> },
    /// Already received: discard, re-ACK the last in-order PSN.
    Duplicate { ack: Psn },
    /// Past a gap: discard; send a NAK naming the expected PSN if `Some`.
    OutOfOrder { nak: Option<Psn> },
}

/// Responder counters (`out_of_sequence`, duplicates, NAKs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResponderCounters {
    /// Packets delivered in order.
    pub delivered: u64,
    /// Payload bytes delivered in order.
    pub delivered_bytes: u64,
    /// Duplicates discarded.
    pub duplicates: u64,
    /// Packets discarded past a gap.
    pub out_of_sequence: u64,
    /// NAKs sent.
    pub naks: u64,
}

/// The responder side of one RC QP.
#[derive(Clone, Debug)]
pub struct Responder {
    expected: Psn,
    msg_start: Psn,
    recovery: Recovery,
    nak_sent: bool,
    /// ACK every this many in-order packets (and always on a message's last).
    pub ack_every: u32,
    since_ack: u32,
    /// Counters.
    pub counters: ResponderCounters,
}

impl Responder {
    /// A responder expecting `psn` first.
    pub fn new(psn: Psn, ack_every: u32, recovery: Recovery) -> Responder {
        Responder {
            expected: psn,
            msg_start: psn,
            recovery,
            nak_sent: false,
            ack_every: ack_every.max(1),
            since_ack: 0,
            counters: ResponderCounters::default(),
        }
    }

    /// The next PSN it expects.
    pub fn expected(&self) -> Psn {
        self.expected
    }

    /// A request packet arrived (`first`: it opens a message; `ack_req`: BTH
    /// AckReq, set on a message's last packet).
    pub fn on_packet(&mut self, psn: Psn, payload: u32, first: bool, ack_req: bool) -> RxVerdict {
        let d = self.expected.distance_to(psn);
        if d == 0 {
            if first {
                self.msg_start = psn;
            }
            self.expected = self.expected.next();
            self.nak_sent = false;
            self.counters.delivered += 1;
            self.counters.delivered_bytes += u64::from(payload);
            self.since_ack += 1;
            if ack_req || self.since_ack >= self.ack_every {
                self.since_ack = 0;
                return RxVerdict::Accept { ack: Some(psn) };
            }
            RxVerdict::Accept { ack: None }
        } else if d < 0 {
            self.counters.duplicates += 1;
            RxVerdict::Duplicate {
                ack: self.expected.sub(1),
            }
        } else {
            self.counters.out_of_sequence += 1;
            if self.nak_sent {
                RxVerdict::OutOfOrder { nak: None }
            } else {
                self.nak_sent = true;
                if self.recovery == Recovery::GoBack0 {
                    // Discard the partial message: it must come again whole.
                    self.expected = self.msg_start;
                }
                self.counters.naks += 1;
                RxVerdict::OutOfOrder {
                    nak: Some(self.expected),
                }
            }
        }
    }
}

/// The NIC's receive buffer on its lossless priority, and its pause behaviour.
#[derive(Clone, Copy, Debug)]
pub struct NicRx {
    /// Buffer bytes.
    pub size: u64,
    /// Ask for XOFF at or above this many bytes (mlx5: buffer − xoff headroom).
    pub xoff_at: u64,
    /// Ask for XON at or below this many bytes.
    pub xon_at: u64,
    /// Faulty NIC: its receive pipeline is stuck and it asks for XOFF forever.
    pub faulty: bool,
    /// PFC stall-prevention timeout (`None`: off).
    pub stall_prevention: Option<Time>,
    used: u64,
    pausing: bool,
    stalled_since: Option<Time>,
    disabled: bool,
    /// Bytes dropped because the buffer was full (`rx_prio<N>_buf_discard`).
    pub discards: u64,
    /// Times the stall prevention stopped pause generation
    /// (`tx_pause_storm_error_events`).
    pub storm_errors: u64,
}

impl NicRx {
    /// A receive buffer of `size` with thresholds.
    pub fn new(size: u64, xoff_at: u64, xon_at: u64) -> NicRx {
        NicRx {
            size,
            xoff_at,
            xon_at,
            faulty: false,
            stall_prevention: None,
            used: 0,
            pausing: false,
            stalled_since: None,
            disabled: false,
            discards: 0,
            storm_errors: 0,
        }
    }

    /// Bytes held.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Should the NIC be sending XOFF now?
    pub fn wants_pause(&self) -> bool {
        self.pausing && !self.disabled
    }

    fn update(&mut self, now: Time) {
        let want = self.faulty || self.used >= self.xoff_at || (self.pausing && self.used > self.xon_at);
        self.pausing = want;
        if want && (self.faulty || self.used > 0) {
            self.stalled_since.get_or_insert(now);
        } else {
            self.stalled_since = None;
        }
    }

    /// A packet of `bytes` arrived at `now`. Returns false if it had to be
    /// discarded (buffer full: the peer ignored the pause, or pauses were disabled).
    pub fn on_arrive(&mut self, now: Time, bytes: u32) -> bool {
        let b = u64::from(bytes);
        if self.faulty || self.used + b > self.size {
            self.discards += b;
            self.update(now);
            return false;
        }
        self.used += b;
        self.update(now);
        true
    }

    /// The host consumed `bytes` at `now` (a faulty NIC consumes nothing).
    pub fn on_drain(&mut self, now: Time, bytes: u32) {
        if self.faulty {
            return;
        }
        self.used = self.used.saturating_sub(u64::from(bytes));
        // Progress: the pipeline is not stalled.
        self.stalled_since = None;
        self.update(now);
    }

    /// Run the stall-prevention watchdog at `now`; returns true when it just
    /// disabled pause generation.
    pub fn poll(&mut self, now: Time) -> bool {
        let (Some(tout), Some(since)) = (self.stall_prevention, self.stalled_since) else {
            return false;
        };
        if !self.disabled && self.pausing && now >= since + tout {
            self.disabled = true;
            self.storm_errors += 1;
            return true;
        }
        false
    }

    /// When the watchdog would fire.
    pub fn next_deadline(&self) -> Time {
        match (self.stall_prevention, self.stalled_since) {
            (Some(t), Some(s)) if !self.disabled && self.pausing => s + t,
            _ => Time::NEVER,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rec: Recovery) -> RequesterConfig {
        RequesterConfig {
            mtu: 1000,
            recovery: rec,
            rto: Time::us(100),
        }
    }

    #[test]
    fn segmentation_and_cumulative_ack() {
        let mut r = Requester::new(cfg(Recovery::GoBackN), Psn::new(0xff_fffe));
        r.post(1, 2500, Time::ZERO);
        r.post(2, 0, Time::ZERO);
        let pk: Vec<TxPacket> = std::iter::from_fn(|| r.next_packet(Time::ZERO)).collect();
        assert_eq!(pk.len(), 4);
        assert_eq!(
            pk.iter().map(|p| p.payload).collect::<Vec<_>>(),
            vec![1000, 1000, 500, 0]
        );
        assert_eq!(pk[2].psn, Psn::new(0)); // wrapped
        assert!(pk[0].first && pk[2].last && pk[3].first && pk[3].last);
        let mut done = Vec::new();
        r.on_ack(Time::us(5), pk[1].psn, &mut done);
        assert!(done.is_empty());
        r.on_ack(Time::us(6), pk[3].psn, &mut done);
        assert_eq!(done.iter().map(|c| c.msg).collect::<Vec<_>>(), vec![1, 2]);
        assert!(!r.outstanding());
        assert_eq!(r.next_deadline(), Time::NEVER);
    }

    #[test]
    fn responder_naks_once_per_gap_and_reacks_duplicates() {
        let mut s = Responder::new(Psn::new(10), 4, Recovery::GoBackN);
        assert_eq!(
            s.on_packet(Psn::new(10), 100, true, false),
            RxVerdict::Accept { ack: None }
        );
        assert_eq!(
            s.on_packet(Psn::new(12), 100, false, false),
            RxVerdict::OutOfOrder {
                nak: Some(Psn::new(11))
            }
        );
        assert_eq!(
            s.on_packet(Psn::new(13), 100, false, false),
            RxVerdict::OutOfOrder { nak: None }
        );
        assert_eq!(
            s.on_packet(Psn::new(9), 100, false, false),
            RxVerdict::Duplicate { ack: Psn::new(10) }
        );
        assert_eq!(
            s.on_packet(Psn::new(11), 100, false, true),
            RxVerdict::Accept {
                ack: Some(Psn::new(11))
            }
        );
        assert_eq!(s.counters.naks, 1);
        assert_eq!(s.counters.out_of_sequence, 2);
        // Go-back-0: the gap sends the responder back to the message's first PSN.
        let mut s = Responder::new(Psn::new(0), 1, Recovery::GoBack0);
        s.on_packet(Psn::new(0), 100, true, false);
        s.on_packet(Psn::new(1), 100, false, false);
        assert_eq!(
            s.on_packet(Psn::new(3), 100, false, false),
            RxVerdict::OutOfOrder { nak: Some(Psn::new(0)) }
        );
        assert_eq!(s.expected(), Psn::new(0));
    }

    #[test]
    fn go_back_n_and_go_back_0_restart_points() {
        for (rec, want) in [(Recovery::GoBackN, 5u32), (Recovery::GoBack0, 4)] {
            let mut r = Requester::new(cfg(rec), Psn::new(0));
            r.post(1, 4000, Time::ZERO); // PSN 0..3
            r.post(2, 4000, Time::ZERO); // PSN 4..7
            for _ in 0..8 {
                r.next_packet(Time::ZERO);
            }
            let mut done = Vec::new();
            r.on_nak(Time::us(1), Psn::new(5), &mut done);
            assert_eq!(done.len(), 1, "{rec:?}: the NAK acknowledges message 1");
            let p = r.next_packet(Time::us(2)).unwrap();
            assert_eq!(p.psn, Psn::new(want), "{rec:?}");
            assert!(p.retransmit);
        }
        // Timeout goes back to the oldest unacknowledged PSN.
        let mut r = Requester::new(cfg(Recovery::GoBackN), Psn::new(0));
        r.post(1, 3000, Time::ZERO);
        for _ in 0..3 {
            r.next_packet(Time::ZERO);
        }
        assert!(!r.poll(Time::us(99)));
        assert!(r.poll(Time::us(100)));
        assert_eq!(r.next_packet(Time::us(100)).unwrap().psn, Psn::new(0));
        assert_eq!(r.counters.timeouts, 1);
    }

    /// One requester, one responder, a link of `rtt` round trip at 1 packet per
    /// `pkt_time`, and a deterministic drop of every `drop_every`-th data packet
    /// on the wire (Guo et al. SIGCOMM'16 §5: 1/256). Returns goodput as a
    /// fraction of line rate over `horizon` and the counters.
    fn lossy_link(rec: Recovery, msg: u64, drop_every: u64, horizon: Time) -> (f64, RequesterCounters) {
        let pkt_time = Time::ns(200); // 1000 B at 40 Gb/s
        let one_way = Time::us(2);
        let mut r = Requester::new(
            RequesterConfig {
                mtu: 1000,
                recovery: rec,
                rto: Time::us(200),
            },
            Psn::new(0),
        );
        let mut s = Responder::new(Psn::new(0), 1, rec);
        // Packets (and ACK/NAKs) in flight: (arrival time, psn, payload, last) / (time, ack?, psn).
        let mut data: VecDeque<(Time, Psn, u32, bool, bool)> = VecDeque::new();
        let mut back: VecDeque<(Time, bool, Psn)> = VecDeque::new();
        let mut now = Time::ZERO;
        let mut wire_count = 0u64;
        let mut next_msg = 0u64;
        let mut done = Vec::new();
        let mut good_bytes = 0u64;
        while now < horizon {
            // Keep two messages posted (the application always has work).
            while r.counters.completed + 2 > next_msg {
                r.post(next_msg, msg, now);
                next_msg += 1;
            }
            r.poll(now);
            while back.front().is_some_and(|b| b.0 <= now) {
                let (_, ack, psn) = back.pop_front().unwrap();
                if ack {
                    r.on_ack(now, psn, &mut done)
                } else {
                    r.on_nak(now, psn, &mut done)
                }
            }
            for c in done.drain(..) {
                good_bytes += c.bytes;
            }
            while data.front().is_some_and(|d| d.0 <= now) {
                let (_, psn, payload, first, last) = data.pop_front().unwrap();
                match s.on_packet(psn, payload, first, last) {
                    RxVerdict::Accept { ack: Some(a) } | RxVerdict::Duplicate { ack: a } => {
                        back.push_back((now + one_way, true, a))
                    }
                    RxVerdict::OutOfOrder { nak: Some(e) } => back.push_back((now + one_way, false, e)),
                    _ => {}
                }
            }
            if let Some(p) = r.next_packet(now) {
                wire_count += 1;
                if !wire_count.is_multiple_of(drop_every) {
                    data.push_back((now + pkt_time + one_way, p.psn, p.payload, p.first, p.last));
                }
            }
            now += pkt_time;
        }
        let line_bytes = horizon.0 / pkt_time.0 * 1000;
        (good_bytes as f64 / line_bytes as f64, r.counters)
    }

    #[test]
    fn go_back_0_livelocks_at_1_in_256_on_4mb_messages_go_back_n_does_not() {
        let horizon = Time::ms(20);
        let (g0, c0) = lossy_link(Recovery::GoBack0, 4 << 20, 256, horizon);
        let (gn, cn) = lossy_link(Recovery::GoBackN, 4 << 20, 256, horizon);
        eprintln!("1/256 drop, 4 MiB messages, 20 ms: goodput go-back-0 {g0:.4} ({c0:?}), go-back-N {gn:.4} ({cn:?})");
        assert_eq!(c0.completed, 0, "go-back-0 never completes a 4 MB message: {c0:?}");
        assert_eq!(g0, 0.0);
        assert!(gn > 0.5, "go-back-N keeps most of the line: {gn}");
        assert!(cn.completed >= 5);
        // Without loss both run at line rate (minus the tail of the last message).
        let (g_clean, _) = lossy_link(Recovery::GoBack0, 4 << 20, u64::MAX, horizon);
        assert!(g_clean > 0.8, "{g_clean}");
    }

    #[test]
    fn nic_rx_pauses_resumes_storms_and_stall_prevention_stops_it() {
        let mut n = NicRx::new(100_000, 60_000, 40_000);
        for k in 0..60 {
            assert!(n.on_arrive(Time::ns(k), 1000));
        }
        assert!(n.wants_pause());
        for _ in 0..19 {
            n.on_drain(Time::us(1), 1000);
        }
        assert!(n.wants_pause(), "hysteresis: still above xon");
        n.on_drain(Time::us(1), 1000);
        assert!(!n.wants_pause());
        // A faulty NIC: pauses forever and discards; the stall prevention
        // (mlx5 auto = 100 ms) stops its pause frames.
        let mut f = NicRx::new(100_000, 60_000, 40_000);
        f.faulty = true;
        f.stall_prevention = Some(Time::ms(100));
        assert!(!f.on_arrive(Time::ZERO, 1000));
        assert!(f.wants_pause());
        assert_eq!(f.next_deadline(), Time::ms(100));
        assert!(!f.poll(Time::ms(99)));
        assert!(f.poll(Time::ms(100)));
        assert!(!f.wants_pause());
        assert_eq!(f.storm_errors, 1);
    }
}
