//! Unit tests of the thread window's memory in a thread-per-request server (beside join.rs).

use super::*;
use crate::core::context::ring::Producer;
use Decision::{Context, Unknown};
use UnknownReason::HistoryExpired;

const SAFETY: i64 = 1_000_000;

#[test]
fn a_long_lived_thread_and_a_fresh_thread_per_request_keep_the_window_small() {
    // A server: a pool thread with a low id holds its ring for the whole run, while a fresh
    // virtual thread per request registers, installs one context and is released (2 800 a
    // second, 5 s retention). The thread window spans from the pool thread to the newest id
    // until it reaches `MAX_THREAD_WINDOW` ids, when the pool thread's state moves to the hash
    // map; after that the window holds what it spans, not what it once spanned.
    let mut j = Joiner::new(5_000_000_000, SAFETY);
    let ring = Arc::new(Ring::new(16, 30, 1030));
    j.add_ring(ring.clone());
    let mut pool = Producer::new(ring);
    pool.push(1, 7);
    let step = 1_000_000_000 / 2800;
    let mut t = 10;
    let mut fresh = Vec::new();
    for k in 0..200_000u64 {
        let tid = 100 + k;
        let handle = tid + 10_000_000;
        let ring = Arc::new(Ring::new(16, tid, handle));
        j.add_ring(ring.clone());
        let mut p = Producer::new(ring);
        p.push(t, 5);
        p.push(t + 1, EMPTY_CONTEXT);
        fresh.push(p);
        assert!(j.release_ring(handle, t + 2));
        t += step;
        if k % 28 == 27 {
            j.drain(t);
            j.prune(t);
            fresh.clear();
        }
    }
    j.drain(t);
    assert!(
        j.threads.window_span() < 20_000,
        "{}",
        j.threads.window_span()
    );
    // The span's chunks and a few emptied or spare ones: 14 000 states of 160 bytes, ≈ 2.3 MB
    // (in one `VecDeque` the buffer keeps the 143 360 slots it grew to: 23 MB).
    assert!(
        j.threads.window_bytes() <= 3 << 20,
        "{} bytes",
        j.threads.window_bytes()
    );
    let at = t - 10 * SAFETY;
    assert_eq!(
        j.decide(Some(30), at),
        Context(7),
        "the pool thread is still known"
    );
    let k = 190_000; // 3.6 s before the end: retained
    let t_k = 10 + k as i64 * step;
    assert_eq!(j.decide(Some(100 + k), t_k), Context(5));
    assert_eq!(j.decide(Some(100 + k), t_k + 1), Context(EMPTY_CONTEXT));
    assert_eq!(
        j.decide(Some(100), at),
        Unknown(HistoryExpired),
        "forgotten"
    );
}
