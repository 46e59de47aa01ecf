//! The simulated packet: what the models need from the headers, plus the on-wire
//! size computed from the real header stack (IBA vol. 1 §5.4 and §9).
//!
//! Packets live in a `Packets` store, split in two: the 32 bytes the
//! forwarding path reads at every hop (`PktHot`: two packets per cache line)
//! and the transport fields only the end nodes read (`PktCold`). Nothing is
//! allocated per packet once the store has grown to the run's peak. A packet is
//! always in at most one queue (a link, a switch output queue), so the queues are
//! lists threaded through the packets' `next` field (`PktList`).

use crate::engine::{PacketId, Time};

/// "None" for `u32` ids.
pub(crate) const NONE: u32 = u32::MAX;

/// BTH opcodes the models send (IBA vol. 1 §9.2, Table 38: RC codes 0x00-0x11,
/// UD SEND Only 0x64). Stored as the real code so the pcap writer can emit it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[repr(u8)]
pub enum Opcode {
    SendFirst = 0x00,
    SendMiddle = 0x01,
    SendLast = 0x02,
    #[default]
    SendOnly = 0x04,
    WriteFirst = 0x06,
    WriteMiddle = 0x07,
    WriteLast = 0x08,
    WriteOnly = 0x0a,
    ReadRequest = 0x0c,
    ReadResponseFirst = 0x0d,
    ReadResponseMiddle = 0x0e,
    ReadResponseLast = 0x0f,
    ReadResponseOnly = 0x10,
    Acknowledge = 0x11,
    UdSendOnly = 0x64,
}

/// Header sizes in bytes (IBA vol. 1 §5.4, §7.7, §9.2-§9.3).
pub mod hdr {
    /// Local Route Header.
    pub const LRH: u32 = 8;
    /// Global Route Header (present when the packet is globally routed).
    pub const GRH: u32 = 40;
    /// Base Transport Header.
    pub const BTH: u32 = 12;
    /// RDMA Extended Transport Header (WRITE First/Only, READ Request).
    pub const RETH: u32 = 16;
    /// ACK Extended Transport Header (ACKs, READ Response First/Last/Only).
    pub const AETH: u32 = 4;
    /// Datagram Extended Transport Header (UD).
    pub const DETH: u32 = 8;
    /// Invariant CRC.
    pub const ICRC: u32 = 4;
    /// Variant CRC.
    pub const VCRC: u32 = 2;
    /// A MAD (SMP/GMP) payload.
    pub const MAD: u32 = 256;
}

impl Opcode {
    /// Extension-header bytes this opcode carries after the BTH.
    pub fn ext_header_bytes(self) -> u32 {
        match self {
            Opcode::WriteFirst | Opcode::WriteOnly | Opcode::ReadRequest => hdr::RETH,
            Opcode::ReadResponseFirst | Opcode::ReadResponseLast | Opcode::ReadResponseOnly | Opcode::Acknowledge => {
                hdr::AETH
            }
            Opcode::UdSendOnly => hdr::DETH,
            _ => 0,
        }
    }

    /// Bytes on the wire for a packet of this opcode carrying `payload` bytes:
    /// LRH + \[GRH\] + BTH + extension headers + payload padded to 4 bytes (BTH
    /// PadCnt) + ICRC + VCRC.
    pub fn wire_bytes(self, payload: u32, grh: bool) -> u32 {
        hdr::LRH
            + if grh { hdr::GRH } else { 0 }
            + hdr::BTH
            + self.ext_header_bytes()
            + payload.div_ceil(4) * 4
            + hdr::ICRC
            + hdr::VCRC
    }

    /// True for requests that carry data to the responder.
    pub fn is_request_data(self) -> bool {
        (self as u8) <= 0x0b
    }

    /// True for READ responses.
    pub fn is_read_response(self) -> bool {
        matches!(
            self,
            Opcode::ReadResponseFirst
                | Opcode::ReadResponseMiddle
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
        )
    }

    /// True for the last (or only) packet of a message.
    pub fn is_last(self) -> bool {
        matches!(
            self,
            Opcode::SendLast
                | Opcode::SendOnly
                | Opcode::WriteLast
                | Opcode::WriteOnly
                | Opcode::ReadResponseLast
                | Opcode::ReadResponseOnly
                | Opcode::UdSendOnly
        )
    }
}

/// The largest packet on the wire with path MTU `mtu`: a WRITE First (the
/// largest extension header, the RETH) with a full payload and a GRH. UD
/// payloads are capped at the MTU when posted, MADs at 256 bytes.
pub(crate) fn max_wire(mtu: u32) -> u32 {
    Opcode::WriteFirst.wire_bytes(mtu, true)
}

/// Number of 64-byte flow-control blocks a packet of `wire` bytes occupies
/// (IBA vol. 1 §7.9.4: credits are counted in 64-byte units).
#[inline]
pub fn blocks(wire: u32) -> u32 {
    wire.div_ceil(64)
}

/// Packet flag bits.
pub mod flag {
    /// BTH AckReq.
    pub const ACK_REQ: u8 = 1;
    /// BTH FECN (IB congestion control, IBA vol. 1 §A10).
    pub const FECN: u8 = 2;
    /// BTH BECN.
    pub const BECN: u8 = 4;
    /// Management (VL15) packet: not flow controlled.
    pub const VL15: u8 = 8;
    /// Carries a GRH.
    pub const GRH: u8 = 16;
}

/// One packet in flight.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Source and destination LIDs (LRH).
    pub slid: u16,
    pub dlid: u16,
    /// Destination QP (simulator-wide QP id; the pcap writer maps it to a QPN).
    pub dst_qp: u32,
    /// Source QP.
    pub src_qp: u32,
    /// 24-bit PSN.
    pub psn: u32,
    /// Payload bytes (unpadded).
    pub payload: u32,
    /// Bytes on the wire.
    pub wire: u32,
    /// The link the packet came over into the switch holding it, named by its
    /// transmitting port's global id (`u32::MAX` at an end node); the input
    /// port is that port's peer.
    pub in_link: u32,
    /// When the packet's last byte reaches the node holding it.
    pub tail_at: Time,
    /// BTH opcode, stored as [`Opcode`].
    pub opcode: Opcode,
    /// Service level (LRH).
    pub sl: u8,
    /// Virtual lane on the current link.
    pub vl: u8,
    /// VL of the input buffer holding it at the current switch.
    pub in_vl: u8,
    /// [`flag`] bits.
    pub flags: u8,
    /// Link hops taken so far.
    pub hops: u8,
    /// BTH P_Key: the sending QP's (IBA vol. 1 §9.2.3, §10.9); bit 15 = full member.
    pub pkey: u16,
}

/// The per-hop part of a packet: what switches and links read and write.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct PktHot {
    /// When the packet's last byte reaches the node holding it.
    pub(crate) tail_at: Time,
    /// On a link, when the packet behind it on the same link arrives (valid
    /// while `next` is set): the arrival that pops this packet queues the next
    /// one's without reading that packet's line.
    pub(crate) next_at: Time,
    /// On a link, the sequence number of the arrival event of the packet behind
    /// it (the run's `(time, sequence)` order; below 2^36) in the high 36 bits;
    /// in the low 28, the packet's route in the QP routes of
    /// [`crate::ib::forward::Forwarding`] or
    /// [`NO_ROUTE`]. See [`Self::next_seq`] and [`Self::route`].
    seq_route: u64,
    /// The next packet in the same queue ([`NONE`] at the tail).
    pub(crate) next: u32,
    /// See [`Packet::in_link`].
    pub(crate) in_link: u32,
    /// Bytes on the wire (at most MTU 4096 plus headers).
    pub(crate) wire: u16,
    pub(crate) dlid: u16,
    pub(crate) vl: u8,
    pub(crate) in_vl: u8,
    pub(crate) flags: u8,
    pub(crate) hops: u8,
}

/// Bits of [`PktHot`]'s route index.
const ROUTE_BITS: u32 = 28;
/// A packet without a precomputed route: each switch's decision is read from
/// the LFT when the packet is sent to it.
pub(crate) const NO_ROUTE: u32 = (1 << ROUTE_BITS) - 1;

impl PktHot {
    /// The sequence number of the arrival event of the packet behind it on its
    /// link (valid while `next` is set).
    #[inline(always)]
    pub(crate) fn next_seq(&self) -> u64 {
        self.seq_route >> ROUTE_BITS
    }

    #[inline(always)]
    pub(crate) fn set_next_seq(&mut self, seq: u64) {
        debug_assert!(seq < 1 << (64 - ROUTE_BITS));
        self.seq_route = (seq << ROUTE_BITS) | (self.seq_route & u64::from(NO_ROUTE));
    }

    /// Where its route starts in the QP routes of
    /// [`crate::ib::forward::Forwarding`] ([`NO_ROUTE`] if none).
    #[inline(always)]
    pub(crate) fn route(&self) -> u32 {
        (self.seq_route & u64::from(NO_ROUTE)) as u32
    }

    /// 64-byte flow-control blocks.
    #[inline]
    pub(crate) fn blocks(&self) -> u32 {
        blocks(u32::from(self.wire))
    }
}

/// The transport part of a packet: read where it is made and where it ends.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PktCold {
    pub(crate) slid: u16,
    pub(crate) sl: u8,
    pub(crate) opcode: Opcode,
    pub(crate) dst_qp: u32,
    pub(crate) src_qp: u32,
    pub(crate) psn: u32,
    pub(crate) payload: u32,
    pub(crate) pkey: u16,
}

/// A stored packet: both halves on one cache line, so the end node that reads
/// the transport fields finds them on the line every hop has touched.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct PktRec {
    hot: PktHot,
    cold: PktCold,
}

const _: () = assert!(std::mem::size_of::<PktRec>() == 64);

/// Packet storage: one 64-byte record per `u32` id,
/// a free list (freed ids reused last-in first-out, so hot slots stay in cache),
/// and the live and peak counts.
#[derive(Debug, Default)]
pub(crate) struct Packets {
    recs: crate::engine::Table<PktRec>,
    free: Vec<u32>,
    live: usize,
    peak: usize,
}

impl Packets {
    pub(crate) fn with_capacity(n: usize) -> Packets {
        Packets {
            // SAFETY: indexed only by packet ids the store hands out (live slots).
            recs: unsafe { crate::engine::Table::with_capacity(n) },
            ..Packets::default()
        }
    }

    /// Store `pk`. Its wire size must fit 16 bits (IB packets are at most 4,096
    /// bytes of payload plus headers).
    #[inline]
    pub(crate) fn insert(&mut self, pk: Packet, route: u32) -> PacketId {
        debug_assert!(pk.wire <= u32::from(u16::MAX) && route <= NO_ROUTE);
        let h = PktHot {
            tail_at: pk.tail_at,
            next_at: Time::ZERO,
            seq_route: u64::from(route),
            next: NONE,
            in_link: pk.in_link,
            wire: pk.wire as u16,
            dlid: pk.dlid,
            vl: pk.vl,
            in_vl: pk.in_vl,
            flags: pk.flags,
            hops: pk.hops,
        };
        let c = PktCold {
            slid: pk.slid,
            sl: pk.sl,
            opcode: pk.opcode,
            dst_qp: pk.dst_qp,
            src_qp: pk.src_qp,
            psn: pk.psn,
            payload: pk.payload,
            pkey: pk.pkey,
        };
        self.live += 1;
        self.peak = self.peak.max(self.live);
        if let Some(i) = self.free.pop() {
            self.recs[i as usize] = PktRec { hot: h, cold: c };
            i
        } else {
            self.recs.push(PktRec { hot: h, cold: c });
            (self.recs.len() - 1) as u32
        }
    }

    /// Release `p` (its id is reused by a later insert).
    #[inline]
    pub(crate) fn remove(&mut self, p: PacketId) {
        self.live -= 1;
        self.free.push(p);
    }

    /// The transport fields of `p`.
    #[inline]
    pub(crate) fn cold(&self, p: PacketId) -> &PktCold {
        &self.recs[p as usize].cold
    }

    /// The whole packet `p`.
    pub(crate) fn full(&self, p: PacketId) -> Packet {
        let PktRec { hot: h, cold: c } = &self.recs[p as usize];
        Packet {
            slid: c.slid,
            dlid: h.dlid,
            dst_qp: c.dst_qp,
            src_qp: c.src_qp,
            psn: c.psn,
            payload: c.payload,
            wire: u32::from(h.wire),
            in_link: h.in_link,
            tail_at: h.tail_at,
            opcode: c.opcode,
            sl: c.sl,
            vl: h.vl,
            in_vl: h.in_vl,
            flags: h.flags,
            hops: h.hops,
            pkey: c.pkey,
        }
    }

    /// Packets stored now.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Most packets stored at once.
    pub(crate) fn peak(&self) -> usize {
        self.peak
    }
}

/// A packet nothing refers to: what a prefetch hint reads when it has no
/// packet (see [`Packets::hint_get`]); its link, route and QP name nothing.
static NO_PKT: PktRec = PktRec {
    hot: PktHot {
        tail_at: Time::ZERO,
        next_at: Time::ZERO,
        seq_route: NO_ROUTE as u64,
        next: NONE,
        in_link: NONE,
        wire: 0,
        dlid: 0,
        vl: 0,
        in_vl: 0,
        flags: 0,
        hops: 0,
    },
    cold: PktCold {
        slid: 0,
        sl: 0,
        opcode: Opcode::SendOnly,
        dst_qp: NONE,
        src_qp: NONE,
        psn: 0,
        payload: 0,
        pkey: 0,
    },
};

impl Packets {
    /// The address of packet `p`'s record for a prefetch hint; any `p` will do
    /// (an id out of range gives an address nothing reads).
    #[inline(always)]
    pub(crate) fn hint_addr(&self, p: PacketId) -> *const u8 {
        self.recs.as_ptr().wrapping_add(p as usize).cast::<u8>()
    }

    /// Packet `p` if it is stored, else a packet that names nothing (for `p`
    /// = [`NONE`], say): chosen without a branch, for a
    /// look-ahead that computes its hints for either kind of event and keeps
    /// one.
    #[inline(always)]
    pub(crate) fn hint_get(&self, p: PacketId) -> (&PktHot, &PktCold) {
        let ok = (p as usize) < self.recs.len();
        let rec = self.recs.as_ptr().wrapping_add(p as usize);
        // SAFETY: `rec` is used only when `p` is in bounds, and NO_PKT is a static.
        let r = unsafe { &*std::hint::select_unpredictable(ok, rec, &raw const NO_PKT) };
        (&r.hot, &r.cold)
    }
}

impl std::ops::Index<PacketId> for Packets {
    type Output = PktHot;
    #[inline]
    fn index(&self, p: PacketId) -> &PktHot {
        &self.recs[p as usize].hot
    }
}

impl std::ops::IndexMut<PacketId> for Packets {
    #[inline]
    fn index_mut(&mut self, p: PacketId) -> &mut PktHot {
        &mut self.recs[p as usize].hot
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_stacks_match_the_spec() {
        // RC WRITE First with a full 4 KiB payload: LRH 8 + BTH 12 + RETH 16 + 4096 + ICRC 4 + VCRC 2.
        assert_eq!(Opcode::WriteFirst.wire_bytes(4096, false), 4138);
        assert_eq!(Opcode::WriteMiddle.wire_bytes(4096, false), 4122);
        // ACK: LRH + BTH + AETH + ICRC + VCRC = 30 bytes.
        assert_eq!(Opcode::Acknowledge.wire_bytes(0, false), 30);
        // A globally routed SEND adds 40 bytes; a 1-byte payload is padded to 4.
        assert_eq!(Opcode::SendOnly.wire_bytes(1, true), 8 + 40 + 12 + 4 + 4 + 2);
        // SMP over UD: LRH + BTH + DETH + MAD + ICRC + VCRC = 290.
        assert_eq!(Opcode::UdSendOnly.wire_bytes(hdr::MAD, false), 290);
        assert_eq!(blocks(4138), 65);
        assert_eq!(blocks(64), 1);
        let mut s = Packets::with_capacity(1);
        let pk = Packet {
            slid: 3,
            dlid: 7,
            dst_qp: 11,
            src_qp: 13,
            psn: 17,
            payload: 4096,
            wire: 4138,
            in_link: 19,
            tail_at: Time(23),
            opcode: Opcode::WriteFirst,
            sl: 2,
            vl: 1,
            in_vl: 4,
            flags: flag::ACK_REQ,
            hops: 5,
            pkey: 0x8029,
        };
        let a = s.insert(pk, 1234);
        let back = s.full(a);
        assert_eq!(format!("{back:?}"), format!("{pk:?}"));
        assert_eq!(s[a].blocks(), 65);
        // Sequence number and route share a word without disturbing each other.
        assert_eq!((s[a].next_seq(), s[a].route()), (0, 1234));
        s[a].set_next_seq((1 << 36) - 1);
        assert_eq!((s[a].next_seq(), s[a].route()), ((1 << 36) - 1, 1234));
        s[a].set_next_seq(5);
        assert_eq!((s[a].next_seq(), s[a].route()), (5, 1234));
        s.remove(a);
        assert_eq!((s.live(), s.peak()), (0, 1));
        assert_eq!(std::mem::size_of::<PktHot>(), 40);
        // 22 bytes of fields (the P_Key took 2 of the 4 spare) padded to 24: with
        // the hot part, one 64-byte record.
        assert_eq!(std::mem::size_of::<PktCold>(), 24);
    }

    #[test]
    fn max_wire_bounds_every_packet() {
        use Opcode::*;
        let all = [
            SendFirst,
            SendMiddle,
            SendLast,
            SendOnly,
            WriteFirst,
            WriteMiddle,
            WriteLast,
            WriteOnly,
            ReadRequest,
            ReadResponseFirst,
            ReadResponseMiddle,
            ReadResponseLast,
            ReadResponseOnly,
            Acknowledge,
            UdSendOnly,
        ];
        for mtu in [256, 512, 1024, 2048, 4096] {
            let max = max_wire(mtu);
            for op in all {
                for grh in [false, true] {
                    assert!(op.wire_bytes(mtu, grh) <= max, "{op:?} at MTU {mtu}");
                }
            }
            // A MAD over UD at any MTU.
            assert!(UdSendOnly.wire_bytes(hdr::MAD, true) <= max, "MAD at MTU {mtu}");
        }
        // LRH 8 + GRH 40 + BTH 12 + RETH 16 + 4096 + ICRC 4 + VCRC 2.
        assert_eq!(max_wire(4096), 4178);
        assert_eq!(blocks(max_wire(4096)), 66);
    }
}
