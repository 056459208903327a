//! Collapsed (folded) stacks sink (`sink=collapsed:PATH`): one line per distinct stack,
//! `root;...;leaf VALUE`, sorted, written at exit or once per `interval` (see
//! [`super::Rotation`] and [`super::numbered`]) plus a last one at exit. The format of
//! `flamegraph.pl`, inferno, speedscope.
//!
//! - One number per line means one unit per file: one output per value kind the enabled events
//!   can produce ([`crate::core::value::ValuePlan`]), as async-profiler writes one output per event
//!   type. `VALUE` sums the samples' values in the kind's unit: `cpu`/`native` nanoseconds (the
//!   sampling period per sample), `alloc` bytes, `wait` nanoseconds, `samples` (a count). With
//!   a single kind (e.g. the default `events=cpu`) the output is `PATH` itself; with several,
//!   each kind's name goes before the extension: `stacks.txt` → `stacks.alloc.txt`,
//!   `stacks.wait.txt`, ... (then the interval number: `stacks.wait.0001.txt`). Every output of
//!   the run exists (empty when its kind had no sample). Stdout (`-`) takes a single kind.
//! - Frames are method names (`pkg.Class.method`), root first.
//! - `collapsed_keys=K1+K2` adds one root frame per key, in that order: `K1=value`, or `K1=-`
//!   when the context has no such key (after the cardinality policies).
//! - A sample whose context is unknown gets the single root frame `[unknown: REASON]` instead.
//! - A sample of an event other than the CPU samplers ([`crate::core::events::table::EVENTS`], `cpu`) gets the frame
//!   `[EVENT]` (e.g. `[jdk.ThreadPark]`) between the root frames and its stack, so that lock,
//!   wait and park split in the `wait` output.
//! - A sample without frames and without root frames is `[no frames]`.
//! - In frame text, `;` becomes `_` and line breaks become spaces, so that every line parses.

use crate::time::monotonic_ns;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::base::{Aggregate, End, Rotating};
use super::{is_cpu_event, numbered, tagged, Labeler, SinkOptions};
use crate::core::model::{ContextualSample, UnknownReason};
use crate::core::value::{ValueKind, ValuePlan};
use crate::sink::spec::Output;

/// The collapsed sink: [`Collapsed`] over the shared base.
pub type CollapsedSink = Rotating<Collapsed>;

/// The folded stacks of the current interval, per value kind.
pub struct Collapsed {
    target: Output,
    keys: Vec<String>,
    labeler: Labeler,
    values: ValuePlan,
    /// One output each: the plan's kinds, then any other kind seen (which the enabled events
    /// cannot produce; it gets its own tagged output rather than being lost).
    kinds: Vec<ValueKind>,
    /// Per kind: folded stack (without value) → summed value.
    counts: HashMap<ValueKind, HashMap<String, u64>>,
}

/// The output of `kind` for the sink path `path`: `path` itself when `kind` is the plan's only
/// kind, else `path` tagged with the kind's name ([`tagged`]).
pub fn kind_path(path: &Path, kind: ValueKind, plan: &ValuePlan) -> PathBuf {
    if plan.kinds() == [kind] {
        path.to_path_buf()
    } else {
        tagged(path, kind.name())
    }
}

impl CollapsedSink {
    /// Creates the first output file now (empty until written), so that an unwritable path
    /// fails at agent load. `-` (stdout) is written at exit and cannot rotate.
    pub fn open(target: &Output, options: &SinkOptions) -> io::Result<CollapsedSink> {
        let kinds = options.values.kinds();
        match target {
            Output::Stdout if options.interval_ns.is_some() => {
                return Err(io::Error::other("cannot rotate stdout"))
            }
            Output::Stdout if kinds.len() > 1 => {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                return Err(io::Error::other(format!(
                    "stdout holds one value type but the events give {} ({}): give a path",
                    kinds.len(),
                    names.join(", ")
                )));
            }
            _ => {}
        }
        let now_ns = monotonic_ns();
        let collapsed = Collapsed::new(target, options);
        Rotating::create(name(target), collapsed, options.interval_ns, now_ns)
    }

    /// A sink whose first interval starts at `now_ns`; no file is touched until a write.
    pub fn new(target: &Output, options: &SinkOptions, now_ns: i64) -> CollapsedSink {
        let collapsed = Collapsed::new(target, options);
        Rotating::over(name(target), collapsed, options.interval_ns, now_ns)
    }
}

fn name(target: &Output) -> String {
    format!("collapsed:{target}")
}

impl Collapsed {
    fn new(target: &Output, options: &SinkOptions) -> Collapsed {
        Collapsed {
            target: target.clone(),
            keys: options.collapsed_keys.clone(),
            labeler: Labeler::new(&options.cardinality),
            values: options.values.clone(),
            kinds: options.values.kinds().to_vec(),
            counts: HashMap::new(),
        }
    }

    /// The value kinds of the outputs, in output order.
    pub fn kinds(&self) -> &[ValueKind] {
        &self.kinds
    }

    /// The folded lines of `kind` aggregated since the last output, sorted, each ending in `\n`.
    pub fn text(&self, kind: ValueKind) -> String {
        let mut lines: Vec<(&String, &u64)> = self
            .counts
            .get(&kind)
            .map(|m| m.iter().collect())
            .unwrap_or_default();
        lines.sort();
        let mut out = String::new();
        for (stack, n) in lines {
            out.push_str(stack);
            out.push(' ');
            out.push_str(&n.to_string());
            out.push('\n');
        }
        out
    }

    /// The folded stack of `s` (without its count).
    fn fold(&mut self, s: &ContextualSample) -> String {
        let mut line = String::new();
        match &s.context {
            Err(reason) => push_unknown(&mut line, *reason),
            Ok(map) if !self.keys.is_empty() => {
                let labels = self.labeler.apply(map);
                for key in &self.keys {
                    let value = labels.iter().find(|(k, _)| **k == **key).map(|(_, v)| v);
                    push_root(&mut line, key, value.map(|v| &**v));
                }
            }
            Ok(map) => {
                // Only for the policies' counts: no key is shown.
                self.labeler.apply(map);
            }
        }
        push_stack(&mut line, s);
        line
    }
}

impl Aggregate for Collapsed {
    /// Creates the first file of each kind (stdout is written at exit only).
    fn create(&mut self, n: Option<u32>) -> io::Result<()> {
        if let Output::File(path) = &self.target {
            for kind in self.values.kinds() {
                let path = kind_path(path, *kind, &self.values);
                drop(File::create(numbered(&path, n))?);
            }
        }
        Ok(())
    }

    fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
        let line = self.fold(s);
        let (kind, value) = self.values.value(s);
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
        let sum = self
            .counts
            .entry(kind)
            .or_default()
            .entry(line)
            .or_insert(0);
        *sum = sum.saturating_add(value.max(0) as u64);
        Ok(())
    }

    fn write(&mut self, end: End) -> io::Result<()> {
        let texts: Vec<(ValueKind, String)> =
            self.kinds.iter().map(|k| (*k, self.text(*k))).collect();
        self.counts.clear();
        for (kind, text) in texts {
            match &self.target {
                Output::Stdout => {
                    let mut out = io::stdout().lock();
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                }
                Output::File(path) => {
                    let path = numbered(&kind_path(path, kind, &self.values), end.n);
                    let mut out = BufWriter::new(File::create(path)?);
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                }
            }
        }
        Ok(())
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler.replaced()
    }
}

/// Appends `[unknown: REASON]` as a frame.
pub fn push_unknown(line: &mut String, reason: UnknownReason) {
    push_frame(line, &format!("[unknown: {reason}]"));
}

/// Appends the root frame `KEY=VALUE`, or `KEY=-` without a value.
pub fn push_root(line: &mut String, key: &str, value: Option<&str>) {
    push_frame(line, &format!("{key}={}", value.unwrap_or("-")));
}

/// Appends `[EVENT]` for events that are not CPU samples, then the stack of `s` root first;
/// `[no frames]` when the line would stay empty.
pub fn push_stack(line: &mut String, s: &ContextualSample) {
    if !is_cpu_event(&s.event) {
        push_frame(line, &format!("[{}]", s.event));
    }
    for f in s.frames.iter().rev() {
        push_frame(line, &f.method);
    }
    if line.is_empty() {
        line.push_str("[no frames]");
    }
}

/// Appends one frame (with a `;` before it unless it is the first), `;` → `_`, line breaks →
/// spaces.
pub fn push_frame(line: &mut String, text: &str) {
    if !line.is_empty() {
        line.push(';');
    }
    line.extend(text.chars().map(|c| match c {
        ';' => '_',
        '\n' | '\r' => ' ',
        c => c,
    }));
}

#[cfg(test)]
mod tests;
