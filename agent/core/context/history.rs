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

use std::cell::Cell;

use crate::core::context::ring::Transition;
use crate::core::model::{ContextId, UnknownReason, EMPTY_CONTEXT};

/// Default bound on retained points per thread (32 MiB at 16 B a point): 2 s of history for a
/// thread switching 1 M times a second, so that samples JFR delivers about a second late still
/// find theirs. Memory grows to it only for threads that switch that often.
pub const DEFAULT_MAX_POINTS: usize = 1 << 21;
const MIN_MAX_POINTS: usize = 2;
/// Dead prefix length from which the arrays are compacted (when it is also half of them).
const COMPACT_FROM: usize = 64;
/// Points a lookup steps through from the cursor before it gallops (exponential search).
const CURSOR_STEPS: usize = 4;
/// Points a history's memory may hold and still be reused ([`History::into_storage`]).
const SMALL_STORAGE: usize = 16;

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

/// The answer `after(t)` given that it lies in `[lo, end]` (every point before `lo` is `<= t`):
/// gallop up from `lo`, then binary search.
fn gallop_up(times: &[i64], mut lo: usize, end: usize, t_ns: i64) -> usize {
    let mut step = 1usize;
    loop {
        let hi = lo.saturating_add(step).min(end);
        if hi == end || times[hi] > t_ns {
            return lo + times[lo..hi].partition_point(|&time| time <= t_ns);
        }
        lo = hi + 1;
        step = step.saturating_mul(2);
    }
}

/// The answer `after(t)` given that it lies in `[floor, hi]` (every point from `hi` on is
/// `> t`): gallop down from `hi`, then binary search.
fn gallop_down(times: &[i64], floor: usize, mut hi: usize, t_ns: i64) -> usize {
    let mut step = 1usize;
    loop {
        let lo = hi.saturating_sub(step).max(floor);
        if lo == floor || times[lo - 1] <= t_ns {
            return lo + times[lo..hi].partition_point(|&time| time <= t_ns);
        }
        hi = lo - 1;
        step = step.saturating_mul(2);
    }
}

/// The memory of a dropped history's points (times, states), for the next one
/// ([`History::with_limit_in`]): with a virtual thread per request, allocating and freeing the
/// two per thread was 18 % of the worker's time (bench/README §7).
#[derive(Debug)]
pub struct Storage(Vec<i64>, Vec<u64>);

/// A thread's transition history: points `(times[i], states[i])` for `i` in `start..len`.
/// Invariants: at least one live point; live times strictly increasing (equal times overwrite);
/// the first live point's time `<= expired_before`.
#[derive(Debug, Clone)]
pub struct History {
    times: Vec<i64>,
    states: Vec<u64>,
    /// Points before `start` are dead (pruned), kept until compaction.
    start: usize,
    /// The latest prune cut or memory-bound eviction; lookups before the first live point
    /// (whose time is at most this) are `HistoryExpired`.
    expired_before: i64,
    /// Time of the last transition pushed (after clamping), `None` before the first.
    last_transition_ns: Option<i64>,
    max_points: usize,
    non_monotonic: u64,
    evicted: u64,
    /// Where the last lookup ended (an absolute `after` index): samples of one thread arrive
    /// nearly in time order, so the next answer is usually at or just past it. Only a hint:
    /// any value gives the same answers (see [`History::after_near`]), so it needs no upkeep
    /// beyond staying cheap to use.
    cursor: Cell<usize>,
    /// Running average of the time between consecutive points (0: none yet), for the cursor's
    /// forward guesses.
    gap_hint: i64,
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
        // Room for a few points: a thread that lives for one request makes two or three.
        History::with_limit_in(
            max_points,
            Storage(Vec::with_capacity(4), Vec::with_capacity(4)),
        )
    }

    /// [`History::with_limit`] in the memory of a dropped history ([`History::into_storage`]),
    /// instead of two new allocations.
    pub fn with_limit_in(max_points: usize, storage: Storage) -> History {
        let Storage(mut times, mut states) = storage;
        times.clear();
        states.clear();
        times.push(i64::MIN);
        states.push(known(EMPTY_CONTEXT));
        History {
            times,
            states,
            start: 0,
            expired_before: i64::MIN,
            last_transition_ns: None,
            max_points: max_points.max(MIN_MAX_POINTS),
            non_monotonic: 0,
            evicted: 0,
            cursor: Cell::new(0),
            gap_hint: 0,
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

    /// `after(t_ns)` searched from the cursor: a few steps forward or backward; further
    /// forward, a guess from the typical gap between points, then a gallop (1, 2, 4, ... points)
    /// from the guess to bracket the answer and a binary search inside the bracket. The live
    /// times are sorted, so `time <= t_ns` holds on a prefix of them and the answer, the length
    /// of that prefix, does not depend on where the search starts or what it guesses.
    fn after_near(&self, t_ns: i64) -> usize {
        let (start, end) = (self.start, self.times.len());
        let times = &self.times;
        // A stale cursor (after truncation or compaction) is clamped: only a worse start.
        let mut c = self.cursor.get().clamp(start, end);
        let mut steps = 0;
        let found = if c > start && times[c - 1] > t_ns {
            // Backward: every point from c on is > t; the answer is in [start, c - 1].
            while c > start && times[c - 1] > t_ns && steps < CURSOR_STEPS {
                c -= 1;
                steps += 1;
            }
            if c == start || times[c - 1] <= t_ns {
                c
            } else {
                gallop_down(times, start, c - 1, t_ns)
            }
        } else {
            // Forward: every point before c is <= t; the answer is in [c, end].
            while c < end && times[c] <= t_ns && steps < CURSOR_STEPS {
                c += 1;
                steps += 1;
            }
            if c == end || times[c] > t_ns {
                c
            } else {
                // times[c] <= t: the answer is in [c + 1, end]. Points are `gap_hint` apart
                // on average: guess how many lie between times[c] and t.
                let lo = c + 1;
                let skip = match t_ns.saturating_sub(times[c]).checked_div(self.gap_hint) {
                    Some(d) => usize::try_from(d).unwrap_or(usize::MAX),
                    None => 0,
                };
                let guess = lo.saturating_add(skip).min(end);
                // The answer's state is next to states[guess] (usually a cache miss, like
                // times[guess]): load it now so both misses overlap instead of the state's
                // waiting for the search (a plain load kept alive: a safe prefetch).
                std::hint::black_box(self.states[guess.min(end - 1)]);
                if guess < end && times[guess] <= t_ns {
                    gallop_up(times, guess + 1, end, t_ns)
                } else {
                    gallop_down(times, lo, guess, t_ns)
                }
            }
        };
        self.cursor.set(found);
        found
    }

    fn drop_front(&mut self, count: usize) {
        self.start += count;
        if self.start >= COMPACT_FROM && 2 * self.start >= self.times.len() {
            self.times.drain(..self.start);
            self.states.drain(..self.start);
            self.cursor
                .set(self.cursor.get().saturating_sub(self.start));
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
        if let Some(&previous) = self.times.last() {
            if previous != i64::MIN {
                // Times are increasing: the gap is >= 0 and the update cannot overflow.
                let gap = time_ns.saturating_sub(previous).max(0);
                self.gap_hint = if self.gap_hint == 0 {
                    gap
                } else {
                    self.gap_hint + (gap - self.gap_hint) / 8
                };
            }
        }
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

    /// The context in force at `t_ns`. Searches from where the previous lookup ended (cheap
    /// for lookups in about time order); answers exactly as [`History::lookup_binary_search`].
    ///
    /// Before the first retained point it is `HistoryExpired`. From that point's time on the
    /// answer is exact, also before the last prune's cut: pruning keeps the point in force at
    /// the cut with its own time, so a thread whose last transition before the cut was to EMPTY
    /// (or that never had one: the initial point is EMPTY since the beginning of time) is known
    /// to have had no context over that whole stretch.
    #[inline]
    pub fn lookup(&self, t_ns: i64) -> Result<ContextId, UnknownReason> {
        self.state_at(self.after_near(t_ns))
    }

    /// [`History::lookup`] by a plain binary search over the whole history, ignoring and not
    /// moving the cursor: the reference the cursor is tested and benchmarked against.
    pub fn lookup_binary_search(&self, t_ns: i64) -> Result<ContextId, UnknownReason> {
        self.state_at(self.after(t_ns))
    }

    #[inline]
    fn state_at(&self, after: usize) -> Result<ContextId, UnknownReason> {
        if after <= self.start {
            return Err(UnknownReason::HistoryExpired);
        }
        decode(self.states[after - 1])
    }

    /// This history's memory, for [`History::with_limit_in`], when it is small (a history that
    /// once held many points would keep them allocated).
    pub fn into_storage(self) -> Option<Storage> {
        (self.times.capacity() <= SMALL_STORAGE && self.states.capacity() <= SMALL_STORAGE)
            .then_some(Storage(self.times, self.states))
    }

    /// Drops what is not needed for lookups at or after `keep_from_ns`: the point in force at
    /// `keep_from_ns` is kept with its own time, so those lookups stay exact, and so do lookups
    /// from that point's time on; earlier ones become `HistoryExpired`.
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

    /// The latest prune cut or eviction (lookups before the first retained point, at or before
    /// it, are `HistoryExpired`).
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
mod tests;
