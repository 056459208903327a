//! Unit tests of the join's cursor path and of the drain fill it reports (beside join.rs).

use super::*;
use crate::core::context::ring::Producer;

const SAFETY: i64 = 100;

fn producer(j: &mut Joiner, tid: u64, capacity: usize) -> Producer {
    let ring = Arc::new(Ring::new(capacity, tid, tid + 1000));
    j.add_ring(ring.clone());
    Producer::new(ring)
}

/// The cursor path (`decide`) and the plain binary search (`decide_binary_search`) agree on
/// every sample: many threads, lost stretches, in-flight transitions, pruning and compaction
/// between rounds, samples in about time order per thread with backward jumps.
#[test]
fn cursor_decisions_match_binary_search() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n.max(1)
    };
    let mut j = Joiner::new(200_000, SAFETY);
    j.set_history_limit(3_000);
    let mut ps: Vec<_> = (1..=8u64).map(|t| producer(&mut j, t, 64)).collect();
    let mut clock = 1_000i64;
    let mut asked = 0;
    for round in 0..300i64 {
        for p in &mut ps {
            // Some rounds overflow the 64-entry rings: lost stretches.
            let n = if next(10) == 0 { 100 } else { next(40) };
            let mut t = clock;
            for _ in 0..n {
                t += 1 + next(50) as i64;
                p.push(t, next(6));
            }
        }
        if round % 17 == 0 {
            ps[0].begin(clock + 10, 99);
        } else if round % 17 == 1 {
            ps[0].finish();
        }
        clock += 3_000;
        j.drain(clock);
        let mut t = clock - 6_000;
        for _ in 0..200 {
            t = match next(12) {
                0 => t - next(50_000) as i64,
                1 => clock - next(300_000) as i64,
                _ => t + next(40) as i64,
            };
            let tid = Some(1 + next(9));
            assert_eq!(
                j.decide(tid, t),
                j.decide_binary_search(tid, t),
                "{tid:?} at {t}"
            );
            asked += 1;
        }
        j.prune(clock);
    }
    assert!(j.counters().entries_lost > 0);
    assert_eq!(asked, 60_000);
}

#[test]
fn peak_fill_reports_the_fullest_ring_lost_entries_included() {
    let mut j = Joiner::new(1_000_000, SAFETY);
    j.drain(0);
    assert_eq!(j.peak_fill(), 0.0);
    let mut a = producer(&mut j, 1, 16);
    let mut b = producer(&mut j, 2, 64);
    for i in 0..4 {
        a.push(100 + i, 1);
    }
    for i in 0..32 {
        b.push(100 + i, 1);
    }
    j.drain(1_000);
    assert_eq!(j.peak_fill(), 0.5);
    for i in 0..20 {
        a.push(2_000 + i, 2);
    }
    j.drain(3_000);
    assert_eq!(j.peak_fill(), 20.0 / 16.0);
    j.drain(4_000);
    assert_eq!(j.peak_fill(), 0.0);
}
