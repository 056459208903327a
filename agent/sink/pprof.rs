//! pprof sink (`sink=pprof:PATH`): samples aggregated into a gzipped `profile.proto`
//! (github.com/google/pprof/proto/profile.proto), written at exit, or once per `interval` (see
//! [`super::Rotation`] and [`super::numbered`]) plus a last one at exit. The aggregation is the
//! value [`PprofProfile`] (also held by the push sink); [`PprofFile`] writes it to files over the
//! shared base ([`super::base`]).
//!
//! - Sample types: `samples/count` (1 per sample), then one per value kind the enabled events can
//!   produce ([`crate::core::value`]), in this order: `cpu/nanoseconds`, `native/nanoseconds`,
//!   `alloc_space/bytes`, `wait/nanoseconds`. Each sample adds 1 to `samples` and its value to
//!   its own kind's type (the sampling period of its event, its weight, its duration), 0 to the
//!   others. The types are decided from the enabled events when the sink is opened, not from the
//!   samples seen, so that every output of a rotation has the same types (an interval without
//!   allocations still has `alloc_space`, and `-sample_index=alloc_space` works on every file);
//!   an event jfrctx does not know gives `wait` (its samples with a duration) as well.
//! - `default_sample_type`: `cpu` when enabled, else the first other kind (e.g. `alloc_space`
//!   for `events=alloc+lock`). `period_type`/`period`: `cpu/nanoseconds` (else
//!   `native/nanoseconds`) and its sampling period (the shortest one its samples were really
//!   taken at, else the configured one); absent without a sampling event.
//! - Labels (strings): one per context key after the cardinality policies (`key` → value), the
//!   thread name as `thread`, and `jfrctx_unknown` = reason when the context is unknown.
//! - Events other than the CPU samplers ([`crate::core::events::table::EVENTS`], `cpu`) get the label `event` = their
//!   name, so that a type with several events splits (`-tagfocus=event=jdk.ThreadPark`).
//! - One Function per method name (`pkg.Class.method`), one Location per (function, line)
//!   (line 0 when unknown); `location_id` leaf first. One Mapping (`jvm`, marked as having
//!   functions and line numbers, so that pprof neither symbolizes nor looks for a binary).
//! - Samples with identical stacks and labels are one Sample with summed values.

use crate::time::monotonic_ns;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use flate2::write::GzEncoder;
use flate2::Compression;
use prost::Message;

use super::base::{Aggregate, End, Rotating};
use super::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use super::{is_cpu_event, numbered, Labeler, SinkOptions};
use crate::core::model::{ContextualSample, Frame, UnknownReason};
use crate::core::value::{ValueKind, ValuePlan};

/// Label carrying the thread name.
pub const THREAD_LABEL: &str = "thread";
/// Label carrying the reason when the context is unknown.
pub const UNKNOWN_LABEL: &str = "jfrctx_unknown";
/// Label carrying the event name of samples that are not CPU samples.
pub const EVENT_LABEL: &str = "event";

/// The id of the only Mapping.
const MAPPING_ID: u64 = 1;

/// What makes two samples the same pprof Sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    context: Vec<(Arc<str>, Arc<str>)>,
    unknown: Option<UnknownReason>,
    thread: Arc<str>,
    /// `None` for CPU samples.
    event: Option<Arc<str>>,
    /// Leaf first.
    frames: Vec<Frame>,
}

impl Key {
    /// A total order, for deterministic output.
    fn order(&self, other: &Key) -> std::cmp::Ordering {
        fn frames(k: &Key) -> impl Iterator<Item = (&str, i32)> {
            k.frames.iter().map(|f| (&*f.method, f.line))
        }
        (&self.event, &self.context, self.unknown, &self.thread)
            .cmp(&(&other.event, &other.context, other.unknown, &other.thread))
            .then_with(|| frames(self).cmp(frames(other)))
    }
}

/// The pprof aggregation of one interval: samples with identical stacks and labels summed into
/// one Sample. A value: the pprof file writer ([`PprofFile`]) and the push sink
/// ([`super::push`]) each hold one and turn it into a [`Profile`] when an interval ends.
pub struct PprofProfile {
    values: ValuePlan,
    /// The value kinds after `samples/count`: the plan's, plus any other kind seen (which the
    /// enabled events cannot produce; kept so that no value is lost, and kept by
    /// [`PprofProfile::reset`] so that every later profile has the same types).
    kinds: Vec<ValueKind>,
    /// Per key: samples, then the value of each of `kinds`.
    counts: HashMap<Key, Vec<i64>>,
    /// Shortest real period of the `cpu` and `native` samples of this interval, if any.
    seen_period: [Option<i64>; 2],
    /// Start of the interval: wall clock, and [`monotonic_ns`].
    started: SystemTime,
    started_ns: i64,
}

impl PprofProfile {
    /// An empty profile of the kinds of `values`, its interval starting at `now_ns`.
    pub fn new(values: &ValuePlan, now_ns: i64) -> PprofProfile {
        PprofProfile {
            values: values.clone(),
            kinds: values
                .kinds()
                .iter()
                .copied()
                .filter(|k| *k != ValueKind::Count)
                .collect(),
            counts: HashMap::new(),
            seen_period: [None; 2],
            started: SystemTime::now(),
            started_ns: now_ns,
        }
    }

    /// Whether no sample was added since the interval started.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Adds `s`, labelled with `context` (its context entries after the sink's policies; not
    /// read when its context is unknown).
    pub fn increment(&mut self, s: &ContextualSample, context: Vec<(Arc<str>, Arc<str>)>) {
        let (context, unknown) = match &s.context {
            Ok(_) => (context, None),
            Err(reason) => (Vec::new(), Some(*reason)),
        };
        let key = Key {
            context,
            unknown,
            thread: Arc::clone(&s.thread.name),
            event: (!is_cpu_event(&s.event)).then(|| Arc::clone(&s.event)),
            frames: s.frames.clone(),
        };
        let (kind, value) = self.values.value(s);
        let seen = match kind {
            ValueKind::CpuNanos => Some(&mut self.seen_period[0]),
            ValueKind::NativeNanos => Some(&mut self.seen_period[1]),
            _ => None,
        };
        if let Some(seen) = seen {
            *seen = Some(seen.map_or(value, |p| p.min(value)));
        }
        let slot = match self.kinds.iter().position(|k| *k == kind) {
            Some(i) => Some(i + 1),
            None if kind == ValueKind::Count => None,
            None => {
                self.kinds.push(kind);
                Some(self.kinds.len())
            }
        };
        let values = self.counts.entry(key).or_default();
        values.resize(self.kinds.len() + 1, 0);
        values[0] += 1;
        if let Some(i) = slot {
            values[i] = values[i].saturating_add(value);
        }
    }

    /// Starts a new interval at `now_ns`, without samples.
    pub fn reset(&mut self, now_ns: i64) {
        self.counts.clear();
        self.seen_period = [None; 2];
        self.started = SystemTime::now();
        self.started_ns = now_ns;
    }

    /// The profile of the samples added since the interval started, ending at `now_ns`; `n` is
    /// its output number when rotating (in its comment).
    pub fn profile(&self, n: Option<u32>, now_ns: i64) -> Profile {
        let mut b = Builder::default();
        b.string("");
        let mut sample_type = vec![ValueType {
            r#type: b.string("samples"),
            unit: b.string("count"),
        }];
        for kind in &self.kinds {
            let (t, unit) = kind.sample_type();
            sample_type.push(ValueType {
                r#type: b.string(t),
                unit: b.string(unit),
            });
        }
        let mut keys: Vec<(&Key, &Vec<i64>)> = self.counts.iter().collect();
        keys.sort_by(|x, y| x.0.order(y.0));
        let mut samples = Vec::with_capacity(keys.len());
        for (key, values) in keys {
            let mut value = values.clone();
            value.resize(sample_type.len(), 0);
            samples.push(b.sample(key, value));
        }
        let default = self.values.default_kind();
        let type_of = |kind: ValueKind| {
            let i = self.kinds.iter().position(|k| *k == kind);
            i.map_or(sample_type[0], |i| sample_type[i + 1])
        };
        // The period the samples were really taken at (the shortest, when it changed), else the
        // configured one.
        let period = [ValueKind::CpuNanos, ValueKind::NativeNanos]
            .into_iter()
            .zip(self.seen_period)
            .find_map(|(k, seen)| Some((type_of(k), seen.or(self.values.period_of(k))?)));
        let started_ns = self
            .started
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let comment = match n {
            Some(n) => format!("jfrctx interval {n}"),
            None => "jfrctx".to_string(),
        };
        let mapping = Mapping {
            id: MAPPING_ID,
            filename: b.string("jvm"),
            has_functions: true,
            has_line_numbers: true,
            ..Mapping::default()
        };
        Profile {
            default_sample_type: type_of(default).r#type,
            sample_type,
            mapping: vec![mapping],
            sample: samples,
            period_type: period.map(|p| p.0),
            period: period.map_or(0, |p| p.1),
            time_nanos: started_ns,
            duration_nanos: now_ns.saturating_sub(self.started_ns).max(0),
            comment: vec![b.string(&comment)],
            location: b.locations,
            function: b.functions,
            string_table: b.strings,
            ..Profile::default()
        }
    }
}

/// The pprof sink: [`PprofFile`] over the shared base.
pub type PprofSink = Rotating<PprofFile>;

/// The pprof file writer: one gzipped profile per output, its labels after the cardinality
/// policies.
pub struct PprofFile {
    path: PathBuf,
    labeler: Labeler,
    profile: PprofProfile,
}

impl PprofSink {
    /// Creates the first output file now (empty until written), so that an unwritable path
    /// fails at agent load.
    pub fn open(path: &Path, options: &SinkOptions) -> io::Result<PprofSink> {
        let now_ns = monotonic_ns();
        let file = PprofFile::new(path, options, now_ns);
        Rotating::create(name(path), file, options.interval_ns, now_ns)
    }

    /// A sink whose first interval starts at `now_ns`; no file is touched until a write.
    pub fn new(path: &Path, options: &SinkOptions, now_ns: i64) -> PprofSink {
        let file = PprofFile::new(path, options, now_ns);
        Rotating::over(name(path), file, options.interval_ns, now_ns)
    }

    /// The profile of the samples aggregated since the last output, ending at `now_ns`.
    pub fn profile(&self, now_ns: i64) -> Profile {
        self.aggregate().profile.profile(self.next_output(), now_ns)
    }
}

fn name(path: &Path) -> String {
    format!("pprof:{}", path.display())
}

impl PprofFile {
    fn new(path: &Path, options: &SinkOptions, now_ns: i64) -> PprofFile {
        PprofFile {
            path: path.to_path_buf(),
            labeler: Labeler::new(&options.cardinality),
            profile: PprofProfile::new(&options.values, now_ns),
        }
    }
}

impl Aggregate for PprofFile {
    fn create(&mut self, n: Option<u32>) -> io::Result<()> {
        File::create(numbered(&self.path, n)).map(drop)
    }

    fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
        let context = match &s.context {
            Ok(map) => self.labeler.apply(map),
            Err(_) => Vec::new(),
        };
        self.profile.increment(s, context);
        Ok(())
    }

    /// Writes the current profile to output `n` and starts a new interval.
    fn write(&mut self, end: End) -> io::Result<()> {
        let bytes = self.profile.profile(end.n, end.now_ns).encode_to_vec();
        self.profile.reset(end.now_ns);
        let file = BufWriter::new(File::create(numbered(&self.path, end.n))?);
        let mut gz = GzEncoder::new(file, Compression::default());
        gz.write_all(&bytes)?;
        gz.finish()?.flush()
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler.replaced()
    }
}

/// Interns strings, functions and locations while samples are encoded.
#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Function>,
    function_ids: HashMap<Arc<str>, u64>,
    locations: Vec<Location>,
    location_ids: HashMap<(u64, i64), u64>,
}

impl Builder {
    fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn location(&mut self, frame: &Frame) -> u64 {
        let function = match self.function_ids.get(&frame.method) {
            Some(&id) => id,
            None => {
                let id = self.functions.len() as u64 + 1;
                let name = self.string(&frame.method);
                self.functions.push(Function {
                    id,
                    name,
                    system_name: name,
                    ..Function::default()
                });
                self.function_ids.insert(Arc::clone(&frame.method), id);
                id
            }
        };
        let line = i64::from(frame.line.max(0));
        if let Some(&id) = self.location_ids.get(&(function, line)) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        self.locations.push(Location {
            id,
            mapping_id: MAPPING_ID,
            line: vec![Line {
                function_id: function,
                line,
                column: 0,
            }],
            ..Location::default()
        });
        self.location_ids.insert((function, line), id);
        id
    }

    fn label(&mut self, key: &str, value: &str) -> Label {
        Label {
            key: self.string(key),
            str: self.string(value),
            ..Label::default()
        }
    }

    fn sample(&mut self, key: &Key, value: Vec<i64>) -> Sample {
        let location_id = key.frames.iter().map(|f| self.location(f)).collect();
        let mut label: Vec<Label> = key.context.iter().map(|(k, v)| self.label(k, v)).collect();
        label.push(self.label(THREAD_LABEL, &key.thread));
        if let Some(reason) = key.unknown {
            label.push(self.label(UNKNOWN_LABEL, reason.as_str()));
        }
        if let Some(event) = &key.event {
            label.push(self.label(EVENT_LABEL, event));
        }
        Sample {
            location_id,
            value,
            label,
        }
    }
}

#[cfg(test)]
mod tests;
