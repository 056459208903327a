//! Unit tests of the join (kept beside join.rs to keep that file small).

use super::*;
use crate::core::context::ring::Producer;
use Decision::{Context, Defer, Unknown};
use UnknownReason::*;

const RETENTION: i64 = 1_000_000;
const SAFETY: i64 = 100;

fn joiner() -> Joiner {
    Joiner::new(RETENTION, SAFETY)
}

fn producer(j: &mut Joiner, tid: u64, capacity: usize) -> Producer {
    let ring = Arc::new(Ring::new(capacity, tid, tid + 1000));
    j.add_ring(ring.clone());
    Producer::new(ring)
}

#[test]
fn nothing_decided_before_the_first_drain() {
    let j = joiner();
    assert_eq!(j.decide(Some(1), 0), Defer);
    assert_eq!(j.decide(None, 0), Unknown(NoThread));
    assert_eq!(j.decide_final(Some(1), 0), Unknown(InFlight));
}

#[test]
fn before_after_and_at_transitions() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 5);
    p.push(200, 6);
    p.push(300, EMPTY_CONTEXT);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 100), Context(5));
    assert_eq!(j.decide(Some(1), 199), Context(5));
    assert_eq!(j.decide(Some(1), 200), Context(6));
    assert_eq!(j.decide(Some(1), 300), Context(EMPTY_CONTEXT));
    assert_eq!(j.counters().transitions_drained, 3);
}

#[test]
fn nested_contexts_across_drains() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(10, 1); // outer
    p.push(20, 2); // inner
    j.drain(1_000);
    p.push(1_030, 1); // inner closed
    p.push(1_040, 0); // outer closed
    j.drain(2_000);
    let got: Vec<_> = [5, 15, 25, 1_035, 1_045]
        .iter()
        .map(|&t| j.decide(Some(1), t))
        .collect();
    assert_eq!(
        got,
        vec![Context(0), Context(1), Context(2), Context(1), Context(0)]
    );
}

#[test]
fn samples_near_the_watermark_are_deferred() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 5);
    j.drain(1_000);
    assert_eq!(j.decide(Some(1), 900), Context(5));
    assert_eq!(j.decide(Some(1), 901), Defer);
    assert_eq!(j.decide(Some(2), 901), Defer, "even for unknown threads");
    assert_eq!(j.decide_final(Some(1), 901), Unknown(InFlight));
    j.drain(2_000);
    assert_eq!(j.decide(Some(1), 901), Context(5));
}

#[test]
fn unregistered_thread_is_empty() {
    let mut j = joiner();
    j.drain(10_000);
    assert_eq!(j.decide(Some(42), 5_000), Context(EMPTY_CONTEXT));
}

#[test]
fn no_thread_is_unknown() {
    let mut j = joiner();
    j.drain(10_000);
    assert_eq!(j.decide(None, 5_000), Unknown(NoThread));
    assert_eq!(j.decide_final(None, 5_000), Unknown(NoThread));
}

#[test]
fn expired_samples() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 5);
    p.push(500, EMPTY_CONTEXT);
    p.push(800, 6);
    j.drain(RETENTION + 1_000);
    // Older than the retention, not yet pruned: the history still proves every answer.
    assert_eq!(j.decide(Some(1), 50), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 400), Context(5));
    assert_eq!(j.decide(Some(1), 999), Context(6));
    j.prune(RETENTION + 1_000);
    // The cut (1_000) keeps the point in force there (800): exact from 800 on.
    assert_eq!(j.decide(Some(1), 1_000), Context(6));
    assert_eq!(j.decide(Some(1), 800), Context(6));
    assert_eq!(j.decide(Some(1), 799), Unknown(HistoryExpired));
    assert_eq!(j.decide(Some(1), 50), Unknown(HistoryExpired));
    // A thread that never registered had no context, however old the sample.
    assert_eq!(j.decide(Some(7), 999), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(7), i64::MIN), Context(EMPTY_CONTEXT));
}

#[test]
fn long_wait_on_a_thread_without_context_is_known_after_pruning() {
    // Thread 2 closed its only context at 200 and then waited; thread 3 never had one. A wait
    // event starting at 300 arrives long after the retention moved past it.
    let mut j = joiner();
    let mut p = producer(&mut j, 2, 16);
    p.push(100, 5);
    p.push(200, EMPTY_CONTEXT);
    for k in 1..=5 {
        let now = k * RETENTION;
        j.drain(now);
        j.prune(now);
    }
    assert_eq!(j.decide(Some(2), 300), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(3), 300), Context(EMPTY_CONTEXT));
    // Inside the pruned context: unknown, never {}.
    assert_eq!(j.decide(Some(2), 150), Unknown(HistoryExpired));
}

#[test]
fn forgotten_threads_stay_unknown() {
    let mut f = Forgotten::default();
    for tid in [5, 7, 6, 10, 4, 12, 11] {
        f.insert(tid);
    }
    assert_eq!(
        f.ranges.iter().map(|(&a, &b)| (a, b)).collect::<Vec<_>>(),
        vec![(4, 7), (10, 12)]
    );
    for tid in [4, 5, 6, 7, 10, 11, 12] {
        assert!(f.contains(tid), "{tid}");
    }
    for tid in [0, 3, 8, 9, 13, u64::MAX] {
        assert!(!f.contains(tid), "{tid}");
    }
    f.insert(u64::MAX);
    f.insert(0);
    assert!(f.contains(u64::MAX) && f.contains(0) && !f.contains(1));
    // Bounded: past the limit the lowest ranges merge (more unknown, never a wrong {}).
    let mut f = Forgotten::default();
    for k in 0..=MAX_FORGOTTEN_RANGES as u64 {
        f.insert(2 * k);
    }
    assert_eq!(f.ranges.len(), MAX_FORGOTTEN_RANGES);
    assert!(f.contains(0) && f.contains(1) && f.contains(2));
    assert!(!f.contains(5) && f.contains(2 * MAX_FORGOTTEN_RANGES as u64));
}

#[test]
fn lost_stretch_is_log_overflow() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 1);
    j.drain(1_000);
    for i in 0..40i64 {
        p.push(2_000 + i * 10, 10 + i as u64);
    }
    j.drain(10_000);
    let c = j.counters();
    assert_eq!(c.entries_lost, 24);
    assert_eq!(c.lost_stretches, 1);
    // Kept: entries 24..40, i.e. times 2240.. with contexts 34..
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 100), Unknown(LogOverflow));
    assert_eq!(j.decide(Some(1), 2_000), Unknown(LogOverflow));
    assert_eq!(j.decide(Some(1), 2_239), Unknown(LogOverflow));
    assert_eq!(j.decide(Some(1), 2_240), Context(34));
    assert_eq!(j.decide(Some(1), 2_395), Context(49));
}

#[test]
fn in_flight_defers_until_completed() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 1);
    p.begin(500, 2);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(
        j.decide(Some(1), 100),
        Defer,
        "at or after the last drained"
    );
    assert_eq!(j.decide(Some(1), 700), Defer);
    assert_eq!(j.decide_final(Some(1), 700), Unknown(InFlight));
    // Other threads are not affected.
    assert_eq!(j.decide(Some(2), 700), Context(EMPTY_CONTEXT));
    p.finish();
    j.drain(20_000);
    assert_eq!(j.decide(Some(1), 499), Context(1));
    assert_eq!(j.decide(Some(1), 500), Context(2));
}

#[test]
fn in_flight_first_transition_defers_everything_on_that_thread() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.begin(500, 2);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 1), Defer);
}

#[test]
fn ring_added_after_the_drain_is_deferred_until_drained() {
    let mut j = joiner();
    j.drain(10_000);
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 3);
    assert_eq!(j.decide(Some(1), 5_000), Defer);
    j.drain(20_000);
    assert_eq!(j.decide(Some(1), 5_000), Context(3));
}

#[test]
fn released_thread_is_answered_within_retention_then_forgotten() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 3);
    p.push(200, 4); // not drained before the release
    assert!(j.release_ring(1001, 300));
    assert!(!j.release_ring(1001, 300), "second release is ignored");
    drop(p);
    j.drain(1_000);
    let c = j.counters();
    assert_eq!((c.threads_live, c.threads_released), (0, 1));
    assert_eq!(j.decide(Some(1), 150), Context(3));
    assert_eq!(j.decide(Some(1), 250), Context(4));
    let later = 300 + RETENTION;
    j.drain(later);
    j.prune(later);
    // A released thread's history is final: kept whole (not pruned) until it is forgotten, so
    // even what is older than the retention is still answered exactly.
    assert_eq!(j.decide(Some(1), 250), Context(4));
    assert_eq!(j.decide(Some(1), 150), Context(3));
    assert_eq!(
        j.decide(Some(1), later - RETENTION),
        Context(4),
        "still held"
    );
    let much_later = later + SAFETY + 10;
    j.drain(much_later);
    j.prune(much_later);
    assert_eq!(j.counters().threads_released, 0);
    // Forgotten: not "never registered", so never {}.
    assert_eq!(j.decide(Some(1), 250), Unknown(HistoryExpired));
    assert_eq!(
        j.decide(Some(1), much_later - RETENTION),
        Unknown(HistoryExpired)
    );
}

#[test]
fn release_before_add_is_applied_on_add() {
    let mut j = joiner();
    let ring = Arc::new(Ring::new(16, 1, 1001));
    Producer::new(ring.clone()).push(100, 3);
    assert!(!j.release_ring(1001, 500));
    j.add_ring(ring);
    j.drain(1_000);
    let c = j.counters();
    assert_eq!((c.threads_live, c.threads_released), (0, 1));
    assert_eq!(j.decide(Some(1), 200), Context(3));
}

#[test]
fn release_with_a_half_written_transition() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 16);
    p.push(100, 3);
    p.begin(200, 4);
    j.release_ring(1001, 300);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 100), Unknown(InFlight));
    assert_eq!(j.counters().released_in_flight, 1);
}

#[test]
fn re_registration_keeps_the_history() {
    let mut j = joiner();
    let mut p1 = producer(&mut j, 1, 16);
    p1.push(100, 3);
    j.drain(1_000);
    j.release_ring(1001, 1_000);
    let ring2 = Arc::new(Ring::new(16, 1, 2001));
    j.add_ring(ring2.clone());
    let mut p2 = Producer::new(ring2);
    p2.push(2_000, 5);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 150), Context(3));
    assert_eq!(j.decide(Some(1), 2_000), Context(5));
    let c = j.counters();
    assert_eq!((c.threads_live, c.threads_released), (1, 0));
}

#[test]
fn replacing_a_live_ring_drains_the_old_one() {
    let mut j = joiner();
    let mut p1 = producer(&mut j, 1, 16);
    p1.push(100, 3);
    let ring2 = Arc::new(Ring::new(16, 1, 2001));
    j.add_ring(ring2.clone());
    j.add_ring(ring2.clone()); // duplicate: ignored
    Producer::new(ring2).push(2_000, 5);
    j.drain(10_000);
    assert_eq!(j.decide(Some(1), 150), Context(3));
    assert_eq!(j.decide(Some(1), 2_000), Context(5));
    assert_eq!(j.counters().rings_replaced, 1);
    assert!(!j.release_ring(1001, 0), "old handle is gone");
    assert!(j.release_ring(2001, 0));
}

#[test]
fn many_threads_are_independent() {
    let mut j = joiner();
    let mut ps: Vec<_> = (1..=50u64).map(|t| producer(&mut j, t, 16)).collect();
    for (i, p) in ps.iter_mut().enumerate() {
        p.push(100 + i as i64, i as u64 + 1);
    }
    j.drain(10_000);
    for i in 0..50u64 {
        assert_eq!(j.decide(Some(i + 1), 99 + i as i64), Context(EMPTY_CONTEXT));
        assert_eq!(j.decide(Some(i + 1), 100 + i as i64), Context(i + 1));
    }
    assert_eq!(j.counters().threads_live, 50);
    assert_eq!(j.counters().history_entries, 50);
}

#[test]
fn prune_bounds_history() {
    let mut j = joiner();
    let mut p = producer(&mut j, 1, 1024);
    for round in 0..10i64 {
        for i in 0..100i64 {
            let t = round * RETENTION + i * 1000;
            p.push(t, (i % 7) as u64);
        }
        let now = (round + 1) * RETENTION;
        j.drain(now);
        j.prune(now);
    }
    assert!(j.counters().history_entries <= 200);
    assert_eq!(j.decide(Some(1), 9 * RETENTION + 5_000), Context(5));
}

#[test]
fn corrupt_ring_makes_the_rest_unknown() {
    let mut j = joiner();
    let ring = Arc::new(Ring::new(16, 1, 1001));
    j.add_ring(ring.clone());
    let mut p = Producer::new(ring.clone());
    p.push(100, 3);
    j.drain(1_000);
    // Simulate a broken writer: head moves backwards.
    ring.store_head_for_test(0);
    j.drain(2_000);
    j.drain(3_000);
    assert_eq!(j.decide(Some(1), 99), Context(EMPTY_CONTEXT));
    assert_eq!(j.decide(Some(1), 100), Unknown(LogOverflow));
    assert_eq!(j.decide(Some(1), 2_500), Unknown(LogOverflow));
    assert_eq!(j.counters().rings_corrupt, 1);
}

/// End to end with a real clock: a producer thread installs contexts while this thread
/// drains and decides samples close to the watermark. Every decided context must match the
/// ground truth recorded by the producer.
#[test]
fn concurrent_decisions_never_contradict_the_truth() {
    use std::time::Instant;
    let base = Instant::now();
    let clock = move || base.elapsed().as_nanos() as i64;
    let mut j = Joiner::new(1_000_000_000, 20_000);
    let ring = Arc::new(Ring::new(64, 1, 1001));
    let producer = {
        let ring = ring.clone();
        std::thread::spawn(move || {
            let mut p = Producer::new(ring);
            let mut truth = Vec::with_capacity(200_000);
            for i in 0..200_000u64 {
                let context = if i % 6 == 5 { EMPTY_CONTEXT } else { i % 6 + 1 };
                truth.push((p.push_with(clock, context), context));
                if i % 1024 == 0 {
                    std::thread::yield_now();
                }
            }
            truth
        })
    };
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut samples = Vec::new();
    let mut registered = false;
    loop {
        let finished = producer.is_finished();
        let now = clock();
        if !registered {
            j.add_ring(ring.clone());
            registered = true;
        }
        j.drain(now);
        for _ in 0..256 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let t = now - (rng % 200_000) as i64;
            samples.push((t, j.decide(Some(1), t)));
        }
        if finished {
            break;
        }
    }
    let truth = producer.join().expect("producer thread");
    let (mut decided, mut unknown, mut deferred) = (0, 0, 0);
    for (t, d) in samples {
        match d {
            Context(c) => {
                let after = truth.partition_point(|&(time, _)| time <= t);
                let expected = after.checked_sub(1).map_or(EMPTY_CONTEXT, |i| truth[i].1);
                assert_eq!(c, expected, "sample at {t}");
                decided += 1;
            }
            Unknown(_) => unknown += 1,
            Defer => deferred += 1,
        }
    }
    assert!(
        decided > 100,
        "decided {decided} unknown {unknown} deferred {deferred}"
    );
}

/// `cargo test --release --lib -- --ignored decide_throughput --nocapture`
#[test]
#[ignore]
fn decide_throughput() {
    fn run(threads: u64, points: i64, sorted: bool) {
        let mut j = Joiner::new(i64::MAX, 0);
        for tid in 0..threads {
            let mut p = producer(&mut j, tid, points as usize);
            for i in 0..points {
                p.push(i * 1_000 + tid as i64, (i % 13) as u64);
            }
        }
        j.drain(i64::MAX);
        let span = points as u64 * 1_000;
        let n = 20_000_000u64;
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut sum = 0u64;
        let start = std::time::Instant::now();
        for k in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let tid = rng % threads;
            let t = if sorted {
                (k * span / n) as i64
            } else {
                ((rng >> 20) % span) as i64
            };
            if let Context(c) = j.decide(Some(tid), t) {
                sum += c;
            }
        }
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "{threads} threads x {points} points, {}: {:.1} M decisions/s ({sum})",
            if sorted { "time-ordered" } else { "random" },
            n as f64 / secs / 1e6
        );
    }
    run(1_000, 1_000, false);
    run(1_000, 1_000, true);
    run(100, 100, false);
    run(10, 10_000, true);
}

#[test]
fn watermark_never_moves_back() {
    let mut j = joiner();
    j.drain(10_000);
    j.drain(5_000);
    assert_eq!(j.watermark(), Some(10_000));
}

#[test]
fn extreme_times_do_not_panic() {
    let mut j = Joiner::new(i64::MAX, i64::MAX);
    j.drain(i64::MIN);
    assert_eq!(j.decide(Some(1), i64::MIN), Context(EMPTY_CONTEXT));
    j.prune(i64::MIN);
    let mut j = Joiner::new(-1, -1);
    j.drain(i64::MAX);
    assert_eq!(j.decide(Some(1), i64::MAX), Context(EMPTY_CONTEXT));
    j.prune(i64::MAX);
}

#[test]
fn thread_end_releases_the_ring_and_a_late_handle_release_is_ignored() {
    let mut j = joiner();
    let mut p = producer(&mut j, 7, 16);
    p.push(100, 5);
    assert!(j.release_thread(7, 1_000));
    assert!(!j.release_thread(7, 1_000));
    // The Cleaner's release of the same handle arrives later: nothing is remembered.
    assert!(!j.release_ring(7 + 1000, 2_000));
    j.drain(10_000);
    assert_eq!(j.decide(Some(7), 150), Context(5));
    assert!(!j.release_thread(99, 1_000));
}

#[test]
fn a_ring_found_a_third_full_or_losing_entries_grows_four_times_up_to_the_bound() {
    use crate::core::context::ring::MAX_GROWN_CAPACITY;
    use crate::core::join::growth;
    assert_eq!(growth(1024, 100, 0), None);
    assert_eq!(growth(1024, 341, 0), None);
    assert_eq!(growth(1024, 342, 0), Some(4096));
    assert_eq!(growth(1024, 2000, 976), Some(4096));
    assert_eq!(growth(16384, 10, 1), Some(MAX_GROWN_CAPACITY));
    assert_eq!(growth(MAX_GROWN_CAPACITY, 70_000, 5_000), None);
}

#[test]
fn a_ring_handed_back_through_its_header_is_reported_once_after_its_last_transition() {
    let mut j = joiner();
    let mut p = producer(&mut j, 7, 16);
    let ring = p.ring().clone();
    p.push(100, 5);
    p.push(200, EMPTY_CONTEXT);
    ring.retire();
    j.drain(1_000);
    assert_eq!(j.take_retired(), vec![(1007, 1)]);
    assert_eq!(j.take_retired(), vec![]);
    // The caller releases it (last holder): the history stays, the thread had {} after 200.
    assert!(j.release_ring(1007, 1_000));
    assert_eq!(j.decide(Some(7), 150), Context(5));
    assert_eq!(j.decide(Some(7), 800), Context(EMPTY_CONTEXT));
    j.drain(2_000);
    assert_eq!(j.take_retired(), vec![]);
}

#[test]
fn a_hand_back_left_on_a_replaced_ring_is_still_reported() {
    let mut j = joiner();
    let mut p = producer(&mut j, 8, 16);
    let old = p.ring().clone();
    p.push(100, 5);
    old.retire();
    j.add_ring(Arc::new(Ring::new(64, 8, 1008))); // grown under the same handle
    assert_eq!(j.take_retired(), vec![(1008, 1)]);
    j.drain(1_000);
    assert_eq!(j.take_retired(), vec![]);
}

#[test]
fn a_thread_registered_again_after_its_release_is_not_forgotten_by_the_old_release() {
    let mut j = joiner();
    let mut p = producer(&mut j, 3, 16);
    p.push(100, 5);
    assert!(j.release_ring(1003, 200));
    let mut again = producer(&mut j, 3, 16); // same handle scheme: 1003 is live again
    again.push(300, 6);
    let later = 200 + RETENTION + SAFETY + 10;
    j.drain(later);
    j.prune(later);
    assert_eq!(j.counters().threads_live, 1);
    assert_eq!(j.decide(Some(3), 350), Context(6));
}
