//! Base Transport Header (IBA vol. 1 §9.2, 12 bytes).
//!
//! ```text
//! byte 0   OpCode
//! byte 1   SE(1) M(1) PadCnt(2) TVer(4)
//! 2..4     P_Key
//! byte 4   FECN(1) BECN(1) Resv6a(6)      (FECN/BECN: IBA §A10 congestion control)
//! 5..8     DestQP (24)
//! byte 8   AckReq(1) Resv7(7)
//! 9..12    PSN (24)
//! ```

use super::opcode::Opcode;
use crate::bytes::{be16, be24, put16, put24};
use crate::error::{Result, need, room};
use crate::psn::Psn;

mod field {
    pub const OPCODE: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PKEY: usize = 2;
    pub const CN: usize = 4;
    pub const DQPN: usize = 5;
    pub const ACKREQ: usize = 8;
    pub const PSN: usize = 9;
}
/// BTH length in bytes.
pub const HEADER_LEN: usize = 12;

/// A zero-copy view of a BTH.
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
        need("BTH", self.buffer.as_ref(), HEADER_LEN)
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode::from(self.b()[field::OPCODE])
    }
    /// Solicited event.
    pub fn se(&self) -> bool {
        self.b()[field::FLAGS] & 0x80 != 0
    }
    /// Migration state.
    pub fn migreq(&self) -> bool {
        self.b()[field::FLAGS] & 0x40 != 0
    }
    /// Pad count (0–3).
    pub fn pad_count(&self) -> u8 {
        (self.b()[field::FLAGS] >> 4) & 3
    }
    /// Transport header version.
    pub fn tver(&self) -> u8 {
        self.b()[field::FLAGS] & 0x0f
    }
    /// Partition key.
    pub fn pkey(&self) -> u16 {
        be16(self.b(), field::PKEY)
    }
    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.b()[field::CN] & 0x80 != 0
    }
    /// Backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        self.b()[field::CN] & 0x40 != 0
    }
    /// The six reserved bits after BECN.
    pub fn resv6a(&self) -> u8 {
        self.b()[field::CN] & 0x3f
    }
    /// Destination queue pair.
    pub fn dqpn(&self) -> u32 {
        be24(self.b(), field::DQPN)
    }
    /// Acknowledge request.
    pub fn ack_req(&self) -> bool {
        self.b()[field::ACKREQ] & 0x80 != 0
    }
    /// The seven reserved bits after AckReq.
    pub fn resv7(&self) -> u8 {
        self.b()[field::ACKREQ] & 0x7f
    }
    /// Packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::new(be24(self.b(), field::PSN))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Set the pad count in place (keeps SE, M and TVer).
    pub fn set_pad_count(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::FLAGS];
        *b = (*b & !0x30) | ((v & 3) << 4);
    }
    /// Set FECN in place (a switch marking congestion does this).
    pub fn set_fecn(&mut self, v: bool) {
        let b = &mut self.buffer.as_mut()[field::CN];
        *b = (*b & !0x80) | ((v as u8) << 7);
    }
    /// Set BECN in place.
    pub fn set_becn(&mut self, v: bool) {
        let b = &mut self.buffer.as_mut()[field::CN];
        *b = (*b & !0x40) | ((v as u8) << 6);
    }
}

/// A parsed BTH.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event.
    pub se: bool,
    /// MigReq.
    pub migreq: bool,
    /// Pad count (the packet builder computes it from the payload length).
    pub pad_count: u8,
    /// Transport version (0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN.
    pub becn: bool,
    /// Destination QP (24 bits).
    pub dqpn: u32,
    /// AckReq.
    pub ack_req: bool,
    /// PSN.
    pub psn: Psn,
}

impl Repr {
    /// Parse. Reserved bits are ignored (IBA C9-3: "ignored by the receiver").
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            opcode: p.opcode(),
            se: p.se(),
            migreq: p.migreq(),
            pad_count: p.pad_count(),
            tver: p.tver(),
            pkey: p.pkey(),
            fecn: p.fecn(),
            becn: p.becn(),
            dqpn: p.dqpn(),
            ack_req: p.ack_req(),
            psn: p.psn(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header (reserved bits zero).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("BTH", b, HEADER_LEN)?;
        b[field::OPCODE] = self.opcode.into();
        b[field::FLAGS] =
            ((self.se as u8) << 7) | ((self.migreq as u8) << 6) | ((self.pad_count & 3) << 4) | (self.tver & 0x0f);
        put16(b, field::PKEY, self.pkey);
        b[field::CN] = ((self.fecn as u8) << 7) | ((self.becn as u8) << 6);
        put24(b, field::DQPN, self.dqpn & 0xff_ffff);
        b[field::ACKREQ] = (self.ack_req as u8) << 7;
        put24(b, field::PSN, self.psn.value());
        Ok(())
    }
}
