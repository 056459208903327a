//! Counters for the exit summary, and its one line:
//!
//! ```text
//! jfrctx: samples received=1234 with_context=1000 without_context=200 unknown=34
//! (no_thread=30 history_expired=4) dropped=0; sinks jsonl:/tmp/x records=1234 errors=0;
//! contexts=57 threads=12 lost_entries=0
//! ```
//!
//! (all on one line). Invariant: `received = with_context + without_context + unknown + dropped`.

use std::fmt::Write as _;

use crate::model::{ContextualSample, UnknownReason};
use crate::sink::SinkStats;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Every sample that reached the agent (joined or dropped).
    pub received: u64,
    /// Joined with a non-empty context.
    pub with_context: u64,
    /// Joined, no context installed.
    pub without_context: u64,
    /// Context undecidable, by reason (indexed like [`UnknownReason::ALL`]).
    pub unknown: [u64; UnknownReason::ALL.len()],
    /// Received but never joined (queue full, stream shut down, ...).
    pub dropped: u64,
    /// Joined (and counted above) but rejected by the `RecordingContextFilter`, so no sink got
    /// them. Not part of the `received` invariant; shown as `filtered=N` when non-zero.
    pub filtered: u64,
    /// Per sink: name, records, errors (filled by the agent at exit).
    pub sinks: Vec<SinkStats>,
    /// Context maps interned over the run.
    pub contexts: u64,
    /// Threads that registered a ring.
    pub threads: u64,
    /// Transition entries lost to ring overflow.
    pub lost_entries: u64,
}

fn reason_index(r: UnknownReason) -> usize {
    UnknownReason::ALL
        .iter()
        .position(|&x| x == r)
        .unwrap_or_default()
}

impl Counters {
    pub fn new() -> Self {
        Counters::default()
    }

    /// Counts one joined sample.
    pub fn add(&mut self, s: &ContextualSample) {
        match &s.context {
            Ok(map) if map.is_empty() => self.add_without_context(),
            Ok(_) => self.add_with_context(),
            Err(reason) => self.add_unknown(*reason),
        }
    }

    pub fn add_with_context(&mut self) {
        self.received += 1;
        self.with_context += 1;
    }

    pub fn add_without_context(&mut self) {
        self.received += 1;
        self.without_context += 1;
    }

    pub fn add_unknown(&mut self, reason: UnknownReason) {
        self.received += 1;
        self.unknown[reason_index(reason)] += 1;
    }

    /// Counts `n` samples received but dropped before the join.
    pub fn add_dropped(&mut self, n: u64) {
        self.received += n;
        self.dropped += n;
    }

    pub fn unknown_of(&self, reason: UnknownReason) -> u64 {
        self.unknown[reason_index(reason)]
    }

    pub fn unknown_total(&self) -> u64 {
        self.unknown.iter().sum()
    }

    /// Whether `received = with_context + without_context + unknown + dropped`.
    pub fn balanced(&self) -> bool {
        let parts = [
            self.with_context,
            self.without_context,
            self.unknown_total(),
            self.dropped,
        ];
        parts.iter().try_fold(0u64, |a, &b| a.checked_add(b)) == Some(self.received)
    }

    /// The summary as one line starting with `jfrctx: `.
    pub fn line(&self) -> String {
        let mut l = String::from("jfrctx: samples");
        let _ = write!(
            l,
            " received={} with_context={} without_context={} unknown={}",
            self.received,
            self.with_context,
            self.without_context,
            self.unknown_total()
        );
        let reasons: Vec<String> = UnknownReason::ALL
            .iter()
            .filter(|&&r| self.unknown_of(r) > 0)
            .map(|&r| format!("{}={}", r.as_str(), self.unknown_of(r)))
            .collect();
        if !reasons.is_empty() {
            let _ = write!(l, " ({})", reasons.join(" "));
        }
        let _ = write!(l, " dropped={}", self.dropped);
        if self.filtered > 0 {
            let _ = write!(l, " filtered={}", self.filtered);
        }
        l.push_str("; sinks");
        if self.sinks.is_empty() {
            l.push_str(" none");
        }
        for (i, s) in self.sinks.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(
                l,
                "{sep}{} records={} errors={}",
                s.name, s.records, s.errors
            );
        }
        let _ = write!(
            l,
            "; contexts={} threads={} lost_entries={}",
            self.contexts, self.threads, self.lost_entries
        );
        // Names come from paths: keep the summary on one line whatever they hold.
        l.replace(['\n', '\r'], " ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContextMap, ThreadInfo};
    use std::sync::Arc;

    fn sample(context: Result<Arc<ContextMap>, UnknownReason>) -> ContextualSample {
        ContextualSample {
            event: Arc::from("jdk.ExecutionSample"),
            time_ns: 0,
            duration_ns: 0,
            thread: ThreadInfo {
                id: Some(1),
                name: Arc::from("t"),
                is_virtual: false,
            },
            context,
            weight: 0,
            frames: vec![],
            truncated: false,
        }
    }

    fn with(k: &str, v: &str) -> Result<Arc<ContextMap>, UnknownReason> {
        Ok(Arc::new(ContextMap {
            entries: vec![(Arc::from(k), Arc::from(v))],
        }))
    }

    fn sink(name: &str, records: u64, errors: u64) -> SinkStats {
        SinkStats {
            name: name.into(),
            records,
            errors,
        }
    }

    #[test]
    fn the_example_line() {
        let mut c = Counters::new();
        for _ in 0..1000 {
            c.add(&sample(with("endpoint", "/orders")));
        }
        for _ in 0..200 {
            c.add(&sample(Ok(Arc::new(ContextMap::default()))));
        }
        for _ in 0..30 {
            c.add(&sample(Err(UnknownReason::NoThread)));
        }
        for _ in 0..4 {
            c.add(&sample(Err(UnknownReason::HistoryExpired)));
        }
        c.sinks.push(sink("jsonl:/tmp/x", 1234, 0));
        c.contexts = 57;
        c.threads = 12;
        assert!(c.balanced());
        assert_eq!(
            c.line(),
            "jfrctx: samples received=1234 with_context=1000 without_context=200 unknown=34 \
             (no_thread=30 history_expired=4) dropped=0; sinks jsonl:/tmp/x records=1234 \
             errors=0; contexts=57 threads=12 lost_entries=0"
        );
    }

    #[test]
    fn filtered_is_shown_apart_from_the_invariant() {
        let mut c = Counters::new();
        c.add(&sample(with("k", "v")));
        c.add(&sample(Ok(Arc::new(ContextMap::default()))));
        c.filtered = 1;
        assert!(c.balanced());
        assert_eq!(
            c.line(),
            "jfrctx: samples received=2 with_context=1 without_context=1 unknown=0 dropped=0 \
             filtered=1; sinks none; contexts=0 threads=0 lost_entries=0"
        );
    }

    #[test]
    fn empty_counters() {
        let c = Counters::new();
        assert!(c.balanced());
        assert_eq!(
            c.line(),
            "jfrctx: samples received=0 with_context=0 without_context=0 unknown=0 dropped=0; \
             sinks none; contexts=0 threads=0 lost_entries=0"
        );
    }

    #[test]
    fn invariant_holds_for_every_mix() {
        let mut c = Counters::new();
        for (i, reason) in UnknownReason::ALL.iter().enumerate() {
            for _ in 0..=i {
                c.add(&sample(Err(*reason)));
            }
            c.add(&sample(with("k", "v")));
            c.add(&sample(Ok(Arc::new(ContextMap::default()))));
            c.add_dropped(i as u64);
            assert!(c.balanced(), "{c:?}");
        }
        assert_eq!(c.unknown_total(), 21);
        assert_eq!(c.unknown_of(UnknownReason::ContextReleased), 6);
        assert_eq!(
            c.received,
            c.with_context + c.without_context + c.unknown_total() + c.dropped
        );
        c.received += 1;
        assert!(!c.balanced());
    }

    #[test]
    fn several_sinks_and_one_line() {
        let mut c = Counters::new();
        c.add_dropped(3);
        c.add_unknown(UnknownReason::LogOverflow);
        c.sinks = vec![sink("jsonl:-", 1, 0), sink("jsonl:/a\nb", 0, 1)];
        c.lost_entries = 9;
        let line = c.line();
        assert_eq!(
            line,
            "jfrctx: samples received=4 with_context=0 without_context=0 unknown=1 \
             (log_overflow=1) dropped=3; sinks jsonl:- records=1 errors=0, jsonl:/a b records=0 \
             errors=1; contexts=0 threads=0 lost_entries=9"
        );
    }
}
