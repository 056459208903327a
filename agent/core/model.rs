//! Plain data shared by the pure cores: samples as they arrive from the stream bridge, context
//! maps, and the outcome of a join. No FFI and no I/O here.

use std::fmt;
use std::sync::Arc;

/// Id of an interned context map. `EMPTY_CONTEXT` (0) is "no context installed".
pub type ContextId = u64;
pub const EMPTY_CONTEXT: ContextId = 0;

/// An immutable context: entries sorted by key, keys unique.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ContextMap {
    pub entries: Vec<(Arc<str>, Arc<str>)>,
}

impl ContextMap {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.entries[i].1)
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
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
                let mut entries: Vec<(Arc<str>, Arc<str>)> = kv
                    .iter()
                    .map(|(k, v)| (Arc::from(*k), Arc::from(*v)))
                    .collect();
                entries.sort();
                Arc::new(ContextMap { entries })
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
