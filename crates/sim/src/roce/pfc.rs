//! Priority flow control (IEEE 802.1Qbb) on one link end, and the SONiC PFC
//! watchdog.
//!
//! * [`PausedTx`]: a transmitter's view of the pause frames it received, per
//!   priority. A frame carries a time in quanta; 1 quantum = 512 bit times at
//!   the link speed (802.1Qbb; shared simulators reference §2.2: 1.28 ns at 400G,
//!   so the 0xffff maximum is 83.9 µs). A zero time is XON: resume now.
//!   [`PauseMode::UntilXon`] models HPCC ns-3, whose receivers ignore the time and
//!   stay paused until a zero-quanta frame (reference §1.1.6).
//! * [`PauseGen`]: the receiver's side: once a PG asks for XOFF, a pause frame is
//!   due now and again before the previous one expires (refresh at half the
//!   pause time, a common ASIC choice that leaves a full half of slack for the
//!   frame to travel); XON sends a zero-quanta frame once.
//! * [`Watchdog`]: SONiC's storm detection / restoration for one lossless queue
//!   (shared RoCE reference §4.1): a queue is stormed when, poll after poll, it
//!   holds bytes, sends nothing and was paused for ≥ 99% of the poll, for ≥ 99%
//!   of the detection time; it is restored when no new pause frame arrived for the
//!   restoration time.

use crate::engine::Time;

/// Bit times per pause quantum (IEEE 802.1Qbb / 802.3 Annex 31B).
pub const BITS_PER_QUANTUM: u64 = 512;

/// The largest pause time a frame can carry.
pub const MAX_QUANTA: u16 = 0xffff;

/// Duration of `quanta` pause quanta at `bps`.
pub fn quanta_to_time(quanta: u16, bps: u64) -> Time {
    let bits = u128::from(quanta) * u128::from(BITS_PER_QUANTUM);
    Time((bits * 1_000_000_000_000).div_ceil(u128::from(bps.max(1))) as u64)
}

/// How a paused transmitter treats the pause time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseMode {
    /// As the standard says: paused for the frame's quanta, unless refreshed or
    /// ended by XON.
    Timed,
    /// Paused until an XON (zero quanta) frame, whatever the time (HPCC ns-3).
    UntilXon,
}

/// The pause state of one transmitter, per priority 0..8.
#[derive(Clone, Copy, Debug)]
pub struct PausedTx {
    until: [Time; 8],
    /// Pause frames received per priority (`rx_prio<N>_pause`).
    pub frames: [u64; 8],
    /// Pause time accumulated per priority, closed at each resume (`*_pause_duration`).
    pub paused_ps: [u64; 8],
    since: [Time; 8],
}

impl Default for PausedTx {
    fn default() -> Self {
        PausedTx {
            until: [Time::ZERO; 8],
            frames: [0; 8],
            paused_ps: [0; 8],
            since: [Time::NEVER; 8],
        }
    }
}

impl PausedTx {
    /// A pause frame for `prio` with `quanta` arrived at `now` on a link of `bps`.
    /// Returns the time the priority may send again (`now` for XON).
    pub fn on_frame(&mut self, now: Time, prio: u8, quanta: u16, bps: u64, mode: PauseMode) -> Time {
        let i = usize::from(prio & 7);
        self.frames[i] += 1;
        let was = self.is_paused(now, prio);
        let until = if quanta == 0 {
            now
        } else {
            match mode {
                PauseMode::Timed => now + quanta_to_time(quanta, bps),
                PauseMode::UntilXon => Time::NEVER,
            }
        };
        if !was && until > now {
            self.since[i] = now;
        }
        if was && until <= now {
            self.close(i, now);
        }
        self.until[i] = until;
        until
    }

    fn close(&mut self, i: usize, now: Time) {
        if self.since[i] != Time::NEVER {
            self.paused_ps[i] += now.saturating_sub(self.since[i]).0;
            self.since[i] = Time::NEVER;
        }
    }

    /// Is `prio` paused at `now`?
    #[inline]
    pub fn is_paused(&self, now: Time, prio: u8) -> bool {
        self.until[usize::from(prio & 7)] > now
    }

    /// When `prio` may send again (`ZERO`/past = now).
    #[inline]
    pub fn until(&self, prio: u8) -> Time {
        self.until[usize::from(prio & 7)]
    }

    /// When each priority may send again (index = priority), for a caller that
    /// checks several priorities at once.
    #[inline]
    pub fn until_all(&self) -> [Time; 8] {
        self.until
    }

    /// Ignore pauses on `prio` from now on until the next frame (watchdog
    /// "forward" action, or a drained queue).
    pub fn force_resume(&mut self, now: Time, prio: u8) {
        let i = usize::from(prio & 7);
        if self.until[i] > now {
            self.close(i, now);
            self.until[i] = now;
        }
    }

    /// Pause time of `prio` up to `now`, including a pause still running.
    pub fn paused_total(&self, now: Time, prio: u8) -> u64 {
        let i = usize::from(prio & 7);
        let open = if self.since[i] != Time::NEVER {
            now.min(self.until[i]).saturating_sub(self.since[i]).0
        } else {
            0
        };
        self.paused_ps[i] + open
    }
}

/// What a pause generator wants sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseFrame {
    /// Pause `prio` for `quanta`.
    Xoff { prio: u8, quanta: u16 },
    /// Resume `prio` (zero quanta).
    Xon { prio: u8 },
}

/// The pause generator of one receiving port, per priority.
#[derive(Clone, Copy, Debug)]
pub struct PauseGen {
    /// Quanta written into XOFF frames.
    pub quanta: u16,
    asserted: u8,
    next_refresh: [Time; 8],
    /// XOFF frames sent per priority (`tx_prio<N>_pause`).
    pub xoff_sent: [u64; 8],
    /// XON frames sent per priority.
    pub xon_sent: [u64; 8],
}

impl PauseGen {
    /// A generator writing `quanta` into its XOFF frames.
    pub fn new(quanta: u16) -> PauseGen {
        PauseGen {
            quanta: quanta.max(1),
            asserted: 0,
            next_refresh: [Time::NEVER; 8],
            xoff_sent: [0; 8],
            xon_sent: [0; 8],
        }
    }

    /// Is XOFF asserted for `prio`?
    pub fn asserted(&self, prio: u8) -> bool {
        self.asserted & (1 << (prio & 7)) != 0
    }

    /// Ask for XOFF on `prio` at `now`: returns the frame to send if this is a new
    /// assertion (refreshes come from [`poll`](Self::poll)).
    pub fn xoff(&mut self, now: Time, prio: u8, bps: u64) -> Option<PauseFrame> {
        if self.asserted(prio) {
            return None;
        }
        self.asserted |= 1 << (prio & 7);
        Some(self.send_xoff(now, prio, bps))
    }

    fn send_xoff(&mut self, now: Time, prio: u8, bps: u64) -> PauseFrame {
        let i = usize::from(prio & 7);
        self.xoff_sent[i] += 1;
        let half = Time(quanta_to_time(self.quanta, bps).0 / 2).max(Time(1));
        self.next_refresh[i] = now + half;
        PauseFrame::Xoff {
            prio,
            quanta: self.quanta,
        }
    }

    /// Release `prio`: the XON frame to send if it was asserted.
    pub fn xon(&mut self, prio: u8) -> Option<PauseFrame> {
        if !self.asserted(prio) {
            return None;
        }
        let i = usize::from(prio & 7);
        self.asserted &= !(1 << (prio & 7));
        self.next_refresh[i] = Time::NEVER;
        self.xon_sent[i] += 1;
        Some(PauseFrame::Xon { prio })
    }

    /// The earliest refresh due.
    pub fn next_deadline(&self) -> Time {
        self.next_refresh.iter().copied().min().unwrap_or(Time::NEVER)
    }

    /// Refresh frames due by `now` (at most one per priority), into `out`.
    pub fn poll(&mut self, now: Time, bps: u64, out: &mut Vec<PauseFrame>) {
        for prio in 0..8u8 {
            if self.next_refresh[usize::from(prio)] <= now {
                out.push(self.send_xoff(now, prio, bps));
            }
        }
    }
}

/// What the watchdog does to a stormed queue (SONiC `PFC_WD.action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WdAction {
    /// Drop the queue's packets and every new one until restored (SONiC default).
    Drop,
    /// Ignore pause frames on the queue (PFC off for it) until restored.
    Forward,
    /// Report only.
    Alert,
}

/// Watchdog timing (SONiC `PFC_WD|<port>` and `PFC_WD|GLOBAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WdConfig {
    /// Polling period (`POLL_INTERVAL`, 100..1000 ms; CLI default 200 ms).
    pub poll: Time,
    /// Storm detection time (100..5000 ms; CLI default 200 ms).
    pub detection: Time,
    /// Restoration time (100..60000 ms; CLI default 200 ms).
    pub restoration: Time,
    /// Action.
    pub action: WdAction,
}

impl Default for WdConfig {
    /// sonic-utilities `pfcwd/main.py` defaults: 200 / 200 / 200 ms, drop.
    fn default() -> Self {
        WdConfig {
            poll: Time::ms(200),
            detection: Time::ms(200),
            restoration: Time::ms(200),
            action: WdAction::Drop,
        }
    }
}

/// Counter snapshot of one queue, taken at each poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSample {
    /// Bytes queued now.
    pub occupancy_bytes: u64,
    /// Packets sent so far (cumulative).
    pub tx_pkts: u64,
    /// Pause frames received so far for this priority (cumulative).
    pub pfc_rx_frames: u64,
    /// Time paused so far (cumulative, ps).
    pub paused_ps: u64,
}

/// A watchdog transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WdEvent {
    /// The queue is stormed; apply the action.
    Stormed,
    /// The storm is over; undo the action.
    Restored,
}

/// SONiC PFC watchdog state for one (port, lossless queue).
#[derive(Clone, Copy, Debug)]
pub struct Watchdog {
    /// Configuration.
    pub cfg: WdConfig,
    last: Option<QueueSample>,
    stalled_ps: u64,
    stormed: bool,
    quiet_ps: u64,
    /// Storms detected.
    pub storms: u64,
    /// Restorations.
    pub restores: u64,
}

impl Watchdog {
    /// A watchdog with `cfg`.
    pub fn new(cfg: WdConfig) -> Watchdog {
        Watchdog {
            cfg,
            last: None,
            stalled_ps: 0,
            stormed: false,
            quiet_ps: 0,
            storms: 0,
            restores: 0,
        }
    }

    /// Is the queue stormed (action in force)?
    pub fn stormed(&self) -> bool {
        self.stormed
    }

    /// One poll with the queue's counters `s`, taken `cfg.poll` after the last.
    pub fn poll(&mut self, s: QueueSample) -> Option<WdEvent> {
        let prev = self.last.replace(s)?;
        let poll = self.cfg.poll.0;
        if !self.stormed {
            // pfc_detect_mellanox.lua: occupancy > 0, no tx progress, and paused
            // for more than 99% of the poll interval; accumulated to ≥ 99% of the
            // detection time.
            let paused = s.paused_ps.saturating_sub(prev.paused_ps);
            let stalled = s.occupancy_bytes > 0 && s.tx_pkts == prev.tx_pkts && paused * 100 > poll * 99;
            if stalled {
                self.stalled_ps += poll;
                if self.stalled_ps * 100 >= self.cfg.detection.0 * 99 {
                    self.stormed = true;
                    self.stalled_ps = 0;
                    self.quiet_ps = 0;
                    self.storms += 1;
                    return Some(WdEvent::Stormed);
                }
            } else {
                self.stalled_ps = 0;
            }
            None
        } else {
            // pfc_restore.lua: no new pause frames for the restoration time.
            if s.pfc_rx_frames == prev.pfc_rx_frames {
                self.quiet_ps += poll;
                if self.quiet_ps >= self.cfg.restoration.0 {
                    self.stormed = false;
                    self.quiet_ps = 0;
                    self.restores += 1;
                    return Some(WdEvent::Restored);
                }
            } else {
                self.quiet_ps = 0;
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quanta_are_512_bit_times() {
        // 400G: 1 quantum = 1.28 ns; 0xffff quanta = 83.885 µs (reference §2.2).
        assert_eq!(quanta_to_time(1, 400_000_000_000), Time::ps(1280));
        assert_eq!(quanta_to_time(MAX_QUANTA, 400_000_000_000), Time::ps(83_884_800));
        assert_eq!(quanta_to_time(1, 100_000_000_000), Time::ps(5120));
        assert_eq!(quanta_to_time(0, 100_000_000_000), Time::ZERO);
    }

    #[test]
    fn pause_expires_refreshes_and_resumes() {
        let bps = 100_000_000_000;
        let mut tx = PausedTx::default();
        let t0 = Time::us(1);
        let end = tx.on_frame(t0, 3, 1000, bps, PauseMode::Timed);
        assert_eq!(end, t0 + Time::ns(5120));
        assert!(tx.is_paused(t0 + Time::ns(5119), 3));
        assert!(!tx.is_paused(t0 + Time::ns(5120), 3));
        assert!(!tx.is_paused(t0, 0), "other priorities run");
        // A refresh extends, XON ends at once.
        tx.on_frame(t0 + Time::ns(2000), 3, 1000, bps, PauseMode::Timed);
        assert!(tx.is_paused(t0 + Time::ns(7000), 3));
        tx.on_frame(t0 + Time::ns(3000), 3, 0, bps, PauseMode::Timed);
        assert!(!tx.is_paused(t0 + Time::ns(3000), 3));
        assert_eq!(tx.paused_ps[3], 3_000_000);
        assert_eq!(tx.frames[3], 3);
        // HPCC mode: paused until XON.
        tx.on_frame(Time::ms(1), 3, 5, bps, PauseMode::UntilXon);
        assert!(tx.is_paused(Time::ms(100), 3));
        tx.on_frame(Time::ms(100), 3, 0, bps, PauseMode::UntilXon);
        assert!(!tx.is_paused(Time::ms(100), 3));
    }

    #[test]
    fn generator_refreshes_before_expiry() {
        let bps = 100_000_000_000;
        let mut g = PauseGen::new(0xffff);
        assert_eq!(
            g.xoff(Time::ZERO, 3, bps),
            Some(PauseFrame::Xoff {
                prio: 3,
                quanta: 0xffff
            })
        );
        assert_eq!(g.xoff(Time::ns(10), 3, bps), None);
        let full = quanta_to_time(0xffff, bps);
        assert!(
            g.next_deadline() < full,
            "refresh {} before expiry {full}",
            g.next_deadline()
        );
        let mut out = Vec::new();
        g.poll(g.next_deadline(), bps, &mut out);
        assert_eq!(
            out,
            vec![PauseFrame::Xoff {
                prio: 3,
                quanta: 0xffff
            }]
        );
        assert_eq!(g.xon(3), Some(PauseFrame::Xon { prio: 3 }));
        assert_eq!(g.xon(3), None);
        assert_eq!(g.next_deadline(), Time::NEVER);
        assert_eq!((g.xoff_sent[3], g.xon_sent[3]), (2, 1));
    }

    fn stalled(tx: u64, frames: u64, paused: u64) -> QueueSample {
        QueueSample {
            occupancy_bytes: 5000,
            tx_pkts: tx,
            pfc_rx_frames: frames,
            paused_ps: paused,
        }
    }

    #[test]
    fn watchdog_detects_and_restores_like_sonic() {
        let cfg = WdConfig {
            poll: Time::ms(100),
            detection: Time::ms(300),
            restoration: Time::ms(200),
            action: WdAction::Drop,
        };
        let mut wd = Watchdog::new(cfg);
        let p = Time::ms(100).0;
        assert_eq!(wd.poll(stalled(10, 0, 0)), None);
        // Two stalled polls: 200 ms < 99% of 300 ms.
        assert_eq!(wd.poll(stalled(10, 50, p)), None);
        assert_eq!(wd.poll(stalled(10, 100, 2 * p)), None);
        // Third: stormed.
        assert_eq!(wd.poll(stalled(10, 150, 3 * p)), Some(WdEvent::Stormed));
        assert!(wd.stormed());
        // Pauses keep coming: no restore.
        assert_eq!(wd.poll(stalled(10, 200, 4 * p)), None);
        assert_eq!(wd.poll(stalled(10, 250, 5 * p)), None);
        // Quiet for 200 ms: restored.
        assert_eq!(wd.poll(stalled(10, 250, 5 * p)), None);
        assert_eq!(wd.poll(stalled(10, 250, 5 * p)), Some(WdEvent::Restored));
        assert_eq!((wd.storms, wd.restores), (1, 1));
    }

    #[test]
    fn watchdog_ignores_a_queue_that_drains_or_is_barely_paused() {
        let cfg = WdConfig {
            poll: Time::ms(100),
            detection: Time::ms(200),
            ..WdConfig::default()
        };
        let p = Time::ms(100).0;
        let mut wd = Watchdog::new(cfg);
        wd.poll(stalled(0, 0, 0));
        for k in 1..10u64 {
            // Packets leave every poll: not a storm however long the pauses.
            assert_eq!(wd.poll(stalled(k, 10 * k, k * p)), None);
        }
        let mut wd = Watchdog::new(cfg);
        wd.poll(stalled(0, 0, 0));
        for k in 1..10u64 {
            // Paused 98% of each poll: below the 99% rule.
            assert_eq!(wd.poll(stalled(0, 10 * k, k * p * 98 / 100)), None);
        }
    }
}
