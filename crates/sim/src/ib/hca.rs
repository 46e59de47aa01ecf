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

use std::collections::VecDeque;

use fabric::NodeId;

use crate::SimError;
use crate::engine::ring::HeadRing;
use crate::engine::{DropReason, PacketId, Time};
use crate::net::Pick;
use crate::packet::{NO_ROUTE, Opcode, Packet, blocks, flag, hdr};
use crate::sim::{Event, NONE, NodeModel, PktList, Sim};

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
}

impl Default for QpOptions {
    fn default() -> Self {
        QpOptions {
            port: 1,
            peer_port: 1,
            sl: None,
            mgmt: false,
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
/// was one more dependent miss before the QP's). Its node and LIDs are in
/// [`Sim::ca_rx`], by `gp`.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct CaPort {
    pub(crate) gp: u32,
    /// ACKs waiting to go, ahead of data (threaded through the packets' `next`).
    pub(crate) ctrl: PktList,
    /// QPs with something to send, served round robin one packet at a time.
    active: QpList,
}

const _: () = assert!(std::mem::size_of::<CaPort>() == 64);

/// A CA port's node and LID range (base LID and 2^LMC LIDs), in a table of 8
/// bytes a port (`Sim::ca_rx`, by global port): a receive checks a packet
/// against it without reading the port's [`CaPort`] record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CaRx {
    pub(crate) node: u32,
    pub(crate) lid: u16,
    pub(crate) lid_count: u16,
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
    pub(crate) rx_payload: u64,
    next_psn: Psn,
    /// The QP behind this one in its port's round robin ([`NONE`] at the tail).
    next_active: u32,
    peer: u32,
    /// The forwarding decisions its packets to `dlid` meet, in
    /// [`Sim::routes`] ([`NO_ROUTE`] if not precomputed).
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

/// The addressing fields of a QP (cheap to copy out before mutating the world).
#[derive(Clone, Copy)]
struct QpHead {
    slid: u16,
    sl: u8,
    vl: u8,
    cap: u32,
}

impl Qp {
    fn clone_head(&self) -> QpHead {
        QpHead {
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

impl Sim {
    /// Index every cabled CA port.
    pub(crate) fn build_ca_ports(&mut self) {
        for n in 0..self.node_model.len() {
            if self.node_model[n] != NodeModel::IbHca {
                continue;
            }
            let lmc = self.tables.lmc;
            for gp in self.port_base[n]..self.port_base[n + 1] {
                let port = self.ports[gp as usize].port_num;
                if port == 0 || self.ports[gp as usize].peer == NONE {
                    continue;
                }
                let lid = self.tables.lid_of(NodeId(n as u32), port).map_or(0, |l| l.0);
                self.ca_port[gp as usize] = self.caps.len() as u32;
                self.ca_rx[gp as usize] = CaRx {
                    node: n as u32,
                    lid,
                    lid_count: 1 << lmc,
                };
                self.caps.push(CaPort {
                    gp,
                    ctrl: PktList::default(),
                    active: QpList::default(),
                });
            }
        }
    }

    fn ca_port_of(&self, n: NodeId, port: u8) -> Result<u32, SimError> {
        let name = || self.node_name.get(n.idx()).cloned().unwrap_or_default();
        if n.idx() >= self.node_model.len() {
            return Err(SimError::NoNode(n.0));
        }
        if self.node_model[n.idx()] != NodeModel::IbHca {
            return Err(SimError::NotCa { node: name() });
        }
        let gp = self.port_base[n.idx()] + u32::from(port);
        if gp >= self.port_base[n.idx() + 1] || port == 0 || self.ports[gp as usize].peer == NONE {
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

    /// VL of `sl` leaving CA port (`node`, `port`): the SM's SL2VL for the port if
    /// it programmed one (`sl2vl[node][0][port]`), VL 0 when it programmed none.
    fn ca_vl(&self, node: usize, port: u8, sl: u8) -> u8 {
        match &self.sl2vl {
            None => 0,
            Some(t) => t
                .get(node)
                .and_then(|x| x.first())
                .and_then(|x| x.get(port as usize))
                .map_or((sl as usize % self.nvl) as u8, |m| {
                    m[(sl & 15) as usize].min(self.nvl as u8 - 1)
                }),
        }
    }

    fn path_sl(&self, slid: u16, dlid: u16) -> u8 {
        let Some(ps) = &self.tables.path_sl else { return 0 };
        let n = ps.lids.len();
        let si = ps.lids.iter().position(|l| l.0 == slid);
        let di = ps.lids.iter().position(|l| l.0 == dlid);
        match (si, di) {
            (Some(s), Some(d)) => ps.sl.get(s * n + d).copied().unwrap_or(0),
            _ => 0,
        }
    }

    fn new_qp(&mut self, cap: u32, kind: QpKind, peer: u32, dlid: u16, sl: u8, mgmt: bool) -> u32 {
        let gp = self.caps[cap as usize].gp;
        let port = self.ports[gp as usize].port_num;
        let CaRx { node, lid: slid, .. } = self.ca_rx[gp as usize];
        let vl = self.ca_vl(node as usize, port, sl);
        let route = self.build_route(gp, dlid);
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

    /// Create two connected RC QPs, one on `a` and one on `b` (like
    /// `ibv_create_qp` on each side plus the INIT→RTR→RTS transitions).
    pub fn create_rc_pair(&mut self, a: NodeId, b: NodeId, o: &QpOptions) -> Result<(QpId, QpId), SimError> {
        if self.qps.len() + 2 >= crate::sim::MAX_ID {
            return Err(SimError::BadPost {
                qp: NONE,
                why: "too many QPs (2^25 at most)".into(),
            });
        }
        let ca = self.ca_port_of(a, o.port)?;
        let cb = self.ca_port_of(b, o.peer_port)?;
        let (la, lb) = (self.ca_lid(ca), self.ca_lid(cb));
        let sl_ab = o.sl.unwrap_or_else(|| self.path_sl(la, lb));
        let sl_ba = o.sl.unwrap_or_else(|| self.path_sl(lb, la));
        let qa = self.new_qp(ca, QpKind::Rc, NONE, lb, sl_ab, false);
        let qb = self.new_qp(cb, QpKind::Rc, qa, la, sl_ba, false);
        self.qps[qa as usize].peer = qb;
        Ok((QpId(qa), QpId(qb)))
    }

    /// Create a UD QP on (`node`, `port`).
    pub fn create_ud(&mut self, node: NodeId, o: &QpOptions) -> Result<QpId, SimError> {
        if self.qps.len() + 1 >= crate::sim::MAX_ID {
            return Err(SimError::BadPost {
                qp: NONE,
                why: "too many QPs (2^25 at most)".into(),
            });
        }
        let c = self.ca_port_of(node, o.port)?;
        Ok(QpId(self.new_qp(c, QpKind::Ud, NONE, 0, o.sl.unwrap_or(0), o.mgmt)))
    }

    /// The LID of (`node`, `port`) as this run sees it.
    pub fn lid(&self, node: NodeId, port: u8) -> Option<u16> {
        self.tables.lid_of(node, port).map(|l| l.0)
    }

    fn post(&mut self, qp: QpId, op: WrOp, bytes: u64, wr_id: u64) -> Result<(), SimError> {
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
                let max = if q.mgmt {
                    u64::from(hdr::MAD)
                } else {
                    u64::from(self.ib.mtu)
                };
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
            posted: self.now,
        };
        self.qps[qp.0 as usize].pending.push_back(w);
        self.q
            .push(self.now + Time(self.ib.hca_tx_latency_ps), Event::QpReady { qp: qp.0 });
        Ok(())
    }

    /// Post a SEND of `bytes` (`u64::MAX` = an endless stream).
    pub fn post_send(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.post(qp, WrOp::Send, bytes, wr_id)
    }

    /// Post an RDMA WRITE of `bytes` (`u64::MAX` = an endless stream).
    pub fn post_write(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.post(qp, WrOp::Write, bytes, wr_id)
    }

    /// Post an RDMA READ of `bytes`.
    pub fn post_read(&mut self, qp: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        self.post(qp, WrOp::Read, bytes, wr_id)
    }

    /// Post a UD SEND of `bytes` to UD QP `dst`.
    pub fn post_ud_send(&mut self, qp: QpId, dst: QpId, bytes: u64, wr_id: u64) -> Result<(), SimError> {
        let d = self.qps.get(dst.0 as usize).ok_or(SimError::BadPost {
            qp: dst.0,
            why: "no such QP".into(),
        })?;
        let dlid = self.ca_lid(d.cap);
        self.post(qp, WrOp::Ud { dst: dst.0, dlid }, bytes, wr_id)
    }

    /// Payload bytes QP `qp` has received as a responder (SEND and WRITE data).
    pub fn qp_rx_bytes(&self, qp: QpId) -> u64 {
        self.qps.get(qp.0 as usize).map_or(0, |q| q.rx_payload)
    }

    /// The node a QP lives on.
    pub fn qp_node(&self, qp: QpId) -> NodeId {
        NodeId(self.qps[qp.0 as usize].node)
    }

    pub(crate) fn qp_ready(&mut self, qp: u32) {
        let q = &mut self.qps[qp as usize];
        if let Some(w) = q.pending.pop_front() {
            q.sq.push_back(w);
            self.activate(qp);
        }
    }

    fn activate(&mut self, qp: u32) {
        let q = &mut self.qps[qp as usize];
        if q.active {
            return;
        }
        q.active = true;
        let c = q.cap as usize;
        self.caps[c].active.push_back(&mut self.qps, qp);
        let gp = self.caps[c].gp;
        // The loop for every run (`sim::Mode`): new work and ACKs start a
        // few percent of the sends, not worth a second copy.
        self.kick::<crate::sim::Generic>(gp);
    }

    fn qp_has_work(&self, qp: u32) -> bool {
        let q = &self.qps[qp as usize];
        debug_assert_eq!(q.reading, !q.rresp.is_empty(), "QP {qp}: `reading` mirrors rresp");
        q.reading
            || q.sq
                .front()
                .is_some_and(|w| w.op != WrOp::Read || q.reads_out < self.ib.max_rd_atomic)
    }

    /// Prefetch what CA port `c`'s next send reads after the port's record:
    /// the ACK at the head of its control queue, or the first active QP.
    #[inline(always)]
    pub(crate) fn prefetch_ca_next(&self, c: &CaPort) {
        if let Some(p) = c.ctrl.front() {
            crate::engine::prefetch::line(&self.pkts[p]);
        } else if let Some(q) = c.active.front().and_then(|qp| self.qps.get(qp as usize)) {
            // Its queues' line and the line a send reads (see `Qp`).
            let a = (q as *const Qp).cast::<u8>();
            crate::engine::prefetch::addr(a);
            crate::engine::prefetch::addr(a.wrapping_add(64));
        }
    }

    pub(crate) fn hca_has_work(&self, gp: u32) -> bool {
        let c = &self.caps[self.ca_port[gp as usize] as usize];
        !c.ctrl.is_empty() || !c.active.is_empty()
    }

    /// VL and blocks of the packet CA port `gp` would send next (ACKs first, then
    /// the first active QP), if it is flow controlled.
    // Inlined into both event loops (`sim::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md, session 9).
    #[inline(always)]
    pub(crate) fn hca_next_need(&self, gp: u32) -> Option<(u8, u32)> {
        let c = &self.caps[self.ca_port[gp as usize] as usize];
        if let Some(p) = c.ctrl.front() {
            let pk = &self.pkts[p];
            return (pk.flags & flag::VL15 == 0).then(|| (pk.vl, pk.blocks()));
        }
        if self.ib.cc.is_some() {
            // Paced QPs: let the pick decide at the end of this packet.
            return None;
        }
        let qp = c.active.front()?;
        let q = &self.qps[qp as usize];
        let mtu = u64::from(self.ib.mtu);
        let grh = self.ib.grh;
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

    fn new_packet(&mut self, pk: Packet) -> PacketId {
        self.ledger.created += 1;
        // The sending QP's route fits any packet to its peer's LID.
        let route = match self.qps.get(pk.src_qp as usize) {
            Some(q) if q.dlid == pk.dlid && pk.flags & flag::VL15 == 0 => q.route,
            _ => NO_ROUTE,
        };
        self.pkts.insert(pk, route)
    }

    #[inline]
    fn has_credit(&self, gp: u32, vl: u8, wire: u32, vl15: bool) -> bool {
        vl15 || self.held(gp as usize, vl as usize) >= blocks(wire) as i32
    }

    /// The next packet for CA port `gp`: ACKs first, then the active QPs strictly
    /// round robin, one packet each (a QP whose packet lacks credits keeps its turn).
    // Inlined into both event loops (`sim::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md, session 9).
    #[inline(always)]
    pub(crate) fn hca_pick(&mut self, gp: u32) -> Pick {
        let c = self.ca_port[gp as usize] as usize;
        if let Some(p) = self.caps[c].ctrl.front() {
            let pk = self.pkts[p];
            if self.has_credit(gp, pk.vl, u32::from(pk.wire), pk.flags & flag::VL15 != 0) {
                self.caps[c].ctrl.pop(&self.pkts);
                return Pick::Send(p);
            }
            return Pick::Wait(self.starve(gp, pk.vl, pk.blocks()));
        }
        let mut paced = Time::NEVER;
        for _ in 0..self.caps[c].active.len {
            let qp = self.caps[c].active.pop_front(&self.qps).expect("counted");
            if self.ib.cc.is_some() && self.qps[qp as usize].next_allowed > self.now {
                // IB CC holds this QP back: let the others go.
                paced = paced.min(self.qps[qp as usize].next_allowed);
                self.caps[c].active.push_back(&mut self.qps, qp);
                continue;
            }
            match self.qp_next(gp, qp) {
                Build::Packet(p) => {
                    if let Some(step) = self.ib.cc.as_ref().map(|cc| cc.ipd_step_ps) {
                        let idx = self.cc_index(qp);
                        let wire = u32::from(self.pkts[p].wire);
                        let end = self.now + self.ports[gp as usize].ser.time(wire);
                        self.qps[qp as usize].next_allowed = end + Time(u64::from(idx) * step);
                    }
                    if self.qp_has_work(qp) {
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
                    return Pick::Wait(self.starve(gp, vl, nb));
                }
                Build::Idle => self.qps[qp as usize].active = false,
            }
        }
        Pick::Wait(paced)
    }

    /// Build QP `qp`'s next packet if the port has credit for it.
    fn qp_next(&mut self, gp: u32, qp: u32) -> Build {
        let mtu = u64::from(self.ib.mtu);
        let grh = self.ib.grh;
        let now = self.now;
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
            if !self.has_credit(gp, vl, wire, false) {
                return Build::NoCredit(blocks(wire));
            }
            let p = self.new_packet(Packet {
                dlid: job.to_lid,
                dst_qp: job.to_qp,
                psn: job.psn.0,
                payload,
                wire,
                opcode,
                ..base
            });
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
                if q.reads_out >= self.ib.max_rd_atomic {
                    return Build::Idle;
                }
                let wire = Opcode::ReadRequest.wire_bytes(0, grh);
                if !self.has_credit(gp, vl, wire, false) {
                    return Build::NoCredit(blocks(wire));
                }
                let npk = w.bytes.div_ceil(mtu).max(1) as u32;
                let psn = q.next_psn;
                let p = self.new_packet(Packet {
                    psn: psn.0,
                    // The RETH DMA length rides in `payload` for a READ request.
                    payload: w.bytes as u32,
                    wire,
                    opcode: Opcode::ReadRequest,
                    flags: base.flags | flag::ACK_REQ,
                    ..base
                });
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
                if !self.has_credit(gp, vl, wire, vl15) {
                    return Build::NoCredit(blocks(wire));
                }
                let p = self.new_packet(Packet {
                    dlid,
                    dst_qp: dst,
                    psn: q.next_psn.0,
                    payload,
                    wire,
                    opcode: Opcode::UdSendOnly,
                    flags: base.flags | if vl15 { flag::VL15 } else { 0 },
                    ..base
                });
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
                if !self.has_credit(gp, vl, wire, false) {
                    return Build::NoCredit(blocks(wire));
                }
                let psn = q.next_psn;
                let p = self.new_packet(Packet {
                    psn: psn.0,
                    payload,
                    wire,
                    opcode,
                    flags: base.flags | if last { flag::ACK_REQ } else { 0 },
                    ..base
                });
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
    // Inlined into both event loops (`sim::Mode`): as a call it cost the
    // `Fast` loop half its gain (docs/PERFORMANCE.md, session 9).
    #[inline(always)]
    pub(crate) fn hca_arrive(&mut self, link: u32, in_gp: u32, p: PacketId) {
        self.return_credits_now(link, p);
        let pk = self.pkts.full(p);
        let cp = self.ca_rx[in_gp as usize];
        let node = cp.node;
        if pk.dlid < cp.lid || pk.dlid >= cp.lid.saturating_add(cp.lid_count) {
            self.drop_packet(p, DropReason::UnknownDestination);
            return;
        }
        let qp = pk.dst_qp;
        if qp as usize >= self.qps.len() || self.qps[qp as usize].node != node {
            self.drop_packet(p, DropReason::BadQp);
            return;
        }
        self.stats.delivered_payload += u64::from(pk.payload);
        match pk.opcode {
            Opcode::Acknowledge => {
                if pk.flags & flag::BECN != 0 {
                    self.cc_becn(qp);
                }
                self.requester_ack(qp, Psn(pk.psn))
            }
            Opcode::ReadRequest => self.responder_in_order(qp, &pk),
            Opcode::UdSendOnly => {
                let cqe = Cqe {
                    wr_id: 0,
                    qp: QpId(qp),
                    op: CqeOp::Recv,
                    bytes: u64::from(pk.payload),
                    posted: self.now,
                    done: self.now,
                };
                self.push_cqe(node, cqe);
            }
            op if op.is_read_response() => self.requester_read_response(qp, &pk),
            _ => self.responder_in_order(qp, &pk),
        }
        self.deliver_packet(p);
    }

    fn check_psn(&mut self, qp: u32, psn: Psn) {
        let q = &mut self.qps[qp as usize];
        if q.epsn != psn {
            self.stats.psn_errors += 1;
        }
    }

    fn responder_data(&mut self, qp: u32, pk: &Packet) {
        self.check_psn(qp, Psn(pk.psn));
        let now = self.now;
        let ack_every = self.ib.ack_every;
        let q = &mut self.qps[qp as usize];
        q.epsn = Psn(pk.psn).plus(1);
        q.rx_payload += u64::from(pk.payload);
        let mut recv = None;
        if matches!(pk.opcode, Opcode::SendFirst | Opcode::SendOnly) {
            q.rx_bytes = 0;
            q.rx_first = now;
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
            self.send_ack(qp, pk, becn);
        }
        if let Some(cqe) = recv {
            self.push_cqe(node, cqe);
        }
    }

    /// ACK everything through `pk`'s PSN; with `becn`, also tell the source it
    /// crossed a congested port (the BECN of IB CC, Annex A10.2.3).
    fn send_ack(&mut self, qp: u32, pk: &Packet, becn: bool) {
        let q = self.qps[qp as usize].clone_head();
        let grh = self.ib.grh;
        let wire = Opcode::Acknowledge.wire_bytes(0, grh);
        let a = self.new_packet(Packet {
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
            ..Packet::default()
        });
        let c = q.cap as usize;
        self.caps[c].ctrl.push(&mut self.pkts, a);
        let gp = self.caps[c].gp;
        self.kick::<crate::sim::Generic>(gp);
    }

    fn responder_read_request(&mut self, qp: u32, pk: &Packet) {
        self.check_psn(qp, Psn(pk.psn));
        let mtu = u64::from(self.ib.mtu);
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
        self.activate(qp);
    }

    /// Complete every SEND/WRITE whose last PSN is at or before `upto`.
    fn complete_through(&mut self, qp: u32, upto: Psn, inclusive: bool) {
        let now = self.now;
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
    fn cc_index(&mut self, qp: u32) -> u16 {
        let Some(cc) = &self.ib.cc else { return 0 };
        let timer = cc.ccti_timer_ps;
        let now = self.now;
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
    fn cc_becn(&mut self, qp: u32) {
        let Some(cc) = self.ib.cc.clone() else { return };
        self.stats.becn_received += 1;
        let idx = self.cc_index(qp);
        let q = &mut self.qps[qp as usize];
        if idx == 0 {
            q.ccti_at = self.now;
        }
        q.ccti = (idx + cc.ccti_increase).min(cc.ccti_limit);
    }

    fn requester_ack(&mut self, qp: u32, psn: Psn) {
        let q = &mut self.qps[qp as usize];
        if q.acked.is_none_or(|a| a.lt(psn)) {
            q.acked = Some(psn);
        }
        self.complete_through(qp, psn, true);
    }

    fn requester_read_response(&mut self, qp: u32, pk: &Packet) {
        // A READ response implicitly ACKs every earlier request (IBA vol. 1 §9.7.5.1.2);
        // the responder sent it after taking all of them, whatever order it arrives in.
        let psn = Psn(pk.psn);
        self.complete_through(qp, psn, false);
        let q = &mut self.qps[qp as usize];
        // The READ this response belongs to (responses may arrive out of order
        // under adaptive routing): its PSN range is last-npk+1 ..= last.
        let hit = q.unacked.iter_mut().find(|o| {
            o.wqe.op == WrOp::Read && Psn(o.last.0.wrapping_sub(o.npk - 1) & 0x00ff_ffff).le(psn) && psn.le(o.last)
        });
        match hit {
            Some(o) if o.got < o.npk => o.got += 1,
            _ => {
                self.stats.psn_errors += 1;
                return;
            }
        }
        let now = self.now;
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
                        self.complete_through(qp, a, true);
                    }
                }
                _ => break,
            }
        }
        if completed && self.qp_has_work(qp) {
            self.activate(qp);
        }
    }

    /// Requests reach the responder in PSN order on a static route; under adaptive
    /// routing they may not. Hold early packets (the HCA has placed their data;
    /// ACKs and completions follow PSN order) and take them once the gap fills.
    fn responder_in_order(&mut self, qp: u32, pk: &Packet) {
        if !self.ib.adaptive_routing {
            self.responder_take(qp, pk);
            return;
        }
        let q = &mut self.qps[qp as usize];
        let off = pk.psn.wrapping_sub(q.epsn.0) & 0x00ff_ffff;
        if off >= 0x80_0000 {
            // Behind the expected PSN: a duplicate, which a lossless fabric never makes.
            self.stats.psn_errors += 1;
            return;
        }
        if off > 0 {
            q.reorder.insert(q.epsn_ext + u64::from(off), *pk);
            self.stats.reordered += 1;
            return;
        }
        self.responder_take(qp, pk);
        loop {
            let q = &mut self.qps[qp as usize];
            let Some((&k, _)) = q.reorder.first_key_value() else {
                break;
            };
            if k != q.epsn_ext {
                break;
            }
            let next = q.reorder.remove(&k).expect("present");
            self.responder_take(qp, &next);
        }
    }

    /// Process one request packet in PSN order.
    fn responder_take(&mut self, qp: u32, pk: &Packet) {
        let before = self.qps[qp as usize].epsn;
        if pk.opcode == Opcode::ReadRequest {
            self.responder_read_request(qp, pk);
        } else {
            self.responder_data(qp, pk);
        }
        if self.ib.adaptive_routing {
            // Only the reorder buffer reads it.
            let q = &mut self.qps[qp as usize];
            q.epsn_ext += u64::from(q.epsn.0.wrapping_sub(before.0) & 0x00ff_ffff);
        }
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
