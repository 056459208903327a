//! Counters for the exit summary, and its one line:
//!
//! ```text
//! jfrctx: samples received=1234 with_context=1000 without_context=200 unknown=34
//! (no_thread=30 history_expired=4) dropped=0; sinks jsonl:/tmp/x records=1234 errors=0;
//! contexts=57 threads=12 lost_entries=0
//! ```
//!
//! (`threads=12 spare_rings=10 grown_rings=2` when some threads took a spare ring and some rings
//! grew.)
//!
//! (all on one line). Invariant: `received = with_context + without_context + unknown + dropped`.
//! Optional tails: `; push URL profiles=N pushed=N refused=N failed=N retried=N dropped=N
//! [left_out=KEY:N,...] [(last refusal: HTTP NNN: ANSWER)]` with `push=` (where `profiles =
//! pushed + refused + failed + dropped`), `; cardinality: KEY replaced N, ...` when a cardinality
//! policy replaced values, `; cpu_sampler=EVENT period=P` (or `P1..P2`: the shortest and longest
//! period the CPU samples were really taken at) when a CPU sampler is enabled, and
//! `; not_selected=N` when the stream saw events of other recordings that `events=` did not
//! select (not received, so outside the invariant).

use std::fmt::Write as _;

use crate::core::model::{ContextualSample, UnknownReason};
use crate::sink::push::PushFigures;
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
    /// Of `threads`, the registrations that took a spare ring (no JNI call); shown when > 0.
    pub spare_rings: u64,
    /// Rings that moved to a bigger one (ARCHITECTURE.md, "Ring growth"); shown when > 0.
    pub grown_rings: u64,
    /// Transition entries lost to ring overflow.
    pub lost_entries: u64,
    /// The push sink's figures (`push=`).
    pub push: Option<PushFigures>,
    /// Per sink with a cardinality policy: its name and, per key, the values replaced
    /// (`SinkSet::replaced`).
    pub replaced: Vec<(String, Vec<(String, u64)>)>,
    /// The CPU sampling event in use (`jdk.ExecutionSample`, `jdk.CPUTimeSample`), if any.
    pub cpu_sampler: Option<String>,
    /// Shortest and longest period the CPU samples were taken at (their value, ns).
    pub cpu_periods: Option<(i64, i64)>,
    /// Events of other recordings the stream saw that `events=` did not select (never
    /// received, so outside the invariant); shown as `not_selected=N` when non-zero.
    pub not_selected: u64,
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

    /// Notes the period one CPU sample was taken at.
    pub fn add_cpu_period(&mut self, ns: i64) {
        let (lo, hi) = self.cpu_periods.unwrap_or((ns, ns));
        self.cpu_periods = Some((lo.min(ns), hi.max(ns)));
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
        let _ = write!(l, "; contexts={} threads={}", self.contexts, self.threads);
        if self.spare_rings > 0 {
            let _ = write!(l, " spare_rings={}", self.spare_rings);
        }
        if self.grown_rings > 0 {
            let _ = write!(l, " grown_rings={}", self.grown_rings);
        }
        let _ = write!(l, " lost_entries={}", self.lost_entries);
        if let Some(p) = &self.push {
            let _ = write!(
                l,
                "; push {} profiles={} pushed={} refused={} failed={} retried={} dropped={}",
                p.target, p.profiles, p.pushed, p.refused, p.failed, p.retried, p.dropped
            );
            if !p.left_out.is_empty() {
                let keys: Vec<String> =
                    p.left_out.iter().map(|(k, n)| format!("{k}:{n}")).collect();
                let _ = write!(l, " left_out={}", keys.join(","));
            }
            if let Some((status, answer)) = &p.last_refusal {
                let _ = write!(l, " (last refusal: HTTP {status}: {answer})");
            }
        }
        let replaced = replaced_text(&self.replaced);
        if !replaced.is_empty() {
            let _ = write!(l, "; cardinality: {replaced}");
        }
        if let Some(sampler) = &self.cpu_sampler {
            let _ = write!(l, "; cpu_sampler={sampler}");
            match self.cpu_periods {
                Some((lo, hi)) if lo == hi => {
                    let _ = write!(l, " period={}", ms(lo));
                }
                Some((lo, hi)) => {
                    let _ = write!(l, " period={}..{}", ms(lo), ms(hi));
                }
                None => {}
            }
        }
        if self.not_selected > 0 {
            let _ = write!(l, "; not_selected={}", self.not_selected);
        }
        // Names come from paths: keep the summary on one line whatever they hold.
        l.replace(['\n', '\r'], " ")
    }
}

/// Nanoseconds as milliseconds: `20ms`, `1.5ms`, `0.25ms`.
fn ms(ns: i64) -> String {
    let text = format!("{:.3}", ns as f64 / 1e6);
    format!("{}ms", text.trim_end_matches('0').trim_end_matches('.'))
}

/// `KEY replaced N, ...` per key in first-seen order. Every aggregated sink sees the same
/// samples, so their counts normally agree and each key is shown once; when sinks differ (one
/// failed early), each count is followed by its sink: `KEY replaced N (SINK) M (SINK)`.
fn replaced_text(per_sink: &[(String, Vec<(String, u64)>)]) -> String {
    let mut keys: Vec<&str> = Vec::new();
    for (_, list) in per_sink {
        for (k, _) in list {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let parts: Vec<String> = keys
        .iter()
        .map(|key| {
            let counts: Vec<(&str, u64)> = per_sink
                .iter()
                .filter_map(|(sink, list)| {
                    let n = list.iter().find(|(k, _)| k == key)?.1;
                    Some((sink.as_str(), n))
                })
                .collect();
            if counts.iter().all(|(_, n)| *n == counts[0].1) {
                format!("{key} replaced {}", counts[0].1)
            } else {
                let each: Vec<String> = counts.iter().map(|(s, n)| format!("{n} ({s})")).collect();
                format!("{key} replaced {}", each.join(" "))
            }
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests;
