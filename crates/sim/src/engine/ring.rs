//! FIFO rings of `Copy` values for the RoCE model's switch egress queues and a
//! NIC's control frames, and the IB model's QP send queues: `VecDeque`'s
//! operations, with a push the compiler inlines
//! (`VecDeque::push_back` stays a call that takes the value through the stack,
//! written there field by field and copied whole into the slot; inlined, the
//! fields go straight to the slot: ~1% fewer instructions in the RoCE run). A
//! power-of-two number of slots makes a position a mask.

/// Values in insertion order.
#[derive(Clone, Debug)]
pub(crate) struct Ring<T> {
    /// The slots: empty, or a power of two of them (a boxed slice: the ring is
    /// 24 bytes, so a [`HeadRing`] of a 32-byte value is still one line).
    buf: Box<[T]>,
    /// Position of the head in `buf`.
    head: u32,
    /// Values held.
    len: u32,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Ring {
            buf: Box::default(),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Ring<T> {
    /// Position `i` values after the head (`buf` not empty).
    #[inline(always)]
    fn pos(&self, i: u32) -> usize {
        (self.head.wrapping_add(i) as usize) & (self.buf.len() - 1)
    }

    /// Values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Nothing held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `v`.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, v: T) {
        if self.len as usize == self.buf.len() {
            self.grow(v);
        }
        let i = self.pos(self.len);
        self.buf[i] = v;
        self.len += 1;
    }

    /// Twice the slots (at least 4), the values moved to the front in order;
    /// `fill` (the value about to be pushed) fills the new slots.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, fill: T) {
        let cap = (self.buf.len() * 2).max(4);
        let mut buf = Vec::with_capacity(cap);
        buf.extend((0..self.len).map(|i| self.buf[self.pos(i)]));
        buf.resize(cap, fill);
        self.buf = buf.into_boxed_slice();
        self.head = 0;
    }

    /// Remove the head.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.pos(0)];
        self.head = self.pos(1) as u32;
        self.len -= 1;
        Some(v)
    }

    /// The head.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        (self.len > 0).then(|| &self.buf[self.pos(0)])
    }

    /// Remove everything and start again at the first slot (a queue that
    /// mostly holds a packet or two then reuses the same, cached, line).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// The values, head first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        (0..self.len).map(move |i| &self.buf[self.pos(i)])
    }
}

/// A [`Ring`] whose head is kept in the header itself, one 64-byte line with
/// the ring's pointers (for a value of up to 32 bytes): the RoCE switch egress
/// queues, which mostly hold a packet or none, and an IB QP's send queue,
/// which mostly holds one long message. Queueing into an empty queue then writes the line its length was just
/// read from, and the dequeue of a lone packet reads it from there too, instead
/// of a slot of its own, last touched a packet earlier and long out of cache.
#[derive(Clone, Debug)]
#[repr(align(64))]
pub(crate) struct HeadRing<T> {
    /// The head, when `len > 0`.
    first: T,
    /// Values held, the head included.
    len: u32,
    /// The values after the head, in order.
    rest: Ring<T>,
}

impl<T: Default> Default for HeadRing<T> {
    fn default() -> Self {
        HeadRing {
            first: T::default(),
            len: 0,
            rest: Ring::default(),
        }
    }
}

impl<T: Copy> HeadRing<T> {
    /// Values held.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len as usize
    }

    /// Nothing held.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `v`.
    #[inline(always)]
    pub(crate) fn push_back(&mut self, v: T) {
        if self.len == 0 {
            self.first = v;
        } else {
            self.rest.push_back(v);
        }
        self.len += 1;
    }

    /// Remove the head.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.first;
        self.len -= 1;
        if self.len > 0 {
            self.first = self.rest.pop_front().expect("the values after the head");
        } else {
            // Empty: the ring starts again at its first slot.
            self.rest.clear();
        }
        Some(v)
    }

    /// The head.
    #[inline]
    pub(crate) fn front(&self) -> Option<&T> {
        (self.len > 0).then_some(&self.first)
    }

    /// The value after the head (the one a pop moves into the header line).
    #[inline]
    pub(crate) fn second(&self) -> Option<&T> {
        self.rest.front()
    }

    /// The values, head first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        let first = (self.len > 0).then_some(&self.first);
        first.into_iter().chain(self.rest.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// The same values in the same order as a `VecDeque` through wrap-arounds,
    /// growth and resets (`$reset`), pushes and pops interleaved in uneven
    /// bursts; the two rings share their method names, so one body serves both.
    macro_rules! matches_a_vecdeque {
        ($name:ident, $ring:ty, $reset:expr, $check:expr) => {
            #[test]
            fn $name() {
                let mut r: $ring = Default::default();
                let mut d: VecDeque<(u64, u8)> = VecDeque::new();
                assert!(r.front().is_none() && r.pop_front().is_none());
                let mut v = 0u64;
                for round in 0..300u64 {
                    for _ in 0..(round * 7 % 11) {
                        v += 1;
                        r.push_back((v, v as u8));
                        d.push_back((v, v as u8));
                    }
                    for _ in 0..(round * 5 % 10) {
                        assert_eq!(r.pop_front(), d.pop_front());
                    }
                    if round % 37 == 36 {
                        $reset(&mut r);
                        d.clear();
                    }
                    assert_eq!(r.len(), d.len());
                    assert_eq!(r.is_empty(), d.is_empty());
                    assert_eq!(r.front(), d.front());
                    assert!(r.iter().eq(d.iter()));
                    $check(&r, &d);
                }
                while let Some(x) = d.pop_front() {
                    assert_eq!(r.pop_front(), Some(x));
                }
                assert!(r.pop_front().is_none());
            }
        };
    }

    matches_a_vecdeque!(
        ring_matches_a_vecdeque,
        Ring<(u64, u8)>,
        |r: &mut Ring<(u64, u8)>| r.clear(),
        |_: &Ring<(u64, u8)>, _: &VecDeque<(u64, u8)>| ()
    );

    matches_a_vecdeque!(
        head_ring_matches_a_vecdeque,
        HeadRing<(u64, u8)>,
        // Drain: the ring starts again at its first slot.
        |r: &mut HeadRing<(u64, u8)>| while r.pop_front().is_some() {},
        |r: &HeadRing<(u64, u8)>, d: &VecDeque<(u64, u8)>| assert_eq!(r.second(), d.get(1))
    );
}
