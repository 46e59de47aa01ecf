//! The common MAD header (IBA vol. 1 §13.4.2, 24 bytes).
//!
//! ```text
//! 0 BaseVersion  1 MgmtClass  2 ClassVersion  3 R(1) Method(7)
//! 4..6 Status    6..8 ClassSpecific (DR SMP: HopPointer, HopCount)
//! 8..16 TransactionID  16..18 AttributeID  18..20 reserved  20..24 AttributeModifier
//! ```

use core::fmt;

use crate::bytes::{be16, be32, be64, put16, put32, put64};
use crate::error::{Result, need, room};
use crate::mad::field::wire_enum;

/// Header length.
pub const HEADER_LEN: usize = 24;

wire_enum! {
    /// Management class (IBA Table 115).
    MgmtClass {
        /// 0x01: LID-routed subnet management.
        SubnLid = 0x01,
        /// 0x03: subnet administration.
        SubnAdm = 0x03,
        /// 0x04: performance management.
        Perf = 0x04,
        /// 0x05: baseboard management.
        BoardMgmt = 0x05,
        /// 0x06: device management.
        DevMgmt = 0x06,
        /// 0x07: communication management.
        ComMgmt = 0x07,
        /// 0x08: SNMP tunnelling.
        Snmp = 0x08,
        /// 0x21: congestion control.
        CongestionControl = 0x21,
        /// 0x81: directed-route subnet management.
        SubnDirected = 0x81,
    }
}

wire_enum! {
    /// Method, the whole byte including the R (response) bit (IBA Table 116).
    Method {
        /// 0x01 Get.
        Get = 0x01,
        /// 0x02 Set.
        Set = 0x02,
        /// 0x03 Send.
        Send = 0x03,
        /// 0x05 Trap.
        Trap = 0x05,
        /// 0x06 Report.
        Report = 0x06,
        /// 0x07 TrapRepress.
        TrapRepress = 0x07,
        /// 0x12 GetTable (SA).
        GetTable = 0x12,
        /// 0x81 GetResp.
        GetResp = 0x81,
        /// 0x86 ReportResp.
        ReportResp = 0x86,
        /// 0x92 GetTableResp (SA).
        GetTableResp = 0x92,
    }
}

impl Method {
    /// True if the R bit is set.
    pub fn is_response(self) -> bool {
        u8::from(self) & 0x80 != 0
    }
    /// The response method to this request (Get/Set → GetResp; Report → ReportResp;
    /// others set the R bit).
    pub fn response(self) -> Method {
        match self {
            Method::Get | Method::Set => Method::GetResp,
            Method::Report => Method::ReportResp,
            m => Method::from(u8::from(m) | 0x80),
        }
    }
    /// Name as IBA spells it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "Get",
            Method::Set => "Set",
            Method::Send => "Send",
            Method::Trap => "Trap",
            Method::Report => "Report",
            Method::TrapRepress => "TrapRepress",
            Method::GetTable => "GetTable",
            Method::GetResp => "GetResp",
            Method::ReportResp => "ReportResp",
            Method::GetTableResp => "GetTableResp",
            Method::Unknown(_) => "Unknown",
        }
    }
}

macro_rules! attr_ids {
    ($( $(#[$m:meta])* $v:ident = $code:literal => $text:literal ),* $(,)?) => {
        /// Attribute ID (IBA Table 145 for SMPs, Table 118 for common attributes).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AttrId {
            $( $(#[$m])* $v, )*
            /// Any other 16-bit id.
            Unknown(u16),
        }
        impl From<u16> for AttrId {
            fn from(x: u16) -> AttrId { match x { $( $code => AttrId::$v, )* o => AttrId::Unknown(o) } }
        }
        impl From<AttrId> for u16 {
            fn from(x: AttrId) -> u16 { match x { $( AttrId::$v => $code, )* AttrId::Unknown(o) => o } }
        }
        impl AttrId {
            /// Every named attribute.
            pub const ALL: &'static [AttrId] = &[$( AttrId::$v, )*];
            /// Name as IBA spells it.
            pub fn name(self) -> &'static str {
                match self { $( AttrId::$v => $text, )* AttrId::Unknown(_) => "Unknown" }
            }
            /// Parse a name (case-insensitive).
            pub fn from_name(s: &str) -> Option<AttrId> {
                AttrId::ALL.iter().copied().find(|a| a.name().eq_ignore_ascii_case(s.trim()))
            }
        }
    };
}

attr_ids! {
    /// 0x0001 ClassPortInfo.
    ClassPortInfo = 0x0001 => "ClassPortInfo",
    /// 0x0002 Notice (traps).
    Notice = 0x0002 => "Notice",
    /// 0x0003 InformInfo.
    InformInfo = 0x0003 => "InformInfo",
    /// 0x0010 NodeDescription.
    NodeDescription = 0x0010 => "NodeDescription",
    /// 0x0011 NodeInfo.
    NodeInfo = 0x0011 => "NodeInfo",
    /// 0x0012 SwitchInfo.
    SwitchInfo = 0x0012 => "SwitchInfo",
    /// 0x0014 GUIDInfo.
    GuidInfo = 0x0014 => "GUIDInfo",
    /// 0x0015 PortInfo.
    PortInfo = 0x0015 => "PortInfo",
    /// 0x0016 P_KeyTable.
    PKeyTable = 0x0016 => "P_KeyTable",
    /// 0x0017 SLtoVLMappingTable.
    SlToVlTable = 0x0017 => "SLtoVLMappingTable",
    /// 0x0018 VLArbitrationTable.
    VlArbTable = 0x0018 => "VLArbitrationTable",
    /// 0x0019 LinearForwardingTable.
    LinearFwdTable = 0x0019 => "LinearForwardingTable",
    /// 0x001A RandomForwardingTable.
    RandomFwdTable = 0x001a => "RandomForwardingTable",
    /// 0x001B MulticastForwardingTable.
    MulticastFwdTable = 0x001b => "MulticastForwardingTable",
    /// 0x0020 SMInfo.
    SmInfo = 0x0020 => "SMInfo",
    /// 0x0030 VendorDiag.
    VendorDiag = 0x0030 => "VendorDiag",
    /// 0x0031 LedInfo.
    LedInfo = 0x0031 => "LedInfo",
}

impl fmt::Debug for AttrId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrId::Unknown(x) => write!(f, "Unknown({x:#06x})"),
            a => f.write_str(a.name()),
        }
    }
}

/// The 16-bit MAD status (IBA §13.4.7 Table 117). For DR SMPs the top bit is the
/// direction bit and is not part of the status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct MadStatus(pub u16);

impl MadStatus {
    /// Success.
    pub const OK: MadStatus = MadStatus(0);
    /// Bit 0: busy, the request was discarded.
    pub fn busy(self) -> bool {
        self.0 & 1 != 0
    }
    /// Bit 1: redirection required.
    pub fn redirect(self) -> bool {
        self.0 & 2 != 0
    }
    /// Bits 2–4: 0 OK, 1 bad version, 2 method not supported, 3 method/attribute
    /// combination not supported, 7 invalid attribute or modifier value.
    pub fn invalid_field(self) -> u8 {
        ((self.0 >> 2) & 7) as u8
    }
    /// Bits 8–14: class-specific.
    pub fn class_specific(self) -> u8 {
        ((self.0 >> 8) & 0x7f) as u8
    }
    /// Status with invalid-field code `code` (bits 2–4).
    pub fn with_invalid_field(code: u8) -> MadStatus {
        MadStatus(((code as u16) & 7) << 2)
    }
    /// A short description.
    pub fn describe(self) -> &'static str {
        match self.invalid_field() {
            0 if self.0 == 0 => "success",
            0 => "busy/redirect/class-specific",
            1 => "bad base/class version",
            2 => "method not supported",
            3 => "method/attribute combination not supported",
            7 => "invalid attribute or modifier value",
            _ => "reserved invalid-field code",
        }
    }
}

/// A zero-copy view of the common MAD header.
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
        need("MAD header", self.buffer.as_ref(), HEADER_LEN)
    }
    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    /// Base version (1).
    pub fn base_version(&self) -> u8 {
        self.b()[0]
    }
    /// Management class.
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.b()[1])
    }
    /// Class version.
    pub fn class_version(&self) -> u8 {
        self.b()[2]
    }
    /// Method (with R bit).
    pub fn method(&self) -> Method {
        Method::from(self.b()[3])
    }
    /// Status (raw 16 bits).
    pub fn status(&self) -> u16 {
        be16(self.b(), 4)
    }
    /// Class-specific 16 bits.
    pub fn class_specific(&self) -> u16 {
        be16(self.b(), 6)
    }
    /// Transaction id.
    pub fn tid(&self) -> u64 {
        be64(self.b(), 8)
    }
    /// Attribute id.
    pub fn attr_id(&self) -> AttrId {
        AttrId::from(be16(self.b(), 16))
    }
    /// Attribute modifier.
    pub fn attr_mod(&self) -> u32 {
        be32(self.b(), 20)
    }
}

/// A parsed common MAD header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Repr {
    /// Base version (1).
    pub base_version: u8,
    /// Management class.
    pub mgmt_class: MgmtClass,
    /// Class version.
    pub class_version: u8,
    /// Method.
    pub method: Method,
    /// Status, raw.
    pub status: u16,
    /// Class-specific.
    pub class_specific: u16,
    /// Transaction id.
    pub tid: u64,
    /// Attribute id.
    pub attr_id: AttrId,
    /// Attribute modifier.
    pub attr_mod: u32,
}

impl Repr {
    /// Parse.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        Ok(Repr {
            base_version: p.base_version(),
            mgmt_class: p.mgmt_class(),
            class_version: p.class_version(),
            method: p.method(),
            status: p.status(),
            class_specific: p.class_specific(),
            tid: p.tid(),
            attr_id: p.attr_id(),
            attr_mod: p.attr_mod(),
        })
    }
    /// Bytes [`Repr::emit`] writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Write the header (reserved bytes 18–19 zero).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        let b = p.buffer.as_mut();
        room("MAD header", b, HEADER_LEN)?;
        b[0] = self.base_version;
        b[1] = self.mgmt_class.into();
        b[2] = self.class_version;
        b[3] = self.method.into();
        put16(b, 4, self.status);
        put16(b, 6, self.class_specific);
        put64(b, 8, self.tid);
        put16(b, 16, self.attr_id.into());
        put16(b, 18, 0);
        put32(b, 20, self.attr_mod);
        Ok(())
    }
}
