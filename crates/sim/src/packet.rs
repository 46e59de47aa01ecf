//! The simulated packet: what the models need from the headers, plus the on-wire
//! size computed from the real header stack (IBA vol. 1 §5.4 and §9).
//!
//! Packets are 64-byte plain structs (one cache line each) in a
//! [`crate::engine::Slab`]; nothing is allocated per packet once the slab has
//! grown to the run's peak. A packet is always in at most one queue (a link, a
//! switch output queue), so the queues are lists threaded through the packets'
//! `next` field ([`crate::sim::PktList`]).

use crate::engine::Time;

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
    /// LRH + [GRH] + BTH + extension headers + payload padded to 4 bytes (BTH
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
#[repr(C, align(64))]
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
    /// Global port id of the input port at the switch holding the packet
    /// (`u32::MAX` at an end node).
    pub in_gp: u32,
    /// When the packet's last byte reaches the node holding it.
    pub tail_at: Time,
    /// On a link: the sequence number of its arrival event (the run's
    /// `(time, sequence)` order).
    pub(crate) seq: u64,
    /// The next packet in the same queue ([`crate::sim::NONE`] at the tail).
    pub(crate) next: u32,
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
        assert_eq!(std::mem::size_of::<Packet>(), 64);
    }
}
