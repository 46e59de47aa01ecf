//! Software prefetch hints for the simulators' run loops: each asks the CPU to
//! start loading a cache line an upcoming event will read. Hints only: nothing
//! is read architecturally, so they can neither fault nor change a result.

/// The cache line holding `p`'s first byte.
#[inline(always)]
pub(crate) fn line<T>(p: &T) {
    addr((p as *const T).cast::<u8>());
}

/// Every line `*p` lies on when it spans two: those of its first and last byte.
#[inline(always)]
pub(crate) fn whole<T>(p: &T) {
    let a = (p as *const T).cast::<u8>();
    addr(a);
    addr(a.wrapping_add(std::mem::size_of::<T>().saturating_sub(1)));
}

/// The line at address `a` (any address will do).
#[inline(always)]
pub(crate) fn addr(a: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(a.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = a;
}
