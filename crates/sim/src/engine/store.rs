//! A slab with a free list: `u32` ids, O(1) insert and remove, and no allocation
//! once the run has reached its peak number of live items (freed slots are reused
//! last-in first-out, which keeps the hot slots in cache).

/// Id of a packet (or any item) in a [`Slab`].
pub type PacketId = u32;

/// Slab storage.
#[derive(Debug, Default)]
pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    live: usize,
    peak: usize,
}

impl<T> Slab<T> {
    /// An empty slab with room for `cap` items before it grows.
    pub fn with_capacity(cap: usize) -> Slab<T> {
        Slab {
            items: Vec::with_capacity(cap),
            free: Vec::new(),
            live: 0,
            peak: 0,
        }
    }

    /// Store `v`, returning its id.
    #[inline]
    pub fn insert(&mut self, v: T) -> PacketId {
        self.live += 1;
        if self.live > self.peak {
            self.peak = self.live;
        }
        if let Some(i) = self.free.pop() {
            self.items[i as usize] = v;
            i
        } else {
            self.items.push(v);
            (self.items.len() - 1) as u32
        }
    }

    /// Release `id` (its slot is reused by a later insert).
    #[inline]
    pub fn remove(&mut self, id: PacketId) {
        self.live -= 1;
        self.free.push(id);
    }

    /// Items currently stored.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Most items ever stored at once.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Slots allocated (live + free).
    pub fn slots(&self) -> usize {
        self.items.len()
    }
}

impl<T> std::ops::Index<PacketId> for Slab<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: PacketId) -> &T {
        &self.items[i as usize]
    }
}

impl<T> std::ops::IndexMut<PacketId> for Slab<T> {
    #[inline]
    fn index_mut(&mut self, i: PacketId) -> &mut T {
        &mut self.items[i as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots() {
        let mut s = Slab::with_capacity(2);
        let a = s.insert(1u8);
        let b = s.insert(2u8);
        s.remove(a);
        let c = s.insert(3u8);
        assert_eq!(c, a);
        assert_eq!(s[b], 2);
        assert_eq!(s[c], 3);
        assert_eq!(s.slots(), 2);
        assert_eq!(s.peak(), 2);
        assert_eq!(s.live(), 2);
    }
}
