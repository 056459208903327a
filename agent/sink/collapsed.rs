//! Collapsed (folded) stacks sink (`sink=collapsed:PATH`): one line per distinct stack,
//! `root;...;leaf COUNT`, sorted, written at exit or once per `interval` (see
//! [`super::Rotation`] and [`super::numbered`]) plus a last one at exit. The format of
//! `flamegraph.pl`, inferno, speedscope.
//!
//! - Frames are method names (`pkg.Class.method`), root first.
//! - `collapsed_keys=K1+K2` adds one root frame per key, in that order: `K1=value`, or `K1=-`
//!   when the context has no such key (after the cardinality policies).
//! - A sample whose context is unknown gets the single root frame `[unknown: REASON]` instead.
//! - A sample of an event other than the CPU samplers ([`super::CPU_EVENTS`]) gets the frame
//!   `[EVENT]` (e.g. `[jdk.ObjectAllocationSample]`) between the root frames and its stack.
//! - A sample without frames and without root frames is `[no frames]`.
//! - In frame text, `;` becomes `_` and line breaks become spaces, so that every line parses.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};

use super::{is_cpu_event, now_ns, numbered, Labeler, Rotation, Sink, SinkOptions};
use crate::config::Output;
use crate::model::{ContextualSample, UnknownReason};

pub struct CollapsedSink {
    name: String,
    target: Output,
    keys: Vec<String>,
    labeler: Labeler,
    rotation: Rotation,
    counts: HashMap<String, u64>,
    finished: bool,
}

impl CollapsedSink {
    /// Creates the first output file now (empty until written), so that an unwritable path
    /// fails at agent load. `-` (stdout) is written at exit and cannot rotate.
    pub fn open(target: &Output, options: &SinkOptions) -> io::Result<CollapsedSink> {
        let sink = CollapsedSink::new(target, options, now_ns());
        match target {
            Output::File(path) => drop(File::create(numbered(path, sink.rotation.peek()))?),
            Output::Stdout if options.interval_ns.is_some() => {
                return Err(io::Error::other("cannot rotate stdout"))
            }
            Output::Stdout => {}
        }
        Ok(sink)
    }

    /// A sink whose first interval starts at `now_ns`; no file is touched until a write.
    pub fn new(target: &Output, options: &SinkOptions, now_ns: i64) -> CollapsedSink {
        CollapsedSink {
            name: format!("collapsed:{target}"),
            target: target.clone(),
            keys: options.collapsed_keys.clone(),
            labeler: Labeler::new(&options.cardinality),
            rotation: Rotation::new(options.interval_ns, now_ns),
            counts: HashMap::new(),
            finished: false,
        }
    }

    /// Writes an output if the current interval is over at `now_ns`.
    pub fn flush_at(&mut self, now_ns: i64) -> io::Result<()> {
        while self.rotation.due(now_ns) {
            self.write()?;
        }
        Ok(())
    }

    /// The folded lines aggregated since the last output, sorted, each ending in `\n`.
    pub fn text(&self) -> String {
        let mut lines: Vec<(&String, &u64)> = self.counts.iter().collect();
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

    fn write(&mut self) -> io::Result<()> {
        let text = self.text();
        self.counts.clear();
        let n = self.rotation.take();
        match &self.target {
            Output::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            }
            Output::File(path) => {
                let mut out = BufWriter::new(File::create(numbered(path, n))?);
                out.write_all(text.as_bytes())?;
                out.flush()
            }
        }
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

impl Sink for CollapsedSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::other("record after finish"));
        }
        let line = self.fold(s);
        *self.counts.entry(line).or_insert(0) += 1;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_at(now_ns())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        self.write()
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler.replaced()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Policy;
    use std::sync::Arc;

    fn sample(ctx: Result<&[(&str, &str)], UnknownReason>, stack: &[&str]) -> ContextualSample {
        let frames: Vec<(&str, i32)> = stack.iter().map(|m| (*m, 3)).collect();
        crate::model::test_samples::sample(ctx, "main", &frames)
    }

    fn options(keys: &[&str]) -> SinkOptions {
        SinkOptions {
            collapsed_keys: keys.iter().map(|k| k.to_string()).collect(),
            ..SinkOptions::default()
        }
    }

    fn text(sink_options: &SinkOptions, samples: &[ContextualSample]) -> String {
        let mut sink = CollapsedSink::new(&Output::Stdout, sink_options, 0);
        for s in samples {
            sink.record(s).unwrap();
        }
        sink.text()
    }

    #[test]
    fn lines_are_root_first_aggregated_and_sorted() {
        let leaf_first = ["a.B.leaf", "a.B.mid", "a.B.main"];
        let samples = [
            sample(Ok(&[("endpoint", "/x")]), &leaf_first),
            sample(Ok(&[]), &["a.B.other", "a.B.main"]),
            sample(Ok(&[("endpoint", "/y")]), &leaf_first),
        ];
        assert_eq!(
            text(&options(&[]), &samples),
            "a.B.main;a.B.mid;a.B.leaf 2\na.B.main;a.B.other 1\n"
        );
    }

    #[test]
    fn chosen_keys_are_root_frames_and_missing_ones_are_dashes() {
        let samples = [
            sample(Ok(&[("endpoint", "/orders"), ("tenant", "acme")]), &["m"]),
            sample(Ok(&[("endpoint", "/orders"), ("tenant", "acme")]), &["m"]),
            sample(Ok(&[("tenant", "acme"), ("x", "1")]), &["m"]),
            sample(Ok(&[]), &[]),
            sample(Err(UnknownReason::HistoryExpired), &["m"]),
        ];
        assert_eq!(
            text(&options(&["endpoint", "tenant"]), &samples),
            "[unknown: history_expired];m 1\n\
             endpoint=-;tenant=- 1\n\
             endpoint=-;tenant=acme;m 1\n\
             endpoint=/orders;tenant=acme;m 2\n"
        );
    }

    #[test]
    fn unknown_and_empty_samples_without_keys() {
        let samples = [
            sample(Err(UnknownReason::NoThread), &[]),
            sample(Ok(&[]), &[]),
        ];
        assert_eq!(
            text(&options(&[]), &samples),
            "[no frames] 1\n[unknown: no_thread] 1\n"
        );
    }

    #[test]
    fn other_events_get_a_frame_above_the_root_frames() {
        let mut park = sample(Ok(&[("k", "v")]), &["leaf", "main"]);
        park.event = Arc::from("jdk.ThreadPark");
        let mut cpu = sample(Ok(&[("k", "v")]), &["leaf", "main"]);
        cpu.event = Arc::from("jdk.CPUTimeSample");
        assert_eq!(
            text(&options(&["k"]), &[park, cpu]),
            "k=v;[jdk.ThreadPark];main;leaf 1\nk=v;main;leaf 1\n"
        );
    }

    #[test]
    fn separators_in_names_are_neutralised() {
        let samples = [sample(Ok(&[("k", "a;b\nc")]), &["x;y"])];
        assert_eq!(text(&options(&["k"]), &samples), "k=a_b c;x_y 1\n");
    }

    #[test]
    fn cardinality_applies_to_root_frames() {
        let mut o = options(&["req", "tenant"]);
        o.cardinality = vec![
            ("req".into(), Policy::Cap(1)),
            ("tenant".into(), Policy::Drop),
        ];
        let samples = [
            sample(Ok(&[("req", "r1"), ("tenant", "t")]), &["m"]),
            sample(Ok(&[("req", "r2"), ("tenant", "t")]), &["m"]),
            sample(Ok(&[("req", "r1")]), &["m"]),
        ];
        let mut sink = CollapsedSink::new(&Output::Stdout, &o, 0);
        for s in &samples {
            sink.record(s).unwrap();
        }
        assert_eq!(sink.text(), "req=other;tenant=-;m 1\nreq=r1;tenant=-;m 2\n");
        assert_eq!(
            sink.replaced(),
            vec![("req".to_string(), 1), ("tenant".to_string(), 2)]
        );
    }

    #[test]
    fn rotation_writes_one_file_per_interval_and_a_final_one() {
        let dir = std::env::temp_dir().join(format!("jfrctx-collapsed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stacks.txt");
        let mut o = options(&[]);
        o.interval_ns = Some(1_000);
        let mut sink = CollapsedSink::new(&Output::File(path.clone()), &o, 0);
        sink.record(&sample(Ok(&[]), &["a"])).unwrap();
        sink.flush_at(999).unwrap();
        sink.record(&sample(Ok(&[]), &["a"])).unwrap();
        sink.flush_at(1_000).unwrap(); // interval 1 over
        sink.flush_at(3_500).unwrap(); // intervals 2 (empty) and 3 over
        sink.record(&sample(Ok(&[]), &["b"])).unwrap();
        sink.finish().unwrap();
        assert!(sink.record(&sample(Ok(&[]), &["b"])).is_err());
        let read = |n: u32| std::fs::read_to_string(numbered(&path, Some(n))).unwrap();
        assert_eq!(read(1), "a 2\n");
        assert_eq!(read(2), "");
        assert_eq!(read(3), "");
        assert_eq!(read(4), "b 1\n");
        assert!(!numbered(&path, Some(5)).exists());
        assert!(dir.join("stacks.0004.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
