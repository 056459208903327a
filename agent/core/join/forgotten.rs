//! Threads the join forgot: released, and all their samples older than the retention, so
//! `prune` dropped their state. Two kinds are told apart:
//! - forgotten **idle**: the thread had no context (`{}`) when its ring was released (a virtual
//!   thread hands its ring back when its outermost scope closes). Until it registers a ring again
//!   it has no context, so a sample within the retention is `{}`; an older one is unknown.
//! - forgotten otherwise: its samples are unknown (`history_expired`), never a guess.
//!
//! Both are sets of inclusive id ranges (Java thread ids are never reused and virtual threads
//! get consecutive ones, so a few ranges cover many threads), bounded by [`MAX_RANGES`] each.
//! Past it the unknown set merges its two lowest ranges (the ids between count as forgotten too:
//! unknown, never a guess) and the idle set moves its lowest range into the unknown set (an
//! exact claim is never widened).

use std::collections::BTreeMap;

/// Ranges remembered at most, per set.
pub const MAX_RANGES: usize = 1 << 16;

/// A set of thread ids as inclusive ranges `start → end`.
#[derive(Debug, Default)]
pub(super) struct IdRanges {
    pub(super) ranges: BTreeMap<u64, u64>,
}

impl IdRanges {
    pub(super) fn contains(&self, tid: u64) -> bool {
        self.ranges
            .range(..=tid)
            .next_back()
            .is_some_and(|(_, &end)| tid <= end)
    }

    /// Adds `start..=end`, merging with the ranges it touches or overlaps.
    pub(super) fn insert_range(&mut self, start: u64, end: u64) {
        let (mut start, mut end) = (start, end);
        // The range below, when it reaches `start - 1` or beyond.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e.saturating_add(1) >= start {
                self.ranges.remove(&s);
                start = s;
                end = end.max(e);
            }
        }
        // Every range starting inside `start..=end + 1`.
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(start..=end.saturating_add(1))
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.ranges.remove(&s);
            end = end.max(e);
        }
        self.ranges.insert(start, end);
    }

    pub(super) fn insert(&mut self, tid: u64) {
        if !self.contains(tid) {
            self.insert_range(tid, tid);
        }
    }

    /// Takes `tid` out, splitting its range.
    pub(super) fn remove(&mut self, tid: u64) {
        let Some((&s, &e)) = self.ranges.range(..=tid).next_back() else {
            return;
        };
        if tid > e {
            return;
        }
        self.ranges.remove(&s);
        if s < tid {
            self.ranges.insert(s, tid - 1);
        }
        if tid < e {
            self.ranges.insert(tid + 1, e);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ranges.len()
    }
}

/// What the join knows of a forgotten thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgot {
    /// Released with no context installed.
    Idle,
    /// Anything else (or not known exactly).
    Unknown,
}

/// The forgotten threads, see the module documentation.
#[derive(Debug, Default)]
pub(super) struct Forgotten {
    pub(super) idle: IdRanges,
    pub(super) unknown: IdRanges,
}

impl Forgotten {
    /// What is known of `tid`, when it was forgotten.
    pub(super) fn of(&self, tid: u64) -> Option<Forgot> {
        if self.idle.contains(tid) {
            Some(Forgot::Idle)
        } else if self.unknown.contains(tid) {
            Some(Forgot::Unknown)
        } else {
            None
        }
    }

    /// Forgets `tid`, `idle` when it had no context at its release.
    pub(super) fn insert(&mut self, tid: u64, idle: bool) {
        if idle {
            self.idle.insert(tid);
            if self.idle.len() > MAX_RANGES {
                if let Some((s, e)) = self.idle.ranges.pop_first() {
                    self.unknown.insert_range(s, e);
                }
            }
        } else {
            self.idle.remove(tid);
            self.unknown.insert(tid);
        }
        if self.unknown.len() > MAX_RANGES {
            if let (Some((s1, _)), Some((_, e2))) = (
                self.unknown.ranges.pop_first(),
                self.unknown.ranges.pop_first(),
            ) {
                self.unknown.ranges.insert(s1, e2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(r: &IdRanges) -> Vec<(u64, u64)> {
        r.ranges.iter().map(|(&a, &b)| (a, b)).collect()
    }

    #[test]
    fn ranges_merge_and_split() {
        let mut r = IdRanges::default();
        for tid in [5, 7, 6, 10, 4, 12, 11] {
            r.insert(tid);
        }
        assert_eq!(ranges(&r), vec![(4, 7), (10, 12)]);
        r.insert_range(8, 9);
        assert_eq!(ranges(&r), vec![(4, 12)]);
        r.remove(4);
        r.remove(8);
        r.remove(12);
        assert_eq!(ranges(&r), vec![(5, 7), (9, 11)]);
        r.insert_range(0, u64::MAX);
        assert_eq!(ranges(&r), vec![(0, u64::MAX)]);
        assert!(r.contains(u64::MAX) && r.contains(0));
    }

    #[test]
    fn idle_is_exact_and_a_later_release_with_context_wins() {
        let mut f = Forgotten::default();
        f.insert(1, true);
        f.insert(2, false);
        f.insert(3, true);
        assert_eq!(f.of(1), Some(Forgot::Idle));
        assert_eq!(f.of(2), Some(Forgot::Unknown));
        assert_eq!(f.of(3), Some(Forgot::Idle));
        assert_eq!(f.of(4), None);
        // Registered again, released in a context, forgotten again.
        f.insert(3, false);
        assert_eq!(f.of(3), Some(Forgot::Unknown));
        assert_eq!(f.of(1), Some(Forgot::Idle));
    }

    #[test]
    fn overflow_never_widens_an_idle_claim() {
        let mut f = Forgotten::default();
        // Every other id idle: one range each.
        for i in 0..=MAX_RANGES as u64 {
            f.insert(2 * i, true);
        }
        assert_eq!(f.idle.len(), MAX_RANGES);
        assert_eq!(f.of(0), Some(Forgot::Unknown), "spilled into unknown");
        assert_eq!(f.of(1), None, "not widened");
        assert_eq!(f.of(2), Some(Forgot::Idle));
        // Unknown ones merge (conservative), which covers ids between them.
        for i in 0..=MAX_RANGES as u64 + 1 {
            f.insert(1_000_000_000 + 2 * i, false);
        }
        assert!(f.unknown.len() <= MAX_RANGES);
        assert_eq!(f.of(1_000_000_001), Some(Forgot::Unknown));
    }
}
