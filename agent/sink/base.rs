//! The shared base of the aggregating sinks (`pprof`, `collapsed`, `svg`, `jfr`, `push`): one
//! [`Rotating`] sink does what they have in common (open, the [`Rotation`] of intervals, flush,
//! finish, refusing samples after finish) over an [`Aggregate`], which only counts samples
//! ([`Aggregate::increment`]) and writes what it counted when an interval ends
//! ([`Aggregate::write`]).
//!
//! Each format is one file holding its aggregate and a type alias naming the sink
//! (`PprofSink = Rotating<PprofFile>`, ...). The pprof aggregation itself is a value,
//! [`super::pprof::PprofProfile`], that both the pprof file writer and the push sink hold.

use std::io;
use std::path::{Path, PathBuf};

use super::Sink;
use crate::core::model::ContextualSample;
use crate::time::monotonic_ns;

/// The end of an interval, as given to [`Aggregate::write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct End {
    /// The number of the output (1, 2, ...) when rotating, `None` without an interval (see
    /// [`numbered`]).
    pub n: Option<u32>,
    /// When the interval ends, on the monotonic clock ([`monotonic_ns`]).
    pub now_ns: i64,
    /// The last output, written by `finish`: no sample follows.
    pub last: bool,
}

/// What one output format adds to [`Rotating`]: how a sample is counted, and how the samples of
/// an interval are written.
pub trait Aggregate: Send {
    /// Creates the first output (empty until written) with number `n` (see [`End::n`]), so that
    /// an unwritable target fails when the sink is opened. Nothing by default.
    fn create(&mut self, n: Option<u32>) -> io::Result<()> {
        let _ = n;
        Ok(())
    }

    /// Adds `s` to the current interval.
    fn increment(&mut self, s: &ContextualSample) -> io::Result<()>;

    /// Writes the samples of the interval that ends at `end.now_ns` and starts the next one.
    /// Called for every interval that is over (also those without samples: output `n` covers
    /// interval `n`), and once more at finish with `end.last`.
    fn write(&mut self, end: End) -> io::Result<()>;

    /// Called once after the last [`Aggregate::write`], whatever it returned. Nothing by
    /// default.
    fn close(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// See [`Sink::replaced`].
    fn replaced(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// See [`Sink::undelivered`].
    fn undelivered(&self) -> u64 {
        0
    }
}

/// A [`Sink`] over an [`Aggregate`]: `record` increments it, `flush` writes one output per
/// interval that is over, `finish` writes the last (partial) interval and closes it. A sample
/// offered after `finish` is an error.
pub struct Rotating<A> {
    name: String,
    aggregate: A,
    rotation: Rotation,
    finished: bool,
}

impl<A: Aggregate> Rotating<A> {
    /// A sink named `name` whose first interval starts at `now_ns`; nothing is created.
    pub fn over(name: String, aggregate: A, interval_ns: Option<i64>, now_ns: i64) -> Rotating<A> {
        Rotating {
            name,
            aggregate,
            rotation: Rotation::new(interval_ns, now_ns),
            finished: false,
        }
    }

    /// [`Rotating::over`], with its first output created now ([`Aggregate::create`]).
    pub fn create(
        name: String,
        aggregate: A,
        interval_ns: Option<i64>,
        now_ns: i64,
    ) -> io::Result<Rotating<A>> {
        let mut sink = Rotating::over(name, aggregate, interval_ns, now_ns);
        sink.aggregate.create(sink.rotation.peek())?;
        Ok(sink)
    }

    pub fn aggregate(&self) -> &A {
        &self.aggregate
    }

    pub fn aggregate_mut(&mut self) -> &mut A {
        &mut self.aggregate
    }

    /// The number of the next output (see [`Rotation::peek`]).
    pub fn next_output(&self) -> Option<u32> {
        self.rotation.peek()
    }

    /// Writes one output per interval over at `now_ns` (what `flush` does with the current
    /// time).
    pub fn flush_at(&mut self, now_ns: i64) -> io::Result<()> {
        while self.rotation.due(now_ns) {
            let n = self.rotation.take();
            self.aggregate.write(End {
                n,
                now_ns,
                last: false,
            })?;
        }
        Ok(())
    }

    /// What `finish` does, with the interval ending at `now_ns`.
    pub fn finish_at(&mut self, now_ns: i64) -> io::Result<()> {
        self.finished = true;
        let n = self.rotation.take();
        let last = self.aggregate.write(End {
            n,
            now_ns,
            last: true,
        });
        let closed = self.aggregate.close();
        last.and(closed)
    }
}

impl<A: Aggregate> Sink for Rotating<A> {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::other("record after finish"));
        }
        self.aggregate.increment(s)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_at(monotonic_ns())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finish_at(monotonic_ns())
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.aggregate.replaced()
    }

    fn undelivered(&self) -> u64 {
        self.aggregate.undelivered()
    }
}

/// When an aggregated sink writes an output. Without an interval: once, at exit, to its path.
/// With one: output `n` (1, 2, ...) when the `n`-th interval of wall time since the sink was
/// opened is over (checked at every `flush`, i.e. every worker round), and a last one at exit
/// holding the partial interval. An interval holds the samples the agent decided during it
/// (samples reach the sinks about a second after they were taken); an interval without samples
/// still gives its (empty) output, so that output `n` always covers interval `n`.
pub struct Rotation {
    interval_ns: Option<i64>,
    deadline_ns: i64,
    written: u32,
}

impl Rotation {
    pub fn new(interval_ns: Option<i64>, now_ns: i64) -> Rotation {
        Rotation {
            interval_ns,
            deadline_ns: now_ns.saturating_add(interval_ns.unwrap_or(i64::MAX)),
            written: 0,
        }
    }

    /// Whether the current interval is over at `now_ns`; when it is, the next one starts where
    /// it ended (call again: several may be over after a stall).
    pub fn due(&mut self, now_ns: i64) -> bool {
        match self.interval_ns {
            Some(i) if now_ns >= self.deadline_ns => {
                self.deadline_ns = self.deadline_ns.saturating_add(i);
                true
            }
            _ => false,
        }
    }

    /// The number of the next output (1-based) when rotating, `None` without an interval.
    pub fn peek(&self) -> Option<u32> {
        self.interval_ns.map(|_| self.written + 1)
    }

    /// Like [`Rotation::peek`], and counts the output as written.
    pub fn take(&mut self) -> Option<u32> {
        let n = self.peek();
        self.written += 1;
        n
    }
}

/// `path` with `.TAG` inserted before its extension, by the rule of [`numbered`]
/// (`stacks.txt` → `stacks.alloc.txt`, `cpu.pb.gz` → `cpu.alloc.pb.gz`, `x` → `x.alloc`).
pub fn tagged(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let split = if name.ends_with(".pb.gz") && name.len() > ".pb.gz".len() {
        Some(name.len() - ".pb.gz".len())
    } else {
        name.rfind('.').filter(|&i| i > 0)
    };
    let tagged = match split {
        Some(i) => format!("{}.{tag}{}", &name[..i], &name[i..]),
        None => format!("{name}.{tag}"),
    };
    path.with_file_name(tagged)
}

/// The path of output `n` of a file sink: `n` as 4 digits (or more) before the extension
/// (`profile.pprof` → `profile.0001.pprof`; `.pb.gz` counts as one extension; a name without
/// an extension gets `.0001` appended). `None` is the path itself.
pub fn numbered(path: &Path, n: Option<u32>) -> PathBuf {
    match n {
        Some(n) => tagged(path, &format!("{n:04}")),
        None => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Logs every call; `write` fails from the `fail_from`-th output on.
    #[derive(Default)]
    struct Log {
        calls: Vec<String>,
        fail_from: Option<u32>,
    }

    impl Aggregate for Log {
        fn create(&mut self, n: Option<u32>) -> io::Result<()> {
            self.calls.push(format!("create {n:?}"));
            Ok(())
        }
        fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
            self.calls.push(format!("increment {}", s.time_ns));
            Ok(())
        }
        fn write(&mut self, end: End) -> io::Result<()> {
            let End { n, now_ns, last } = end;
            self.calls.push(format!("write {n:?} {now_ns} {last}"));
            match (n, self.fail_from) {
                (Some(n), Some(f)) if n >= f => Err(io::Error::other("disk full")),
                _ => Ok(()),
            }
        }
        fn close(&mut self) -> io::Result<()> {
            self.calls.push("close".into());
            Ok(())
        }
    }

    fn at(time_ns: i64) -> ContextualSample {
        let mut s = crate::core::model::test_samples::sample(Ok(&[]), "t", &[]);
        s.time_ns = time_ns;
        s
    }

    #[test]
    fn one_write_per_interval_over_then_a_last_one_and_close() {
        let mut sink = Rotating::create("x".into(), Log::default(), Some(100), 1_000).unwrap();
        assert_eq!(sink.name(), "x");
        sink.record(&at(1)).unwrap();
        sink.flush_at(1_099).unwrap();
        sink.flush_at(1_100).unwrap();
        sink.record(&at(2)).unwrap();
        sink.flush_at(1_350).unwrap(); // intervals 2 and 3 are over
        assert_eq!(sink.next_output(), Some(4));
        sink.finish_at(1_360).unwrap();
        assert!(sink.record(&at(3)).is_err());
        let want = [
            "create Some(1)",
            "increment 1",
            "write Some(1) 1100 false",
            "increment 2",
            "write Some(2) 1350 false",
            "write Some(3) 1350 false",
            "write Some(4) 1360 true",
            "close",
        ];
        assert_eq!(sink.aggregate().calls, want);
    }

    #[test]
    fn without_interval_only_finish_writes() {
        let mut sink = Rotating::over("x".into(), Log::default(), None, 0);
        sink.record(&at(1)).unwrap();
        sink.flush_at(i64::MAX).unwrap();
        sink.finish_at(5).unwrap();
        let want = ["increment 1", "write None 5 true", "close"];
        assert_eq!(sink.aggregate().calls, want);
    }

    #[test]
    fn a_failed_last_write_still_closes_and_is_returned() {
        let log = Log {
            fail_from: Some(1),
            ..Log::default()
        };
        let mut sink = Rotating::over("x".into(), log, Some(10), 0);
        assert!(sink.finish_at(5).is_err());
        assert_eq!(sink.aggregate().calls, ["write Some(1) 5 true", "close"]);
    }
}
