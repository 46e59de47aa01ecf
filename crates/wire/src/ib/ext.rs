//! Extended transport headers (IBA vol. 1 §9.3): RETH, AETH, DETH, ImmDt, IETH,
//! AtomicETH, AtomicAckETH. Each is a `Packet<T>` view plus a `Repr`.

use crate::bytes::{be24, be32, be64, put24, put32, put64};
use crate::error::{Result, need, room};

macro_rules! fixed_header {
    (
        $(#[$doc:meta])* mod $m:ident, $hname:literal, $len:expr,
        { $( $(#[$fd:meta])* $f:ident : $ty:ty = $get:ident / $put:ident @ $off:expr ),* $(,)? }
    ) => {
        $(#[$doc])*
        pub mod $m {
            use super::*;
            /// Header length in bytes.
            pub const HEADER_LEN: usize = $len;
            /// A zero-copy view.
            #[derive(Debug, Clone)]
            pub struct Packet<T: AsRef<[u8]>> { buffer: T }
            impl<T: AsRef<[u8]>> Packet<T> {
                /// Wrap without checking.
                pub const fn new_unchecked(buffer: T) -> Packet<T> { Packet { buffer } }
                /// Wrap after [`Packet::check_len`].
                pub fn new_checked(buffer: T) -> Result<Packet<T>> {
                    let p = Packet { buffer }; p.check_len()?; Ok(p)
                }
                /// Ensure the header fits.
                pub fn check_len(&self) -> Result<()> { need($hname, self.buffer.as_ref(), HEADER_LEN) }
                $( $(#[$fd])* pub fn $f(&self) -> $ty { $get(self.buffer.as_ref(), $off) as $ty } )*
            }
            /// A parsed header.
            #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
            pub struct Repr { $( $(#[$fd])* pub $f: $ty, )* }
            impl Repr {
                /// Parse.
                pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
                    p.check_len()?;
                    Ok(Repr { $( $f: p.$f(), )* })
                }
                /// Bytes [`Repr::emit`] writes.
                pub const fn buffer_len(&self) -> usize { HEADER_LEN }
                /// Write the header (reserved bytes zero).
                pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
                    let b = p.buffer.as_mut();
                    room($hname, b, HEADER_LEN)?;
                    b[..HEADER_LEN].fill(0);
                    $( $put(b, $off, self.$f as _); )*
                    Ok(())
                }
            }
        }
    };
}

fixed_header! {
    /// RDMA Extended Transport Header (IBA §9.3.3, 16 bytes): virtual address,
    /// R_Key and DMA length of an RDMA WRITE or READ.
    mod reth, "RETH", 16, {
        /// Virtual address.
        va: u64 = be64 / put64 @ 0,
        /// Remote key.
        rkey: u32 = be32 / put32 @ 8,
        /// DMA length in bytes.
        dma_len: u32 = be32 / put32 @ 12,
    }
}

fixed_header! {
    /// Datagram Extended Transport Header (IBA §9.3.2, 8 bytes): Q_Key, reserved
    /// byte, source QP.
    mod deth, "DETH", 8, {
        /// Queue key.
        qkey: u32 = be32 / put32 @ 0,
        /// Source QP (24 bits).
        src_qp: u32 = be24 / put24 @ 5,
    }
}

fixed_header! {
    /// Immediate data (IBA §9.3.6, 4 bytes).
    mod immdt, "ImmDt", 4, {
        /// The 32-bit immediate value.
        imm: u32 = be32 / put32 @ 0,
    }
}

fixed_header! {
    /// Invalidate Extended Transport Header (IBA §9.3.7, 4 bytes): the R_Key to invalidate.
    mod ieth, "IETH", 4, {
        /// R_Key to invalidate.
        rkey: u32 = be32 / put32 @ 0,
    }
}

fixed_header! {
    /// Atomic Extended Transport Header (IBA §9.3.4, 28 bytes).
    mod atomic_eth, "AtomicETH", 28, {
        /// Virtual address.
        va: u64 = be64 / put64 @ 0,
        /// Remote key.
        rkey: u32 = be32 / put32 @ 8,
        /// Swap (CmpSwap) or add (FetchAdd) data.
        swap_add: u64 = be64 / put64 @ 12,
        /// Compare data (CmpSwap).
        compare: u64 = be64 / put64 @ 20,
    }
}

fixed_header! {
    /// Atomic Acknowledge Extended Transport Header (IBA §9.3.5, 8 bytes).
    mod atomic_ack_eth, "AtomicAckETH", 8, {
        /// The original remote data.
        orig: u64 = be64 / put64 @ 0,
    }
}

/// ACK Extended Transport Header (IBA §9.3.5, 4 bytes): syndrome and MSN.
pub mod aeth {
    use super::*;
    use core::fmt;

    /// Header length in bytes.
    pub const HEADER_LEN: usize = 4;

    /// NAK codes (IBA §9.7.5.2.4 Table 44).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum NakCode {
        /// 0: PSN sequence error.
        PsnSequenceError,
        /// 1: invalid request.
        InvalidRequest,
        /// 2: remote access error.
        RemoteAccessError,
        /// 3: remote operational error.
        RemoteOperationalError,
        /// 4: invalid RD request.
        InvalidRdRequest,
        /// 5–31: reserved.
        Unknown(u8),
    }
    impl NakCode {
        /// From the low five syndrome bits.
        pub fn from_bits(v: u8) -> NakCode {
            match v & 0x1f {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                x => NakCode::Unknown(x),
            }
        }
        /// The five-bit code.
        pub fn bits(self) -> u8 {
            match self {
                NakCode::PsnSequenceError => 0,
                NakCode::InvalidRequest => 1,
                NakCode::RemoteAccessError => 2,
                NakCode::RemoteOperationalError => 3,
                NakCode::InvalidRdRequest => 4,
                NakCode::Unknown(x) => x & 0x1f,
            }
        }
        /// Name as IBA spells it.
        pub fn name(self) -> &'static str {
            match self {
                NakCode::PsnSequenceError => "PSN sequence error",
                NakCode::InvalidRequest => "invalid request",
                NakCode::RemoteAccessError => "remote access error",
                NakCode::RemoteOperationalError => "remote operational error",
                NakCode::InvalidRdRequest => "invalid RD request",
                NakCode::Unknown(_) => "reserved NAK code",
            }
        }
    }

    /// The RNR NAK timer: a 5-bit code for how long the requester waits before
    /// retrying (IBA §9.7.5.2.8 Table 45).
    #[derive(Clone, Copy, PartialEq, Eq, Hash)]
    pub struct RnrTimer(pub u8);

    /// Table 45 in nanoseconds; code 0 is the longest (655.36 ms).
    const RNR_NS: [u64; 32] = [
        655_360_000,
        10_000,
        20_000,
        30_000,
        40_000,
        60_000,
        80_000,
        120_000,
        160_000,
        240_000,
        320_000,
        480_000,
        640_000,
        960_000,
        1_280_000,
        1_920_000,
        2_560_000,
        3_840_000,
        5_120_000,
        7_680_000,
        10_240_000,
        15_360_000,
        20_480_000,
        30_720_000,
        40_960_000,
        61_440_000,
        81_920_000,
        122_880_000,
        163_840_000,
        245_760_000,
        327_680_000,
        491_520_000,
    ];

    impl RnrTimer {
        /// The wait, in nanoseconds.
        pub fn nanos(self) -> u64 {
            RNR_NS[(self.0 & 0x1f) as usize]
        }
        /// The smallest code whose wait is at least `ns` (code 0, 655.36 ms, if none).
        pub fn at_least_nanos(ns: u64) -> RnrTimer {
            (1..32u8).map(RnrTimer).find(|t| t.nanos() >= ns).unwrap_or(RnrTimer(0))
        }
    }
    impl fmt::Debug for RnrTimer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "RnrTimer({}: {} us)", self.0, self.nanos() as f64 / 1000.0)
        }
    }

    /// The AETH syndrome (IBA §9.7.5.2.4 Table 43): bits 6–5 select ACK, RNR NAK or NAK.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Syndrome {
        /// 0b00: ACK with a 5-bit credit count (31 = invalid / no credit info).
        Ack {
            /// Credit count code.
            credits: u8,
        },
        /// 0b01: receiver not ready, retry after the timer.
        RnrNak(RnrTimer),
        /// 0b11: NAK with a code.
        Nak(NakCode),
        /// 0b10 or bit 7 set: reserved; the raw byte.
        Reserved(u8),
    }
    impl Syndrome {
        /// From the 8-bit field.
        pub fn from_byte(v: u8) -> Syndrome {
            if v & 0x80 != 0 {
                return Syndrome::Reserved(v);
            }
            match (v >> 5) & 3 {
                0 => Syndrome::Ack { credits: v & 0x1f },
                1 => Syndrome::RnrNak(RnrTimer(v & 0x1f)),
                3 => Syndrome::Nak(NakCode::from_bits(v)),
                _ => Syndrome::Reserved(v),
            }
        }
        /// The 8-bit field.
        pub fn to_byte(self) -> u8 {
            match self {
                Syndrome::Ack { credits } => credits & 0x1f,
                Syndrome::RnrNak(t) => 0x20 | (t.0 & 0x1f),
                Syndrome::Nak(c) => 0x60 | c.bits(),
                Syndrome::Reserved(v) => v,
            }
        }
        /// True for NAKs and RNR NAKs.
        pub fn is_nak(self) -> bool {
            matches!(self, Syndrome::RnrNak(_) | Syndrome::Nak(_))
        }
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
        /// Ensure the header fits.
        pub fn check_len(&self) -> Result<()> {
            need("AETH", self.buffer.as_ref(), HEADER_LEN)
        }
        /// The syndrome byte.
        pub fn syndrome(&self) -> Syndrome {
            Syndrome::from_byte(self.buffer.as_ref()[0])
        }
        /// Message sequence number (24 bits).
        pub fn msn(&self) -> u32 {
            be24(self.buffer.as_ref(), 1)
        }
    }
    /// A parsed AETH.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Repr {
        /// Syndrome.
        pub syndrome: Syndrome,
        /// MSN (24 bits).
        pub msn: u32,
    }
    impl Repr {
        /// Parse.
        pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
            p.check_len()?;
            Ok(Repr {
                syndrome: p.syndrome(),
                msn: p.msn(),
            })
        }
        /// Bytes [`Repr::emit`] writes.
        pub const fn buffer_len(&self) -> usize {
            HEADER_LEN
        }
        /// Write the header.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
            let b = p.buffer.as_mut();
            room("AETH", b, HEADER_LEN)?;
            b[0] = self.syndrome.to_byte();
            put24(b, 1, self.msn & 0xff_ffff);
            Ok(())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        #[test]
        fn syndromes() {
            for v in 0..=255u8 {
                assert_eq!(Syndrome::from_byte(v).to_byte(), v);
            }
            assert_eq!(Syndrome::from_byte(0x60), Syndrome::Nak(NakCode::PsnSequenceError));
            assert_eq!(Syndrome::from_byte(0x2e), Syndrome::RnrNak(RnrTimer(14)));
            assert_eq!(RnrTimer(14).nanos(), 1_280_000);
            assert_eq!(Syndrome::from_byte(0x1f), Syndrome::Ack { credits: 31 });
            assert_eq!(RnrTimer::at_least_nanos(1_000_000), RnrTimer(14));
        }
    }
}
