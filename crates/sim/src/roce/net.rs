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
//! Why one file: `RoceSim` holds the Ethernet world's state (links and PFC, switch
//! forwarding and MMU, NICs and rate control, faults and watchdog, observation) in one
//! struct and runs its one event loop, which inlines every model into one place (see
//! `net::par` for why the loop is shared with the split run); the components with their
//! own state already live in their own files (`buffer`, `pfc`, `dcqcn`, `hpcc_cc`,
//! `dctcp`, `tcp`, `transport`, `fifo`). Cutting `RoceSim` itself into parts that own
//! their fields is the next step of its design.

mod par;

use std::collections::VecDeque;

use ethcp::{EcmpTable, FlowKey, HashConfig, HashFn, field, host_ip};
use fabric::{Fabric, LinkId, NodeId, NodeKind};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use wire::Psn;

use crate::engine::queue::EV_BITS;
use crate::engine::ring::{HeadRing, Ring};
use crate::engine::time::Serializer;
use crate::engine::{Packed, PackedQueue, Table, prefetch};
use crate::engine::{Time, TraceHash};
use crate::roce::buffer::{Admit, Mmu, MmuConfig, MmuDrop, NPRIO, QosMaps, Scheduler, hpcc_headroom_bytes};
use crate::roce::dcqcn::{CnpPacer, DcqcnParams, ReactionPoint, Red};
use crate::roce::dctcp::DctcpRp;
use crate::roce::fifo::{KeyedFifo, WideKeys};
use crate::roce::hpcc::{FctRecord, PfcRecord};
use crate::roce::hpcc_cc::{HpccRp, INT_BYTES, IntHop, IntStore};
use crate::roce::pfc::{PauseFrame, PauseGen, PauseMode, PausedTx, QueueSample, Watchdog, WdAction, WdConfig, WdEvent};
use crate::roce::tcp::{TcpConfig, TcpFlowSpec, TcpWorld};
use crate::roce::transport::{Completion, NicRx, Recovery, Requester, RequesterConfig, Responder, RxVerdict};

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

/// How the NICs control congestion.
#[derive(Clone, Debug, PartialEq)]
pub enum CongestionControl {
    /// Line rate, no reaction to ECN.
    None,
    /// DCQCN with these parameters (`line_bps` is replaced per NIC).
    Dcqcn(DcqcnParams),
    /// DCTCP as HPCC ns-3 runs it (`CC_MODE 8`): ACKs echo CE, the sender's rate
    /// follows α (`line_bps` is replaced per NIC).
    Dctcp(crate::roce::dctcp::DctcpParams),
    /// HPCC as HPCC ns-3 runs it (`CC_MODE 3`): switches append INT records at
    /// egress, ACKs echo them, the sender's rate follows the most utilised hop
    /// (`line_bps` is replaced per NIC).
    Hpcc(crate::roce::hpcc_cc::HpccParams),
}

/// Parameters of a RoCE run.
/// The Ethernet world's settings, grouped by the part of the model they set.
#[derive(Clone, Debug)]
pub struct RoceConfig {
    /// The NICs: transport, congestion control and receive side.
    pub nic: NicConfig,
    /// The switches: shared buffer, ECN marking, PFC watchdog, pipeline latency, DSCP mapping.
    pub switch: SwitchConfig,
    /// Priority flow control (IEEE 802.1Qbb) on the RDMA priority.
    pub pfc: PfcConfig,
    /// Layer 3 and layer 2 forwarding: the ECMP hash, convergence and repair after failures, static overrides, RoCEv1's L2 mode.
    pub routing: RoutingConfig,
    /// Faults injected into the run.
    pub faults: FaultConfig,
    /// What the run watches and records.
    pub observe: ObserveConfig,
    /// Seed for every random draw (ECN marking).
    pub seed: u64,
}

/// The NICs: transport, congestion control and receive side.
#[derive(Clone, Debug)]
pub struct NicConfig {
    /// Payload bytes per packet.
    pub mtu: u32,
    /// NIC congestion control.
    pub cc: CongestionControl,
    /// Loss recovery.
    pub recovery: Recovery,
    /// Retransmit timeout.
    pub rto: Time,
    /// Responder ACK coalescing (1 = every packet, as HPCC's L2_ACK_INTERVAL 1).
    pub ack_every: u32,
    /// NIC receive buffer on the lossless priority.
    pub nic_rx: NicRxConfig,
    /// NIC PFC stall prevention (`pfc-prevention-tout`).
    pub nic_stall_prevention: Option<Time>,
    /// HPCC `ACK_HIGH_PRIO`: the NIC's ACK/NAK/CNP queue (always served before
    /// data) is checked against PFC class 0, which is never paused, instead of the
    /// data class (reference §1.1.4). Switches do not prioritise ACKs either way.
    pub ack_high_prio: bool,
}

/// The switches: shared buffer, ECN marking, PFC watchdog, pipeline latency, DSCP mapping.
#[derive(Clone, Debug)]
pub struct SwitchConfig {
    /// Switch shared buffer, bytes.
    pub buffer_bytes: u64,
    /// ECN marking at switches (RED per link rate from `red`, else the DCQCN profile's).
    pub ecn: bool,
    /// RED per link rate (bits/s); rates not listed use the profile's curve.
    pub red: Vec<(u64, Red)>,
    /// PFC watchdog on every switch lossless queue.
    pub watchdog: Option<WdConfig>,
    /// Switches whose DSCP map sends the RDMA DSCP to a lossy class (TC 0): the
    /// misconfiguration of one hop that breaks losslessness end to end.
    pub lossy_rdma_switches: Vec<NodeId>,
    /// A switch's port-to-port pipeline latency (parse, lookup, queueing
    /// logic), added to every frame it sends; 0 keeps HPCC ns-3's ideal switch.
    pub switch_latency: Time,
}

/// Priority flow control (IEEE 802.1Qbb) on the RDMA priority.
#[derive(Clone, Debug)]
pub struct PfcConfig {
    /// PFC on priority 3 at every switch and NIC.
    pub enabled: bool,
    /// PFC pause time semantics.
    pub pause_mode: PauseMode,
    /// Quanta written into XOFF frames.
    pub pause_quanta: u16,
}

/// Layer 3 and layer 2 forwarding: the ECMP hash, convergence and repair after failures, static overrides, RoCEv1's L2 mode.
#[derive(Clone, Debug)]
pub struct RoutingConfig {
    /// ECMP hash (the seed is mixed with each switch's node id).
    pub hash: HashConfig,
    /// ECMP convergence delay after a link failure.
    pub ecmp_convergence: Time,
    /// Local repair: a switch next to a failed link reroutes at once over the
    /// shortest paths that avoid it (its own view), while the others keep their
    /// old ECMP groups until `ecmp_convergence` — the window in which routes
    /// bounce (Hu et al., HotNets'16). Off: packets sent into the dead link are
    /// lost until convergence.
    pub local_repair: bool,
    /// Static route overrides: (switch, destination host, egress port).
    pub route_overrides: Vec<(NodeId, NodeId, u8)>,
    /// Run RoCEv1 (EtherType 0x8915, no IP header) in a fabric laid out as this:
    /// flows that would need a router are refused, and ECMP hashes see only the
    /// MAC addresses. `None` = RoCEv2.
    pub rocev1: Option<ethcp::L2Mode>,
}

/// Faults injected into the run (none by default).
#[derive(Clone, Debug, Default)]
pub struct FaultConfig {
    /// NICs whose receive pipeline is stuck: they pause without end.
    pub faulty_nics: Vec<NodeId>,
    /// Drop every n-th data packet sent on these links (either direction).
    pub loss_every: Vec<(LinkId, u64)>,
}

/// What the run watches and records.
#[derive(Clone, Debug)]
pub struct ObserveConfig {
    /// Check for a PFC deadlock this often (0 = never).
    pub deadlock_check: Time,
    /// Record PFC frames received (pfc.txt).
    pub record_pfc: bool,
    /// Capture every frame sent out of this (node, port), pause frames included
    /// (write it with [`RoceSim::write_pcap`]).
    pub capture: Option<(NodeId, u8)>,
}

impl Default for RoceConfig {
    /// A lossless RoCEv2 fabric in the HPCC ns-3 style: 1000-byte payloads, PFC
    /// and ECN on, DCQCN `hpcc-ns3` (line rate filled per NIC), go-back-N, a
    /// 32 MB buffer, pauses until XON, no watchdog.
    fn default() -> Self {
        RoceConfig {
            nic: NicConfig::default(),
            switch: SwitchConfig::default(),
            pfc: PfcConfig::default(),
            routing: RoutingConfig::default(),
            faults: FaultConfig::default(),
            observe: ObserveConfig::default(),
            seed: 1,
        }
    }
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            mtu: 1000,
            cc: CongestionControl::Dcqcn(crate::roce::dcqcn::Profile::HpccNs3.params(100_000_000_000)),
            recovery: Recovery::GoBackN,
            rto: Time::us(500),
            ack_every: 1,
            nic_rx: NicRxConfig::default(),
            nic_stall_prevention: None,
            ack_high_prio: true,
        }
    }
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffer_bytes: 32 << 20,
            ecn: true,
            red: Vec::new(),
            watchdog: None,
            lossy_rdma_switches: Vec::new(),
            switch_latency: Time::ZERO,
        }
    }
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            enabled: true,
            pause_mode: PauseMode::UntilXon,
            pause_quanta: 0xffff,
        }
    }
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            hash: HashConfig {
                fields: field::FIVE_TUPLE,
                seed: 0,
                func: HashFn::Murmur3,
            },
            ecmp_convergence: Time::us(100),
            local_repair: false,
            route_overrides: Vec::new(),
            rocev1: None,
        }
    }
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            deadlock_check: Time::us(500),
            record_pfc: true,
            capture: None,
        }
    }
}

/// The NIC's receive buffer for the lossless priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NicRxConfig {
    /// Bytes.
    pub size: u64,
    /// XOFF at or above this many bytes.
    pub xoff_at: u64,
    /// XON at or below this many bytes.
    pub xon_at: u64,
    /// Host drain rate, bits/s (0 = the host takes every packet at once).
    pub drain_bps: u64,
}

impl Default for NicRxConfig {
    /// 1 MiB with XOFF at 768 KiB and XON at 512 KiB, drained at once: a healthy
    /// NIC never pauses; set `drain_bps` below the line rate for a slow receiver
    /// (Guo et al. §4.4).
    fn default() -> Self {
        NicRxConfig {
            size: 1 << 20,
            xoff_at: 768 << 10,
            xon_at: 512 << 10,
            drain_bps: 0,
        }
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
    /// HPCC: handle of this packet's INT header in [`RoceSim`]'s store (0 = none).
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

/// A packet in a switch egress queue, with what its dequeue needs: the ingress
/// port (local) and PG its bytes are charged to.
#[derive(Clone, Copy, Debug, Default)]
struct Queued {
    p: Pkt,
    in_port: u8,
    pg: u8,
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

/// Per-flow state.
#[derive(Clone)]
struct Flow {
    spec: FlowSpec,
    req: Requester,
    rp: Option<ReactionPoint>,
    dctcp: Option<DctcpRp>,
    /// Boxed: a DCQCN flow carries 8 bytes for it, not ~150.
    hpcc: Option<Box<HpccRp>>,
    next_ok: Time,
    resp: Responder,
    np: CnpPacer,
    started: bool,
    done: Option<Time>,
    delivered_bytes: u64,
    /// A QP opened with [`RoceSim::open_qp`]: messages come from
    /// [`RoceSim::post`], one at a time, and never "finish" the flow.
    dynamic: bool,
    /// Dynamic QPs: (tag, post time) of each message, in posting order, until
    /// its last packet is received in order.
    rx_tags: VecDeque<(u64, Time)>,
}

impl Flow {
    /// HPCC: the QP's window is full (unacknowledged packets × MTU, as ns-3
    /// counts bytes between `snd_una` and `snd_nxt`).
    #[inline]
    fn window_bound(&self, mtu: u32) -> bool {
        self.hpcc.as_ref().is_some_and(|h| {
            let (una, nxt) = self.req.window();
            h.window_bound(una.distance_to(nxt).max(0) as u64 * u64::from(mtu))
        })
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

/// Per-port state a packet touches on every hop, in one 64-byte line: the
/// rest (pause state and generator, control frames, loss injection, rate) is
/// in [`PortCold`], beside it in `RoceSim::pc`, and the link peer in `RoceSim::peer`.
#[derive(Clone)]
#[repr(C, align(64))]
struct Port {
    busy_until: Time,
    wake_at: Time,
    ser: Serializer,
    prop: Time,
    /// Bytes sent.
    tx_bytes: u64,
    /// Address of the slot of this port's link FIFO written last (a prefetch
    /// hint for the next send, which writes the slot after it: no effect on
    /// results, stale after the ring grows, 0 before the first send).
    tail_hint: usize,
    /// The latest time any priority of this transmitter is paused until (the
    /// largest of [`PausedTx::until_all`]): when it is not after now nothing is
    /// paused and the cold pause state need not be read.
    pause_max: Time,
    /// The switch or NIC this port belongs to, as `index << 1 | is_switch`
    /// (its node's `RoceSim::role`, kept here so a hop reads no table for it;
    /// [`RoceSim::node_of`] gives the node).
    owner: u32,
    /// Local port number.
    num: u8,
    /// [`Port::DOWN`], [`Port::LOSSY`], [`Port::UNCABLED`]: 0 on a healthy link (one test per send).
    fate: u8,
    /// `PortCold::ctrl` holds frames.
    has_ctrl: bool,
    /// A switch port: bit q set when its egress queue q holds packets (read on
    /// every arrival, send and wake-up, so it lives in this line).
    qmask: u8,
}

const _: () = assert!(std::mem::size_of::<Port>() == 64);

impl Port {
    /// The link is down.
    const DOWN: u8 = 1;
    /// Loss injection is on for this link (`PortCold::loss_every` > 0).
    const LOSSY: u8 = 2;
    /// No link is cabled to this port (`RoceSim::peer` is `NONE`): its
    /// transmitter never runs. Kept here so a kick reads no other table for it.
    const UNCABLED: u8 = 4;
    /// The link leads to another part of a run split over threads
    /// ([`RoceSim::run_threads`]): a send goes to `RoceSim::outbox`.
    const CUT: u8 = 8;

    #[inline]
    fn down(&self) -> bool {
        self.fate & Port::DOWN != 0
    }

    /// (is a switch port, switch or NIC index).
    #[inline(always)]
    fn owner(&self) -> (bool, u32) {
        (self.owner & 1 != 0, self.owner >> 1)
    }
}

/// Per-port state touched only by PFC, loss injection and set-up.
#[derive(Clone)]
struct PortCold {
    link: u32,
    /// Control frames (PFC) waiting: they go before any queued data.
    ctrl: VecDeque<Pkt>,
    /// Data packets sent on this link since the start (loss injection).
    data_sent: u64,
    loss_every: u64,
    bps: u64,
    pause_timer_at: Time,
    /// Pauses received here (they stop our transmitter).
    paused: PausedTx,
    /// Pauses we send out of here (they stop the peer).
    pausegen: Box<PauseGen>,
}

/// Per-switch state (its egress queues are `RoceSim::eq`). `repr(C)`, hot
/// fields first: what every arrival and dequeue reads (the QoS maps, the port
/// count, the counter and RED tables, the XOFF list) sits in the first three lines, then the MMU (whose
/// own hot fields come first too).
#[repr(C)]
#[derive(Clone)]
struct Switch {
    /// This switch's DSCP → TC → PG/queue maps (a misconfigured hop differs).
    maps: QosMaps,
    /// Ports.
    nports: usize,
    /// Packets sent per egress queue, `[q * nports + local_port]` (queue-major: the
    /// data queue's counters of all ports share a few lines).
    q_tx: Table<u64>,
    red: Table<Option<Red>>,
    /// This switch's own random stream for RED/ECN marking, seeded from the
    /// run's seed and the switch's node: its draws follow this switch's
    /// dequeues alone, whatever other switches do (see `RoceSim::run`).
    rng: Pcg64Mcg,
    /// Ingress (port, PG) with XOFF asserted: re-checked on every release, since
    /// the threshold rises for all of them as the shared pool frees.
    xoff: Vec<(u8, u8)>,
    /// Watchdog action in force per `[q * nports + port]`.
    wd_stormed: Table<bool>,
    node: u32,
    /// Global index of port 0 (`RoceSim::port_base` of `node`, kept beside it:
    /// an arrival finds its egress port from this line).
    base: u32,
    mmu: Mmu,
    sched: Table<Scheduler>,
    wd: Table<Watchdog>,
    hash: HashConfig,
}

/// Per-NIC state.
#[derive(Clone)]
struct Nic {
    node: u32,
    gp: u32,
    flows: Table<u32>,
    rr: usize,
    ctrl: Ring<Pkt>,
    rx: NicRx,
    last_drain: Time,
    drain_bps: u64,
    timer_at: Time,
    /// The port's CNP limiter, for profiles that pace CNPs per port.
    np: CnpPacer,
    /// The NIC's port asserts XOFF on the RDMA priority (mirrors its pause
    /// generator, which only [`RoceSim::nic_pause_update`] drives).
    xoff_on: bool,
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

/// The RoCE world.
#[derive(Clone)]
pub struct RoceSim {
    now: Time,
    q: PackedQueue<EvWord>,
    trace: TraceHash,
    /// Packets alive (created, not yet delivered or dropped). Packets move by
    /// value through link FIFOs and queues (36 bytes, no slab look-up per hop).
    live: u64,
    cfg: RoceConfig,
    fabric: Fabric,
    maps: QosMaps,
    port_base: Table<u32>,
    ports: Table<Port>,
    /// The cold half of each port (see [`Port`]).
    pc: Table<PortCold>,
    /// The port at the other end of each port's link (`NONE`: not cabled).
    peer: Table<u32>,
    /// Packets on each link direction (20-byte entries: see [`KeyedFifo`]).
    link_fifo: Table<KeyedFifo<Pkt>>,
    /// Switch egress queues, `[q * ports + gp]` by global port (queue-major: the
    /// data queue's ring headers of neighbouring ports share lines); a wake-up's
    /// queue is found from its port alone, without the switch's record. NIC
    /// ports have theirs, always empty.
    eq: Table<HeadRing<Queued>>,
    /// Each link FIFO's times too far apart for its 32-bit steps (see [`KeyedFifo`]).
    link_wide: Table<WideKeys>,
    /// Node → switch or NIC index.
    role: Table<(bool, u32)>,
    switches: Table<Switch>,
    nics: Table<Nic>,
    flows: Table<Flow>,
    ecmp: EcmpTable,
    overrides: Vec<(u32, u32, u8)>,
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
    /// Packets sent over links (hops).
    sent: u64,
    /// Watchdog transitions: (time, switch, port, queue, event).
    pub wd_log: Vec<(Time, String, u8, u8, WdEvent)>,
    deadlock: Option<PfcDeadlock>,
    /// Bit 0: the watchdog poll is scheduled; bit 1: the deadlock check is.
    timers_armed: u8,
    /// Set by [`RoceSim::drive`]: the world is fed from outside, so it never
    /// reports `Done` and an idle world lets time pass to `until`.
    driven: bool,
    delivered: Vec<Delivered>,
    capture_gp: u32,
    captured: Vec<(Time, Pkt)>,
    last_progress: u64,
    progress: u64,
    flows_left: usize,
    wd_period: Time,
    /// ECMP egress per (flow, direction, switch): `[(flow * 2 + dir) * switches + switch]`,
    /// [`NO_ROUTE`] until first hashed; cleared when the ECMP groups change.
    route_cache: Table<u8>,
    /// With `local_repair`, from a link failure to ECMP convergence: the routes
    /// of the switches next to the failure (shortest paths without it).
    local_view: Option<EcmpTable>,
    /// A candidate deadlock cycle seen at the last check, with the packets each
    /// of its queues had sent: `(egress port, priority, packets sent)`.
    suspect: Option<Vec<(u32, u8, u64)>>,
    /// Background TCP on the lossy class (empty unless [`RoceSim::add_tcp_flow`]).
    tcp: TcpWorld,
    /// INT headers of HPCC packets in flight (empty unless the run uses HPCC).
    int: IntStore,
    /// The run uses HPCC: gates every INT and window check, so other runs
    /// never touch a flow's HPCC state.
    hpcc_on: bool,
    /// The PFC watchdog's action is drop / forward (`cfg.watchdog`, read per hop).
    wd_drop: bool,
    wd_forward: bool,
    /// Link failures scheduled ([`RoceSim::fail_link_at`]).
    link_events: u32,
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

/// A DCTCP sender for a NIC of `line` bits/s, if the run uses DCTCP.
fn dctcp_for(cc: &CongestionControl, line: u64) -> Option<DctcpRp> {
    match cc {
        CongestionControl::Dctcp(p) => Some(DctcpRp::new(crate::roce::dctcp::DctcpParams {
            line_bps: line as f64,
            ..p.clone()
        })),
        _ => None,
    }
}

/// An HPCC sender for a NIC of `line` bits/s, if the run uses HPCC.
fn hpcc_for(cc: &CongestionControl, line: u64) -> Option<Box<HpccRp>> {
    match cc {
        CongestionControl::Hpcc(p) => Some(Box::new(HpccRp::new(crate::roce::hpcc_cc::HpccParams {
            line_bps: line as f64,
            ..p.clone()
        }))),
        _ => None,
    }
}

/// [`crate::engine::time::serialization_ps`] (exact, rounded up) in 64-bit
/// arithmetic when the numerator fits, as it does for any frame (bytes · 8 · 10¹²
/// < 2⁶⁴ up to 2.3 MB): a DCQCN sender paces every packet at its own rate, so
/// this division is per packet, and the 128-bit one is a library call.
#[inline]
fn pace_ps(bytes: u64, bps: u64) -> u64 {
    match bytes.checked_mul(8_000_000_000_000) {
        Some(num) => num.div_ceil(bps),
        None => crate::engine::time::serialization_ps(bytes, bps),
    }
}

/// Switch `node`'s RED/ECN random stream: the run's seed mixed with the
/// node's index (so each switch draws from a stream of its own, and a switch's
/// stream does not depend on which other switches exist).
fn switch_rng(seed: u64, node: u32) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ (u64::from(node) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
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
    /// Build the world for `fabric` (switches and CAs; every CA has its NIC on
    /// port 1) with `flows`.
    pub fn new(fabric: &Fabric, cfg: RoceConfig, flows: &[FlowSpec]) -> Result<RoceSim, RoceError> {
        if cfg.nic.mtu == 0 || cfg.nic.mtu > 9000 {
            return Err(RoceError::Config {
                field: "mtu",
                why: format!("{} is not a payload size of 1..=9000 bytes", cfg.nic.mtu),
            });
        }
        let n = fabric.nodes.len();
        let mut port_base = Vec::with_capacity(n + 1);
        let mut ports = Vec::new();
        let mut pc = Vec::new();
        let mut peer = Vec::new();
        port_base.push(0u32);
        for node in fabric.nodes.iter() {
            for p in 0..node.ports.len() {
                ports.push(Port {
                    // Set below, once the switches and NICs are numbered.
                    owner: NONE,
                    num: p as u8,
                    ser: Serializer::new(1),
                    prop: Time::ZERO,
                    busy_until: Time::ZERO,
                    wake_at: Time::NEVER,
                    pause_max: Time::ZERO,
                    fate: 0,
                    has_ctrl: false,
                    qmask: 0,
                    tx_bytes: 0,
                    tail_hint: 0,
                });
                pc.push(PortCold {
                    bps: 0,
                    link: NONE,
                    ctrl: VecDeque::new(),
                    paused: PausedTx::default(),
                    pausegen: Box::new(PauseGen::new(cfg.pfc.pause_quanta)),
                    pause_timer_at: Time::NEVER,
                    data_sent: 0,
                    loss_every: 0,
                });
                peer.push(NONE);
            }
            port_base.push(ports.len() as u32);
        }
        for (li, l) in fabric.links.iter().enumerate() {
            let a = port_base[l.a.node.idx()] + u32::from(l.a.port);
            let b = port_base[l.b.node.idx()] + u32::from(l.b.port);
            let bps = l.rate.data_bps();
            let every = cfg
                .faults
                .loss_every
                .iter()
                .find(|(x, _)| x.idx() == li)
                .map_or(0, |x| x.1);
            for (g, pg, node) in [(a, b, l.a.node), (b, a, l.b.node)] {
                peer[g as usize] = pg;
                let p = &mut ports[g as usize];
                p.ser = Serializer::new(bps);
                let pipeline = if fabric.node(node).kind == NodeKind::Switch {
                    cfg.switch.switch_latency
                } else {
                    Time::ZERO
                };
                p.prop = Time(l.delay_ps) + pipeline;
                if every > 0 {
                    p.fate |= Port::LOSSY;
                }
                let c = &mut pc[g as usize];
                c.bps = bps;
                c.link = li as u32;
                c.loss_every = every;
            }
        }
        let mut maps = QosMaps::default();
        if !cfg.pfc.enabled {
            maps.pfc_enable = 0;
        }
        let mut role = vec![(false, NONE); n];
        let mut switches = Vec::new();
        let mut nics = Vec::new();
        let nic_bps = fabric
            .links
            .iter()
            .filter(|l| fabric.node(l.a.node).kind == NodeKind::Ca || fabric.node(l.b.node).kind == NodeKind::Ca)
            .map(|l| l.rate.data_bps())
            .min()
            .unwrap_or(100_000_000_000);
        for (i, node) in fabric.nodes.iter().enumerate() {
            let base = port_base[i] as usize;
            let np = node.ports.len();
            match node.kind {
                NodeKind::Switch | NodeKind::Router => {
                    let bps: Vec<u64> = (0..np).map(|p| pc[base + p].bps).collect();
                    let delay: Vec<u64> = (0..np).map(|p| ports[base + p].prop.0).collect();
                    let mut mc = MmuConfig::hpcc_ns3(0, &bps, &delay, nic_bps, None);
                    mc.buffer_bytes = cfg.switch.buffer_bytes;
                    mc.maps = maps.clone();
                    if cfg.switch.lossy_rdma_switches.contains(&NodeId(i as u32)) {
                        mc.maps.dscp_to_tc[usize::from(DSCP_ROCE)] = 0;
                    }
                    // Headroom: HPCC's 3 × rate × delay, but at least two MTU frames and the
                    // peer's response at 100G (IEEE worst case has both).
                    for (p, h) in mc.headroom.iter_mut().enumerate() {
                        let min = 2 * u64::from(cfg.nic.mtu + ROCEV2_HEADERS + 20) + hpcc_headroom_bytes(bps[p], 0);
                        // At 200G and above the bytes in flight after XOFF (cable both
                        // ways, the frame on the wire at each end, the peer's reaction)
                        // exceed HPCC's 3 × rate × delay; take NVIDIA's xoff formula for
                        // the port's speed and cable (mlx5 `calculate_xoff`,
                        // simulators-and-cc.md §2.2): 400G, 20 m → about 146 KB.
                        let mlx5 = if bps[p] > 0 {
                            let cable_m =
                                (delay[p] / fabric::model::DEFAULT_PS_PER_METRE).min(u64::from(u32::MAX)) as u32;
                            crate::roce::buffer::mlx5_nic_xoff_bytes(
                                (bps[p] / 1_000_000_000) as u32,
                                cable_m,
                                cfg.nic.mtu,
                            )
                        } else {
                            0
                        };
                        *h = (*h).max(min).max(mlx5);
                    }
                    let red: Vec<Option<Red>> = bps
                        .iter()
                        .map(|&b| {
                            if !cfg.switch.ecn || b == 0 {
                                return None;
                            }
                            cfg.switch
                                .red
                                .iter()
                                .find(|(r, _)| *r == b)
                                .map(|x| x.1)
                                .or(match &cfg.nic.cc {
                                    CongestionControl::Dcqcn(p) => Some(p.red),
                                    CongestionControl::Dctcp(p) => Some(p.red),
                                    CongestionControl::None | CongestionControl::Hpcc(_) => None,
                                })
                        })
                        .collect();
                    let reserved = mc.reserved_per_pg * (np * NPRIO) as u64;
                    let lossless = (0..NPRIO as u8).filter(|&p| maps.lossless(p)).count() as u64;
                    let headroom: u64 = mc.headroom.iter().map(|h| h * lossless).sum();
                    // The shared pool must hold at least a few frames per port, or every PG
                    // pauses at once and can never resume.
                    if cfg.switch.buffer_bytes
                        < reserved + headroom + 4 * np as u64 * u64::from(cfg.nic.mtu + ROCEV2_HEADERS)
                    {
                        return Err(RoceError::Config {
                            field: "buffer_bytes",
                            why: format!(
                                "{} B on {} leaves no shared pool: its reserves take {reserved} B and its PFC headroom {headroom} B",
                                cfg.switch.buffer_bytes, node.name
                            ),
                        });
                    }
                    let sw_maps = mc.maps.clone();
                    let mmu = Mmu::new(mc, np).map_err(|e| RoceError::Config {
                        field: "buffer_bytes",
                        why: format!("switch {}: {e}", node.name),
                    })?;
                    role[i] = (true, switches.len() as u32);
                    let wd = cfg.switch.watchdog.unwrap_or_default();
                    switches.push(Switch {
                        node: i as u32,
                        base: port_base[i],
                        nports: np,
                        maps: sw_maps,
                        mmu,
                        // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
                        q_tx: unsafe { crate::engine::Table::trusted(vec![0; np * NPRIO]) },
                        sched: unsafe { crate::engine::Table::trusted(vec![Scheduler::default(); np]) },
                        wd: unsafe { crate::engine::Table::trusted(vec![Watchdog::new(wd); np * NPRIO]) },
                        wd_stormed: unsafe { crate::engine::Table::trusted(vec![false; np * NPRIO]) },
                        hash: HashConfig {
                            seed: cfg.routing.hash.seed ^ (i as u32),
                            ..cfg.routing.hash
                        },
                        red: unsafe { crate::engine::Table::trusted(red) },
                        rng: switch_rng(cfg.seed, i as u32),
                        xoff: Vec::new(),
                    });
                }
                NodeKind::Ca => {
                    let gp = port_base[i] + 1;
                    let NicRxConfig {
                        size,
                        xoff_at: xoff,
                        xon_at: xon,
                        drain_bps: drain,
                    } = cfg.nic.nic_rx;
                    let mut rx = NicRx::new(size, xoff, xon);
                    rx.faulty = cfg.faults.faulty_nics.contains(&NodeId(i as u32));
                    rx.stall_prevention = cfg.nic.nic_stall_prevention;
                    role[i] = (false, nics.len() as u32);
                    nics.push(Nic {
                        node: i as u32,
                        gp,
                        flows: Table::default(),
                        rr: 0,
                        ctrl: Ring::default(),
                        rx,
                        last_drain: Time::ZERO,
                        drain_bps: drain,
                        timer_at: Time::NEVER,
                        np: CnpPacer::default(),
                        xoff_on: false,
                    });
                }
            }
        }
        for (i, &(is_sw, idx)) in role.iter().enumerate() {
            for p in &mut ports[port_base[i] as usize..port_base[i + 1] as usize] {
                p.owner = (idx << 1) | u32::from(is_sw);
            }
        }
        for (p, &to) in ports.iter_mut().zip(&peer) {
            if to == NONE {
                p.fate |= Port::UNCABLED;
            }
        }
        if let Some(mode) = cfg.routing.rocev1 {
            for (k, f) in flows.iter().enumerate() {
                ethcp::check_roce_v1(fabric, f.src, f.dst, mode).map_err(|why| RoceError::RoceV1 { flow: k, why })?;
            }
        }
        // Event ids are packed into 24 bits (engine `PackedQueue`).
        if flows.len() >= 1 << ID_BITS || ports.len() >= 1 << ID_BITS || fabric.links.len() >= 1 << ID_BITS {
            return Err(RoceError::Config {
                field: "flows",
                why: format!("at most {} flows, ports and links each", (1u32 << ID_BITS) - 1),
            });
        }
        let mut fl = Vec::with_capacity(flows.len());
        for (k, f) in flows.iter().enumerate() {
            for node in [f.src, f.dst] {
                if node.idx() >= n || fabric.node(node).kind != NodeKind::Ca {
                    let name = if node.idx() < n {
                        fabric.node(node).name.clone()
                    } else {
                        format!("#{}", node.0)
                    };
                    return Err(RoceError::NotNic { flow: k, node: name });
                }
            }
            let nic = role[f.src.idx()].1;
            nics[nic as usize].flows.push(k as u32);
            let line = pc[(port_base[f.src.idx()] + 1) as usize].bps.max(1);
            let rp = match &cfg.nic.cc {
                CongestionControl::Dcqcn(p) => Some(ReactionPoint::new(p.for_line(line))),
                _ => None,
            };
            let dctcp = dctcp_for(&cfg.nic.cc, line);
            let hpcc = hpcc_for(&cfg.nic.cc, line);
            let rc = RequesterConfig {
                mtu: cfg.nic.mtu,
                recovery: cfg.nic.recovery,
                rto: cfg.nic.rto,
            };
            fl.push(Flow {
                spec: *f,
                req: Requester::new(rc, Psn::new(0)),
                rp,
                dctcp,
                hpcc,
                next_ok: Time::ZERO,
                resp: Responder::new(Psn::new(0), cfg.nic.ack_every, cfg.nic.recovery),
                np: CnpPacer::default(),
                started: false,
                done: None,
                delivered_bytes: 0,
                dynamic: false,
                rx_tags: VecDeque::new(),
            });
        }
        let ecmp = EcmpTable::build(fabric, cfg.routing.ecmp_convergence.as_ps());
        // An override's port is a switch egress port: it indexes the switch's
        // queues and MMU tables on every packet it routes.
        for &(sw, dst, port) in &cfg.routing.route_overrides {
            let ok = sw.idx() < n
                && matches!(fabric.node(sw).kind, NodeKind::Switch | NodeKind::Router)
                && usize::from(port) < fabric.node(sw).ports.len();
            if !ok {
                return Err(RoceError::Config {
                    field: "route_overrides",
                    why: format!(
                        "({}, {}, {port}): the first node must be a switch and {port} one of its ports",
                        sw.0, dst.0
                    ),
                });
            }
        }
        let overrides = cfg
            .routing
            .route_overrides
            .iter()
            .map(|(s, d, p)| (s.0, d.0, *p))
            .collect();
        let wd_period = cfg.switch.watchdog.map_or(Time::NEVER, |w| w.poll);
        let nics_len = nics.len();
        // Most events are scheduled a frame's time ahead (a port's next wake-up,
        // the next arrival behind a FIFO head, a NIC's pacing): size the calendar
        // wheel to a few MTU frames at the slowest link (512 slots at 100G). The
        // first arrival on an idle link, a cable's delay ahead, and the timers wait
        // in the queue's heap instead. The wheel's slot buffers are touched in turn,
        // so a short wheel keeps them in cache (the 2,048 slots that reached a
        // whole cable ahead streamed ~1.5 MB per cycle): ~5% less CPU, +0.3%
        // instructions. The order of events does not depend on it.
        let frame = u64::from(cfg.nic.mtu + ROCEV2_HEADERS);
        let horizon = pc
            .iter()
            .filter(|c| c.bps > 0)
            .map(|c| Time(4 * crate::engine::time::serialization_ps(frame, c.bps)))
            .max()
            .unwrap_or(Time::ns(400));
        let mut sim = RoceSim {
            now: Time::ZERO,
            q: PackedQueue::with_horizon(horizon),
            trace: TraceHash::default(),
            live: 0,
            maps,
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            link_fifo: unsafe { crate::engine::Table::trusted(vec![KeyedFifo::default(); ports.len()]) },
            eq: unsafe { crate::engine::Table::trusted(vec![HeadRing::default(); ports.len() * NPRIO]) },
            link_wide: unsafe { crate::engine::Table::trusted(vec![WideKeys::new(); ports.len()]) },
            port_base: unsafe { crate::engine::Table::trusted(port_base) },
            ports: unsafe { crate::engine::Table::trusted(ports) },
            pc: unsafe { crate::engine::Table::trusted(pc) },
            peer: unsafe { crate::engine::Table::trusted(peer) },
            role: unsafe { crate::engine::Table::trusted(role) },
            switches: unsafe { crate::engine::Table::trusted(switches) },
            nics: unsafe { crate::engine::Table::trusted(nics) },
            flows_left: fl.len(),
            flows: unsafe { crate::engine::Table::trusted(fl) },
            ecmp,
            overrides,
            ledger: RoceLedger::default(),
            fct: Vec::new(),
            pfc: Vec::new(),
            completions: Vec::new(),
            ecn_marks: 0,
            cnps_sent: 0,
            events: 0,
            sent: 0,
            wd_log: Vec::new(),
            deadlock: None,
            timers_armed: 0,
            driven: false,
            delivered: Vec::new(),
            capture_gp: NONE,
            captured: Vec::new(),
            last_progress: 0,
            progress: 0,
            wd_period,
            route_cache: Table::default(),
            local_view: None,
            suspect: None,
            tcp: TcpWorld::new(nics_len),
            int: IntStore::default(),
            hpcc_on: matches!(cfg.nic.cc, CongestionControl::Hpcc(_)),
            wd_drop: cfg.switch.watchdog.is_some_and(|w| w.action == WdAction::Drop),
            wd_forward: cfg.switch.watchdog.is_some_and(|w| w.action == WdAction::Forward),
            link_events: 0,
            threads_used: 1,
            one_thread_why: None,
            outbox: Vec::new(),
            outbox_int: Vec::new(),
            fabric: fabric.clone(),
            cfg,
        };
        for (k, f) in flows.iter().enumerate() {
            sim.push_ev(f.start, Ev::FlowStart { flow: k as u32 });
        }
        if let Some((node, port)) = sim.cfg.observe.capture {
            if node.idx() >= n || usize::from(port) >= fabric.node(node).ports.len() {
                return Err(RoceError::Config {
                    field: "capture",
                    why: format!("node {} has no port {port}", node.0),
                });
            }
            sim.capture_gp = sim.port_base[node.idx()] + u32::from(port);
        }
        // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
        sim.route_cache =
            unsafe { crate::engine::Table::trusted(vec![NO_ROUTE; sim.flows.len() * 2 * sim.switches.len()]) };
        sim.arm_periodic();
        // Faulty NICs start pausing at once.
        for i in 0..sim.nics.len() {
            if sim.nics[i].rx.faulty {
                sim.nic_pause_update(i as u32);
            }
        }
        Ok(sim)
    }

    /// Fail `link` at `at`: packets sent into it are lost; ECMP shrinks after the
    /// convergence delay.
    pub fn fail_link_at(&mut self, link: LinkId, at: Time) {
        self.link_events += 1;
        self.push_ev(at, Ev::LinkFail { link: link.0 });
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

    /// Packet transmissions over links so far (hops).
    pub fn hops(&self) -> u64 {
        self.sent
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> u64 {
        self.live
    }

    /// `created == delivered + dropped + in flight`?
    pub fn ledger_balances(&self) -> bool {
        self.ledger.created == self.ledger.delivered + self.ledger.total_dropped() + self.in_flight()
    }

    /// The deadlock found, if any.
    pub fn deadlock(&self) -> Option<&PfcDeadlock> {
        self.deadlock.as_ref()
    }

    /// Flow `k` from a caller of the public look-ups: checked in every build
    /// (the tables are indexed unchecked in release builds only with the
    /// simulator's own ids).
    fn flow_at(&self, k: usize) -> &Flow {
        assert!(k < self.flows.len(), "no flow {k}: {} flows", self.flows.len());
        &self.flows[k]
    }

    /// The global port index of `node`'s port `port` from a caller of the public
    /// look-ups, checked in every build (see [`Self::flow_at`]).
    fn user_port(&self, node: NodeId, port: u8) -> usize {
        let i = node.idx();
        assert!(
            i + 1 < self.port_base.len() && self.port_base[i] + u32::from(port) < self.port_base[i + 1],
            "node {} has no port {port}",
            node.0
        );
        (self.port_base[i] + u32::from(port)) as usize
    }

    /// Payload bytes delivered in order to flow `k`'s receiver.
    pub fn flow_delivered(&self, k: usize) -> u64 {
        self.flow_at(k).delivered_bytes
    }

    /// The switches flow `k`'s data packets cross now, with the egress port each
    /// one picks (static override or ECMP hash over its current groups), from the
    /// sender's switch to the receiver's. Stops after 64 hops (a routing loop).
    pub fn flow_path(&self, k: usize) -> Vec<(String, u8)> {
        self.flow_hops(k, false)
            .into_iter()
            .map(|(node, port)| (self.fabric.nodes[node as usize].name.clone(), port))
            .collect()
    }

    /// The switches (node index, egress port) flow `k`'s data crosses now, or
    /// with `back` its ACKs.
    fn flow_hops(&self, k: usize, back: bool) -> Vec<(u32, u8)> {
        let f = self.flow_at(k);
        let pk = Pkt {
            kind: if back { Kind::Ack } else { Kind::Data },
            flow: k as u32,
            ..Pkt::default()
        };
        let (src, dst) = if back {
            (f.spec.dst, f.spec.src)
        } else {
            (f.spec.src, f.spec.dst)
        };
        let dst = dst.0;
        let mut out = Vec::new();
        let mut gp = self.port_base[src.idx()] + 1;
        for _ in 0..64 {
            let peer = self.peer[gp as usize];
            if peer == NONE {
                break;
            }
            let (is_sw, si) = self.ports[peer as usize].owner();
            if !is_sw {
                break;
            }
            let node = self.switches[si as usize].node;
            let over = self.overrides.iter().find(|o| o.0 == node && o.1 == dst).map(|o| o.2);
            let Some(port) = over.or_else(|| self.route_hashed(si, &pk)) else {
                break;
            };
            out.push((node, port));
            gp = self.port_base[node as usize] + u32::from(port);
        }
        out
    }

    /// Completion time of flow `k`.
    pub fn flow_done(&self, k: usize) -> Option<Time> {
        self.flow_at(k).done
    }

    /// The requester counters of flow `k`.
    pub fn flow_counters(&self, k: usize) -> crate::roce::transport::RequesterCounters {
        self.flow_at(k).req.counters
    }

    /// Current DCQCN or DCTCP rate of flow `k` (bits/s), if it runs either.
    pub fn flow_rate(&self, k: usize) -> Option<f64> {
        let f = self.flow_at(k);
        f.rp.as_ref()
            .map(ReactionPoint::rate)
            .or(f.dctcp.as_ref().map(DctcpRp::rate))
            .or(f.hpcc.as_deref().map(HpccRp::rate))
    }

    /// The HPCC counters of flow `k`, if it runs HPCC.
    pub fn flow_hpcc(&self, k: usize) -> Option<crate::roce::hpcc_cc::HpccCounters> {
        self.flow_at(k).hpcc.as_ref().map(|h| h.counters)
    }

    /// INT headers held by packets in flight (HPCC; 0 once a run drains).
    pub fn int_live(&self) -> usize {
        self.int.live()
    }

    /// HPCC packets sent without INT because 65,535 headers were in flight.
    pub fn int_overflow(&self) -> u64 {
        self.int.overflow
    }

    /// The DCTCP counters of flow `k`, if it runs DCTCP.
    pub fn flow_dctcp(&self, k: usize) -> Option<crate::roce::dctcp::DctcpCounters> {
        self.flow_at(k).dctcp.as_ref().map(|d| d.counters)
    }

    /// PFC frames (XOFF, XON) sent from port `port` of `node`.
    pub fn pause_sent(&self, node: NodeId, port: u8, prio: u8) -> (u64, u64) {
        let p = &self.pc[self.user_port(node, port)];
        (
            p.pausegen.xoff_sent[usize::from(prio)],
            p.pausegen.xon_sent[usize::from(prio)],
        )
    }

    /// Time port `port` of `node` spent paused on `prio` so far.
    pub fn paused_time(&self, node: NodeId, port: u8, prio: u8) -> Time {
        let p = &self.pc[self.user_port(node, port)];
        Time(p.paused.paused_total(self.now, prio))
    }

    /// Bytes queued for egress at port `port` of switch `node`, every class
    /// (what HPCC's INT reports); 0 for a NIC.
    pub fn egress_queue_bytes(&self, node: NodeId, port: u8) -> u64 {
        let g = self.user_port(node, port);
        let (is_sw, idx) = self.role[node.idx()];
        if !is_sw {
            return 0;
        }
        let num = usize::from(self.ports[g].num);
        let s = &self.switches[idx as usize];
        (0..NPRIO as u8).map(|c| s.mmu.egress_bytes(num, c)).sum()
    }

    /// Bytes sent out of port `port` of `node`.
    pub fn tx_bytes(&self, node: NodeId, port: u8) -> u64 {
        self.ports[self.user_port(node, port)].tx_bytes
    }

    /// Number of switch MMU drops by reason `[lossy, headroom overflow]`, summed.
    pub fn mmu_drops(&self) -> [u64; 2] {
        let mut d = [0; 2];
        for s in self.switches.iter() {
            d[0] += s.mmu.drops[0];
            d[1] += s.mmu.drops[1];
        }
        d
    }

    /// Frames captured so far.
    pub fn captured_frames(&self) -> usize {
        self.captured.len()
    }

    /// Write the captured frames as an Ethernet pcap with real headers: RoCEv2
    /// (IPv4/UDP 4791, BTH RC SEND First/Middle/Last/Only or ACKNOWLEDGE with an
    /// AETH ACK or PSN-sequence-error NAK, CNPs with opcode 0x81), ECN ECT(0) or
    /// CE as marked, and 802.1Qbb PFC frames. Payload bytes are zeros; the BTH
    /// destination QP is 0x100 + the flow index. Returns the frame count.
    pub fn write_pcap(&self, path: &std::path::Path) -> Result<usize, wire::pcap::CaptureError> {
        use wire::ib::aeth::{NakCode, Syndrome};
        use wire::ib::{Opcode, aeth, bth};
        use wire::net::{ethernet, pfc};
        use wire::packet::{ExtHeaders, IbPacket, emit_mac_control};
        let mac = |n: u32| -> [u8; 6] {
            let m = ethcp::host_mac(n).to_be_bytes();
            [m[2], m[3], m[4], m[5], m[6], m[7]]
        };
        let mut w = wire::pcap::CaptureWriter::create(path, wire::pcap::CaptureLink::Ethernet)?;
        let zeros = vec![0u8; 9216];
        let mut buf = vec![0u8; 10_240];
        let mut written = 0;
        // Every captured frame was sent from the capture port: a pause frame's source.
        let cap_node = if (self.capture_gp as usize) < self.ports.len() {
            self.node_of(self.capture_gp)
        } else {
            NONE
        };
        for (t, pk) in &self.captured {
            if pk.kind.is_tcp() {
                // TCP frames are not written (the capture is of the RoCE stream).
                continue;
            }
            written += 1;
            let n = match pk.kind {
                Kind::Pause => {
                    let mut quanta = [0u16; 8];
                    let (prio, q) = pk.pause();
                    quanta[usize::from(prio & 7)] = q;
                    let eth = ethernet::Repr {
                        dst: [0x01, 0x80, 0xc2, 0, 0, 1],
                        src: mac(cap_node),
                        vlan: None,
                        ethertype: ethernet::ETHERTYPE_MAC_CONTROL,
                    };
                    emit_mac_control(
                        &eth,
                        &pfc::Repr::Pfc {
                            enable: 1 << (prio & 7),
                            quanta,
                        },
                        &mut buf,
                    )
                }
                _ => {
                    let (op, ext, payload): (Opcode, ExtHeaders, &[u8]) = match pk.kind {
                        Kind::Data => {
                            let op = match (pk.has(Pkt::FIRST), pk.has(Pkt::LAST)) {
                                (true, true) => Opcode::RcSendOnly,
                                (true, false) => Opcode::RcSendFirst,
                                (false, true) => Opcode::RcSendLast,
                                (false, false) => Opcode::RcSendMiddle,
                            };
                            (op, ExtHeaders::default(), &zeros[..self.payload(pk) as usize])
                        }
                        Kind::Ack | Kind::Nak => {
                            let syndrome = if pk.kind == Kind::Ack {
                                Syndrome::Ack { credits: 31 }
                            } else {
                                Syndrome::Nak(NakCode::PsnSequenceError)
                            };
                            (
                                Opcode::RcAcknowledge,
                                ExtHeaders {
                                    aeth: Some(aeth::Repr { syndrome, msn: 0 }),
                                    ..ExtHeaders::default()
                                },
                                &[][..],
                            )
                        }
                        _ => (
                            Opcode::Cnp,
                            ExtHeaders {
                                cnp_reserved: Some([0; 16]),
                                ..ExtHeaders::default()
                            },
                            &[][..],
                        ),
                    };
                    let qpn = 0x100 + pk.flow;
                    let sport = self.flows.get(pk.flow as usize).map_or(0xc000, |f| f.spec.sport);
                    let ecn = if pk.kind == Kind::Data {
                        if pk.has(Pkt::CE) { 3 } else { 2 }
                    } else {
                        0
                    };
                    // TCP segments fall here too and are written as CNPs carrying
                    // their segment number: the capture shows RoCE framing only.
                    let b = bth::Repr::new(op, qpn, Psn::new(pk.seq));
                    let ip = |n: u32| ethcp::host_ip(n).to_be_bytes();
                    let (src, dst) = self.ends(pk);
                    IbPacket::roce_v2_ipv4(
                        mac(src),
                        mac(dst),
                        ip(src),
                        ip(dst),
                        pk.dscp,
                        ecn,
                        sport,
                        b,
                        ext,
                        payload,
                    )
                    .emit(&mut buf)
                }
            };
            let n = n.map_err(|e| wire::pcap::CaptureError::Write {
                path: path.into(),
                what: e.to_string(),
            })?;
            w.write(t.0 / 1000, &buf[..n])?;
        }
        w.finish()?;
        Ok(written)
    }

    /// A human-readable dump of queued packets, asserted XOFFs and paused ports
    /// (for diagnosing a stuck run).
    pub fn state_summary(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "t={} in_flight={} flows_left={}",
            self.now, self.live, self.flows_left
        );
        for sw in self.switches.iter() {
            let name = &self.fabric.nodes[sw.node as usize].name;
            let _ = writeln!(
                s,
                "{name}: shared {}/{} xoff {:?}",
                sw.mmu.shared_used(),
                sw.mmu.shared_size(),
                sw.xoff
            );
            for &(p, pg) in &sw.xoff {
                let _ = writeln!(
                    s,
                    "  xoff port {p} pg {pg}: use {:?} paused {} threshold {}",
                    sw.mmu.pg_use(usize::from(p), pg),
                    sw.mmu.pg_paused(usize::from(p), pg),
                    sw.mmu.threshold(usize::from(p))
                );
            }
            for (port, c) in (0..sw.nports).flat_map(|p| (0..NPRIO).map(move |c| (p, c))) {
                let gp = self.port_base[sw.node as usize] + port as u32;
                let q = &self.eq[self.eqi(c, gp)];
                if !q.is_empty() {
                    let _ = writeln!(
                        s,
                        "  port {} q{}: {} pkts, paused {}",
                        port,
                        c,
                        q.len(),
                        self.pc[gp as usize].paused.is_paused(self.now, c as u8)
                    );
                }
            }
        }
        for n in self.nics.iter() {
            let p = &self.ports[n.gp as usize];
            let _ = writeln!(
                s,
                "{}: ctrl {} paused3 {} busy_until {} wake {} rx {}",
                self.fabric.nodes[n.node as usize].name,
                n.ctrl.len(),
                self.pc[n.gp as usize].paused.is_paused(self.now, 3),
                p.busy_until,
                p.wake_at,
                n.rx.used()
            );
        }
        s
    }

    /// Open a QP from host `src` to host `dst` for messages posted later with
    /// [`post`](Self::post) (the verbs-style use, e.g. a collective runner).
    /// Its UDP source port comes from its QP numbers, so QPs between the same
    /// hosts spread over ECMP. Returns the QP's handle.
    pub fn open_qp(&mut self, src: NodeId, dst: NodeId) -> Result<u32, RoceError> {
        let k = self.flows.len();
        for node in [src, dst] {
            if node.idx() >= self.role.len() || self.role[node.idx()].0 || self.fabric.node(node).kind != NodeKind::Ca {
                let name = if node.idx() < self.role.len() {
                    self.fabric.node(node).name.clone()
                } else {
                    format!("#{}", node.0)
                };
                return Err(RoceError::NotNic { flow: k, node: name });
            }
        }
        if k + 1 >= 1 << ID_BITS {
            return Err(RoceError::Config {
                field: "flows",
                why: format!("at most {} QPs", (1u32 << ID_BITS) - 1),
            });
        }
        if let Some(mode) = self.cfg.routing.rocev1 {
            ethcp::check_roce_v1(&self.fabric, src, dst, mode).map_err(|why| RoceError::RoceV1 { flow: k, why })?;
        }
        let qpn = 0x100 + 2 * k as u32;
        let spec = FlowSpec {
            src,
            dst,
            size: 0,
            messages: 0,
            start: self.now,
            sport: ethcp::roce_udp_sport(qpn, qpn + 1),
            dport: 0,
        };
        let nic = self.role[src.idx()].1;
        let gp = self.nics[nic as usize].gp;
        let line = self.pc[gp as usize].bps.max(1);
        let dctcp = dctcp_for(&self.cfg.nic.cc, line);
        let hpcc = hpcc_for(&self.cfg.nic.cc, line);
        let rp = match &self.cfg.nic.cc {
            CongestionControl::None | CongestionControl::Dctcp(_) | CongestionControl::Hpcc(_) => None,
            CongestionControl::Dcqcn(p) => Some(ReactionPoint::new(p.for_line(line))),
        };
        let rc = RequesterConfig {
            mtu: self.cfg.nic.mtu,
            recovery: self.cfg.nic.recovery,
            rto: self.cfg.nic.rto,
        };
        self.flows.push(Flow {
            spec,
            req: Requester::new(rc, Psn::new(0)),
            rp,
            dctcp,
            hpcc,
            next_ok: Time::ZERO,
            resp: Responder::new(Psn::new(0), self.cfg.nic.ack_every, self.cfg.nic.recovery),
            np: CnpPacer::default(),
            started: true,
            done: None,
            delivered_bytes: 0,
            dynamic: true,
            rx_tags: VecDeque::new(),
        });
        self.nics[nic as usize].flows.push(k as u32);
        // The new QP's entries (`[(flow * 2 + dir) * switches + switch]`) go at the end.
        for _ in 0..2 * self.switches.len() {
            self.route_cache.push(NO_ROUTE);
        }
        Ok(k as u32)
    }

    /// Declare that an outside driver feeds this world with [`open_qp`](Self::open_qp)
    /// and [`post`](Self::post): from now on `run` never reports `Done`, and an idle
    /// world lets the clock run to `until` (the driver's next instant).
    pub fn drive(&mut self) {
        self.driven = true;
    }

    /// Set the TCP parameters (before the first [`add_tcp_flow`](Self::add_tcp_flow)).
    pub fn set_tcp_config(&mut self, cfg: TcpConfig) -> Result<(), RoceError> {
        cfg.validate()
            .map_err(|(field, why)| RoceError::Config { field, why })?;
        if !self.tcp.is_empty() {
            return Err(RoceError::Config {
                field: "tcp",
                why: "set the TCP configuration before adding TCP flows".into(),
            });
        }
        self.tcp.set_config(cfg);
        Ok(())
    }

    /// Add a TCP connection on the lossy class ([`crate::roce::tcp`]); returns its
    /// index for [`tcp`](Self::tcp)'s per-flow counters.
    pub fn add_tcp_flow(&mut self, spec: TcpFlowSpec) -> Result<u32, RoceError> {
        let k = self.tcp.len();
        for node in [spec.src, spec.dst] {
            if node.idx() >= self.role.len() || self.role[node.idx()].0 || self.fabric.node(node).kind != NodeKind::Ca {
                let name = if node.idx() < self.role.len() {
                    self.fabric.node(node).name.clone()
                } else {
                    format!("#{}", node.0)
                };
                return Err(RoceError::NotNic { flow: k, node: name });
            }
        }
        if spec.src == spec.dst {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("flow {k} sends from {} to itself", self.fabric.node(spec.src).name),
            });
        }
        if spec
            .on_off
            .is_some_and(|(on, _)| on == Time::ZERO || spec.rate_bps == 0)
        {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("flow {k}: an on/off source needs an on-time above 0 and a rate above 0"),
            });
        }
        if k + 1 >= 1 << ID_BITS {
            return Err(RoceError::Config {
                field: "tcp flow",
                why: format!("at most {} TCP flows", (1u32 << ID_BITS) - 1),
            });
        }
        let nic = self.role[spec.src.idx()].1;
        let f = self.tcp.add(nic, spec);
        let gp = self.nics[nic as usize].gp;
        if self.peer[gp as usize] != NONE {
            self.schedule_wake(gp, spec.start.max(self.now));
        }
        Ok(f)
    }

    /// The TCP flows (counters, windows, drops).
    pub fn tcp(&self) -> &TcpWorld {
        &self.tcp
    }

    /// Post a message of `bytes` on QP `qp` now (SEND; delivered in posting order).
    pub fn post(&mut self, qp: u32, bytes: u64, tag: u64) -> Result<(), RoceError> {
        let Some(f) = self.flows.get_mut(qp as usize).filter(|f| f.dynamic) else {
            return Err(RoceError::Config {
                field: "qp",
                why: format!("{qp} is not a QP opened with open_qp"),
            });
        };
        f.req.post(tag, bytes, self.now);
        f.rx_tags.push_back((tag, self.now));
        let nic = self.role[f.spec.src.idx()].1;
        let gp = self.nics[nic as usize].gp;
        self.kick(gp);
        self.arm_periodic();
        Ok(())
    }

    /// Schedule the watchdog poll and the deadlock check if they are not.
    fn arm_periodic(&mut self) {
        if self.wd_period != Time::NEVER && self.timers_armed & 1 == 0 {
            self.timers_armed |= 1;
            self.push_ev(self.now + self.wd_period, Ev::WdPoll);
        }
        if self.cfg.observe.deadlock_check > Time::ZERO && self.timers_armed & 2 == 0 {
            self.timers_armed |= 2;
            self.push_ev(self.now + self.cfg.observe.deadlock_check, Ev::Check);
        }
    }

    /// Take the messages delivered since the last call.
    pub fn take_delivered(&mut self) -> Vec<Delivered> {
        std::mem::take(&mut self.delivered)
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
            let id = (a.id() as usize).min(self.link_fifo.len() - 1);
            let fifo = &self.link_fifo[id];
            prefetch::whole(fifo);
            let port = self.ports.as_ptr().wrapping_add(id).cast::<u8>();
            let fifo = (fifo as *const KeyedFifo<Pkt>).cast::<u8>();
            prefetch::addr(std::hint::select_unpredictable(a.kind() == EvWord::TX_WAKE, port, fifo));
        }
        if let Some((_, a)) = self.q.peek_ahead(PREFETCH_AHEAD) {
            if a.kind() == EvWord::ARRIVE {
                let dir = a.id();
                let to = self.peer[dir as usize];
                prefetch::whole(&self.ports[to as usize]);
                // The head and the entry after it (whose time the
                // pop reads to schedule the next arrival): often two lines.
                let (head, next) = self.link_fifo[dir as usize].first_two();
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
        if let Some(d) = &self.deadlock {
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
                if !self.delivered.is_empty() {
                    return Some(RoceStatus::Delivered);
                }
                if self.flows_left == 0 && self.live == 0 && !self.driven {
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
                return Some(if self.flows_left == 0 {
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
                let (p, next) = self.link_fifo[d].pop(&mut self.link_wide[d]).expect("FIFO head");
                if let Some(nt) = next {
                    self.push_ev(nt, Ev::Arrive { dir });
                }
                let to = self.peer[dir as usize];
                self.arrive(to, p);
            }
            Ev::TxWake { gp } => {
                if self.ports[gp as usize].wake_at == t {
                    self.ports[gp as usize].wake_at = Time::NEVER;
                    self.try_tx(gp);
                }
            }
            Ev::FlowStart { flow } => self.flow_start(flow),
            Ev::NicTimer { nic } => {
                if self.nics[nic as usize].timer_at == t {
                    self.nics[nic as usize].timer_at = Time::NEVER;
                    self.nic_timer(nic);
                }
            }
            Ev::PauseTimer { gp } => {
                if self.pc[gp as usize].pause_timer_at == t {
                    self.pc[gp as usize].pause_timer_at = Time::NEVER;
                    self.pause_refresh(gp);
                }
            }
            Ev::WdPoll => {
                self.watchdog_poll();
                if self.flows_left > 0 || self.live > 0 {
                    self.push_ev(self.now + self.wd_period, Ev::WdPoll);
                } else {
                    self.timers_armed &= !1;
                }
            }
            Ev::Check => {
                // A cycle of paused queues is a deadlock when nothing at all moved
                // for a whole period, or when the same cycle is found twice with
                // none of its queues having sent a packet in between (other
                // traffic may still flow around a partial deadlock).
                if self.live > 0 {
                    let stalled = self.progress == self.last_progress;
                    match self.find_cycle() {
                        Some(c) => {
                            let key: Vec<(u32, u8, u64)> =
                                c.iter().map(|&(g, q)| (g, q, self.queue_sent(g, q))).collect();
                            if stalled || self.suspect.as_ref() == Some(&key) {
                                let d = self.describe_cycle(&c);
                                self.deadlock = Some(d.clone());
                                return Some(RoceStatus::Deadlock(d));
                            }
                            self.suspect = Some(key);
                        }
                        None => self.suspect = None,
                    }
                }
                self.last_progress = self.progress;
                if self.flows_left > 0 || self.live > 0 {
                    self.push_ev(self.now + self.cfg.observe.deadlock_check, Ev::Check);
                } else {
                    self.timers_armed &= !2;
                }
            }
            Ev::LinkFail { link } => {
                let l = &self.fabric.links[link as usize];
                for e in [l.a, l.b] {
                    let g = self.port_base[e.node.idx()] + u32::from(e.port);
                    self.ports[g as usize].fate |= Port::DOWN;
                }
                self.ecmp.fail_link(LinkId(link), self.now.as_ps());
                self.route_cache.fill(NO_ROUTE);
                if self.cfg.routing.local_repair {
                    let mut v = EcmpTable::build(&self.fabric, 0);
                    for (li, l) in self.fabric.links.iter().enumerate() {
                        let g = self.port_base[l.a.node.idx()] + u32::from(l.a.port);
                        if self.ports[g as usize].down() {
                            v.fail_link(LinkId(li as u32), self.now.as_ps());
                        }
                    }
                    v.poll(&self.fabric, self.now.as_ps());
                    self.local_view = Some(v);
                }
                let t = Time::ps(self.ecmp.next_deadline_ps());
                self.push_ev(t, Ev::Converge);
            }
            Ev::Converge => {
                if self.ecmp.poll(&self.fabric, self.now.as_ps()) {
                    self.local_view = None;
                }
                self.route_cache.fill(NO_ROUTE);
            }
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
                let t = self.tcp.spec(pk.flow);
                (t.src.0, t.dst.0)
            }
            Kind::Data | Kind::Ack | Kind::Nak | Kind::Cnp => {
                let f = &self.flows[pk.flow as usize].spec;
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
            Kind::Data => u32::from(pk.wire) - ROCEV2_HEADERS - if self.hpcc_on { INT_BYTES } else { 0 },
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
            self.int.release(p.int);
        }
        self.ledger.delivered += 1;
        self.live = self.live.wrapping_sub(1);
    }

    fn drop_pkt(&mut self, p: Pkt, why: RoceDrop) {
        let i = RoceDrop::ALL.iter().position(|r| *r == why).expect("listed");
        self.ledger.dropped[i] += 1;
        if p.int != 0 {
            self.int.release(p.int);
        }
        if p.kind.is_tcp() {
            self.tcp.on_drop(i);
        }
        let pk = p;
        let (_, pg, _) = self.maps.classify(pk.dscp);
        if pk.kind != Kind::Pause && self.maps.lossless(pg) {
            self.ledger.dropped_lossless[i] += 1;
        }
        self.live = self.live.wrapping_sub(1);
    }

    #[inline(always)]
    fn schedule_wake(&mut self, gp: u32, t: Time) {
        let p = &mut self.ports[gp as usize];
        if t < p.wake_at {
            p.wake_at = t;
            self.push_ev(t, Ev::TxWake { gp });
        }
    }

    /// Index of egress queue `q` of port `gp` in `eq`.
    #[inline(always)]
    fn eqi(&self, q: usize, gp: u32) -> usize {
        q * self.ports.len() + gp as usize
    }

    /// The node port `gp` belongs to.
    fn node_of(&self, gp: u32) -> u32 {
        match self.ports[gp as usize].owner() {
            (true, si) => self.switches[si as usize].node,
            (false, ni) => self.nics[ni as usize].node,
        }
    }

    /// Prefetch the packet switch port `gp` would send next from its lowest
    /// non-empty queue (a hint for an upcoming wake-up; no effect on results).
    /// A NIC port's mask is always 0.
    #[inline]
    fn prefetch_egress(&self, gp: u32) {
        let port = &self.ports[gp as usize];
        // The link-FIFO slot the send will write: the one after the last written
        // (a store into a line last touched a send ago, long out of cache).
        prefetch::addr((port.tail_hint + KeyedFifo::<Pkt>::SLOT_BYTES) as *const u8);
        let mask = port.qmask;
        if mask != 0 {
            // The head is in the queue's header line, which this reads; the pop
            // moves the packet after it there from the ring: start loading that.
            if let Some(next) = self.eq[self.eqi(mask.trailing_zeros() as usize, gp)].second() {
                prefetch::whole(next);
            }
            // The switch record's dequeue half (port count, counter and RED
            // tables, XOFF list, the MMU's pool and tables): lines 1 to 4.
            let sw = (&self.switches[port.owner().1 as usize] as *const Switch).cast::<u8>();
            for l in 1..5 {
                prefetch::addr(sw.wrapping_add(64 * l));
            }
        }
    }

    /// When each priority of transmitter `gp` may send again; all `ZERO` (free)
    /// without reading the cold pause state when nothing is paused.
    #[inline]
    fn pause_until(&self, gp: u32) -> [Time; 8] {
        if self.ports[gp as usize].pause_max > self.now {
            self.pc[gp as usize].paused.until_all()
        } else {
            [Time::ZERO; 8]
        }
    }

    #[inline]
    fn kick(&mut self, gp: u32) {
        let p = &self.ports[gp as usize];
        if p.fate & Port::UNCABLED != 0 {
            return;
        }
        if p.busy_until > self.now {
            let b = p.busy_until;
            self.schedule_wake(gp, b);
        } else if p.wake_at > self.now {
            self.try_tx(gp);
        }
    }

    /// Transmitter `gp` is free: send a PFC frame, else the model's next packet.
    fn try_tx(&mut self, gp: u32) {
        let g = gp as usize;
        if self.ports[g].busy_until > self.now {
            let b = self.ports[g].busy_until;
            self.schedule_wake(gp, b);
            return;
        }
        if self.ports[g].has_ctrl {
            let c = &mut self.pc[g].ctrl;
            let p = c.pop_front().expect("has_ctrl");
            self.ports[g].has_ctrl = !c.is_empty();
            self.transmit(gp, p);
            return;
        }
        let (is_sw, idx) = self.ports[g].owner();
        let pick = if is_sw {
            self.switch_pick(idx, gp)
        } else {
            self.nic_pick(idx)
        };
        match pick {
            Ok(p) => self.transmit(gp, p),
            Err(t) => {
                if t != Time::NEVER {
                    self.schedule_wake(gp, t.max(self.now));
                }
            }
        }
    }

    /// When transmitter `gp`, free from `free`, next has something it may send:
    /// `free` if a frame is queued, else (a NIC) the earliest pacing time of a flow
    /// with data; `None` when there is nothing to send. A NIC whose DCQCN rate is
    /// under the line rate is woken once per packet, at its pacing time.
    fn next_work(&self, gp: u32, free: Time) -> Option<Time> {
        let port = &self.ports[gp as usize];
        if port.has_ctrl {
            return Some(free);
        }
        let (is_sw, idx) = port.owner();
        if is_sw {
            (port.qmask != 0).then_some(free)
        } else {
            let n = &self.nics[idx as usize];
            if !n.ctrl.is_empty() || (self.tcp.sends(idx) && self.tcp.has_work(idx, self.now)) {
                return Some(free);
            }
            n.flows
                .iter()
                .map(|&f| &self.flows[f as usize])
                .filter(|f| f.started && f.req.has_data() && !(self.hpcc_on && f.window_bound(self.cfg.nic.mtu)))
                .map(|f| f.next_ok.max(free))
                .min()
        }
    }

    fn transmit(&mut self, gp: u32, p: Pkt) {
        let g = gp as usize;
        let pk = p;
        if gp == self.capture_gp {
            self.captured.push((self.now, pk));
        }
        // One look-up of the port's line for everything a send updates.
        let port = &mut self.ports[g];
        let end = self.now + port.ser.time(u32::from(pk.wire));
        let arrive = end + port.prop;
        port.busy_until = end;
        port.tx_bytes += u64::from(pk.wire);
        self.sent += 1;
        let mut lost = None;
        if port.fate != 0 {
            if port.down() {
                lost = Some(RoceDrop::LinkDown);
            } else if port.fate & Port::LOSSY != 0 && pk.kind == Kind::Data {
                // Loss injection.
                let c = &mut self.pc[g];
                c.data_sent += 1;
                if c.data_sent.is_multiple_of(c.loss_every) {
                    lost = Some(RoceDrop::Injected);
                }
            }
        }
        match lost {
            Some(why) => self.drop_pkt(p, why),
            None if self.ports[g].fate & Port::CUT != 0 => {
                let mut p = p;
                if p.int != 0 {
                    // The header goes with the packet; the far part gives it
                    // a handle of its own (any non-zero mark until then).
                    self.outbox_int.push(*self.int.get(p.int));
                    self.int.release(p.int);
                    p.int = 1;
                }
                self.outbox.push((arrive, gp, p));
            }
            None => {
                let f = &mut self.link_fifo[g];
                let first = f.push(&mut self.link_wide[g], arrive, p);
                self.ports[g].tail_hint = f.back_addr();
                if first {
                    self.push_ev(arrive, Ev::Arrive { dir: gp });
                }
            }
        }
        // Look again when the line frees, or a NIC's pacing lets it send, if there
        // is anything left to send.
        if let Some(t) = self.next_work(gp, end) {
            self.schedule_wake(gp, t);
        }
    }

    // ---------------------------------------------------------------- arrival

    fn arrive(&mut self, gp: u32, p: Pkt) {
        let pk = p;
        if pk.kind == Kind::Pause {
            let (prio, quanta) = pk.pause();
            self.on_pause_frame(gp, prio, quanta);
            self.deliver(p);
            return;
        }
        let (is_sw, idx) = self.ports[gp as usize].owner();
        if is_sw {
            self.switch_arrive(idx, gp, p)
        } else {
            self.nic_arrive(idx, p)
        }
    }

    fn on_pause_frame(&mut self, gp: u32, prio: u8, quanta: u16) {
        let now = self.now;
        if !self.maps.lossless(prio) {
            // PFC is off for this priority here: the frame is counted and ignored.
            self.pc[gp as usize].paused.frames[usize::from(prio & 7)] += 1;
            return;
        }
        let mode = self.cfg.pfc.pause_mode;
        let cold = &mut self.pc[gp as usize];
        let was = cold.paused.is_paused(now, prio);
        let bps = cold.bps;
        cold.paused.on_frame(now, prio, quanta, bps, mode);
        let is = cold.paused.is_paused(now, prio);
        let latest = cold.paused.until_all().into_iter().max().unwrap_or(Time::ZERO);
        let port = &mut self.ports[gp as usize];
        port.pause_max = latest;
        if self.cfg.observe.record_pfc && was != is {
            let is_sw = port.owner().0;
            let num = port.num;
            let node = self.node_of(gp);
            self.pfc.push(PfcRecord {
                time_ns: now.0 / 1000,
                node,
                node_type: u8::from(is_sw),
                if_index: u32::from(num),
                pause: is,
            });
        }
        if !is {
            self.kick(gp);
        } else if mode == PauseMode::Timed {
            // Look again when the pause runs out.
            let until = self.pc[gp as usize].paused.until(prio);
            self.schedule_wake(gp, until);
        }
    }

    fn send_pause(&mut self, gp: u32, f: PauseFrame) {
        let (prio, quanta) = match f {
            PauseFrame::Xoff { prio, quanta } => (prio, quanta),
            PauseFrame::Xon { prio } => (prio, 0),
        };
        let p = self.new_pkt(Pkt {
            kind: Kind::Pause,
            flow: NONE,
            seq: Pkt::pause_word(prio, quanta),
            wire: PAUSE_BYTES as u16,
            dscp: 0,
            hops: 0,
            flags: 0,
            int: 0,
        });
        self.pc[gp as usize].ctrl.push_back(p);
        self.ports[gp as usize].has_ctrl = true;
        if matches!(f, PauseFrame::Xoff { .. }) && self.cfg.pfc.pause_mode == PauseMode::Timed {
            let t = self.pc[gp as usize].pausegen.next_deadline();
            self.arm_pause_timer(gp, t);
        }
        self.kick(gp);
    }

    fn arm_pause_timer(&mut self, gp: u32, t: Time) {
        let port = &mut self.pc[gp as usize];
        if t < port.pause_timer_at {
            port.pause_timer_at = t;
            self.push_ev(t, Ev::PauseTimer { gp });
        }
    }

    fn pause_refresh(&mut self, gp: u32) {
        let mut out = Vec::new();
        let bps = self.pc[gp as usize].bps;
        self.pc[gp as usize].pausegen.poll(self.now, bps, &mut out);
        for f in out {
            self.send_pause(gp, f);
        }
        let t = self.pc[gp as usize].pausegen.next_deadline();
        if t != Time::NEVER {
            self.arm_pause_timer(gp, t);
        }
    }

    // ----------------------------------------------------------------- switch

    /// The egress port of switch `si` for `pk`: a static override, else the
    /// ECMP member its 5-tuple hashes to (cached per flow, direction and switch:
    /// every packet of a QP in one direction carries the same 5-tuple).
    #[inline]
    fn route(&mut self, si: u32, pk: &Pkt) -> Option<u8> {
        let sw = &self.switches[si as usize];
        if !self.overrides.is_empty() {
            let dst = self.ends(pk).1;
            if let Some(o) = self.overrides.iter().find(|o| o.0 == sw.node && o.1 == dst) {
                return Some(o.2);
            }
        }
        if pk.kind.is_tcp() {
            // Background TCP flows have their own ids: hashed every time.
            return self.route_hashed(si, pk);
        }
        let dir = usize::from(pk.kind != Kind::Data);
        let ci = (pk.flow as usize * 2 + dir) * self.switches.len() + si as usize;
        let c = self.route_cache[ci];
        if c != NO_ROUTE {
            return Some(c);
        }
        let out = self.route_hashed(si, pk);
        if let Some(o) = out {
            self.route_cache[ci] = o;
        }
        out
    }

    fn route_hashed(&self, si: u32, pk: &Pkt) -> Option<u8> {
        let sw = &self.switches[si as usize];
        let (sport, dport, proto) = if pk.kind.is_tcp() {
            // TCP hashes its own ports; the ACK direction swaps them.
            let (s, d) = self.tcp.ports(pk.flow);
            if pk.kind == Kind::TcpData { (s, d, 6) } else { (d, s, 6) }
        } else {
            (self.flows[pk.flow as usize].spec.sport, 4791, 17)
        };
        // Both directions of a QP hash its UDP source port (the responder
        // answers with the same entropy), addresses in packet direction.
        let (src, dst) = self.ends(pk);
        let key = if self.cfg.routing.rocev1.is_some() {
            // RoCEv1 has no IP/UDP header: a switch hashes MAC addresses only.
            FlowKey::rocev1(src, dst, pk.flow)
        } else {
            FlowKey {
                sip: host_ip(src),
                dip: host_ip(dst),
                sport,
                dport,
                proto,
                smac: 0,
                dmac: 0,
                dqpn: pk.flow,
            }
        };
        let h = if self.cfg.routing.rocev1.is_some() {
            HashConfig {
                fields: field::L2,
                ..sw.hash
            }
            .hash(&key)
        } else {
            sw.hash.hash(&key)
        };
        let out = self.ecmp.next_port(NodeId(sw.node), NodeId(dst), h)?;
        if let Some(v) = &self.local_view {
            // The switch knows its own link is down: it takes its repaired route.
            if self.ports[(self.port_base[sw.node as usize] + u32::from(out)) as usize].down() {
                return v.next_port(NodeId(sw.node), NodeId(dst), h);
            }
        }
        Some(out)
    }

    fn switch_arrive(&mut self, si: u32, gp: u32, mut p: Pkt) {
        let in_port = self.ports[gp as usize].num;
        let pk = p;
        // A router drops a packet whose TTL would reach 0 (RFC 1812 §5.3.1).
        if IP_TTL - p.hops <= 1 {
            self.drop_pkt(p, RoceDrop::TtlExpired);
            return;
        }
        p.hops += 1;
        let (_, pg, queue) = self.switches[si as usize].maps.classify(pk.dscp);
        let Some(out) = self.route(si, &pk) else {
            self.drop_pkt(p, RoceDrop::NoRoute);
            return;
        };
        let s = &mut self.switches[si as usize];
        let qi = usize::from(queue) * s.nports + usize::from(out);
        // The configuration first: without a dropping watchdog the per-queue flag
        // (a line of its own) is not read.
        if self.wd_drop && s.wd_stormed[qi] {
            self.drop_pkt(p, RoceDrop::Watchdog);
            return;
        }
        match s
            .mmu
            .admit(usize::from(in_port), pg, usize::from(out), queue, u32::from(pk.wire))
        {
            Admit::Drop(d) => {
                let why = match d {
                    MmuDrop::LossyOverThreshold => RoceDrop::LossyOverThreshold,
                    MmuDrop::HeadroomOverflow if pk.has(Pkt::WD_FWD) => RoceDrop::Watchdog,
                    MmuDrop::HeadroomOverflow => RoceDrop::HeadroomOverflow,
                };
                self.drop_pkt(p, why);
            }
            Admit::Ok { xoff, .. } => {
                p.set(Pkt::WD_FWD, false);
                let e = Queued { p, in_port, pg };
                let og = s.base + u32::from(out);
                if !xoff && self.ports[og as usize].qmask == 0 && self.may_send_now(og, queue) {
                    // Cut-through: the egress port is idle, nothing else is queued
                    // there and this queue is not paused, so queueing the packet
                    // and kicking the port would dequeue it again at once. Skip
                    // the ring (a cache miss each way); the dequeue work and the
                    // send are the same, in the same order.
                    let p = self.switch_dequeued(si, og, usize::from(out), usize::from(queue), e);
                    self.transmit(og, p);
                    return;
                }
                let ei = self.eqi(usize::from(queue), og);
                self.eq[ei].push_back(e);
                self.ports[og as usize].qmask |= 1 << queue;
                let s = &mut self.switches[si as usize];
                if xoff {
                    s.xoff.push((in_port, pg));
                    let bps = self.pc[gp as usize].bps;
                    if let Some(f) = self.pc[gp as usize].pausegen.xoff(self.now, pg, bps) {
                        self.send_pause(gp, f);
                    }
                }
                self.kick(og);
            }
        }
    }

    fn switch_pick(&mut self, si: u32, gp: u32) -> Result<Pkt, Time> {
        let now = self.now;
        let port = self.ports[gp as usize].num as usize;
        let mask = self.ports[gp as usize].qmask;
        if mask == 0 {
            return Err(Time::NEVER);
        }
        // Nothing paused (the common case): the cold pause state is not read.
        let any_paused = self.ports[gp as usize].pause_max > now;
        let q = if mask.is_power_of_two() && !any_paused {
            // Fast path: one non-empty queue, nothing paused: no arbitration
            // (what `switch_arbitrate` would choose, without its set-up).
            mask.trailing_zeros() as usize
        } else {
            self.switch_arbitrate(si, gp, port, mask, any_paused)?
        };
        let ei = q * self.ports.len() + gp as usize;
        let eq = &mut self.eq[ei];
        // Emptied, the queue's ring starts again at its first slot (`HeadRing`):
        // a queue that mostly holds a packet or two reuses the same line instead
        // of walking the whole capacity a past burst gave it.
        let p = eq.pop_front().expect("picked");
        if eq.is_empty() {
            self.ports[gp as usize].qmask &= !(1 << q);
        }
        Ok(self.switch_dequeued(si, gp, port, q, p))
    }

    /// The queue switch port `gp` (local `port`, non-empty queues `mask`) serves
    /// next: the only non-empty one, else the scheduler's choice, among the queues
    /// no pause holds back; `Err` with the time the first pause ends when all are.
    #[inline(never)]
    fn switch_arbitrate(&mut self, si: u32, gp: u32, port: usize, mask: u8, any_paused: bool) -> Result<usize, Time> {
        let now = self.now;
        let forward = self.wd_forward;
        let s = &mut self.switches[si as usize];
        let paused = &self.pc[gp as usize].paused;
        let stormed = &s.wd_stormed;
        let nports = s.nports;
        // PFC priority p pauses queue p (SONiC MAP_PFC_PRIORITY_TO_QUEUE AZURE is identity).
        let blocked = |q: usize| any_paused && paused.until(q as u8) > now && !(forward && stormed[q * nports + port]);
        let chosen = if mask.is_power_of_two() {
            let q = mask.trailing_zeros() as usize;
            (!blocked(q)).then_some(q)
        } else {
            let (qs, n) = (&self.eq, self.ports.len());
            s.sched[port].pick(|q| {
                let p = qs[q * n + gp as usize].front()?;
                if blocked(q) {
                    return None;
                }
                Some(u32::from(p.p.wire))
            })
        };
        chosen.ok_or_else(|| {
            let mut wait = Time::NEVER;
            for q in 0..NPRIO {
                let u = paused.until(q as u8);
                if mask & (1 << q) != 0 && u > now {
                    wait = wait.min(u);
                }
            }
            wait
        })
    }

    /// May switch egress port `gp` send a packet of queue `q` right now, with
    /// nothing else queued at it: exactly when [`Self::kick`] would call
    /// [`Self::try_tx`] and [`Self::switch_pick`] would pick queue `q`.
    #[inline(always)]
    fn may_send_now(&self, gp: u32, q: u8) -> bool {
        let port = &self.ports[gp as usize];
        let now = self.now;
        if port.fate & Port::UNCABLED != 0 || port.busy_until > now || port.wake_at <= now || port.has_ctrl {
            return false;
        }
        if port.pause_max <= now || self.pc[gp as usize].paused.until(q) <= now {
            return true;
        }
        // Paused, unless a forwarding watchdog ignores pauses on this queue.
        let (_, si) = port.owner();
        let s = &self.switches[si as usize];
        self.wd_forward && s.wd_stormed[usize::from(q) * s.nports + usize::from(port.num)]
    }

    /// The dequeue-time work of switch `si` for packet `p` leaving egress queue
    /// (`port`, `q`) through `gp` now: watchdog mark, RED/ECN on the queue's
    /// bytes, MMU release, HPCC INT, XON re-check.
    #[inline(always)]
    fn switch_dequeued(&mut self, si: u32, gp: u32, port: usize, q: usize, e: Queued) -> Pkt {
        let now = self.now;
        let forward = self.wd_forward;
        let s = &mut self.switches[si as usize];
        let qi = q * s.nports + port;
        let qlen = s.mmu.egress_at(port, q as u8);
        let mut p = e.p;
        p.set(Pkt::WD_FWD, forward && s.wd_stormed[qi]);
        s.q_tx[qi] += 1;
        let pk = p;
        // RED/ECN at dequeue on the egress queue's bytes (HPCC ns-3).
        if (pk.kind == Kind::Data || (pk.kind == Kind::TcpData && self.tcp.ect()))
            && let Some(red) = &s.red[port]
            && red.should_mark(qlen, &mut s.rng)
            && !p.has(Pkt::CE)
        {
            p.set(Pkt::CE, true);
            self.ecn_marks += 1;
        }
        s.mmu
            .release(usize::from(e.in_port), e.pg, port, q as u8, u32::from(pk.wire));
        if pk.int != 0 && pk.kind == Kind::Data {
            // HPCC INT at egress (data only: an ACK carries its data packet's
            // records back untouched) (ns-3 SwitchNode::SwitchNotifyDequeue): the
            // port's bytes sent with this packet, its queue (every class) after
            // the dequeue, now, the link rate.
            let qlen = (0..NPRIO as u8).map(|c| s.mmu.egress_at(port, c)).sum();
            let g = &self.ports[gp as usize];
            self.int.get_mut(pk.int).set(
                usize::from(pk.hops).saturating_sub(1),
                IntHop {
                    ts: now,
                    tx_bytes: g.tx_bytes + u64::from(pk.wire),
                    qlen,
                    rate_bps: self.pc[gp as usize].bps,
                },
            );
        }
        // TCP moving on its own class is no sign that the RDMA class is not deadlocked.
        self.progress += u64::from(!pk.kind.is_tcp());
        if !s.xoff.is_empty() {
            self.resume_check(si);
        }
        p
    }

    /// XON every paused ingress PG of switch `si` that may resume now.
    fn resume_check(&mut self, si: u32) {
        let s = &mut self.switches[si as usize];
        if s.xoff.is_empty() {
            return;
        }
        let node = s.node;
        let mut i = 0;
        while i < self.switches[si as usize].xoff.len() {
            let (port, pg) = self.switches[si as usize].xoff[i];
            // `Mmu::release` may already have cleared the PG (its own in-port check).
            let m = &mut self.switches[si as usize].mmu;
            if !m.pg_paused(usize::from(port), pg) || m.check_resume(usize::from(port), pg) {
                self.switches[si as usize].xoff.swap_remove(i);
                let ig = self.port_base[node as usize] + u32::from(port);
                if let Some(f) = self.pc[ig as usize].pausegen.xon(pg) {
                    self.send_pause(ig, f);
                }
            } else {
                i += 1;
            }
        }
    }

    // -------------------------------------------------------------------- NIC

    fn flow_start(&mut self, k: u32) {
        let f = &mut self.flows[k as usize];
        f.started = true;
        for m in 0..f.spec.messages.max(1) {
            // Messages are posted together; PSNs are allocated, packets are built
            // only when the port sends them.
            f.req.post(u64::from(m), f.spec.size, self.now);
        }
        let nic = self.role[f.spec.src.idx()].1;
        let gp = self.nics[nic as usize].gp;
        self.kick(gp);
    }

    fn nic_ctrl(&mut self, nic: u32, pk: Pkt) {
        let p = self.new_pkt(pk);
        self.nics[nic as usize].ctrl.push_back(p);
        let gp = self.nics[nic as usize].gp;
        self.kick(gp);
    }

    fn nic_pick(&mut self, nic: u32) -> Result<Pkt, Time> {
        let now = self.now;
        let n = &self.nics[nic as usize];
        let gp = n.gp;
        let until = self.pause_until(gp);
        let mut wait = Time::NEVER;
        // ACK/NAK/CNP first (HPCC ACK_HIGH_PRIO); each honours PFC on its priority.
        if let Some(pk) = n.ctrl.front() {
            let (_, pg, _) = self.maps.classify(pk.dscp);
            if self.cfg.nic.ack_high_prio || until[usize::from(pg)] <= now || !self.maps.lossless(pg) {
                let ctrl = &mut self.nics[nic as usize].ctrl;
                let p = ctrl.pop_front().expect("front");
                if ctrl.is_empty() {
                    // Reuse the ring's first slot (see `switch_pick`).
                    ctrl.clear();
                }
                return Ok(p);
            }
            wait = wait.min(until[usize::from(pg)]);
        }
        if !self.tcp.sends(nic) {
            return self.nic_pick_rdma(nic, wait);
        }
        // RDMA and TCP share the port by the NIC's ETS (tcp.rs).
        let mut tcp_idle = false;
        if self.tcp.tcp_first(nic) {
            match self.nic_pick_tcp(nic, false) {
                Ok(p) => return Ok(p),
                Err(t) => {
                    wait = wait.min(t);
                    tcp_idle = true;
                }
            }
        }
        match self.nic_pick_rdma(nic, wait) {
            Ok(p) => {
                self.tcp.served(nic, false, u32::from(p.wire), tcp_idle);
                Ok(p)
            }
            Err(w) if tcp_idle => Err(w),
            Err(w) => self.nic_pick_tcp(nic, true).map_err(|t| t.min(w)),
        }
    }

    /// A TCP segment from NIC `nic` if one may go now (`rdma_idle`: RDMA had none).
    fn nic_pick_tcp(&mut self, nic: u32, rdma_idle: bool) -> Result<Pkt, Time> {
        let seg = self.tcp.pick(nic, self.now)?;
        self.tcp.served(nic, true, seg.wire, rdma_idle);
        // Segments are at most 9000 bytes (TcpConfig::validate).
        Ok(self.new_pkt(Pkt {
            kind: Kind::TcpData,
            flow: seg.flow,
            seq: seg.seq,
            wire: seg.wire as u16,
            dscp: self.tcp.config().dscp,
            ..Pkt::default()
        }))
    }

    /// The next RDMA data packet of NIC `nic` (`wait`: the earliest time found so far).
    fn nic_pick_rdma(&mut self, nic: u32, mut wait: Time) -> Result<Pkt, Time> {
        let now = self.now;
        let n = &self.nics[nic as usize];
        let gp = n.gp;
        let until = self.pause_until(gp);
        let data_prio = self.maps.classify(DSCP_ROCE).1;
        if until[usize::from(data_prio)] > now && self.maps.lossless(data_prio) {
            return Err(wait.min(until[usize::from(data_prio)]));
        }
        let nf = n.flows.len();
        for k in 0..nf {
            // (rr + k) mod nf without a division: rr < nf and k < nf.
            let i = if n.rr + k >= nf { n.rr + k - nf } else { n.rr + k };
            let fi = n.flows[i] as usize;
            let f = &self.flows[fi];
            if !f.started || !f.req.has_data() || (self.hpcc_on && f.window_bound(self.cfg.nic.mtu)) {
                // A window-bound HPCC QP waits for an ACK (which kicks the NIC).
                continue;
            }
            if f.next_ok > now {
                wait = wait.min(f.next_ok);
                continue;
            }
            self.nics[nic as usize].rr = if i + 1 == nf { 0 } else { i + 1 };
            let f = &mut self.flows[fi];
            let tx = f.req.next_packet(now).expect("has data");
            let hpcc = self.hpcc_on;
            let wire = tx.payload + ROCEV2_HEADERS + if hpcc { INT_BYTES } else { 0 };
            let rate = match (&f.rp, &f.dctcp, &f.hpcc) {
                (Some(rp), _, _) => rp.rate_bps(),
                (None, Some(d), _) => d.rate_bps(),
                (None, None, Some(h)) => h.rate_bps(),
                (None, None, None) => self.pc[gp as usize].bps,
            };
            if let Some(rp) = f.rp.as_mut() {
                rp.on_sent(now, u64::from(wire));
            }
            f.next_ok = now + Time(pace_ps(u64::from(wire), rate.max(1)));
            let int = if hpcc { self.int.alloc() } else { 0 };
            // Payloads are at most the MTU, 9000 bytes (checked in `new`); the
            // payload is the wire size less the headers (`RoceSim::payload`).
            debug_assert!(wire <= u32::from(u16::MAX));
            let mut flags = 0;
            if tx.first {
                flags |= Pkt::FIRST;
            }
            if tx.last {
                flags |= Pkt::LAST;
            }
            let p = self.new_pkt(Pkt {
                kind: Kind::Data,
                flow: fi as u32,
                seq: tx.psn.value(),
                wire: wire as u16,
                dscp: DSCP_ROCE,
                hops: 0,
                flags,
                int,
            });
            self.arm_flow_timers(nic, fi);
            return Ok(p);
        }
        Err(wait)
    }

    fn arm_flow_timers(&mut self, nic: u32, fi: usize) {
        let f = &self.flows[fi];
        let t = f
            .req
            .next_deadline()
            .min(f.rp.as_ref().map_or(Time::NEVER, ReactionPoint::next_deadline));
        self.arm_nic(nic, t);
    }

    fn arm_nic(&mut self, nic: u32, t: Time) {
        let n = &mut self.nics[nic as usize];
        if t < n.timer_at {
            n.timer_at = t;
            self.push_ev(t, Ev::NicTimer { nic });
        }
    }

    fn nic_timer(&mut self, nic: u32) {
        let now = self.now;
        let mut next = Time::NEVER;
        let mut kick = false;
        for i in 0..self.nics[nic as usize].flows.len() {
            let fi = self.nics[nic as usize].flows[i] as usize;
            let f = &mut self.flows[fi];
            if let Some(rp) = f.rp.as_mut() {
                rp.poll(now);
                next = next.min(rp.next_deadline());
            }
            if f.req.poll(now) {
                kick = true;
            }
            next = next.min(f.req.next_deadline());
        }
        if self.tcp.sends(nic) {
            kick |= self.tcp.poll(nic, now);
            next = next.min(self.tcp.next_deadline(nic));
        }
        // Host drain and the NIC's stall prevention.
        self.nic_drain(nic);
        if self.nics[nic as usize].rx.poll(now) {
            self.nic_pause_update(nic);
        }
        next = next.min(self.nics[nic as usize].rx.next_deadline());
        if self.nics[nic as usize].drain_bps > 0 && self.nics[nic as usize].rx.used() > 0 {
            next = next.min(now + Time::us(1));
        }
        if next != Time::NEVER {
            self.arm_nic(nic, next);
        }
        if kick {
            let gp = self.nics[nic as usize].gp;
            self.kick(gp);
        }
    }

    fn nic_drain(&mut self, nic: u32) {
        let now = self.now;
        let n = &mut self.nics[nic as usize];
        if n.drain_bps == 0 {
            return;
        }
        let dt = now.saturating_sub(n.last_drain);
        n.last_drain = now;
        let bytes = (u128::from(dt.0) * u128::from(n.drain_bps) / 8 / 1_000_000_000_000) as u64;
        let mut left = bytes.min(n.rx.used());
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX)) as u32;
            n.rx.on_drain(now, chunk);
            left -= u64::from(chunk);
        }
        self.nic_pause_update(nic);
    }

    /// Send XOFF/XON from the NIC as its receive buffer asks.
    fn nic_pause_update(&mut self, nic: u32) {
        if !self.cfg.pfc.enabled && !self.nics[nic as usize].rx.faulty {
            return;
        }
        let n = &mut self.nics[nic as usize];
        let gp = n.gp;
        let want = n.rx.wants_pause();
        if !want && !n.xoff_on {
            // Nothing asserted and nothing to assert (every packet at a healthy
            // NIC): the port's pause generator (a cold line) would answer None.
            let t = n.rx.next_deadline();
            if t != Time::NEVER {
                self.arm_nic(nic, t);
            }
            return;
        }
        n.xoff_on = want;
        let prio = self.maps.classify(DSCP_ROCE).1;
        let bps = self.pc[gp as usize].bps;
        let f = if want {
            self.pc[gp as usize].pausegen.xoff(self.now, prio, bps)
        } else {
            self.pc[gp as usize].pausegen.xon(prio)
        };
        if let Some(f) = f {
            self.send_pause(gp, f);
        }
        let t = self.nics[nic as usize].rx.next_deadline();
        if t != Time::NEVER {
            self.arm_nic(nic, t);
        }
    }

    fn nic_arrive(&mut self, nic: u32, p: Pkt) {
        let now = self.now;
        let pk = p;
        let mut p = p;
        match pk.kind {
            Kind::Data => {
                self.nic_drain(nic);
                let ok = self.nics[nic as usize].rx.on_arrive(now, u32::from(pk.wire));
                if !ok {
                    self.nic_pause_update(nic);
                    let why = if self.nics[nic as usize].rx.faulty {
                        RoceDrop::FaultyNic
                    } else {
                        RoceDrop::NicRxDiscard
                    };
                    self.drop_pkt(p, why);
                    return;
                }
                if self.nics[nic as usize].drain_bps == 0 {
                    self.nics[nic as usize].rx.on_drain(now, u32::from(pk.wire));
                } else {
                    let t = now + Time::us(1);
                    self.arm_nic(nic, t);
                }
                self.nic_pause_update(nic);
                let fi = pk.flow as usize;
                let payload = self.payload(&pk);
                let verdict = self.flows[fi]
                    .resp
                    .on_packet(pk.psn(), payload, pk.has(Pkt::FIRST), pk.has(Pkt::LAST));
                // DCTCP: the ACK echoes the CE mark of the packet that triggered it
                // (HPCC ns-3 sets the ACK's CNP flag).
                let echo = pk.has(Pkt::CE) && matches!(self.cfg.nic.cc, CongestionControl::Dctcp(_));
                let reply = |kind: Kind, psn: u32| Pkt {
                    kind,
                    flow: pk.flow,
                    seq: psn,
                    wire: ACK_BYTES as u16,
                    dscp: DSCP_ROCE,
                    hops: 0,
                    flags: if echo && kind == Kind::Ack { Pkt::CE } else { 0 },
                    int: 0,
                };
                // HPCC: the first ACK/NAK this packet triggers echoes its INT
                // (ns-3 copies the IntHeader into the ACK), 42 bytes more on the wire.
                let mut int = pk.int;
                p.int = 0;
                if int != 0 {
                    // The switches wrote hops 0..hops−1 (the first MAX_HOPS of them).
                    let h = self.int.get_mut(int);
                    h.n = pk.hops.min(crate::roce::hpcc_cc::MAX_HOPS as u8);
                    h.rx = now;
                }
                let mut reply = |kind: Kind, psn: u32| {
                    let mut r = reply(kind, psn);
                    if int != 0 {
                        r.int = int;
                        r.wire += INT_BYTES as u16;
                        int = 0;
                    }
                    r
                };
                match verdict {
                    RxVerdict::Accept { ack } => {
                        self.flows[fi].delivered_bytes += u64::from(payload);
                        self.progress += 1;
                        if pk.has(Pkt::LAST)
                            && self.flows[fi].dynamic
                            && let Some((tag, posted)) = self.flows[fi].rx_tags.pop_front()
                        {
                            self.delivered.push(Delivered { tag, posted, done: now });
                        }
                        if let Some(a) = ack {
                            self.nic_ctrl(nic, reply(Kind::Ack, a.value()));
                        }
                    }
                    RxVerdict::Duplicate { ack } => self.nic_ctrl(nic, reply(Kind::Ack, ack.value())),
                    RxVerdict::OutOfOrder { nak: Some(e) } => self.nic_ctrl(nic, reply(Kind::Nak, e.value())),
                    RxVerdict::OutOfOrder { nak: None } => {}
                }
                if pk.has(Pkt::CE) {
                    let (interval, per_port) = match &self.cfg.nic.cc {
                        CongestionControl::Dcqcn(p) => (p.cnp_interval, p.cnp_per_port),
                        CongestionControl::None | CongestionControl::Dctcp(_) | CongestionControl::Hpcc(_) => {
                            (Time::NEVER, false)
                        }
                    };
                    let send = interval != Time::NEVER
                        && if per_port {
                            self.nics[nic as usize].np.on_marked(now, interval)
                        } else {
                            self.flows[fi].np.on_marked(now, interval)
                        };
                    if send {
                        self.cnps_sent += 1;
                        let mut c = reply(Kind::Cnp, 0);
                        c.wire = CNP_BYTES as u16;
                        c.dscp = DSCP_CNP;
                        self.nic_ctrl(nic, c);
                    }
                }
                if int != 0 {
                    // No ACK/NAK went out for this packet: its INT ends here.
                    self.int.release(int);
                }
                self.deliver(p);
            }
            Kind::Ack | Kind::Nak => {
                let fi = pk.flow as usize;
                let mut done = Vec::new();
                if pk.kind == Kind::Ack {
                    let f = &mut self.flows[fi];
                    f.req.on_ack(now, pk.psn(), &mut done);
                    if let Some(d) = f.dctcp.as_mut() {
                        d.on_ack(pk.psn().next(), pk.has(Pkt::CE), Psn::new(0), f.req.window().1);
                    }
                } else {
                    self.flows[fi].req.on_nak(now, pk.psn(), &mut done);
                }
                if pk.int != 0 {
                    // HPCC reacts to ACKs and NAKs alike (ns-3 ReceiveAck → HandleAckHp).
                    let f = &mut self.flows[fi];
                    if let Some(h) = f.hpcc.as_mut() {
                        let next = if pk.kind == Kind::Ack {
                            pk.psn().next()
                        } else {
                            pk.psn()
                        };
                        h.on_ack(next, self.int.get(pk.int), f.req.window().1);
                    }
                }
                self.deliver(p);
                for c in done {
                    self.completions.push((fi as u32, c));
                }
                let f = &self.flows[fi];
                if !f.dynamic
                    && f.done.is_none()
                    && !f.req.outstanding()
                    && f.req.counters.completed >= u64::from(f.spec.messages.max(1))
                {
                    let f = &mut self.flows[fi];
                    f.done = Some(now);
                    self.flows_left -= 1;
                    let spec = f.spec;
                    self.fct.push(FctRecord {
                        sip: host_ip(spec.src.0),
                        dip: host_ip(spec.dst.0),
                        sport: spec.sport,
                        dport: spec.dport,
                        size: spec.size * u64::from(spec.messages.max(1)),
                        start_ns: spec.start.0 / 1000,
                        fct_ns: (now - spec.start).0 / 1000,
                        standalone_ns: 0,
                    });
                }
                self.arm_flow_timers(nic, fi);
                let gp = self.nics[nic as usize].gp;
                self.kick(gp);
            }
            Kind::Cnp => {
                let fi = pk.flow as usize;
                if let Some(rp) = self.flows[fi].rp.as_mut() {
                    rp.on_cnp(now);
                }
                self.deliver(p);
                self.arm_flow_timers(nic, fi);
            }
            Kind::TcpData => {
                let (ack, ece) = self.tcp.on_data(pk.flow, pk.tcp_seq(), pk.has(Pkt::CE));
                self.deliver(p);
                let a = Pkt {
                    kind: Kind::TcpAck,
                    flow: pk.flow,
                    seq: ack,
                    wire: crate::roce::tcp::TCP_HEADERS as u16,
                    dscp: pk.dscp,
                    flags: if ece { Pkt::CE } else { 0 },
                    ..Pkt::default()
                };
                self.nic_ctrl(nic, a);
            }
            Kind::TcpAck => {
                self.deliver(p);
                if self.tcp.on_ack(pk.flow, pk.tcp_seq(), pk.has(Pkt::CE), now) {
                    let gp = self.nics[nic as usize].gp;
                    self.kick(gp);
                }
                let t = self.tcp.next_deadline(nic);
                self.arm_nic(nic, t);
            }
            Kind::Pause => unreachable!("handled in arrive"),
        }
    }

    // --------------------------------------------------------------- watchdog

    fn watchdog_poll(&mut self) {
        let Some(cfg) = self.cfg.switch.watchdog else { return };
        let now = self.now;
        for si in 0..self.switches.len() {
            let node = self.switches[si].node;
            let base = self.port_base[node as usize];
            let nports = self.switches[si].nports;
            for port in 0..nports {
                let gp = base + port as u32;
                if self.peer[gp as usize] == NONE {
                    continue;
                }
                for q in 0..NPRIO {
                    if !self.maps.lossless(q as u8) {
                        continue;
                    }
                    // The watchdogs are port-major, the queues and flags queue-major.
                    let wi = port * NPRIO + q;
                    let qi = q * nports + port;
                    let pt = &self.pc[gp as usize];
                    let sample = QueueSample {
                        occupancy_bytes: self.switches[si].mmu.egress_bytes(port, q as u8),
                        tx_pkts: self.switches[si].q_tx[qi],
                        pfc_rx_frames: pt.paused.frames[q],
                        paused_ps: pt.paused.paused_total(now, q as u8),
                    };
                    let Some(ev) = self.switches[si].wd[wi].poll(sample) else {
                        continue;
                    };
                    self.wd_log.push((
                        now,
                        self.fabric.nodes[node as usize].name.clone(),
                        port as u8,
                        q as u8,
                        ev,
                    ));
                    match ev {
                        WdEvent::Stormed => {
                            self.switches[si].wd_stormed[qi] = true;
                            match cfg.action {
                                WdAction::Drop => {
                                    // Drain the queue: its packets are dropped and released.
                                    let ei = self.eqi(q, gp);
                                    while let Some(e) = self.eq[ei].pop_front() {
                                        self.switches[si].mmu.release(
                                            usize::from(e.in_port),
                                            e.pg,
                                            port,
                                            q as u8,
                                            u32::from(e.p.wire),
                                        );
                                        self.drop_pkt(e.p, RoceDrop::Watchdog);
                                    }
                                    self.ports[gp as usize].qmask &= !(1 << q);
                                    self.resume_check(si as u32);
                                }
                                WdAction::Forward => self.kick(gp),
                                WdAction::Alert => {}
                            }
                        }
                        WdEvent::Restored => {
                            self.switches[si].wd_stormed[qi] = false;
                        }
                    }
                }
            }
        }
    }

    // --------------------------------------------------------------- deadlock

    /// A cycle of switch egress ports, each holding lossless packets it may not
    /// send because the next switch paused it, where the next switch's paused
    /// ingress holds packets queued for the next port in the cycle.
    fn find_cycle(&self) -> Option<Vec<(u32, u8)>> {
        self.find_cycle_with(|_| self)
    }

    /// [`Self::find_cycle`] reading each switch port's queues and pause state
    /// from the world `at(port)` (a split run's part that owns it); this
    /// world gives the topology.
    fn find_cycle_with<'a>(&'a self, at: impl Fn(u32) -> &'a RoceSim) -> Option<Vec<(u32, u8)>> {
        let now = self.now;
        // blocked[gp] = egress port with a non-empty, paused lossless queue.
        let mut edges: Vec<(u32, u32, u8)> = Vec::new();
        for s in self.switches.iter() {
            let base = self.port_base[s.node as usize];
            for port in 0..s.nports {
                let gp = base + port as u32;
                for q in 0..NPRIO {
                    if !self.maps.lossless(q as u8)
                        || at(gp).eq[self.eqi(q, gp)].is_empty()
                        || !at(gp).pc[gp as usize].paused.is_paused(now, q as u8)
                    {
                        continue;
                    }
                    // The peer switch's ingress (peer port) is paused; which of its
                    // egress ports hold packets from that ingress?
                    let peer = self.peer[gp as usize];
                    let (is_sw, pi) = self.ports[peer as usize].owner();
                    if !is_sw {
                        continue;
                    }
                    let ps = &self.switches[pi as usize];
                    let in_num = self.ports[peer as usize].num;
                    let pbase = self.port_base[ps.node as usize];
                    for (qq, pp) in (0..NPRIO).flat_map(|qq| (0..ps.nports).map(move |pp| (qq, pp))) {
                        let out = pbase + pp as u32;
                        if at(out).eq[self.eqi(qq, out)].iter().any(|p| p.in_port == in_num) {
                            edges.push((gp, out, q as u8));
                        }
                    }
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        // Follow edges from each blocked port; a revisit closes a cycle.
        let blocked: std::collections::BTreeSet<u32> = edges.iter().map(|e| e.0).collect();
        for &start in &blocked {
            let mut path = vec![start];
            // prios[i]: the paused priority of path[i]'s queue on the edge taken from it.
            let mut prios: Vec<u8> = Vec::new();
            let mut cur = start;
            for _ in 0..=blocked.len() {
                let Some(&(_, nxt, q)) = edges.iter().find(|e| e.0 == cur && blocked.contains(&e.1)) else {
                    break;
                };
                prios.push(q);
                if let Some(pos) = path.iter().position(|&x| x == nxt) {
                    return Some(path[pos..].iter().copied().zip(prios[pos..].iter().copied()).collect());
                }
                path.push(nxt);
                cur = nxt;
            }
        }
        None
    }

    /// Name the queues of a cycle found by [`Self::find_cycle`].
    fn describe_cycle(&self, c: &[(u32, u8)]) -> PfcDeadlock {
        let cycle = c
            .iter()
            .map(|&(g, q)| {
                let p = &self.ports[g as usize];
                (self.fabric.nodes[self.node_of(g) as usize].name.clone(), p.num, q)
            })
            .collect();
        PfcDeadlock { at: self.now, cycle }
    }

    /// Packets switch egress queue (`gp`, `q`) has sent.
    fn queue_sent(&self, gp: u32, q: u8) -> u64 {
        let p = &self.ports[gp as usize];
        let si = p.owner().1;
        let s = &self.switches[si as usize];
        s.q_tx[usize::from(q) * s.nports + usize::from(p.num)]
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
