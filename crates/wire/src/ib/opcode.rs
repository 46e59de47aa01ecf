//! BTH opcodes (IBA vol. 1 §9.2, Table 38) and the extended headers each one
//! carries (§9.2, Table 39), plus the RoCEv2 CNP (annex A17.9.3, opcode 0x81).
//!
//! The opcode's top three bits pick the transport (000 RC, 001 UC, 010 RD, 011 UD,
//! 100 CNP, 101 XRC), the low five the operation.

use core::fmt;

macro_rules! opcodes {
    ($( $(#[$m:meta])* $name:ident = $code:expr => $text:expr ),* $(,)?) => {
        /// A BTH opcode. Codes this crate does not model (RD, XRC, reserved and
        /// manufacturer-specific) parse as `Unknown(raw)`.
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Opcode {
            $( $(#[$m])* $name, )*
            /// Any other 8-bit code.
            Unknown(u8),
        }
        impl From<u8> for Opcode {
            fn from(v: u8) -> Opcode {
                match v { $( $code => Opcode::$name, )* x => Opcode::Unknown(x) }
            }
        }
        impl From<Opcode> for u8 {
            fn from(o: Opcode) -> u8 {
                match o { $( Opcode::$name => $code, )* Opcode::Unknown(x) => x }
            }
        }
        impl Opcode {
            /// Every modelled opcode, in code order.
            pub const ALL: &'static [Opcode] = &[$( Opcode::$name, )*];
            /// The name as IBA and Wireshark spell it, e.g. "RC SEND_ONLY".
            pub fn name(self) -> &'static str {
                match self { $( Opcode::$name => $text, )* Opcode::Unknown(_) => "UNKNOWN" }
            }
            /// Parse a name such as "RC SEND_ONLY" or "RC_SEND_ONLY" (case-insensitive).
            pub fn from_name(s: &str) -> Option<Opcode> {
                let norm = |c: char| if c == '_' || c == '-' { ' ' } else { c.to_ascii_uppercase() };
                let want: String = s.trim().chars().map(norm).collect();
                Opcode::ALL.iter().copied().find(|o| o.name().chars().map(norm).collect::<String>() == want)
            }
        }
    };
}

opcodes! {
    /// RC SEND_FIRST.
    RcSendFirst = 0x00 => "RC SEND_FIRST",
    /// RC SEND_MIDDLE.
    RcSendMiddle = 0x01 => "RC SEND_MIDDLE",
    /// RC SEND_LAST.
    RcSendLast = 0x02 => "RC SEND_LAST",
    /// RC SEND_LAST_WITH_IMMEDIATE.
    RcSendLastImm = 0x03 => "RC SEND_LAST_WITH_IMMEDIATE",
    /// RC SEND_ONLY.
    RcSendOnly = 0x04 => "RC SEND_ONLY",
    /// RC SEND_ONLY_WITH_IMMEDIATE.
    RcSendOnlyImm = 0x05 => "RC SEND_ONLY_WITH_IMMEDIATE",
    /// RC RDMA_WRITE_FIRST.
    RcWriteFirst = 0x06 => "RC RDMA_WRITE_FIRST",
    /// RC RDMA_WRITE_MIDDLE.
    RcWriteMiddle = 0x07 => "RC RDMA_WRITE_MIDDLE",
    /// RC RDMA_WRITE_LAST.
    RcWriteLast = 0x08 => "RC RDMA_WRITE_LAST",
    /// RC RDMA_WRITE_LAST_WITH_IMMEDIATE.
    RcWriteLastImm = 0x09 => "RC RDMA_WRITE_LAST_WITH_IMMEDIATE",
    /// RC RDMA_WRITE_ONLY.
    RcWriteOnly = 0x0a => "RC RDMA_WRITE_ONLY",
    /// RC RDMA_WRITE_ONLY_WITH_IMMEDIATE.
    RcWriteOnlyImm = 0x0b => "RC RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    /// RC RDMA_READ_REQUEST.
    RcReadRequest = 0x0c => "RC RDMA_READ_REQUEST",
    /// RC RDMA_READ_RESPONSE_FIRST.
    RcReadResponseFirst = 0x0d => "RC RDMA_READ_RESPONSE_FIRST",
    /// RC RDMA_READ_RESPONSE_MIDDLE.
    RcReadResponseMiddle = 0x0e => "RC RDMA_READ_RESPONSE_MIDDLE",
    /// RC RDMA_READ_RESPONSE_LAST.
    RcReadResponseLast = 0x0f => "RC RDMA_READ_RESPONSE_LAST",
    /// RC RDMA_READ_RESPONSE_ONLY.
    RcReadResponseOnly = 0x10 => "RC RDMA_READ_RESPONSE_ONLY",
    /// RC ACKNOWLEDGE.
    RcAcknowledge = 0x11 => "RC ACKNOWLEDGE",
    /// RC ATOMIC_ACKNOWLEDGE.
    RcAtomicAcknowledge = 0x12 => "RC ATOMIC_ACKNOWLEDGE",
    /// RC CMP_SWAP.
    RcCompareSwap = 0x13 => "RC COMPARE_SWAP",
    /// RC FETCH_ADD.
    RcFetchAdd = 0x14 => "RC FETCH_ADD",
    /// RC SEND_LAST_WITH_INVALIDATE.
    RcSendLastInv = 0x16 => "RC SEND_LAST_WITH_INVALIDATE",
    /// RC SEND_ONLY_WITH_INVALIDATE.
    RcSendOnlyInv = 0x17 => "RC SEND_ONLY_WITH_INVALIDATE",
    /// UC SEND_FIRST.
    UcSendFirst = 0x20 => "UC SEND_FIRST",
    /// UC SEND_MIDDLE.
    UcSendMiddle = 0x21 => "UC SEND_MIDDLE",
    /// UC SEND_LAST.
    UcSendLast = 0x22 => "UC SEND_LAST",
    /// UC SEND_LAST_WITH_IMMEDIATE.
    UcSendLastImm = 0x23 => "UC SEND_LAST_WITH_IMMEDIATE",
    /// UC SEND_ONLY.
    UcSendOnly = 0x24 => "UC SEND_ONLY",
    /// UC SEND_ONLY_WITH_IMMEDIATE.
    UcSendOnlyImm = 0x25 => "UC SEND_ONLY_WITH_IMMEDIATE",
    /// UC RDMA_WRITE_FIRST.
    UcWriteFirst = 0x26 => "UC RDMA_WRITE_FIRST",
    /// UC RDMA_WRITE_MIDDLE.
    UcWriteMiddle = 0x27 => "UC RDMA_WRITE_MIDDLE",
    /// UC RDMA_WRITE_LAST.
    UcWriteLast = 0x28 => "UC RDMA_WRITE_LAST",
    /// UC RDMA_WRITE_LAST_WITH_IMMEDIATE.
    UcWriteLastImm = 0x29 => "UC RDMA_WRITE_LAST_WITH_IMMEDIATE",
    /// UC RDMA_WRITE_ONLY.
    UcWriteOnly = 0x2a => "UC RDMA_WRITE_ONLY",
    /// UC RDMA_WRITE_ONLY_WITH_IMMEDIATE.
    UcWriteOnlyImm = 0x2b => "UC RDMA_WRITE_ONLY_WITH_IMMEDIATE",
    /// UD SEND_ONLY.
    UdSendOnly = 0x64 => "UD SEND_ONLY",
    /// UD SEND_ONLY_WITH_IMMEDIATE.
    UdSendOnlyImm = 0x65 => "UD SEND_ONLY_WITH_IMMEDIATE",
    /// RoCEv2 Congestion Notification Packet (annex A17.9.3).
    Cnp = 0x81 => "CNP",
}

impl fmt::Debug for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Opcode::Unknown(x) => write!(f, "Unknown({x:#04x})"),
            o => f.write_str(o.name()),
        }
    }
}
impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Which extended transport headers follow the BTH, in wire order
/// RDETH? DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH (IBA §9.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// DETH (UD).
    pub deth: bool,
    /// RETH.
    pub reth: bool,
    /// AtomicETH.
    pub atomic_eth: bool,
    /// AETH.
    pub aeth: bool,
    /// AtomicAckETH.
    pub atomic_ack_eth: bool,
    /// Immediate data.
    pub immdt: bool,
    /// IETH.
    pub ieth: bool,
    /// The CNP's 16 reserved bytes.
    pub cnp_reserved: bool,
    /// Whether the packet may carry payload.
    pub payload: bool,
}

impl Opcode {
    /// The extended headers this opcode carries, or `None` for unknown opcodes.
    pub fn layout(self) -> Option<Layout> {
        use Opcode::*;
        let mut l = Layout {
            payload: true,
            ..Layout::default()
        };
        match self {
            RcSendFirst | RcSendMiddle | RcSendLast | RcSendOnly | UcSendFirst | UcSendMiddle | UcSendLast
            | UcSendOnly | RcWriteMiddle | RcWriteLast | UcWriteMiddle | UcWriteLast | RcReadResponseMiddle => {}
            RcSendLastImm | RcSendOnlyImm | UcSendLastImm | UcSendOnlyImm | RcWriteLastImm | UcWriteLastImm => {
                l.immdt = true
            }
            RcSendLastInv | RcSendOnlyInv => l.ieth = true,
            RcWriteFirst | RcWriteOnly | UcWriteFirst | UcWriteOnly => l.reth = true,
            RcWriteOnlyImm | UcWriteOnlyImm => {
                l.reth = true;
                l.immdt = true;
            }
            RcReadRequest => {
                l.reth = true;
                l.payload = false;
            }
            RcReadResponseFirst | RcReadResponseLast | RcReadResponseOnly => l.aeth = true,
            RcAcknowledge => {
                l.aeth = true;
                l.payload = false;
            }
            RcAtomicAcknowledge => {
                l.aeth = true;
                l.atomic_ack_eth = true;
                l.payload = false;
            }
            RcCompareSwap | RcFetchAdd => {
                l.atomic_eth = true;
                l.payload = false;
            }
            UdSendOnly => l.deth = true,
            UdSendOnlyImm => {
                l.deth = true;
                l.immdt = true;
            }
            Cnp => {
                l.cnp_reserved = true;
                l.payload = false;
            }
            Unknown(_) => return None,
        }
        Some(l)
    }

    /// Bytes of extended headers for this opcode (0 for unknown opcodes).
    pub fn ext_len(self) -> usize {
        match self.layout() {
            None => 0,
            Some(l) => {
                8 * l.deth as usize
                    + 16 * l.reth as usize
                    + 28 * l.atomic_eth as usize
                    + 4 * l.aeth as usize
                    + 8 * l.atomic_ack_eth as usize
                    + 4 * l.immdt as usize
                    + 4 * l.ieth as usize
                    + 16 * l.cnp_reserved as usize
            }
        }
    }

    /// True for requester packets (sends, writes, read requests, atomics); false
    /// for responses (read responses, ACK/NAK, atomic ACK), CNPs and unknown codes.
    pub fn is_request(self) -> bool {
        let c: u8 = self.into();
        !matches!(self, Opcode::Unknown(_) | Opcode::Cnp) && !(0x0d..=0x12).contains(&(c & 0x1f))
            || matches!(self, Opcode::UdSendOnly | Opcode::UdSendOnlyImm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_names_parse() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(Opcode::from(v)), v);
        }
        for &o in Opcode::ALL {
            assert_eq!(Opcode::from_name(o.name()), Some(o));
        }
        assert_eq!(Opcode::from_name("rc_send_only"), Some(Opcode::RcSendOnly));
        assert_eq!(Opcode::from(0x40), Opcode::Unknown(0x40));
        assert_eq!(Opcode::RcWriteOnlyImm.ext_len(), 20);
        assert_eq!(Opcode::Cnp.ext_len(), 16);
        assert!(Opcode::RcSendOnly.is_request());
        assert!(!Opcode::RcAcknowledge.is_request());
    }
}
