//! Global Route Header (IBA vol. 1 §8.3, 40 bytes; the IPv6 header layout with
//! NxtHdr 0x1B for IBA transport). RoCEv1 carries it directly after Ethernet.

use crate::bytes::{be16, be32, put16, put32};
use crate::error::{Result, need, room};

mod field {
    pub const VER_TC_FL: usize = 0;
    pub const PAYLEN: usize = 4;
    pub const NXTHDR: usize = 6;
    pub const HOPLMT: usize = 7;
    pub const SGID: core::ops::Range<usize> = 8..24;
    pub const DGID: core::ops::Range<usize> = 24..40;
}
/// GRH length in bytes.
pub const HEADER_LEN: usize = 40;
/// NxtHdr value announcing an IBA transport header (IBA §8.3.1).
pub const NXTHDR_IBA: u8 = 0x1b;

/// A zero-copy view of a GRH.
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
    /// Ensure the header fits.
    pub fn check_len(&self) -> Result<()> {
        need("GRH", self.buffer.as_ref(), HEADER_LEN)
    }
    /// IP version (6).
    pub fn ipver(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }
    /// Traffic class.
    pub fn tclass(&self) -> u8 {
        ((be32(self.buffer.as_ref(), field::VER_TC_FL) >> 20) & 0xff) as u8
    }
    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        be32(self.buffer.as_ref(), field::VER_TC_FL) & 0xfffff
    }
    /// Payload length: bytes after the GRH up to and including the ICRC.
    pub fn payload_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PAYLEN)
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXTHDR]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOPLMT]
    }
    /// Source GID.
    pub fn sgid(&self) -> [u8; 16] {
        self.buffer.as_ref()[field::SGID].try_into().unwrap_or([0; 16])
    }
    /// Destination GID.
    pub fn dgid(&self) -> [u8; 16] {
        self.buffer.as_ref()[field::DGID].try_into().unwrap_or([0; 16])
    }
}

/// A parsed GRH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// IP version; 6 on every IBA GRH.
    pub ipver: u8,
    /// Traffic class (for RoCE: DSCP << 2 | ECN).
    pub tclass: u8,
    /// 20-bit flow label.
    pub flow_label: u32,
    /// Bytes after the GRH through the ICRC. The packet builder computes it.
    pub payload_len: u16,
    /// Next header (0x1B = IBA transport).
    pub next_header: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Source GID.
    pub sgid: [u8; 16],
    /// Destination GID.
    pub dgid: [u8; 16],
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            ipver: p.ipver(),
            tclass: p.tclass(),
            flow_label: p.flow_label(),
            payload_len: p.payload_len(),
            next_header: p.next_header(),
            hop_limit: p.hop_limit(),
            sgid: p.sgid(),
            dgid: p.dgid(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("GRH", b, HEADER_LEN)?;
        put32(
            b,
            field::VER_TC_FL,
            ((self.ipver as u32 & 0xf) << 28) | ((self.tclass as u32) << 20) | (self.flow_label & 0xfffff),
        );
        put16(b, field::PAYLEN, self.payload_len);
        b[field::NXTHDR] = self.next_header;
        b[field::HOPLMT] = self.hop_limit;
        b[field::SGID].copy_from_slice(&self.sgid);
        b[field::DGID].copy_from_slice(&self.dgid);
        Ok(())
    }
}
