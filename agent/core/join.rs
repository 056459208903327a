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

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::core::context::history::{History, Storage, DEFAULT_MAX_POINTS};
use crate::core::context::ids::Ids;
use crate::core::context::ring::{DrainOutcome, Ring, Transition, MAX_GROWN_CAPACITY};
use crate::core::model::{ContextId, UnknownReason, EMPTY_CONTEXT};

/// Default safety margin below the watermark: 1 ms.
pub const DEFAULT_SAFETY_NS: i64 = 1_000_000;
/// Releases of not (yet) added handles remembered at most.
const MAX_EARLY_RELEASES: usize = 4096;
/// Ranges of forgotten thread ids remembered at most (see [`Forgotten`]).
const MAX_FORGOTTEN_RANGES: usize = 1 << 16;
/// Most thread ids the window of thread states spans (`context/ids.rs`): 6.5 s of a server
/// starting 20 000 virtual threads a second; past it the oldest states still kept (long-lived
/// platform threads) move to the hash map.
const MAX_THREAD_WINDOW: usize = 1 << 17;

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
    /// Drains after which a ring was asked to grow (see [`growth`]).
    pub growth_requests: u64,
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
type IdSet = HashSet<u64, BuildHasherDefault<IdHasher>>;

/// Ids of threads whose state `prune` dropped (released, all their samples older than the
/// retention), as inclusive ranges `start → end`. A thread absent from the map is known to have
/// had no context only if it is not in here. Bounded: past [`MAX_FORGOTTEN_RANGES`] the two
/// lowest ranges merge, so the ids between them count as forgotten too (their samples become
/// unknown, never a guess). Java thread ids are never reused, and virtual threads get
/// consecutive ones, so a few ranges usually cover many threads.
#[derive(Debug, Default)]
struct Forgotten {
    ranges: BTreeMap<u64, u64>,
}

impl Forgotten {
    fn contains(&self, tid: u64) -> bool {
        self.ranges
            .range(..=tid)
            .next_back()
            .is_some_and(|(_, &end)| tid <= end)
    }

    fn insert(&mut self, tid: u64) {
        if self.contains(tid) {
            return;
        }
        let below = self
            .ranges
            .range(..tid)
            .next_back()
            .filter(|(_, &end)| end.checked_add(1) == Some(tid))
            .map(|(&start, _)| start);
        let above = tid
            .checked_add(1)
            .and_then(|next| self.ranges.remove(&next).map(|end| (next, end)));
        let start = below.unwrap_or(tid);
        let end = above.map_or(tid, |(_, end)| end);
        self.ranges.insert(start, end);
        if self.ranges.len() > MAX_FORGOTTEN_RANGES {
            if let (Some((s1, _)), Some((_, e2))) =
                (self.ranges.pop_first(), self.ranges.pop_first())
            {
                self.ranges.insert(s1, e2);
            }
        }
    }
}

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
    /// Hand-backs of the current ring (`Ring::retired`) already reported by `take_retired`.
    retired_seen: u64,
}

impl ThreadState {
    fn new(history_limit: usize, storage: Option<Storage>) -> ThreadState {
        ThreadState {
            history: match storage {
                Some(s) => History::with_limit_in(history_limit, s),
                None => History::with_limit(history_limit),
            },
            ring: None,
            undrained: false,
            in_flight: false,
            released_at: None,
            ring_corrupt: false,
            retired_seen: 0,
        }
    }
}

/// Rings and histories of all threads; decides samples.
#[derive(Debug)]
pub struct Joiner {
    retention_ns: i64,
    safety_ns: i64,
    history_limit: usize,
    /// By Java thread id: a window for the ids handed out in order (`context/ids.rs`).
    threads: Ids<ThreadState>,
    /// Threads with a ring: the only ones `drain` and `prune` visit, so that the histories of
    /// ended threads (thousands with thread-per-request virtual threads) cost nothing per round.
    live: IdSet,
    /// `(due, thread, released_at)` of released threads, in due order (`due` is `released_at`,
    /// or the latest due before it when that is later: never out of order), from which `prune`
    /// forgets them. Entries of threads registered again since are stale and skipped.
    releases: VecDeque<(i64, u64, i64)>,
    /// Threads dropped by `prune`: not "never registered".
    forgotten: Forgotten,
    /// Ring handle → thread id, for `release_ring`.
    handles: IdMap<u64>,
    /// Highest handle added so far: handles are issued in increasing order, so a release of a
    /// lower handle that is no longer live was already applied and is ignored.
    max_handle: u64,
    /// Releases that arrived before their ring was added: handle → release time.
    early_releases: IdMap<i64>,
    /// `now` of the last `drain`; `None` before the first.
    watermark: Option<i64>,
    scratch: Vec<Transition>,
    counters: JoinCounters,
    /// Entries found in the fullest ring at the last `drain`, over its capacity.
    peak_fill: f64,
    /// Rings handed back through their header since the last `take_retired`: (handle, times).
    retired: Vec<(u64, u64)>,
    /// Memory of forgotten threads' histories, for new threads' (at most `KEEP_STORAGE`).
    storage: Vec<Storage>,
    /// Whether `drain` sets each ring's wake hint (the worker is about to sleep long) or clears it.
    wake_hint: bool,
}

/// Forgotten histories' memory kept for new threads: a thread-per-request server forgets and
/// starts about as many threads a round.
const KEEP_STORAGE: usize = 4096;

/// The capacity a ring should grow to after a drain that found `found` entries (lost ones
/// included) of which `lost` were lost: ×4 (up to `MAX_GROWN_CAPACITY`) once a drain finds it a
/// third full or losing entries, since the worker's pace alone cannot keep up when it is
/// descheduled (a 1024-entry ring lasts 1 ms at 1 M switches a second).
pub fn growth(capacity: usize, found: u64, lost: u64) -> Option<usize> {
    if capacity >= MAX_GROWN_CAPACITY || (lost == 0 && found * 3 < capacity as u64) {
        return None;
    }
    Some((capacity * 4).min(MAX_GROWN_CAPACITY))
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
    /// `retention_ns`: how much history is kept behind the watermark (older samples are
    /// answered only where what is kept proves the answer); `safety_ns`
    /// (usually `DEFAULT_SAFETY_NS`): how far behind it they must be to be answered. Negative
    /// values count as 0.
    pub fn new(retention_ns: i64, safety_ns: i64) -> Joiner {
        Joiner {
            retention_ns: retention_ns.max(0),
            safety_ns: safety_ns.max(0),
            history_limit: DEFAULT_MAX_POINTS,
            threads: Ids::new(0),
            live: IdSet::default(),
            releases: VecDeque::new(),
            forgotten: Forgotten::default(),
            handles: IdMap::default(),
            max_handle: 0,
            early_releases: IdMap::default(),
            watermark: None,
            scratch: Vec::new(),
            counters: JoinCounters::default(),
            peak_fill: 0.0,
            retired: Vec::new(),
            storage: Vec::new(),
            wake_hint: false,
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
        if !self.threads.contains(tid) {
            let storage = self.storage.pop();
            self.threads.insert(tid, ThreadState::new(limit, storage));
        }
        let Some(state) = self.threads.get_mut(tid) else {
            return; // cannot happen: inserted just above
        };
        if let Some(old) = state.ring.take() {
            if Arc::ptr_eq(&old, &ring) {
                state.ring = Some(old);
                return;
            }
            let retired = old.retired();
            if retired > state.retired_seen {
                self.retired
                    .push((old.handle(), retired - state.retired_seen));
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
        state.retired_seen = 0;
        self.live.insert(tid);
        state.undrained = true;
        state.released_at = None;
        self.handles.insert(handle, tid);
        self.max_handle = self.max_handle.max(handle);
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
            if handle > self.max_handle && self.early_releases.len() < MAX_EARLY_RELEASES {
                self.early_releases.insert(handle, now_ns);
            }
            return false;
        };
        let Some(state) = self.threads.get_mut(tid) else {
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
        self.live.remove(&tid);
        let due = self
            .releases
            .back()
            .map_or(now_ns, |&(last, _, _)| now_ns.max(last));
        self.releases.push_back((due, tid, now_ns));
        true
    }

    /// The Java thread `thread_id` has ended (JVMTI ThreadEnd): releases its ring, if any, as
    /// [`Joiner::release_ring`] does. Returns `false` when the thread has no live ring.
    pub fn release_thread(&mut self, thread_id: u64, now_ns: i64) -> bool {
        let handle = match self.threads.get(thread_id).and_then(|s| s.ring.as_ref()) {
            Some(ring) => ring.handle(),
            None => return false,
        };
        self.release_ring(handle, now_ns)
    }

    /// Whether the next drains set each ring's wake hint ([`Ring::hint_wake`]): while the worker's
    /// long-sleep word is set (see `crate::runtime::pace`).
    pub fn set_wake_hint(&mut self, on: bool) {
        self.wake_hint = on;
    }

    /// Drains every ring into its thread's history. `now_ns` is the clock read at the start of
    /// the round (see the module docs); it becomes the watermark.
    pub fn drain(&mut self, now_ns: i64) {
        let mut peak = 0.0f64;
        for tid in &self.live {
            let Some(state) = self.threads.get_mut(*tid) else {
                continue;
            };
            let Some(ring) = &state.ring else {
                continue;
            };
            // Before the drain: a hand-back is stored after the transition it follows.
            let retired = ring.retired();
            if retired > state.retired_seen {
                self.retired
                    .push((ring.handle(), retired - state.retired_seen));
                state.retired_seen = retired;
            }
            ring.hint_wake(self.wake_hint);
            self.scratch.clear();
            let outcome = ring.drain(&mut self.scratch);
            // `head - tail` at this drain, lost entries included.
            let found = outcome.end_index.saturating_sub(outcome.start_index);
            peak = peak.max(found as f64 / ring.capacity().max(1) as f64);
            if let Some(capacity) = growth(ring.capacity(), found, outcome.lost) {
                if ring.growth_requested() < capacity {
                    ring.request_growth(capacity);
                    self.counters.growth_requests += 1;
                }
            }
            apply(state, &self.scratch, outcome, &mut self.counters);
            state.undrained = false;
        }
        self.peak_fill = peak;
        self.watermark = Some(self.watermark.map_or(now_ns, |w| w.max(now_ns)));
    }

    /// Rings whose holders handed them back through the header (`Ring::retired`) since the
    /// last call, as (handle, hand-backs), their transitions up to the hand-back drained. The
    /// caller releases that many holders in the registry and, when the last one is gone,
    /// calls [`Joiner::release_ring`], as for `Natives.release`.
    pub fn take_retired(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.retired)
    }

    /// Entries the fullest ring held at the latest `drain` (lost ones included) over its
    /// capacity: above 1 when entries were lost. Feeds the worker's pace (`crate::runtime::pace`).
    pub fn peak_fill(&self) -> f64 {
        self.peak_fill
    }

    /// The watermark: `now_ns` of the latest `drain`.
    pub fn watermark(&self) -> Option<i64> {
        self.watermark
    }

    /// The context `thread_id` had at `time_ns` (`System.nanoTime()` scale), or why it is unknown,
    /// or `Defer` when a later drain may still change the answer. Each thread's history keeps a
    /// cursor where its last lookup ended, so samples of a thread asked in about time order cost
    /// a few comparisons instead of a binary search over the whole history.
    #[inline]
    pub fn decide(&self, thread_id: Option<u64>, time_ns: i64) -> Decision {
        self.decide_with(thread_id, time_ns, History::lookup)
    }

    /// [`Joiner::decide`] with a plain binary search per lookup (no cursor): the reference the
    /// cursor is tested and benchmarked against. Same answers.
    pub fn decide_binary_search(&self, thread_id: Option<u64>, time_ns: i64) -> Decision {
        self.decide_with(thread_id, time_ns, History::lookup_binary_search)
    }

    #[inline(always)]
    fn decide_with(
        &self,
        thread_id: Option<u64>,
        time_ns: i64,
        lookup: impl Fn(&History, i64) -> Result<ContextId, UnknownReason>,
    ) -> Decision {
        let Some(tid) = thread_id else {
            return Decision::Unknown(UnknownReason::NoThread);
        };
        let Some(w) = self.watermark else {
            return Decision::Defer;
        };
        if time_ns > w.saturating_sub(self.safety_ns) {
            return Decision::Defer;
        }
        // Older than the retention: still answered where what is kept proves the answer (the
        // history keeps the point in force at its cut; see `History::lookup`).
        let Some(state) = self.threads.get(tid) else {
            if self.forgotten.contains(tid) {
                return Decision::Unknown(UnknownReason::HistoryExpired);
            }
            // Never registered before the watermark: never installed a context.
            return Decision::Context(EMPTY_CONTEXT);
        };
        if state.undrained {
            return Decision::Defer;
        }
        if state.in_flight && time_ns >= state.history.last_transition_ns().unwrap_or(i64::MIN) {
            return Decision::Defer;
        }
        match lookup(&state.history, time_ns) {
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
        while let Some(&(due, tid, released)) = self.releases.front() {
            if due.saturating_add(self.safety_ns) >= keep_from {
                break;
            }
            self.releases.pop_front();
            // Stale when the thread registered again (or was released again later).
            if self
                .threads
                .get(tid)
                .is_some_and(|s| s.released_at == Some(released))
            {
                if let Some(storage) = self
                    .threads
                    .remove(tid)
                    .and_then(|s| s.history.into_storage())
                {
                    if self.storage.len() < KEEP_STORAGE {
                        self.storage.push(storage);
                    }
                }
                self.forgotten.insert(tid);
            }
        }
        self.threads.bound_window(MAX_THREAD_WINDOW);
        // A released thread's history is final and dropped whole above; only live ones grow.
        for tid in &self.live {
            if let Some(state) = self.threads.get_mut(*tid) {
                state.history.prune(keep_from);
            }
        }
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

    /// Changes the retention from now on (the next prune applies it).
    pub fn set_retention_ns(&mut self, retention_ns: i64) {
        self.retention_ns = retention_ns.max(0);
    }

    pub fn retention_ns(&self) -> i64 {
        self.retention_ns
    }

    pub fn safety_ns(&self) -> i64 {
        self.safety_ns
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod attention_tests;
#[cfg(test)]
mod cursor_tests;
#[cfg(test)]
mod window_tests;
