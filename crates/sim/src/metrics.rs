//! Counters kept on the hot path and the reports built from them: per-port
//! utilisation, credit-stall time per port and VL, peak input-buffer occupancy,
//! occupancy/utilisation samples over time; JSON (serde) and CSV.

use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{Ledger, Time};
use crate::packet::Packet;
use crate::sim::{NONE, NodeModel, Sim};

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
    /// idle and empty; see `Sim::plain`).
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
        in_buf: &[crate::sim::InBuf],
        nvl: usize,
    ) {
        self.sample_times.push(now);
        self.sample_tx.extend(tx_bytes);
        for gp in 0..self.nports {
            self.sample_occ
                .push(in_buf[gp * nvl..(gp + 1) * nvl].iter().map(|b| b.used).sum());
        }
    }
}

/// The summary of a run: the counts behind the speed figures and the ledger.
#[derive(Clone, Debug, Serialize)]
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

impl Sim {
    /// The run's summary.
    pub fn summary(&self) -> RunSummary {
        let l: &Ledger = &self.ledger;
        RunSummary {
            seed: self.eng.seed,
            simulated_ps: self.now.0,
            events: self.stats.events,
            stale_wakes: self.stats.stale_wakes,
            idle_looks: self.stats.idle_looks,
            packet_link_hops: self.stats.hops,
            packets_created: l.created,
            packets_delivered: l.delivered,
            packets_dropped: l.total_dropped(),
            drops_by_reason: crate::engine::DropReason::ALL
                .iter()
                .map(|r| (r.name().to_string(), l.dropped[*r as usize]))
                .filter(|x| x.1 > 0)
                .collect(),
            packets_in_flight: self.in_flight(),
            peak_packets_in_flight: self.pkts.peak() as u64,
            payload_delivered_bytes: self.stats.delivered_payload,
            psn_errors: self.stats.psn_errors,
            fecn_marked: self.stats.fecn_marked,
            becn_received: self.stats.becn_received,
            reordered: self.stats.reordered,
            rerouted: self.stats.rerouted,
            trace_hash: format!("{:016x}", self.trace.0),
            ledger_balanced: self.ledger.check(self.in_flight()).is_ok(),
        }
    }

    /// Figures for every cabled port, in node then port order.
    pub fn port_reports(&self) -> Vec<PortReport> {
        let t = self.now.0.max(1) as f64;
        let nvl = self.nvl;
        let mut out = Vec::new();
        for gp in 0..self.ports.len() {
            let pg = self.ports[gp].peer;
            if pg == NONE {
                continue;
            }
            let node = self.port_node[gp] as usize;
            let busy_ps = self.ports[gp].tx_bytes as f64 * 8.0 * 1e12 / self.port_bps[gp].max(1) as f64;
            out.push(PortReport {
                node: self.node_name[node].clone(),
                port: self.ports[gp].port_num,
                peer: self.node_name[self.port_node[pg as usize] as usize].clone(),
                peer_port: self.ports[pg as usize].port_num,
                rate_bps: self.port_bps[gp],
                tx_bytes: self.ports[gp].tx_bytes,
                tx_packets: u64::from(self.ports[gp].tx_pkts),
                utilisation: (busy_ps / t).min(1.0),
                credit_stall_ps: self.stats.stall_ps[gp * nvl..(gp + 1) * nvl].to_vec(),
                peak_buffer_bytes: if self.node_model[node] == NodeModel::IbSwitch {
                    self.in_buf[gp * nvl..(gp + 1) * nvl]
                        .iter()
                        .map(|b| u64::from(b.peak) * 64)
                        .collect()
                } else {
                    Vec::new()
                },
            });
        }
        out
    }

    /// The sampled series (empty unless `sample_interval_ps` was set).
    pub fn series(&self) -> Series {
        let np = self.ports.len();
        let cabled: Vec<usize> = (0..np).filter(|&g| self.ports[g].peer != NONE).collect();
        let mut s = Series {
            times_ps: self.stats.sample_times.iter().map(|t| t.0).collect(),
            ports: cabled
                .iter()
                .map(|&g| {
                    format!(
                        "{}/{}",
                        self.node_name[self.port_node[g] as usize], self.ports[g].port_num
                    )
                })
                .collect(),
            utilisation: Vec::new(),
            buffer_bytes: Vec::new(),
        };
        let mut prev_t = 0u64;
        for (k, &t) in s.times_ps.iter().enumerate() {
            let dt = (t - prev_t).max(1) as f64;
            let row_tx = &self.stats.sample_tx[k * np..(k + 1) * np];
            let prev_tx = if k == 0 {
                None
            } else {
                Some(&self.stats.sample_tx[(k - 1) * np..k * np])
            };
            s.utilisation.push(
                cabled
                    .iter()
                    .map(|&g| {
                        let b = row_tx[g] - prev_tx.map_or(0, |p| p[g]);
                        (b as f64 * 8.0 * 1e12 / self.port_bps[g].max(1) as f64 / dt).min(1.0)
                    })
                    .collect(),
            );
            s.buffer_bytes.push(
                cabled
                    .iter()
                    .map(|&g| u64::from(self.stats.sample_occ[k * np + g]) * 64)
                    .collect(),
            );
            prev_t = t;
        }
        s
    }

    /// Per-port figures as CSV (one row per port; stall and buffer columns per VL).
    pub fn port_csv(&self) -> String {
        let mut out = String::from("node,port,peer,peer_port,rate_bps,tx_bytes,tx_packets,utilisation");
        for vl in 0..self.nvl {
            let _ = write!(out, ",stall_ps_vl{vl}");
        }
        for vl in 0..self.nvl {
            let _ = write!(out, ",peak_buffer_bytes_vl{vl}");
        }
        out.push('\n');
        for r in self.port_reports() {
            let _ = write!(
                out,
                "{},{},{},{},{},{},{},{:.6}",
                r.node, r.port, r.peer, r.peer_port, r.rate_bps, r.tx_bytes, r.tx_packets, r.utilisation
            );
            for v in &r.credit_stall_ps {
                let _ = write!(out, ",{v}");
            }
            for vl in 0..self.nvl {
                let _ = write!(out, ",{}", r.peak_buffer_bytes.get(vl).copied().unwrap_or(0));
            }
            out.push('\n');
        }
        out
    }

    /// Start recording every packet sent on (`node`, `port`) (for a pcap).
    pub fn capture_port(&mut self, node: fabric::NodeId, port: u8) -> Result<(), crate::SimError> {
        let cabled = (node.idx() < self.node_model.len())
            .then(|| self.gp(node, port))
            .filter(|&gp| gp < self.port_base[node.idx() + 1] && self.ports[gp as usize].peer != NONE);
        let Some(gp) = cabled else {
            return Err(crate::SimError::Uncabled {
                node: self.node_name.get(node.idx()).cloned().unwrap_or_default(),
                port,
            });
        };
        self.stats.capture = gp;
        Ok(())
    }

    /// Packets recorded by [`Sim::capture_port`]: (start of transmission, packet).
    pub fn captured(&self) -> &[(Time, Packet)] {
        &self.stats.captured
    }
}
