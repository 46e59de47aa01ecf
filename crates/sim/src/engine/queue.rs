//! The event queue: a binary min-heap ordered by `(time, insertion sequence)`, so
//! events at the same picosecond run in the order they were scheduled and every
//! run repeats exactly.
//!
//! ```text
//!   link FIFOs (one per link direction, arrivals in time order)
//!     dir 0: [t=5 s=9] [t=7 s=14] [t=9 s=20]      only the head of each FIFO
//!     dir 1: [t=6 s=11]                         ─► sits in the heap
//!   heap: (5,9) (6,11) (8,3 timer) ...
//! ```
//!
//! Packets leave a link in the order they entered it, so their arrivals need not
//! all sit in the heap (simcore's `emit_ordered`): each link direction keeps a
//! [`Fifo`] and only its head is in the heap. Every FIFO entry is stamped with a
//! sequence number when it is scheduled, and the head enters the heap with that
//! stamp, so the pop order is exactly the order a single heap holding every event
//! would give (a later FIFO entry cannot be earlier than the head it follows).
//! Cost: O(log h) per event with h = timers + non-empty FIFOs (a few thousand on a
//! 432-host fabric) instead of O(log packets-in-flight).
//!
//! Cancellation is lazy: components stamp their timer events (a wake time or an
//! epoch) and ignore a popped event whose stamp is stale.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::time::Time;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    /// `time << 64 | seq`: one integer compare orders by time then sequence.
    key: u128,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest-first.
        o.key.cmp(&self.key)
    }
}

/// A priority queue of events ordered by `(time, sequence)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    pushed: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> EventQueue<E> {
        EventQueue { heap: BinaryHeap::with_capacity(4096), seq: 0, pushed: 0 }
    }

    /// Take the next sequence number (for an event parked in a [`Fifo`]).
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// Schedule `ev` at `t`, after everything already scheduled at `t`.
    #[inline]
    pub fn push(&mut self, t: Time, ev: E) {
        let s = self.next_seq();
        self.push_seq(t, s, ev);
    }

    /// Schedule `ev` at `t` with a sequence number taken earlier by [`Self::next_seq`].
    #[inline]
    pub fn push_seq(&mut self, t: Time, seq: u64, ev: E) {
        self.pushed += 1;
        self.heap.push(Entry { key: (u128::from(t.0) << 64) | u128::from(seq), ev });
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.heap.pop().map(|e| (Time((e.key >> 64) as u64), e.ev))
    }

    /// The earliest event, left in place.
    #[inline]
    pub fn peek(&self) -> Option<(Time, E)> {
        self.heap.peek().map(|e| (Time((e.key >> 64) as u64), e.ev))
    }

    /// Replace the earliest event by `ev` at (`t`, `seq`) — one sift instead of a
    /// pop and a push; used when a link FIFO's next arrival follows its head.
    #[inline]
    pub fn replace_top(&mut self, t: Time, seq: u64, ev: E) {
        self.pushed += 1;
        if let Some(mut top) = self.heap.peek_mut() {
            *top = Entry { key: (u128::from(t.0) << 64) | u128::from(seq), ev };
        }
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time((e.key >> 64) as u64))
    }

    /// Events waiting in the heap.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events ever pushed into the heap.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

/// Events of one ordered stream (one link direction): times never decrease.
#[derive(Debug, Default, Clone)]
pub struct Fifo<T> {
    q: VecDeque<(Time, u64, T)>,
}

impl<T: Copy> Fifo<T> {
    /// Append; returns true when the FIFO was empty (so the caller must put the new
    /// head into the heap).
    #[inline]
    pub fn push(&mut self, t: Time, seq: u64, v: T) -> bool {
        debug_assert!(self.q.back().is_none_or(|b| b.0 <= t), "FIFO times must not decrease");
        self.q.push_back((t, seq, v));
        self.q.len() == 1
    }

    /// Remove the head; returns it and the next head's `(time, seq)` if any.
    #[inline]
    pub fn pop(&mut self) -> Option<(T, Option<(Time, u64)>)> {
        let (_, _, v) = self.q.pop_front()?;
        Some((v, self.q.front().map(|f| (f.0, f.1))))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The entries, head first.
    pub fn iter(&self) -> impl Iterator<Item = &(Time, u64, T)> {
        self.q.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(Time(5), 'a');
        q.push(Time(3), 'b');
        q.push(Time(5), 'c');
        q.push(Time(3), 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    proptest::proptest! {
        /// Parking ordered streams in FIFOs pops in exactly the order one heap gives.
        #[test]
        fn fifos_match_a_single_heap(ops in proptest::collection::vec((0u8..3, 0u64..50), 1..200)) {
            let mut all = EventQueue::new();
            let mut fq: EventQueue<u32> = EventQueue::new();
            let mut fifos: Vec<Fifo<u32>> = vec![Fifo::default(); 3];
            let mut last = [0u64; 3];
            for (i, (dir, dt)) in ops.iter().enumerate() {
                let d = *dir as usize;
                last[d] += dt;
                let t = Time(last[d]);
                let s = fq.next_seq();
                all.push(t, (d as u32, i as u32));
                if fifos[d].push(t, s, i as u32) {
                    fq.push_seq(t, s, d as u32);
                }
            }
            let mut got = Vec::new();
            while let Some((t, d)) = fq.pop() {
                let (v, next) = fifos[d as usize].pop().unwrap();
                got.push((t, (d, v)));
                if let Some((nt, ns)) = next {
                    fq.push_seq(nt, ns, d);
                }
            }
            let want: Vec<_> = std::iter::from_fn(|| all.pop()).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
