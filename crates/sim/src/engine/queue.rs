//! The event queues, ordered by `(time, insertion sequence)`, so events at the
//! same picosecond run in the order they were scheduled and every run repeats
//! exactly: [`PackedQueue`] (a calendar queue of packed keys, the simulators' hot
//! queue) and [`EventQueue`] (a binary heap for events of any type). A model may
//! put a rank of its own in the sequence field instead ([`PackedQueue::push_seq`]):
//! the RoCE model ranks a picosecond's events by the events themselves, so that
//! a run split over threads orders them as one thread does.
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
//! The queue then holds timers + non-empty FIFOs (a few thousand on a 432-host
//! fabric) instead of every packet in flight.
//!
//! Cancellation is lazy: components stamp their timer events (a wake time or an
//! epoch) and ignore a popped event whose stamp is stale.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use super::table::Table;
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

/// A 4-ary min-heap of packed `u128` keys: four children per node halve the
/// depth of a binary heap and sit in one 64-byte cache line. [`PackedQueue`]
/// keeps its far-future events here.
#[derive(Clone, Debug, Default)]
struct Heap4 {
    h: Vec<u128>,
}

impl Heap4 {
    #[inline]
    fn push(&mut self, k: u128) {
        let h = &mut self.h;
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

    #[inline]
    fn peek(&self) -> Option<u128> {
        self.h.first().copied()
    }

    fn pop(&mut self) -> Option<u128> {
        let last = self.h.pop()?;
        if self.h.is_empty() {
            return Some(last);
        }
        let top = self.h[0];
        let h = &mut self.h;
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
            if mk >= last {
                break;
            }
            h[i] = mk;
            i = m;
        }
        h[i] = last;
        Some(top)
    }
}

/// Width of a calendar slot unless set otherwise (see
/// [`PackedQueue::with_slots`]): 2^10 ps (1.024 ns).
const SLOT_SHIFT: u32 = 10;
/// Slots in the calendar wheel by default: 4,096 × 1.024 ns = 4.2 µs ahead of the
/// current slot (see [`PackedQueue::with_horizon`]).
const DEFAULT_SLOTS: usize = 4096;

/// The simulator's hot queue, ordered by `(time, sequence)` like [`EventQueue`]:
/// a calendar queue of packed `u128` keys (`time (64) | sequence (36) | event (28)`).
///
/// ```text
///   cur (slot s, sorted)   wheel: slots s+1 .. s+n-1 (unsorted, bitmap of non-empty)   far: 4-ary heap
///   [k1 k2 k3] ─► pop k1    [..] [k7 k5] [] [k9] ...                                      (≥ s+n)
/// ```
///
/// Time is cut into slots of 1.024 ns (or another power of two of picoseconds:
/// [`Self::with_slots`]). Events of the slot being drained sit sorted in `cur`;
/// events of the next n-1 slots (n = 4,096 by default, or set from a horizon by
/// [`Self::with_horizon`]) sit unsorted in the wheel, one small vector
/// per slot; anything later waits in a 4-ary heap and moves into the wheel when
/// the wheel reaches it. A pop takes the next key of `cur`; when `cur` runs dry
/// the next non-empty slot (found through a bitmap) is sorted and becomes `cur`.
/// A push is an append to its slot's vector (a sorted insert when it lands in the
/// current slot). On a fabric nearly every event is scheduled at most a packet
/// time and a cable ahead, so almost nothing reaches the heap and both operations
/// are O(1) with a handful of keys per slot: pops come out in exactly the order of
/// a single heap holding every key (keys are unique, so the order is total).
///
/// Sequence numbers have 36 bits (6.8 × 10^10 events per run).
#[derive(Clone, Debug)]
pub struct PackedQueue<E> {
    /// Keys of slot `cur_slot`, sorted ascending; `cur[cur_pos]` is the next.
    cur: Vec<u128>,
    cur_pos: usize,
    cur_slot: u64,
    /// A slot is `2^shift` ps wide.
    shift: u32,
    /// Slot `s` (cur_slot < s < cur_slot + nslots) at index `s % nslots`.
    wheel: Table<Vec<u128>>,
    occupied: Table<u64>,
    /// Number of wheel slots (a power of two, at least 64).
    nslots: usize,
    in_wheel: usize,
    /// Keys of slots at or after cur_slot + nslots.
    far: Heap4,
    /// Room for [`bucket_pass`].
    scratch: Vec<u128>,
    len: usize,
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
            cur: Vec::with_capacity(64),
            cur_pos: 0,
            cur_slot: 0,
            shift: SLOT_SHIFT,
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            wheel: unsafe { crate::engine::Table::trusted((0..DEFAULT_SLOTS).map(|_| Vec::new()).collect()) },
            occupied: unsafe { crate::engine::Table::trusted(vec![0; DEFAULT_SLOTS / 64]) },
            nslots: DEFAULT_SLOTS,
            in_wheel: 0,
            far: Heap4::default(),
            scratch: Vec::new(),
            len: 0,
            seq: 0,
            pushed: 0,
            _e: std::marker::PhantomData,
        }
    }

    /// An empty queue whose wheel reaches about `horizon` ahead of the current
    /// slot (rounded up to a power of two of 1.024 ns slots, at least 64 slots).
    /// Events further ahead wait in a heap; a shorter wheel touches less memory.
    /// The order of events does not depend on the horizon.
    pub fn with_horizon(horizon: Time) -> PackedQueue<E> {
        PackedQueue::with_slots(horizon, SLOT_SHIFT)
    }

    /// [`Self::with_horizon`] with slots `2^shift` ps wide (8 to 16). Wider
    /// slots hold more events to sort at once; narrower ones end more often,
    /// and a model that looks a few events ahead (see [`Self::peek_ahead`])
    /// sees only as far as the end of the current slot. The order of events
    /// does not depend on the width.
    pub fn with_slots(horizon: Time, shift: u32) -> PackedQueue<E> {
        assert!((8..=16).contains(&shift), "calendar slot of 2^{shift} ps");
        let n = ((horizon.0 >> shift) as usize).next_power_of_two().clamp(64, 1 << 20);
        PackedQueue {
            // SAFETY: indexed only by ids this builder mints for these tables (see engine::table).
            wheel: unsafe { crate::engine::Table::trusted((0..n).map(|_| Vec::new()).collect()) },
            occupied: unsafe { crate::engine::Table::trusted(vec![0; n / 64]) },
            nslots: n,
            shift,
            ..PackedQueue::new()
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

    #[inline]
    fn slot_of(&self, k: u128) -> u64 {
        ((k >> 64) as u64) >> self.shift
    }

    /// `cur[i]` for `i < cur.len()`, the one index the hot path reads after
    /// checking it (unchecked in release builds, like a [`Table`]).
    #[inline(always)]
    fn cur_at(&self, i: usize) -> u128 {
        if cfg!(debug_assertions) {
            self.cur[i]
        } else {
            // SAFETY: callers check `cur_pos < cur.len()` first (pop, first).
            unsafe { *self.cur.get_unchecked(i) }
        }
    }

    /// Schedule `ev` at `t`, after everything already scheduled at `t`.
    #[inline]
    pub fn push(&mut self, t: Time, ev: E) {
        let s = self.next_seq();
        self.push_seq(t, s, ev);
    }

    /// Schedule `ev` at `t` with a sequence number taken earlier by [`Self::next_seq`]
    /// (or any rank below 2^36 a model orders ties by; equal keys pop in any order).
    #[inline]
    pub fn push_seq(&mut self, t: Time, seq: u64, ev: E) {
        self.pushed += 1;
        self.insert(Self::key(t, seq, ev));
    }

    #[inline(always)]
    fn insert(&mut self, k: u128) {
        let s = self.slot_of(k);
        let d = s.wrapping_sub(self.cur_slot);
        if d.wrapping_sub(1) < self.nslots as u64 - 1 && self.len > 0 {
            // The common case: a later slot inside the wheel.
            let i = (s as usize) & (self.nslots - 1);
            self.wheel[i].push(k);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_wheel += 1;
            self.len += 1;
        } else {
            self.insert_slow(k, s);
        }
    }

    #[inline(never)]
    fn insert_slow(&mut self, k: u128, s: u64) {
        if self.len == 0 {
            self.cur_slot = s;
        }
        if s < self.cur_slot {
            self.rebase(s);
        }
        self.len += 1;
        self.place(k, s);
    }

    /// Put key `k` of slot `s >= cur_slot` where it belongs.
    #[inline]
    fn place(&mut self, k: u128, s: u64) {
        debug_assert!(s >= self.cur_slot);
        if s == self.cur_slot {
            // Usually the newest key of the slot: an append.
            if self.cur.last().is_none_or(|&l| l < k) {
                self.cur.push(k);
            } else {
                let pos = self.cur_pos + self.cur[self.cur_pos..].partition_point(|&x| x < k);
                self.cur.insert(pos, k);
            }
        } else if s - self.cur_slot < self.nslots as u64 {
            let i = (s as usize) & (self.nslots - 1);
            self.wheel[i].push(k);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_wheel += 1;
        } else {
            self.far.push(k);
        }
    }

    /// A key earlier than the current slot (an event scheduled before the last one
    /// popped): rebuild with the wheel starting at slot `s`. Never happens in a
    /// model that schedules at or after `now`; kept so the queue is a correct
    /// priority queue for any input.
    #[cold]
    #[inline(never)]
    fn rebase(&mut self, s: u64) {
        let mut all = self.cur.split_off(self.cur_pos);
        self.cur.clear();
        self.cur_pos = 0;
        for b in self.wheel.iter_mut() {
            all.append(b);
        }
        all.append(&mut self.far.h);
        self.occupied.iter_mut().for_each(|w| *w = 0);
        self.in_wheel = 0;
        self.cur_slot = s;
        for k in all {
            self.place(k, self.slot_of(k));
        }
    }

    /// Distance from `cur_slot` to the next non-empty wheel slot.
    #[inline]
    fn next_occupied(&self) -> Option<u64> {
        if self.in_wheel == 0 {
            return None;
        }
        let ci = (self.cur_slot as usize) & (self.nslots - 1);
        let start = (ci + 1) & (self.nslots - 1);
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        let found = if first != 0 {
            w0 * 64 + first.trailing_zeros() as usize
        } else {
            let mut f = None;
            let nw = self.occupied.len();
            for k in 1..=nw {
                let w = (w0 + k) % nw;
                let m = self.occupied[w];
                if m != 0 {
                    f = Some(w * 64 + m.trailing_zeros() as usize);
                    break;
                }
            }
            f.expect("in_wheel > 0 means a bit is set")
        };
        Some(((found + self.nslots - ci) & (self.nslots - 1)) as u64)
    }

    /// `cur` is empty and the queue is not: move to the next non-empty slot.
    #[inline(never)]
    fn advance(&mut self) {
        debug_assert!(self.cur_pos == self.cur.len() && self.len > 0);
        self.cur.clear();
        self.cur_pos = 0;
        let next = match self.next_occupied() {
            Some(d) => self.cur_slot + d,
            None => self.slot_of(self.far.peek().expect("len > 0")),
        };
        self.cur_slot = next;
        // Far keys that the wheel now reaches (each lands in a slot that was
        // empty: those between the old and new current slots).
        while let Some(k) = self.far.peek() {
            let s = self.slot_of(k);
            if s - next >= self.nslots as u64 {
                break;
            }
            self.far.pop();
            if s == next {
                self.cur.push(k);
            } else {
                let i = (s as usize) & (self.nslots - 1);
                self.wheel[i].push(k);
                self.occupied[i / 64] |= 1 << (i % 64);
                self.in_wheel += 1;
            }
        }
        let i = (next as usize) & (self.nslots - 1);
        if self.occupied[i / 64] & (1 << (i % 64)) != 0 {
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.in_wheel -= self.wheel[i].len();
            if self.cur.is_empty() {
                std::mem::swap(&mut self.cur, &mut self.wheel[i]);
            } else {
                self.cur.append(&mut self.wheel[i]);
            }
        }
        sort_asc(&mut self.cur, &mut self.scratch, self.shift);
    }

    /// Remove and return the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        if self.cur_pos == self.cur.len() {
            if self.len == 0 {
                return None;
            }
            self.advance();
        }
        let k = self.cur_at(self.cur_pos);
        self.cur_pos += 1;
        self.len -= 1;
        Some(Self::decode(k))
    }

    /// The earliest key, left in place.
    #[inline]
    fn peek_key(&self) -> Option<u128> {
        if let Some(&k) = self.cur.get(self.cur_pos) {
            return Some(k);
        }
        if self.len == 0 {
            return None;
        }
        match self.next_occupied() {
            Some(d) => {
                let i = ((self.cur_slot + d) as usize) & (self.nslots - 1);
                self.wheel[i].iter().copied().min()
            }
            None => self.far.peek(),
        }
    }

    /// The earliest event, left in place.
    #[inline]
    pub fn peek(&self) -> Option<(Time, E)> {
        self.peek_key().map(Self::decode)
    }

    /// The earliest event, left in place, making it the head of the current slot
    /// so that the [`Self::pop`] or [`Self::replace_top`] that follows is O(1).
    /// Same result as [`Self::peek`].
    #[inline]
    pub fn first(&mut self) -> Option<(Time, E)> {
        self.first_packed().map(|(t, w)| (t, E::unpack(w)))
    }

    /// [`Self::first`] with the event left packed (its [`Packed::pack`] word), for
    /// a run loop that tests the kind bits itself instead of decoding.
    #[inline]
    pub fn first_packed(&mut self) -> Option<(Time, u32)> {
        if self.cur_pos == self.cur.len() {
            if self.len == 0 {
                return None;
            }
            self.advance();
        }
        // advance() leaves cur_pos < cur.len() when len > 0.
        debug_assert!(self.cur_pos < self.cur.len());
        let k = self.cur_at(self.cur_pos);
        Some((Time((k >> 64) as u64), (k as u32) & ((1 << EV_BITS) - 1)))
    }

    /// [`Self::peek_ahead`] with the event left packed.
    #[inline]
    pub fn peek_ahead_packed(&self, n: usize) -> Option<u32> {
        self.cur
            .get(self.cur_pos + n)
            .map(|&k| (k as u32) & ((1 << EV_BITS) - 1))
    }

    /// The event `n` places after the earliest one, or the current slot's last
    /// event if the slot holds fewer: a prefetch hint without a branch on how
    /// many are left. Call after [`Self::first_packed`] returned `Some`.
    #[inline(always)]
    pub fn peek_ahead_clamped(&self, n: usize) -> u32 {
        debug_assert!(self.cur_pos < self.cur.len());
        let i = (self.cur_pos + n).min(self.cur.len() - 1);
        (self.cur_at(i) as u32) & ((1 << EV_BITS) - 1)
    }

    /// The event `n` places after the earliest one, if the queue already knows it
    /// without work (it is in the current calendar slot); for a model that
    /// prefetches what an upcoming event will touch. Call after [`Self::first`].
    #[inline]
    pub fn peek_ahead(&self, n: usize) -> Option<(Time, E)> {
        self.cur.get(self.cur_pos + n).map(|&k| Self::decode(k))
    }

    /// Replace the earliest event by `ev` at (`t`, `seq`): a pop and a push in one
    /// call; used when a link FIFO's next arrival follows its head.
    #[inline]
    pub fn replace_top(&mut self, t: Time, seq: u64, ev: E) {
        self.pop();
        self.push_seq(t, seq, ev);
    }

    /// Remove the event [`Self::first`] just returned (it must have returned
    /// `Some`, with no push since): the pop without its checks.
    #[inline(always)]
    pub fn pop_first(&mut self) {
        debug_assert!(self.cur_pos < self.cur.len());
        self.cur_pos += 1;
        self.len -= 1;
    }

    /// [`Self::pop_first`] then a push at (`t`, `seq`).
    #[inline(always)]
    pub fn replace_first(&mut self, t: Time, seq: u64, ev: E) {
        self.pop_first();
        self.push_seq(t, seq, ev);
    }

    /// Time of the earliest event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.peek_key().map(|k| Time((k >> 64) as u64))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events ever pushed.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

/// Sort a slot's keys: insertion sort for a handful; for more, first a
/// counting sort on the time's position within the slot ([`bucket_pass`]),
/// which leaves only the inversions inside one bucket for the insertion sort to
/// fix (a RoCE fabric makes about 35 events a nanosecond: the library sort took
/// 80 instructions a key). The insertion sort has a budget of moves: keys in
/// lockstep (many at one time, pushed out of sequence order) would make it
/// quadratic, and past the budget the library sort finishes the job.
#[inline]
fn sort_asc(v: &mut Vec<u128>, scratch: &mut Vec<u128>, shift: u32) {
    if v.len() > 16 {
        bucket_pass(v, scratch, shift);
    }
    let n = v.len();
    let mut budget = 4 * n;
    let p = v.as_mut_ptr();
    // SAFETY: every index read or written is below `n` (`j <= i < n`).
    unsafe {
        for i in 1..n {
            let k = *p.add(i);
            let mut j = i;
            while j > 0 && *p.add(j - 1) > k {
                *p.add(j) = *p.add(j - 1);
                j -= 1;
            }
            *p.add(j) = k;
            let moved = i - j;
            if moved > budget {
                v.sort_unstable();
                return;
            }
            budget -= moved;
        }
    }
}

/// Bits of a slot's time offset the bucket pass looks at: the top 5 of the
/// slot's `shift`, 32 buckets (of 128 ps in a 4.096 ns slot).
const BUCKET_BITS: u32 = 5;

/// Reorder `v` (one slot's keys) by the time's top `BUCKET_BITS` within the
/// slot, stably, into `scratch`, then swap the two (no copy back; `scratch`
/// keeps its length between calls, so it is not cleared either).
#[inline(never)]
fn bucket_pass(v: &mut Vec<u128>, scratch: &mut Vec<u128>, shift: u32) {
    const NB: usize = 1 << BUCKET_BITS;
    let bucket = |k: u128| (((k >> 64) as u64 >> (shift - BUCKET_BITS)) as usize) & (NB - 1);
    let mut start = [0u32; NB + 1];
    for &k in v.iter() {
        start[bucket(k) + 1] += 1;
    }
    for b in 1..=NB {
        start[b] += start[b - 1];
    }
    let n = v.len();
    if scratch.len() < n {
        scratch.resize(n, 0);
    }
    // SAFETY: the counts add up to `n`, so each bucket's running start stays
    // below `n <= scratch.len()`.
    let out = scratch.as_mut_ptr();
    for &k in v.iter() {
        let b = bucket(k);
        unsafe { *out.add(start[b] as usize) = k };
        start[b] += 1;
    }
    // SAFETY: `scratch[..n]` was written above; its tail (if longer) is old keys.
    unsafe { scratch.set_len(n) };
    std::mem::swap(v, scratch);
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
            let mut floor = 0u64;
            for (i, &t) in ts.iter().enumerate() {
                q.push(Time(floor + t), i as u32);
                want.push((floor + t, i as u32));
                if mix[i % mix.len()] == 0 {
                    let (tt, v) = q.pop().unwrap();
                    got.push((tt.0, v));
                    floor = tt.0;
                }
            }
            while let Some((tt, v)) = q.pop() {
                got.push((tt.0, v));
            }
            want.sort();
            // Popping in between never reorders: the result is the sorted sequence
            // whenever pushes never go below the last popped time.
            proptest::prop_assert_eq!(got, want);
        }

        /// The calendar queue against a sorted reference, with times spread over
        /// the current slot, the wheel and the far heap, pops interleaved, and
        /// pushes at or after the last popped time (what a simulation does).
        #[test]
        fn calendar_matches_a_sorted_reference(
            ops in proptest::collection::vec((0u8..4, 0u8..4, 0u64..1 << 20), 1..400),
            shift in 8u32..=14,
        ) {
            // 64 slots of 2^shift ps: many keys go through the heap
            let mut q: PackedQueue<u32> = PackedQueue::with_slots(Time::ns(50), shift);
            let mut reference = std::collections::BTreeSet::new();
            let mut now = 0u64;
            for (i, &(kind, scale, r)) in ops.iter().enumerate() {
                if kind == 0 {
                    let got = q.pop().map(|(t, v)| (t.0, v));
                    let want = reference.pop_first().map(|(t, _s, v)| (t, v));
                    proptest::prop_assert_eq!(got, want);
                    if let Some((t, _)) = got {
                        now = t;
                    }
                } else {
                    // same picosecond, same slot, inside the wheel, beyond the wheel
                    let dt = match scale { 0 => 0, 1 => r % 1024, 2 => r * 4, _ => r << 8 };
                    let s = q.next_seq();
                    q.push_seq(Time(now + dt), s, i as u32);
                    reference.insert((now + dt, s, i as u32));
                }
                proptest::prop_assert_eq!(q.len(), reference.len());
                proptest::prop_assert_eq!(q.peek_time().map(|t| t.0), reference.first().map(|e| e.0));
                if scale == 3 {
                    // `first` moves to the head's slot; later pushes may land before it.
                    let want = reference.first().map(|e| (e.0, e.2));
                    proptest::prop_assert_eq!(q.first().map(|(t, v)| (t.0, v)), want);
                    // The packed forms name the same events.
                    proptest::prop_assert_eq!(q.first_packed().map(|(t, v)| (t.0, v)), want);
                    let ahead: Vec<u32> = reference.iter().skip(1).take(3).map(|e| e.2).collect();
                    for (n, &v) in ahead.iter().enumerate() {
                        if let Some(got) = q.peek_ahead_packed(n + 1) {
                            // Known only within the head's slot, and then exact.
                            proptest::prop_assert_eq!(got, v);
                            proptest::prop_assert_eq!(q.peek_ahead_clamped(n + 1), v);
                        } else {
                            // Past the slot's end the clamped peek names the
                            // slot's last event (the head's, if it is alone).
                            let last = (1..=n)
                                .rev()
                                .find_map(|m| q.peek_ahead_packed(m))
                                .or(want.map(|(_, e)| e));
                            proptest::prop_assert_eq!(Some(q.peek_ahead_clamped(n + 1)), last);
                        }
                    }
                }
            }
            while let Some((t, v)) = q.pop() {
                let (wt, _, wv) = reference.pop_first().expect("reference has it");
                proptest::prop_assert_eq!((t.0, v), (wt, wv));
            }
            proptest::prop_assert!(reference.is_empty());
        }

        /// A slot's sort (insertion, or the bucket pass first, or the library
        /// sort when one bucket is crowded) gives the sorted keys, with times
        /// anywhere in one slot or piled on a few picoseconds, and sequence
        /// numbers in any order (a link FIFO's next arrival is pushed with the
        /// number it took when it was sent).
        #[test]
        fn slot_sort_sorts(
            keys in proptest::collection::vec((0u64..1024, 0u64..1 << 36), 0..200),
            piled in 0u64..3,
            shift in 8u32..=14,
        ) {
            let base = 77u64 << shift;
            let mut v: Vec<u128> = keys
                .iter()
                .enumerate()
                .map(|(i, &(t, seq))| {
                    // spread over the slot, or piled on a few picoseconds
                    let t = if piled > 0 { t % (piled * 3) } else { (t << shift) >> 10 };
                    // distinct keys: the event bits make each unique
                    PackedQueue::<u32>::key(Time(base + t), seq, i as u32)
                })
                .collect();
            let mut want = v.clone();
            want.sort_unstable();
            let mut scratch = Vec::new();
            sort_asc(&mut v, &mut scratch, shift);
            proptest::prop_assert_eq!(v, want);
        }

        /// A key earlier than the current slot (never made by the simulator) still
        /// comes out first.
        #[test]
        fn calendar_takes_a_key_before_the_current_slot(ts in proptest::collection::vec(0u64..1 << 40, 2..100), back in 1u64..1 << 30) {
            let mut q: PackedQueue<u32> = PackedQueue::new();
            let mut all: Vec<(u64, u32)> = Vec::new();
            for (i, &t) in ts.iter().enumerate() {
                q.push(Time(t + back), i as u32);
                all.push((t + back, i as u32));
            }
            all.sort();
            let first = q.pop().expect("non-empty");
            proptest::prop_assert_eq!((first.0.0, first.1), all[0]);
            let early = first.0.0 - back.min(first.0.0);
            q.push(Time(early), 9999);
            let mut want: Vec<(u64, u32)> = all[1..].to_vec();
            want.push((early, 9999));
            want.sort_by_key(|&(t, v)| (t, v == 9999));
            let got: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop()).map(|(t, v)| (t.0, v)).collect();
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
