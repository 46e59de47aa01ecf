//! Simulated time: integer picoseconds.
//!
//! A `u64` of picoseconds covers 213 days, far past any run; integer time makes
//! every sum exact and every run repeatable (no floating-point drift).

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in picoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Time(pub u64);

impl Time {
    /// Time zero.
    pub const ZERO: Time = Time(0);
    /// "Never": later than any event.
    pub const NEVER: Time = Time(u64::MAX);

    /// From picoseconds.
    #[inline]
    pub const fn ps(ps: u64) -> Time {
        Time(ps)
    }

    /// From nanoseconds.
    #[inline]
    pub const fn ns(ns: u64) -> Time {
        Time(ns * 1_000)
    }

    /// From microseconds.
    #[inline]
    pub const fn us(us: u64) -> Time {
        Time(us * 1_000_000)
    }

    /// From milliseconds.
    #[inline]
    pub const fn ms(ms: u64) -> Time {
        Time(ms * 1_000_000_000)
    }

    /// Picoseconds.
    #[inline]
    pub const fn as_ps(self) -> u64 {
        self.0
    }

    /// Nanoseconds, as a float for reports only.
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// Microseconds, as a float for reports only.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }

    /// Seconds, as a float for reports only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e12
    }

    /// `self - other`, or zero when `other` is later.
    #[inline]
    pub fn saturating_sub(self, other: Time) -> Time {
        Time(self.0.saturating_sub(other.0))
    }
}

impl Add for Time {
    type Output = Time;
    #[inline]
    fn add(self, o: Time) -> Time {
        Time(self.0 + o.0)
    }
}

impl AddAssign for Time {
    #[inline]
    fn add_assign(&mut self, o: Time) {
        self.0 += o.0;
    }
}

impl Sub for Time {
    type Output = Time;
    #[inline]
    fn sub(self, o: Time) -> Time {
        Time(self.0 - o.0)
    }
}

impl fmt::Display for Time {
    /// Picoseconds with the largest unit that keeps the value exact-ish: `1.5us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps >= 1_000_000_000 {
            write!(f, "{:.3}ms", ps as f64 / 1e9)
        } else if ps >= 1_000_000 {
            write!(f, "{:.3}us", ps as f64 / 1e6)
        } else if ps >= 1_000 {
            write!(f, "{:.3}ns", ps as f64 / 1e3)
        } else {
            write!(f, "{ps}ps")
        }
    }
}

/// Serialization time of `bytes` at `bps` bits per second, rounded up to a whole
/// picosecond. Exact (u128 arithmetic); used to precompute per-port rates.
pub fn serialization_ps(bytes: u64, bps: u64) -> u64 {
    let num = u128::from(bytes) * 8 * 1_000_000_000_000;
    num.div_ceil(u128::from(bps)) as u64
}

/// A per-port serializer: picoseconds per byte in 32.32 fixed point, so the hot
/// path multiplies instead of dividing. For every standard IB and Ethernet rate
/// whose picoseconds-per-byte is an integer (EDR/100G: 80, HDR/200G: 40,
/// NDR/400G: 20) the result is exact; otherwise it is within 1 ps per packet of
/// [`serialization_ps`] (the fraction is rounded up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Serializer {
    ps_per_byte_fp: u64,
}

impl Serializer {
    /// For a line of `bps` usable bits per second.
    pub fn new(bps: u64) -> Serializer {
        let num = (8u128 * 1_000_000_000_000) << 32;
        Serializer {
            ps_per_byte_fp: num.div_ceil(u128::from(bps.max(1))) as u64,
        }
    }

    /// Time to put `bytes` on the wire.
    #[inline]
    pub fn time(self, bytes: u32) -> Time {
        Time((u64::from(bytes) * self.ps_per_byte_fp).div_ceil(1 << 32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializer_is_exact_for_integer_rates() {
        for (bps, ppb) in [
            (100_000_000_000u64, 80u64),
            (200_000_000_000, 40),
            (400_000_000_000, 20),
        ] {
            let s = Serializer::new(bps);
            for b in [1u32, 30, 64, 4096, 4126, 65_535] {
                assert_eq!(s.time(b).0, u64::from(b) * ppb);
                assert_eq!(s.time(b).0, serialization_ps(u64::from(b), bps));
            }
        }
    }

    #[test]
    fn serializer_is_close_for_fdr() {
        let bps = 4 * 13_636_363_636;
        let s = Serializer::new(bps);
        for b in [1u32, 4126, 65_535] {
            let exact = serialization_ps(u64::from(b), bps);
            assert!(s.time(b).0.abs_diff(exact) <= 1, "{b}: {} vs {exact}", s.time(b).0);
        }
    }
}
