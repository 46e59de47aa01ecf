//! The 24-bit packet sequence number (IBA vol. 1 §9.7.1): arithmetic wraps modulo
//! 2^24 and ordering is serial-number comparison (RFC 1982 style), so 0x000001 is
//! "after" 0xFFFFFF.

use core::cmp::Ordering;
use core::fmt;

/// A wrapping 24-bit PSN.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Psn(u32);

impl Psn {
    /// The PSN modulus, 2^24.
    pub const MODULUS: u32 = 1 << 24;
    /// Mask of the 24 valid bits.
    pub const MASK: u32 = Self::MODULUS - 1;

    /// A PSN from the low 24 bits of `v` (higher bits are dropped).
    #[inline]
    pub const fn new(v: u32) -> Psn {
        Psn(v & Self::MASK)
    }
    /// The 24-bit value.
    #[inline]
    pub const fn value(self) -> u32 {
        self.0
    }
    /// `self + n`, modulo 2^24.
    #[inline]
    pub const fn add(self, n: u32) -> Psn {
        Psn(self.0.wrapping_add(n) & Self::MASK)
    }
    /// `self - n`, modulo 2^24.
    #[inline]
    pub const fn sub(self, n: u32) -> Psn {
        Psn(self.0.wrapping_sub(n) & Self::MASK)
    }
    /// The next PSN.
    #[inline]
    pub const fn next(self) -> Psn {
        self.add(1)
    }
    /// Signed distance `other - self` in the window of ±2^23: positive when `other`
    /// is after `self` (IBA §9.7.1: the valid PSN window is half the sequence space).
    #[inline]
    pub const fn distance_to(self, other: Psn) -> i32 {
        let d = other.0.wrapping_sub(self.0) & Self::MASK;
        if d >= 1 << 23 {
            d as i32 - Self::MODULUS as i32
        } else {
            d as i32
        }
    }
    /// Serial-number order: `Less` if `self` precedes `other` within half the space.
    #[inline]
    pub fn serial_cmp(self, other: Psn) -> Ordering {
        0.cmp(&self.distance_to(other))
    }
}

impl PartialOrd for Psn {
    /// Serial-number comparison; exactly half the space apart is treated as "after".
    fn partial_cmp(&self, other: &Psn) -> Option<Ordering> {
        Some(self.serial_cmp(*other))
    }
}

impl fmt::Display for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for Psn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Psn({:#08x})", self.0)
    }
}

impl From<Psn> for u32 {
    fn from(p: Psn) -> u32 {
        p.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_and_orders_across_zero() {
        let a = Psn::new(0xff_fffe);
        assert_eq!(a.add(2), Psn::new(0));
        assert_eq!(Psn::new(0).sub(1), Psn::new(0xff_ffff));
        assert!(a < a.add(3));
        assert!(a.add(3) > a);
        assert_eq!(a.distance_to(a.add(3)), 3);
        assert_eq!(a.add(3).distance_to(a), -3);
        assert_eq!(Psn::new(0x1_000_005).value(), 5);
    }
}
