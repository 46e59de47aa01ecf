//! Identifier types shared by every layer: 64-bit GUIDs and 16-bit LIDs.

use std::fmt;

/// A 64-bit EUI-64 globally unique identifier (node, port or system image GUID).
///
/// Displayed as `0x` + 16 lower-case hex digits, the way OpenSM and
/// infiniband-diags print GUIDs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(transparent))]
pub struct Guid(pub u64);

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid(0x{:016x})", self.0)
    }
}

/// A 16-bit local identifier assigned by the Subnet Manager.
///
/// IBA vol. 1 §4.1.3: 0x0000 is reserved, 0x0001–0xBFFF are unicast,
/// 0xC000–0xFFFE multicast and 0xFFFF the permissive LID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(transparent))]
pub struct Lid(pub u16);

impl Lid {
    /// The permissive LID (IBA vol. 1 §4.1.3), used by directed-route SMPs.
    pub const PERMISSIVE: Lid = Lid(0xffff);
    /// The highest unicast LID.
    pub const MAX_UNICAST: Lid = Lid(0xbfff);

    /// True for 0x0001..=0xBFFF.
    pub fn is_unicast(self) -> bool {
        (1..=0xbfff).contains(&self.0)
    }

    /// True for 0xC000..=0xFFFE.
    pub fn is_multicast(self) -> bool {
        (0xc000..0xffff).contains(&self.0)
    }
}

impl fmt::Display for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for Lid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Lid({})", self.0)
    }
}
