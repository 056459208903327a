//! Append-only blocks holding defined maps in their wire form (`raw`), one allocation per
//! block instead of several per map. Pure.
//!
//! A block is freed once no entry refers to it any more; blocks are appended in definition
//! order and freed from the front, so a map that outlives its neighbours would pin its block:
//! the repository takes such maps out (`Repository::collect`) once the block is old.

use std::collections::VecDeque;
use std::ops::Range;

use crate::core::model::ContextId;

/// Bytes a new block reserves (a bigger map gets a block of its own size).
pub const BLOCK_BYTES: usize = 64 << 10;

/// Where a defined map's wire form is: a block's sequence number and a byte range in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub block: u64,
    pub range: Range<u32>,
}

#[derive(Debug)]
struct Block {
    bytes: Vec<u8>,
    /// Entries still referring to this block.
    live: usize,
    /// Ids defined in this block, in order (some since freed or taken out).
    ids: Vec<ContextId>,
    /// When its first map was stored.
    born_ns: i64,
}

/// The blocks, oldest first.
#[derive(Debug, Default)]
pub struct Blocks {
    blocks: VecDeque<Block>,
    /// Sequence number of `blocks[0]`.
    first: u64,
}

impl Blocks {
    /// Stores `raw` for `id`, at `now_ns`.
    pub fn push(&mut self, id: ContextId, raw: &[u8], now_ns: i64) -> Place {
        let full = self
            .blocks
            .back()
            .is_none_or(|b| b.bytes.capacity() - b.bytes.len() < raw.len());
        if full {
            self.blocks.push_back(Block {
                bytes: Vec::with_capacity(BLOCK_BYTES.max(raw.len())),
                live: 0,
                ids: Vec::new(),
                born_ns: now_ns,
            });
        }
        let block = self.first + self.blocks.len() as u64 - 1;
        let b = self.blocks.back_mut().expect("a block was just ensured");
        let start = b.bytes.len() as u32;
        b.bytes.extend_from_slice(raw);
        b.live += 1;
        b.ids.push(id);
        Place {
            block,
            range: start..b.bytes.len() as u32,
        }
    }

    /// The bytes stored at `place`; empty when the block is gone (never for a live place).
    pub fn get(&self, place: &Place) -> &[u8] {
        self.block(place.block)
            .and_then(|b| {
                b.bytes
                    .get(place.range.start as usize..place.range.end as usize)
            })
            .unwrap_or_default()
    }

    fn block(&self, seq: u64) -> Option<&Block> {
        let i = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.blocks.get(i)
    }

    /// One entry no longer refers to `place`'s block; blocks nobody refers to are freed from the
    /// front.
    pub fn unref(&mut self, place: &Place) {
        let Some(i) = place
            .block
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok())
        else {
            return;
        };
        if let Some(b) = self.blocks.get_mut(i) {
            b.live = b.live.saturating_sub(1);
            if b.live == 0 {
                // Its memory now; its slot when it reaches the front.
                b.bytes = Vec::new();
                b.ids = Vec::new();
            }
        }
        while self.blocks.front().is_some_and(|b| b.live == 0) {
            self.blocks.pop_front();
            self.first += 1;
        }
    }

    /// The oldest block still referred to, when it was born at or before `before_ns`: its
    /// sequence number and the ids defined in it, handed over (the caller takes out the maps
    /// still there, which frees the block).
    pub fn take_old_front(&mut self, before_ns: i64) -> Option<(u64, Vec<ContextId>)> {
        let b = self.blocks.front_mut()?;
        (b.live > 0 && b.born_ns <= before_ns).then(|| (self.first, std::mem::take(&mut b.ids)))
    }

    /// Blocks held (tests and figures).
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Bytes reserved by all blocks.
    pub fn reserved(&self) -> usize {
        self.blocks.iter().map(|b| b.bytes.capacity()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_frees_in_order() {
        let mut b = Blocks::default();
        let p1 = b.push(1, b"one", 10);
        let p2 = b.push(2, b"two!", 11);
        assert_eq!(p1.block, p2.block);
        assert_eq!(b.get(&p1), b"one");
        assert_eq!(b.get(&p2), b"two!");
        b.unref(&p1);
        assert_eq!(b.get(&p2), b"two!");
        b.unref(&p2);
        assert!(b.is_empty(), "the last block freed once unused");
        assert_eq!(b.get(&p2), b"");
    }

    #[test]
    fn a_full_block_starts_another_and_frees_from_the_front() {
        let mut b = Blocks::default();
        let big = vec![7u8; BLOCK_BYTES - 10];
        let p1 = b.push(1, &big, 0);
        let p2 = b.push(2, &[1; 20], 5);
        let p3 = b.push(3, &vec![2; BLOCK_BYTES * 2], 6);
        assert_eq!((p1.block, p2.block, p3.block), (0, 1, 2));
        assert_eq!(b.len(), 3);
        assert_eq!(b.get(&p3).len(), BLOCK_BYTES * 2);
        b.unref(&p2); // the middle one: memory freed, slot kept until it is at the front
        assert_eq!(b.len(), 3);
        assert!(b.reserved() < BLOCK_BYTES * 4);
        assert_eq!(b.take_old_front(-1), None, "not old yet");
        b.unref(&p1);
        assert_eq!(b.len(), 1, "both front blocks gone");
        assert_eq!(b.get(&p3).len(), BLOCK_BYTES * 2);
        assert_eq!(b.take_old_front(6), Some((2, vec![3])));
        assert_eq!(b.take_old_front(6), Some((2, vec![])), "handed over once");
    }
}
