//! A link direction's packets in flight, in arrival order, with each one's event
//! key (arrival time, sequence number) stored as 32-bit steps from the entry
//! before it: 8 bytes of key per packet instead of 16 (a 16-byte packet makes a
//! 24-byte entry, where [`crate::engine::Fifo`] takes 32). Packets in flight
//! are most of what the RoCE model keeps per hop, so this is cache it gets back.
//!
//! The steps are exact: a step that does not fit 32 bits (an entry more than
//! 4.29 ms of simulated time, or 2³² events, after the one before it — only
//! possible on an absurdly long cable) is marked and its whole key kept aside.

use std::collections::VecDeque;

use crate::engine::Time;

/// One entry: a value and the steps of its key from the entry before it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot<T> {
    pub(crate) v: T,
    dt: u32,
    ds: u32,
}

/// Marks a slot whose key is in the FIFO's [`WideKeys`].
const WIDE: u32 = u32::MAX;

/// Whole keys of a FIFO's slots marked [`WIDE`], in order (almost always
/// empty; kept apart so that a FIFO's header is one cache line).
pub(crate) type WideKeys = VecDeque<(Time, u64)>;

/// Entries in non-decreasing time order (a link delivers in the order it sends).
#[derive(Clone, Debug)]
#[repr(align(64))]
pub(crate) struct KeyedFifo<T> {
    q: VecDeque<Slot<T>>,
    /// Key (time, sequence) of the head; meaningless when empty.
    head: (Time, u64),
    /// Key of the entry pushed last.
    last: (Time, u64),
}

const _: () = assert!(std::mem::size_of::<KeyedFifo<u128>>() == 64);
const _: () = assert!(std::mem::size_of::<Slot<[u32; 4]>>() == 24);

impl<T> Default for KeyedFifo<T> {
    fn default() -> Self {
        KeyedFifo {
            q: VecDeque::new(),
            head: (Time::ZERO, 0),
            last: (Time::ZERO, 0),
        }
    }
}

impl<T: Copy> KeyedFifo<T> {
    /// Append `v` with key (`t`, `seq`); returns true when the FIFO was empty
    /// (the caller schedules the new head). `wide`: this FIFO's own.
    #[inline]
    pub(crate) fn push(&mut self, wide: &mut WideKeys, t: Time, seq: u64, v: T) -> bool {
        debug_assert!(self.q.is_empty() || (self.last.0 <= t && self.last.1 < seq));
        let was_empty = self.q.is_empty();
        let (dt, ds) = if was_empty {
            // The head's key is kept whole: its steps are never read.
            self.head = (t, seq);
            (0, 0)
        } else {
            let dt = t.0 - self.last.0.0;
            let ds = seq - self.last.1;
            if dt < u64::from(WIDE) && ds < u64::from(WIDE) {
                (dt as u32, ds as u32)
            } else {
                wide.push_back((t, seq));
                (WIDE, WIDE)
            }
        };
        self.last = (t, seq);
        self.q.push_back(Slot { v, dt, ds });
        was_empty
    }

    /// Remove the head; returns it and the new head's key, if any. `wide`: this
    /// FIFO's own.
    #[inline]
    pub(crate) fn pop(&mut self, wide: &mut WideKeys) -> Option<(T, Option<(Time, u64)>)> {
        let s = self.q.pop_front()?;
        let next = self.q.front().map(|n| {
            let k = if n.dt == WIDE && n.ds == WIDE {
                wide.pop_front().expect("a wide slot has its key aside")
            } else {
                (Time(self.head.0.0 + u64::from(n.dt)), self.head.1 + u64::from(n.ds))
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

    /// Keys come back exactly, whole or as steps, wide steps included, and
    /// `push` reports an empty FIFO as the engine's `Fifo` does.
    #[test]
    fn keys_round_trip_including_wide_steps() {
        let mut f: KeyedFifo<u32> = KeyedFifo::default();
        let mut w = WideKeys::new();
        let mut e: crate::engine::Fifo<u32> = crate::engine::Fifo::default();
        let keys = [
            (10, 1),
            (10, 2),
            (5_000, 9),
            (5_000 + (1u64 << 33), 10),
            (5_000 + (1u64 << 33), 10 + (1u64 << 34)),
            (5_001 + (1u64 << 33), 11 + (1u64 << 34)),
        ];
        let mut popped = 0;
        for (i, &(t, s)) in keys.iter().enumerate() {
            assert_eq!(f.push(&mut w, Time(t), s, i as u32), e.push(Time(t), s, i as u32));
            if i == 2 {
                // Drain one midway: the head moves through whole and stepped keys.
                assert_eq!(f.pop(&mut w), e.pop());
                popped += 1;
            }
        }
        assert_eq!(w.len(), 2, "two steps too wide for 32 bits");
        while let Some(got) = f.pop(&mut w) {
            assert_eq!(Some(got), e.pop());
            popped += 1;
        }
        assert_eq!(popped, keys.len());
        assert!(e.pop().is_none());
        assert!(w.is_empty());
        // Empty again: the next push is a fresh head.
        assert!(f.push(&mut w, Time(7), 3, 99));
        assert_eq!(f.pop(&mut w), Some((99, None)));
    }
}
