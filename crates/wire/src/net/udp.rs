//! UDP header (RFC 768). RoCEv2 uses destination port 4791 and carries flow
//! entropy in the source port (annex A17.4.3).

use super::ipv4::partial_sum;
use crate::bytes::{be16, put16};
use crate::error::{Error, Result, need, room};

/// Header length.
pub const HEADER_LEN: usize = 8;
/// The IANA-assigned RoCEv2 destination port.
pub const ROCE_V2_PORT: u16 = 4791;

/// The lowest UDP source port RoCEv2 senders use for flow entropy (Linux
/// `IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`); the range is 0xC000..=0xFFFF.
pub const ROCE_V2_SPORT_MIN: u16 = 0xc000;

/// The UDP source port a Linux RoCEv2 sender derives from a QP pair when the
/// application sets no flow label (`rdma_calc_flow_label` then
/// `rdma_flow_label_to_udp_sport` in Linux `include/rdma/ib_verbs.h`): the 20-bit
/// flow label is the product of the QPNs folded by XOR, its top 6 bits are folded
/// into the low 14, and the result is placed in 0xC000..=0xFFFF. Switches hash this
/// port for ECMP, so one QP pair stays on one path.
pub fn roce_v2_sport(local_qpn: u32, remote_qpn: u32) -> u16 {
    let mut v = local_qpn as u64 * remote_qpn as u64;
    v ^= v >> 20;
    v ^= v >> 40;
    let flow_label = (v & 0xfffff) as u32;
    roce_v2_sport_from_flow_label(flow_label)
}

/// The UDP source port for a given 20-bit flow label (see [`roce_v2_sport`]).
pub fn roce_v2_sport_from_flow_label(flow_label: u32) -> u16 {
    let low = (flow_label & 0x3fff) ^ ((flow_label & 0xfc000) >> 14);
    (low as u16) | ROCE_V2_SPORT_MIN
}

/// A zero-copy view.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }
    /// Wrap after [`Packet::check_len`].
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }
    /// Ensure the header fits and Length lies within 8..=buffer length.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("UDP", b, HEADER_LEN)?;
        let l = be16(b, 4) as usize;
        if l < HEADER_LEN || l > b.len() {
            return Err(Error::BadLength {
                header: "UDP",
                field: "length",
                claimed: l,
                actual: b.len(),
            });
        }
        Ok(())
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    /// Length (header + payload).
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }
    /// True if Length is zero (never after `check_len`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Checksum as sent (0 = none, allowed over IPv4).
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }
    /// The payload as Length gives it.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.len() as usize]
    }
}

/// Pseudo-header partial sum for IPv4 (RFC 768).
pub fn pseudo_v4(src: &[u8; 4], dst: &[u8; 4], udp_len: u16) -> u32 {
    partial_sum(src) + partial_sum(dst) + 17 + udp_len as u32
}
/// Pseudo-header partial sum for IPv6 (RFC 8200 §8.1).
pub fn pseudo_v6(src: &[u8; 16], dst: &[u8; 16], udp_len: u16) -> u32 {
    partial_sum(src) + partial_sum(dst) + 17 + udp_len as u32
}

/// The UDP checksum over `datagram` (header with its checksum field as given, plus
/// payload) and a pseudo-header sum. A computed 0 is sent as 0xFFFF (RFC 768).
/// Verifying: pass the datagram as received; a correct one yields 0 or 0xFFFF… use
/// [`verify`] instead.
pub fn checksum(pseudo: u32, datagram: &[u8]) -> u16 {
    let c = super::ipv4::internet_checksum(datagram, pseudo);
    if c == 0 { 0xffff } else { c }
}

/// True if the checksum in `datagram` verifies (a zero checksum means "none" and
/// is reported by the caller, not here).
pub fn verify(pseudo: u32, datagram: &[u8]) -> bool {
    super::ipv4::internet_checksum(datagram, pseudo) == 0
}

/// A parsed UDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Source port (RoCEv2: flow entropy).
    pub src_port: u16,
    /// Destination port (4791 for RoCEv2).
    pub dst_port: u16,
    /// Length of the payload (Length − 8). The packet builder computes it.
    pub payload_len: u16,
    /// The checksum field as sent; the packet builder computes it or leaves 0.
    pub checksum: u16,
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() - 8,
            checksum: p.checksum(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header with the checksum field as held in the Repr.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("UDP", b, HEADER_LEN)?;
        let len = self.payload_len as usize + HEADER_LEN;
        if len > 0xffff {
            return Err(Error::Unrepresentable {
                header: "UDP",
                field: "length",
                value: len as u64,
                expected: "at most 65535",
            });
        }
        put16(b, 0, self.src_port);
        put16(b, 2, self.dst_port);
        put16(b, 4, len as u16);
        put16(b, 6, self.checksum);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_port_is_in_range_and_stable() {
        assert_eq!(roce_v2_sport(0x11, 0x12), 0xc132);
        assert_eq!(roce_v2_sport_from_flow_label(0xfc000), 0xc03f);
        for a in [1u32, 0x11, 0xabcdef, 0xffffff] {
            for b in [1u32, 0x22, 0x123456] {
                let p = roce_v2_sport(a, b);
                assert!(p >= ROCE_V2_SPORT_MIN);
                assert_eq!(p, roce_v2_sport(a, b));
            }
        }
    }
}
