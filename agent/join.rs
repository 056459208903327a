//! Decides which context a sample's thread had at the sample's instant: drains the rings into
//! per-thread histories and answers from them, deferring what cannot be decided yet. Pure; the
//! worker thread is the only caller (no locks inside).
//!
//! **Round protocol** (the caller's part of the correctness argument):
//!
//! 1. `now = CLOCK_MONOTONIC` (the `System.nanoTime()` scale);
//! 2. `add_ring` for every registration received so far (and `release_ring` for releases);
//! 3. `drain(now)`; then `decide` the samples, `prune(now)`.
//!
//! Reading `now` *before* adding the pending registrations matters: a thread's transitions all
//! come after its registration, so any transition with a time below `now` belongs to a ring that
//! was registered before `now` was read, hence is added and drained in this round. A thread
//! without any ring is then known to have had no context (EMPTY) up to the watermark.
//!
//! **Watermark.** After `drain(now)`, every transition with time `< now - safety` has been seen:
//! the producer reads its clock only after publishing an odd `head`, and a transition whose odd
//! `head` we saw is either drained or marked in flight. `safety_ns` covers the short window in
//! which a store is issued but not yet visible to us (store buffers); samples later than
//! `now - safety` are deferred to a later round.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::context::history::{History, DEFAULT_MAX_POINTS};
use crate::context::ring::{DrainOutcome, Ring, Transition};
use crate::model::{ContextId, UnknownReason, EMPTY_CONTEXT};

/// Default safety margin below the watermark: 1 ms.
pub const DEFAULT_SAFETY_NS: i64 = 1_000_000;
/// Releases of not (yet) added handles remembered at most.
const MAX_EARLY_RELEASES: usize = 4096;

/// Outcome of joining one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// The thread had this context (possibly `EMPTY_CONTEXT`).
    Context(ContextId),
    /// The context cannot be known, and why.
    Unknown(UnknownReason),
    /// Not decidable yet: ask again after a later `drain`.
    Defer,
}

/// Counters for the summary and memory bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JoinCounters {
    /// Transitions read from rings.
    pub transitions_drained: u64,
    /// Ring entries overwritten before they could be read.
    pub entries_lost: u64,
    /// Drains in which at least one entry was lost.
    pub lost_stretches: u64,
    /// Rings found with an inconsistent header (never read again).
    pub rings_corrupt: u64,
    /// Rings replaced by a newer registration of the same thread.
    pub rings_replaced: u64,
    /// Rings released with a transition still half-written.
    pub released_in_flight: u64,
    /// Transitions whose time went backwards in a thread's log.
    pub non_monotonic: u64,
    /// Threads with a ring.
    pub threads_live: usize,
    /// Threads whose ring was released, history still kept.
    pub threads_released: usize,
    /// Context changes held in all histories.
    pub history_entries: usize,
}

/// Multiply-xorshift hasher for `u64` keys (thread ids, handles): cheaper than SipHash, and the
/// keys are not attacker-chosen.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 32);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Debug)]
struct ThreadState {
    history: History,
    ring: Option<Arc<Ring>>,
    /// A ring was added since the last `drain`: its transitions are not in the history yet.
    undrained: bool,
    /// At the last drain a transition was half-written (its time is unknown, at least the last
    /// drained one).
    in_flight: bool,
    /// `Some(t)` once released at `t`: forgotten when `t` is older than the retained range.
    released_at: Option<i64>,
    /// The current ring reported a corrupt header (counted once).
    ring_corrupt: bool,
}

impl ThreadState {
    fn new(history_limit: usize) -> ThreadState {
        ThreadState {
            history: History::with_limit(history_limit),
            ring: None,
            undrained: false,
            in_flight: false,
            released_at: None,
            ring_corrupt: false,
        }
    }
}

/// Rings and histories of all threads; decides samples.
#[derive(Debug)]
pub struct Joiner {
    retention_ns: i64,
    safety_ns: i64,
    history_limit: usize,
    threads: IdMap<ThreadState>,
    /// Ring handle → thread id, for `release_ring`.
    handles: IdMap<u64>,
    /// Releases that arrived before their ring was added: handle → release time.
    early_releases: IdMap<i64>,
    /// `now` of the last `drain`; `None` before the first.
    watermark: Option<i64>,
    scratch: Vec<Transition>,
    counters: JoinCounters,
}

/// Applies one drain of a thread's ring to its history.
fn apply(
    state: &mut ThreadState,
    scratch: &[Transition],
    outcome: DrainOutcome,
    counters: &mut JoinCounters,
) {
    if outcome.corrupt {
        // Nothing from this ring can be trusted from the last known transition on.
        if !state.ring_corrupt {
            state.ring_corrupt = true;
            counters.rings_corrupt += 1;
        }
        state.history.mark_lost();
        state.in_flight = false;
        return;
    }
    if outcome.lost > 0 {
        state.history.mark_lost();
        counters.entries_lost += outcome.lost;
        counters.lost_stretches += 1;
    }
    for &t in scratch {
        if !state.history.push(t) {
            counters.non_monotonic += 1;
        }
    }
    counters.transitions_drained += scratch.len() as u64;
    state.in_flight = outcome.in_flight;
}

impl Joiner {
    /// `retention_ns`: how far behind the watermark samples are still answered; `safety_ns`
    /// (usually `DEFAULT_SAFETY_NS`): how far behind it they must be to be answered. Negative
    /// values count as 0.
    pub fn new(retention_ns: i64, safety_ns: i64) -> Joiner {
        Joiner {
            retention_ns: retention_ns.max(0),
            safety_ns: safety_ns.max(0),
            history_limit: DEFAULT_MAX_POINTS,
            threads: IdMap::default(),
            handles: IdMap::default(),
            early_releases: IdMap::default(),
            watermark: None,
            scratch: Vec::new(),
            counters: JoinCounters::default(),
        }
    }

    /// Bounds each new thread history to `max_points` context changes (see `History`).
    pub fn set_history_limit(&mut self, max_points: usize) {
        self.history_limit = max_points;
    }

    /// A thread registered `ring`. A thread registering again keeps its history; its previous
    /// ring, if still held, is drained one last time and dropped. Registering the same ring
    /// twice changes nothing.
    pub fn add_ring(&mut self, ring: Arc<Ring>) {
        let tid = ring.thread_id();
        let handle = ring.handle();
        let limit = self.history_limit;
        let state = self
            .threads
            .entry(tid)
            .or_insert_with(|| ThreadState::new(limit));
        if let Some(old) = state.ring.take() {
            if Arc::ptr_eq(&old, &ring) {
                state.ring = Some(old);
                return;
            }
            self.scratch.clear();
            let outcome = old.drain(&mut self.scratch);
            apply(state, &self.scratch, outcome, &mut self.counters);
            if state.in_flight {
                // The old ring will not be read again: its half-written transition never lands.
                state.history.mark_unknown(UnknownReason::InFlight);
                state.in_flight = false;
            }
            self.handles.remove(&old.handle());
            self.counters.rings_replaced += 1;
        }
        state.ring = Some(ring);
        state.ring_corrupt = false;
        state.undrained = true;
        state.released_at = None;
        self.handles.insert(handle, tid);
        if let Some(released_at) = self.early_releases.remove(&handle) {
            self.release_ring(handle, released_at);
        }
    }

    /// The owner of the ring `handle` is gone: drains it one last time and drops it; the
    /// thread's history is kept while samples up to `now_ns` can still be asked about. Returns
    /// `false` for a handle not added (yet): such a release is remembered (up to a bound) and
    /// applied when `add_ring` brings that handle, as registrations and releases may be queued
    /// separately.
    pub fn release_ring(&mut self, handle: u64, now_ns: i64) -> bool {
        let Some(tid) = self.handles.remove(&handle) else {
            if self.early_releases.len() < MAX_EARLY_RELEASES {
                self.early_releases.insert(handle, now_ns);
            }
            return false;
        };
        let Some(state) = self.threads.get_mut(&tid) else {
            return false;
        };
        let Some(ring) = state.ring.take() else {
            return false;
        };
        self.scratch.clear();
        let outcome = ring.drain(&mut self.scratch);
        apply(state, &self.scratch, outcome, &mut self.counters);
        if state.in_flight {
            // The owner died half-way through a transition: it will never complete.
            state.history.mark_unknown(UnknownReason::InFlight);
            state.in_flight = false;
            self.counters.released_in_flight += 1;
        }
        state.undrained = false;
        state.released_at = Some(now_ns);
        true
    }

    /// Drains every ring into its thread's history. `now_ns` is the clock read at the start of
    /// the round (see the module docs); it becomes the watermark.
    pub fn drain(&mut self, now_ns: i64) {
        for state in self.threads.values_mut() {
            let Some(ring) = &state.ring else {
                continue;
            };
            self.scratch.clear();
            let outcome = ring.drain(&mut self.scratch);
            apply(state, &self.scratch, outcome, &mut self.counters);
            state.undrained = false;
        }
        self.watermark = Some(self.watermark.map_or(now_ns, |w| w.max(now_ns)));
    }

    /// The watermark: `now_ns` of the latest `drain`.
    pub fn watermark(&self) -> Option<i64> {
        self.watermark
    }

    /// The context `thread_id` had at `time_ns` (`System.nanoTime()` scale), or why it is unknown,
    /// or `Defer` when a later drain may still change the answer.
    pub fn decide(&self, thread_id: Option<u64>, time_ns: i64) -> Decision {
        let Some(tid) = thread_id else {
            return Decision::Unknown(UnknownReason::NoThread);
        };
        let Some(w) = self.watermark else {
            return Decision::Defer;
        };
        if time_ns < w.saturating_sub(self.retention_ns) {
            return Decision::Unknown(UnknownReason::HistoryExpired);
        }
        if time_ns > w.saturating_sub(self.safety_ns) {
            return Decision::Defer;
        }
        let Some(state) = self.threads.get(&tid) else {
            // Never registered before the watermark: never installed a context.
            return Decision::Context(EMPTY_CONTEXT);
        };
        if state.undrained {
            return Decision::Defer;
        }
        if state.in_flight && time_ns >= state.history.last_transition_ns().unwrap_or(i64::MIN) {
            return Decision::Defer;
        }
        match state.history.lookup(time_ns) {
            Ok(id) => Decision::Context(id),
            Err(reason) => Decision::Unknown(reason),
        }
    }

    /// `decide` for the last round before exit: nothing will be drained again, so what would be
    /// deferred is unknown (`InFlight`).
    pub fn decide_final(&self, thread_id: Option<u64>, time_ns: i64) -> Decision {
        match self.decide(thread_id, time_ns) {
            Decision::Defer => Decision::Unknown(UnknownReason::InFlight),
            d => d,
        }
    }

    /// Drops history no longer needed at `now_ns` (normally the round's `now`): histories keep
    /// what lookups at or after `watermark - retention` need, and released threads are
    /// forgotten once every sample they can have (at most their release time) is expired.
    pub fn prune(&mut self, now_ns: i64) {
        let Some(w) = self.watermark else {
            return;
        };
        // Never beyond the watermark: `decide` expires samples relative to it.
        let keep_from = now_ns.min(w).saturating_sub(self.retention_ns);
        let safety = self.safety_ns;
        self.threads.retain(|_, state| {
            if let Some(released) = state.released_at {
                if released.saturating_add(safety) < keep_from {
                    return false;
                }
            }
            state.history.prune(keep_from);
            true
        });
    }

    /// Current counters (thread and history figures computed now: O(threads)).
    pub fn counters(&self) -> JoinCounters {
        let mut c = self.counters;
        c.threads_live = 0;
        c.threads_released = 0;
        c.history_entries = 0;
        for state in self.threads.values() {
            if state.ring.is_some() {
                c.threads_live += 1;
            } else if state.released_at.is_some() {
                c.threads_released += 1;
            }
            c.history_entries += state.history.len();
        }
        c
    }

    pub fn retention_ns(&self) -> i64 {
        self.retention_ns
    }

    pub fn safety_ns(&self) -> i64 {
        self.safety_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::ring::Producer;
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
        j.drain(RETENTION + 1_000);
        assert_eq!(j.decide(Some(1), 999), Unknown(HistoryExpired));
        assert_eq!(j.decide(Some(1), 1_000), Context(5));
        j.prune(RETENTION + 1_000);
        assert_eq!(j.decide(Some(1), 1_000), Context(5));
        assert_eq!(j.decide(Some(7), 999), Unknown(HistoryExpired));
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
        assert_eq!(j.decide(Some(1), 250), Unknown(HistoryExpired));
        assert_eq!(
            j.decide(Some(1), later - RETENTION),
            Context(4),
            "still held"
        );
        let much_later = later + SAFETY + 10;
        j.drain(much_later);
        j.prune(much_later);
        assert_eq!(j.counters().threads_released, 0);
        assert_eq!(j.decide(Some(1), 250), Unknown(HistoryExpired));
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
}
