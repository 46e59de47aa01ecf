//! Model parameters of an InfiniBand run. Every field has a default that a
//! scenario file may override; the defaults and their sources are listed here.

use serde::{Deserialize, Serialize};

use crate::engine::Time;

/// How a switch forwards a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Forwarding {
    /// Start sending once the header is in and the switch latency has passed
    /// (what IB switch ASICs do).
    CutThrough,
    /// Start sending once the whole packet is in and the switch latency has passed.
    StoreAndForward,
}

/// One VL arbitration table entry: (VL, weight in 64-byte units; 0 = skip),
/// IBA vol. 1 §7.6.9 / §14.2.5.9 VLArbitrationTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArbEntry {
    pub vl: u8,
    pub weight: u8,
}

/// VL arbitration: a high- and a low-priority weighted round-robin table and the
/// High-Priority Limit (in 4 KiB units, 255 = unbounded), IBA vol. 1 §7.6.9.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VlArbConfig {
    pub high: Vec<ArbEntry>,
    pub low: Vec<ArbEntry>,
    pub high_limit: u8,
}

impl VlArbConfig {
    /// Every data VL in the low table with equal weight; an empty high table
    /// (what OpenSM programs by default when QoS is off).
    pub fn equal(vls: u8) -> VlArbConfig {
        VlArbConfig {
            high: Vec::new(),
            low: (0..vls.max(1)).map(|vl| ArbEntry { vl, weight: 64 }).collect(),
            high_limit: 0,
        }
    }
}

/// Parameters of the InfiniBand models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IbConfig {
    /// Path MTU in payload bytes (256, 512, 1024, 2048 or 4096; IBA vol. 1 §9.6.1).
    pub mtu: u32,
    /// Port-to-port switch latency in picoseconds. Default 130 ns, the order of what
    /// NVIDIA quotes for its Quantum/Quantum-2 ASICs; set it to the device you model.
    pub switch_latency_ps: u64,
    /// Cut-through or store-and-forward.
    pub forwarding: Forwarding,
    /// Input buffer per switch port per data VL, bytes (credits advertised = this / 64).
    pub switch_buffer_bytes_per_vl: u32,
    /// Receive buffer an HCA port advertises per data VL, bytes.
    pub hca_buffer_bytes_per_vl: u32,
    /// Time from a post to the HCA having the work request (doorbell + WQE fetch), ps.
    pub hca_tx_latency_ps: u64,
    /// Time from a packet's last byte arriving to the HCA acting on it, ps.
    pub hca_rx_latency_ps: u64,
    /// The most payload an HCA port sends, in parts per million of its link's data
    /// rate: the NIC's own ceiling (DMA, PCIe), below the wire's. After a data
    /// packet the port waits until its payload would have taken this long at that
    /// rate (a gap on an otherwise full-rate line); ACKs and MADs carry no payload
    /// and are not held. 0 (and 1,000,000) leave the port at line rate.
    pub hca_payload_ppm: u32,
    /// The responder ACKs every this many packets, and always on the last packet of
    /// a message (AckReq) — ACK coalescing.
    pub ack_every: u32,
    /// Outstanding RDMA READ requests per QP (max_rd_atomic; ConnectX default 16).
    pub max_rd_atomic: u32,
    /// Add a GRH to every data packet (globally routed traffic).
    pub grh: bool,
    /// VL arbitration tables; `None` = equal weights over the VLs in use.
    pub vl_arb: Option<VlArbConfig>,
    /// Drop a packet that has crossed this many links (a forwarding loop).
    pub hop_limit: u8,
    /// InfiniBand congestion control (IBA vol. 1 Annex A10); `None` = off.
    pub cc: Option<CcConfig>,
    /// Adaptive routing: a switch may send a packet out of any port on a shortest
    /// path to its destination, choosing the one with the fewest packets queued
    /// (the LFT's port wins ties); RC responders then reorder by PSN.
    pub adaptive_routing: bool,
}

/// InfiniBand congestion control (IBA vol. 1 Annex A10), simplified to its
/// mechanism: a switch sets FECN on packets that join an output VL queue at or
/// above `threshold_packets`; the destination HCA answers at once with a BECN
/// (an ACK with BECN set); the source QP raises its congestion-control table
/// index by `ccti_increase` (up to `ccti_limit`) and waits `ccti × ipd_step_ps`
/// between its packets; every `ccti_timer_ps` the index drops by one.
/// The CCT here is linear (entry i = i steps); real CCTs hold (shift, multiplier)
/// pairs the SM programs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CcConfig {
    pub threshold_packets: u32,
    pub ccti_increase: u16,
    pub ccti_limit: u16,
    pub ipd_step_ps: u64,
    pub ccti_timer_ps: u64,
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig {
            threshold_packets: 4,
            ccti_increase: 1,
            ccti_limit: 127,
            ipd_step_ps: 40_000,
            ccti_timer_ps: 5_000_000,
        }
    }
}

impl Default for IbConfig {
    fn default() -> Self {
        IbConfig {
            mtu: 4096,
            switch_latency_ps: 130_000,
            forwarding: Forwarding::CutThrough,
            // 64 KiB per VL: a 4 KiB-MTU link of up to ~100 m at 400 Gb/s keeps
            // streaming on credits alone (round trip 1 µs ≈ 50 KB).
            switch_buffer_bytes_per_vl: 65_536,
            hca_buffer_bytes_per_vl: 65_536,
            hca_tx_latency_ps: 0,
            hca_rx_latency_ps: 0,
            hca_payload_ppm: 0,
            ack_every: 16,
            max_rd_atomic: 16,
            grh: false,
            vl_arb: None,
            hop_limit: 64,
            cc: None,
            adaptive_routing: false,
        }
    }
}

/// Engine parameters shared by every model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// The one seed every random draw derives from.
    pub seed: u64,
    /// Sample per-port utilisation and buffer occupancy this often (ps); 0 = off.
    pub sample_interval_ps: u64,
    /// Look for credit deadlocks this often (ps) while packets are in flight;
    /// 0 = only when the event queue drains with packets still buffered.
    pub deadlock_check_ps: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            seed: 1,
            sample_interval_ps: 0,
            deadlock_check_ps: 20_000_000,
        }
    }
}

impl IbConfig {
    /// Switch latency as a [`Time`].
    pub fn switch_latency(&self) -> Time {
        Time(self.switch_latency_ps)
    }

    /// Check every field; the error names the field and what was expected.
    pub fn validate(&self) -> Result<(), crate::SimError> {
        let bad = |field: &'static str, expected: &'static str, got: String| {
            Err(crate::SimError::Config { field, expected, got })
        };
        if ![256, 512, 1024, 2048, 4096].contains(&self.mtu) {
            return bad("mtu", "256, 512, 1024, 2048 or 4096", self.mtu.to_string());
        }
        let min_buf = crate::ib::packet::max_wire(self.mtu);
        if self.switch_buffer_bytes_per_vl < min_buf {
            return bad(
                "switch_buffer_bytes_per_vl",
                "room for one MTU packet",
                self.switch_buffer_bytes_per_vl.to_string(),
            );
        }
        if self.hca_buffer_bytes_per_vl < min_buf {
            return bad(
                "hca_buffer_bytes_per_vl",
                "room for one MTU packet",
                self.hca_buffer_bytes_per_vl.to_string(),
            );
        }
        if self.ack_every == 0 {
            return bad("ack_every", "at least 1", "0".into());
        }
        if self.max_rd_atomic == 0 {
            return bad("max_rd_atomic", "at least 1", "0".into());
        }
        if let Some(cc) = &self.cc
            && (cc.threshold_packets == 0 || cc.ccti_timer_ps == 0)
        {
            return bad("cc", "threshold_packets and ccti_timer_ps above 0", format!("{cc:?}"));
        }
        if let Some(a) = &self.vl_arb
            && a.high.iter().chain(&a.low).any(|e| e.vl >= 15)
        {
            return bad("vl_arb", "data VLs 0..=14", format!("{a:?}"));
        }
        Ok(())
    }
}
