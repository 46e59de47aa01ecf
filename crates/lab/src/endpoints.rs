//! The NICs every comparison runs with unless a calibration file gives its own:
//! the latency a small message takes through the two NICs and the payload rate a
//! NIC can sustain, each from a published figure (cited beside it), so that the
//! probe latency is end to end and a collective's bandwidth stops at the NIC's
//! ceiling rather than at the wire's.
//!
//! | quantity | InfiniBand HCA | RoCE NIC | source |
//! |---|---|---|---|
//! | one-way small-message latency through both NICs | 600 ns | 800 ns | NVIDIA ConnectX-6 EN user manual, "Introduction": the VPI cards' "sub-600ns latency" (InfiniBand); ConnectX-6 EN 200GbE product brief: "sub 0.8usec latency" (Ethernet); UCX `ib_iface.c` models 600 ns for EDR/HDR/NDR and adds 200 ns on RoCE (flow-level-and-calibration.md §B6) |
//! | payload ceiling | 96.6% of the link's data rate | the same | `ib_write_bw` on 100 Gb/s EDR: 96.6 Gb/s (NVIDIA developer forum, 2023; §B6), inside the ≥ 90% pass criterion of NVIDIA's ngc_multinode_perf (§B6) |
//!
//! The vendors quote an upper bound ("sub-"), measured back to back; the model
//! puts the whole of it at the sender (`tx`), since the published figures do
//! not split it and a ping-pong sees the sum. perftest's `ib_write_lat` halves a
//! round trip, so a simulated run back to back lands on the figure plus the
//! cable and one small packet's serialization (`crates/cli` test
//! `sim_perftest_default_nics_match_the_published_figures`).
//! The RoCE NIC's payload ceiling is taken as the InfiniBand HCA's: the two are
//! the same ConnectX silicon (VPI), and no RoCE `ib_write_bw` at line rate was
//! found in text.

use serde::{Deserialize, Serialize};

use crate::results::NicLatency;

/// A NIC model: what it adds to a message's latency and how fast it sends payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicModel {
    /// Its name, for reports.
    pub name: &'static str,
    /// The latency pair the simulators apply (send, receive).
    pub latency: NicLatency,
    /// Payload ceiling, parts per million of the link's data rate.
    pub payload_ppm: u32,
    /// Where the figures come from.
    pub source: &'static str,
}

/// The InfiniBand HCA of every verbs variant.
pub const IB_HCA: NicModel = NicModel {
    name: "ConnectX-class InfiniBand HCA",
    // NVIDIA ConnectX-6 EN user manual, "Introduction": ConnectX-6 VPI cards'
    // "sub-600ns latency";
    // UCX ib_iface.c: 600 ns for EDR/HDR/NDR (flow-level-and-calibration.md §B6)
    latency: NicLatency {
        tx_ps: 600_000,
        rx_ps: 0,
    },
    payload_ppm: PAYLOAD_PPM,
    source: "600 ns one way: NVIDIA ConnectX-6 user manual, of the VPI cards (\"sub-600ns latency\"), and UCX's latency model for EDR/HDR/NDR; payload ceiling 96.6% of line: ib_write_bw 96.6 Gb/s on 100 Gb/s EDR (NVIDIA developer forum)",
};

/// The RoCE NIC of every RoCEv2 variant.
pub const ROCE_NIC: NicModel = NicModel {
    name: "ConnectX-class RoCE NIC",
    // ConnectX-6 EN product brief: "sub 0.8usec latency"; UCX ib_iface.c adds
    // 200 ns on RoCE to its 600 ns InfiniBand figure (§B6)
    latency: NicLatency {
        tx_ps: 800_000,
        rx_ps: 0,
    },
    payload_ppm: PAYLOAD_PPM,
    source: "800 ns one way: NVIDIA ConnectX-6 EN product brief (\"sub 0.8usec latency\") and UCX's +200 ns for RoCE; payload ceiling as the InfiniBand HCA's (the same ConnectX silicon)",
};

/// 96.6 Gb/s of payload from `ib_write_bw` on a 100 Gb/s EDR link (NVIDIA
/// developer forum, 2023; flow-level-and-calibration.md §B6).
pub const PAYLOAD_PPM: u32 = 966_000;

/// The published one-way small-message latencies the simulated perftest is held
/// to, ns: (InfiniBand, RoCE).
pub const PUBLISHED_ONE_WAY_NS: (f64, f64) = (600.0, 800.0);

/// The published `ib_write_bw` payload rate on 100 Gb/s EDR, Gb/s.
pub const PUBLISHED_EDR_WRITE_BW_GBPS: f64 = 96.6;
