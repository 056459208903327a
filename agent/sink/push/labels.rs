//! Which sample labels a pushed profile carries (pure).
//!
//! Pyroscope makes each distinct set of sample labels (with the `name=` labels) one series, and
//! refuses series beyond a per-tenant limit (5 000 by default), so a key with a value per
//! request would exhaust it within minutes. [`LabelPlan::prepare`] rewrites each interval's
//! profile before it is sent:
//!
//! - **Budget** (default): a key with more than `push_budget` distinct values is left out of
//!   pushed labels from the interval where it passed the budget on (one notice per key; the
//!   samples are kept, merged without that label). Values are counted over the run, not per
//!   interval, so that an id that changes every interval is caught even when each interval
//!   holds only a few: a key's series are bounded by the budget.
//! - **`push_keys=K+K`**: exactly those keys are pushed, no budget.
//! - **Span ids**: a key named like a span id (`span_id`, `spanId`, `span.id`, `spanid`) goes out
//!   as `span_id` when its value is 16 hex digits: Pyroscope keeps `span_id` per sample without
//!   splitting series (`pkg/model/pprofsplit`, `pprof.GroupSamplesWithoutLabels(profile,
//!   "span_id")`; `profile_id` is renamed to it). Other values are left out of that sample.
//! - **Trace ids** (`trace_id`, `traceId`, `trace.id`, `traceid`): Pyroscope has no per-sample
//!   place for them, each would be a series: left out unless `push_keys` names them.
//! - Names Pyroscope refuses (other than `[A-Za-z_][A-Za-z0-9_.]*`) are left out; dots become
//!   `_` (what Pyroscope's label sanitizing does). Values longer than 2048 bytes (Pyroscope's
//!   `max-length-label-value`) are left out of their sample. At most [`MAX_KEYS`] keys (its
//!   30 label names per series, less its own 4 and `push_labels`).
//! - More than [`MAX_SAMPLES`] samples (`max-profile-stacktrace-samples`): span ids are left
//!   out of that profile so that its samples merge.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::sink::proto::{Label, Profile, Sample};

/// The label Pyroscope keeps per sample.
pub const SPAN_LABEL: &str = "span_id";
/// Pyroscope's default `validation.max-profile-stacktrace-samples`.
pub const MAX_SAMPLES: usize = 16_000;
/// Pyroscope's default `validation.max-label-names-per-series` (30) less the series labels it
/// adds itself (`__name__`, `__delta__`, `pyroscope_spy`, `service_name`).
pub const MAX_KEYS: usize = 26;
/// Pyroscope's default `validation.max-length-label-value`.
pub const MAX_VALUE_LEN: usize = 2048;

const SPAN_KEYS: [&str; 3] = ["span_id", "spanid", "span.id"];
const TRACE_KEYS: [&str; 3] = ["trace_id", "traceid", "trace.id"];

fn is_span_key(k: &str) -> bool {
    SPAN_KEYS.iter().any(|s| s.eq_ignore_ascii_case(k))
}

fn is_trace_key(k: &str) -> bool {
    TRACE_KEYS.iter().any(|s| s.eq_ignore_ascii_case(k))
}

/// What Pyroscope's `decodeSpanID` accepts: 16 hex digits.
pub fn is_span_id(v: &str) -> bool {
    v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The name Pyroscope stores for sample label `k` (dots become `_`), `None` when it refuses it.
pub fn pushed_name(k: &str) -> Option<String> {
    let ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    ok.then(|| k.replace('.', "_"))
}

/// Why a key was left out of pushed labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// It had this many distinct values, over the budget.
    Budget(usize),
    /// It holds trace ids.
    Trace,
    /// Pyroscope refuses its name.
    BadName,
    /// More keys than a series may have.
    TooManyKeys,
}

/// A key newly left out, to be logged once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub key: String,
    pub reason: Reason,
}

pub struct LabelPlan {
    /// `push_keys`: the only keys pushed (no budget).
    keys: Option<Vec<String>>,
    budget: usize,
    max_keys: usize,
    /// Per key still pushed: its distinct values so far (at most `budget + 1`).
    seen: HashMap<String, HashSet<String>>,
    /// Keys left out for good, with the samples pushed without them.
    left_out: BTreeMap<String, u64>,
    /// Order in which keys were left out (for the summary).
    order: Vec<String>,
}

impl LabelPlan {
    /// `static_labels`: the number of `push_labels` (they count against the series' names).
    pub fn new(keys: Option<Vec<String>>, budget: u32, static_labels: usize) -> LabelPlan {
        LabelPlan {
            keys,
            budget: budget.max(1) as usize,
            max_keys: MAX_KEYS.saturating_sub(static_labels).max(1),
            seen: HashMap::new(),
            left_out: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    /// Whether samples can drop key `k` before they are aggregated (it is never pushed).
    pub fn is_left_out(&self, k: &str) -> bool {
        self.left_out.contains_key(k)
    }

    /// Counts one sample that lost key `k` before it was aggregated (`k` is left out).
    pub fn stripped(&mut self, k: &str) {
        if let Some(n) = self.left_out.get_mut(k) {
            *n += 1;
        }
    }

    /// Per key left out (in the order they were), the samples pushed without it.
    pub fn left_out(&self) -> Vec<(String, u64)> {
        self.order
            .iter()
            .map(|k| (k.clone(), self.left_out[k]))
            .collect()
    }

    fn leave_out(&mut self, key: &str, reason: Reason, notices: &mut Vec<Notice>) {
        if !self.left_out.contains_key(key) {
            self.left_out.insert(key.to_string(), 0);
            self.order.push(key.to_string());
            notices.push(Notice {
                key: key.to_string(),
                reason,
            });
        }
    }

    /// Rewrites the labels of `p` (samples' first value is `samples/count`) as described in the
    /// module documentation; returns the keys newly left out.
    pub fn prepare(&mut self, p: &mut Profile) -> Vec<Notice> {
        let mut notices = Vec::new();
        let names: Vec<String> = p.string_table.clone();
        let name = |i: i64| names.get(i as usize).map_or("", String::as_str);
        // Distinct values per key since the start (bounded: counting stops past the budget).
        let mut present: BTreeSet<i64> = BTreeSet::new();
        for smp in &p.sample {
            for l in &smp.label {
                let k = name(l.key);
                if l.str == 0 || self.keys.is_some() || is_span_key(k) || self.is_left_out(k) {
                    continue;
                }
                present.insert(l.key);
                let set = self.seen.entry(k.to_string()).or_default();
                if set.len() <= self.budget && !set.contains(name(l.str)) {
                    set.insert(name(l.str).to_string());
                }
            }
        }
        let mut present: Vec<i64> = present.into_iter().collect();
        present.sort_by(|a, b| name(*a).cmp(name(*b)));
        for key in &present {
            let k = name(*key);
            let distinct = self.seen.get(k).map_or(0, HashSet::len);
            if is_trace_key(k) {
                self.leave_out(k, Reason::Trace, &mut notices);
            } else if pushed_name(k).is_none() {
                self.leave_out(k, Reason::BadName, &mut notices);
            } else if distinct > self.budget {
                self.leave_out(k, Reason::Budget(distinct), &mut notices);
            }
            if self.is_left_out(k) {
                self.seen.remove(k);
            }
        }
        // Decide each key once: Some(pushed name) or None.
        let mut decided: HashMap<i64, Option<String>> = HashMap::new();
        let mut kept: BTreeSet<String> = BTreeSet::new();
        let mut all: Vec<i64> = p
            .sample
            .iter()
            .flat_map(|s| s.label.iter().map(|l| l.key))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        all.sort_by(|a, b| name(*a).cmp(name(*b)));
        for key in all {
            let k = name(key);
            let pushed = if is_span_key(k) {
                let listed = self.keys.as_ref().is_none_or(|l| l.iter().any(|x| x == k));
                listed.then(|| SPAN_LABEL.to_string())
            } else if let Some(list) = &self.keys {
                if list.iter().any(|x| x == k) {
                    let n = pushed_name(k);
                    if n.is_none() {
                        self.leave_out(k, Reason::BadName, &mut notices);
                    }
                    n
                } else {
                    None
                }
            } else if self.left_out.contains_key(k) {
                None
            } else {
                pushed_name(k)
            };
            let pushed = match pushed {
                Some(n) if n != SPAN_LABEL && !kept.contains(&n) => {
                    if kept.len() >= self.max_keys {
                        self.leave_out(k, Reason::TooManyKeys, &mut notices);
                        None
                    } else {
                        kept.insert(n.clone());
                        Some(n)
                    }
                }
                other => other,
            };
            decided.insert(key, pushed);
        }
        // Rewrite every sample's labels.
        let mut strings = StringTable::new(std::mem::take(&mut p.string_table));
        let span_index = strings.index(SPAN_LABEL);
        let mut removed: BTreeMap<String, u64> = BTreeMap::new();
        for s in &mut p.sample {
            let count = s.value.first().copied().unwrap_or(0).max(0) as u64;
            let mut out: Vec<Label> = Vec::with_capacity(s.label.len());
            for l in &s.label {
                let k = &names[l.key as usize];
                let value = names.get(l.str as usize).map_or("", String::as_str);
                let keep = match &decided[&l.key] {
                    Some(n) if n == SPAN_LABEL => is_span_id(value).then_some(span_index),
                    Some(n) if l.str != 0 && value.len() <= MAX_VALUE_LEN => Some(strings.index(n)),
                    _ => None,
                };
                match keep {
                    Some(key) if !out.iter().any(|o| o.key == key) => out.push(Label { key, ..*l }),
                    _ => {
                        if self.left_out.contains_key(k) {
                            *removed.entry(k.clone()).or_default() += count;
                        }
                    }
                }
            }
            s.label = out;
        }
        for (k, n) in removed {
            if let Some(c) = self.left_out.get_mut(&k) {
                *c += n;
            }
        }
        merge(&mut p.sample);
        if p.sample.len() > MAX_SAMPLES {
            for s in &mut p.sample {
                s.label.retain(|l| l.key != span_index);
            }
            merge(&mut p.sample);
        }
        p.string_table = strings.into_vec();
        notices
    }
}

/// A sample's identity when merging: its stack and its labels (key, str, num).
type SampleKey = (Vec<u64>, Vec<(i64, i64, i64)>);

/// Merges samples with the same stack and labels (values summed), keeping first-seen order.
fn merge(samples: &mut Vec<Sample>) {
    let mut at: HashMap<SampleKey, usize> = HashMap::new();
    let mut out: Vec<Sample> = Vec::with_capacity(samples.len());
    for mut s in samples.drain(..) {
        s.label.sort_by_key(|l| (l.key, l.str, l.num));
        let labels = s.label.iter().map(|l| (l.key, l.str, l.num)).collect();
        match at.get(&(s.location_id.clone(), labels)) {
            Some(&i) => {
                for (a, b) in out[i].value.iter_mut().zip(&s.value) {
                    *a = a.saturating_add(*b);
                }
            }
            None => {
                let labels = s.label.iter().map(|l| (l.key, l.str, l.num)).collect();
                at.insert((s.location_id.clone(), labels), out.len());
                out.push(s);
            }
        }
    }
    *samples = out;
}

/// A string table that can grow while samples refer to it by index.
struct StringTable {
    strings: Vec<String>,
    ids: HashMap<String, i64>,
}

impl StringTable {
    fn new(strings: Vec<String>) -> StringTable {
        let mut ids = HashMap::new();
        for (i, s) in strings.iter().enumerate() {
            ids.entry(s.clone()).or_insert(i as i64);
        }
        StringTable { strings, ids }
    }

    fn index(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }

    fn into_vec(self) -> Vec<String> {
        self.strings
    }
}

#[cfg(test)]
mod tests;
