//! [`Table`]: a vector indexed by the simulator's `u32` ids, bounds-checked in
//! debug and test builds and not in release builds.
//!
//! Every hop of a simulation indexes a dozen flat arrays (port records, packets,
//! buffers, forwarding entries) with ids the simulator itself minted when it
//! built the world: a global port id is below the number of ports because the
//! builder made it so, a packet id is a live slot of the packet store. The
//! release build skips the compare-and-branch per index (923 → 801
//! instructions per InfiniBand hop under callgrind); the debug and test builds
//! keep it, so the whole suite runs with every index checked. It is private to
//! the crate: an index from outside (a caller's port or flow) is checked
//! before it reaches one.

use std::ops::{Deref, DerefMut, Index, IndexMut};
use std::slice::SliceIndex;

/// A `Vec<T>` whose indexing is checked only with `debug_assertions`.
///
/// Making one is `unsafe` ([`Table::trusted`], [`Table::with_capacity`]): whoever
/// builds a table promises that every index its users will ever use is in bounds,
/// which is what lets the safe `Index`/`IndexMut` skip the check in release
/// builds. An empty `Default` table is safe to make: it is only ever extended
/// through [`Table::push`] by code bound by the same promise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Table<T>(Vec<T>);

impl<T> Table<T> {
    /// A table over `v`.
    ///
    /// # Safety
    /// Every index used on the returned table (through `Index`/`IndexMut`, as
    /// long as it lives, including after pushes) must be below its length at
    /// the time of use. Debug and test builds check each index and panic where
    /// the promise is broken; release builds do not check.
    #[inline]
    pub(crate) unsafe fn trusted(v: Vec<T>) -> Table<T> {
        Table(v)
    }

    /// Append.
    #[inline]
    pub(crate) fn push(&mut self, v: T) {
        self.0.push(v);
    }

    /// An empty table with room for `n` items.
    ///
    /// # Safety
    /// As for [`Table::trusted`].
    pub(crate) unsafe fn with_capacity(n: usize) -> Table<T> {
        Table(Vec::with_capacity(n))
    }
}

impl<T> Deref for Table<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        &self.0
    }
}

impl<T> DerefMut for Table<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

impl<T, I: SliceIndex<[T]>> Index<I> for Table<T> {
    type Output = I::Output;
    #[inline(always)]
    fn index(&self, i: I) -> &I::Output {
        if cfg!(debug_assertions) {
            &self.0[i]
        } else {
            // SAFETY: every index is an id the simulator minted for this table
            // (see the module doc); debug and test builds check each one.
            unsafe { self.0.get_unchecked(i) }
        }
    }
}

impl<T, I: SliceIndex<[T]>> IndexMut<I> for Table<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: I) -> &mut I::Output {
        if cfg!(debug_assertions) {
            &mut self.0[i]
        } else {
            // SAFETY: as for `index`.
            unsafe { self.0.get_unchecked_mut(i) }
        }
    }
}
