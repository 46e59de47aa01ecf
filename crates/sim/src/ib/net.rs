//! The links, shared by every node model: serialization at the data rate,
//! propagation over the cable, link-level credits per VL (64-byte blocks, returned
//! over the link delay), and the transmitter wake-up logic.
//!
//! A transmitter is woken (a [`Event::TxWake`]) only when it has work it could not
//! do at once: its line is busy, or its head packet waits for credits or for its
//! tail to arrive (cut-through). Credit returns are not events: they sit in a
//! per-port FIFO with their arrival times and are absorbed whenever the port next
//! looks at its credits; a port starved of credits is woken when the first return
//! lands. This keeps the event count near one per packet-link hop.

use std::collections::VecDeque;

use fabric::{Fabric, NodeId, NodeKind};

use crate::SimError;
use crate::engine::time::Serializer;
use crate::engine::{PackedQueue, PacketId, Table, Time};
use crate::ib::config::IbConfig;
use crate::ib::event::{Core, Event, MAX_ID, Mode};
use crate::ib::metrics::Stats;
use crate::ib::packet::{NONE, PktChain, PktHot, PktList, flag};

/// Which model a node runs. New node kinds (Ethernet switch, RoCE NIC, IPoIB host)
/// are new arms here and in the event loop's dispatch (`Sim::dispatch_arrival`).
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
    /// of some 860 km; [`Links::new`] refuses longer). Read through [`PortHot::prop`].
    prop_ps: u32,
    /// Packets on the wire from this transmitter, in arrival order; the head's
    /// arrival is the link's one event in the queue.
    pub(crate) fifo: PktChain,
    /// This (switch) output's VL 0 queue, the one most fabrics use: kept here,
    /// where the port's wake-up and a queueing arrival already read, and not
    /// with the switch's other queues (the other VLs and VL15). Read through
    /// [`crate::ib::switch::Switches::oq_at`].
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
    stalling: bool,
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
    pub(crate) cred: CreditRing,
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

/// What a model's picker decided for a free transmitter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// Send this packet now.
    Send(PacketId),
    /// Nothing can go now; look again at this time (or when credits return, if `NEVER`).
    Wait(Time),
}

/// Returns kept inline in a port record.
const RING: usize = 4;

/// Credit returns on their way back to one transmitter, sorted by landing time:
/// the earliest four inline (in the second cache line of the port's record, so a
/// look at the port brings them along), any more in a per-port spill deque. At
/// most a handful are on their way at once unless the port sits idle.
///
/// The inline returns sit in `t[..len]`, earliest first, and the unused slots
/// hold [`Time::NEVER`], so "has the earliest landed?" is one compare with no
/// length check, and taking it is a shift of four words.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct CreditRing {
    t: [u64; RING],
    /// `vl << 12 | blocks` (a packet is at most 1,024 blocks, a VL at most 14).
    vb: [u16; RING],
    len: u8,
    /// Credits (64-byte blocks) the transmitter holds on VL 0, the one data VL
    /// most fabrics run: kept here, on the line its returns land on, and not with
    /// the other VLs' ([`Links`]' `credits`). Read through [`Links::held`].
    /// Cachegrind: 6% fewer L1 misses on the ft432 run.
    vl0: i32,
}

impl Default for CreditRing {
    fn default() -> Self {
        CreditRing {
            t: [Time::NEVER.0; RING],
            vb: [0; RING],
            len: 0,
            vl0: 0,
        }
    }
}

impl CreditRing {
    #[inline(always)]
    fn at(&self, k: usize) -> (Time, u8, u32) {
        (Time(self.t[k]), (self.vb[k] >> 12) as u8, u32::from(self.vb[k] & 0xfff))
    }

    /// When the earliest return lands (`NEVER` if none is on its way).
    #[inline(always)]
    fn first_time(&self) -> Time {
        Time(self.t[0])
    }

    /// Insert in time order (after equal times); the ring must have room.
    #[inline(always)]
    fn insert(&mut self, e: (Time, u8, u32)) {
        let mut k = self.len as usize;
        debug_assert!(k < RING);
        while k > 0 && self.t[k - 1] > e.0.0 {
            self.t[k] = self.t[k - 1];
            self.vb[k] = self.vb[k - 1];
            k -= 1;
        }
        self.t[k] = e.0.0;
        self.vb[k] = (u16::from(e.1) << 12) | e.2 as u16;
        self.len += 1;
    }

    /// Remove the latest return (the ring must not be empty).
    #[inline]
    fn pop_back(&mut self) -> (Time, u8, u32) {
        self.len -= 1;
        let k = self.len as usize;
        let e = self.at(k);
        self.t[k] = Time::NEVER.0;
        e
    }

    /// Remove the earliest return (the ring must not be empty).
    #[inline(always)]
    fn pop_front(&mut self) {
        self.t = [self.t[1], self.t[2], self.t[3], Time::NEVER.0];
        self.vb = [self.vb[1], self.vb[2], self.vb[3], 0];
        self.len -= 1;
    }
}

const _: () = assert!(RING == 4, "CreditRing::pop_front shifts four slots");

/// The fabric's shape as the simulator indexes it: each node's model and name,
/// its first global port (`port_base[n]..port_base[n + 1]` are its ports) and
/// each port's node. Built once and only read: reports, the deadlock search,
/// adaptive routing and QP creation use it; the hop does not (a port record
/// carries what the hop needs).
#[derive(Debug)]
pub(crate) struct Topology {
    pub(crate) node_model: Vec<NodeModel>,
    pub(crate) node_name: Vec<String>,
    pub(crate) port_base: Vec<u32>,
    pub(crate) port_node: Vec<u32>,
}

impl Topology {
    /// Number the ports of `fabric`.
    pub(crate) fn new(fabric: &Fabric) -> Result<Topology, SimError> {
        let mut port_base = Vec::with_capacity(fabric.nodes.len() + 1);
        let mut port_node = Vec::new();
        port_base.push(0u32);
        for (i, node) in fabric.nodes.iter().enumerate() {
            port_node.extend(std::iter::repeat_n(i as u32, node.ports.len()));
            port_base.push(port_node.len() as u32);
        }
        if port_node.len() >= MAX_ID {
            return Err(SimError::Config {
                field: "fabric",
                expected: "fewer than 2^25 ports",
                got: port_node.len().to_string(),
            });
        }
        Ok(Topology {
            node_model: fabric
                .nodes
                .iter()
                .map(|nd| match nd.kind {
                    NodeKind::Switch => NodeModel::IbSwitch,
                    NodeKind::Ca => NodeModel::IbHca,
                    NodeKind::Router => NodeModel::None,
                })
                .collect(),
            node_name: fabric.nodes.iter().map(|nd| nd.name.clone()).collect(),
            port_base,
            port_node,
        })
    }

    /// Global port id of (node, port).
    #[inline]
    pub(crate) fn gp(&self, n: NodeId, port: u8) -> u32 {
        self.port_base[n.idx()] + u32::from(port)
    }

    /// Number of ports.
    pub(crate) fn num_ports(&self) -> usize {
        self.port_node.len()
    }
}

/// The links: one [`PortHot`] record per transmitting port (global port id
/// `gp`), the credits of data VLs 1 and up (`[gp * nvl + vl]`; VL 0's sit in
/// the record), credit returns beyond the four a record holds, and each port's
/// data rate for the reports. Costs 128 bytes a port, plus 4 bytes a port and
/// VL, plus a (usually empty) deque a port.
///
/// Everything a transmitter does to its line lives here: serialization,
/// propagation, link-level credits (IBA vol. 1 §7.9) and wake-ups. What it
/// sends is the node model's choice ([`crate::ib::switch`], [`crate::ib::hca`]).
#[derive(Debug)]
pub(crate) struct Links {
    /// Hot per-port state, two cache lines per port. Open to the models: a
    /// switch's VL 0 queue and a port's wake-up state live in it.
    pub(crate) ports: Table<PortHot>,
    /// Credits (64-byte blocks) this port may still send into the peer's buffer,
    /// `[gp * nvl + vl]` for VLs 1 and up; VL 0's sit in the port record
    /// ([`CreditRing::vl0`]), so slot `gp * nvl` is unused.
    credits: Table<i32>,
    /// Credit returns (arrival, vl, blocks) beyond the four a port record holds, `[gp]` (see [`CreditRing`]).
    credit_spill: Vec<VecDeque<(Time, u8, u32)>>,
    port_bps: Vec<u64>,
    /// Number of data VLs modelled.
    nvl: usize,
    /// Blocks of the largest packet the run can make (a full-MTU WRITE First
    /// with a GRH): a transmitter holding this many credits can send any packet.
    max_blocks: i32,
}

impl Links {
    /// Cable the ports of `topo` as `fabric` says, each transmitter holding the
    /// credits of its peer's whole buffer on each of `nvl` data VLs.
    pub(crate) fn new(fabric: &Fabric, topo: &Topology, ib: &IbConfig, nvl: usize) -> Result<Links, SimError> {
        let np = topo.num_ports();
        let port_base = &topo.port_base;
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
                port_num: (g as u32 - port_base[topo.port_node[g] as usize]) as u8,
                starved: false,
                need_vl: 0,
                model: NodeModel::None,
                peer_model: NodeModel::None,
                cred: CreditRing::default(),
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
        let (node_model, port_node) = (&topo.node_model, &topo.port_node);
        for g in 0..np {
            ports[g].model = node_model[port_node[g] as usize];
            if ports[g].peer != NONE {
                ports[g].peer_node = port_node[ports[g].peer as usize];
                ports[g].peer_model = node_model[ports[g].peer_node as usize];
            }
        }
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
        let max_blocks = crate::ib::packet::blocks(crate::ib::packet::max_wire(ib.mtu)) as i32;
        Ok(Links {
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            ports: unsafe { crate::engine::Table::trusted(ports) },
            credits: unsafe { crate::engine::Table::trusted(credits) },
            credit_spill: vec![VecDeque::new(); np],
            port_bps,
            nvl,
            max_blocks,
        })
    }

    /// Number of data VLs modelled.
    #[inline(always)]
    pub(crate) fn nvl(&self) -> usize {
        self.nvl
    }

    /// The run models one data VL, known at compile time in a [`crate::ib::event::Fast`] loop.
    #[inline(always)]
    pub(crate) fn one_vl<M: Mode>(&self) -> bool {
        M::FAST || self.nvl == 1
    }

    /// Data VLs modelled, known at compile time in a [`crate::ib::event::Fast`] loop.
    #[inline(always)]
    pub(crate) fn data_vls<M: Mode>(&self) -> usize {
        if M::FAST { 1 } else { self.nvl }
    }

    /// Port `gp`'s data rate in bits per second (0 when uncabled).
    pub(crate) fn rate_bps(&self, gp: usize) -> u64 {
        self.port_bps[gp]
    }

    /// Turn off the planning shortcut (see [`Self::holds_max`]).
    pub(crate) fn disable_plan_shortcut(&mut self) {
        self.max_blocks = i32::MAX;
    }

    /// Transmitter `g` holds VL 0 credits for the largest packet the run can
    /// make: with one data VL its next packet can go whatever it is, so a
    /// planner need not read it (see the models' `plan_next`).
    #[inline(always)]
    pub(crate) fn holds_max(&self, g: usize) -> bool {
        self.ports[g].cred.vl0 >= self.max_blocks
    }

    /// Credits transmitter `g` holds on data VL `vl` (see [`CreditRing::vl0`]).
    #[inline(always)]
    pub(crate) fn held(&self, g: usize, vl: usize) -> i32 {
        if vl == 0 {
            self.ports[g].cred.vl0
        } else {
            self.credits[g * self.nvl + vl]
        }
    }

    /// The credit returns on their way to `gp`, earliest first.
    pub(crate) fn credit_returns(&self, gp: u32) -> impl Iterator<Item = (Time, u8, u32)> + '_ {
        let r = &self.ports[gp as usize].cred;
        (0..r.len as usize)
            .map(move |k| r.at(k))
            .chain(self.credit_spill[gp as usize].iter().copied())
    }

    /// Ask for a wake-up of transmitter `gp` at `t` (keeps only the earliest).
    #[inline]
    pub(crate) fn schedule_wake(&mut self, q: &mut PackedQueue<Event>, gp: u32, t: Time) {
        let g = gp as usize;
        if t < self.ports[g].wake_at {
            self.ports[g].wake_at = t;
            q.push(t, Event::TxWake { gp });
        }
    }

    /// New work for transmitter `gp` at `now`: while its line is busy, make sure
    /// it is woken when the line frees and answer false; when the line is idle,
    /// answer whether it should look now (it is not already due a wake-up now).
    /// The switch's and the HCA's `kick` both ask this.
    #[inline]
    pub(crate) fn wants_look(&mut self, q: &mut PackedQueue<Event>, now: Time, gp: u32) -> bool {
        let g = gp as usize;
        if self.ports[g].busy_until > now {
            let t = self.ports[g].busy_until;
            self.schedule_wake(q, gp, t);
            false
        } else {
            self.ports[g].wake_at > now
        }
    }

    /// Credits returned to transmitter `gp`, landing at `t`. Inlined: every
    /// hop returns credits, and as a call its register saves cost as much as
    /// its work (callgrind: 18 of 34 instructions).
    #[inline(always)]
    pub(crate) fn push_credit(&mut self, q: &mut PackedQueue<Event>, gp: u32, t: Time, vl: u8, nblocks: u32) {
        // Returns come from packets leaving through different outputs with
        // different sizes, so they can land out of order: keep them sorted
        // (almost always an append) so absorbing stops at the right entry.
        debug_assert!(nblocks < 1 << 12 && vl < 16);
        let e = (t, vl, nblocks);
        let pt = &mut self.ports[gp as usize];
        if (pt.cred.len as usize) < RING {
            // The spill is empty whenever the ring has room.
            pt.cred.insert(e);
            if !pt.starved {
                return;
            }
        } else {
            self.spill_credit(gp, e);
        }
        self.credit_wake(q, gp, t);
    }

    /// [`Self::push_credit`] into a full ring.
    #[inline(never)]
    fn spill_credit(&mut self, gp: u32, e: (Time, u8, u32)) {
        let g = gp as usize;
        let t = e.0;
        let r = &mut self.ports[g].cred;
        let f = &mut self.credit_spill[g];
        if r.at(RING - 1).0 > t {
            // Earlier than the ring's last: that one moves to the spill's front.
            let last = r.pop_back();
            r.insert(e);
            f.push_front(last);
        } else if f.back().is_none_or(|b| b.0 <= t) {
            f.push_back(e);
        } else {
            let pos = f.iter().rposition(|x| x.0 <= t).map_or(0, |i| i + 1);
            f.insert(pos, e);
        }
    }

    /// A credit return landing at `t` was just queued for `gp`: if the port
    /// starves, wake it when it will have what its head packet needs.
    #[inline(never)]
    fn credit_wake(&mut self, q: &mut PackedQueue<Event>, gp: u32, t: Time) {
        let pt = &self.ports[gp as usize];
        if pt.starved {
            let (need_vl, need_blocks) = (pt.need_vl, pt.need_blocks);
            if need_blocks == 0 {
                self.schedule_wake(q, gp, t);
            } else if let Some(at) = self.credit_ready(gp, need_vl, u32::from(need_blocks), t) {
                self.schedule_wake(q, gp, at);
            }
        }
    }

    /// Apply every credit return that has landed by `now`.
    #[inline(always)]
    pub(crate) fn absorb_credits(&mut self, now: Time, gp: u32) {
        let now = now.0;
        let r = &mut self.ports[gp as usize].cred;
        // Most looks find the earliest return still on its way (or none); most
        // of the rest find exactly one landed, on VL 0, with nothing spilled.
        if r.t[0] <= now {
            if r.t[1] > now && (r.len as usize) < RING && r.vb[0] >> 12 == 0 {
                r.vl0 += i32::from(r.vb[0] & 0xfff);
                r.pop_front();
            } else {
                self.absorb_landed(now, gp);
            }
        }
    }

    #[inline(never)]
    fn absorb_landed(&mut self, now: u64, gp: u32) {
        let g = gp as usize;
        let nvl = self.nvl;
        let Links {
            ports,
            credits,
            credit_spill,
            ..
        } = self;
        let r = &mut ports[g].cred;
        let cr = &mut credits[g * nvl..(g + 1) * nvl];
        loop {
            // The spill holds returns only while the ring is full.
            let may_spill = r.len as usize == RING;
            while r.len > 0 && r.t[0] <= now {
                let vb = r.vb[0];
                let (vl, b) = (usize::from(vb >> 12), i32::from(vb & 0xfff));
                if vl == 0 {
                    r.vl0 += b;
                } else {
                    cr[vl] += b;
                }
                r.pop_front();
            }
            // Refill from the spill: its returns all land at or after the
            // ring's, so each is an append; the spill stays empty while the
            // ring has room.
            if !may_spill {
                return;
            }
            let spill = &mut credit_spill[g];
            if spill.is_empty() {
                return;
            }
            while (r.len as usize) < RING {
                match spill.pop_front() {
                    Some(e) => r.insert(e),
                    None => break,
                }
            }
            if r.first_time().0 > now {
                return;
            }
        }
    }

    /// A transmitter looks at its line: take the credits that have landed
    /// and forget that it starved (the look decides again).
    #[inline(always)]
    pub(crate) fn look(&mut self, now: Time, gp: u32) {
        self.absorb_credits(now, gp);
        self.ports[gp as usize].starved = false;
    }

    /// A look at `gp` sent nothing: wake it at `t` unless that is never.
    #[inline(always)]
    pub(crate) fn idle(&mut self, q: &mut PackedQueue<Event>, stats: &mut Stats, gp: u32, t: Time) {
        stats.idle_looks += 1;
        if t != Time::NEVER {
            self.schedule_wake(q, gp, t);
        }
    }

    /// The earliest time, not before `from`, at which transmitter `gp` will hold
    /// `nb` credits on `vl` counting the returns already on their way; `None` if
    /// those are not enough (a later return will wake it).
    #[inline]
    pub(crate) fn credit_ready(&self, gp: u32, vl: u8, nb: u32, from: Time) -> Option<Time> {
        let g = gp as usize;
        let mut avail = self.held(g, vl as usize);
        if avail >= nb as i32 {
            return Some(from);
        }
        let r = &self.ports[g].cred;
        for k in 0..r.len as usize {
            let (t, v, b) = r.at(k);
            if v == vl {
                avail += b as i32;
                if avail >= nb as i32 {
                    return Some(t.max(from));
                }
            }
        }
        for &(t, v, b) in &self.credit_spill[g] {
            if v == vl {
                avail += b as i32;
                if avail >= nb as i32 {
                    return Some(t.max(from));
                }
            }
        }
        None
    }

    /// Mark `gp` as waiting for `nb` credits on `vl` and return when it can go
    /// (`NEVER`: when a credit return not yet sent arrives).
    #[inline]
    pub(crate) fn starve(&mut self, stats: &mut Stats, now: Time, gp: u32, vl: u8, nb: u32) -> Time {
        let g = gp as usize;
        self.ports[g].starved = true;
        self.ports[g].stalling = true;
        stats.stall_begin(g * self.nvl + vl as usize, now);
        if self.nvl == 1 {
            self.ports[g].need_vl = vl;
            self.ports[g].need_blocks = nb as u16;
            self.credit_ready(gp, vl, nb, now).unwrap_or(Time::NEVER)
        } else {
            // Several VLs compete: wake on the first return of any of them.
            self.ports[g].need_blocks = 0;
            self.credit_wait(gp)
        }
    }

    /// VL `vl` of `gp` has a head packet short of credits among several VLs:
    /// open its stall, mark the port starved; the first return wakes it.
    #[inline]
    pub(crate) fn stall_vl(&mut self, stats: &mut Stats, now: Time, gp: u32, vl: usize) -> Time {
        let g = gp as usize;
        self.ports[g].starved = true;
        self.ports[g].stalling = true;
        stats.stall_begin(g * self.nvl + vl, now);
        self.credit_wait(gp)
    }

    /// When the next credit return lands at `gp` (`NEVER` if none is on its way).
    #[inline]
    pub(crate) fn credit_wait(&self, gp: u32) -> Time {
        self.ports[gp as usize].cred.first_time()
    }

    /// Put packet `p` on the wire at `gp` now: take its credits, busy the line,
    /// count it, and queue its arrival at the far end (the link's one event
    /// when the link was empty; else the packet ahead carries it). `route`, in
    /// a plain run towards a switch, is the far switch's forwarding decision,
    /// which rides in the packet's `in_link` (unused on a wire). Returns when
    /// the last byte is out and the packet as it was before the send (its
    /// input link and VL, for the switch that forwards it).
    ///
    /// Written against local borrows of the parts it touches: every
    /// packet-link hop runs through here, and through `self.x[i]` the compiler
    /// reloads each vector's pointer and length after every store.
    #[inline(always)]
    pub(crate) fn transmit<M: Mode>(
        &mut self,
        core: &mut Core,
        stats: &mut Stats,
        ib: &IbConfig,
        gp: u32,
        p: PacketId,
        route: Option<u32>,
    ) -> (Time, PktHot) {
        let g = gp as usize;
        let now = core.now;
        let nvl = self.data_vls::<M>();
        let Links { ports, credits, .. } = self;
        let Core { q, pkts, .. } = core;
        let pk = pkts[p];
        let nb = pk.blocks();
        debug_assert!(nb as i32 <= self.max_blocks, "a packet larger than max_blocks");
        let vl15 = pk.flags & flag::VL15 != 0;
        let pt = &mut ports[g];
        if !vl15 {
            let ci = g * nvl + pk.vl as usize;
            if pk.vl == 0 {
                pt.cred.vl0 -= nb as i32;
            } else {
                credits[ci] -= nb as i32;
            }
            if pt.stalling {
                stats.stall_end(ci, now);
                if nvl == 1 {
                    pt.stalling = false;
                }
            }
        }
        let end = now + pt.ser.time(u32::from(pk.wire));
        pt.busy_until = end;
        pt.tx_bytes += u64::from(pk.wire);
        pt.tx_pkts = pt.tx_pkts.wrapping_add(1);
        let prop = pt.prop();
        let arrive = match pt.peer_model {
            NodeModel::IbSwitch => {
                let forwarding = if M::FAST {
                    crate::ib::config::Forwarding::CutThrough
                } else {
                    ib.forwarding
                };
                let head_or_tail = match forwarding {
                    crate::ib::config::Forwarding::CutThrough => now,
                    crate::ib::config::Forwarding::StoreAndForward => end,
                };
                head_or_tail + prop + Time(ib.switch_latency_ps)
            }
            _ => end + prop + Time(ib.hca_rx_latency_ps),
        };
        stats.hops += 1;
        if !M::FAST && stats.capture == gp {
            stats.captured.push((now, pkts.full(p)));
        }
        let seq = q.next_seq();
        {
            let pm = &mut pkts[p];
            pm.hops = pm.hops.saturating_add(1);
            pm.tail_at = end + prop;
            pm.in_link = NONE;
        }
        if let Some(code) = route {
            // On the wire `in_link` carries the far switch's forwarding decision.
            pkts[p].in_link = code;
        }
        let ahead = pt.fifo.tail;
        if pt.fifo.push(pkts, p) {
            q.push_seq(arrive, seq, Event::Arrive { dir: gp });
        } else {
            // The packet ahead (whose line the push just wrote) will queue
            // this one's arrival when it arrives itself.
            let a = &mut pkts[ahead];
            a.next_at = arrive;
            a.set_next_seq(seq);
        }
        debug_assert_eq!(self.arrival_time(ib, gp, &core.pkts[p]), arrive);
        (end, pk)
    }

    /// When packet `pk`, on the link from transmitter `gp`, reaches the far node
    /// (its header for a cut-through switch, its tail otherwise), derived from its
    /// tail time: the check (in debug builds) of the arrival time the packet
    /// ahead of it carries (`PktHot::next_at`).
    #[inline]
    pub(crate) fn arrival_time(&self, ib: &IbConfig, gp: u32, pk: &PktHot) -> Time {
        let pt = &self.ports[gp as usize];
        match pt.peer_model {
            NodeModel::IbSwitch => {
                let head_or_tail = match ib.forwarding {
                    crate::ib::config::Forwarding::CutThrough => pk.tail_at - pt.ser.time(u32::from(pk.wire)),
                    crate::ib::config::Forwarding::StoreAndForward => pk.tail_at,
                };
                head_or_tail + Time(ib.switch_latency_ps)
            }
            _ => pk.tail_at + Time(ib.hca_rx_latency_ps),
        }
    }

    /// After a send from `gp` that ends at `end`, wake the transmitter when its
    /// next packet can go: at `end` if `need` is `None` (unknown, or not flow
    /// controlled) or if it will have the credits, later if they are still on
    /// their way, or on a credit return if none is (the port starves).
    #[inline(always)]
    pub(crate) fn plan_need(
        &mut self,
        q: &mut PackedQueue<Event>,
        stats: &mut Stats,
        gp: u32,
        end: Time,
        need: Option<(u8, u32)>,
    ) {
        let g = gp as usize;
        match need {
            None => self.schedule_wake(q, gp, end),
            Some((vl, nb)) => match self.credit_ready(gp, vl, nb, end) {
                Some(t) => self.schedule_wake(q, gp, t),
                None => {
                    self.ports[g].starved = true;
                    self.ports[g].stalling = true;
                    self.ports[g].need_vl = vl;
                    self.ports[g].need_blocks = nb as u16;
                    stats.stall_begin(g * self.nvl + vl as usize, end);
                }
            },
        }
    }

    /// Send `nb` credits of VL `vl` back over link `link` (named by its
    /// transmitting port), leaving the far end at `at`; returns the port they
    /// leave from, the link's receiving port. Only the link's own record is
    /// read.
    #[inline]
    pub(crate) fn return_credits(&mut self, q: &mut PackedQueue<Event>, link: u32, vl: u8, nb: u32, at: Time) -> u32 {
        let l = &self.ports[link as usize];
        let (in_gp, prop) = (l.peer, l.prop());
        self.push_credit(q, link, at + prop, vl, nb);
        in_gp
    }

    /// An end node consumed (or dropped) packet `p` that came over link
    /// `link` (named by its transmitting port): its buffer space is free now,
    /// and the credits travel back over the link. Only the link's record is
    /// read (a cable's delay is the same both ways), not the receiving port's.
    pub(crate) fn return_credits_now(&mut self, core: &mut Core, link: u32, p: PacketId) {
        let pk = &core.pkts[p];
        if pk.flags & flag::VL15 != 0 {
            return;
        }
        let (vl, nb) = (pk.vl, pk.blocks());
        let l = &self.ports[link as usize];
        debug_assert_eq!(l.prop(), self.ports[l.peer as usize].prop());
        self.push_credit(&mut core.q, link, core.now + l.prop(), vl, nb);
    }
}
