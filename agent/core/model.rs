//! Plain data shared by the pure cores: samples as they arrive from the stream bridge, context
//! maps, and the outcome of a join. No FFI and no I/O here.

use std::fmt;
use std::sync::Arc;

/// Id of an interned context map. `EMPTY_CONTEXT` (0) is "no context installed".
pub type ContextId = u64;
pub const EMPTY_CONTEXT: ContextId = 0;

/// An immutable context: entries sorted by key, keys unique (the repository checks that).
///
/// Stored compactly: every key and value in one string, with the end offset of each (two
/// allocations whatever the size). A map the facade defines is kept in its wire form until a
/// sample needs it (`context::repo::raw`), then built into this form once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ContextMap {
    /// Keys and values, alternating, concatenated.
    text: Box<str>,
    /// End offset in `text` of each key and each value, alternating; non-decreasing, each on a
    /// character boundary.
    ends: Box<[u32]>,
}

impl ContextMap {
    /// The map of `pairs`, in the order given (callers sort them, or the repository refuses).
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> ContextMap {
        let len = pairs
            .iter()
            .map(|(k, v)| k.as_ref().len() + v.as_ref().len())
            .sum();
        let mut text = String::with_capacity(len);
        let mut ends = Vec::with_capacity(2 * pairs.len());
        for (k, v) in pairs {
            for t in [k.as_ref(), v.as_ref()] {
                text.push_str(t);
                ends.push(text.len() as u32);
            }
        }
        ContextMap {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The map whose keys and values are `text` cut at `ends` (alternating key and value);
    /// `None` unless the ends are pairs, in order, within `text` and on character boundaries.
    pub fn from_parts(text: String, ends: Vec<u32>) -> Option<ContextMap> {
        let mut start = 0usize;
        for &end in &ends {
            let end = end as usize;
            if end < start || !text.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        if ends.len() % 2 != 0 || start != text.len() {
            return None;
        }
        Some(ContextMap {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        })
    }

    /// Text number `i` (keys even, values odd).
    fn text(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// Entry `i`'s key.
    fn key(&self, i: usize) -> &str {
        self.text(2 * i)
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(self.text(2 * mid + 1)),
            }
        }
        None
    }

    /// The `(key, value)` entries, in key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        (0..self.len()).map(|i| (self.text(2 * i), self.text(2 * i + 1)))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// One stack frame, leaf first in a stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// `pkg.Class.method`
    pub method: Arc<str>,
    /// Source line, or -1 when unknown.
    pub line: i32,
}

/// The thread an event was recorded on, as JFR reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// Java thread id (`Thread.getId()`), `None` when JFR gave no thread.
    pub id: Option<u64>,
    pub name: Arc<str>,
    pub is_virtual: bool,
}

/// A JFR event as decoded from a bridge batch, before the join.
#[derive(Debug, Clone, PartialEq)]
pub struct RawSample {
    /// JFR event type name, e.g. `jdk.ExecutionSample`.
    pub event: Arc<str>,
    /// Raw JFR start tick (`startTime` as a long).
    pub start_ticks: i64,
    /// Duration in ticks (0 for instant events).
    pub duration_ticks: i64,
    pub thread: ThreadInfo,
    /// Event-specific weight (bytes for allocation samples, 0 when not applicable).
    pub weight: i64,
    /// Leaf first.
    pub frames: Vec<Frame>,
    /// JFR truncated the stack at its depth limit.
    pub truncated: bool,
    /// The thread is a carrier of the JDK's virtual-thread scheduler (a platform thread of the
    /// `CarrierThreads` thread group); see `crate::core::carrier`.
    pub carrier: bool,
}

/// Why a sample's context could not be decided. Never replaced by a guess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnknownReason {
    /// JFR delivered the sample without a thread.
    NoThread,
    /// The tick clock was not calibrated when the sample had to be decided.
    NotCalibrated,
    /// The sample is older than the retained transition history.
    HistoryExpired,
    /// The thread's transition log was overrun by its producer at the sample's instant.
    LogOverflow,
    /// A transition was being written at the sample's instant and never completed.
    InFlight,
    /// The context id is no longer (or was never) known to the repository.
    ContextReleased,
    /// JFR named a virtual thread's carrier as the sample's thread while the carrier ran that
    /// virtual thread (mounted, mounting or unmounting): the context is the virtual thread's,
    /// and the event does not say which virtual thread it was (see `crate::core::carrier`).
    CarrierTransition,
}

impl UnknownReason {
    pub const ALL: [UnknownReason; 7] = [
        UnknownReason::NoThread,
        UnknownReason::NotCalibrated,
        UnknownReason::HistoryExpired,
        UnknownReason::LogOverflow,
        UnknownReason::InFlight,
        UnknownReason::ContextReleased,
        UnknownReason::CarrierTransition,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownReason::NoThread => "no_thread",
            UnknownReason::NotCalibrated => "not_calibrated",
            UnknownReason::HistoryExpired => "history_expired",
            UnknownReason::LogOverflow => "log_overflow",
            UnknownReason::InFlight => "in_flight",
            UnknownReason::ContextReleased => "context_released",
            UnknownReason::CarrierTransition => "carrier_transition",
        }
    }
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sample after the join: what every sink receives.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextualSample {
    pub event: Arc<str>,
    /// Calibrated start time on the `System.nanoTime()` (CLOCK_MONOTONIC) scale.
    pub time_ns: i64,
    /// Calibrated duration in nanoseconds (0 for instant events).
    pub duration_ns: i64,
    pub thread: ThreadInfo,
    /// `Ok(map)` (possibly empty: no context installed) or the reason it is unknown.
    pub context: Result<Arc<ContextMap>, UnknownReason>,
    pub weight: i64,
    pub frames: Vec<Frame>,
    pub truncated: bool,
}

/// Builders of `ContextualSample`s for unit tests.
#[cfg(test)]
pub mod test_samples {
    use super::*;

    /// A `jdk.ExecutionSample` on thread 1 named `thread`, with the given context (entries in
    /// any order) or unknown reason, and a stack of `(method, line)` frames, leaf first.
    pub fn sample(
        ctx: Result<&[(&str, &str)], UnknownReason>,
        thread: &str,
        stack: &[(&str, i32)],
    ) -> ContextualSample {
        ContextualSample {
            event: Arc::from("jdk.ExecutionSample"),
            time_ns: 1,
            duration_ns: 0,
            thread: ThreadInfo {
                id: Some(1),
                name: Arc::from(thread),
                is_virtual: false,
            },
            context: ctx.map(|kv| {
                let mut entries = kv.to_vec();
                entries.sort();
                Arc::new(ContextMap::from_pairs(&entries))
            }),
            weight: 0,
            frames: stack
                .iter()
                .map(|(m, line)| Frame {
                    method: Arc::from(*m),
                    line: *line,
                })
                .collect(),
            truncated: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ContextMap;

    #[test]
    fn a_map_finds_its_values_and_lists_its_entries_in_order() {
        let m = ContextMap::from_pairs(&[("a", ""), ("endpoint", "/é"), ("z", "26")]);
        assert_eq!(m.len(), 3);
        assert_eq!(m.get("endpoint"), Some("/é"));
        assert_eq!(m.get("a"), Some(""));
        assert_eq!(m.get("z"), Some("26"));
        assert_eq!(m.get("b"), None);
        let all: Vec<_> = m.iter().collect();
        assert_eq!(all, [("a", ""), ("endpoint", "/é"), ("z", "26")]);
        assert!(ContextMap::default().is_empty());
        assert_eq!(ContextMap::default().get("a"), None);
    }

    #[test]
    fn parts_must_cut_the_text_into_pairs_at_character_boundaries() {
        let m = ContextMap::from_parts("kvé".to_string(), vec![1, 4]).unwrap();
        assert_eq!(m, ContextMap::from_pairs(&[("k", "vé")]));
        assert_eq!(ContextMap::from_parts("kvé".into(), vec![1, 3]), None); // inside 'é'
        assert_eq!(ContextMap::from_parts("kv".into(), vec![1]), None); // a key alone
        assert_eq!(ContextMap::from_parts("kv".into(), vec![2, 1]), None); // out of order
        assert_eq!(ContextMap::from_parts("kvx".into(), vec![1, 2]), None); // text left over
        assert_eq!(ContextMap::from_parts("kv".into(), vec![1, 9]), None); // beyond the text
    }
}
