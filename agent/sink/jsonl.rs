//! JSON lines sink: one object per sample, one per line (schema documented in the README):
//!
//! ```text
//! {"event":"jdk.ExecutionSample","time_ns":N,"duration_ns":N,
//!  "thread":{"id":N,"name":"..","virtual":false},
//!  "context":{"endpoint":"/orders"},"unknown":"<reason>","weight":N,
//!  "stack":[{"method":"pkg.Class.method","line":N},...],"truncated":true}
//! ```
//!
//! `duration_ns` and `weight` appear only when non-zero, `truncated` only when true. `context`
//! is `{}` when no context was installed, and `null` (followed by `"unknown":"<reason>"`) when
//! it could not be decided. `thread.id` is `null` when JFR gave no thread. Stack leaf first;
//! `line` is -1 when unknown. Strings are escaped by serde_json.
//!
//! A file deleted while the sink writes to it (a cleanup job, a careless `rm`) is noticed at the
//! next flush after a write (`fstat` finds no link left): the sink logs it, with the number of
//! samples that went with the deleted file, and carries on in a new file at the same path.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::Sink;
use crate::core::model::ContextualSample;
use crate::sink::spec::Output;

/// Writes JSON lines to any writer (a file, stdout, or a buffer in tests).
pub struct JsonlSink<W: Write + Send> {
    name: String,
    out: BufWriter<W>,
    finished: bool,
    /// File targets: watches for the file being deleted under the sink.
    watch: Option<Watch<W>>,
}

/// Deletions logged one by one; later ones are still handled, silently.
const DELETIONS_LOGGED: u64 = 10;

/// What a file-backed sink needs to notice its file was deleted and to start a new one.
struct Watch<W> {
    path: PathBuf,
    /// A second descriptor of the open file, for `fstat`.
    probe: File,
    /// Opens a new file at `path`: its writer and a probe descriptor.
    reopen: fn(&Path) -> io::Result<(W, File)>,
    /// Samples written into the current file.
    written: u64,
    /// Whether something was written since the last check (no write, nothing to lose).
    dirty: bool,
    deletions: u64,
}

fn create_file(path: &Path) -> io::Result<(Box<dyn Write + Send>, File)> {
    let file = File::create(path)?;
    let probe = file.try_clone()?;
    Ok((Box::new(file), probe))
}

impl JsonlSink<Box<dyn Write + Send>> {
    /// Opens (creates or truncates) the target now. `%p` must already be resolved.
    pub fn open(target: &Output) -> io::Result<Self> {
        let name = format!("jsonl:{target}");
        match target {
            Output::Stdout => Ok(JsonlSink::new(name, Box::new(io::stdout()))),
            Output::File(path) => {
                let (out, probe) = create_file(path)?;
                let mut sink = JsonlSink::new(name, out);
                sink.watch = Some(Watch {
                    path: path.clone(),
                    probe,
                    reopen: create_file,
                    written: 0,
                    dirty: false,
                    deletions: 0,
                });
                Ok(sink)
            }
        }
    }
}

impl<W: Write + Send> JsonlSink<W> {
    pub fn new(name: String, out: W) -> Self {
        JsonlSink {
            name,
            out: BufWriter::with_capacity(64 * 1024, out),
            finished: false,
            watch: None,
        }
    }

    /// After a flush: when the file was deleted, logs it and (unless `last`) starts a new file at
    /// the same path. Everything written so far went into the deleted file.
    fn check_deleted(&mut self, last: bool) -> io::Result<()> {
        let Some(w) = self.watch.as_mut().filter(|w| w.dirty) else {
            return Ok(());
        };
        w.dirty = false;
        if w.probe.metadata()?.nlink() > 0 {
            return Ok(());
        }
        w.deletions += 1;
        if w.deletions <= DELETIONS_LOGGED {
            let next = if last {
                "the run is over"
            } else {
                "writing continues in a new file at the same path"
            };
            crate::warn!(
                "sink {}: the file was deleted while in use; the {} samples written to it went \
                 with it; {next}",
                self.name,
                w.written
            );
        }
        w.written = 0;
        if !last {
            let (out, probe) = (w.reopen)(&w.path)?;
            w.probe = probe;
            self.out = BufWriter::with_capacity(64 * 1024, out);
        }
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

impl<W: Write + Send> Sink for JsonlSink<W> {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::other("record after finish"));
        }
        write_sample(&mut self.out, s)?;
        if let Some(w) = &mut self.watch {
            w.written += 1;
            w.dirty = true;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()?;
        self.check_deleted(false)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        self.out.flush()?;
        self.check_deleted(true)
    }
}

/// Writes one sample as one JSON object followed by a newline.
pub fn write_sample(w: &mut impl Write, s: &ContextualSample) -> io::Result<()> {
    w.write_all(b"{\"event\":")?;
    string(w, &s.event)?;
    write!(w, ",\"time_ns\":{}", s.time_ns)?;
    if s.duration_ns != 0 {
        write!(w, ",\"duration_ns\":{}", s.duration_ns)?;
    }
    w.write_all(b",\"thread\":{\"id\":")?;
    match s.thread.id {
        Some(id) => write!(w, "{id}")?,
        None => w.write_all(b"null")?,
    }
    w.write_all(b",\"name\":")?;
    string(w, &s.thread.name)?;
    write!(w, ",\"virtual\":{}}}", s.thread.is_virtual)?;
    w.write_all(b",\"context\":")?;
    match &s.context {
        Ok(map) => {
            w.write_all(b"{")?;
            for (i, (k, v)) in map.entries.iter().enumerate() {
                if i > 0 {
                    w.write_all(b",")?;
                }
                string(w, k)?;
                w.write_all(b":")?;
                string(w, v)?;
            }
            w.write_all(b"}")?;
        }
        Err(reason) => write!(w, "null,\"unknown\":\"{}\"", reason.as_str())?,
    }
    if s.weight != 0 {
        write!(w, ",\"weight\":{}", s.weight)?;
    }
    w.write_all(b",\"stack\":[")?;
    for (i, f) in s.frames.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(b"{\"method\":")?;
        string(w, &f.method)?;
        write!(w, ",\"line\":{}}}", f.line)?;
    }
    w.write_all(b"]")?;
    if s.truncated {
        w.write_all(b",\"truncated\":true")?;
    }
    w.write_all(b"}\n")
}

fn string(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::{ContextMap, Frame, ThreadInfo, UnknownReason};
    use serde_json::{json, Value};
    use std::sync::Arc;

    fn ctx(kv: &[(&str, &str)]) -> Arc<ContextMap> {
        Arc::new(ContextMap {
            entries: kv
                .iter()
                .map(|(k, v)| (Arc::from(*k), Arc::from(*v)))
                .collect(),
        })
    }

    fn sample() -> ContextualSample {
        ContextualSample {
            event: Arc::from("jdk.ExecutionSample"),
            time_ns: 123_456_789,
            duration_ns: 0,
            thread: ThreadInfo {
                id: Some(42),
                name: Arc::from("worker-1"),
                is_virtual: false,
            },
            context: Ok(ctx(&[("endpoint", "/orders")])),
            weight: 0,
            frames: vec![
                Frame {
                    method: Arc::from("shop.Orders.handle"),
                    line: 17,
                },
                Frame {
                    method: Arc::from("java.lang.Thread.run"),
                    line: -1,
                },
            ],
            truncated: false,
        }
    }

    fn lines(samples: &[ContextualSample]) -> Vec<String> {
        let mut sink = JsonlSink::new("jsonl:test".into(), Vec::new());
        for s in samples {
            sink.record(s).unwrap();
        }
        sink.finish().unwrap();
        let bytes = sink.into_inner().unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.ends_with('\n'));
        text.lines().map(str::to_string).collect()
    }

    fn one(s: ContextualSample) -> (String, Value) {
        let line = lines(&[s]).remove(0);
        let v: Value = serde_json::from_str(&line).unwrap();
        (line, v)
    }

    #[test]
    fn schema_exact_for_a_plain_sample() {
        let (line, v) = one(sample());
        assert_eq!(
            line,
            r#"{"event":"jdk.ExecutionSample","time_ns":123456789,"thread":{"id":42,"name":"worker-1","virtual":false},"context":{"endpoint":"/orders"},"stack":[{"method":"shop.Orders.handle","line":17},{"method":"java.lang.Thread.run","line":-1}]}"#
        );
        assert_eq!(v["context"]["endpoint"], "/orders");
    }

    #[test]
    fn empty_context_is_an_empty_object() {
        let mut s = sample();
        s.context = Ok(Arc::new(ContextMap::default()));
        let (_, v) = one(s);
        assert_eq!(v["context"], json!({}));
        assert!(v.get("unknown").is_none());
    }

    #[test]
    fn unknown_context_is_null_with_reason() {
        for reason in UnknownReason::ALL {
            let mut s = sample();
            s.context = Err(reason);
            s.thread.id = None;
            let (_, v) = one(s);
            assert_eq!(v["context"], Value::Null);
            assert_eq!(v["unknown"], reason.as_str());
            assert_eq!(v["thread"]["id"], Value::Null);
        }
    }

    #[test]
    fn optional_fields_appear_only_when_set() {
        let (_, v) = one(sample());
        for k in ["duration_ns", "weight", "truncated"] {
            assert!(v.get(k).is_none(), "{k}");
        }
        let mut s = sample();
        s.duration_ns = 5_000;
        s.weight = 4096;
        s.truncated = true;
        s.thread.is_virtual = true;
        s.frames.clear();
        let (_, v) = one(s);
        assert_eq!(v["duration_ns"], 5_000);
        assert_eq!(v["weight"], 4096);
        assert_eq!(v["truncated"], true);
        assert_eq!(v["thread"]["virtual"], true);
        assert_eq!(v["stack"], json!([]));
    }

    #[test]
    fn strings_are_escaped() {
        let mut s = sample();
        let nasty = "a\"b\\c\nd\u{1}é😀";
        s.thread.name = Arc::from(nasty);
        s.context = Ok(ctx(&[("k\"ey", nasty), ("z", "")]));
        s.frames[0].method = Arc::from(nasty);
        let (line, v) = one(s);
        assert!(!line.contains('\n'));
        assert_eq!(v["thread"]["name"], nasty);
        assert_eq!(v["context"]["k\"ey"], nasty);
        assert_eq!(v["context"]["z"], "");
        assert_eq!(v["stack"][0]["method"], nasty);
    }

    #[test]
    fn one_line_per_sample_and_no_record_after_finish() {
        let out = lines(&[sample(), sample(), sample()]);
        assert_eq!(out.len(), 3);
        let mut sink = JsonlSink::new("jsonl:x".into(), Vec::new());
        sink.finish().unwrap();
        assert!(sink.record(&sample()).is_err());
        assert_eq!(sink.name(), "jsonl:x");
    }

    #[test]
    fn a_deleted_file_is_noticed_and_a_new_one_started() {
        let dir = std::env::temp_dir().join(format!("jfrctx-jsonl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("deleted.jsonl");
        let mut sink = JsonlSink::open(&Output::File(path.clone())).unwrap();
        sink.record(&sample()).unwrap();
        sink.record(&sample()).unwrap();
        sink.flush().unwrap();
        std::fs::remove_file(&path).unwrap();
        sink.flush().unwrap(); // nothing written since: nothing to notice yet
        assert!(!path.exists());
        sink.record(&sample()).unwrap();
        sink.flush().unwrap(); // noticed: this sample went with the old file too
        assert_eq!(sink.watch.as_ref().unwrap().deletions, 1);
        assert!(path.exists());
        sink.record(&sample()).unwrap();
        sink.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_errors_surface() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("broken pipe"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink = JsonlSink::new("jsonl:broken".into(), Broken);
        sink.record(&sample()).unwrap(); // buffered
        assert!(sink.flush().is_err());
    }
}
