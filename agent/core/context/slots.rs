//! A double-ended queue of optional entries in fixed-size chunks, for [`super::ids::Ids`]'s
//! window. Pure.
//!
//! The window spans every id from its oldest kept entry to its newest, up to 2^17 ids for
//! thread states: with a long-lived thread at its front (a pool thread, registered before a
//! server's fresh virtual threads) it grows to that span before the front entry moves to the
//! hash map. In one `VecDeque` that was a buffer reallocated as it grew (143 360 slots of a
//! thread state's 160 bytes, 23 MB, in `join/window_tests.rs`), kept at that capacity
//! afterwards with every slot touched as the queue wraps round it, and the smaller buffers it
//! grew out of left in glibc's arenas. In chunks, the span costs what it holds: a chunk is
//! allocated when the back reaches it, set aside when the front leaves it and taken again by
//! the back, so a steady window cycles through the same few chunks. Entries of consecutive ids
//! stay next to each other within a chunk; a lookup pays one more load (the chunk's address).

/// Slots per chunk.
pub const CHUNK: usize = 256;
/// Emptied chunks kept for reuse at most.
const KEEP_CHUNKS: usize = 8;
/// Emptied chunks left at the front of `chunks` before they are moved out (moving them shifts
/// the chunk pointers behind them).
const COMPACT_AFTER: usize = 4;

type Chunk<E> = Box<[Option<E>; CHUNK]>;

#[derive(Debug)]
pub struct Slots<E> {
    /// `chunks[..first]` are emptied (every slot `None`), not yet moved out.
    chunks: Vec<Chunk<E>>,
    first: usize,
    /// Position of slot 0 in `chunks[first]`.
    start: usize,
    len: usize,
    spare: Vec<Chunk<E>>,
}

impl<E> Default for Slots<E> {
    fn default() -> Self {
        Slots {
            chunks: Vec::new(),
            first: 0,
            start: 0,
            len: 0,
            spare: Vec::new(),
        }
    }
}

fn empty_chunk<E>() -> Chunk<E> {
    let slots: Box<[Option<E>]> = (0..CHUNK).map(|_| None).collect();
    match slots.try_into() {
        Ok(chunk) => chunk,
        Err(_) => unreachable!("CHUNK slots were collected"),
    }
}

impl<E> Slots<E> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i` (`i < len`).
    pub fn get(&self, i: usize) -> &Option<E> {
        let p = self.start + i;
        &self.chunks[self.first + p / CHUNK][p % CHUNK]
    }

    /// Slot `i` (`i < len`).
    pub fn get_mut(&mut self, i: usize) -> &mut Option<E> {
        let p = self.start + i;
        &mut self.chunks[self.first + p / CHUNK][p % CHUNK]
    }

    pub fn front(&self) -> Option<&Option<E>> {
        (self.len > 0).then(|| self.get(0))
    }

    pub fn push_back(&mut self, e: Option<E>) {
        let p = self.start + self.len;
        let c = self.first + p / CHUNK;
        if c == self.chunks.len() {
            let chunk = self.spare.pop().unwrap_or_else(empty_chunk);
            self.chunks.push(chunk);
        }
        self.chunks[c][p % CHUNK] = e;
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<Option<E>> {
        if self.len == 0 {
            return None;
        }
        let e = self.chunks[self.first][self.start].take();
        self.start += 1;
        self.len -= 1;
        if self.start == CHUNK || self.len == 0 {
            // Every slot of the front chunk before `start` was taken; with `len == 0` the rest
            // were never written since the chunk was last emptied.
            self.first += 1;
            self.start = 0;
            if self.first >= COMPACT_AFTER || self.len == 0 {
                for chunk in self.chunks.drain(..self.first) {
                    if self.spare.len() < KEEP_CHUNKS {
                        self.spare.push(chunk);
                    }
                }
                self.first = 0;
            }
        }
        Some(e)
    }

    /// Every slot, front first.
    pub fn iter(&self) -> impl Iterator<Item = &Option<E>> {
        (0..self.len).map(move |i| self.get(i))
    }

    /// Memory the chunks hold, in bytes, spare and emptied ones included (tests and figures).
    pub fn bytes(&self) -> usize {
        (self.chunks.len() + self.spare.len()) * CHUNK * std::mem::size_of::<Option<E>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_across_chunks() {
        let mut s = Slots::default();
        assert!(s.is_empty() && s.front().is_none() && s.pop_front().is_none());
        for i in 0..3 * CHUNK + 5 {
            s.push_back((i % 3 != 0).then_some(i));
        }
        assert_eq!(s.len(), 3 * CHUNK + 5);
        assert_eq!(*s.get(CHUNK + 1), Some(CHUNK + 1));
        *s.get_mut(CHUNK + 1) = None;
        assert_eq!(*s.get(CHUNK + 1), None);
        assert_eq!(s.front(), Some(&None));
        for i in 0..CHUNK + 2 {
            let want = (i % 3 != 0 && i != CHUNK + 1).then_some(i);
            assert_eq!(s.pop_front(), Some(want), "slot {i}");
        }
        assert_eq!(*s.get(1), Some(CHUNK + 3)); // slot 0 is CHUNK + 2, a multiple of 3
        let rest: Vec<_> = s.iter().flatten().copied().collect();
        let want: Vec<_> = (CHUNK + 2..3 * CHUNK + 5).filter(|i| i % 3 != 0).collect();
        assert_eq!(rest, want);
    }

    #[test]
    fn a_sliding_window_reuses_its_chunks() {
        // 1 000 slots alive at any time, 100 000 pushed and popped: the memory stays that of
        // the chunks the span covers plus the spares.
        let mut s = Slots::default();
        for i in 0..100_000usize {
            s.push_back(Some(i));
            if s.len() > 1_000 {
                assert_eq!(s.pop_front(), Some(Some(i - 1_000)));
            }
        }
        let most = (1_000 / CHUNK + 2 + COMPACT_AFTER + KEEP_CHUNKS)
            * CHUNK
            * std::mem::size_of::<Option<usize>>();
        assert!(s.bytes() <= most, "{} > {most}", s.bytes());
        while s.pop_front().is_some() {}
        assert!(s.is_empty());
        s.push_back(Some(7)); // starts again at a chunk's first slot
        assert_eq!(s.front(), Some(&Some(7)));
    }
}
