//! IPv4 header (RFC 791) without options, as RoCEv2 uses it (RoCE annex A17.4).

use crate::bytes::{be16, put16};
use crate::error::{Error, Result, need, room};

/// Header length (no options).
pub const HEADER_LEN: usize = 20;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// The Internet checksum (RFC 1071) of `data`, folded and complemented.
pub fn internet_checksum(data: &[u8], initial: u32) -> u16 {
    let mut sum = initial;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ones'-complement sum of `data` without folding into 16 bits or complementing,
/// for use as a partial sum (pseudo-headers).
pub(crate) fn partial_sum(data: &[u8]) -> u32 {
    let mut sum = 0u32;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
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
    /// Ensure the fixed header fits, IHL is 5 (options are not used by RoCEv2 and
    /// not supported) and Total Length lies within the buffer and covers the header.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("IPv4", b, HEADER_LEN)?;
        if b[0] >> 4 != 4 {
            return Err(Error::BadField {
                header: "IPv4",
                field: "version",
                value: (b[0] >> 4) as u64,
                expected: "4",
            });
        }
        if b[0] & 0xf != 5 {
            return Err(Error::BadField {
                header: "IPv4",
                field: "IHL",
                value: (b[0] & 0xf) as u64,
                expected: "5 (no options)",
            });
        }
        let tl = be16(b, 2) as usize;
        if tl < HEADER_LEN || tl > b.len() {
            return Err(Error::BadLength {
                header: "IPv4",
                field: "total length",
                claimed: tl,
                actual: b.len(),
            });
        }
        Ok(())
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// DSCP (6 bits).
    pub fn dscp(&self) -> u8 {
        self.b()[1] >> 2
    }
    /// ECN (2 bits).
    pub fn ecn(&self) -> u8 {
        self.b()[1] & 3
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        be16(self.b(), 2)
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(self.b(), 4)
    }
    /// Flags (3 bits: reserved, DF, MF).
    pub fn flags(&self) -> u8 {
        self.b()[6] >> 5
    }
    /// Fragment offset in 8-byte units.
    pub fn frag_offset(&self) -> u16 {
        be16(self.b(), 6) & 0x1fff
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.b()[8]
    }
    /// Protocol.
    pub fn protocol(&self) -> u8 {
        self.b()[9]
    }
    /// Header checksum as sent.
    pub fn checksum(&self) -> u16 {
        be16(self.b(), 10)
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        self.b()[12..16].try_into().unwrap_or([0; 4])
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        self.b()[16..20].try_into().unwrap_or([0; 4])
    }
    /// True if the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        internet_checksum(&self.b()[..HEADER_LEN], 0) == 0
    }
    /// The bytes Total Length says are payload.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..self.total_len() as usize]
    }
}

/// A parsed IPv4 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN codepoint (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// Time to live.
    pub ttl: u8,
    /// Protocol (17 for RoCEv2).
    pub protocol: u8,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Payload length (Total Length − 20). The packet builder computes it.
    pub payload_len: u16,
}

impl Repr {
    /// Parse. Fragments are rejected: RoCEv2 packets are never fragmented
    /// (annex A17.4.3 sets DF) and a fragment cannot be checked.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        if p.flags() & 1 != 0 || p.frag_offset() != 0 {
            return Err(Error::BadField {
                header: "IPv4",
                field: "fragment offset/MF",
                value: be16(p.b(), 6) as u64,
                expected: "an unfragmented datagram",
            });
        }
        Ok(Repr {
            dscp: p.dscp(),
            ecn: p.ecn(),
            ident: p.ident(),
            dont_frag: p.flags() & 2 != 0,
            ttl: p.ttl(),
            protocol: p.protocol(),
            src: p.src(),
            dst: p.dst(),
            payload_len: p.total_len() - HEADER_LEN as u16,
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header with a correct checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("IPv4", b, HEADER_LEN)?;
        let total = self.payload_len as usize + HEADER_LEN;
        if total > 0xffff {
            return Err(Error::Unrepresentable {
                header: "IPv4",
                field: "total length",
                value: total as u64,
                expected: "at most 65535",
            });
        }
        b[0] = 0x45;
        b[1] = (self.dscp << 2) | (self.ecn & 3);
        put16(b, 2, total as u16);
        put16(b, 4, self.ident);
        put16(b, 6, if self.dont_frag { 0x4000 } else { 0 });
        b[8] = self.ttl;
        b[9] = self.protocol;
        put16(b, 10, 0);
        b[12..16].copy_from_slice(&self.src);
        b[16..20].copy_from_slice(&self.dst);
        let c = internet_checksum(&b[..HEADER_LEN], 0);
        put16(b, 10, c);
        Ok(())
    }
}
