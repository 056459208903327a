//! `sink=jfr:PATH`: the joined samples as a JFR recording (file format 2.1), readable by the
//! JDK's `jfr` tool and `jdk.jfr.consumer`, and by JDK Mission Control's parser.
//!
//! - [`encoding`]: compressed integers, strings, size-framed records.
//! - [`metadata`]: the types (the JDK's own, jfrctx's context types) and the metadata event.
//! - [`events`]: the event types, with their JDK names and fields plus `context` and
//!   `contextUnknown`.
//! - [`pools`]: a chunk's constant pools (symbols, packages, classes, methods, stack traces,
//!   threads, contexts).
//! - [`chunk`]: one chunk assembled in memory: header, events, checkpoint, metadata.
//!
//! The file is a sequence of complete chunks. A chunk ends every `interval=` (when it holds
//! samples), when its events and constant pools reach [`CHUNK_MAX`] bytes (a quarter of `jfr_max_size=` when
//! that is smaller), and at exit; it is then appended to the file in one write. So the file on
//! disk only ever holds complete chunks: when the JVM dies, every chunk ended before stays
//! readable, and only the samples of the chunk being filled are lost. With `jfr_max_size=` the
//! oldest chunks are dropped (the file rewritten without them) before a chunk that would make it
//! larger is appended; the newest chunk is always kept.
//!
//! The sink is [`JfrFile`] over the shared base ([`super::base`]): for jfr an interval ends a
//! chunk (when it holds samples), not a file, and the last one is the final chunk.

pub mod chunk;
pub mod encoding;
pub mod events;
pub mod metadata;
pub mod pools;

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::base::{Aggregate, End, Rotating};
use super::SinkOptions;
use crate::core::model::ContextualSample;
use chunk::{Chunk, Clock, Types};

/// A chunk ends when its events and pools reach about this many bytes.
pub const CHUNK_MAX: usize = 8 << 20;
/// Smallest `jfr_max_size`.
pub const MAX_SIZE_MIN: u64 = 1 << 20;

/// `jfr_max_size=SIZE`: bytes, or with a `k`, `m` or `g` suffix (powers of 1024; `kb`, `mb`,
/// `gb` too), at least 1 MiB.
pub fn parse_max_size(value: &str) -> Result<u64, String> {
    let v = value.trim().to_ascii_lowercase();
    let v = v.strip_suffix('b').filter(|s| !s.is_empty()).unwrap_or(&v);
    let (digits, unit) = match v.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&v[..i], &v[i..]),
        None => (v, ""),
    };
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        _ => return Err("expected a size such as 64m, 512k or 1g".into()),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| "expected a size such as 64m, 512k or 1g".to_string())?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| "size too large".to_string())?;
    if bytes < MAX_SIZE_MIN {
        return Err("at least 1m".into());
    }
    Ok(bytes)
}

/// The monotonic clock of the samples (`System.nanoTime()`'s).
fn mono_now() -> i64 {
    crate::time::monotonic_ns()
}

fn wall_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// The jfr sink: [`JfrFile`] over the shared base.
pub type JfrSink = Rotating<JfrFile>;

/// The recording being written: the chunk being filled and the complete chunks in the file.
pub struct JfrFile {
    name: String,
    path: PathBuf,
    file: File,
    types: Types,
    chunk: Chunk,
    clock: Clock,
    now: fn() -> i64,
    /// Sizes of the chunks in the file, oldest first.
    chunks: VecDeque<u64>,
    file_len: u64,
    max_size: Option<u64>,
    chunk_max: usize,
    /// Chunks dropped to keep the file under `max_size`.
    dropped: u64,
    /// Start ticks of the last chunk written.
    last_start: i64,
}

impl JfrSink {
    /// Creates (truncates) `path` now. `%p` must already be resolved.
    pub fn open(path: &Path, o: &SinkOptions) -> io::Result<JfrSink> {
        let clock = Clock {
            mono_ns: mono_now(),
            wall_ns: wall_now(),
        };
        JfrSink::with_clock(path, o, clock, mono_now)
    }

    /// [`JfrSink::open`] with a given clock pair and monotonic clock (tests).
    pub fn with_clock(
        path: &Path,
        o: &SinkOptions,
        clock: Clock,
        now: fn() -> i64,
    ) -> io::Result<JfrSink> {
        let file = File::create(path)?;
        let chunk_max = o
            .jfr_max_size
            .map_or(CHUNK_MAX, |m| CHUNK_MAX.min((m / 4) as usize));
        let name = format!("jfr:{}", path.display());
        let jfr = JfrFile {
            name: name.clone(),
            path: path.to_path_buf(),
            file,
            types: Types::new(),
            chunk: Chunk::new(now(), 0),
            clock,
            now,
            chunks: VecDeque::new(),
            file_len: 0,
            max_size: o.jfr_max_size,
            chunk_max,
            dropped: 0,
            last_start: i64::MIN,
        };
        let now_ns = crate::time::monotonic_ns();
        Ok(Rotating::over(name, jfr, o.interval_ns, now_ns))
    }

    /// Chunks in the file now.
    pub fn chunks(&self) -> usize {
        self.aggregate().chunks.len()
    }
}

impl JfrFile {
    /// Ends the current chunk and appends it to the file.
    fn end_chunk(&mut self, last: bool) -> io::Result<()> {
        let now = (self.now)();
        // Chunk starts strictly increase along the file: JMC keeps one chunk per start time.
        let start = self.chunk.start().max(self.last_start.saturating_add(1));
        self.last_start = start;
        let bytes = self
            .chunk
            .finish(&self.types, &self.clock, start, now, last);
        self.chunk = Chunk::new(now, self.chunk.pools.next_base());
        self.bound(bytes.len() as u64)?;
        self.file.write_all(&bytes)?;
        self.chunks.push_back(bytes.len() as u64);
        self.file_len += bytes.len() as u64;
        Ok(())
    }

    /// Drops the oldest chunks until `incoming` more bytes fit under `max_size`.
    fn bound(&mut self, incoming: u64) -> io::Result<()> {
        let Some(max) = self.max_size else {
            return Ok(());
        };
        let mut drop_bytes = 0;
        let mut n = 0;
        while n < self.chunks.len() && self.file_len - drop_bytes + incoming > max {
            drop_bytes += self.chunks[n];
            n += 1;
        }
        if n == 0 {
            return Ok(());
        }
        let tmp = self.path.with_extension("jfr.tmp");
        {
            let mut src = File::open(&self.path)?;
            src.seek(SeekFrom::Start(drop_bytes))?;
            let mut dst = File::create(&tmp)?;
            io::copy(
                &mut Read::by_ref(&mut src).take(self.file_len - drop_bytes),
                &mut dst,
            )?;
        }
        std::fs::rename(&tmp, &self.path)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        self.chunks.drain(..n);
        self.file_len -= drop_bytes;
        if self.dropped == 0 {
            crate::info!(
                "sink {}: jfr_max_size reached, dropping the oldest chunks",
                self.name
            );
        }
        self.dropped += n as u64;
        Ok(())
    }
}

impl Aggregate for JfrFile {
    fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
        self.chunk.add(&mut self.types, s);
        if self.chunk.approx_len() >= self.chunk_max {
            self.end_chunk(false)?;
        }
        Ok(())
    }

    /// Ends the chunk when it holds samples (so the intervals after a stall, which have none,
    /// add nothing); the last one always ends it, unless the file already holds a chunk and
    /// this one would be empty.
    fn write(&mut self, end: End) -> io::Result<()> {
        if self.chunk.samples() > 0 || (end.last && self.chunks.is_empty()) {
            self.end_chunk(end.last)?;
        }
        Ok(())
    }

    fn close(&mut self) -> io::Result<()> {
        if self.dropped > 0 {
            crate::info!(
                "sink {}: {} oldest chunks dropped to stay under jfr_max_size",
                self.name,
                self.dropped
            );
        }
        self.file.flush()
    }
}

#[cfg(test)]
mod tests;
