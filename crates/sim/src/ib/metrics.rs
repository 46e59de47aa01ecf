//! Counters kept on the hot path and the reports built from them: per-port
//! utilisation, credit-stall time per port and VL, peak input-buffer occupancy,
//! occupancy/utilisation samples over time; JSON (serde) and CSV.

use serde::Serialize;

use crate::engine::Time;
use crate::ib::packet::{NONE, Packet};

/// Hot-path counters. Per-port vectors are indexed by global port id; per-VL ones
/// by `gp * nvl + vl`.
#[derive(Debug)]
pub struct Stats {
    /// Events processed.
    pub events: u64,
    /// Packet-link hops (one per packet put on a link).
    pub hops: u64,
    /// Transmitter wake-ups that found their stamp stale (lazily cancelled).
    pub stale_wakes: u64,
    /// Transmitter looks that sent nothing.
    pub idle_looks: u64,
    /// Packets a switch sent on arrival without queueing them (its output was
    /// idle and empty; see `ib::forward::Forwarding::plain`).
    pub forwarded_at_once: u64,
    /// Time a VL had a packet waiting for credits, per port and VL (ps).
    pub stall_ps: Vec<u64>,
    stall_since: Vec<Time>,
    /// Out-of-order PSNs seen by RC responders/requesters (must stay 0 on a lossless,
    /// in-order fabric).
    pub psn_errors: u64,
    /// Packets a switch marked with FECN (IB congestion control).
    pub fecn_marked: u64,
    /// BECNs that reached a source QP.
    pub becn_received: u64,
    /// Request packets that reached their responder ahead of an earlier PSN
    /// (adaptive routing) and waited in its reorder buffer.
    pub reordered: u64,
    /// Packets a switch sent out of a port other than its LFT's (adaptive routing).
    pub rerouted: u64,
    /// Payload bytes delivered to end nodes.
    pub delivered_payload: u64,
    /// The global port being captured, or `u32::MAX`.
    pub capture: u32,
    /// Packets sent on the captured port, with their start times.
    pub captured: Vec<(Time, Packet)>,
    /// Sample times.
    pub sample_times: Vec<Time>,
    /// Bytes sent per port up to each sample, `[sample * ports + gp]`.
    pub sample_tx: Vec<u64>,
    /// Input-buffer blocks in use per port (all VLs) at each sample.
    pub sample_occ: Vec<u32>,
    nports: usize,
}

impl Stats {
    pub(crate) fn new(nports: usize, nvl: usize) -> Stats {
        Stats {
            events: 0,
            hops: 0,
            stale_wakes: 0,
            idle_looks: 0,
            forwarded_at_once: 0,
            stall_ps: vec![0; nports * nvl],
            stall_since: vec![Time::NEVER; nports * nvl],
            psn_errors: 0,
            fecn_marked: 0,
            becn_received: 0,
            reordered: 0,
            rerouted: 0,
            delivered_payload: 0,
            capture: NONE,
            captured: Vec::new(),
            sample_times: Vec::new(),
            sample_tx: Vec::new(),
            sample_occ: Vec::new(),
            nports,
        }
    }

    #[inline]
    pub(crate) fn stall_begin(&mut self, i: usize, now: Time) {
        if self.stall_since[i] == Time::NEVER {
            self.stall_since[i] = now;
        }
    }

    #[inline]
    pub(crate) fn stall_end(&mut self, i: usize, now: Time) {
        let s = self.stall_since[i];
        if s != Time::NEVER {
            self.stall_ps[i] += now.saturating_sub(s).0;
            self.stall_since[i] = Time::NEVER;
        }
    }

    pub(crate) fn close_stalls(&mut self, now: Time) {
        for i in 0..self.stall_since.len() {
            self.stall_end(i, now);
        }
    }

    pub(crate) fn sample(
        &mut self,
        now: Time,
        tx_bytes: impl Iterator<Item = u64>,
        occupancy: impl Iterator<Item = u32>,
    ) {
        self.sample_times.push(now);
        self.sample_tx.extend(tx_bytes);
        self.sample_occ.extend(occupancy.take(self.nports));
    }
}

/// The summary of a run: the counts behind the speed figures and the ledger.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    pub seed: u64,
    pub simulated_ps: u64,
    pub events: u64,
    pub stale_wakes: u64,
    pub idle_looks: u64,
    pub packet_link_hops: u64,
    pub packets_created: u64,
    pub packets_delivered: u64,
    pub packets_dropped: u64,
    pub drops_by_reason: Vec<(String, u64)>,
    pub packets_in_flight: u64,
    pub peak_packets_in_flight: u64,
    pub payload_delivered_bytes: u64,
    pub psn_errors: u64,
    pub fecn_marked: u64,
    pub becn_received: u64,
    pub reordered: u64,
    pub rerouted: u64,
    pub trace_hash: String,
    pub ledger_balanced: bool,
}

/// One port's figures.
#[derive(Clone, Debug, Serialize)]
pub struct PortReport {
    pub node: String,
    pub port: u8,
    pub peer: String,
    pub peer_port: u8,
    pub rate_bps: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    /// Fraction of the run the transmitter was busy.
    pub utilisation: f64,
    /// Credit-stall time per VL, picoseconds.
    pub credit_stall_ps: Vec<u64>,
    /// Peak input-buffer occupancy per VL, bytes (64-byte blocks × 64).
    pub peak_buffer_bytes: Vec<u64>,
}

/// Occupancy and utilisation over time.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub times_ps: Vec<u64>,
    /// `ports[i]` names the column of `utilisation[t][i]` and `buffer_bytes[t][i]`.
    pub ports: Vec<String>,
    pub utilisation: Vec<Vec<f64>>,
    pub buffer_bytes: Vec<Vec<u64>>,
}
