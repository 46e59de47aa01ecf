//! RoCE models: lossless Ethernet (shared-buffer MMU, PFC, ECN), DCQCN, DCTCP and
//! HPCC (INT), the RC transport over Ethernet (go-back-N / go-back-0), the
//! IPoIB kernel TCP cost model. Addressing, ECMP
//! groups and hashing and the RoCEv1 layer-2 check come from the Ethernet control
//! plane (`ethcp`): the switches here forward by its tables.
//!
//! ```text
//!   dcqcn      reaction point (rate), notification point (CNP pacing),
//!              congestion point (RED/ECN), named profiles
//!   buffer     switch MMU: ingress (port, PG) accounting, dynamic threshold,
//!              headroom, XOFF/XON, egress queues (strict + DWRR), DSCP maps
//!   pfc        pause state per (port, priority), quanta, PFC watchdog
//!   transport  RC go-back-N / go-back-0 requester and responder state
//!   ipoib      TCP over IPoIB: per-message / per-byte CPU cost and a cwnd
//!   dctcp      DCTCP sender as HPCC ns-3 runs it (CC_MODE 8)
//!   hpcc_cc    HPCC: INT records, their slab, the sender (CC_MODE 3)
//!   tcp        kernel TCP (NewReno / DCTCP) on the lossy class beside RoCE
//!   net        the packet-level RoCEv2 world built from all of the above
//!   fixtures   small fabrics and flows for tests (feature `testutil`)
//! ```
//!
//! Every component here is a plain struct driven by explicit simulated time
//! ([`crate::engine::Time`]): it holds no event queue of its own. A component
//! with timers reports its next deadline and is `poll`ed at (or after) it, so the
//! same code runs inside the packet engine, in a fluid model, or in a unit test.

pub mod buffer;
pub mod dcqcn;
pub mod dctcp;
mod fifo;
#[cfg(any(test, feature = "testutil"))]
pub mod fixtures;
pub mod hpcc_cc;
pub mod ipoib;
pub mod net;
pub mod pfc;
pub mod tcp;
pub mod transport;
