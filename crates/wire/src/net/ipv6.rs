//! IPv6 fixed header (RFC 8200), as RoCEv2 uses it (no extension headers).

use crate::bytes::{be16, be32, put16, put32};
use crate::error::{Error, Result, need, room};

/// Header length.
pub const HEADER_LEN: usize = 40;

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
    /// Ensure the header fits, version is 6 and Payload Length lies within the buffer.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("IPv6", b, HEADER_LEN)?;
        if b[0] >> 4 != 6 {
            return Err(Error::BadField {
                header: "IPv6",
                field: "version",
                value: (b[0] >> 4) as u64,
                expected: "6",
            });
        }
        let pl = be16(b, 4) as usize;
        if HEADER_LEN + pl > b.len() {
            return Err(Error::BadLength {
                header: "IPv6",
                field: "payload length",
                claimed: pl,
                actual: b.len() - HEADER_LEN,
            });
        }
        Ok(())
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Traffic class (DSCP << 2 | ECN).
    pub fn traffic_class(&self) -> u8 {
        ((be32(self.b(), 0) >> 20) & 0xff) as u8
    }
    /// Flow label.
    pub fn flow_label(&self) -> u32 {
        be32(self.b(), 0) & 0xfffff
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        be16(self.b(), 4)
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        self.b()[6]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[7]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 16] {
        self.b()[8..24].try_into().unwrap_or([0; 16])
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 16] {
        self.b()[24..40].try_into().unwrap_or([0; 16])
    }
    /// The payload as Payload Length gives it.
    pub fn payload(&self) -> &[u8] {
        &self.b()[HEADER_LEN..HEADER_LEN + self.payload_len() as usize]
    }
}

/// A parsed IPv6 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
    /// Next header (17 for RoCEv2).
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source address.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Payload length. The packet builder computes it.
    pub payload_len: u16,
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            traffic_class: p.traffic_class(),
            flow_label: p.flow_label(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            src: p.src(),
            dst: p.dst(),
            payload_len: p.payload_len(),
        })
    }
    /// DSCP.
    pub fn dscp(&self) -> u8 {
        self.traffic_class >> 2
    }
    /// ECN.
    pub fn ecn(&self) -> u8 {
        self.traffic_class & 3
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("IPv6", b, HEADER_LEN)?;
        put32(
            b,
            0,
            (6 << 28) | ((self.traffic_class as u32) << 20) | (self.flow_label & 0xfffff),
        );
        put16(b, 4, self.payload_len);
        b[6] = self.next_header;
        b[7] = self.hop_limit;
        b[8..24].copy_from_slice(&self.src);
        b[24..40].copy_from_slice(&self.dst);
        Ok(())
    }
}
