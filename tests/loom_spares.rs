//! Loom model check of the spare-queue protocol (ARCHITECTURE.md "Spare rings",
//! `agent/core/context/spares.rs`, Java's `RingWriter.reserveSpare`).
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=/tmp/tgt-loom cargo test --release --test loom_spares
//! ```
//!
//! As in `loom_ring.rs`, the queue's memory is shared with Java as raw words, which loom cannot
//! track, so the protocol is modelled with loom's atomics and the same orderings:
//!
//! * producer (`SpareQueue::publish`, one at a time under the registry's lock): `h = head`
//!   (Acquire); publishes spare `t` only while `t - h < SLOTS`: slot `t mod SLOTS`, its address
//!   and its handle (Relaxed), then `tail = t + 1` (Release).
//! * taker (`RingWriter.reserveSpare`): `h = head` (Acquire), `t = tail` (Acquire), none if
//!   `h >= t`; reads slot `h`'s address and handle (Relaxed), then compare-and-set `head` from
//!   `h` to `h + 1` (AcqRel); owns what it read only if that succeeded, else tries again.
//!
//! Checked in every interleaving with up to three preemptions: each spare is taken by exactly one
//! taker, and a taker gets the address and the handle published for the index it took (never a
//! later lap's, nor one of each). The negative control reads the
//! slot after the compare-and-set instead of before: loom finds a taker that got a later lap's
//! spare (two threads with one ring).
#![cfg(loom)]

use loom::sync::atomic::{AtomicI64, Ordering};
use loom::sync::Arc;
use loom::thread;

const SLOTS: i64 = 2;
/// Spares the producer publishes: more than the slots, so that slots are written again.
const SPARES: i64 = 3;

struct Queue {
    head: AtomicI64,
    tail: AtomicI64,
    /// Each slot's address and handle.
    slots: Vec<(AtomicI64, AtomicI64)>,
}

/// The value published as spare `i`'s address (distinct per index).
fn spare(i: i64) -> i64 {
    100 + i
}

/// The value published as spare `i`'s handle.
fn handle(i: i64) -> i64 {
    500 + i
}

impl Queue {
    fn new() -> Queue {
        Queue {
            head: AtomicI64::new(0),
            tail: AtomicI64::new(0),
            slots: (0..SLOTS)
                .map(|_| (AtomicI64::new(-1), AtomicI64::new(-1)))
                .collect(),
        }
    }

    /// Publishes spare `t` if there is room; whether it did.
    fn publish(&self, t: i64) -> bool {
        let h = self.head.load(Ordering::Acquire);
        if t - h >= SLOTS {
            return false;
        }
        let (address, h) = &self.slots[(t % SLOTS) as usize];
        address.store(spare(t), Ordering::Relaxed);
        h.store(handle(t), Ordering::Relaxed);
        self.tail.store(t + 1, Ordering::Release);
        true
    }

    /// One take: `(index, address, handle)` owned, `None` when none is waiting.
    fn take(&self, read_after_cas: bool) -> Option<(i64, i64, i64)> {
        loop {
            let h = self.head.load(Ordering::Acquire);
            let t = self.tail.load(Ordering::Acquire);
            if h >= t {
                return None;
            }
            let (address, handle) = &self.slots[(h % SLOTS) as usize];
            let before = (
                address.load(Ordering::Relaxed),
                handle.load(Ordering::Relaxed),
            );
            if self
                .head
                .compare_exchange(h, h + 1, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                let (a, k) = if read_after_cas {
                    (
                        address.load(Ordering::Relaxed),
                        handle.load(Ordering::Relaxed),
                    )
                } else {
                    before
                };
                return Some((h, a, k));
            }
            loom::thread::yield_now();
        }
    }
}

/// Runs the model: two takers with one take each (a take retries on a lost compare-and-set)
/// and the producer publishing three spares into two slots, the third only once a take made
/// room. Preemptions are bounded (3) to keep the search finite; the negative control shows the
/// bound still reaches the interleaving that matters.
fn model(read_after_cas: bool) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let q = Arc::new(Queue::new());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let q = Arc::clone(&q);
                thread::spawn(move || q.take(read_after_cas))
            })
            .collect();
        for t in 0..SPARES {
            if !q.publish(t) {
                break; // no room yet: the takers have not moved head
            }
        }
        let mut all: Vec<(i64, i64, i64)> = takers
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect();
        for &(i, a, k) in &all {
            assert_eq!(
                a,
                spare(i),
                "taker of spare {i} got {a}: another lap's spare"
            );
            assert_eq!(k, handle(i), "taker of spare {i} got handle {k}");
        }
        all.sort_unstable();
        let n = all.len();
        all.dedup_by_key(|x| x.0);
        assert_eq!(all.len(), n, "a spare taken twice");
        for (k, &(i, _, _)) in all.iter().enumerate() {
            assert_eq!(i, k as i64, "spares taken in order, none skipped");
        }
    });
}

#[test]
fn each_spare_is_taken_once_with_its_own_value() {
    model(false);
}

#[test]
fn negative_control_reading_the_slot_after_the_cas_fails() {
    let broken = std::panic::catch_unwind(|| model(true));
    assert!(
        broken.is_err(),
        "the model must catch a taker that reads its slot after moving head"
    );
}
