//! Sinks: where contextualised samples go. One file per format behind the [`Sink`] trait, and a
//! [`SinkSet`] that feeds several sinks and accounts for their failures.
//!
//! The aggregating sinks (`pprof`, `collapsed`, `svg`, `jfr`, `push`) are one [`base::Rotating`]
//! sink each over their format's [`base::Aggregate`] (the base does open, interval
//! [`Rotation`], flush and finish once); they share what is defined here: their
//! [`SinkOptions`] and the cardinality [`Labeler`].

use std::collections::HashSet;
use std::io;
use std::sync::Arc;

use crate::core::model::{ContextMap, ContextualSample};
use crate::log::io_message;
pub use base::{numbered, tagged, Rotation};
pub use spec::{Output, SinkFormat, SinkSpec};

pub mod base;
pub mod collapsed;
pub mod jfr;
pub mod jsonl;
pub mod listener;
pub mod pprof;
#[rustfmt::skip]
#[allow(clippy::all, clippy::pedantic)]
pub mod proto;
pub mod push;
pub mod spec;
pub mod svg;

/// A destination for contextualised samples. Called from the worker thread only.
pub trait Sink: Send {
    /// Shown in logs and the summary, e.g. `jsonl:/tmp/x.jsonl`.
    fn name(&self) -> &str;
    fn record(&mut self, s: &ContextualSample) -> io::Result<()>;
    /// Pushes buffered output out (called after each worker round).
    fn flush(&mut self) -> io::Result<()>;
    /// Completes the output (called once at shutdown); no `record` follows.
    fn finish(&mut self) -> io::Result<()>;
    /// Per context key with a cardinality policy other than `keep`: how many sample labels the
    /// policy replaced (hash, cap) or removed (drop). Empty for sinks that keep every value.
    fn replaced(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
    /// Samples taken by `record` that never reached their destination (the push sink's
    /// profiles that were refused, failed or dropped): the summary shows them as errors.
    fn undelivered(&self) -> u64 {
        0
    }
}

/// Opens the sink described by `spec` now (so an unwritable target fails at agent load), with
/// `%p` in its path replaced by `pid`. The error is one line naming the sink and the cause.
pub fn open(spec: &SinkSpec, pid: u32) -> Result<Box<dyn Sink>, String> {
    let spec = spec.resolve(pid);
    let o = &spec.options;
    let sink: io::Result<Box<dyn Sink>> = match (spec.format, &spec.target) {
        (SinkFormat::Jsonl, t) => jsonl::JsonlSink::open(t).map(|s| Box::new(s) as _),
        (SinkFormat::Collapsed, t) => {
            collapsed::CollapsedSink::open(t, o).map(|s| Box::new(s) as _)
        }
        (SinkFormat::Pprof, Output::File(p)) => {
            pprof::PprofSink::open(p, o).map(|s| Box::new(s) as _)
        }
        (SinkFormat::Svg, Output::File(d)) => svg::SvgSink::open(d, o).map(|s| Box::new(s) as _),
        (SinkFormat::Jfr, Output::File(p)) => jfr::JfrSink::open(p, o).map(|s| Box::new(s) as _),
        (_, Output::Stdout) => Err(io::Error::other("cannot write to stdout")),
    };
    sink.map_err(|e| {
        let format = spec.format.name();
        format!(
            "cannot open {format} sink {}: {}",
            spec.target,
            io_message(&e)
        )
    })
}

/// Per-sink counters, as shown in the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkStats {
    pub name: String,
    /// Samples written successfully (for push: in profiles the endpoint took).
    pub records: u64,
    /// Failed operations: the failing call, then every sample offered after the sink was
    /// disabled (so `records + errors` counts every sample offered, plus failed flushes).
    pub errors: u64,
}

struct Entry {
    sink: Box<dyn Sink>,
    records: u64,
    errors: u64,
    /// Disabled after its first error.
    failed: bool,
    finished: bool,
}

/// Several sinks fed together. A sink that fails is logged once and never called again; the
/// others keep working.
#[derive(Default)]
pub struct SinkSet {
    entries: Vec<Entry>,
}

impl SinkSet {
    pub fn new() -> Self {
        SinkSet::default()
    }

    /// Opens every spec (see [`open`]); the first failure is returned and nothing stays open.
    pub fn open_all(specs: &[SinkSpec], pid: u32) -> Result<SinkSet, String> {
        let mut set = SinkSet::new();
        for spec in specs {
            set.push(open(spec, pid)?);
        }
        Ok(set)
    }

    pub fn push(&mut self, sink: Box<dyn Sink>) {
        self.entries.push(Entry {
            sink,
            records: 0,
            errors: 0,
            failed: false,
            finished: false,
        });
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sinks still accepting samples.
    pub fn active(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| !e.failed && !e.finished)
            .count()
    }

    /// Offers `s` to every sink.
    pub fn record_all(&mut self, s: &ContextualSample) {
        for e in &mut self.entries {
            if e.failed || e.finished {
                e.errors += 1;
                continue;
            }
            match e.sink.record(s) {
                Ok(()) => e.records += 1,
                Err(err) => fail(e, "write", &err),
            }
        }
    }

    pub fn flush_all(&mut self) {
        for e in &mut self.entries {
            if e.failed || e.finished {
                continue;
            }
            if let Err(err) = e.sink.flush() {
                fail(e, "flush", &err);
            }
        }
    }

    /// Finishes every working sink once; later calls do nothing.
    pub fn finish_all(&mut self) {
        for e in &mut self.entries {
            if e.failed || e.finished {
                continue;
            }
            e.finished = true;
            if let Err(err) = e.sink.finish() {
                fail(e, "finish", &err);
            }
        }
    }

    /// Per sink with a cardinality policy: its name and [`Sink::replaced`].
    pub fn replaced(&self) -> Vec<(String, Vec<(String, u64)>)> {
        self.entries
            .iter()
            .map(|e| (e.sink.name().to_string(), e.sink.replaced()))
            .filter(|(_, r)| !r.is_empty())
            .collect()
    }

    pub fn stats(&self) -> Vec<SinkStats> {
        self.entries
            .iter()
            .map(|e| {
                let lost = e.sink.undelivered().min(e.records);
                SinkStats {
                    name: e.sink.name().to_string(),
                    records: e.records - lost,
                    errors: e.errors + lost,
                }
            })
            .collect()
    }
}

fn fail(e: &mut Entry, what: &str, err: &io::Error) {
    e.errors += 1;
    e.failed = true;
    crate::error!(
        "sink {} failed to {what}: {}; it is disabled, other sinks continue",
        e.sink.name(),
        io_message(err)
    );
}

// ---- options of the aggregated sinks ----------------------------------------------------------

/// The CPU samplers (the event table's `cpu` column). Every other event (see `events=`) is
/// marked with its name: pprof labels it `event`, collapsed and svg give it a frame `[EVENT]`
/// below its stack (its value goes to its own kind, see [`crate::core::value`]).
pub use crate::core::events::table::is_cpu_event;

/// Largest N of the `cap:N` policy.
pub const CAP_MAX: u32 = 1_000_000;

/// What the aggregated sinks need besides their target (filled in by `config`); JSON lines
/// ignores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkOptions {
    /// The sampling period (`period`), for pprof's `cpu/nanoseconds` values.
    pub period_ns: i64,
    /// `interval=DURATION`: one output per interval plus a final one at exit.
    pub interval_ns: Option<i64>,
    /// `cardinality=KEY:POLICY+...`: per-key policies; keys not listed are kept.
    pub cardinality: Vec<(String, Policy)>,
    /// `collapsed_keys=K1+K2`: context keys shown as root frames by the collapsed sink.
    pub collapsed_keys: Vec<String>,
    /// `svg_key=KEY`: the key whose values get one SVG each (default `endpoint`).
    pub svg_key: String,
    /// The value kinds of the enabled events and their sampling periods (from `events=`,
    /// `period=`, `throttle=`): pprof's sample types, one collapsed/svg output per kind.
    pub values: crate::core::value::ValuePlan,
    /// `jfr_max_size=SIZE`: the jfr sink drops its oldest chunks to stay under this many bytes.
    pub jfr_max_size: Option<u64>,
}

impl Default for SinkOptions {
    fn default() -> Self {
        SinkOptions {
            period_ns: 20_000_000,
            interval_ns: None,
            cardinality: Vec::new(),
            collapsed_keys: Vec::new(),
            svg_key: "endpoint".into(),
            values: crate::core::value::ValuePlan::default(),
            jfr_max_size: None,
        }
    }
}

/// What an aggregated sink does with the values of one context key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The value as it is (the default).
    Keep,
    /// The label is removed.
    Drop,
    /// The value becomes 8 hex digits of its 32-bit FNV-1a hash.
    Hash,
    /// The first N distinct values are kept, later ones become `other`.
    Cap(u32),
}

impl Policy {
    pub fn parse(s: &str) -> Option<Policy> {
        match s {
            "keep" => Some(Policy::Keep),
            "drop" => Some(Policy::Drop),
            "hash" => Some(Policy::Hash),
            _ => match s.strip_prefix("cap:")?.parse() {
                Ok(n) if (1..=CAP_MAX).contains(&n) => Some(Policy::Cap(n)),
                _ => None,
            },
        }
    }
}

/// The value of `cardinality=KEY:POLICY+KEY:POLICY` (keys unique and non-empty); the error says
/// what is wrong, in a few words.
pub fn parse_cardinality(value: &str) -> Result<Vec<(String, Policy)>, String> {
    let mut out: Vec<(String, Policy)> = Vec::new();
    for item in value.split('+').map(str::trim) {
        let (key, policy) = match item.split_once(':') {
            Some((k, p)) if !k.trim().is_empty() => (k.trim(), p.trim()),
            _ => return Err(format!("'{item}' is not KEY:POLICY")),
        };
        let Some(policy) = Policy::parse(policy) else {
            return Err(format!(
                "unknown policy '{policy}' for {key} (known: keep, drop, hash, cap:N with N from \
                 1 to {CAP_MAX})"
            ));
        };
        if out.iter().any(|(k, _)| k == key) {
            return Err(format!("key {key} given twice"));
        }
        out.push((key.to_string(), policy));
    }
    Ok(out)
}

/// The value of `K1+K2+...` (keys unique and non-empty).
pub fn parse_keys(value: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for k in value.split('+').map(str::trim) {
        if k.is_empty() {
            return Err("empty key (expected e.g. endpoint+tenant)".into());
        }
        if out.iter().any(|o| o == k) {
            return Err(format!("key {k} given twice"));
        }
        out.push(k.to_string());
    }
    Ok(out)
}

/// The value `cap:N` gives to the values after the first N.
pub const OTHER: &str = "other";

/// 32-bit FNV-1a of `s`'s UTF-8 bytes, as 8 lowercase hex digits (the `hash` policy).
pub fn fnv1a_hex(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Applies the cardinality policies to context maps, and counts per key the labels it replaced.
/// `cap:N` remembers the first N distinct values of its key for the sink's lifetime (across
/// rotations).
pub struct Labeler {
    /// Keys with a policy other than `keep`, with their distinct kept values (for `cap`) and
    /// the number of labels replaced or removed.
    rules: Vec<Rule>,
    other: Arc<str>,
}

struct Rule {
    key: String,
    policy: Policy,
    seen: HashSet<Arc<str>>,
    replaced: u64,
}

impl Labeler {
    pub fn new(cardinality: &[(String, Policy)]) -> Labeler {
        let rules = cardinality
            .iter()
            .filter(|(_, p)| *p != Policy::Keep)
            .map(|(key, policy)| Rule {
                key: key.clone(),
                policy: *policy,
                seen: HashSet::new(),
                replaced: 0,
            })
            .collect();
        Labeler {
            rules,
            other: Arc::from(OTHER),
        }
    }

    /// The entries of `map` after the policies, in key order.
    pub fn apply(&mut self, map: &ContextMap) -> Vec<(Arc<str>, Arc<str>)> {
        let mut out = Vec::with_capacity(map.len());
        for (k, v) in map.iter() {
            let Some(rule) = self.rules.iter_mut().find(|r| r.key == k) else {
                out.push((Arc::from(k), Arc::from(v)));
                continue;
            };
            // The label pushed, and whether it is the map's own value.
            let (value, own) = match rule.policy {
                Policy::Keep => (Some(Arc::from(v)), true),
                Policy::Drop => (None, false),
                Policy::Hash => (Some(Arc::from(fnv1a_hex(v))), false),
                Policy::Cap(n) => {
                    if rule.seen.contains(v) {
                        (Some(Arc::from(v)), true)
                    } else if rule.seen.len() < n as usize {
                        rule.seen.insert(Arc::from(v));
                        (Some(Arc::from(v)), true)
                    } else {
                        (Some(Arc::clone(&self.other)), false)
                    }
                }
            };
            if !own {
                rule.replaced += 1;
            }
            if let Some(value) = value {
                out.push((Arc::from(k), value));
            }
        }
        out
    }

    /// Per key with a policy other than `keep`, in the order given: labels replaced or removed.
    pub fn replaced(&self) -> Vec<(String, u64)> {
        self.rules
            .iter()
            .map(|r| (r.key.clone(), r.replaced))
            .collect()
    }
}

#[cfg(test)]
mod tests;
