//! Loom model check of the thread-ring protocol (ARCHITECTURE.md "Thread ring",
//! `agent/core/context/ring.rs`).
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=/tmp/tgt-loom cargo test --release --test loom_ring
//! ```
//!
//! `ring.rs` itself is not loom-compatible: its memory is a raw allocation viewed as `AtomicI64`
//! words (it is shared with Java through a direct `ByteBuffer`), and loom's atomics are tracked
//! objects with a different layout. So this file models the protocol faithfully instead, with
//! loom's atomics and fences standing in for the same orderings:
//!
//! * producer, transition `n` (slot `n & (cap-1)`): `head = 2n+1` (Release); a fence (Release:
//!   what the Java writer's `VarHandle.storeStoreFence()` gives; SeqCst: what the Rust
//!   `Producer` uses); relaxed stores of `time` and `context`; `head = 2n+2` (Release).
//! * consumer (`Ring::drain`): `h1 = head` (Acquire), `n = h1/2`; relaxed copies of entries
//!   `[max(tail, n-cap), n)`; `fence(Acquire)`; `h2 = head` (Relaxed); entries below
//!   `ceil(h2/2) - cap` are discarded as lost; `tail = n`.
//!
//! The property checked in every interleaving loom explores: an entry the consumer returns as
//! valid is exactly the one the producer wrote for that index (never torn between two
//! transitions, never a later lap's value), indices are contiguous, and `kept + lost` accounts for
//! every consumed index. Two negative controls show that the model is sharp enough to catch the
//! bugs the protocol guards against: without the producer's fence, and with `floor(h2/2)` in
//! place of `ceil(h2/2)` (the bound ARCHITECTURE.md first had), loom finds a torn entry.
#![cfg(loom)]

use loom::sync::atomic::{fence, AtomicI64, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// What the producer does between the odd `head` and the entry writes.
#[derive(Clone, Copy, Debug)]
enum ProducerFence {
    /// Nothing: the broken writer (negative control).
    None,
    /// `fence(Release)`: the Java writer's `VarHandle.storeStoreFence()`.
    Release,
    /// `fence(SeqCst)`: the Rust `Producer` in ring.rs.
    SeqCst,
}

/// How the consumer bounds the overwritten indices from the re-read head.
#[derive(Clone, Copy, Debug)]
enum Bound {
    /// `ceil(h2 / 2) - cap`: ring.rs.
    Ceil,
    /// `floor(h2 / 2) - cap`: misses the slot of an in-flight transition (negative control).
    Floor,
}

struct Shared {
    cap: u64,
    head: AtomicU64,
    /// `time`, `context` per slot.
    entries: Vec<(AtomicI64, AtomicI64)>,
}

/// The values transition `i` writes: distinct per index and per field, so that any torn or
/// misplaced entry is recognised.
fn written(i: u64) -> (i64, i64) {
    let t = i as i64 + 1;
    (t, t * 1000 + 7)
}

impl Shared {
    fn new(cap: u64) -> Shared {
        assert!(cap.is_power_of_two());
        Shared {
            cap,
            head: AtomicU64::new(0),
            entries: (0..cap)
                .map(|_| (AtomicI64::new(0), AtomicI64::new(0)))
                .collect(),
        }
    }

    fn slot(&self, index: u64) -> &(AtomicI64, AtomicI64) {
        &self.entries[(index & (self.cap - 1)) as usize]
    }

    /// Starts transition `n`: odd head, fence, entry writes.
    fn begin(&self, n: u64, f: ProducerFence) {
        self.head.store(2 * n + 1, Ordering::Release);
        match f {
            ProducerFence::None => {}
            ProducerFence::Release => fence(Ordering::Release),
            ProducerFence::SeqCst => fence(Ordering::SeqCst),
        }
        let (t, c) = written(n);
        let (time, context) = self.slot(n);
        time.store(t, Ordering::Relaxed);
        context.store(c, Ordering::Relaxed);
    }

    /// Publishes transition `n`.
    fn finish(&self, n: u64) {
        self.head.store(2 * n + 2, Ordering::Release);
    }
}

#[derive(Debug, Default)]
struct Drained {
    start: u64,
    first_kept: u64,
    end: u64,
    /// `(index, time, context)` of each entry returned as valid.
    kept: Vec<(u64, i64, i64)>,
    in_flight: bool,
}

/// One `Ring::drain`, same steps and bounds.
fn drain(s: &Shared, tail: &mut u64, bound: Bound) -> Drained {
    let h1 = s.head.load(Ordering::Acquire);
    let n = h1 / 2;
    assert!(n >= *tail, "head moved backwards");
    let start = (*tail).max(n.saturating_sub(s.cap));
    let mut copied = Vec::new();
    for index in start..n {
        let (time, context) = s.slot(index);
        copied.push((
            index,
            time.load(Ordering::Relaxed),
            context.load(Ordering::Relaxed),
        ));
    }
    fence(Ordering::Acquire);
    let h2 = s.head.load(Ordering::Relaxed);
    assert!(h2 >= h1, "head moved backwards during the copy");
    let reused_up_to = match bound {
        Bound::Ceil => h2.div_ceil(2),
        Bound::Floor => h2 / 2,
    };
    let intact_from = reused_up_to.saturating_sub(s.cap);
    let first_kept = start.max(intact_from).min(n);
    let kept = copied
        .into_iter()
        .filter(|&(index, _, _)| index >= first_kept)
        .collect();
    let out = Drained {
        start: *tail,
        first_kept,
        end: n,
        kept,
        in_flight: h1 & 1 == 1,
    };
    *tail = n;
    out
}

/// The property: every entry kept is intact and in place; the drain's bookkeeping adds up.
fn check(d: &Drained) {
    assert!(d.start <= d.first_kept && d.first_kept <= d.end);
    assert_eq!(
        d.kept.len() as u64,
        d.end - d.first_kept,
        "kept + lost == consumed"
    );
    for (k, &(index, time, context)) in d.kept.iter().enumerate() {
        assert_eq!(index, d.first_kept + k as u64, "contiguous indices");
        assert_eq!(
            (time, context),
            written(index),
            "torn or overwritten entry {index} returned as valid (drain {d:?})"
        );
    }
}

struct Case {
    cap: u64,
    /// Complete transitions written by the producer.
    transitions: u64,
    /// Then one more transition begun and never finished.
    leave_in_flight: bool,
    /// Drains the consumer runs concurrently with the producer.
    drains: usize,
    fence: ProducerFence,
    bound: Bound,
    preemption_bound: Option<usize>,
}

fn run(case: Case) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = case.preemption_bound;
    let Case {
        cap,
        transitions,
        leave_in_flight,
        drains,
        fence,
        bound,
        ..
    } = case;
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let shared = Arc::new(Shared::new(cap));
        let producer = {
            let shared = shared.clone();
            thread::spawn(move || {
                for n in 0..transitions {
                    shared.begin(n, fence);
                    shared.finish(n);
                }
                if leave_in_flight {
                    shared.begin(transitions, fence);
                }
            })
        };
        let mut tail = 0;
        let mut consumed = 0;
        for _ in 0..drains {
            let d = drain(&shared, &mut tail, bound);
            check(&d);
            consumed += d.end - d.start;
        }
        producer.join().unwrap();
        // After the producer is done (joined: everything visible), a last drain sees the rest.
        let d = drain(&shared, &mut tail, bound);
        check(&d);
        consumed += d.end - d.start;
        assert_eq!(consumed, transitions, "every completed index consumed once");
        assert_eq!(d.in_flight, leave_in_flight);
        if !leave_in_flight {
            // Quiescent ring: the newest `cap` entries are all intact and kept.
            let expect_kept = (d.end - d.start).min(cap);
            assert_eq!(
                d.kept.len() as u64,
                expect_kept,
                "quiescent drain keeps all"
            );
        }
    });
    eprintln!(
        "explored {} executions: cap={cap} transitions={transitions} in_flight={leave_in_flight} \
         drains={drains} fence={fence:?} bound={bound:?}",
        executions.load(std::sync::atomic::Ordering::Relaxed)
    );
}

#[test]
fn cap2_one_lap_and_a_half_one_concurrent_drain() {
    run(Case {
        cap: 2,
        transitions: 3,
        leave_in_flight: false,
        drains: 1,
        fence: ProducerFence::Release,
        bound: Bound::Ceil,
        preemption_bound: None,
    });
}

#[test]
fn cap2_two_laps_two_concurrent_drains() {
    run(Case {
        cap: 2,
        transitions: 4,
        leave_in_flight: false,
        drains: 2,
        fence: ProducerFence::Release,
        bound: Bound::Ceil,
        preemption_bound: Some(3),
    });
}

#[test]
fn cap2_overflow_with_a_transition_left_in_flight() {
    run(Case {
        cap: 2,
        transitions: 3,
        leave_in_flight: true,
        drains: 1,
        fence: ProducerFence::Release,
        bound: Bound::Ceil,
        preemption_bound: None,
    });
}

#[test]
fn cap4_wrap_around_one_concurrent_drain() {
    run(Case {
        cap: 4,
        transitions: 5,
        leave_in_flight: false,
        drains: 1,
        fence: ProducerFence::Release,
        bound: Bound::Ceil,
        preemption_bound: Some(3),
    });
}

#[test]
fn cap2_rust_producer_seqcst_fence() {
    run(Case {
        cap: 2,
        transitions: 3,
        leave_in_flight: true,
        drains: 1,
        fence: ProducerFence::SeqCst,
        bound: Bound::Ceil,
        preemption_bound: None,
    });
}

/// Negative control: without the fence after the odd head, the entry stores may be seen before
/// it, and the consumer keeps a slot that a later lap was overwriting.
#[test]
#[should_panic(expected = "torn or overwritten entry")]
fn negative_control_no_producer_fence_is_caught() {
    run(Case {
        cap: 2,
        transitions: 3,
        leave_in_flight: false,
        drains: 1,
        fence: ProducerFence::None,
        bound: Bound::Ceil,
        preemption_bound: None,
    });
}

/// Negative control: `floor(h2/2)` misses the slot that an in-flight transition is writing.
#[test]
#[should_panic(expected = "torn or overwritten entry")]
fn negative_control_floor_bound_is_caught() {
    run(Case {
        cap: 2,
        transitions: 3,
        leave_in_flight: false,
        drains: 1,
        fence: ProducerFence::Release,
        bound: Bound::Floor,
        preemption_bound: None,
    });
}
