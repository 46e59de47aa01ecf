//! DCTCP as HPCC ns-3 runs it for RDMA (`CC_MODE 8`, `RdmaHw::HandleAckDctcp`):
//! rate-based, driven by the ECN echo each ACK carries.
//!
//! ```text
//!   switch marks CE (RED)  ──►  receiver echoes CE on the ACK  ──►  sender:
//!     per ACK: count echoes; once per window of data (an ACK beyond the PSN sent
//!     when the last window closed): α ← (1−g)α + g·(echoes / packets in window)
//!     an echo outside CWR: rate ← max(min, rate·(1 − α/2)), CWR until the ACK
//!     passes what was sent then; a new window outside CWR: rate += R_AI
//! ```
//!
//! The rules and their order follow the ns-3 function named above (HPCC
//! repository, `simulation/src/point-to-point/model/rdma-hw.cc`): α starts at 1,
//! the first window only records where it ends, the fraction is capped at 1.

use wire::Psn;

use crate::roce::dcqcn::Red;

/// DCTCP knobs (HPCC ns-3 config keys in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct DctcpParams {
    /// Line rate, the cap, bits/s.
    pub line_bps: f64,
    /// α gain g (`EWMA_GAIN`).
    pub g: f64,
    /// Additive increase per window, bits/s (`DCTCP_RATE_AI`).
    pub rate_ai_bps: f64,
    /// Rate floor, bits/s (`MIN_RATE`).
    pub min_rate_bps: f64,
    /// Switch marking used when the run gives none per link rate.
    pub red: Red,
}

/// Counters of one DCTCP sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DctcpCounters {
    /// ACKs that echoed CE.
    pub echoes: u64,
    /// Rate cuts.
    pub cuts: u64,
    /// α updates (windows closed).
    pub windows: u64,
}

/// The sender side of one QP.
#[derive(Clone, Debug)]
pub struct DctcpRp {
    p: DctcpParams,
    rate: f64,
    alpha: f64,
    /// Echoes in the current window.
    ecn: u32,
    /// The window closes when an ACK passes this PSN (`m_lastUpdateSeq`); `None`
    /// before the first ACK.
    window_end: Option<Psn>,
    /// Packets in the window (`m_batchSizeOfAlpha`).
    batch: u32,
    /// In congestion window reduction until an ACK passes `high`.
    cwr: bool,
    high: Psn,
    /// Counters.
    pub counters: DctcpCounters,
}

impl DctcpRp {
    /// A sender at line rate with α = 1 (ns-3 `RdmaQueuePair` initial value).
    pub fn new(p: DctcpParams) -> DctcpRp {
        DctcpRp {
            rate: p.line_bps,
            p,
            alpha: 1.0,
            ecn: 0,
            window_end: None,
            batch: 0,
            cwr: false,
            high: Psn::new(0),
            counters: DctcpCounters::default(),
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

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The parameters.
    pub fn params(&self) -> &DctcpParams {
        &self.p
    }

    /// An ACK arrived: it acknowledges everything before `next` (the PSN the
    /// receiver expects), echoes CE if `ece`; `first_psn` is the QP's first PSN
    /// and `snd_nxt` the next PSN the sender will send.
    pub fn on_ack(&mut self, next: Psn, ece: bool, first_psn: Psn, snd_nxt: Psn) {
        let mut new_window = false;
        if ece {
            self.ecn += 1;
            self.counters.echoes += 1;
        }
        let past = |end: Psn| end.distance_to(next) > 0;
        match self.window_end {
            None => {
                // First ACK: the window is what has been sent so far.
                new_window = true;
                self.window_end = Some(snd_nxt);
                self.batch = (first_psn.distance_to(snd_nxt).max(0) as u32) + 1;
            }
            Some(end) if past(end) => {
                new_window = true;
                let frac = (f64::from(self.ecn) / f64::from(self.batch.max(1))).min(1.0);
                self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g * frac;
                self.window_end = Some(snd_nxt);
                self.ecn = 0;
                self.batch = (next.distance_to(snd_nxt).max(0) as u32) + 1;
                self.counters.windows += 1;
            }
            Some(_) => {}
        }
        if self.cwr && past(self.high) {
            self.cwr = false;
        }
        if ece && !self.cwr {
            self.rate = (self.rate * (1.0 - self.alpha / 2.0)).max(self.p.min_rate_bps);
            self.cwr = true;
            self.high = snd_nxt;
            self.counters.cuts += 1;
        }
        if !self.cwr && new_window {
            self.rate = (self.rate + self.p.rate_ai_bps).min(self.p.line_bps);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> DctcpParams {
        DctcpParams {
            line_bps: 100e9,
            g: 1.0 / 16.0,
            rate_ai_bps: 1e9,
            min_rate_bps: 1e8,
            red: Red {
                kmin: 30_000,
                kmax: 30_000,
                pmax: 1.0,
            },
        }
    }

    /// ns-3's order on one ACK: count, close the window (α), leave CWR, cut on
    /// an echo outside CWR, add R_AI on a new window outside CWR.
    #[test]
    fn follows_the_ns3_rules() {
        let p = |v: u32| Psn::new(v);
        let mut d = DctcpRp::new(params());
        // First ACK, no echo: the window is the 10 packets sent (batch 11), no α
        // update, +R_AI capped at the line.
        d.on_ack(p(1), false, p(0), p(10));
        assert_eq!(d.rate(), 100e9);
        assert_eq!(d.alpha(), 1.0);
        // An echo inside the window: cut by α/2 = 1/2, CWR until PSN 12 is passed.
        d.on_ack(p(2), true, p(0), p(12));
        assert_eq!(d.rate(), 50e9);
        // Another echo still in CWR: no cut.
        d.on_ack(p(3), true, p(0), p(13));
        assert_eq!(d.rate(), 50e9);
        // The ACK passes PSN 10 (window end): α = 15/16 + (2/11)/16; still in CWR
        // (high 12), so no increase.
        d.on_ack(p(11), false, p(0), p(20));
        let a = 15.0 / 16.0 + (2.0 / 11.0) / 16.0;
        assert!((d.alpha() - a).abs() < 1e-12, "{}", d.alpha());
        assert_eq!(d.rate(), 50e9);
        assert_eq!(d.counters.windows, 1);
        // Past PSN 20: CWR over, new window, +1 Gb/s.
        d.on_ack(p(21), false, p(0), p(30));
        assert_eq!(d.rate(), 51e9);
        // An echo now cuts by α/2 with the decayed α.
        let before = d.rate();
        let alpha = d.alpha();
        d.on_ack(p(22), true, p(0), p(31));
        assert!((d.rate() - before * (1.0 - alpha / 2.0)).abs() < 1.0);
        assert_eq!(d.counters.cuts, 2);
        assert_eq!(d.counters.echoes, 3);
    }

    /// The rate never falls below the floor.
    #[test]
    fn floor_holds() {
        let mut d = DctcpRp::new(params());
        let mut nxt = 10u32;
        for k in 1..200u32 {
            // Every ACK echoes and closes a window: cuts whenever CWR allows.
            d.on_ack(Psn::new(nxt), true, Psn::new(0), Psn::new(nxt + 1));
            nxt += 2;
            assert!(d.rate() >= 1e8, "ack {k}: {}", d.rate());
        }
        assert_eq!(d.rate(), 1e8);
    }
}
