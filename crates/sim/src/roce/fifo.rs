//! A link direction's packets in flight, in arrival order, with each one's
//! arrival time stored as a 32-bit step from the entry before it: 4 bytes of
//! key per packet instead of 8 (a 16-byte packet makes a 20-byte entry, where
//! [`crate::engine::Fifo`] takes 32). Packets in flight are most of what the
//! RoCE model keeps per hop, so this is cache it gets back. The RoCE model
//! orders events at one picosecond by the events themselves (see
//! `RoceSim::run`), so an arrival needs no sequence number.
//!
//! The steps are exact: a step that does not fit 32 bits (an entry more than
//! 4.29 ms of simulated time after the one before it: a cable some 860 km
//! long) is marked and its whole time kept aside.

use std::collections::VecDeque;

use crate::engine::Time;

/// One entry: a value and the step of its arrival time from the entry before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot<T> {
    pub(crate) v: T,
    dt: u32,
}

/// Marks a slot whose time is in the FIFO's [`WideKeys`].
const WIDE: u32 = u32::MAX;

/// Whole times of a FIFO's slots marked [`WIDE`], in order (almost always
/// empty; kept apart so that a FIFO's header is small).
pub(crate) type WideKeys = VecDeque<Time>;

/// Entries in non-decreasing time order (a link delivers in the order it sends).
#[derive(Clone, Debug)]
#[repr(align(64))]
pub(crate) struct KeyedFifo<T> {
    q: VecDeque<Slot<T>>,
    /// Arrival time of the head; meaningless when empty.
    head: Time,
    /// Arrival time of the entry pushed last.
    last: Time,
}

const _: () = assert!(std::mem::size_of::<KeyedFifo<u128>>() == 64);
const _: () = assert!(std::mem::size_of::<Slot<[u32; 4]>>() == 20);

impl<T> Default for KeyedFifo<T> {
    fn default() -> Self {
        KeyedFifo {
            q: VecDeque::new(),
            head: Time::ZERO,
            last: Time::ZERO,
        }
    }
}

impl<T: Copy> KeyedFifo<T> {
    /// Append `v` arriving at `t`; returns true when the FIFO was empty (the
    /// caller schedules the new head). `wide`: this FIFO's own.
    #[inline]
    pub(crate) fn push(&mut self, wide: &mut WideKeys, t: Time, v: T) -> bool {
        debug_assert!(self.q.is_empty() || self.last <= t);
        let was_empty = self.q.is_empty();
        let dt = if was_empty {
            // The head's time is kept whole: its step is never read.
            self.head = t;
            0
        } else {
            let dt = t.0 - self.last.0;
            if dt < u64::from(WIDE) {
                dt as u32
            } else {
                wide.push_back(t);
                WIDE
            }
        };
        self.last = t;
        self.q.push_back(Slot { v, dt });
        was_empty
    }

    /// Remove the head; returns it and the new head's arrival time, if any.
    /// `wide`: this FIFO's own.
    #[inline]
    pub(crate) fn pop(&mut self, wide: &mut WideKeys) -> Option<(T, Option<Time>)> {
        let s = self.q.pop_front()?;
        let next = self.q.front().map(|n| {
            let k = if n.dt == WIDE {
                wide.pop_front().expect("a wide slot has its time aside")
            } else {
                Time(self.head.0 + u64::from(n.dt))
            };
            self.head = k;
            k
        });
        Some((s.v, next))
    }

    /// Bytes of one slot.
    pub(crate) const SLOT_BYTES: usize = std::mem::size_of::<Slot<T>>();

    /// The address of the slot pushed last (a prefetch hint: the next push
    /// writes the slot after it unless the ring wraps or grows); 0 when empty.
    #[inline(always)]
    pub(crate) fn back_addr(&self) -> usize {
        self.q.back().map_or(0, |s| (s as *const Slot<T>) as usize)
    }

    /// The head entry and the one after it (for prefetch hints).
    #[inline]
    pub(crate) fn first_two(&self) -> (Option<&Slot<T>>, Option<&Slot<T>>) {
        (self.q.front(), self.q.get(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times come back exactly, whole or as steps, wide steps included, and
    /// `push` reports an empty FIFO as the engine's `Fifo` does.
    #[test]
    fn times_round_trip_including_wide_steps() {
        let mut f: KeyedFifo<u32> = KeyedFifo::default();
        let mut w = WideKeys::new();
        let mut e: crate::engine::Fifo<u32> = crate::engine::Fifo::default();
        let times = [
            10,
            10,
            5_000,
            5_000 + (1u64 << 33),
            5_000 + (1u64 << 33),
            5_001 + (1u64 << 34),
        ];
        let mut popped = 0;
        let strip = |x: Option<(u32, Option<(Time, u64)>)>| x.map(|(v, n)| (v, n.map(|(t, _)| t)));
        for (i, &t) in times.iter().enumerate() {
            assert_eq!(f.push(&mut w, Time(t), i as u32), e.push(Time(t), i as u64, i as u32));
            if i == 2 {
                // Drain one midway: the head moves through whole and stepped times.
                assert_eq!(f.pop(&mut w), strip(e.pop()));
                popped += 1;
            }
        }
        assert_eq!(w.len(), 2, "two steps too wide for 32 bits");
        while let Some(got) = f.pop(&mut w) {
            assert_eq!(Some(got), strip(e.pop()));
            popped += 1;
        }
        assert_eq!(popped, times.len());
        assert!(e.pop().is_none());
        assert!(w.is_empty());
        // Empty again: the next push is a fresh head.
        assert!(f.push(&mut w, Time(7), 99));
        assert_eq!(f.pop(&mut w), Some((99, None)));
    }
}
