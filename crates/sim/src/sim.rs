//! The simulated world: the fabric's ports and links, the node models, the event
//! loop. Built once from a [`Fabric`] and the SM's [`RoutingTables`]; the tables are
//! copied in as data (no routing code runs here).
//!
//! Ports have global ids `gp = port_base[node] + port_number`; a link direction is
//! named by the global id of its transmitting port. All per-port state lives in
//! flat `Vec`s indexed by `gp` (and `gp * nvl + vl` for per-VL state).

use std::collections::VecDeque;

use fabric::{Fabric, NodeId, NodeKind};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use sm::RoutingTables;

use crate::SimError;
use crate::config::{EngineConfig, IbConfig, VlArbConfig};
use crate::deadlock::DeadlockReport;
use crate::engine::time::Serializer;
use crate::engine::{DropReason, Ledger, PackedQueue, PacketId, Table, Time, TraceHash, prefetch};
use crate::ib::hca::{CaPort, Cqe, Qp};
use crate::metrics::Stats;
use crate::net::ArbState;
use crate::packet::Packets;

/// "None" for `u32` ids.
pub(crate) const NONE: u32 = u32::MAX;

/// Where a node's forwarding entries sit in [`Sim::fwd`], and its first global port.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FwdSpan {
    pub(crate) off: u32,
    pub(crate) len: u32,
    pub(crate) base: u32,
}

/// A [`Sim::fwd`] entry: the LFT has no route for the LID.
pub(crate) const FWD16_NO_ROUTE: u16 = u16::MAX;
/// A [`Sim::fwd`] entry: the LFT names a port the switch lacks or that has no cable.
pub(crate) const FWD16_DEAD: u16 = u16::MAX - 1;

/// Forwarding decisions beside global port ids (which stay below 2^25).
pub(crate) const FWD_NO_ROUTE: u32 = u32::MAX;
/// The LFT names port 0 (the switch itself) for a data packet.
pub(crate) const FWD_UNKNOWN: u32 = u32::MAX - 1;
/// The LFT names a port the switch lacks or that has no cable.
pub(crate) const FWD_DEAD: u32 = u32::MAX - 2;
/// The LFT sends the packet back out of the port it came in (only in a
/// decision carried by a packet, never in the table).
pub(crate) const FWD_LOOPBACK: u32 = u32::MAX - 3;

/// A FIFO of packets threaded through their `next` field: a link's packets in
/// flight, and the core of [`PktList`]. Pushing and popping touch only the
/// chain (8 bytes) and the packets themselves, which the caller reads anyway.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PktChain {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl Default for PktChain {
    fn default() -> Self {
        PktChain { head: NONE, tail: NONE }
    }
}

impl PktChain {
    /// Append `p`; true when the chain was empty.
    #[inline]
    pub(crate) fn push(&mut self, pkts: &mut Packets, p: PacketId) -> bool {
        pkts[p].next = NONE;
        if self.head == NONE {
            self.head = p;
            self.tail = p;
            true
        } else {
            pkts[self.tail].next = p;
            self.tail = p;
            false
        }
    }

    /// Remove the head.
    #[inline]
    pub(crate) fn pop(&mut self, pkts: &Packets) -> Option<PacketId> {
        let p = self.head;
        if p == NONE {
            return None;
        }
        self.head = pkts[p].next;
        if self.head == NONE {
            self.tail = NONE;
        }
        Some(p)
    }

    /// The head, left in place.
    #[inline]
    pub(crate) fn front(&self) -> Option<PacketId> {
        (self.head != NONE).then_some(self.head)
    }

    /// True when empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NONE
    }

    /// The packets, head first.
    pub(crate) fn iter<'a>(&self, pkts: &'a Packets) -> impl Iterator<Item = PacketId> + 'a {
        let mut p = self.head;
        std::iter::from_fn(move || {
            if p == NONE {
                return None;
            }
            let r = p;
            p = pkts[p].next;
            Some(r)
        })
    }
}

/// A [`PktChain`] that counts its packets: a switch output queue, a CA port's
/// ACKs.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PktList {
    chain: PktChain,
    pub(crate) len: u32,
}

impl PktList {
    /// Append `p`; true when the list was empty.
    #[inline]
    pub(crate) fn push(&mut self, pkts: &mut Packets, p: PacketId) -> bool {
        self.len += 1;
        self.chain.push(pkts, p)
    }

    /// Remove the head.
    #[inline]
    pub(crate) fn pop(&mut self, pkts: &Packets) -> Option<PacketId> {
        let p = self.chain.pop(pkts)?;
        self.len -= 1;
        Some(p)
    }

    /// The head, left in place.
    #[inline]
    pub(crate) fn front(&self) -> Option<PacketId> {
        self.chain.front()
    }

    /// The head's id, [`NONE`] when empty (for a prefetch hint).
    #[inline(always)]
    pub(crate) fn chain_head(&self) -> u32 {
        self.chain.head
    }

    /// True when empty.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }

    /// The packets, head first.
    pub(crate) fn iter<'a>(&self, pkts: &'a Packets) -> impl Iterator<Item = PacketId> + 'a {
        self.chain.iter(pkts)
    }
}

/// The closed set of events. Each is a few bytes and `Copy`; the payload is a
/// component id, never a pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The head of link direction `dir`'s FIFO reaches the far port (for a
    /// cut-through switch: its header has arrived and the switch latency passed).
    Arrive { dir: u32 },
    /// Transmitter `gp` may be able to send (its line went idle, credits came back,
    /// or a packet became eligible). Valid only if its time equals `wake_at[gp]`.
    TxWake { gp: u32 },
    /// A posted work request of QP `qp` reaches the HCA.
    QpReady { qp: u32 },
    /// Take a utilisation / occupancy sample.
    Sample,
    /// Look for a credit deadlock.
    Watchdog,
}

/// The kind bits of a packed [`Event`]: its top 3 of 28.
const TAG_SHIFT: u32 = 25;
/// The id bits of a packed [`Event`].
const ID_MASK: u32 = (1 << TAG_SHIFT) - 1;
/// [`Event::Arrive`]'s kind bits.
const TAG_ARRIVE: u32 = 0;
/// [`Event::TxWake`]'s kind bits.
const TAG_TX_WAKE: u32 = 1;

impl crate::engine::Packed for Event {
    /// Kind in the top 3 of 28 bits, id in the low 25 (33 M ports or QPs). The
    /// run loop works on this word (see `trace_word`) and decodes it only to
    /// dispatch an event that is not an arrival.
    #[inline]
    fn pack(self) -> u32 {
        match self {
            Event::Arrive { dir } => dir,
            Event::TxWake { gp } => (TAG_TX_WAKE << TAG_SHIFT) | gp,
            Event::QpReady { qp } => (2 << TAG_SHIFT) | qp,
            Event::Sample => 3 << TAG_SHIFT,
            Event::Watchdog => 4 << TAG_SHIFT,
        }
    }

    #[inline]
    fn unpack(v: u32) -> Event {
        let id = v & ID_MASK;
        match v >> TAG_SHIFT {
            TAG_ARRIVE => Event::Arrive { dir: id },
            TAG_TX_WAKE => Event::TxWake { gp: id },
            2 => Event::QpReady { qp: id },
            3 => Event::Sample,
            _ => Event::Watchdog,
        }
    }
}

/// Largest port or QP id an event can carry.
pub(crate) const MAX_ID: usize = 1 << TAG_SHIFT;

/// What the trace hash folds for a packed event: its kind in the high 32 bits,
/// its id in the low 32. Computed from the word without decoding it: the
/// decode's and the old hash's `match`es on the kind were, in valgrind's branch
/// model, a mispredict every second event (no CPU time measurably changed).
#[inline(always)]
fn trace_word(w: u32) -> u64 {
    (u64::from(w >> TAG_SHIFT) << 32) | u64::from(w & ID_MASK)
}

/// How the hot path is compiled: [`Sim::run`] runs its event loop as [`Fast`]
/// when the run allows it, and as [`Generic`] otherwise. A `Fast` loop knows at
/// compile time what a [`Sim::plain`] run with cut-through switches and no
/// capture would test at every hop (one data VL, no SL→VL tables, no adaptive
/// routing, no congestion control), so those tests and the code behind them
/// are gone from it: about 5% fewer instructions on the ft432 benchmark and
/// 2% less time (docs/PERFORMANCE.md). The `Generic` loop is right for every
/// run.
pub(crate) trait Mode {
    /// The run is plain, its switches cut through, and nothing is captured.
    const FAST: bool;
}

/// The event loop for any run.
pub(crate) struct Generic;

impl Mode for Generic {
    const FAST: bool = false;
}

/// The event loop for a plain, cut-through run without capture (see [`Mode`]).
pub(crate) struct Fast;

impl Mode for Fast {
    const FAST: bool = true;
}

/// Which model a node runs. New node kinds (Ethernet switch, RoCE NIC, IPoIB host)
/// are new arms here and in `Sim::dispatch_arrival`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeModel {
    /// An InfiniBand switch: per-VL input buffers, LFT forwarding.
    IbSwitch,
    /// An InfiniBand HCA: RC/UD transport.
    IbHca,
    /// A node with no model (a router): packets to it are dropped.
    None,
}

/// The per-port state the hot path touches: one 128-byte aligned pair of cache
/// lines, also the record of the link this port transmits on. The first holds
/// what an arrival and a send read (line state, the packets on the link, the
/// peer's port, node and model); the second the credits (VL 0's count and the
/// returns on their way) and the send counters, which a transmitter touches
/// together when it looks and a released buffer slot touches when it returns
/// credits over the link. Each array kept apart from this record costs the hop
/// a cache miss of its own (cachegrind: about one L1 miss per separate per-port
/// array per hop).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(128))]
pub(crate) struct PortHot {
    /// The line is busy sending until then.
    pub(crate) busy_until: Time,
    /// The pending wake-up ([`Time::NEVER`] if none); a popped `TxWake` whose
    /// time differs is stale.
    pub(crate) wake_at: Time,
    pub(crate) ser: Serializer,
    /// Propagation delay of the cable in picoseconds (at most 4.29 ms, a cable
    /// of some 860 km; `Sim::new` refuses longer). Read through [`PortHot::prop`].
    pub(crate) prop_ps: u32,
    /// Packets on the wire from this transmitter, in arrival order; the head's
    /// arrival is the link's one event in the queue.
    pub(crate) fifo: PktChain,
    /// This (switch) output's VL 0 queue, the one most fabrics use: kept here,
    /// where the port's wake-up and a queueing arrival already read, and not in
    /// [`Sim::oq`] (which holds the other VLs and VL15). Read through
    /// [`Sim::oq_at`].
    pub(crate) oq0: PktList,
    /// Peer global port, or [`NONE`] when uncabled.
    pub(crate) peer: u32,
    /// The peer's node: an arrival reads it (and `peer_model`) here, on the
    /// record of the link it came over, and never touches the receiving
    /// port's own record.
    pub(crate) peer_node: u32,
    /// Blocks the head packet needs when `starved` (0 = unknown: wake on any return).
    pub(crate) need_blocks: u16,
    /// Some VL of this port has an open credit-stall interval.
    pub(crate) stalling: bool,
    pub(crate) port_num: u8,
    /// The head packet lacks credits: a credit return must wake the port.
    pub(crate) starved: bool,
    /// VL of the head packet when `starved`.
    pub(crate) need_vl: u8,
    /// Model of this port's node.
    pub(crate) model: NodeModel,
    /// Model of the peer's node.
    pub(crate) peer_model: NodeModel,
    /// Credit returns on their way to this transmitter.
    pub(crate) cred: crate::net::CreditRing,
    /// Bytes sent.
    pub(crate) tx_bytes: u64,
    /// Packets sent (wraps after 2^32; a 400 Gb/s port needs minutes of 4 KiB packets).
    pub(crate) tx_pkts: u32,
    /// Packets queued at this (switch) output, all VLs and VL15.
    pub(crate) oq_len: u32,
}

impl PortHot {
    /// Propagation delay of the cable.
    #[inline(always)]
    pub(crate) fn prop(&self) -> Time {
        Time(u64::from(self.prop_ps))
    }
}

const _: () = assert!(std::mem::size_of::<PortHot>() == 128);

/// An input buffer's use and peak, per (port, VL), in 64-byte blocks: side by
/// side because every arrival updates both.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct InBuf {
    pub(crate) used: u32,
    pub(crate) peak: u32,
}

/// Why [`Sim::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStatus {
    /// A completion was queued; poll the CQs.
    Completion,
    /// Simulated time reached the `until` limit.
    TimeLimit,
    /// Nothing left to do: no events and no packets in flight.
    Idle,
    /// Packets are stuck in a cycle of credit-starved buffers.
    Deadlock(DeadlockReport),
}

/// The simulated world.
pub struct Sim {
    pub(crate) now: Time,
    pub(crate) q: PackedQueue<Event>,
    pub(crate) trace: TraceHash,
    pub(crate) rng: Pcg64Mcg,
    pub(crate) pkts: Packets,
    pub(crate) ledger: Ledger,
    pub(crate) ib: IbConfig,
    pub(crate) eng: EngineConfig,
    pub(crate) arb_cfg: VlArbConfig,

    // Topology.
    pub(crate) node_model: Vec<NodeModel>,
    pub(crate) node_name: Vec<String>,
    pub(crate) port_base: Vec<u32>,
    /// Hot per-port state, one cache line per port.
    pub(crate) ports: Table<PortHot>,
    pub(crate) port_bps: Vec<u64>,

    // Transmitters.
    /// Number of data VLs modelled.
    pub(crate) nvl: usize,
    /// Blocks of the largest packet the run can make (a full-MTU WRITE First
    /// with a GRH): a transmitter holding this many credits can send any packet.
    pub(crate) max_blocks: i32,
    /// Credits (64-byte blocks) this port may still send into the peer's buffer,
    /// `[gp * nvl + vl]` for VLs 1 and up; VL 0's sit in the port record
    /// ([`crate::net::CreditRing::vl0`]), so slot `gp * nvl` is unused.
    pub(crate) credits: Table<i32>,
    /// Credit returns (arrival, vl, blocks) beyond the four a port record holds, `[gp]` (see [`crate::net::CreditRing`]).
    pub(crate) credit_spill: Vec<VecDeque<(Time, u8, u32)>>,
    /// Switch output queues `[gp * (nvl + 1) + vl]`, the last one per port for
    /// VL15; VL 0's is in the port record ([`PortHot::oq0`]), so slot
    /// `gp * (nvl + 1)` is unused. Reached through [`Sim::oq_at`].
    pub(crate) oq: Table<PktList>,
    /// Each port's node (reports, deadlock search, adaptive routing; not the hop).
    pub(crate) port_node: Vec<u32>,
    pub(crate) arb: Vec<ArbState>,
    /// Input buffer blocks in use and their peak, `[gp * nvl + vl]`.
    pub(crate) in_buf: Table<InBuf>,

    // Routing state (data from the SM).
    /// Every switch's LFT flattened, each entry the output port number (`0` for
    /// the switch itself) or a `FWD16_*` code: `fwd[fwd_span[node].off + dlid]`,
    /// for LIDs below `fwd_span[node].len`. Two bytes an entry keep the tables
    /// of a 432-host fat tree at 220 KB (440 KB with global port ids). In a
    /// `plain` run a QP's packets read [`Sim::routes`] instead.
    pub(crate) fwd: Table<u16>,
    pub(crate) fwd_span: Table<FwdSpan>,
    /// Routes of the QPs of a `plain` simulation, back to back: route `r`'s
    /// `h`-th entry, `routes[r + h]`, is what the switch a packet reaches after
    /// `h + 1` links will decide for it (an [`Sim::lft_code`]). A QP's packets
    /// all follow one path, so one short run of entries a QP, read at every
    /// send, stays in cache where the LFT entries (one line a switch and
    /// destination) did not.
    pub(crate) routes: Table<u32>,
    /// One data VL, no SL→VL tables, no adaptive routing, no congestion control:
    /// a switch may forward a packet that finds its output idle and empty
    /// without queueing it first (see `switch_arrive`).
    pub(crate) plain: bool,
    /// Tests only: never run the [`Fast`] loop ([`Sim::disable_fast_loop`]).
    pub(crate) fast_off: bool,
    pub(crate) sl2vl: Option<Vec<Vec<Vec<[u8; 16]>>>>,
    pub(crate) tables: RoutingTables,

    // Channel adapters and transport.
    pub(crate) ca_port: Vec<u32>,
    /// Each CA port's node and LID range, `[gp]` (see
    /// [`crate::ib::hca::CaRx`]): a small table, so that most receives do not
    /// read the CA port's record.
    pub(crate) ca_rx: Table<crate::ib::hca::CaRx>,
    pub(crate) caps: Vec<CaPort>,
    pub(crate) qps: Vec<Qp>,
    pub(crate) cqs: Vec<VecDeque<Cqe>>,
    pub(crate) cq_notify: VecDeque<u32>,

    pub(crate) stats: Stats,
    /// Shortest-path distances for adaptive routing (built only when it is on).
    pub(crate) ar: Option<crate::ib::switch::ArTables>,
    pub(crate) deadlock: Option<DeadlockReport>,
    pub(crate) watchdog_armed: bool,
    /// A Sample event is queued. Sample and Watchdog each re-arm only while other
    /// events are pending, so the two periodic events cannot keep an idle world
    /// running for ever.
    pub(crate) sample_armed: bool,
}

impl Sim {
    /// Build the world from a fabric and the SM's tables.
    pub fn new(fabric: &Fabric, tables: &RoutingTables, ib: IbConfig, eng: EngineConfig) -> Result<Sim, SimError> {
        ib.validate()?;
        if tables.lft.len() != fabric.nodes.len() || tables.base_lid.len() != fabric.nodes.len() {
            return Err(SimError::Tables(format!(
                "tables cover {} nodes, the fabric has {}",
                tables.lft.len(),
                fabric.nodes.len()
            )));
        }
        let n = fabric.nodes.len();
        let mut port_base = Vec::with_capacity(n + 1);
        let mut port_node = Vec::new();
        let mut port_num = Vec::new();
        port_base.push(0u32);
        for (i, node) in fabric.nodes.iter().enumerate() {
            for p in 0..node.ports.len() {
                port_node.push(i as u32);
                port_num.push(p as u8);
            }
            port_base.push(port_node.len() as u32);
        }
        let np = port_node.len();
        if np >= MAX_ID {
            return Err(SimError::Config {
                field: "fabric",
                expected: "fewer than 2^25 ports",
                got: np.to_string(),
            });
        }
        let mut ports: Vec<PortHot> = (0..np)
            .map(|g| PortHot {
                busy_until: Time::ZERO,
                wake_at: Time::NEVER,
                ser: Serializer::new(1),
                prop_ps: 0,
                fifo: PktChain::default(),
                oq0: PktList::default(),
                peer: NONE,
                peer_node: NONE,
                tx_bytes: 0,
                tx_pkts: 0,
                oq_len: 0,
                need_blocks: 0,
                stalling: false,
                port_num: port_num[g],
                starved: false,
                need_vl: 0,
                model: NodeModel::None,
                peer_model: NodeModel::None,
                cred: crate::net::CreditRing::default(),
            })
            .collect();
        let mut port_bps = vec![0u64; np];
        for l in &fabric.links {
            let a = port_base[l.a.node.idx()] + u32::from(l.a.port);
            let b = port_base[l.b.node.idx()] + u32::from(l.b.port);
            ports[a as usize].peer = b;
            ports[b as usize].peer = a;
            let s = Serializer::new(l.rate.data_bps());
            for g in [a, b] {
                ports[g as usize].ser = s;
                ports[g as usize].prop_ps = u32::try_from(l.delay_ps).map_err(|_| SimError::Config {
                    field: "cable delay",
                    expected: "at most 4,294,967,295 ps (a cable of about 860 km)",
                    got: format!(
                        "{} ps on the cable {}/{} - {}/{}",
                        l.delay_ps,
                        fabric.nodes[l.a.node.idx()].name,
                        l.a.port,
                        fabric.nodes[l.b.node.idx()].name,
                        l.b.port
                    ),
                })?;
                port_bps[g as usize] = l.rate.data_bps();
            }
        }
        let node_model: Vec<NodeModel> = fabric
            .nodes
            .iter()
            .map(|nd| match nd.kind {
                NodeKind::Switch => NodeModel::IbSwitch,
                NodeKind::Ca => NodeModel::IbHca,
                NodeKind::Router => NodeModel::None,
            })
            .collect();
        for g in 0..np {
            ports[g].model = node_model[port_node[g] as usize];
            if ports[g].peer != NONE {
                ports[g].peer_node = port_node[ports[g].peer as usize];
                ports[g].peer_model = node_model[ports[g].peer_node as usize];
            }
        }

        // Data VLs: whatever the tables use, and at least every VL an SL2VL entry names.
        let mut max_vl = tables.vls_used.max(1) as usize;
        if let Some(s) = &tables.sl2vl {
            for per_in in s.iter().flatten().flatten() {
                for &vl in per_in {
                    if vl < 15 {
                        max_vl = max_vl.max(vl as usize + 1);
                    }
                }
            }
        }
        let arb_cfg = ib.vl_arb.clone().unwrap_or_else(|| VlArbConfig::equal(max_vl as u8));
        for e in arb_cfg.high.iter().chain(&arb_cfg.low) {
            max_vl = max_vl.max(e.vl as usize + 1);
        }
        let nvl = max_vl;

        let mut credits = vec![0i32; np * nvl];
        for gp in 0..np {
            let pg = ports[gp].peer;
            if pg == NONE {
                continue;
            }
            let peer_node = port_node[pg as usize] as usize;
            let buf = match node_model[peer_node] {
                NodeModel::IbSwitch => ib.switch_buffer_bytes_per_vl,
                _ => ib.hca_buffer_bytes_per_vl,
            };
            ports[gp].cred.vl0 = (buf / 64) as i32;
            for vl in 1..nvl {
                credits[gp * nvl + vl] = (buf / 64) as i32;
            }
        }

        let mut fwd = Vec::new();
        let mut fwd_span = Vec::with_capacity(n);
        for (node, l) in tables.lft.iter().enumerate() {
            let base = port_base[node];
            fwd_span.push(FwdSpan {
                off: fwd.len() as u32,
                len: l.ports.len() as u32,
                base,
            });
            let nports = port_base[node + 1] - base;
            fwd.extend(l.ports.iter().map(|&o| match o {
                sm::NO_ROUTE => FWD16_NO_ROUTE,
                o if o == 0 || u32::from(o) < nports && ports[(base + u32::from(o)) as usize].peer != NONE => {
                    u16::from(o)
                }
                _ => FWD16_DEAD,
            }));
        }

        // Almost every event is scheduled at most one packet time, one cable and
        // one node latency ahead: a calendar wheel just that long (with a quarter
        // to spare) touches the least memory; anything later waits in its heap.
        // Its slots are 4.096 ns wide, about 25 events each on the ft432
        // benchmark instead of six: a quarter of the slot changes and of the
        // slot headers to keep in cache, and the run loop's look-ahead (which
        // sees to the end of the current slot) runs past fewer slot ends.
        // 4 ns: 3.38 -> 3.24 s of CPU on that benchmark; 2 ns 3.30, 8 ns 3.25,
        // 16 ns 3.37 (sorting bigger slots costs more). Sorting the next slot
        // early so the look-ahead could see past every end gained nothing.
        let max_pkt = crate::packet::max_wire(ib.mtu);
        let max_blocks = crate::packet::blocks(max_pkt) as i32;
        let horizon = ports
            .iter()
            .filter(|p| p.peer != NONE)
            .map(|p| p.ser.time(max_pkt) + p.prop())
            .max()
            .unwrap_or(Time::ZERO)
            + Time(ib.switch_latency_ps.max(ib.hca_rx_latency_ps).max(ib.hca_tx_latency_ps));
        let mut sim = Sim {
            now: Time::ZERO,
            q: PackedQueue::with_slots(horizon + Time(horizon.0 / 4), 12),
            trace: TraceHash::default(),
            rng: Pcg64Mcg::seed_from_u64(eng.seed),
            pkts: Packets::with_capacity(1 << 14),
            ledger: Ledger::default(),
            ib,
            eng,
            arb_cfg,
            node_model,
            node_name: fabric.nodes.iter().map(|nd| nd.name.clone()).collect(),
            port_base,
            ports: ports.into(),
            port_bps,
            nvl,
            max_blocks,
            credits: credits.into(),
            credit_spill: vec![VecDeque::new(); np],
            oq: vec![PktList::default(); np * (nvl + 1)].into(),
            port_node,
            arb: vec![ArbState::default(); np],
            in_buf: vec![InBuf::default(); np * nvl].into(),
            fwd: fwd.into(),
            fwd_span: fwd_span.into(),
            routes: Table::default(),
            plain: false,
            fast_off: false,
            sl2vl: tables.sl2vl.clone(),
            tables: tables.clone(),
            ca_port: vec![NONE; np],
            ca_rx: vec![crate::ib::hca::CaRx::default(); np].into(),
            caps: Vec::new(),
            qps: Vec::new(),
            cqs: vec![VecDeque::new(); n],
            cq_notify: VecDeque::new(),
            stats: Stats::new(np, nvl),
            ar: None,
            deadlock: None,
            watchdog_armed: false,
            sample_armed: false,
        };
        sim.build_ca_ports();
        if sim.ib.adaptive_routing {
            sim.ar = Some(crate::ib::switch::ArTables::build(&sim));
        }
        sim.plain = sim.nvl == 1 && sim.sl2vl.is_none() && sim.ar.is_none() && sim.ib.cc.is_none();
        if sim.eng.sample_interval_ps > 0 {
            sim.sample_armed = true;
            sim.q.push(Time(sim.eng.sample_interval_ps), Event::Sample);
        }
        Ok(sim)
    }

    /// Current simulated time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The seed this run was built with.
    pub fn seed(&self) -> u64 {
        self.eng.seed
    }

    /// The model parameters.
    pub fn ib_config(&self) -> &IbConfig {
        &self.ib
    }

    /// The determinism hash of every event processed so far.
    pub fn trace_hash(&self) -> u64 {
        self.trace.0
    }

    /// The conservation ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Packets alive (created, not yet delivered or dropped).
    pub fn in_flight(&self) -> u64 {
        self.pkts.live() as u64
    }

    /// Check the ledger: created = delivered + dropped + in flight.
    pub fn check_ledger(&self) -> Result<(), SimError> {
        Ok(self.ledger.check(self.in_flight())?)
    }

    /// Turn off the transmitters' planning shortcut (see `plan_next`: a port
    /// holding credits for the largest packet wakes at the end of its send
    /// without reading the next packet). It must not change anything but the
    /// speed; tests compare traces with it on and off.
    #[doc(hidden)]
    pub fn disable_plan_shortcut(&mut self) {
        self.max_blocks = i32::MAX;
    }

    /// Turn off the switches' forward-on-arrival shortcut (it is on whenever
    /// the configuration allows). The shortcut must not change anything but the
    /// speed; tests compare traces with it on and off.
    #[doc(hidden)]
    pub fn disable_forward_at_once(&mut self) {
        self.plain = false;
    }

    /// Run every event through the [`Generic`] loop, even where the [`Fast`]
    /// one applies. The two must give the same run; tests compare them.
    #[doc(hidden)]
    pub fn disable_fast_loop(&mut self) {
        self.fast_off = true;
    }

    /// Counters and per-port statistics.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The deadlock found, if any.
    pub fn deadlock(&self) -> Option<&DeadlockReport> {
        self.deadlock.as_ref()
    }

    /// A node's name.
    pub fn node_name(&self, n: u32) -> &str {
        &self.node_name[n as usize]
    }

    /// Number of data VLs modelled.
    pub fn num_vls(&self) -> usize {
        self.nvl
    }

    /// Random generator for workloads (the one seed).
    pub fn rng(&mut self) -> &mut Pcg64Mcg {
        &mut self.rng
    }

    /// Global port id of (node, port).
    #[inline]
    pub fn gp(&self, n: NodeId, port: u8) -> u32 {
        self.port_base[n.idx()] + u32::from(port)
    }

    /// Run events until a completion is queued, simulated time passes `until`,
    /// nothing is left to do, or a deadlock is found.
    pub fn run(&mut self, until: Time) -> RunStatus {
        if self.runs_fast_loop() {
            self.event_loop::<Fast>(until)
        } else {
            self.event_loop::<Generic>(until)
        }
    }

    /// [`Self::run`] takes the [`Fast`] loop: the run is plain, its switches
    /// cut through, nothing is captured (and tests did not turn it off).
    #[doc(hidden)]
    pub fn runs_fast_loop(&self) -> bool {
        self.plain
            && !self.fast_off
            && self.ib.forwarding == crate::config::Forwarding::CutThrough
            && self.stats.capture == NONE
    }

    /// The run is plain (see [`Sim::plain`]), known at compile time in a
    /// [`Fast`] loop.
    #[inline(always)]
    pub(crate) fn is_plain<M: Mode>(&self) -> bool {
        M::FAST || self.plain
    }

    /// The run models one data VL, known at compile time in a [`Fast`] loop.
    #[inline(always)]
    pub(crate) fn one_vl<M: Mode>(&self) -> bool {
        M::FAST || self.nvl == 1
    }

    /// Data VLs modelled ([`Sim::nvl`]), known at compile time in a [`Fast`] loop.
    #[inline(always)]
    pub(crate) fn data_vls<M: Mode>(&self) -> usize {
        if M::FAST { 1 } else { self.nvl }
    }

    /// [`Self::run`]'s loop, compiled for mode `M`.
    fn event_loop<M: Mode>(&mut self, until: Time) -> RunStatus {
        debug_assert!(!M::FAST || self.runs_fast_loop() && self.nvl == 1);
        if let Some(d) = &self.deadlock {
            return RunStatus::Deadlock(d.clone());
        }
        if self.eng.sample_interval_ps > 0 && !self.sample_armed {
            // sampling resumes when the driver brings new work
            self.sample_armed = true;
            self.q.push(self.now + Time(self.eng.sample_interval_ps), Event::Sample);
        }
        if self.eng.deadlock_check_ps > 0 && !self.watchdog_armed {
            self.watchdog_armed = true;
            self.q
                .push(self.now + Time(self.eng.deadlock_check_ps), Event::Watchdog);
        }
        loop {
            if !self.cq_notify.is_empty() {
                return RunStatus::Completion;
            }
            let Some((t, w)) = self.q.first_packed() else {
                if self.pkts.live() > 0 {
                    let rep = crate::deadlock::find(self).unwrap_or_else(|| DeadlockReport::stuck(self));
                    self.deadlock = Some(rep.clone());
                    return RunStatus::Deadlock(rep);
                }
                if until != Time::NEVER {
                    self.now = self.now.max(until);
                }
                return RunStatus::Idle;
            };
            if t > until {
                self.now = until.max(self.now);
                return RunStatus::TimeLimit;
            }
            self.now = t;
            self.prefetch_ahead::<M>();
            self.stats.events += 1;
            self.trace.fold(t.0);
            self.trace.fold(trace_word(w));
            if w >> TAG_SHIFT == TAG_ARRIVE {
                let dir = w & ID_MASK;
                let p = self.ports[dir as usize]
                    .fifo
                    .pop(&self.pkts)
                    .expect("arrival FIFO has a head");
                let pk = &self.pkts[p];
                if pk.next == NONE {
                    self.q.pop_first();
                } else {
                    debug_assert_eq!(pk.next_at, self.arrival_time(dir, &self.pkts[pk.next]));
                    self.q.replace_first(pk.next_at, pk.next_seq(), Event::Arrive { dir });
                }
                self.dispatch_arrival::<M>(dir, p);
                continue;
            }
            self.q.pop_first();
            match <Event as crate::engine::Packed>::unpack(w) {
                Event::Arrive { .. } => unreachable!("handled above"),
                Event::TxWake { gp } => {
                    if self.ports[gp as usize].wake_at == t {
                        self.ports[gp as usize].wake_at = Time::NEVER;
                        self.try_tx::<M>(gp);
                    } else {
                        self.stats.stale_wakes += 1;
                    }
                }
                Event::QpReady { qp } => self.qp_ready(qp),
                Event::Sample => {
                    let tx = self.ports.iter().map(|p| p.tx_bytes);
                    self.stats.sample(self.now, tx, &self.in_buf, self.nvl);
                    self.sample_armed = false;
                    if self.q.len() > usize::from(self.watchdog_armed) || self.pkts.live() > 0 {
                        self.sample_armed = true;
                        self.q.push(self.now + Time(self.eng.sample_interval_ps), Event::Sample);
                    }
                }
                Event::Watchdog => {
                    self.watchdog_armed = false;
                    if self.pkts.live() > 0
                        && let Some(rep) = crate::deadlock::find(self)
                    {
                        self.deadlock = Some(rep.clone());
                        return RunStatus::Deadlock(rep);
                    }
                    if self.q.len() > usize::from(self.sample_armed) {
                        self.watchdog_armed = true;
                        self.q
                            .push(self.now + Time(self.eng.deadlock_check_ps), Event::Watchdog);
                    }
                }
            }
        }
    }

    /// Start loading what the next events will touch while this one runs: the
    /// hop is bound by cache misses along a chain (the link's record, its head
    /// packet, the output port the packet will take), and the calendar slot
    /// being drained already says which links come next (a peek past the
    /// slot's end repeats its last event). Three events ahead: the link's or
    /// transmitter's record (both lines); one ahead, its head packet (loaded
    /// by then: the arrival at a switch reads it first) names what comes
    /// next: for a plain switch, the output port's record (see
    /// [`Sim::lft_code`]) and the route entry its next send reads, else the
    /// receiving QP's receive line; for a CA port's wake-up its head ACK or
    /// first QP; for a switch port's wake-up, the credit line of the link its
    /// queue's head came over and the head's route entry. (A two-ahead stage
    /// that loaded the head packet early had paid in session 6; by session 9
    /// it no longer did, and it went: docs/PERFORMANCE.md.)
    ///
    /// An upcoming event's kind follows no pattern (about seven arrivals to
    /// three wake-ups on the ft432 run), so a test of it is often a
    /// mispredicted branch: the three-ahead stage reads the same record for
    /// either kind, and the arrival half of the one-ahead stage computes its
    /// hints for either kind and keeps one with a conditional move
    /// (`select_unpredictable`). That pays where both hints come from lines
    /// already near; where one needs a cold line (the CA-port
    /// and switch-port wake-ups one ahead) a branch stays. Only hints: a hint
    /// that names nothing is harmless. Measured figures, and what did not pay,
    /// are in docs/PERFORMANCE.md.
    #[inline(always)]
    fn prefetch_ahead<M: Mode>(&self) {
        {
            // No test of the kind: the rare other kinds' ids make a harmless
            // hint (a prefetch of any address cannot fault).
            let w = self.q.peek_ahead_clamped(3);
            let r = self.ports.as_ptr().wrapping_add((w & ID_MASK) as usize).cast::<u8>();
            prefetch::addr(r);
            prefetch::addr(r.wrapping_add(std::mem::offset_of!(PortHot, cred)));
        }
        if let Some(w) = self.q.peek_ahead_packed(1) {
            if w >> TAG_SHIFT == TAG_TX_WAKE {
                let pt = &self.ports[(w & ID_MASK) as usize];
                // The packet last put on its link, which the send links to.
                prefetch::addr(self.pkts.hint_addr(pt.fifo.tail));
                if pt.model == NodeModel::IbHca {
                    // Then the ACK or the QP it will send from.
                    if let Some(c) = self.caps.get(self.ca_port[(w & ID_MASK) as usize] as usize) {
                        self.prefetch_ca_next(c);
                    }
                } else if let Some(h) = pt.oq0.front() {
                    // A switch port sends its queue's head: it frees the input
                    // buffer of the link it came over (whose credit line takes
                    // the return) and reads its route entry.
                    let pk = &self.pkts[h];
                    let ports = self.ports.as_ptr();
                    let link = ports.wrapping_add(pk.in_link as usize).cast::<u8>();
                    prefetch::addr(link.wrapping_add(std::mem::offset_of!(PortHot, cred)));
                    let route = self
                        .routes
                        .as_ptr()
                        .wrapping_add(pk.route() as usize + usize::from(pk.hops))
                        .cast::<u8>();
                    prefetch::addr(route);
                }
            }
            if w >> TAG_SHIFT == TAG_ARRIVE {
                // At a plain switch, the output the far switch will take (see
                // `lft_code`), which the packet names, and the decision for the
                // switch after that one, which the send out of it reads (see
                // `transmit`); at an HCA, the receiving QP's receive line (the
                // receive reads no port record but the link's, and the CA
                // port's LID range from `ca_rx`). Both computed, one kept,
                // without a branch.
                let sel = std::hint::select_unpredictable::<*const u8>;
                let pt = &self.ports[w as usize];
                let (pk, cold) = self.pkts.hint_get(pt.fifo.head);
                let ports = self.ports.as_ptr();
                let out = ports.wrapping_add(pk.in_link as usize).cast::<u8>();
                let out2 = out.wrapping_add(std::mem::offset_of!(PortHot, cred));
                let route = self
                    .routes
                    .as_ptr()
                    .wrapping_add(pk.route() as usize + usize::from(pk.hops))
                    .cast::<u8>();
                let peer = self
                    .qps
                    .as_ptr()
                    .wrapping_add(cold.dst_qp as usize)
                    .cast::<u8>()
                    .wrapping_add(64);
                let to_sw = (pt.peer_model == NodeModel::IbSwitch) & self.is_plain::<M>();
                prefetch::addr(sel(to_sw, out, peer));
                prefetch::addr(sel(to_sw, out2, peer));
                prefetch::addr(sel(to_sw, route, peer));
            }
        }
    }

    /// A packet comes off link direction `dir`: hand it to the receiving
    /// node's model.
    #[inline]
    fn dispatch_arrival<M: Mode>(&mut self, dir: u32, p: PacketId) {
        let link = &self.ports[dir as usize];
        let in_gp = link.peer;
        match link.peer_model {
            NodeModel::IbSwitch => self.switch_arrive::<M>(dir, in_gp, link.peer_node as usize, p),
            NodeModel::IbHca => self.hca_arrive(dir, in_gp, p),
            NodeModel::None => {
                self.return_credits_now(dir, p);
                self.drop_packet(p, DropReason::UnknownDestination);
            }
        }
    }

    /// Output queue `qi` (a data VL, or `nvl` for VL15) of switch port `g`.
    #[inline(always)]
    pub(crate) fn oq_at(&self, g: usize, qi: usize) -> &PktList {
        if qi == 0 {
            &self.ports[g].oq0
        } else {
            &self.oq[g * (self.nvl + 1) + qi]
        }
    }

    /// Remove a packet from the world as dropped.
    pub(crate) fn drop_packet(&mut self, p: PacketId, why: DropReason) {
        self.ledger.drop_one(why);
        self.pkts.remove(p);
    }

    /// Remove a packet from the world as delivered.
    pub(crate) fn deliver_packet(&mut self, p: PacketId) {
        self.ledger.delivered += 1;
        self.pkts.remove(p);
    }

    /// Queue a completion on `node`'s CQ.
    pub(crate) fn push_cqe(&mut self, node: u32, cqe: Cqe) {
        self.cqs[node as usize].push_back(cqe);
        self.cq_notify.push_back(node);
    }

    /// Take the next completion notification: the node whose CQ got an entry
    /// (like `ibv_get_cq_event`). Poll that node's CQ with [`Sim::poll_cq`].
    pub fn next_cq_event(&mut self) -> Option<NodeId> {
        self.cq_notify.pop_front().map(NodeId)
    }

    /// Completion notifications not yet taken.
    pub fn cq_pending(&self) -> usize {
        self.cq_notify.len()
    }

    /// Take one completion from `node`'s CQ (`ibv_poll_cq` with one entry).
    pub fn poll_cq(&mut self, node: NodeId) -> Option<Cqe> {
        self.cqs.get_mut(node.idx())?.pop_front()
    }

    /// Finish the run's bookkeeping: close open credit stalls at the current time.
    pub fn finish(&mut self) {
        let now = self.now;
        self.stats.close_stalls(now);
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("nodes", &self.node_model.len())
            .field("ports", &self.ports.len())
            .field("in_flight", &self.pkts.live())
            .finish()
    }
}
