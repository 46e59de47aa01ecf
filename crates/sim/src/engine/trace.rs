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

    /// Add one event, given its time and its word, to an order-free trace:
    /// the wrapping sum of a 64-bit mix of each event. For a model whose events
    /// at one picosecond run in an order set by the events themselves (the
    /// RoCE model's: kind, then a hash of component and time), the set of events fixes the
    /// order, so the sum names the trace as well as [`Self::fold`] does; and
    /// the sums of parts of a run add up to the whole run's.
    #[inline]
    pub fn add(&mut self, t: u64, w: u64) {
        let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w.wrapping_mul(0xc2b2_ae3d_27d4_eb4f).rotate_left(31);
        // murmur3's 64-bit finaliser
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^= x >> 33;
        self.0 = self.0.wrapping_add(x);
    }
}
