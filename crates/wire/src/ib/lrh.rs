//! Local Route Header (IBA vol. 1 §7.7, 8 bytes).
//!
//! ```text
//!  0      1      2      3      4      5      6      7
//! +------+------+------+------+------+------+------+------+
//! |VL|LVr|SL|r|LNH| DLID      |rsv5|PktLen(11)| SLID      |
//! +------+------+------+------+------+------+------+------+
//! ```

use crate::bytes::{be16, put16};
use crate::error::{Result, need, room};
use crate::ids::Lid;

mod field {
    pub const VL_LVER: usize = 0;
    pub const SL_LNH: usize = 1;
    pub const DLID: usize = 2;
    pub const PKTLEN: usize = 4;
    pub const SLID: usize = 6;
}
/// LRH length in bytes.
pub const HEADER_LEN: usize = 8;

/// Link Next Header (IBA §7.7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lnh {
    /// 0: raw packet (no IBA transport).
    Raw,
    /// 1: IPv6 non-IBA transport.
    Ipv6,
    /// 2: IBA local: BTH follows.
    IbaLocal,
    /// 3: IBA global: GRH follows.
    IbaGlobal,
}

impl Lnh {
    /// From the 2-bit field.
    pub const fn from_bits(v: u8) -> Lnh {
        match v & 3 {
            0 => Lnh::Raw,
            1 => Lnh::Ipv6,
            2 => Lnh::IbaLocal,
            _ => Lnh::IbaGlobal,
        }
    }
    /// The 2-bit field.
    pub const fn bits(self) -> u8 {
        match self {
            Lnh::Raw => 0,
            Lnh::Ipv6 => 1,
            Lnh::IbaLocal => 2,
            Lnh::IbaGlobal => 3,
        }
    }
}

/// A zero-copy view of an LRH.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wrap without checking the length.
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
        need("LRH", self.buffer.as_ref(), HEADER_LEN)
    }
    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Virtual lane.
    pub fn vl(&self) -> u8 {
        self.buffer.as_ref()[field::VL_LVER] >> 4
    }
    /// Link version (0).
    pub fn lver(&self) -> u8 {
        self.buffer.as_ref()[field::VL_LVER] & 0x0f
    }
    /// Service level.
    pub fn sl(&self) -> u8 {
        self.buffer.as_ref()[field::SL_LNH] >> 4
    }
    /// The two reserved bits between SL and LNH.
    pub fn reserved2(&self) -> u8 {
        (self.buffer.as_ref()[field::SL_LNH] >> 2) & 3
    }
    /// Link next header.
    pub fn lnh(&self) -> Lnh {
        Lnh::from_bits(self.buffer.as_ref()[field::SL_LNH])
    }
    /// Destination LID.
    pub fn dlid(&self) -> Lid {
        Lid(be16(self.buffer.as_ref(), field::DLID))
    }
    /// Packet length in 4-byte words, LRH through ICRC (VCRC excluded).
    pub fn pkt_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::PKTLEN) & 0x07ff
    }
    /// Source LID.
    pub fn slid(&self) -> Lid {
        Lid(be16(self.buffer.as_ref(), field::SLID))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set VL and LVer.
    pub fn set_vl_lver(&mut self, vl: u8, lver: u8) {
        self.buffer.as_mut()[field::VL_LVER] = (vl << 4) | (lver & 0x0f);
    }
    /// Set SL and LNH (reserved bits zero).
    pub fn set_sl_lnh(&mut self, sl: u8, lnh: Lnh) {
        self.buffer.as_mut()[field::SL_LNH] = (sl << 4) | lnh.bits();
    }
    /// Set the destination LID.
    pub fn set_dlid(&mut self, v: Lid) {
        put16(self.buffer.as_mut(), field::DLID, v.0);
    }
    /// Set PktLen (the 5 reserved bits are written zero).
    pub fn set_pkt_len(&mut self, words: u16) {
        put16(self.buffer.as_mut(), field::PKTLEN, words & 0x07ff);
    }
    /// Set the source LID.
    pub fn set_slid(&mut self, v: Lid) {
        put16(self.buffer.as_mut(), field::SLID, v.0);
    }
}

/// A parsed LRH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Virtual lane (0–15; 15 is the management VL).
    pub vl: u8,
    /// Link version, 0 in IBA 1.x.
    pub lver: u8,
    /// Service level.
    pub sl: u8,
    /// Link next header.
    pub lnh: Lnh,
    /// Destination LID.
    pub dlid: Lid,
    /// Source LID.
    pub slid: Lid,
    /// Packet length in words (LRH..ICRC). The packet builder computes it.
    pub pkt_len: u16,
}

impl Repr {
    /// Parse; reserved bits are ignored, as IBA §7.7 tells receivers to.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            vl: p.vl(),
            lver: p.lver(),
            sl: p.sl(),
            lnh: p.lnh(),
            dlid: p.dlid(),
            slid: p.slid(),
            pkt_len: p.pkt_len(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header (VL/SL/LVer masked to 4 bits, PktLen to 11 bits).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        room("LRH", p.buffer.as_ref(), HEADER_LEN)?;
        p.set_vl_lver(self.vl & 0x0f, self.lver);
        p.set_sl_lnh(self.sl & 0x0f, self.lnh);
        p.set_dlid(self.dlid);
        p.set_pkt_len(self.pkt_len);
        p.set_slid(self.slid);
        Ok(())
    }
}
