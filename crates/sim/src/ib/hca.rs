//! The InfiniBand HCA: RC and UD queue pairs behind a verbs-shaped API.
//!
//! RC (IBA vol. 1 §9.7): SEND, RDMA WRITE and RDMA READ are segmented to the path
//! MTU with First/Middle/Last/Only opcodes; every request packet takes the next
//! 24-bit PSN (a READ request takes one PSN per response packet); the responder
//! checks PSNs, coalesces ACKs (one per `ack_every` packets and always on the last
//! packet of a message, which carries AckReq), and queues READ responses; the
//! requester completes SEND/WRITE work requests when an ACK covers their last PSN
//! and READs when their last response arrives. READ responses implicitly
//! acknowledge earlier requests (§9.7.5.1.2). The link is lossless, so there are
//! no retransmissions; a PSN out of order is counted as an error.
//!
//! Packets are built when the port can send them (credits available), not when
//! work is posted: a 1 GB WRITE costs no memory until it is on the wire. Receive
//! queues are modelled as always posted (no RNR).
//!
//! UD (§9.8) sends one packet per work request (payload at most the MTU);
//! `mgmt` UD QPs send 256-byte MADs on VL15, as QP0 does.
//!
//! One file because the HCA's RC and UD transport is one state machine over the `Hcas`
//! record (QPs, CQs, receive state): requester, responder and completion paths read and
//! write the same QP fields, and splitting them would split each QP's invariants across
//! files.

use std::collections::VecDeque;

use fabric::NodeId;

use sm::RoutingTables;

use crate::SimError;
use crate::engine::ring::HeadRing;
use crate::engine::{DropReason, PacketId, Table, Time};
use crate::ib::config::IbConfig;
use crate::ib::event::{Core, Event, Generic, MAX_ID, Mode};
use crate::ib::forward::Forwarding;
use crate::ib::net::{Links, NodeModel, Pick, Topology};
use crate::ib::packet::{NO_ROUTE, NONE, Opcode, Packet, Packets, PktList, blocks, flag, hdr};
use crate::ib::partition::PkeyCheck;
use crate::ib::step::Cx;

/// A queue pair (simulator-wide id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct QpId(pub u32);

/// A 24-bit packet sequence number with serial-number comparison (IBA vol. 1 §9.7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Psn(pub u32);

impl Psn {
    const MASK: u32 = 0x00ff_ffff;

    /// `self + n`, wrapping at 2^24.
    #[inline]
    pub fn plus(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & Self::MASK)
    }

    /// `self` is at or before `o` in serial-number order.
    #[inline]
    pub fn le(self, o: Psn) -> bool {
        (o.0.wrapping_sub(self.0) & Self::MASK) < 0x80_0000
    }

    /// `self` is strictly before `o`.
    #[inline]
    pub fn lt(self, o: Psn) -> bool {
        self != o && self.le(o)
    }
}

/// What a completion reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CqeOp {
    Send,
    Write,
    Read,
    Recv,
    UdSend,
}

/// A work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    pub wr_id: u64,
    pub qp: QpId,
    pub op: CqeOp,
    pub bytes: u64,
    /// When the work request was posted (for Recv: when the first packet arrived).
    pub posted: Time,
    /// When the completion was generated.
    pub done: Time,
}

/// How to create a QP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpOptions {
    /// Local port.
    pub port: u8,
    /// The peer's port (RC).
    pub peer_port: u8,
    /// Service level; `None` = the SM's path SL if it assigned one, else 0.
    pub sl: Option<u8>,
    /// UD only: a management QP (QP0-style MADs on VL15).
    pub mgmt: bool,
    /// The P_Key its packets carry (both QPs of an RC pair); default 0xFFFF, the
    /// default partition's full member (IBA vol. 1 §10.9.1).
    pub pkey: u16,
}

impl Default for QpOptions {
    fn default() -> Self {
        QpOptions {
            port: 1,
            peer_port: 1,
            sl: None,
            mgmt: false,
            pkey: 0xffff,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WrOp {
    Send,
    Write,
    Read,
    Ud { dst: u32, dlid: u16 },
}

#[derive(Clone, Copy, Debug)]
struct Wqe {
    wr_id: u64,
    op: WrOp,
    /// `u64::MAX` = endless (htsim's size 0).
    bytes: u64,
    posted: Time,
}

/// What an empty [`HeadRing`] holds in its head slot (never read).
impl Default for Wqe {
    fn default() -> Self {
        Wqe {
            wr_id: 0,
            op: WrOp::Send,
            bytes: 0,
            posted: Time::ZERO,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Outstanding {
    last: Psn,
    wqe: Wqe,
    /// READ: response packets expected and received so far.
    npk: u32,
    got: u32,
}

#[derive(Clone, Copy, Debug)]
struct ReadJob {
    psn: Psn,
    bytes: u64,
    off: u64,
    to_qp: u32,
    to_lid: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QpKind {
    Rc,
    Ud,
}

/// One channel-adapter port's transmit state, on one cache line: its queues are
/// threaded through the packets and QPs they hold, so a send reads this line
/// and then the QP or packet it picks (with `VecDeque`s each queue's buffer
/// would be one more dependent miss before the QP's). Its node and LIDs are in
/// [`Hcas`]' `ca_rx`, by `gp`.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct CaPort {
    gp: u32,
    /// ACKs waiting to go, ahead of data (threaded through the packets' `next`).
    ctrl: PktList,
    /// QPs with something to send, served round robin one packet at a time.
    active: QpList,
}

const _: () = assert!(std::mem::size_of::<CaPort>() == 64);

/// A CA port's node and LID range (base LID and 2^LMC LIDs), in a table of 8
/// bytes a port ([`Hcas`]' `ca_rx`, by global port): a receive checks a packet
/// against it without reading the port's [`CaPort`] record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CaRx {
    node: u32,
    lid: u16,
    lid_count: u16,
}

/// A FIFO of QPs threaded through their `next_active` field.
#[derive(Clone, Copy, Debug)]
struct QpList {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for QpList {
    fn default() -> Self {
        QpList {
            head: NONE,
            tail: NONE,
            len: 0,
        }
    }
}

impl QpList {
    #[inline]
    fn front(&self) -> Option<u32> {
        (self.head != NONE).then_some(self.head)
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.head == NONE
    }

    #[inline]
    fn push_back(&mut self, qps: &mut [Qp], qp: u32) {
        qps[qp as usize].next_active = NONE;
        if self.tail == NONE {
            self.head = qp;
        } else {
            qps[self.tail as usize].next_active = qp;
        }
        self.tail = qp;
        self.len += 1;
    }

    #[inline]
    fn push_front(&mut self, qps: &mut [Qp], qp: u32) {
        qps[qp as usize].next_active = self.head;
        if self.tail == NONE {
            self.tail = qp;
        }
        self.head = qp;
        self.len += 1;
    }

    #[inline]
    fn pop_front(&mut self, qps: &[Qp]) -> Option<u32> {
        let qp = self.front()?;
        self.head = qps[qp as usize].next_active;
        if self.head == NONE {
            self.tail = NONE;
        }
        self.len -= 1;
        Some(qp)
    }
}

/// A queue pair's state, laid out by who reads it: the first line holds the
/// send queue (its head WQE inline), the second what a send and a receive
/// touch (a packet of a busy QP reads these two lines at the sender and the
/// second at the receiver); the rest is read on completions, READs, IB CC and
/// adaptive routing.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct Qp {
    /// The send queue, its head WQE in this line.
    sq: HeadRing<Wqe>,

    sq_off: u64,
    /// Payload bytes this QP has delivered as a responder (goodput).
    rx_payload: u64,
    next_psn: Psn,
    /// The QP behind this one in its port's round robin ([`NONE`] at the tail).
    next_active: u32,
    peer: u32,
    /// The forwarding decisions its packets to `dlid` meet, in the routes
    /// of [`Forwarding`] ([`NO_ROUTE`] if not precomputed).
    route: u32,
    reads_out: u32,
    node: u32,
    cap: u32,
    epsn: Psn,
    since_ack: u32,
    slid: u16,
    dlid: u16,
    sl: u8,
    vl: u8,
    mgmt: bool,
    pkey: u16,
    active: bool,
    /// `rresp` is not empty (kept here so a pick need not read its header).
    reading: bool,

    kind: QpKind,
    rresp: VecDeque<ReadJob>,
    /// Adaptive routing: the expected PSN unwrapped to 64 bits (see `reorder`).
    epsn_ext: u64,
    pending: VecDeque<Wqe>,
    unacked: VecDeque<Outstanding>,
    /// Highest PSN an ACK has covered (completions wait behind an unfinished READ).
    acked: Option<Psn>,
    rx_bytes: u64,
    rx_first: Time,
    /// When the last packet of an RDMA WRITE last reached this QP as a responder
    /// (its data in memory, where `ib_write_lat`'s peer polls for it).
    write_placed: Time,
    /// IB CC: congestion-control table index, when it last changed, and when the
    /// QP may send its next packet.
    ccti: u16,
    ccti_at: Time,
    next_allowed: Time,
    /// Adaptive routing: requests that arrived ahead of the expected PSN, by
    /// unwrapped PSN.
    reorder: std::collections::BTreeMap<u64, Packet>,
}

const _: () = assert!(std::mem::offset_of!(Qp, sq_off) == 64 && std::mem::offset_of!(Qp, reading) < 128);

/// What a new QP is: its transport, its peer QP (RC), the LID it sends to,
/// its SL, and whether it is a management QP (UD).
struct QpSpec {
    kind: QpKind,
    peer: u32,
    dlid: u16,
    sl: u8,
    mgmt: bool,
    pkey: u16,
}

/// The addressing fields of a QP (cheap to copy out before mutating the world).
#[derive(Clone, Copy)]
struct QpHead {
    slid: u16,
    sl: u8,
    vl: u8,
    cap: u32,
    pkey: u16,
}

impl Qp {
    fn clone_head(&self) -> QpHead {
        QpHead {
            pkey: self.pkey,
            slid: self.slid,
            sl: self.sl,
            vl: self.vl,
            cap: self.cap,
        }
    }
}

enum Build {
    Packet(PacketId),
    /// The next packet needs this many blocks.
    NoCredit(u32),
    Idle,
}

/// Every channel adapter's state: the transmit record of each cabled CA port
/// (`caps`, found from a global port through `ca_port`), each CA port's
/// receive check (`ca_rx`, by global port), the queue pairs, and the
/// completion queues with the notifications not yet taken. A CA port costs a
/// 64-byte record plus 12 bytes a global port of the fabric; a QP about 256
/// bytes plus its queues.
#[derive(Debug)]
pub(crate) struct Hcas {
    /// The index into `caps` of each global port ([`NONE`]: not a cabled CA port).
    ca_port: Vec<u32>,
    /// Each CA port's node and LID range, `[gp]` (see [`CaRx`]): a small
    /// table, so that most receives do not read the CA port's record.
    ca_rx: Table<CaRx>,
    caps: Vec<CaPort>,
    qps: Vec<Qp>,
    /// Each node's completion queue.
    cqs: Vec<VecDeque<Cqe>>,
    /// Nodes whose CQ got an entry, one per entry, oldest first.
    cq_notify: VecDeque<u32>,
    /// Partition checks at CA ports (off unless tables are set).
    pub(crate) pkeys: PkeyCheck,
}

/// What creating a QP reads (the topology, the links, the SM's tables) and
/// writes (the precomputed routes, [`Forwarding::build_route`]).
pub(crate) struct Wiring<'a> {
    pub(crate) topo: &'a Topology,
    pub(crate) links: &'a Links,
    pub(crate) tables: &'a RoutingTables,
    pub(crate) fwd: &'a mut Forwarding,
    pub(crate) hop_limit: u8,
}

impl Hcas {
    /// Index every cabled CA port of `topo`.
    pub(crate) fn new(topo: &Topology, links: &Links, tables: &RoutingTables) -> Hcas {
        let np = topo.num_ports();
        let mut h = Hcas {
            ca_port: vec![NONE; np],
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            ca_rx: unsafe { crate::engine::Table::trusted(vec![CaRx::default(); np]) },
            caps: Vec::new(),
            qps: Vec::new(),
            cqs: vec![VecDeque::new(); topo.node_model.len()],
            cq_notify: VecDeque::new(),
            pkeys: PkeyCheck::new(np),
        };
        for n in 0..topo.node_model.len() {
            if topo.node_model[n] != NodeModel::IbHca {
                continue;
            }
            let lmc = tables.lmc;
            for gp in topo.port_base[n]..topo.port_base[n + 1] {
                let port = links.ports[gp as usize].port_num;
                if port == 0 || links.ports[gp as usize].peer == NONE {
                    continue;
                }
                let lid = tables.lid_of(NodeId(n as u32), port).map_or(0, |l| l.0);
                h.ca_port[gp as usize] = h.caps.len() as u32;
                h.ca_rx[gp as usize] = CaRx {
                    node: n as u32,
                    lid,
                    lid_count: 1 << lmc,
                };
                h.caps.push(CaPort {
                    gp,
                    ctrl: PktList::default(),
                    active: QpList::default(),
                });
            }
        }
        h
    }

    fn ca_port_of(&self, w: &Wiring, n: NodeId, port: u8) -> Result<u32, SimError> {
        let topo = w.topo;
        let name = || topo.node_name.get(n.idx()).cloned().unwrap_or_default();
        if n.idx() >= topo.node_model.len() {
            return Err(SimError::NoNode(n.0));
        }
        if topo.node_model[n.idx()] != NodeModel::IbHca {
            return Err(SimError::NotCa { node: name() });
        }
        let gp = topo.port_base[n.idx()] + u32::from(port);
        if gp >= topo.port_base[n.idx() + 1] || port == 0 || w.links.ports[gp as usize].peer == NONE {
            return Err(SimError::Uncabled { node: name(), port });
        }
        let c = self.ca_port[gp as usize];
        if self.ca_rx[gp as usize].lid == 0 {
            return Err(SimError::NoLid { node: name(), port });
        }
        Ok(c)
    }

    /// The base LID of CA port `cap` (an index into `caps`).
    fn ca_lid(&self, cap: u32) -> u16 {
        self.ca_rx[self.caps[cap as usize].gp as usize].lid
    }

    fn new_qp(&mut self, w: &mut Wiring, cap: u32, spec: QpSpec) -> u32 {
        let QpSpec {
            kind,
            peer,
            dlid,
            sl,
            mgmt,
            pkey,
        } = spec;
        let gp = self.caps[cap as usize].gp;
        let port = w.links.ports[gp as usize].port_num;
        let CaRx { node, lid: slid, .. } = self.ca_rx[gp as usize];
        let vl = w.fwd.ca_vl(w.links.nvl(), node as usize, port, sl);
        let route = w.fwd.build_route(w.links, w.hop_limit, gp, dlid);
        self.qps.push(Qp {
            node,
            cap,
            kind,
            peer,
            slid,
            dlid,
            sl,
            vl,
            mgmt,
            pkey,
            pending: VecDeque::new(),
            sq: HeadRing::default(),
            sq_off: 0,
            next_psn: Psn(0),
            unacked: VecDeque::new(),
            reads_out: 0,
            acked: None,
            epsn: Psn(0),
            since_ack: 0,
            rx_bytes: 0,
            rx_first: Time::ZERO,
            write_placed: Time::ZERO,
            rresp: VecDeque::new(),
            active: false,
            reading: false,
            next_active: NONE,
            rx_payload: 0,
            ccti: 0,
            ccti_at: Time::ZERO,
            next_allowed: Time::ZERO,
            epsn_ext: 0,
            reorder: std::collections::BTreeMap::new(),
            route,
        });
        (self.qps.len() - 1) as u32
    }

    /// Create two connected RC QPs, one on `a` and one on `b` (see
    /// [`crate::Sim::create_rc_pair`]).
    pub(crate) fn create_rc_pair(
        &mut self,
        w: &mut Wiring,
        a: NodeId,
        b: NodeId,
        o: &QpOptions,
    ) -> Result<(QpId, QpId), SimError> {
        if self.qps.len() + 2 >= MAX_ID {
            return Err(SimError::BadPost {
                qp: NONE,
                why: "too many QPs (2^25 at most)".into(),
            });
        }
        let ca = self.ca_port_of(w, a, o.port)?;
        let cb = self.ca_port_of(w, b, o.peer_port)?;
        let (la, lb) = (self.ca_lid(ca), self.ca_lid(cb));
        let sl_ab = o.sl.unwrap_or_else(|| path_sl(w.tables, la, lb));
        let sl_ba = o.sl.unwrap_or_else(|| path_sl(w.tables, lb, la));
        let rc = |peer, dlid, sl| QpSpec {
            kind: QpKind::Rc,
            peer,
            dlid,
            sl,
            mgmt: false,
            pkey: o.pkey,
        };
        let qa = self.new_qp(w, ca, rc(NONE, lb, sl_ab));
        let qb = self.new_qp(w, cb, rc(qa, la, sl_ba));
        self.qps[qa as usize].peer = qb;
        Ok((QpId(qa), QpId(qb)))
    }

    /// Create a UD QP on (`node`, `port`).
    pub(crate) fn create_ud(&mut self, w: &mut Wiring, node: NodeId, o: &QpOptions) -> Result<QpId, SimError> {
        if self.qps.len() + 1 >= MAX_ID {
            return Err(SimError::BadPost {
                qp: NONE,
                why: "too many QPs (2^25 at most)".into(),
            });
        }
        let c = self.ca_port_of(w, node, o.port)?;
        let spec = QpSpec {
            kind: QpKind::Ud,
            peer: NONE,
            dlid: 0,
            sl: o.sl.unwrap_or(0),
            mgmt: o.mgmt,
            pkey: o.pkey,
        };
        Ok(QpId(self.new_qp(w, c, spec)))
    }

    fn post(
        &mut self,
        core: &mut Core,
        ib: &IbConfig,
        qp: QpId,
        op: WrOp,
        bytes: u64,
        wr_id: u64,
    ) -> Result<(), SimError> {
        let q = self.qps.get(qp.0 as usize).ok_or(SimError::BadPost {
            qp: qp.0,
            why: "no such QP".into(),
        })?;
        match (q.kind, op) {
            (QpKind::Rc, WrOp::Ud { .. }) => {
                return Err(SimError::BadPost {
                    qp: qp.0,
                    why: "a UD send needs a UD QP".into(),
                });
            }
            (QpKind::Ud, WrOp::Ud { .. }) => {
                let max = if q.mgmt { u64::from(hdr::MAD) } else { u64::from(ib.mtu) };
                if bytes > max {
                    return Err(SimError::BadPost {
                        qp: qp.0,
                        why: format!("UD payload {bytes} exceeds {max} bytes"),
                    });
                }
            }
            (QpKind::Ud, _) => {
                return Err(SimError::BadPost {
                    qp: qp.0,
                    why: "UD QPs only SEND (post_ud_send)".into(),
                });
            }
            (QpKind::Rc, WrOp::Read) if bytes == u64::MAX || bytes > u64::from(u32::MAX) => {
                return Err(SimError::BadPost {
                    qp: qp.0,
                    why: "a READ is at most 2^32-1 bytes".into(),
                });
            }
            _ => {}
        }
        let w = Wqe {
            wr_id,
            op,
            bytes,
            posted: core.now,
        };
        self.qps[qp.0 as usize].pending.push_back(w);
        core.q
            .push(core.now + Time(ib.hca_tx_latency_ps), Event::QpReady { qp: qp.0 });
        Ok(())
    }

    /// Post a SEND of `bytes` (`u64::MAX` = an endless stream).
    pub(crate) fn post_send(
        &mut self,
        core: &mut Core,
        ib: &IbConfig,
        qp: QpId,
        bytes: u64,
        wr_id: u64,
    ) -> Result<(), SimError> {
        self.post(core, ib, qp, WrOp::Send, bytes, wr_id)
    }

    /// Post an RDMA WRITE of `bytes` (`u64::MAX` = an endless stream).
    pub(crate) fn post_write(
        &mut self,
        core: &mut Core,
        ib: &IbConfig,
        qp: QpId,
        bytes: u64,
        wr_id: u64,
    ) -> Result<(), SimError> {
        self.post(core, ib, qp, WrOp::Write, bytes, wr_id)
    }

    /// Post an RDMA READ of `bytes`.
    pub(crate) fn post_read(
        &mut self,
        core: &mut Core,
        ib: &IbConfig,
        qp: QpId,
        bytes: u64,
        wr_id: u64,
    ) -> Result<(), SimError> {
        self.post(core, ib, qp, WrOp::Read, bytes, wr_id)
    }

    /// Post a UD SEND of `bytes` to UD QP `dst`.
    pub(crate) fn post_ud_send(
        &mut self,
        core: &mut Core,
        ib: &IbConfig,
        qp: QpId,
        dst: QpId,
        bytes: u64,
        wr_id: u64,
    ) -> Result<(), SimError> {
        let d = self.qps.get(dst.0 as usize).ok_or(SimError::BadPost {
            qp: dst.0,
            why: "no such QP".into(),
        })?;
        let dlid = self.ca_lid(d.cap);
        self.post(core, ib, qp, WrOp::Ud { dst: dst.0, dlid }, bytes, wr_id)
    }

    /// Payload bytes QP `qp` has received as a responder (SEND and WRITE data).
    pub(crate) fn qp_rx_bytes(&self, qp: QpId) -> u64 {
        self.qps.get(qp.0 as usize).map_or(0, |q| q.rx_payload)
    }

    /// The node a QP lives on.
    pub(crate) fn qp_node(&self, qp: QpId) -> NodeId {
        NodeId(self.qps[qp.0 as usize].node)
    }

    /// A completion is waiting to be taken.
    #[inline(always)]
    pub(crate) fn has_notification(&self) -> bool {
        !self.cq_notify.is_empty()
    }

    /// Take the next completion notification.
    pub(crate) fn next_cq_event(&mut self) -> Option<NodeId> {
        self.cq_notify.pop_front().map(NodeId)
    }

    /// Completion notifications not yet taken.
    pub(crate) fn cq_pending(&self) -> usize {
        self.cq_notify.len()
    }

    /// Take one completion from `node`'s CQ.
    pub(crate) fn poll_cq(&mut self, node: NodeId) -> Option<Cqe> {
        self.cqs.get_mut(node.idx())?.pop_front()
    }

    /// Queue a completion on `node`'s CQ.
    fn push_cqe(&mut self, node: u32, cqe: Cqe) {
        self.cqs[node as usize].push_back(cqe);
        self.cq_notify.push_back(node);
    }

    /// A posted work request of `qp` reaches the HCA.
    pub(crate) fn qp_ready(&mut self, cx: &mut Cx, qp: u32) {
        let q = &mut self.qps[qp as usize];
        if let Some(w) = q.pending.pop_front() {
            q.sq.push_back(w);
            self.activate(cx, qp);
        }
    }

    fn activate(&mut self, cx: &mut Cx, qp: u32) {
        let q = &mut self.qps[qp as usize];
        if q.active {
            return;
        }
        q.active = true;
        let c = q.cap as usize;
        self.caps[c].active.push_back(&mut self.qps, qp);
        let gp = self.caps[c].gp;
        // The loop for every run (`event::Mode`): new work and ACKs start a
        // few percent of the sends, not worth a second copy.
        self.kick::<Generic>(cx, gp);
    }

    /// New work for CA port `gp`: send now if the line is idle, otherwise make
    /// sure it is woken when the line frees.
    #[inline]
    fn kick<M: Mode>(&mut self, cx: &mut Cx, gp: u32) {
        if cx.links.wants_look(&mut cx.core.q, cx.core.now, gp) {
            self.try_tx_idle::<M>(cx, gp);
        }
    }

    /// CA port `gp`'s line is idle and it was woken or has new work: send the
    /// next packet if one may go, else say when to look again.
    #[inline(never)]
    pub(crate) fn try_tx_idle<M: Mode>(&mut self, cx: &mut Cx, gp: u32) {
        cx.links.look(cx.core.now, gp);
        match self.pick(cx, gp) {
            Pick::Send(p) => self.send::<M>(cx, gp, p),
            Pick::Wait(t) => cx.links.idle(&mut cx.core.q, &mut cx.stats, gp, t),
        }
    }

    /// Send packet `p` from CA port `gp` now and plan the port's next look.
    fn send<M: Mode>(&mut self, cx: &mut Cx, gp: u32, p: PacketId) {
        let route = cx.fwd.stamp::<M>(&cx.links.ports[gp as usize], &cx.core.pkts[p]);
        let (end, pk) = cx
            .links
            .transmit::<M>(&mut cx.core, &mut cx.stats, &cx.ib, gp, p, route);
        // A CA sends only packets it made, which came over no link.
        debug_assert_eq!(pk.in_link, NONE);
        let ppm = cx.ib.hca_payload_ppm;
        let payload = if ppm == 0 || ppm >= 1_000_000 {
            0
        } else {
            cx.core.pkts.full(p).payload
        };
        let end = if payload == 0 {
            end
        } else {
            // The NIC's payload ceiling: the line idles until this packet's
            // payload has taken its time at `ppm` of the link's rate.
            let port = &mut cx.links.ports[gp as usize];
            let now = cx.core.now;
            let at_ceiling = Time(port.ser.time(payload).0 * 1_000_000 / u64::from(ppm));
            let paced = now + at_ceiling;
            if paced > end {
                port.busy_until = paced;
                paced
            } else {
                end
            }
        };
        self.plan_next::<M>(cx, gp, end);
    }

    /// After a send that ends at `end`, wake CA port `gp` when its next packet
    /// can go (see [`Links::plan_need`]); with several data VLs, at `end`.
    /// A port holding credits for the largest packet the run can make does not
    /// read its next packet (see [`Links::holds_max`]).
    #[inline]
    fn plan_next<M: Mode>(&mut self, cx: &mut Cx, gp: u32, end: Time) {
        if cx.links.one_vl::<M>() && cx.links.holds_max(gp as usize) {
            if self.has_work(gp) {
                cx.links.schedule_wake(&mut cx.core.q, gp, end);
            }
            return;
        }
        if !self.has_work(gp) {
            return;
        }
        let need = if cx.links.one_vl::<M>() {
            self.next_need(cx, gp)
        } else {
            None
        };
        cx.links.plan_need(&mut cx.core.q, &mut cx.stats, gp, end, need);
    }

    fn qp_has_work(&self, ib: &IbConfig, qp: u32) -> bool {
        let q = &self.qps[qp as usize];
        debug_assert_eq!(q.reading, !q.rresp.is_empty(), "QP {qp}: `reading` mirrors rresp");
        q.reading
            || q.sq
                .front()
                .is_some_and(|w| w.op != WrOp::Read || q.reads_out < ib.max_rd_atomic)
    }

    /// Prefetch what CA port `gp`'s next send reads after the port's record:
    /// the ACK at the head of its control queue, or the first active QP.
    #[inline(always)]
    pub(crate) fn prefetch_next(&self, pkts: &Packets, gp: u32) {
        let Some(c) = self.caps.get(self.ca_port[gp as usize] as usize) else {
            return;
        };
        if let Some(p) = c.ctrl.front() {
            crate::engine::prefetch::line(&pkts[p]);
        } else if let Some(q) = c.active.front().and_then(|qp| self.qps.get(qp as usize)) {
            // Its queues' line and the line a send reads (see `Qp`).
            let a = (q as *const Qp).cast::<u8>();
            crate::engine::prefetch::addr(a);
            crate::engine::prefetch::addr(a.wrapping_add(64));
        }
    }

    /// The address of QP `qp`'s receive line (see [`Qp`]), for a prefetch hint
    /// (any `qp` will do).
    #[inline(always)]
    pub(crate) fn rx_line_addr(&self, qp: u32) -> *const u8 {
        self.qps
            .as_ptr()
            .wrapping_add(qp as usize)
            .cast::<u8>()
            .wrapping_add(64)
    }

    /// CA port `gp` has ACKs or active QPs.
    #[inline]
    pub(crate) fn has_work(&self, gp: u32) -> bool {
        let c = &self.caps[self.ca_port[gp as usize] as usize];
        !c.ctrl.is_empty() || !c.active.is_empty()
    }

    /// VL and blocks of the packet CA port `gp` would send next (ACKs first, then
    /// the first active QP), if it is flow controlled.
    // Inlined into both event loops (`event::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md).
    #[inline(always)]
    fn next_need(&self, cx: &Cx, gp: u32) -> Option<(u8, u32)> {
        let c = &self.caps[self.ca_port[gp as usize] as usize];
        if let Some(p) = c.ctrl.front() {
            let pk = &cx.core.pkts[p];
            return (pk.flags & flag::VL15 == 0).then(|| (pk.vl, pk.blocks()));
        }
        if cx.ib.cc.is_some() {
            // Paced QPs: let the pick decide at the end of this packet.
            return None;
        }
        let qp = c.active.front()?;
        let q = &self.qps[qp as usize];
        let mtu = u64::from(cx.ib.mtu);
        let grh = cx.ib.grh;
        let job = if q.reading { q.rresp.front() } else { None };
        let wire = if let Some(j) = job {
            let rem = j.bytes - j.off;
            let op = match (j.off == 0, rem <= mtu) {
                (true, true) => Opcode::ReadResponseOnly,
                (true, false) => Opcode::ReadResponseFirst,
                (false, true) => Opcode::ReadResponseLast,
                (false, false) => Opcode::ReadResponseMiddle,
            };
            op.wire_bytes(rem.min(mtu) as u32, grh)
        } else {
            let w = q.sq.front()?;
            match w.op {
                WrOp::Read => Opcode::ReadRequest.wire_bytes(0, grh),
                WrOp::Ud { .. } if q.mgmt => return None,
                WrOp::Ud { .. } => Opcode::UdSendOnly.wire_bytes(w.bytes as u32, grh),
                WrOp::Send | WrOp::Write => {
                    let rem = w.bytes - q.sq_off;
                    // Only a WRITE's first packet carries the RETH.
                    let op = if w.op == WrOp::Write && q.sq_off == 0 {
                        Opcode::WriteFirst
                    } else {
                        Opcode::SendOnly
                    };
                    op.wire_bytes(rem.min(mtu) as u32, grh)
                }
            }
        };
        Some((q.vl, blocks(wire)))
    }

    fn new_packet(&mut self, core: &mut Core, pk: Packet) -> PacketId {
        core.ledger.created += 1;
        // The sending QP's route fits any packet to its peer's LID.
        let route = match self.qps.get(pk.src_qp as usize) {
            Some(q) if q.dlid == pk.dlid && pk.flags & flag::VL15 == 0 => q.route,
            _ => NO_ROUTE,
        };
        core.pkts.insert(pk, route)
    }

    /// The next packet for CA port `gp`: ACKs first, then the active QPs strictly
    /// round robin, one packet each (a QP whose packet lacks credits keeps its turn).
    // Inlined into both event loops (`event::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md).
    #[inline(always)]
    fn pick(&mut self, cx: &mut Cx, gp: u32) -> Pick {
        let c = self.ca_port[gp as usize] as usize;
        let now = cx.core.now;
        if let Some(p) = self.caps[c].ctrl.front() {
            let pk = cx.core.pkts[p];
            if has_credit(&cx.links, gp, pk.vl, u32::from(pk.wire), pk.flags & flag::VL15 != 0) {
                self.caps[c].ctrl.pop(&cx.core.pkts);
                return Pick::Send(p);
            }
            return Pick::Wait(cx.links.starve(&mut cx.stats, now, gp, pk.vl, pk.blocks()));
        }
        let mut paced = Time::NEVER;
        for _ in 0..self.caps[c].active.len {
            let qp = self.caps[c].active.pop_front(&self.qps).expect("counted");
            if cx.ib.cc.is_some() && self.qps[qp as usize].next_allowed > now {
                // IB CC holds this QP back: let the others go.
                paced = paced.min(self.qps[qp as usize].next_allowed);
                self.caps[c].active.push_back(&mut self.qps, qp);
                continue;
            }
            match self.qp_next(cx, gp, qp) {
                Build::Packet(p) => {
                    if let Some(step) = cx.ib.cc.as_ref().map(|cc| cc.ipd_step_ps) {
                        let idx = self.cc_index(&cx.ib, now, qp);
                        let wire = u32::from(cx.core.pkts[p].wire);
                        let end = now + cx.links.ports[gp as usize].ser.time(wire);
                        self.qps[qp as usize].next_allowed = end + Time(u64::from(idx) * step);
                    }
                    if self.qp_has_work(&cx.ib, qp) {
                        self.caps[c].active.push_back(&mut self.qps, qp);
                    } else {
                        self.qps[qp as usize].active = false;
                    }
                    return Pick::Send(p);
                }
                Build::NoCredit(nb) => {
                    // Strict round robin: the QP keeps its turn until credits come.
                    self.caps[c].active.push_front(&mut self.qps, qp);
                    let vl = self.qps[qp as usize].vl;
                    return Pick::Wait(cx.links.starve(&mut cx.stats, now, gp, vl, nb));
                }
                Build::Idle => self.qps[qp as usize].active = false,
            }
        }
        Pick::Wait(paced)
    }
    /// Build QP `qp`'s next packet if the port has credit for it.
    fn qp_next(&mut self, cx: &mut Cx, gp: u32, qp: u32) -> Build {
        let mtu = u64::from(cx.ib.mtu);
        let grh = cx.ib.grh;
        let now = cx.core.now;
        let q = &self.qps[qp as usize];
        let (vl, sl, slid, vl15) = (q.vl, q.sl, q.slid, q.mgmt);
        let base = Packet {
            slid,
            dlid: q.dlid,
            dst_qp: q.peer,
            src_qp: qp,
            sl,
            vl,
            in_link: NONE,
            flags: if grh { flag::GRH } else { 0 },
            pkey: q.pkey,
            ..Packet::default()
        };
        // READ responses first: the responder owes them.
        let job = if q.reading { q.rresp.front().copied() } else { None };
        if let Some(job) = job {
            let rem = job.bytes - job.off;
            let payload = rem.min(mtu) as u32;
            let (first, last) = (job.off == 0, rem <= mtu);
            let opcode = match (first, last) {
                (true, true) => Opcode::ReadResponseOnly,
                (true, false) => Opcode::ReadResponseFirst,
                (false, true) => Opcode::ReadResponseLast,
                (false, false) => Opcode::ReadResponseMiddle,
            };
            let wire = opcode.wire_bytes(payload, grh);
            if !has_credit(&cx.links, gp, vl, wire, false) {
                return Build::NoCredit(blocks(wire));
            }
            let p = self.new_packet(
                &mut cx.core,
                Packet {
                    dlid: job.to_lid,
                    dst_qp: job.to_qp,
                    psn: job.psn.0,
                    payload,
                    wire,
                    opcode,
                    ..base
                },
            );
            let q = &mut self.qps[qp as usize];
            let j = q.rresp.front_mut().expect("peeked");
            j.off += u64::from(payload);
            j.psn = j.psn.plus(1);
            if last {
                q.rresp.pop_front();
                q.reading = !q.rresp.is_empty();
            }
            return Build::Packet(p);
        }
        let Some(w) = q.sq.front().copied() else {
            return Build::Idle;
        };
        match w.op {
            WrOp::Read => {
                if q.reads_out >= cx.ib.max_rd_atomic {
                    return Build::Idle;
                }
                let wire = Opcode::ReadRequest.wire_bytes(0, grh);
                if !has_credit(&cx.links, gp, vl, wire, false) {
                    return Build::NoCredit(blocks(wire));
                }
                let npk = w.bytes.div_ceil(mtu).max(1) as u32;
                let psn = q.next_psn;
                let p = self.new_packet(
                    &mut cx.core,
                    Packet {
                        psn: psn.0,
                        // The RETH DMA length rides in `payload` for a READ request.
                        payload: w.bytes as u32,
                        wire,
                        opcode: Opcode::ReadRequest,
                        flags: base.flags | flag::ACK_REQ,
                        ..base
                    },
                );
                let q = &mut self.qps[qp as usize];
                q.sq.pop_front();
                q.next_psn = psn.plus(npk);
                q.reads_out += 1;
                q.unacked.push_back(Outstanding {
                    last: psn.plus(npk - 1),
                    wqe: w,
                    npk,
                    got: 0,
                });
                Build::Packet(p)
            }
            WrOp::Ud { dst, dlid } => {
                let payload = if vl15 { hdr::MAD } else { w.bytes as u32 };
                let wire = Opcode::UdSendOnly.wire_bytes(payload, grh);
                if !has_credit(&cx.links, gp, vl, wire, vl15) {
                    return Build::NoCredit(blocks(wire));
                }
                let p = self.new_packet(
                    &mut cx.core,
                    Packet {
                        dlid,
                        dst_qp: dst,
                        psn: q.next_psn.0,
                        payload,
                        wire,
                        opcode: Opcode::UdSendOnly,
                        flags: base.flags | if vl15 { flag::VL15 } else { 0 },
                        ..base
                    },
                );
                let q = &mut self.qps[qp as usize];
                q.sq.pop_front();
                q.next_psn = q.next_psn.plus(1);
                let node = q.node;
                let cqe = Cqe {
                    wr_id: w.wr_id,
                    qp: QpId(qp),
                    op: CqeOp::UdSend,
                    bytes: w.bytes,
                    posted: w.posted,
                    done: now,
                };
                self.push_cqe(node, cqe);
                Build::Packet(p)
            }
            WrOp::Send | WrOp::Write => {
                let rem = w.bytes - q.sq_off;
                let payload = rem.min(mtu) as u32;
                let (first, last) = (q.sq_off == 0, rem <= mtu);
                let send = w.op == WrOp::Send;
                let opcode = match (send, first, last) {
                    (true, true, true) => Opcode::SendOnly,
                    (true, true, false) => Opcode::SendFirst,
                    (true, false, true) => Opcode::SendLast,
                    (true, false, false) => Opcode::SendMiddle,
                    (false, true, true) => Opcode::WriteOnly,
                    (false, true, false) => Opcode::WriteFirst,
                    (false, false, true) => Opcode::WriteLast,
                    (false, false, false) => Opcode::WriteMiddle,
                };
                let wire = opcode.wire_bytes(payload, grh);
                if !has_credit(&cx.links, gp, vl, wire, false) {
                    return Build::NoCredit(blocks(wire));
                }
                let psn = q.next_psn;
                let p = self.new_packet(
                    &mut cx.core,
                    Packet {
                        psn: psn.0,
                        payload,
                        wire,
                        opcode,
                        flags: base.flags | if last { flag::ACK_REQ } else { 0 },
                        ..base
                    },
                );
                let q = &mut self.qps[qp as usize];
                q.next_psn = psn.plus(1);
                if last {
                    q.sq.pop_front();
                    q.sq_off = 0;
                    q.unacked.push_back(Outstanding {
                        last: psn,
                        wqe: w,
                        npk: 1,
                        got: 0,
                    });
                } else {
                    q.sq_off += u64::from(payload);
                }
                Build::Packet(p)
            }
        }
    }

    /// A packet's last byte reached CA port `in_gp` (plus the receive latency)
    /// over link `link` (named by its transmitting port).
    // Inlined into both event loops (`event::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md).
    #[inline(always)]
    pub(crate) fn arrive(&mut self, cx: &mut Cx, link: u32, in_gp: u32, p: PacketId) {
        cx.links.return_credits_now(&mut cx.core, link, p);
        let pk = cx.core.pkts.full(p);
        let cp = self.ca_rx[in_gp as usize];
        let node = cp.node;
        if pk.dlid < cp.lid || pk.dlid >= cp.lid.saturating_add(cp.lid_count) {
            cx.core.drop_packet(p, DropReason::UnknownDestination);
            return;
        }
        let qp = pk.dst_qp;
        if qp as usize >= self.qps.len() || self.qps[qp as usize].node != node {
            cx.core.drop_packet(p, DropReason::BadQp);
            return;
        }
        // Partitions (opt-in): a P_Key no entry of the port's table matches is
        // dropped and counted; management packets (VL15, QP0) are exempt.
        if self.pkeys.on && pk.flags & flag::VL15 == 0 && !self.pkeys.admits(in_gp, pk.pkey) {
            cx.core.drop_packet(p, DropReason::PKeyViolation);
            return;
        }
        cx.stats.delivered_payload += u64::from(pk.payload);
        match pk.opcode {
            Opcode::Acknowledge => {
                if pk.flags & flag::BECN != 0 {
                    self.cc_becn(cx, qp);
                }
                self.requester_ack(cx, qp, Psn(pk.psn))
            }
            Opcode::ReadRequest => self.responder_in_order(cx, qp, &pk),
            Opcode::UdSendOnly => {
                let cqe = Cqe {
                    wr_id: 0,
                    qp: QpId(qp),
                    op: CqeOp::Recv,
                    bytes: u64::from(pk.payload),
                    posted: cx.core.now,
                    done: cx.core.now,
                };
                self.push_cqe(node, cqe);
            }
            op if op.is_read_response() => self.requester_read_response(cx, qp, &pk),
            _ => self.responder_in_order(cx, qp, &pk),
        }
        cx.core.deliver_packet(p);
    }

    fn check_psn(&mut self, cx: &mut Cx, qp: u32, psn: Psn) {
        let q = &mut self.qps[qp as usize];
        if q.epsn != psn {
            cx.stats.psn_errors += 1;
        }
    }

    /// See [`crate::Sim::write_placed`].
    pub(crate) fn write_placed(&self, qp: QpId) -> Time {
        self.qps.get(qp.0 as usize).map_or(Time::ZERO, |q| q.write_placed)
    }

    fn responder_data(&mut self, cx: &mut Cx, qp: u32, pk: &Packet) {
        self.check_psn(cx, qp, Psn(pk.psn));
        let now = cx.core.now;
        let ack_every = cx.ib.ack_every;
        let q = &mut self.qps[qp as usize];
        q.epsn = Psn(pk.psn).plus(1);
        q.rx_payload += u64::from(pk.payload);
        let mut recv = None;
        if matches!(pk.opcode, Opcode::SendFirst | Opcode::SendOnly) {
            q.rx_bytes = 0;
            q.rx_first = now;
        } else if matches!(pk.opcode, Opcode::WriteLast | Opcode::WriteOnly) {
            q.write_placed = now;
        }
        if matches!(
            pk.opcode,
            Opcode::SendFirst | Opcode::SendMiddle | Opcode::SendLast | Opcode::SendOnly
        ) {
            q.rx_bytes += u64::from(pk.payload);
            if pk.opcode.is_last() {
                recv = Some(Cqe {
                    wr_id: 0,
                    qp: QpId(qp),
                    op: CqeOp::Recv,
                    bytes: q.rx_bytes,
                    posted: q.rx_first,
                    done: now,
                });
            }
        }
        q.since_ack += 1;
        let becn = pk.flags & flag::FECN != 0;
        let ack = becn || pk.flags & flag::ACK_REQ != 0 || q.since_ack >= ack_every;
        let node = q.node;
        if ack {
            q.since_ack = 0;
            self.send_ack(cx, qp, pk, becn);
        }
        if let Some(cqe) = recv {
            self.push_cqe(node, cqe);
        }
    }

    /// ACK everything through `pk`'s PSN; with `becn`, also tell the source it
    /// crossed a congested port (the BECN of IB CC, Annex A10.2.3).
    fn send_ack(&mut self, cx: &mut Cx, qp: u32, pk: &Packet, becn: bool) {
        let q = self.qps[qp as usize].clone_head();
        let grh = cx.ib.grh;
        let wire = Opcode::Acknowledge.wire_bytes(0, grh);
        let a = self.new_packet(
            &mut cx.core,
            Packet {
                slid: q.slid,
                dlid: pk.slid,
                dst_qp: pk.src_qp,
                src_qp: qp,
                psn: pk.psn,
                payload: 0,
                wire,
                in_link: NONE,
                opcode: Opcode::Acknowledge,
                sl: q.sl,
                vl: q.vl,
                flags: if grh { flag::GRH } else { 0 } | if becn { flag::BECN } else { 0 },
                pkey: q.pkey,
                ..Packet::default()
            },
        );
        let c = q.cap as usize;
        self.caps[c].ctrl.push(&mut cx.core.pkts, a);
        let gp = self.caps[c].gp;
        self.kick::<Generic>(cx, gp);
    }

    fn responder_read_request(&mut self, cx: &mut Cx, qp: u32, pk: &Packet) {
        self.check_psn(cx, qp, Psn(pk.psn));
        let mtu = u64::from(cx.ib.mtu);
        let q = &mut self.qps[qp as usize];
        let bytes = u64::from(pk.payload);
        let npk = bytes.div_ceil(mtu).max(1) as u32;
        q.epsn = Psn(pk.psn).plus(npk);
        q.since_ack = 0;
        q.rresp.push_back(ReadJob {
            psn: Psn(pk.psn),
            bytes,
            off: 0,
            to_qp: pk.src_qp,
            to_lid: pk.slid,
        });
        q.reading = true;
        self.activate(cx, qp);
    }

    /// Complete every SEND/WRITE whose last PSN is at or before `upto`.
    fn complete_through(&mut self, cx: &mut Cx, qp: u32, upto: Psn, inclusive: bool) {
        let now = cx.core.now;
        loop {
            let q = &mut self.qps[qp as usize];
            let Some(o) = q.unacked.front().copied() else { break };
            let covered = if inclusive { o.last.le(upto) } else { o.last.lt(upto) };
            if o.wqe.op == WrOp::Read || !covered {
                break;
            }
            q.unacked.pop_front();
            let node = q.node;
            let op = if o.wqe.op == WrOp::Send {
                CqeOp::Send
            } else {
                CqeOp::Write
            };
            let cqe = Cqe {
                wr_id: o.wqe.wr_id,
                qp: QpId(qp),
                op,
                bytes: o.wqe.bytes,
                posted: o.wqe.posted,
                done: now,
            };
            self.push_cqe(node, cqe);
        }
    }

    /// The QP's current CCT index after the recovery timer's decrements.
    fn cc_index(&mut self, ib: &IbConfig, now: Time, qp: u32) -> u16 {
        let Some(cc) = &ib.cc else { return 0 };
        let timer = cc.ccti_timer_ps;
        let q = &mut self.qps[qp as usize];
        let ticks = (now - q.ccti_at).0 / timer;
        if ticks > 0 {
            q.ccti = q.ccti.saturating_sub(ticks.min(u64::from(u16::MAX)) as u16);
            q.ccti_at = if q.ccti == 0 {
                now
            } else {
                q.ccti_at + Time(ticks * timer)
            };
        }
        q.ccti
    }

    /// A BECN reached QP `qp`: slow it down (Annex A10.3.1).
    fn cc_becn(&mut self, cx: &mut Cx, qp: u32) {
        let Some(cc) = cx.ib.cc.clone() else { return };
        cx.stats.becn_received += 1;
        let idx = self.cc_index(&cx.ib, cx.core.now, qp);
        let q = &mut self.qps[qp as usize];
        if idx == 0 {
            q.ccti_at = cx.core.now;
        }
        q.ccti = (idx + cc.ccti_increase).min(cc.ccti_limit);
    }

    fn requester_ack(&mut self, cx: &mut Cx, qp: u32, psn: Psn) {
        let q = &mut self.qps[qp as usize];
        if q.acked.is_none_or(|a| a.lt(psn)) {
            q.acked = Some(psn);
        }
        self.complete_through(cx, qp, psn, true);
    }

    fn requester_read_response(&mut self, cx: &mut Cx, qp: u32, pk: &Packet) {
        // A READ response implicitly ACKs every earlier request (IBA vol. 1 §9.7.5.1.2);
        // the responder sent it after taking all of them, whatever order it arrives in.
        let psn = Psn(pk.psn);
        self.complete_through(cx, qp, psn, false);
        let q = &mut self.qps[qp as usize];
        // The READ this response belongs to (responses may arrive out of order
        // under adaptive routing): its PSN range is last-npk+1 ..= last.
        let hit = q.unacked.iter_mut().find(|o| {
            o.wqe.op == WrOp::Read && Psn(o.last.0.wrapping_sub(o.npk - 1) & 0x00ff_ffff).le(psn) && psn.le(o.last)
        });
        match hit {
            Some(o) if o.got < o.npk => o.got += 1,
            _ => {
                cx.stats.psn_errors += 1;
                return;
            }
        }
        let now = cx.core.now;
        let mut completed = false;
        loop {
            let q = &mut self.qps[qp as usize];
            match q.unacked.front().copied() {
                Some(o) if o.wqe.op == WrOp::Read && o.got == o.npk => {
                    q.unacked.pop_front();
                    q.reads_out -= 1;
                    let node = q.node;
                    let cqe = Cqe {
                        wr_id: o.wqe.wr_id,
                        qp: QpId(qp),
                        op: CqeOp::Read,
                        bytes: o.wqe.bytes,
                        posted: o.wqe.posted,
                        done: now,
                    };
                    self.push_cqe(node, cqe);
                    completed = true;
                    // Requests behind the READ that were ACKed meanwhile complete now, in order.
                    if let Some(a) = self.qps[qp as usize].acked {
                        self.complete_through(cx, qp, a, true);
                    }
                }
                _ => break,
            }
        }
        if completed && self.qp_has_work(&cx.ib, qp) {
            self.activate(cx, qp);
        }
    }

    /// Requests reach the responder in PSN order on a static route; under adaptive
    /// routing they may not. Hold early packets (the HCA has placed their data;
    /// ACKs and completions follow PSN order) and take them once the gap fills.
    fn responder_in_order(&mut self, cx: &mut Cx, qp: u32, pk: &Packet) {
        if !cx.ib.adaptive_routing {
            self.responder_take(cx, qp, pk);
            return;
        }
        let q = &mut self.qps[qp as usize];
        let off = pk.psn.wrapping_sub(q.epsn.0) & 0x00ff_ffff;
        if off >= 0x80_0000 {
            // Behind the expected PSN: a duplicate, which a lossless fabric never makes.
            cx.stats.psn_errors += 1;
            return;
        }
        if off > 0 {
            q.reorder.insert(q.epsn_ext + u64::from(off), *pk);
            cx.stats.reordered += 1;
            return;
        }
        self.responder_take(cx, qp, pk);
        loop {
            let q = &mut self.qps[qp as usize];
            let Some((&k, _)) = q.reorder.first_key_value() else {
                break;
            };
            if k != q.epsn_ext {
                break;
            }
            let next = q.reorder.remove(&k).expect("present");
            self.responder_take(cx, qp, &next);
        }
    }

    /// Process one request packet in PSN order.
    fn responder_take(&mut self, cx: &mut Cx, qp: u32, pk: &Packet) {
        let before = self.qps[qp as usize].epsn;
        if pk.opcode == Opcode::ReadRequest {
            self.responder_read_request(cx, qp, pk);
        } else {
            self.responder_data(cx, qp, pk);
        }
        if cx.ib.adaptive_routing {
            // Only the reorder buffer reads it.
            let q = &mut self.qps[qp as usize];
            q.epsn_ext += u64::from(q.epsn.0.wrapping_sub(before.0) & 0x00ff_ffff);
        }
    }
}

/// Transmitter `gp` holds the credits for a packet of `wire` bytes on `vl`
/// (VL15 needs none).
#[inline]
fn has_credit(links: &Links, gp: u32, vl: u8, wire: u32, vl15: bool) -> bool {
    vl15 || links.held(gp as usize, vl as usize) >= blocks(wire) as i32
}

/// The SL the SM's path records give `slid` → `dlid` (0 when they give none).
fn path_sl(tables: &RoutingTables, slid: u16, dlid: u16) -> u8 {
    let Some(ps) = &tables.path_sl else { return 0 };
    let n = ps.lids.len();
    let si = ps.lids.iter().position(|l| l.0 == slid);
    let di = ps.lids.iter().position(|l| l.0 == dlid);
    match (si, di) {
        (Some(s), Some(d)) => ps.sl.get(s * n + d).copied().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_wraps_and_compares_serially() {
        let a = Psn(0xff_fffe);
        assert_eq!(a.plus(3), Psn(1));
        assert!(a.le(a.plus(3)));
        assert!(a.lt(a.plus(3)));
        assert!(!a.plus(3).le(a));
    }
}
