//! One thread's context over time: the transitions drained from its ring, with the stretches
//! where the context cannot be known (lost entries, an unfinished transition). Pure.
//!
//! The history is a step function of time: a sorted list of points `(time, state)`, each in force
//! from its time (inclusive) until the next point. It starts as "EMPTY since the beginning of
//! time": a thread that never installed a context had none.
//!
//! **Ties.** A transition at exactly `t` is in force at `t`: a sample taken at `t` sees the NEW
//! context. Several transitions at the same `t`: the last one wins. Either choice is as accurate as
//! the clocks allow (a sample and a transition at the same nanosecond are unordered); this one
//! makes an unknown stretch start *at* the last known transition (see [`History::mark_lost`]).

use crate::context::ring::Transition;
use crate::model::{ContextId, UnknownReason, EMPTY_CONTEXT};

/// Default bound on retained points per thread (4 MiB).
pub const DEFAULT_MAX_POINTS: usize = 1 << 18;
const MIN_MAX_POINTS: usize = 2;
/// Dead prefix length from which the arrays are compacted (when it is also half of them).
const COMPACT_FROM: usize = 64;

/// A point's state in one word: a context id below `UNKNOWN_TAG`, or `UNKNOWN_TAG | i` for
/// `UnknownReason::ALL[i]`. A context id with the top bit set is not a valid id (ids come from
/// Java longs `>= 0`); it is stored as unknown `ContextReleased` ("never known").
const UNKNOWN_TAG: u64 = 1 << 63;

fn known(id: ContextId) -> u64 {
    if id & UNKNOWN_TAG == 0 {
        id
    } else {
        unknown(UnknownReason::ContextReleased)
    }
}

fn unknown(reason: UnknownReason) -> u64 {
    let index = UnknownReason::ALL
        .iter()
        .position(|&r| r == reason)
        .unwrap_or(0);
    UNKNOWN_TAG | index as u64
}

fn is_unknown(state: u64) -> bool {
    state & UNKNOWN_TAG != 0
}

fn decode(state: u64) -> Result<ContextId, UnknownReason> {
    if is_unknown(state) {
        let index = (state & !UNKNOWN_TAG) as usize;
        Err(UnknownReason::ALL
            .get(index)
            .copied()
            .unwrap_or(UnknownReason::LogOverflow))
    } else {
        Ok(state)
    }
}

/// A thread's transition history: points `(times[i], states[i])` for `i` in `start..len`.
/// Invariants: at least one live point; live times strictly increasing (equal times overwrite);
/// the first live point's time `<= expired_before`.
#[derive(Debug, Clone)]
pub struct History {
    times: Vec<i64>,
    states: Vec<u64>,
    /// Points before `start` are dead (pruned), kept until compaction.
    start: usize,
    /// Lookups before this are `HistoryExpired`.
    expired_before: i64,
    /// Time of the last transition pushed (after clamping), `None` before the first.
    last_transition_ns: Option<i64>,
    max_points: usize,
    non_monotonic: u64,
    evicted: u64,
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl History {
    /// EMPTY since the beginning of time, bounded to `DEFAULT_MAX_POINTS` points.
    pub fn new() -> History {
        History::with_limit(DEFAULT_MAX_POINTS)
    }

    /// Like `new`, retaining at most `max_points` points (at least 2): when a push exceeds it the
    /// oldest points are dropped and lookups before the new first point become `HistoryExpired`.
    pub fn with_limit(max_points: usize) -> History {
        History {
            times: vec![i64::MIN],
            states: vec![known(EMPTY_CONTEXT)],
            start: 0,
            expired_before: i64::MIN,
            last_transition_ns: None,
            max_points: max_points.max(MIN_MAX_POINTS),
            non_monotonic: 0,
            evicted: 0,
        }
    }

    fn live(&self) -> usize {
        self.times.len() - self.start
    }

    /// Index of the last point. The history always holds a live point; should that ever not
    /// hold, one is recreated (unknown) rather than panicking.
    fn last(&mut self) -> usize {
        if self.times.len() <= self.start {
            self.times.truncate(self.start);
            self.states.truncate(self.start);
            self.times.push(self.expired_before);
            self.states.push(unknown(UnknownReason::HistoryExpired));
        }
        self.times.len() - 1
    }

    /// Absolute index just past the live points with a time `<= t_ns`.
    fn after(&self, t_ns: i64) -> usize {
        self.start + self.times[self.start..].partition_point(|&time| time <= t_ns)
    }

    fn drop_front(&mut self, count: usize) {
        self.start += count;
        if self.start >= COMPACT_FROM && 2 * self.start >= self.times.len() {
            self.times.drain(..self.start);
            self.states.drain(..self.start);
            self.start = 0;
        }
    }

    /// Appends a transition. Times must be non-decreasing. A transition earlier than the last
    /// point contradicts the order of the log: it is never reordered; instead the span it makes
    /// ambiguous, `[its time, last point's time)`, becomes unknown (`LogOverflow`: the log is
    /// inconsistent there), and the transition takes effect at the last point's time (clamped).
    /// Counted in `non_monotonic`; returns `false` in that case.
    pub fn push(&mut self, transition: Transition) -> bool {
        let state = known(transition.context);
        let last = self.last();
        let last_time = self.times[last];
        if transition.time_ns < last_time {
            let keep = self.start
                + self.times[self.start..].partition_point(|&time| time < transition.time_ns);
            self.times.truncate(keep);
            self.states.truncate(keep);
            self.times.push(transition.time_ns);
            self.states.push(unknown(UnknownReason::LogOverflow));
            self.append(last_time, state);
            self.last_transition_ns = Some(last_time);
            self.non_monotonic += 1;
            return false;
        }
        let time_ns = transition.time_ns;
        if self.states[last] == state {
            // Same context again: the step function does not change.
        } else if last_time == time_ns {
            // Same instant: the newer transition wins at that instant and after.
            self.states[last] = state;
        } else {
            self.append(time_ns, state);
        }
        self.last_transition_ns = Some(time_ns);
        true
    }

    /// Appends a point later than the last one, enforcing the memory bound.
    fn append(&mut self, time_ns: i64, state: u64) {
        self.times.push(time_ns);
        self.states.push(state);
        let live = self.live();
        if live > self.max_points {
            let excess = live - self.max_points;
            self.drop_front(excess);
            self.evicted += excess as u64;
            self.expired_before = self.expired_before.max(self.times[self.start]);
        }
    }

    /// Transitions after the last one pushed were lost (overwritten before they were drained):
    /// the context is `LogOverflow` from the last transition's time, inclusive, until the next
    /// push. Lost transitions have times in `[last pushed, next pushed]`; one may share the last
    /// pushed time, hence inclusive; at the next pushed time that one wins (it is the newest).
    /// With no transition pushed yet, the stretch starts at the beginning of time.
    pub fn mark_lost(&mut self) {
        self.mark_unknown(UnknownReason::LogOverflow);
    }

    /// Like `mark_lost` with another reason (e.g. `InFlight` for a transition that will never
    /// complete). A stretch already unknown keeps its first reason.
    pub fn mark_unknown(&mut self, reason: UnknownReason) {
        let last = self.last();
        if is_unknown(self.states[last]) {
            return;
        }
        let state = unknown(reason);
        // The last transition may have repeated the context of the last point (no point was
        // added for it); the unknown stretch starts at the transition, not at the point.
        match self.last_transition_ns {
            Some(t) if t > self.times[last] => self.append(t, state),
            // Exact: from the point's time on, its context is now unknown.
            _ => self.states[last] = state,
        }
    }

    /// The context in force at `t_ns`.
    #[inline]
    pub fn lookup(&self, t_ns: i64) -> Result<ContextId, UnknownReason> {
        if t_ns < self.expired_before {
            return Err(UnknownReason::HistoryExpired);
        }
        let after = self.after(t_ns);
        if after <= self.start {
            return Err(UnknownReason::HistoryExpired);
        }
        decode(self.states[after - 1])
    }

    /// Drops what is not needed for lookups at or after `keep_from_ns`: the point in force at
    /// `keep_from_ns` is kept, so those lookups stay exact; earlier lookups become
    /// `HistoryExpired`.
    pub fn prune(&mut self, keep_from_ns: i64) {
        if keep_from_ns <= self.expired_before {
            return;
        }
        let after = self.after(keep_from_ns);
        if after > self.start + 1 {
            self.drop_front(after - 1 - self.start);
        }
        self.expired_before = keep_from_ns;
    }

    /// Number of context changes retained (live points after the first). Memory is about
    /// `16 * (len() + 1)` bytes, plus up to as much again before compaction.
    pub fn len(&self) -> usize {
        self.live().saturating_sub(1)
    }

    /// No context change retained: one state over the whole retained range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Time of the last transition pushed (after clamping); `None` when none was.
    pub fn last_transition_ns(&self) -> Option<i64> {
        self.last_transition_ns
    }

    /// Lookups before this time are `HistoryExpired`.
    pub fn expired_before(&self) -> i64 {
        self.expired_before
    }

    /// Transitions whose time went backwards (clamped).
    pub fn non_monotonic(&self) -> u64 {
        self.non_monotonic
    }

    /// Points dropped by the memory bound (not by `prune`).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(h.lookup(149), Err(HistoryExpired));
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
        assert_eq!(h.lookup(249), Err(HistoryExpired));
        assert_eq!(h.lookup(250), Ok(2));
        assert_eq!(h.lookup(300), Ok(3));
        assert_eq!(h.expired_before(), 250);
        // Pruning backwards changes nothing.
        h.prune(100);
        assert_eq!(h.lookup(249), Err(HistoryExpired));
        assert_eq!(h.lookup(250), Ok(2));
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
    fn prune_a_fresh_history_keeps_empty() {
        let mut h = History::new();
        h.prune(1000);
        assert_eq!(h.lookup(999), Err(HistoryExpired));
        assert_eq!(h.lookup(1000), Ok(EMPTY_CONTEXT));
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
}
