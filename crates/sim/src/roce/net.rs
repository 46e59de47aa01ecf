//! The packet-level RoCEv2 world: Ethernet switches and RoCE NICs on a
//! [`Fabric`], driven by the engine's event queue, per-link FIFOs and packet slab.
//!
//! ```text
//!   NIC (QPs: requester + DCQCN RP, responder + CNP pacer, NicRx)
//!     │  data/ACK/NAK on DSCP 26 (TC3, lossless when PFC is on), CNP on DSCP 48
//!     ▼
//!   switch: classify (DSCP→TC→PG/queue) → ECMP (5-tuple hash) → MMU admit
//!           (reserve / shared ≤ α·free / headroom; XOFF upstream) → egress queue
//!           → strict/DWRR → RED/ECN mark at dequeue → release (XON) → link
//!   links: serialization + propagation; PFC frames ride the link ahead of data
//! ```
//!
//! It is a sibling of the InfiniBand [`crate::Sim`]: the same engine parts
//! ([`PackedQueue`], [`Slab`](crate::engine::Slab), [`TraceHash`], [`Time`]; its link FIFOs are
//! `KeyedFifo`, a denser form of the engine's `Fifo`) with its own closed
//! event enum, because nothing of the IB credit path applies to a lossy-or-PFC
//! Ethernet link. Switches are store-and-forward.
//!
//! Two ways to drive it: a list of [`FlowSpec`]s started at their times (ns-3
//! HPCC style, FCT records out), or verbs style, as a collective runner does:
//!
//! ```text
//!   let q = sim.open_qp(a, b)?;            // one RC QP, its own UDP source port
//!   sim.post(q, bytes, tag)?;              // SEND now
//!   match sim.run(until) {
//!       RoceStatus::Delivered => for d in sim.take_delivered() { /* d.tag, d.done */ },
//!       RoceStatus::TimeLimit | RoceStatus::Done => …,   // reached / idle
//!       RoceStatus::Deadlock(d) => …,      // PFC deadlock, cycle named
//!       RoceStatus::Stuck => …,
//!   }
//! ```
//!
//! Event order: by time, and at one picosecond by the event itself (its kind in
//! the order of `Ev`'s variants, then a hash of its component and time: see
//! `tie`), never by when it was scheduled. So the order of a run is a function of its events alone: the
//! part of a run that one set of switches and NICs sees does not depend on
//! what the rest of the fabric did at the same picosecond, which is what a
//! run split over threads needs to give the same bytes as one thread. For the
//! same reason RED/ECN draws come from a random stream per switch, and the
//! trace hash is a sum over events ([`TraceHash::add`]).
//!
//! Conservation: every packet is created once and ends delivered, dropped with a
//! [`RoceDrop`] reason, or in flight; drops on a lossless priority other than a
//! watchdog's are model or configuration faults and are reported as such.
//!
//! The world is cut by what the code does, each part a type that owns its
//! state; [`RoceSim`] holds them, the engine (clock, event queue, trace) and the
//! results callers read, and runs the one event loop:
//!
//! ```text
//!   RoceSim ── now, queue, trace, live packets, cfg, fabric, role, results (ledger, fct, pfc, …)
//!    ├─ links:  Links      (links.rs)    ports, pause state, link FIFOs, loss injection
//!    ├─ sw:     Switching  (switch.rs)   switch records (MMU, schedulers, RED, watchdogs),
//!    │                                   egress queues, ECMP, overrides, route cache
//!    ├─ hosts:  Hosts      (nic.rs)      NICs, flows (QPs, DCQCN/DCTCP/HPCC), TCP, INT headers
//!    ├─ faults: Faults     (faults.rs)   watchdog, link failures, deadlock search
//!    └─ obs:    Observe    (observe.rs)  hops, progress, capture; the look-ups callers read
//!   build.rs: RoceSim::new in named steps; config.rs: RoceConfig; par.rs: the split run
//! ```
//!
//! A step is an `impl RoceSim` method in the file of the part it concerns: a
//! packet's hop touches several parts (a switch's arrival reads its port, the
//! switch's MMU, the flow's route and the ledger), and the one event loop
//! (`event_loop`, `inline(never)`) inlines every step into one place, which a
//! part-local method taking the other parts as arguments would not change.
//! The parts own their fields; the steps reach them as `self.links.ports`,
//! `self.sw.switches`, and so on.

mod build;
mod config;
mod faults;
mod links;
mod nic;
mod observe;
mod par;
mod switch;

pub use config::{
    CongestionControl, FaultConfig, NicConfig, NicRxConfig, ObserveConfig, PfcConfig, RoceConfig, RoutingConfig,
    SwitchConfig,
};
use faults::Faults;
use links::{Links, Port, PortCold};
use nic::{Flow, Hosts, Nic};
use observe::Observe;
pub use observe::{FctRecord, PfcRecord};
use switch::{Switch, Switching};

use crate::engine::queue::EV_BITS;
use crate::engine::ring::{HeadRing, Ring};
use crate::engine::time::Serializer;
use crate::engine::{Packed, PackedQueue, Table, prefetch};
use crate::engine::{Time, TraceHash};
use crate::roce::buffer::{Admit, Mmu, MmuConfig, MmuDrop, NPRIO, QosMaps, Scheduler, hpcc_headroom_bytes};
use crate::roce::dcqcn::{CnpPacer, DcqcnParams, ReactionPoint, Red};
use crate::roce::dctcp::DctcpRp;
use crate::roce::fifo::{KeyedFifo, WideKeys};
use crate::roce::hpcc_cc::{HpccRp, INT_BYTES, IntHop, IntStore};
use crate::roce::pfc::{PauseFrame, PauseGen, PauseMode, PausedTx, QueueSample, Watchdog, WdAction, WdConfig, WdEvent};
use crate::roce::tcp::{TcpConfig, TcpFlowSpec, TcpWorld};
use crate::roce::transport::{Completion, NicRx, Recovery, Requester, RequesterConfig, Responder, RxVerdict};
use ethcp::{EcmpTable, FlowKey, HashConfig, HashFn, field, host_ip};
use fabric::{Fabric, LinkId, NodeId, NodeKind};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use wire::Psn;

const NONE: u32 = u32::MAX;

/// Header bytes of a RoCEv2 frame: Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 +
/// ICRC 4 + FCS 4 (IBA Annex A17; IEEE 802.3).
pub const ROCEV2_HEADERS: u32 = 62;

/// An ACK/NAK: headers + AETH 4.
pub const ACK_BYTES: u32 = ROCEV2_HEADERS + 4;

/// A CNP: headers + 16 reserved bytes (IBA Annex A17.9.3).
pub const CNP_BYTES: u32 = ROCEV2_HEADERS + 16;

/// A PFC frame: the 64-byte minimum Ethernet frame (IEEE 802.1Qbb).
pub const PAUSE_BYTES: u32 = 64;

/// DSCP of RoCE data (the NVIDIA convention, ToS 106).
pub const DSCP_ROCE: u8 = 26;

/// DSCP of CNPs (NVIDIA firmware default `CNP_DSCP` 48).
pub const DSCP_CNP: u8 = 48;

/// TTL of the IPv4 header the NIC writes (Linux `ip_default_ttl` 64).
pub const IP_TTL: u8 = 64;

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoceDrop {
    /// A lossy PG over its dynamic threshold.
    LossyOverThreshold,
    /// A lossless PG's headroom overflowed (a bug: too little headroom or a
    /// peer that ignored the pause).
    HeadroomOverflow,
    /// The PFC watchdog dropped it (action `drop` on a stormed queue).
    Watchdog,
    /// No ECMP route to the destination.
    NoRoute,
    /// Sent into a failed link.
    LinkDown,
    /// The NIC receive buffer was full (or the NIC is faulty).
    NicRxDiscard,
    /// Deliberate loss injected on a link (the go-back experiments).
    Injected,
    /// Sent to a faulty NIC (its receive pipeline is stuck), e.g. after the
    /// watchdog turned its queue lossy.
    FaultyNic,
    /// The IP TTL ran out (a routing loop, e.g. a bounce during convergence).
    TtlExpired,
}

impl RoceDrop {
    /// Every reason, in report order.
    pub const ALL: [RoceDrop; 9] = [
        RoceDrop::LossyOverThreshold,
        RoceDrop::HeadroomOverflow,
        RoceDrop::Watchdog,
        RoceDrop::NoRoute,
        RoceDrop::LinkDown,
        RoceDrop::NicRxDiscard,
        RoceDrop::Injected,
        RoceDrop::FaultyNic,
        RoceDrop::TtlExpired,
    ];
}

/// Counters that must balance.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RoceLedger {
    /// Packets created (data, ACK/NAK, CNP, PFC frames).
    pub created: u64,
    /// Packets consumed where they were going.
    pub delivered: u64,
    /// Drops by reason (indexed like [`RoceDrop::ALL`]), all priorities.
    pub dropped: [u64; 9],
    /// Of those, drops of packets on a lossless (PFC) priority.
    pub dropped_lossless: [u64; 9],
}

impl RoceLedger {
    /// Total drops.
    pub fn total_dropped(&self) -> u64 {
        self.dropped.iter().sum()
    }

    /// Drops on lossless priorities that are not the watchdog's, injected, at a
    /// faulty NIC or a routing loop's TTL: each one is a buffer fault of the model
    /// or the configuration.
    pub fn lossless_faults(&self) -> u64 {
        self.dropped_lossless
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                !matches!(
                    RoceDrop::ALL[*i],
                    RoceDrop::Watchdog | RoceDrop::Injected | RoceDrop::FaultyNic | RoceDrop::TtlExpired
                )
            })
            .map(|x| x.1)
            .sum()
    }
}

/// One flow: `messages` messages of `size` bytes from `src` to `dst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Bytes per message.
    pub size: u64,
    /// Number of messages (posted together at the start).
    pub messages: u32,
    /// Start time.
    pub start: Time,
    /// UDP source port (the ECMP entropy).
    pub sport: u16,
    /// UDP destination port as reported in fct.txt (HPCC: 100 background, 200 incast).
    pub dport: u16,
}

impl FlowSpec {
    /// Split a connection over `qps` queue pairs (NCCL's `NCCL_IB_QPS_PER_CONNECTION`,
    /// Meta's QP scaling): each QP carries `size / qps` of every message (the first
    /// ones one byte more when it does not divide), and gets the UDP source port
    /// the NIC derives from its QP numbers, so ECMP sees `qps` flows.
    pub fn split_qps(&self, qps: u32, first_qpn: u32) -> Vec<FlowSpec> {
        let n = u64::from(qps.max(1));
        (0..n)
            .map(|k| {
                let size = self.size / n + u64::from(k < self.size % n);
                let lqpn = first_qpn + 2 * k as u32;
                FlowSpec {
                    size,
                    sport: ethcp::roce_udp_sport(lqpn, lqpn + 1),
                    ..*self
                }
            })
            .collect()
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Kind {
    #[default]
    Data,
    Ack,
    Nak,
    Cnp,
    Pause,
    /// A TCP segment ([`crate::roce::tcp`]): `flow` indexes the TCP flows,
    /// [`Pkt::tcp_seq`] is the segment number.
    TcpData,
    /// A TCP cumulative ACK: [`Pkt::tcp_seq`] is the next segment expected, `ce`
    /// the ECE echo.
    TcpAck,
}

impl Kind {
    #[inline]
    fn is_tcp(self) -> bool {
        matches!(self, Kind::TcpData | Kind::TcpAck)
    }
}

/// A packet in flight: 16 bytes, as it is copied into a link FIFO (24-byte
/// entries with its arrival time as a step: [`KeyedFifo`]) and an
/// egress queue on every hop.
/// Its end hosts are not stored: they are its flow's (see [`RoceSim::ends`]);
/// nor its payload, which its kind and wire size give (see [`RoceSim::payload`]).
#[derive(Clone, Copy, Debug, Default)]
struct Pkt {
    flow: u32,
    /// The sequence word, whose meaning `kind` gives: read it through
    /// [`Pkt::psn`] (RDMA data, ACK, NAK, CNP), [`Pkt::tcp_seq`] (TCP) or
    /// [`Pkt::pause`] (a pause frame), each of which checks the kind in debug
    /// builds; write it with [`Pkt::pause_word`] for a pause frame. One word
    /// for three meanings keeps the packet at 16 bytes (an enum payload would
    /// take 8 bytes more with its tag; `kind` is the tag).
    seq: u32,
    /// Bytes on the wire (at most 9000 + headers: fits 16 bits).
    wire: u16,
    /// HPCC: handle of this packet's INT header in `Hosts::int` (0 = none).
    int: u16,
    kind: Kind,
    dscp: u8,
    /// Switches crossed so far: the IP TTL is `IP_TTL - hops` (RoCEv2 rides IP;
    /// counting up keeps `Pkt::default()` a fresh packet).
    hops: u8,
    /// [`Pkt::CE`], [`Pkt::FIRST`], [`Pkt::LAST`], [`Pkt::WD_FWD`].
    flags: u8,
}

const _: () = assert!(std::mem::size_of::<Pkt>() == 16);

impl Pkt {
    /// ECN Congestion Experienced (an ACK: the DCTCP echo; TCP: ECE).
    const CE: u8 = 1;
    /// First / last packet of its message.
    const FIRST: u8 = 2;
    const LAST: u8 = 4;
    /// Sent by a queue whose PFC watchdog (action forward) ignores pauses: a
    /// downstream headroom overflow is then the watchdog's doing.
    const WD_FWD: u8 = 8;

    #[inline]
    fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    #[inline]
    fn set(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// A pause frame's priority and quanta (quanta 0 = XON).
    #[inline]
    fn pause(&self) -> (u8, u16) {
        debug_assert_eq!(self.kind, Kind::Pause);
        ((self.seq >> 16) as u8, self.seq as u16)
    }

    /// The sequence word of a pause frame of `prio` with `quanta`.
    #[inline]
    fn pause_word(prio: u8, quanta: u16) -> u32 {
        (u32::from(prio) << 16) | u32::from(quanta)
    }

    /// An RDMA packet's PSN (data: its own; ACK/NAK: the PSN acknowledged).
    #[inline]
    fn psn(&self) -> Psn {
        debug_assert!(matches!(self.kind, Kind::Data | Kind::Ack | Kind::Nak | Kind::Cnp));
        Psn::new(self.seq)
    }

    /// A TCP segment's number, or a TCP ACK's next expected segment.
    #[inline]
    fn tcp_seq(&self) -> u32 {
        debug_assert!(self.kind.is_tcp());
        self.seq
    }
}

/// Closed event set of the RoCE world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Arrive { dir: u32 },
    TxWake { gp: u32 },
    FlowStart { flow: u32 },
    NicTimer { nic: u32 },
    PauseTimer { gp: u32 },
    WdPoll,
    Check,
    LinkFail { link: u32 },
    Converge,
}

/// Bits of an event's component id (the rest of [`EV_BITS`] holds the kind).
const ID_BITS: u32 = EV_BITS - 4;

/// An event as the queue holds it: its kind (the order of [`Ev`]'s variants) in
/// the top 4 of [`EV_BITS`] bits, its component id below. The run loop keeps it
/// packed: the look-aheads test the kind bits, the trace folds the word, and
/// [`EvWord::ev`] decodes it once, for the dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EvWord(u32);

impl Packed for EvWord {
    #[inline(always)]
    fn pack(self) -> u32 {
        self.0
    }
    #[inline(always)]
    fn unpack(v: u32) -> EvWord {
        EvWord(v)
    }
}

impl EvWord {
    /// [`Ev::Arrive`]'s kind.
    const ARRIVE: u32 = 0;
    /// [`Ev::TxWake`]'s kind.
    const TX_WAKE: u32 = 1;

    #[inline(always)]
    fn kind(self) -> u32 {
        self.0 >> ID_BITS
    }

    #[inline(always)]
    fn id(self) -> u32 {
        self.0 & ((1 << ID_BITS) - 1)
    }

    /// The word the trace hash folds: kind << 32 | id.
    #[inline(always)]
    fn trace_word(self) -> u64 {
        (u64::from(self.kind()) << 32) | u64::from(self.id())
    }

    /// The event.
    #[inline(always)]
    fn ev(self) -> Ev {
        let id = self.id();
        match self.kind() {
            EvWord::ARRIVE => Ev::Arrive { dir: id },
            EvWord::TX_WAKE => Ev::TxWake { gp: id },
            2 => Ev::FlowStart { flow: id },
            3 => Ev::NicTimer { nic: id },
            4 => Ev::PauseTimer { gp: id },
            5 => Ev::WdPoll,
            6 => Ev::Check,
            7 => Ev::LinkFail { link: id },
            _ => Ev::Converge,
        }
    }
}

impl Ev {
    #[inline(always)]
    fn pack(self) -> EvWord {
        let (k, id) = match self {
            Ev::Arrive { dir } => (0, dir),
            Ev::TxWake { gp } => (1, gp),
            Ev::FlowStart { flow } => (2, flow),
            Ev::NicTimer { nic } => (3, nic),
            Ev::PauseTimer { gp } => (4, gp),
            Ev::WdPoll => (5, 0),
            Ev::Check => (6, 0),
            Ev::LinkFail { link } => (7, link),
            Ev::Converge => (8, 0),
        };
        debug_assert!(id < 1 << ID_BITS);
        EvWord((k << ID_BITS) | id)
    }
}

/// A message received whole at its destination (dynamic QPs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// The caller's tag from [`RoceSim::post`].
    pub tag: u64,
    /// When it was posted.
    pub posted: Time,
    /// When its last packet was received in order.
    pub done: Time,
}

/// A PFC deadlock: the cycle of paused switch egress queues.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PfcDeadlock {
    /// When it was found.
    pub at: Time,
    /// `(switch, egress port, priority)` around the cycle: each queue holds
    /// packets it may not send because the next switch paused that priority, and
    /// the next switch's paused ingress holds packets queued for the next entry.
    pub cycle: Vec<(String, u8, u8)>,
}

impl std::fmt::Display for PfcDeadlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PFC deadlock at {}: ", self.at)?;
        for (i, (s, p, q)) in self.cycle.iter().enumerate() {
            if i > 0 {
                write!(f, " → ")?;
            }
            write!(f, "{s}/{p} prio {q}")?;
        }
        Ok(())
    }
}

/// Why [`RoceSim::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoceStatus {
    /// Every flow finished and nothing is in flight.
    Done,
    /// The time limit was reached.
    TimeLimit,
    /// A PFC deadlock was found.
    Deadlock(PfcDeadlock),
    /// No events left with flows unfinished (everything is paused until an XON
    /// that will never come).
    Stuck,
    /// Messages posted with [`RoceSim::post`] were delivered: take them with
    /// [`RoceSim::take_delivered`].
    Delivered,
}

/// Errors building a RoCE world.
#[derive(Debug, thiserror::Error)]
pub enum RoceError {
    /// A flow names a node that is not a host.
    #[error("add flow {flow}: node {node} is not a NIC")]
    NotNic { flow: usize, node: String },
    /// A configuration value is out of range.
    #[error("accept RoCE setting `{field}`: {why}")]
    Config { field: &'static str, why: String },
    /// A RoCEv1 flow whose path leaves its layer-2 domain.
    #[error("add flow {flow}")]
    RoceV1 {
        flow: usize,
        #[source]
        why: ethcp::RoceV1Error,
    },
}

/// The RoCE world: the engine's clock, queue and trace, the parts of the
/// model (see the module doc), and the results callers read as fields.
#[derive(Clone)]
pub struct RoceSim {
    now: Time,
    q: PackedQueue<EvWord>,
    trace: TraceHash,
    /// Packets alive (created, not yet delivered or dropped). Packets move by
    /// value through link FIFOs and queues (16 bytes, no slab look-up per hop).
    live: u64,
    cfg: RoceConfig,
    fabric: Fabric,
    /// Node → (is a switch, switch or NIC index).
    role: Table<(bool, u32)>,
    /// Links and PFC.
    links: Links,
    /// Switches, their queues and forwarding state.
    sw: Switching,
    /// NICs, flows and background TCP.
    hosts: Hosts,
    /// Faults, the watchdog and the deadlock search.
    faults: Faults,
    /// Counters, progress and capture.
    obs: Observe,
    /// Ledger.
    pub ledger: RoceLedger,
    /// fct.txt records, in completion order.
    pub fct: Vec<FctRecord>,
    /// pfc.txt records.
    pub pfc: Vec<PfcRecord>,
    /// Message completions (flow, completion).
    pub completions: Vec<(u32, Completion)>,
    /// Data packets marked CE by switches.
    pub ecn_marks: u64,
    /// CNPs sent by notification points.
    pub cnps_sent: u64,
    /// Events processed.
    pub events: u64,
    /// Watchdog transitions: (time, switch, port, queue, event).
    pub wd_log: Vec<(Time, String, u8, u8, WdEvent)>,
    /// Set by [`RoceSim::drive`]: the world is fed from outside, so it never
    /// reports `Done` and an idle world lets time pass to `until`.
    driven: bool,
    /// Threads the last [`RoceSim::run_threads`] used (1 after [`RoceSim::run`]).
    threads_used: usize,
    /// Why the last [`RoceSim::run_threads`] ran on one thread when asked for more.
    one_thread_why: Option<&'static str>,
    /// In a part of a run split over threads: packets sent over cut cables
    /// this window (see `par`).
    outbox: Vec<par::Crossing>,
    /// The INT headers of the HPCC packets among them, in order.
    outbox_int: Vec<crate::roce::hpcc_cc::IntHeader>,
}

/// Where an event stands among the events of its picosecond: its kind first
/// (arrivals, then wake-ups, then the rest in the order of `Ev`'s variants),
/// then a hash of its component and time, so that no port or link is always
/// first when several are at the same picosecond (as the lowest id would be
/// in a lock-step fabric), and the order is still a function of the event
/// alone. The queue's sequence field (36 bits) holds it.
#[inline(always)]
fn tie(t: Time, w: EvWord) -> u64 {
    let h = (t.0 ^ u64::from(w.0).wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xd6e8_feb8_6659_fd93);
    (u64::from(w.kind()) << 32) | (h >> 32)
}

/// How many events ahead [`RoceSim::run`] prefetches an arrival's packet.
const PREFETCH_AHEAD: usize = 2;

/// A `route_cache` slot not filled yet.
const NO_ROUTE: u8 = u8::MAX;

impl RoceSim {
    /// The configuration it was built with.
    pub fn config(&self) -> &RoceConfig {
        &self.cfg
    }

    /// Threads the last run was split over (1 if it was not split).
    pub fn last_threads(&self) -> usize {
        self.threads_used
    }

    /// Current time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Determinism hash of the events so far.
    pub fn trace_hash(&self) -> u64 {
        self.trace.0
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> u64 {
        self.live
    }

    /// `created == delivered + dropped + in flight`?
    pub fn ledger_balances(&self) -> bool {
        self.ledger.created == self.ledger.delivered + self.ledger.total_dropped() + self.in_flight()
    }

    /// Run until every flow is done, `until`, a deadlock, or nothing can move.
    pub fn run(&mut self, until: Time) -> RoceStatus {
        self.threads_used = 1;
        self.one_thread_why = None;
        let (fct, pfc, completions) = (self.fct.len(), self.pfc.len(), self.completions.len());
        let status = self.run_events(until);
        self.sort_records(fct, pfc, completions);
        status
    }

    /// Put the records added since the given lengths in their order: by time,
    /// then by what they name (a stable sort, so the records of one port keep
    /// the order they were made in). Events of one picosecond at different
    /// nodes are not ordered by anything physical; this order is the same
    /// whether the run was split over threads or not.
    fn sort_records(&mut self, fct: usize, pfc: usize, completions: usize) {
        self.fct[fct..].sort_by_key(|r| (r.start_ns + r.fct_ns, r.sip, r.dip, r.sport, r.dport));
        self.pfc[pfc..].sort_by_key(|r| (r.time_ns, r.node, r.if_index));
        self.completions[completions..].sort_by_key(|(f, c)| (c.done, *f));
    }

    /// Start loading what the next few events will read (see `run_events`).
    #[inline(always)]
    fn lookahead_prefetch(&self) {
        // An arrival a couple of events ahead reads its link FIFO's head, written
        // a cable's delay ago and long out of cache: start loading it now, so the
        // load overlaps the events in between (the single costliest miss per hop).
        // Likewise a switch port's wake-up reads the head of the queue it will
        // serve (nothing depends on these loads: they overlap the current event).
        // In stages, so that no stage waits on a load an earlier one did not
        // start: three events ahead the first line each event reads (an
        // arrival's FIFO ring pointers, a wake-up's port line).
        {
            // Both kinds read the link FIFO's header (an arrival pops it, a
            // send pushes to it); a wake-up reads its port's line too. The
            // second hint is chosen without a branch on the kind (for an
            // arrival it repeats the first; the rare other kinds' ids make
            // harmless hints).
            let a = EvWord(self.q.peek_ahead_clamped(PREFETCH_AHEAD + 1));
            let id = (a.id() as usize).min(self.links.link_fifo.len() - 1);
            let fifo = &self.links.link_fifo[id];
            prefetch::whole(fifo);
            let port = self.links.ports.as_ptr().wrapping_add(id).cast::<u8>();
            let fifo = (fifo as *const KeyedFifo<Pkt>).cast::<u8>();
            prefetch::addr(std::hint::select_unpredictable(a.kind() == EvWord::TX_WAKE, port, fifo));
        }
        if let Some((_, a)) = self.q.peek_ahead(PREFETCH_AHEAD) {
            if a.kind() == EvWord::ARRIVE {
                let dir = a.id();
                let to = self.links.peer[dir as usize];
                prefetch::whole(&self.links.ports[to as usize]);
                // The head and the entry after it (whose time the
                // pop reads to schedule the next arrival): often two lines.
                let (head, next) = self.links.link_fifo[dir as usize].first_two();
                if let Some(head) = head {
                    prefetch::whole(head);
                    if let Some(next) = next {
                        prefetch::whole(next);
                    }
                }
            } else if a.kind() == EvWord::TX_WAKE {
                self.prefetch_egress(a.id());
            }
        }
    }

    fn run_events(&mut self, until: Time) -> RoceStatus {
        if let Some(d) = &self.faults.deadlock {
            return RoceStatus::Deadlock(d.clone());
        }
        self.event_loop(until, u128::MAX, false)
            .expect("a whole world's run ends with a status")
    }

    /// The event loop of [`Self::run`] and of a split run's window (`part`:
    /// run the events whose queue key is below `bound`, then return `None`;
    /// the whole world's ends, done, stuck or `until`, are the coordinator's
    /// to see). One loop for both, so that the compiler inlines the model
    /// into one place (with two, it moved the arrival out of line: 7% slower).
    #[inline(never)]
    fn event_loop(&mut self, until: Time, bound: u128, part: bool) -> Option<RoceStatus> {
        loop {
            if !part {
                if !self.hosts.delivered.is_empty() {
                    return Some(RoceStatus::Delivered);
                }
                if self.hosts.flows_left == 0 && self.live == 0 && !self.driven {
                    return Some(RoceStatus::Done);
                }
            }
            // `first` makes the earliest event the head of the calendar's current
            // slot, so the pop below is O(1).
            let Some((t, w)) = self.q.first() else {
                if part {
                    return None;
                }
                if self.driven && until != Time::NEVER {
                    // Nothing moves until the driver posts more: let the clock run
                    // to `until`, as a NIC waiting on its host would.
                    self.now = until.max(self.now);
                    return Some(RoceStatus::TimeLimit);
                }
                return Some(if self.hosts.flows_left == 0 {
                    RoceStatus::Done
                } else {
                    RoceStatus::Stuck
                });
            };
            if part {
                if par::key(t, w.0) >= bound {
                    return None;
                }
            } else if t > until {
                self.now = until.max(self.now);
                return Some(RoceStatus::TimeLimit);
            }
            self.lookahead_prefetch();
            self.q.pop_first();
            self.now = t;
            self.events += 1;
            self.trace.add(t.0, w.trace_word());
            let status = self.dispatch(t, w.ev());
            if status.is_some() {
                debug_assert!(!part, "a part's event ended the run");
                return status;
            }
        }
    }

    /// Schedule `ev` at `t`. Events at the same picosecond run in the order of
    /// their kind, then a hash of their component and time (see [`tie`]), not in the
    /// order they were scheduled: see [`RoceSim::run`].
    #[inline]
    fn push_ev(&mut self, t: Time, ev: Ev) {
        let w = ev.pack();
        self.q.push_seq(t, tie(t, w), w);
    }

    /// Handle one event; `Some` ends the run.
    #[inline(always)]
    fn dispatch(&mut self, t: Time, ev: Ev) -> Option<RoceStatus> {
        match ev {
            Ev::Arrive { dir } => {
                let d = dir as usize;
                let (p, next) = self.links.link_fifo[d]
                    .pop(&mut self.links.link_wide[d])
                    .expect("FIFO head");
                if let Some(nt) = next {
                    self.push_ev(nt, Ev::Arrive { dir });
                }
                let to = self.links.peer[dir as usize];
                self.arrive(to, p);
            }
            Ev::TxWake { gp } => {
                if self.links.ports[gp as usize].wake_at == t {
                    self.links.ports[gp as usize].wake_at = Time::NEVER;
                    self.try_tx(gp);
                }
            }
            Ev::FlowStart { flow } => self.flow_start(flow),
            Ev::NicTimer { nic } => {
                if self.hosts.nics[nic as usize].timer_at == t {
                    self.hosts.nics[nic as usize].timer_at = Time::NEVER;
                    self.nic_timer(nic);
                }
            }
            Ev::PauseTimer { gp } => {
                if self.links.pc[gp as usize].pause_timer_at == t {
                    self.links.pc[gp as usize].pause_timer_at = Time::NEVER;
                    self.pause_refresh(gp);
                }
            }
            Ev::WdPoll => self.on_wd_poll(),
            Ev::Check => return self.on_check(),
            Ev::LinkFail { link } => self.on_link_fail(link),
            Ev::Converge => self.on_converge(),
        }
        None
    }

    /// The sending and receiving host of `pk` (node indices): its flow's, the
    /// other way round for replies; a pause frame has no flow (`NONE`, `NONE`).
    #[inline]
    fn ends(&self, pk: &Pkt) -> (u32, u32) {
        let (s, d) = match pk.kind {
            Kind::Pause => return (NONE, NONE),
            Kind::TcpData | Kind::TcpAck => {
                let t = self.hosts.tcp.spec(pk.flow);
                (t.src.0, t.dst.0)
            }
            Kind::Data | Kind::Ack | Kind::Nak | Kind::Cnp => {
                let f = &self.hosts.flows[pk.flow as usize].spec;
                (f.src.0, f.dst.0)
            }
        };
        if matches!(pk.kind, Kind::Data | Kind::TcpData) {
            (s, d)
        } else {
            (d, s)
        }
    }

    /// Payload bytes of `pk`: its wire size less the headers of its kind (RoCEv2,
    /// plus the INT header in an HPCC run, where every data packet carries one;
    /// TCP/IPv4); none for ACKs, CNPs and pause frames.
    #[inline]
    fn payload(&self, pk: &Pkt) -> u32 {
        match pk.kind {
            Kind::Data => u32::from(pk.wire) - ROCEV2_HEADERS - if self.hosts.hpcc_on { INT_BYTES } else { 0 },
            Kind::TcpData => u32::from(pk.wire) - crate::roce::tcp::TCP_HEADERS,
            _ => 0,
        }
    }

    fn new_pkt(&mut self, p: Pkt) -> Pkt {
        self.ledger.created += 1;
        // Wrapping: a part of a split run counts the packets it made less the
        // ones it consumed, which may be fewer (see `par`).
        self.live = self.live.wrapping_add(1);
        p
    }

    fn deliver(&mut self, p: Pkt) {
        if p.int != 0 {
            self.hosts.int.release(p.int);
        }
        self.ledger.delivered += 1;
        self.live = self.live.wrapping_sub(1);
    }

    fn drop_pkt(&mut self, p: Pkt, why: RoceDrop) {
        let i = RoceDrop::ALL.iter().position(|r| *r == why).expect("listed");
        self.ledger.dropped[i] += 1;
        if p.int != 0 {
            self.hosts.int.release(p.int);
        }
        if p.kind.is_tcp() {
            self.hosts.tcp.on_drop(i);
        }
        let pk = p;
        let (_, pg, _) = self.links.maps.classify(pk.dscp);
        if pk.kind != Kind::Pause && self.links.maps.lossless(pg) {
            self.ledger.dropped_lossless[i] += 1;
        }
        self.live = self.live.wrapping_sub(1);
    }

    /// The node port `gp` belongs to.
    fn node_of(&self, gp: u32) -> u32 {
        match self.links.ports[gp as usize].owner() {
            (true, si) => self.sw.switches[si as usize].node,
            (false, ni) => self.hosts.nics[ni as usize].node,
        }
    }
}

impl std::fmt::Debug for RoceSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoceSim")
            .field("now", &self.now)
            .field("nodes", &self.role.len())
            .field("in_flight", &self.live)
            .finish()
    }
}
