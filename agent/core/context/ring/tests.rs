//! Unit tests of `ring.rs` (kept apart: the file stays under 600 lines).
use super::*;

fn ring(capacity: usize) -> Arc<Ring> {
    Arc::new(Ring::new(capacity, 7, 42))
}

fn drain(ring: &Ring) -> (Vec<Transition>, DrainOutcome) {
    let mut out = Vec::new();
    let o = ring.drain(&mut out);
    (out, o)
}

fn t(time_ns: i64, context: ContextId) -> Transition {
    Transition { time_ns, context }
}

fn raw_head(ring: &Ring) -> i64 {
    ring.word(HEAD).load(Ordering::Relaxed)
}

#[test]
fn capacity_is_rounded_and_clamped() {
    assert_eq!(effective_capacity(0), MIN_CAPACITY);
    assert_eq!(effective_capacity(17), 32);
    assert_eq!(effective_capacity(64), 64);
    assert_eq!(effective_capacity(usize::MAX), MAX_CAPACITY);
}

#[test]
fn header_layout_matches_the_contract() {
    let r = ring(100);
    assert_eq!(r.capacity(), 128);
    assert_eq!(r.byte_len(), 64 + 16 * 128);
    assert_eq!(r.as_ptr() as usize % 64, 0);
    let words = |i: usize| -> i64 {
        // SAFETY: `i` is a header word index inside the allocation; read through the atomic
        // view as every other access does.
        unsafe { (*r.as_ptr().cast::<AtomicI64>().add(i)).load(Ordering::Relaxed) }
    };
    assert_eq!(words(3), 128);
    assert_eq!(words(4), 7);
    assert_eq!(words(5), 42);
    assert_eq!(words(6), 0);
    assert_eq!(words(7), 0);
    assert_eq!((r.thread_id(), r.handle()), (7, 42));
    assert_eq!(r.current(), 0);
}

#[test]
fn normal_drain_in_order_then_nothing() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    p.push(10, 1);
    p.push(20, 2);
    p.push(30, 0);
    assert_eq!(r.current(), 0);
    let (out, o) = drain(&r);
    assert_eq!(out, vec![t(10, 1), t(20, 2), t(30, 0)]);
    assert_eq!((o.start_index, o.first_kept_index, o.end_index), (0, 0, 3));
    assert_eq!(
        (o.drained, o.lost, o.in_flight, o.corrupt),
        (3, 0, false, false)
    );
    assert_eq!(r.word(TAIL).load(Ordering::Relaxed), 3);
    let (out, o) = drain(&r);
    assert!(out.is_empty());
    assert_eq!(o, DrainOutcome::at(3));
}

#[test]
fn drain_appends_to_existing_output() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    p.push(5, 9);
    let mut out = vec![t(1, 1)];
    let o = r.drain(&mut out);
    assert_eq!(out, vec![t(1, 1), t(5, 9)]);
    assert_eq!(o.drained, 1);
}

#[test]
fn wrap_around_without_loss() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    let mut all = Vec::new();
    for i in 0..100i64 {
        p.push(i, i as u64 + 1);
        if i % 10 == 9 {
            let (out, o) = drain(&r);
            assert_eq!(o.lost, 0);
            all.extend(out);
        }
    }
    let expected: Vec<_> = (0..100i64).map(|i| t(i, i as u64 + 1)).collect();
    assert_eq!(all, expected);
}

#[test]
fn overflow_keeps_the_newest_capacity_entries() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    p.push(1, 1);
    let (_, o) = drain(&r);
    assert_eq!(o.end_index, 1);
    for i in 1..41i64 {
        p.push(i * 10, i as u64);
    }
    let (out, o) = drain(&r);
    // 40 new entries, 16 survive: indices 25..41.
    assert_eq!(
        (o.start_index, o.first_kept_index, o.end_index),
        (1, 25, 41)
    );
    assert_eq!((o.lost, o.drained), (24, 16));
    let expected: Vec<_> = (25..41i64).map(|i| t(i * 10, i as u64)).collect();
    assert_eq!(out, expected);
}

#[test]
fn in_flight_entry_is_not_drained_and_its_slot_owner_is_lost() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    for i in 0..16i64 {
        p.push(i, 1);
    }
    p.begin(100, 5);
    assert_eq!(raw_head(&r), 33);
    let (out, o) = drain(&r);
    assert!(o.in_flight);
    // Entry 0 shares its slot with the in-flight entry 16: it may be torn, so it is lost.
    assert_eq!((o.first_kept_index, o.end_index, o.lost), (1, 16, 1));
    assert_eq!(out.len(), 15);
    assert_eq!(out[0], t(1, 1));
    assert_eq!(r.current(), 1);
    p.finish();
    assert_eq!(r.current(), 5);
    let (out, o) = drain(&r);
    assert!(!o.in_flight);
    assert_eq!(out, vec![t(100, 5)]);
}

#[test]
fn in_flight_without_lap_loses_nothing() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    p.push(1, 1);
    p.begin(2, 2);
    let (out, o) = drain(&r);
    assert!(o.in_flight);
    assert_eq!(out, vec![t(1, 1)]);
    assert_eq!(o.lost, 0);
}

#[test]
fn producer_resumes_after_existing_entries() {
    let r = ring(16);
    Producer::new(r.clone()).push(1, 1);
    let mut p = Producer::new(r.clone());
    assert_eq!(p.completed(), 1);
    p.push(2, 2);
    let (out, _) = drain(&r);
    assert_eq!(out, vec![t(1, 1), t(2, 2)]);
}

#[test]
fn corrupt_head_poisons_the_ring() {
    let r = ring(16);
    let mut p = Producer::new(r.clone());
    p.push(1, 1);
    p.push(2, 2);
    drain(&r);
    r.word(HEAD).store(2, Ordering::Relaxed); // moved backwards
    let (out, o) = drain(&r);
    assert!(out.is_empty());
    assert!(o.corrupt);
    r.word(HEAD).store(100, Ordering::Relaxed);
    let (out, o) = drain(&r);
    assert!(out.is_empty());
    assert!(o.corrupt);

    let r = ring(16);
    r.word(HEAD).store(-4, Ordering::Relaxed);
    let (out, o) = drain(&r);
    assert!(out.is_empty() && o.corrupt);
}

#[test]
fn huge_head_jump_is_bounded_by_capacity() {
    let r = ring(16);
    r.word(HEAD).store(i64::MAX - 1, Ordering::Relaxed);
    let (out, o) = drain(&r);
    assert_eq!(out.len(), 16);
    assert_eq!(o.lost, (i64::MAX as u64 - 1) / 2 - 16);
    assert!(!o.corrupt);
}

/// A producer thread laps a small ring while the consumer drains concurrently. Entry `i` has
/// time `i + 1` and context `(i + 1) * 3`, so any torn or misplaced entry is detected.
/// `pace` spins after each transition slow the producer so that most entries survive.
fn stress(capacity: usize, transitions: u64, pace: u32) -> (u64, u64) {
    let r = ring(capacity);
    let producer = {
        let r = r.clone();
        std::thread::spawn(move || {
            let mut p = Producer::new(r);
            for i in 0..transitions {
                let time = i as i64 + 1;
                if i % 64 == 0 {
                    // Leave an entry in flight for a moment now and then.
                    p.begin(time, (time * 3) as u64);
                    std::hint::spin_loop();
                    p.finish();
                } else {
                    p.push(time, (time * 3) as u64);
                }
                for _ in 0..pace {
                    std::hint::spin_loop();
                }
            }
        })
    };
    let mut expected_next = 0u64;
    let (mut drained, mut lost, mut lost_stretches) = (0u64, 0u64, 0u64);
    let mut out = Vec::new();
    let mut last_time = 0i64;
    loop {
        let finished = producer.is_finished();
        out.clear();
        let o = r.drain(&mut out);
        assert!(!o.corrupt);
        assert_eq!(o.start_index, expected_next, "drains are contiguous");
        assert_eq!(o.first_kept_index - o.start_index, o.lost);
        assert_eq!(o.end_index - o.first_kept_index, o.drained as u64);
        for (k, tr) in out.iter().enumerate() {
            let index = o.first_kept_index + k as u64;
            assert_eq!(tr.time_ns, index as i64 + 1, "entry {index} misplaced");
            assert_eq!(tr.context, tr.time_ns as u64 * 3, "entry {index} torn");
            assert!(tr.time_ns > last_time, "strictly increasing");
            last_time = tr.time_ns;
        }
        drained += o.drained as u64;
        lost += o.lost;
        if o.lost > 0 {
            lost_stretches += 1;
        }
        expected_next = o.end_index;
        if finished && expected_next == transitions {
            break;
        }
    }
    producer.join().expect("producer thread");
    assert_eq!(drained + lost, transitions);
    assert_eq!(lost > 0, lost_stretches > 0);
    (drained, lost)
}

#[test]
fn concurrent_producer_laps_a_small_ring() {
    stress(16, 1_000_000, 0);
}

#[test]
fn concurrent_paced_producer_small_ring() {
    stress(16, 100_000, 200);
}

#[test]
fn concurrent_producer_large_ring() {
    stress(4096, 300_000, 20);
}

#[test]
fn a_spare_reuses_the_memory_of_a_dropped_one_with_a_fresh_header() {
    let blocks = Blocks::new(16, 2);
    let first = Arc::new(Ring::spare(&blocks, 1));
    assert!(first.is_pooled());
    assert_eq!((first.thread_id(), first.claimed_by()), (0, None));
    let memory = first.as_ptr();
    first.claim(42);
    first.bind(42);
    let mut p = Producer::new(Arc::clone(&first));
    for i in 0..20 {
        p.push(i, 7); // laps the ring
    }
    first.retire();
    first.request_growth(64);
    drop(p);
    drop(first);
    assert_eq!(blocks.free(), 1, "the memory went back to the pool");
    let second = Ring::spare(&blocks, 2);
    assert_eq!(second.as_ptr(), memory, "and the next spare took it");
    assert_eq!(blocks.free(), 0);
    assert_eq!(second.handle(), 2);
    assert_eq!((second.thread_id(), second.claimed_by()), (0, None));
    assert_eq!((second.retired(), second.growth_requested()), (0, 0));
    assert_eq!(second.capacity(), 16);
    let (out, outcome) = drain(&second);
    assert!(out.is_empty(), "nothing of the last owner is read");
    assert_eq!(outcome, DrainOutcome::default());
}

#[test]
fn a_registered_ring_of_the_pools_capacity_reuses_a_dropped_rings_memory() {
    let blocks = Blocks::new(16, 2);
    let spare = Ring::spare(&blocks, 1);
    let memory = spare.as_ptr();
    spare.claim(42);
    spare.bind(42);
    let spare = Arc::new(spare);
    let mut p = Producer::new(Arc::clone(&spare));
    p.push(5, 9);
    drop(p);
    drop(spare);
    let registered = Arc::new(Ring::pooled(&blocks, 7, 2));
    assert_eq!(
        registered.as_ptr(),
        memory,
        "a registration took the spare's memory"
    );
    assert!(registered.is_pooled());
    assert_eq!((registered.thread_id(), registered.claimed_by()), (7, None));
    let (out, _) = drain(&registered);
    assert!(out.is_empty(), "nothing of the spare's owner is read");
    let mut p = Producer::new(Arc::clone(&registered));
    p.push(10, 3);
    let (out, _) = drain(&registered);
    assert_eq!(out.len(), 1, "its own transition is: {out:?}");
    drop(p);
    drop(registered);
    assert_eq!(
        blocks.free(),
        1,
        "and its memory goes back to the pool in turn"
    );
}

#[test]
fn the_wake_hint_and_a_growth_request_share_the_word_without_mixing() {
    let ring = Ring::new(16, 1, 1);
    ring.hint_wake(true);
    assert_eq!(ring.growth_requested(), 0, "the hint is not a capacity");
    ring.request_growth(64);
    assert_eq!(ring.growth_requested(), 64);
    assert_ne!(
        ring.word(GROW).load(Ordering::Relaxed) & WAKE_HINT,
        0,
        "kept by the request"
    );
    ring.hint_wake(false);
    assert_eq!(
        ring.word(GROW).load(Ordering::Relaxed),
        64,
        "cleared, the request kept"
    );
}
