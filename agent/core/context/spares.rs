//! The spare queue: spare rings waiting for a thread's first context, in memory Java reads and
//! takes from without a JNI call (pure; ARCHITECTURE.md, "Spare rings").
//!
//! One producer, the agent, under the registry's lock (the worker tops the queue up every round);
//! any number of consumers, Java threads (`RingWriter.reserveSpare`). Layout, 8-byte words in
//! native byte order:
//!
//! | word | name | writer | meaning |
//! |---|---|---|---|
//! | 0 | `head` | Java (compare-and-set) | spares taken so far |
//! | 1 | `slots` | agent, at creation | [`SLOTS`], a power of two |
//! | 2 | `capacity` | agent, before a publication's `tail` | entries of the spares published |
//! | 8 | `tail` | agent (release store) | spares published so far (its own cache line, away from `head`) |
//! | 16 + 2 (`i mod SLOTS`) | slot | agent | the address of spare number `i` |
//! | 17 + 2 (`i mod SLOTS`) | slot | agent | its handle |
//!
//! A take reads `head` (`h`), then `tail` (acquire); `h == tail` is empty. It reads slot `h`
//! (the address, then the handle, one cache line) and `capacity` *before* it moves `head` from
//! `h` to `h + 1` with a compare-and-set, and owns that spare only if the compare-and-set
//! succeeds. With the handle and the capacity from the queue the taker reads nothing of the
//! ring's own memory before its first transition, which claims the ring (ARCHITECTURE.md,
//! "Spare rings": the ring's header is cold memory, and a load of it was half of a first
//! context). The agent writes the slot of spare `t` only while `t - head < SLOTS`: a slot is
//! written again only once `head` has passed its previous spare, so a take whose compare-and-set
//! succeeded read its slot before that. Spares are taken in the
//! order they were published, the order the registry made them (which the registry's adoption of
//! claims relies on, see `registry`).
//!
//! The queue lives as long as the registry that owns it, which lives as long as the agent: Java
//! may read it whenever it likes once it has its address.

use std::sync::atomic::{AtomicI64, Ordering};

/// Slots: the most spares that can wait at once (a power of two).
pub const SLOTS: usize = 1024;
/// Spares the worker keeps waiting at least, once Java asked for the queue (1 MiB at the
/// default ring).
pub const MIN_WAITING: usize = 64;
const HEAD: usize = 0;
const SLOT_COUNT: usize = 1;
const RING_CAPACITY: usize = 2;
const TAIL: usize = 8;
const FIRST_SLOT: usize = 16;

/// A spare as published: its ring's address, handle and capacity (entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spare {
    pub address: *mut u8,
    pub handle: u64,
    pub capacity: usize,
}

/// How many spares to keep waiting after `taken` were taken since the last top-up: twice that
/// (a round's takes, with room for a round twice as busy), within `MIN_WAITING..=SLOTS`. A take
/// that finds none waiting registers through JNI instead.
pub fn target(taken: u64) -> usize {
    (taken.saturating_mul(2).min(SLOTS as u64) as usize).max(MIN_WAITING)
}

/// Spare rings published for Java to take, oldest first.
#[derive(Debug)]
pub struct SpareQueue {
    words: Box<[AtomicI64]>,
}

impl Default for SpareQueue {
    fn default() -> Self {
        let q = SpareQueue {
            words: (0..FIRST_SLOT + 2 * SLOTS)
                .map(|_| AtomicI64::new(0))
                .collect(),
        };
        q.words[SLOT_COUNT].store(SLOTS as i64, Ordering::Relaxed);
        q
    }
}

impl SpareQueue {
    /// The queue's address, for Java (`Natives.spareQueue`).
    pub fn address(&self) -> *mut i64 {
        self.words[HEAD].as_ptr()
    }

    /// Spares taken so far.
    pub fn taken(&self) -> u64 {
        self.words[HEAD].load(Ordering::Acquire) as u64
    }

    /// Spares published so far.
    pub fn published(&self) -> u64 {
        // Only the producer writes it.
        self.words[TAIL].load(Ordering::Relaxed) as u64
    }

    /// Spares published and not taken yet.
    pub fn waiting(&self) -> usize {
        self.published().saturating_sub(self.taken()) as usize
    }

    /// How many more spares fit now.
    pub fn room(&self) -> usize {
        SLOTS - self.waiting().min(SLOTS)
    }

    /// Spare `i`'s two words: its address and its handle.
    fn slot(&self, i: u64) -> (&AtomicI64, &AtomicI64) {
        let w = FIRST_SLOT + 2 * (i % SLOTS as u64) as usize;
        (&self.words[w], &self.words[w + 1])
    }

    /// Publishes `spares`, oldest first (the producer only, at most [`SpareQueue::room`] of them;
    /// the rest are not published and their count is returned short). They share one capacity
    /// (the agent's ring size), which Java reads from the queue.
    pub fn publish(&self, spares: &[Spare]) -> usize {
        let t = self.published();
        let n = spares.len().min(self.room());
        for (k, spare) in spares[..n].iter().enumerate() {
            let (address, handle) = self.slot(t + k as u64);
            address.store(spare.address as i64, Ordering::Relaxed);
            handle.store(spare.handle as i64, Ordering::Relaxed);
            debug_assert_eq!(spare.capacity, spares[0].capacity, "one capacity per queue");
            self.words[RING_CAPACITY].store(spare.capacity as i64, Ordering::Relaxed);
        }
        // The slots before the new tail (release: a take that sees it sees them).
        self.words[TAIL].store((t + n as u64) as i64, Ordering::Release);
        n
    }

    /// A take as Java's `RingWriter.reserveSpare` does it (tests only: Java is the consumer):
    /// the oldest spare's address, `None` when none is waiting.
    #[cfg(test)]
    pub fn take(&self) -> Option<i64> {
        self.take_spare().map(|(address, _, _)| address)
    }

    /// The same take with the handle and the capacity read from the queue.
    #[cfg(test)]
    pub fn take_spare(&self) -> Option<(i64, i64, i64)> {
        loop {
            let h = self.words[HEAD].load(Ordering::Acquire);
            let t = self.words[TAIL].load(Ordering::Acquire);
            if h >= t {
                return None;
            }
            let (address, handle) = self.slot(h as u64);
            let spare = (
                address.load(Ordering::Relaxed),
                handle.load(Ordering::Relaxed),
                self.words[RING_CAPACITY].load(Ordering::Relaxed),
            );
            if self.words[HEAD]
                .compare_exchange(h, h + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(spare);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn addr(i: usize) -> *mut u8 {
        (0x1000 + 64 * i) as *mut u8
    }

    /// Spare `i` of the tests: its handle is `i + 7`, its capacity 1024.
    fn spare(i: usize) -> Spare {
        Spare {
            address: addr(i),
            handle: i as u64 + 7,
            capacity: 1024,
        }
    }

    fn spares(range: std::ops::Range<usize>) -> Vec<Spare> {
        range.map(spare).collect()
    }

    #[test]
    fn the_target_follows_the_takes_within_bounds() {
        assert_eq!(target(0), MIN_WAITING);
        assert_eq!(target(20), MIN_WAITING);
        assert_eq!(target(200), 400);
        assert_eq!(target(u64::MAX), SLOTS);
        assert!(SLOTS.is_power_of_two());
    }

    #[test]
    fn spares_come_out_in_the_order_published() {
        let q = SpareQueue::default();
        assert_eq!(q.take(), None);
        assert_eq!(q.publish(&spares(1..3)), 2);
        assert_eq!(q.waiting(), 2);
        assert_eq!(
            q.take_spare(),
            Some((addr(1) as i64, 8, 1024)),
            "address, handle, capacity"
        );
        assert_eq!(q.take(), Some(addr(2) as i64));
        assert_eq!(q.take(), None);
        assert_eq!((q.taken(), q.published(), q.waiting()), (2, 2, 0));
    }

    #[test]
    fn a_full_queue_publishes_no_more_until_a_take() {
        let q = SpareQueue::default();
        assert_eq!(q.publish(&spares(0..SLOTS + 5)), SLOTS);
        assert_eq!(q.room(), 0);
        assert_eq!(q.publish(&[spare(9999)]), 0);
        assert_eq!(q.take(), Some(addr(0) as i64));
        assert_eq!(
            q.publish(&[spare(SLOTS)]),
            1,
            "the taken spare's slot is free"
        );
        for i in 1..=SLOTS {
            let handle = i as i64 + 7;
            assert_eq!(q.take_spare(), Some((addr(i) as i64, handle, 1024)));
        }
        assert_eq!(q.take(), None);
    }

    #[test]
    fn concurrent_takes_get_every_spare_exactly_once() {
        let q = Arc::new(SpareQueue::default());
        let total = 20_000usize;
        let takers: Vec<_> = (0..4)
            .map(|_| {
                let q = Arc::clone(&q);
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    while got.len() < total {
                        match q.take_spare() {
                            Some((a, _, _)) if a < 0 => break, // the end mark
                            Some((a, h, _)) => {
                                assert_eq!(h, (a - 0x1000) / 64 + 7, "the spare's own handle");
                                got.push(a);
                            }
                            None => std::hint::spin_loop(),
                        }
                    }
                    got
                })
            })
            .collect();
        let mut next = 0usize;
        while next < total {
            next += q.publish(&spares(next..total.min(next + 100)));
        }
        let end = Spare {
            address: -1isize as *mut u8,
            ..spare(0)
        };
        let ends = [end; 4];
        let mut sent = 0;
        while sent < ends.len() {
            sent += q.publish(&ends[sent..]);
        }
        let mut all: Vec<i64> = takers
            .into_iter()
            .flat_map(|t| t.join().expect("taker"))
            .collect();
        all.sort_unstable();
        let expected: Vec<i64> = (0..total).map(|i| addr(i) as i64).collect();
        assert_eq!(all, expected, "each spare taken once, none lost");
    }
}
