//! Ethernet II with an optional IEEE 802.1Q tag (PCP, DEI, VID).
//!
//! RoCE PFC classes ride on the 802.1Q PCP (IEEE 802.1Qbb); DSCP-based PFC leaves
//! frames untagged.

use crate::bytes::{be16, put16};
use crate::error::{Result, need, room};

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of RoCEv1 (IBTA annex A16).
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;
/// EtherType of IEEE 802.3 MAC control (PAUSE, PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;
/// The 802.1Q tag protocol identifier.
pub const TPID_8021Q: u16 = 0x8100;

/// An 802.1Q tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point (0–7).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id (12 bits).
    pub vid: u16,
}

/// A zero-copy view of an Ethernet header (untagged or 802.1Q-tagged).
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
    /// Ensure the header, including the tag when the TPID says there is one, fits.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("Ethernet", b, 14)?;
        if be16(b, 12) == TPID_8021Q {
            need("802.1Q", b, 18)
        } else {
            Ok(())
        }
    }
    /// Destination MAC.
    pub fn dst(&self) -> [u8; 6] {
        self.buffer.as_ref()[0..6].try_into().unwrap_or([0; 6])
    }
    /// Source MAC.
    pub fn src(&self) -> [u8; 6] {
        self.buffer.as_ref()[6..12].try_into().unwrap_or([0; 6])
    }
    /// The 802.1Q tag, if present.
    pub fn vlan(&self) -> Option<VlanTag> {
        let b = self.buffer.as_ref();
        (be16(b, 12) == TPID_8021Q).then(|| {
            let tci = be16(b, 14);
            VlanTag {
                pcp: (tci >> 13) as u8,
                dei: tci & 0x1000 != 0,
                vid: tci & 0x0fff,
            }
        })
    }
    /// Header length: 14, or 18 with a tag.
    pub fn header_len(&self) -> usize {
        if be16(self.buffer.as_ref(), 12) == TPID_8021Q {
            18
        } else {
            14
        }
    }
    /// The EtherType after any tag.
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), self.header_len() - 2)
    }
    /// Bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

/// A parsed Ethernet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Source MAC.
    pub src: [u8; 6],
    /// Optional 802.1Q tag.
    pub vlan: Option<VlanTag>,
    /// EtherType of the payload.
    pub ethertype: u16,
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            dst: p.dst(),
            src: p.src(),
            vlan: p.vlan(),
            ethertype: p.ethertype(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        if self.vlan.is_some() { 18 } else { 14 }
    }
    /// Write the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("Ethernet", b, self.buffer_len())?;
        b[0..6].copy_from_slice(&self.dst);
        b[6..12].copy_from_slice(&self.src);
        let mut at = 12;
        if let Some(t) = self.vlan {
            put16(b, 12, TPID_8021Q);
            put16(
                b,
                14,
                ((t.pcp as u16 & 7) << 13) | ((t.dei as u16) << 12) | (t.vid & 0x0fff),
            );
            at = 16;
        }
        put16(b, at, self.ethertype);
        Ok(())
    }
}
