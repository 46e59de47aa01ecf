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

/// An event that packs into 28 bits, so a whole heap entry is one `u128`:
/// `time (64) | sequence (36) | event (28)`. Ordering the integers orders by time,
/// then sequence; the event bits never decide (sequences are unique).
pub trait Packed: Copy {
    /// Encode into the low 28 bits.
    fn pack(self) -> u32;
    /// Decode.
    fn unpack(v: u32) -> Self;
}

impl Packed for u32 {
    fn pack(self) -> u32 {
        debug_assert!(self < 1 << EV_BITS);
        self
    }
    fn unpack(v: u32) -> u32 {
        v
    }
}

/// Bits of an entry that hold the event.
pub const EV_BITS: u32 = 28;
const SEQ_BITS: u32 = 64 - EV_BITS;

/// The simulator's hot queue, ordered by `(time, sequence)` like [`EventQueue`]: a 4-ary min-heap of
/// packed `u128` keys. Four children per node halve the depth of a binary heap
/// and sit in one 64-byte cache line; 16-byte entries keep a heap of thousands
/// of pending events inside L2. Sequence numbers have 36 bits (6.8 × 10^10
/// events per run).
#[derive(Debug)]
pub struct PackedQueue<E> {
    heap: Vec<u128>,
    seq: u64,
    pushed: u64,
    _e: std::marker::PhantomData<E>,
}

impl<E: Packed> Default for PackedQueue<E> {
    fn default() -> Self {
        PackedQueue::new()
    }
}

impl<E: Packed> PackedQueue<E> {
    /// An empty queue.
    pub fn new() -> PackedQueue<E> {
        PackedQueue {
            heap: Vec::with_capacity(4096),
            seq: 0,
            pushed: 0,
            _e: std::marker::PhantomData,
        }
    }

    /// Take the next sequence number (for an event parked in a [`Fifo`]).
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        let s = self.seq;
        self.seq += 1;
        debug_assert!(s < 1 << SEQ_BITS, "event sequence numbers exhausted");
        s
    }

    #[inline]
    fn key(t: Time, seq: u64, ev: E) -> u128 {
        (u128::from(t.0) << 64) | (u128::from(seq) << EV_BITS) | u128::from(ev.pack())
    }

    #[inline]
    fn decode(k: u128) -> (Time, E) {
        (Time((k >> 64) as u64), E::unpack((k as u32) & ((1 << EV_BITS) - 1)))
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
        let k = Self::key(t, seq, ev);
        let h = &mut self.heap;
        let mut i = h.len();
        h.push(k);
        while i > 0 {
            let parent = (i - 1) / 4;
            if h[parent] <= k {
                break;
            }
            h[i] = h[parent];
            i = parent;
        }
        h[i] = k;
    }

    /// Put `k` at the root's place and sift it down.
    #[inline]
    fn sift_down_from_root(&mut self, k: u128) {
        let h = &mut self.heap;
        let n = h.len();
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= n {
                break;
            }
            let end = (c + 4).min(n);
            let mut m = c;
            let mut mk = h[c];
            for (j, &v) in h[c + 1..end].iter().enumerate() {
                if v < mk {
                    mk = v;
                    m = c + 1 + j;
                }
            }
            if mk >= k {
                break;
            }
            h[i] = mk;
            i = m;
        }
        h[i] = k;
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(Self::decode(last));
        }
        let top = self.heap[0];
        self.sift_down_from_root(last);
        Some(Self::decode(top))
    }

    /// The earliest event, left in place.
    #[inline]
    pub fn peek(&self) -> Option<(Time, E)> {
        self.heap.first().map(|&k| Self::decode(k))
    }

    /// Replace the earliest event by `ev` at (`t`, `seq`) — one sift instead of a
    /// pop and a push; used when a link FIFO's next arrival follows its head.
    #[inline]
    pub fn replace_top(&mut self, t: Time, seq: u64, ev: E) {
        self.pushed += 1;
        if self.heap.is_empty() {
            self.push_seq(t, seq, ev);
        } else {
            self.sift_down_from_root(Self::key(t, seq, ev));
        }
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.first().map(|&k| Time((k >> 64) as u64))
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

/// A general priority queue of any `Copy` event ordered by `(time, sequence)`: a
/// binary heap of (`u128` key, event) entries, for models whose events do not
/// pack into 28 bits.
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
        EventQueue {
            heap: BinaryHeap::with_capacity(4096),
            seq: 0,
            pushed: 0,
        }
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
        self.heap.push(Entry {
            key: (u128::from(t.0) << 64) | u128::from(seq),
            ev,
        });
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
            *top = Entry {
                key: (u128::from(t.0) << 64) | u128::from(seq),
                ev,
            };
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
        let mut q: EventQueue<u32> = EventQueue::new();
        q.push(Time(5), 1);
        q.push(Time(3), 2);
        q.push(Time(5), 3);
        q.push(Time(3), 4);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
        let mut p: PackedQueue<u32> = PackedQueue::new();
        for (t, v) in [(5, 1), (3, 2), (5, 3), (3, 4)] {
            p.push(Time(t), v);
        }
        let order: Vec<u32> = std::iter::from_fn(|| p.pop().map(|e| e.1)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }

    proptest::proptest! {
        /// The 4-ary heap pops in (time, insertion) order, like a sort.
        #[test]
        fn heap_pops_sorted(ts in proptest::collection::vec(0u64..20, 1..300), mix in proptest::collection::vec(0u8..3, 1..300)) {
            let mut q: PackedQueue<u32> = PackedQueue::new();
            let mut want = Vec::new();
            let mut got = Vec::new();
            let mut k = 0usize;
            let mut floor = 0u64;
            for (i, &t) in ts.iter().enumerate() {
                q.push(Time(floor + t), i as u32);
                want.push((floor + t, i as u32));
                if mix[k % mix.len()] == 0 {
                    let (tt, v) = q.pop().unwrap();
                    got.push((tt.0, v));
                    floor = tt.0;
                }
                k += 1;
            }
            while let Some((tt, v)) = q.pop() {
                got.push((tt.0, v));
            }
            want.sort();
            // Popping in between never reorders: the result is the sorted sequence
            // whenever pushes never go below the last popped time.
            proptest::prop_assert_eq!(got, want);
        }

        /// Parking ordered streams in FIFOs pops in exactly the order one heap gives.
        #[test]
        fn fifos_match_a_single_heap(ops in proptest::collection::vec((0u8..3, 0u64..50), 1..200)) {
            let mut all: PackedQueue<u32> = PackedQueue::new();
            let mut fq: PackedQueue<u32> = PackedQueue::new();
            let mut fifos: Vec<Fifo<u32>> = vec![Fifo::default(); 3];
            let mut last = [0u64; 3];
            for (i, (dir, dt)) in ops.iter().enumerate() {
                let d = *dir as usize;
                last[d] += dt;
                let t = Time(last[d]);
                let s = fq.next_seq();
                all.push(t, (d as u32) << 16 | i as u32);
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
            let want: Vec<_> = std::iter::from_fn(|| all.pop()).map(|(t, v)| (t, (v >> 16, v & 0xffff))).collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
