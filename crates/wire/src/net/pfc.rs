//! IEEE 802.3 MAC control frames: PAUSE (802.3 Annex 31B, opcode 0x0001) and
//! Priority-based Flow Control (IEEE 802.1Qbb §36.1.3, opcode 0x0101, a
//! priority-enable vector and eight pause quanta). One quantum is 512 bit times.

use crate::bytes::{be16, put16};
use crate::error::{Error, Result, need, room};

/// The MAC-control destination address 01-80-C2-00-00-01 (802.3 Annex 31B).
pub const MAC_CONTROL_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01];
/// MAC control opcode of PAUSE.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// MAC control opcode of PFC.
pub const OPCODE_PFC: u16 = 0x0101;
/// Bytes the MAC control payload occupies on the wire (the minimum Ethernet payload
/// of 46 bytes; everything after the parameters is reserved zeros).
pub const PAYLOAD_LEN: usize = 46;

/// A zero-copy view of a MAC control payload (after the EtherType).
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
    /// Ensure the opcode and its parameters fit.
    pub fn check_len(&self) -> Result<()> {
        let b = self.buffer.as_ref();
        need("MAC control", b, 2)?;
        match be16(b, 0) {
            OPCODE_PFC => need("PFC", b, 20),
            _ => need("PAUSE", b, 4),
        }
    }
    /// Opcode.
    pub fn opcode(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
}

/// A parsed MAC control frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Repr {
    /// Link-level PAUSE for `quanta` × 512 bit times.
    Pause {
        /// Pause time in quanta.
        quanta: u16,
    },
    /// Per-priority pause (802.1Qbb).
    Pfc {
        /// Priority-enable vector: bit i set means `quanta[i]` is valid.
        enable: u8,
        /// Pause time per priority in quanta (0 = resume / XON).
        quanta: [u16; 8],
    },
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let b = p.buffer.as_ref();
        match p.opcode() {
            OPCODE_PAUSE => Ok(Repr::Pause { quanta: be16(b, 2) }),
            OPCODE_PFC => {
                let cev = be16(b, 2);
                if cev > 0xff {
                    return Err(Error::BadField {
                        header: "PFC",
                        field: "class-enable vector",
                        value: cev as u64,
                        expected: "high byte zero",
                    });
                }
                let mut quanta = [0u16; 8];
                for (i, q) in quanta.iter_mut().enumerate() {
                    *q = be16(b, 4 + 2 * i);
                }
                Ok(Repr::Pfc {
                    enable: cev as u8,
                    quanta,
                })
            }
            x => Err(Error::BadField {
                header: "MAC control",
                field: "opcode",
                value: x as u64,
                expected: "0x0001 (PAUSE) or 0x0101 (PFC)",
            }),
        }
    }
    /// Bytes [`Repr::emit`] writes (the parameters plus zero padding to 46 bytes).
    pub const fn buffer_len(&self) -> usize {
        PAYLOAD_LEN
    }
    /// Write the payload, zero-padded to the minimum frame.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("MAC control", b, PAYLOAD_LEN)?;
        b[..PAYLOAD_LEN].fill(0);
        match *self {
            Repr::Pause { quanta } => {
                put16(b, 0, OPCODE_PAUSE);
                put16(b, 2, quanta);
            }
            Repr::Pfc { enable, quanta } => {
                put16(b, 0, OPCODE_PFC);
                put16(b, 2, enable as u16);
                for (i, q) in quanta.iter().enumerate() {
                    put16(b, 4 + 2 * i, *q);
                }
            }
        }
        Ok(())
    }
    /// Total pause requested, in quanta, summed over enabled priorities.
    pub fn total_quanta(&self) -> u64 {
        match *self {
            Repr::Pause { quanta } => quanta as u64,
            Repr::Pfc { enable, quanta } => (0..8)
                .filter(|i| enable & (1 << i) != 0)
                .map(|i| quanta[i] as u64)
                .sum(),
        }
    }
}

/// Duration of `quanta` pause quanta on a link of `gbps` Gb/s, in nanoseconds
/// (one quantum = 512 bit times; IEEE 802.3 §31B.3.2).
pub fn quanta_to_nanos(quanta: u64, gbps: f64) -> f64 {
    quanta as f64 * 512.0 / gbps
}
