//! Unit tests of the history (kept beside history.rs to keep that file small).

use super::*;
use UnknownReason::*;

fn tr(time_ns: i64, context: ContextId) -> Transition {
    Transition { time_ns, context }
}

fn history(transitions: &[(i64, ContextId)]) -> History {
    let mut h = History::new();
    for &(t, c) in transitions {
        assert!(h.push(tr(t, c)));
    }
    h
}

#[test]
fn fresh_history_is_empty_forever() {
    let h = History::new();
    assert_eq!(h.lookup(i64::MIN), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(0), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(i64::MAX), Ok(EMPTY_CONTEXT));
    assert!(h.is_empty());
    assert_eq!(h.last_transition_ns(), None);
}

#[test]
fn lookup_before_between_after_transitions() {
    let h = history(&[(100, 1), (200, 2), (300, 0)]);
    assert_eq!(h.lookup(99), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(150), Ok(1));
    assert_eq!(h.lookup(299), Ok(2));
    assert_eq!(h.lookup(1000), Ok(EMPTY_CONTEXT));
    assert_eq!(h.len(), 3);
    assert_eq!(h.last_transition_ns(), Some(300));
}

#[test]
fn tie_sample_at_transition_sees_new_context() {
    let h = history(&[(100, 1), (200, 2)]);
    assert_eq!(h.lookup(100), Ok(1));
    assert_eq!(h.lookup(200), Ok(2));
}

#[test]
fn tie_several_transitions_at_one_instant_last_wins() {
    let h = history(&[(100, 1), (100, 2), (100, 3)]);
    assert_eq!(h.lookup(99), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(100), Ok(3));
    assert_eq!(h.len(), 1);
}

#[test]
fn nested_install_uninstall() {
    // A, then B nested in A, back to A, back to empty.
    let h = history(&[(10, 1), (20, 2), (30, 1), (40, 0)]);
    let got: Vec<_> = [5, 10, 15, 20, 25, 30, 35, 40, 45]
        .iter()
        .map(|&t| h.lookup(t).unwrap_or(u64::MAX))
        .collect();
    assert_eq!(got, vec![0, 1, 1, 2, 2, 1, 1, 0, 0]);
}

#[test]
fn repeated_context_adds_no_point() {
    let h = history(&[(10, 1), (20, 1), (30, 1)]);
    assert_eq!(h.len(), 1);
    assert_eq!(h.last_transition_ns(), Some(30));
    assert_eq!(h.lookup(25), Ok(1));
}

#[test]
fn non_monotonic_time_makes_the_ambiguous_span_unknown() {
    let mut h = history(&[(100, 1), (200, 2), (300, 4)]);
    assert!(!h.push(tr(150, 3)));
    assert_eq!(h.non_monotonic(), 1);
    assert_eq!(h.lookup(149), Ok(1));
    assert_eq!(h.lookup(150), Err(LogOverflow));
    assert_eq!(h.lookup(299), Err(LogOverflow));
    // In force from the last point's time: it is the newest transition.
    assert_eq!(h.lookup(300), Ok(3));
    assert_eq!(h.last_transition_ns(), Some(300));
    assert!(h.push(tr(400, 5)));
    assert_eq!(h.lookup(400), Ok(5));
}

#[test]
fn non_monotonic_before_the_retained_start() {
    let mut h = history(&[(100, 1), (200, 2)]);
    h.prune(150);
    assert!(!h.push(tr(50, 3)));
    assert_eq!(h.lookup(49), Err(HistoryExpired));
    assert_eq!(h.lookup(149), Err(LogOverflow));
    assert_eq!(h.lookup(150), Err(LogOverflow));
    assert_eq!(h.lookup(200), Ok(3));
}

#[test]
fn lost_stretch_between_last_known_and_first_kept() {
    let mut h = history(&[(100, 1)]);
    h.mark_lost();
    h.push(tr(300, 2));
    assert_eq!(h.lookup(99), Ok(EMPTY_CONTEXT));
    // A lost transition may share time 100 with the last known one: unknown from 100.
    assert_eq!(h.lookup(100), Err(LogOverflow));
    assert_eq!(h.lookup(299), Err(LogOverflow));
    assert_eq!(h.lookup(300), Ok(2));
}

#[test]
fn lost_stretch_is_open_until_the_next_push() {
    let mut h = history(&[(100, 1)]);
    h.mark_lost();
    assert_eq!(h.lookup(i64::MAX), Err(LogOverflow));
    h.mark_lost(); // a second lost drain before anything survived
    h.push(tr(500, 3));
    assert_eq!(h.lookup(400), Err(LogOverflow));
    assert_eq!(h.lookup(500), Ok(3));
}

#[test]
fn lost_before_any_known_transition_is_unknown_from_the_beginning() {
    let mut h = History::new();
    h.mark_lost();
    h.push(tr(100, 1));
    assert_eq!(h.lookup(0), Err(LogOverflow));
    assert_eq!(h.lookup(100), Ok(1));
}

#[test]
fn first_kept_at_same_instant_as_last_known() {
    let mut h = history(&[(100, 1)]);
    h.mark_lost();
    h.push(tr(100, 2));
    assert_eq!(h.lookup(99), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(100), Ok(2));
}

#[test]
fn lost_stretch_starts_at_a_repeated_transition() {
    let mut h = history(&[(10, 1), (20, 1)]);
    h.mark_lost();
    assert_eq!(h.lookup(19), Ok(1));
    assert_eq!(h.lookup(20), Err(LogOverflow));
}

#[test]
fn unknown_keeps_its_first_reason() {
    let mut h = history(&[(100, 1)]);
    h.mark_unknown(InFlight);
    h.mark_lost();
    assert_eq!(h.lookup(100), Err(InFlight));
}

#[test]
fn prune_keeps_the_transition_in_force() {
    let mut h = history(&[(100, 1), (200, 2), (300, 3)]);
    h.prune(250);
    assert_eq!(h.len(), 1);
    // The point in force at the cut keeps its own time: exact from 200 on, before it unknown.
    assert_eq!(h.lookup(199), Err(HistoryExpired));
    assert_eq!(h.lookup(200), Ok(2));
    assert_eq!(h.lookup(249), Ok(2));
    assert_eq!(h.lookup(250), Ok(2));
    assert_eq!(h.lookup(300), Ok(3));
    assert_eq!(h.expired_before(), 250);
    // Pruning backwards changes nothing.
    h.prune(100);
    assert_eq!(h.lookup(199), Err(HistoryExpired));
    assert_eq!(h.lookup(249), Ok(2));
}

#[test]
fn prune_exactly_at_a_transition() {
    let mut h = history(&[(100, 1), (200, 2)]);
    h.prune(200);
    assert_eq!(h.len(), 0);
    assert_eq!(h.lookup(199), Err(HistoryExpired));
    assert_eq!(h.lookup(200), Ok(2));
}

#[test]
fn prune_inside_a_lost_stretch_keeps_it_unknown() {
    let mut h = history(&[(100, 1)]);
    h.mark_lost();
    h.push(tr(300, 2));
    h.prune(200);
    assert_eq!(h.lookup(200), Err(LogOverflow));
    assert_eq!(h.lookup(300), Ok(2));
}

#[test]
fn prune_a_fresh_history_keeps_empty_since_the_beginning() {
    // No transition ever: EMPTY over the whole past, however far the cut moved.
    let mut h = History::new();
    h.prune(1000);
    assert_eq!(h.lookup(i64::MIN), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(999), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(1000), Ok(EMPTY_CONTEXT));
}

#[test]
fn a_pruned_context_stays_unknown_and_the_empty_after_it_is_known() {
    // A context from 100 to 200, then none: after a cut at 1000, the EMPTY from 200 on is
    // proven, the stretch before it (where the context was) is not.
    let mut h = history(&[(100, 5), (200, EMPTY_CONTEXT)]);
    h.prune(1000);
    assert_eq!(h.lookup(150), Err(HistoryExpired));
    assert_eq!(h.lookup(199), Err(HistoryExpired));
    assert_eq!(h.lookup(200), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup(999), Ok(EMPTY_CONTEXT));
    assert_eq!(h.lookup_binary_search(150), Err(HistoryExpired));
    assert_eq!(h.lookup_binary_search(999), Ok(EMPTY_CONTEXT));
}

#[test]
fn memory_bound_evicts_oldest_and_expires_them() {
    let mut h = History::with_limit(4);
    for i in 1..=10i64 {
        h.push(tr(i * 10, i as u64));
    }
    assert_eq!(h.len(), 3);
    assert_eq!(h.evicted(), 7);
    assert_eq!(h.lookup(69), Err(HistoryExpired));
    assert_eq!(h.lookup(70), Ok(7));
    assert_eq!(h.lookup(100), Ok(10));
}

#[test]
fn invalid_context_id_is_never_known() {
    let h = history(&[(100, 1 << 63), (200, u64::MAX), (300, 2)]);
    assert_eq!(h.lookup(150), Err(ContextReleased));
    assert_eq!(h.lookup(250), Err(ContextReleased));
    assert_eq!(h.lookup(300), Ok(2));
}

#[test]
fn state_encoding_round_trips_every_reason() {
    for reason in UnknownReason::ALL {
        assert_eq!(decode(unknown(reason)), Err(reason));
    }
    assert_eq!(decode(known(0)), Ok(0));
    assert_eq!(decode(known((1 << 63) - 1)), Ok((1 << 63) - 1));
}

#[test]
fn many_prunes_compact_and_stay_exact() {
    let mut h = History::new();
    for i in 1..=10_000i64 {
        h.push(tr(i * 10, (i % 3) as u64 + 1));
        if i % 100 == 0 {
            h.prune(i * 10 - 500);
        }
    }
    assert!(h.len() <= 150);
    assert!(h.times.len() <= 2 * (h.len() + 1) + COMPACT_FROM);
    assert_eq!(h.lookup(99_499), Err(HistoryExpired));
    assert_eq!(h.lookup(99_500), Ok((9_950 % 3) as u64 + 1));
    assert_eq!(h.lookup(100_000), Ok((10_000 % 3) as u64 + 1));
}

#[test]
fn extreme_times_do_not_panic() {
    let mut h = History::new();
    h.push(tr(i64::MIN, 1));
    h.push(tr(i64::MAX, 2));
    assert_eq!(h.lookup(i64::MIN), Ok(1));
    assert_eq!(h.lookup(i64::MAX), Ok(2));
    h.prune(i64::MAX);
    assert_eq!(h.lookup(i64::MAX), Ok(2));
}

/// Deterministic xorshift64 for the cursor tests.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Asks `h` at `t` both ways; they must agree.
fn same_both_ways(h: &History, t: i64) {
    assert_eq!(
        h.lookup(t),
        h.lookup_binary_search(t),
        "at {t} (cursor {h:?})"
    );
}

/// A random history: transitions `gap` apart on average, some repeated contexts, lost and
/// in-flight stretches, a few non-monotonic times.
fn random_history(rng: &mut Rng, points: usize, gap: u64) -> History {
    let mut h = History::new();
    let mut t = 1_000i64;
    for _ in 0..points {
        t += rng.below(gap) as i64;
        match rng.below(40) {
            0 => h.mark_lost(),
            1 => h.mark_unknown(InFlight),
            2 => {
                h.push(tr(t - rng.below(4 * gap) as i64, rng.below(5)));
            }
            _ => {
                h.push(tr(t, rng.below(5)));
            }
        }
    }
    h
}

#[test]
fn cursor_matches_binary_search_on_random_walks() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..200 {
        let points = 1 + rng.below(300) as usize;
        let h = random_history(&mut rng, points, 50);
        let end = 1_000 + 50 * points as i64;
        let mut t = rng.below(end as u64) as i64;
        for _ in 0..400 {
            // Mostly small steps forward, sometimes backward jumps or anywhere.
            t = match rng.below(10) {
                0 => t - rng.below(2_000) as i64,
                1 => rng.below(end as u64 + 500) as i64 - 250,
                2 => t + rng.below(5_000) as i64,
                _ => t + rng.below(60) as i64,
            };
            same_both_ways(&h, t);
        }
        // Exactly at every point's time (ties), in order and in reverse.
        let times: Vec<i64> = h.times[h.start..].to_vec();
        for &pt in times.iter().chain(times.iter().rev()) {
            same_both_ways(&h, pt);
            same_both_ways(&h, pt.saturating_sub(1));
        }
    }
}

#[test]
fn cursor_matches_binary_search_across_pushes_prunes_and_compaction() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut h = History::with_limit(500);
    let mut t = 0i64;
    let mut compactions = 0;
    for i in 0..20_000 {
        t += 1 + rng.below(100) as i64;
        let start_before = h.start;
        match rng.below(100) {
            0 => h.mark_lost(),
            1 => {
                h.push(tr(t - rng.below(300) as i64, rng.below(7)));
            }
            _ => {
                h.push(tr(t, rng.below(7)));
            }
        }
        if i % 37 == 0 {
            h.prune(t - 2_000 - rng.below(2_000) as i64);
        }
        if h.start < start_before {
            compactions += 1;
        }
        // Lookups behind the newest point, in about time order, with an occasional jump back.
        for _ in 0..3 {
            let back = if rng.below(20) == 0 { 5_000 } else { 300 };
            same_both_ways(&h, t - rng.below(back) as i64);
        }
    }
    assert!(compactions > 10, "compacted {compactions} times");
}

#[test]
fn stale_cursor_beyond_the_end_is_clamped() {
    let mut h = history(&[(100, 1), (200, 2), (300, 3), (400, 4)]);
    assert_eq!(h.lookup(450), Ok(4));
    // A non-monotonic push truncates the points under the cursor.
    assert!(!h.push(tr(150, 9)));
    for t in [0, 99, 100, 149, 150, 399, 400, 1_000] {
        same_both_ways(&h, t);
    }
    h.cursor.set(usize::MAX);
    same_both_ways(&h, 120);
}

#[test]
fn far_jumps_gallop_both_ways() {
    let mut h = History::new();
    for i in 1..=100_000i64 {
        h.push(tr(i * 10, (i % 3) as u64 + 1));
    }
    for &t in &[5i64, 999_999, 10, 500_005, 500_000, 123_457, 1_000_000, 9] {
        same_both_ways(&h, t);
    }
}

#[test]
fn a_history_in_reused_memory_starts_empty() {
    let old = history(&[(10, 5), (20, 0), (30, 6)]);
    let storage = old
        .into_storage()
        .expect("a small history's memory is kept");
    let h = History::with_limit_in(DEFAULT_MAX_POINTS, storage);
    assert_eq!(h.len(), 0, "none of the old points");
    for t in [i64::MIN, 15, 25, 35] {
        assert_eq!(h.lookup(t), Ok(EMPTY_CONTEXT), "EMPTY at {t}");
    }
}

#[test]
fn a_large_historys_memory_is_not_kept() {
    let points: Vec<(i64, ContextId)> = (1..=40).map(|i| (i * 10, i as ContextId)).collect();
    assert!(history(&points).into_storage().is_none());
}
