//! The event-trace hash behind determinism tests (madsim's `check_determinism`):
//! every processed event folds its time, kind and component id into a 64-bit
//! FNV-1a-style hash. Two runs with the same seed must end with the same value.

/// A running hash of the event trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceHash(pub u64);

impl Default for TraceHash {
    fn default() -> Self {
        // FNV-1a 64-bit offset basis.
        TraceHash(0xcbf2_9ce4_8422_2325)
    }
}

impl TraceHash {
    /// Fold one word in. FNV-1a works byte-wise; folding whole words with the
    /// same prime plus a rotate keeps the hot loop to two multiplies per event.
    #[inline]
    pub fn fold(&mut self, w: u64) {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        self.0 = (self.0 ^ w).wrapping_mul(PRIME).rotate_left(29);
    }
}
