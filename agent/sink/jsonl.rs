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
            for (i, (k, v)) in map.iter().enumerate() {
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
mod tests;
