//! Sinks: where contextualised samples go. One file per format behind the [`Sink`] trait, and a
//! [`SinkSet`] that feeds several sinks and accounts for their failures.

use std::io;

use crate::config::{io_message, SinkFormat, SinkSpec};
use crate::model::ContextualSample;

pub mod jsonl;

/// A destination for contextualised samples. Called from the worker thread only.
pub trait Sink: Send {
    /// Shown in logs and the summary, e.g. `jsonl:/tmp/x.jsonl`.
    fn name(&self) -> &str;
    fn record(&mut self, s: &ContextualSample) -> io::Result<()>;
    /// Pushes buffered output out (called after each worker round).
    fn flush(&mut self) -> io::Result<()>;
    /// Completes the output (called once at shutdown); no `record` follows.
    fn finish(&mut self) -> io::Result<()>;
}

/// Opens the sink described by `spec` now (so an unwritable target fails at agent load), with
/// `%p` in its path replaced by `pid`. The error is one line naming the sink and the cause.
pub fn open(spec: &SinkSpec, pid: u32) -> Result<Box<dyn Sink>, String> {
    let spec = spec.resolve(pid);
    match spec.format {
        SinkFormat::Jsonl => jsonl::JsonlSink::open(&spec.target)
            .map(|s| Box::new(s) as Box<dyn Sink>)
            .map_err(|e| format!("cannot open jsonl sink {}: {}", spec.target, io_message(&e))),
    }
}

/// Per-sink counters, as shown in the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkStats {
    pub name: String,
    /// Samples written successfully.
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

    pub fn stats(&self) -> Vec<SinkStats> {
        self.entries
            .iter()
            .map(|e| SinkStats {
                name: e.sink.name().to_string(),
                records: e.records,
                errors: e.errors,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Output;
    use crate::model::{ContextMap, ThreadInfo};
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    /// Fails `record` from the `fail_at`-th call on (0-based); logs calls into `log`.
    struct Fake {
        name: String,
        fail_at: Option<usize>,
        calls: Arc<Mutex<Vec<String>>>,
        n: usize,
    }

    impl Sink for Fake {
        fn name(&self) -> &str {
            &self.name
        }
        fn record(&mut self, _: &ContextualSample) -> io::Result<()> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("{} record", self.name));
            self.n += 1;
            match self.fail_at {
                Some(k) if self.n > k => Err(io::Error::other("disk full")),
                _ => Ok(()),
            }
        }
        fn flush(&mut self) -> io::Result<()> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("{} flush", self.name));
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            self.calls
                .lock()
                .unwrap()
                .push(format!("{} finish", self.name));
            Ok(())
        }
    }

    fn fake(name: &str, fail_at: Option<usize>, calls: &Arc<Mutex<Vec<String>>>) -> Box<dyn Sink> {
        Box::new(Fake {
            name: name.into(),
            fail_at,
            calls: Arc::clone(calls),
            n: 0,
        })
    }

    fn sample() -> ContextualSample {
        ContextualSample {
            event: Arc::from("jdk.ExecutionSample"),
            time_ns: 1,
            duration_ns: 0,
            thread: ThreadInfo {
                id: Some(1),
                name: Arc::from("main"),
                is_virtual: false,
            },
            context: Ok(Arc::new(ContextMap::default())),
            weight: 0,
            frames: vec![],
            truncated: false,
        }
    }

    fn stats(name: &str, records: u64, errors: u64) -> SinkStats {
        SinkStats {
            name: name.into(),
            records,
            errors,
        }
    }

    #[test]
    fn a_failing_sink_is_disabled_and_the_others_continue() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut set = SinkSet::new();
        set.push(fake("good", None, &calls));
        set.push(fake("bad", Some(2), &calls));
        assert_eq!(set.active(), 2);
        for _ in 0..5 {
            set.record_all(&sample());
        }
        set.flush_all();
        set.finish_all();
        set.finish_all();
        assert_eq!(set.stats(), vec![stats("good", 5, 0), stats("bad", 2, 3)]);
        let calls = calls.lock().unwrap();
        let bad_calls = calls.iter().filter(|c| c.starts_with("bad")).count();
        assert_eq!(bad_calls, 3, "{calls:?}");
        assert_eq!(calls.iter().filter(|c| *c == "good finish").count(), 1);
        assert_eq!(set.active(), 0);
    }

    #[test]
    fn records_after_finish_count_as_errors() {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let mut set = SinkSet::new();
        set.push(fake("a", None, &calls));
        set.record_all(&sample());
        set.finish_all();
        set.record_all(&sample());
        assert_eq!(set.stats(), vec![stats("a", 1, 1)]);
    }

    #[test]
    fn open_reports_an_unwritable_path() {
        let spec = SinkSpec {
            format: SinkFormat::Jsonl,
            target: Output::File(PathBuf::from("/nonexistent-jfrctx-dir/x-%p.jsonl")),
        };
        let err = open(&spec, 12).err().expect("open must fail");
        assert_eq!(
            err,
            "cannot open jsonl sink /nonexistent-jfrctx-dir/x-12.jsonl: No such file or directory"
        );
        assert!(SinkSet::open_all(&[spec], 1).is_err());
    }

    #[test]
    fn open_resolves_pid_and_names_the_sink() {
        let dir = std::env::temp_dir().join(format!("jfrctx-sink-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = SinkSpec {
            format: SinkFormat::Jsonl,
            target: Output::File(dir.join("s-%p.jsonl")),
        };
        let mut set = SinkSet::open_all(&[spec], 77).unwrap();
        let path = dir.join("s-77.jsonl");
        assert_eq!(set.stats()[0].name, format!("jsonl:{}", path.display()));
        set.record_all(&sample());
        set.finish_all();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
