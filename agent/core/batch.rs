//! Decoder (and, for tests, encoder) of the bridge's batch byte format; see ARCHITECTURE.md
//! "Batch format". Little-endian records, each starting with a one-byte tag:
//! 1 string, 2 sample, 3 calibration, 4 stream end, 5 context definition, 6 context release.
//!
//! The string table lives in the [`Decoder`] across batches: ids are dense and valid for the
//! agent's lifetime.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use crate::core::clock::Bracket;
use crate::core::context::repo::raw::{encode as raw_encode, RawMap};
use crate::core::model::{Frame, RawSample, ThreadInfo};

pub const TAG_STRING: u8 = 1;
pub const TAG_SAMPLE: u8 = 2;
pub const TAG_CALIBRATION: u8 = 3;
pub const TAG_STREAM_END: u8 = 4;
pub const TAG_DEFINE: u8 = 5;
pub const TAG_RELEASE: u8 = 6;

const FLAG_VIRTUAL: u8 = 1;
const FLAG_TRUNCATED: u8 = 2;
const FLAG_CARRIER: u8 = 4;

/// One decoded record. String records only feed the table and are not returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Sample(RawSample),
    Calibration(Bracket),
    /// The stream ended; empty message for a normal end, else the bridge's error text.
    StreamEnd(String),
    /// A context map the facade numbered itself (`Definitions.define`), as the facade built it
    /// (sorted, unique keys: the repository checks); keys and values inline, not in the string
    /// table (values such as request ids are seldom repeated). `raw` is where its wire form
    /// (entry count, then each key's and value's length and UTF-8) lies in the batch: the
    /// repository keeps it as it is (`Repository::define`) until a sample needs the map.
    Define {
        id: u64,
        raw: Range<usize>,
    },
    /// The facade object holding a defined (or interned) id is gone: one reference dropped.
    Release(u64),
}

/// A malformed batch. `offset` is the byte offset within the batch: of the record for
/// truncation and unknown tags, of the offending field otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchError {
    Truncated {
        offset: usize,
        record: &'static str,
    },
    UnknownTag {
        offset: usize,
        tag: u8,
    },
    StringIdOutOfRange {
        offset: usize,
        id: u32,
        known: usize,
    },
    NonDenseStringId {
        offset: usize,
        id: u32,
        expected: usize,
    },
    BadUtf8 {
        offset: usize,
        id: u32,
    },
}

impl fmt::Display for BatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BatchError::Truncated { offset, record } => {
                write!(f, "batch truncated in {record} record at offset {offset}")
            }
            BatchError::UnknownTag { offset, tag } => {
                write!(f, "batch has unknown record tag {tag} at offset {offset}")
            }
            BatchError::StringIdOutOfRange { offset, id, known } => write!(
                f,
                "batch uses string id {id} at offset {offset}, but only {known} strings are known"
            ),
            BatchError::NonDenseStringId {
                offset,
                id,
                expected,
            } => write!(
                f,
                "batch defines string id {id} at offset {offset}, expected the next id {expected}"
            ),
            BatchError::BadUtf8 { offset, id } => {
                write!(f, "batch string {id} at offset {offset} is not valid UTF-8")
            }
        }
    }
}

impl std::error::Error for BatchError {}

/// Decodes batches, keeping the string table across them.
#[derive(Debug, Default)]
pub struct Decoder {
    strings: Vec<Arc<str>>,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Strings known so far.
    pub fn strings(&self) -> usize {
        self.strings.len()
    }

    /// Decodes every record of `bytes` into `out`. On error, the records decoded before the bad
    /// one stay in `out` (and strings defined before it stay in the table).
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<Record>) -> Result<(), BatchError> {
        let mut r = Reader { bytes, pos: 0 };
        while r.pos < bytes.len() {
            let start = r.pos;
            let tag = bytes[start];
            r.pos += 1;
            match tag {
                TAG_STRING => self.string(&mut r, start)?,
                TAG_SAMPLE => out.push(Record::Sample(self.sample(&mut r, start)?)),
                TAG_CALIBRATION => {
                    let trunc = truncated(start, "calibration");
                    let ticks = r.i64().ok_or_else(trunc)?;
                    let before_ns = r.i64().ok_or_else(trunc)?;
                    let after_ns = r.i64().ok_or_else(trunc)?;
                    out.push(Record::Calibration(Bracket {
                        ticks,
                        before_ns,
                        after_ns,
                    }));
                }
                TAG_STREAM_END => {
                    let trunc = truncated(start, "stream end");
                    let at = r.pos;
                    let id = r.u32().ok_or_else(trunc)?;
                    out.push(Record::StreamEnd(self.lookup(id, at)?.to_string()));
                }
                TAG_DEFINE => out.push(Self::define(&mut r, start)?),
                TAG_RELEASE => {
                    let id = r.i64().ok_or_else(truncated(start, "release"))?;
                    out.push(Record::Release(id as u64));
                }
                _ => return Err(BatchError::UnknownTag { offset: start, tag }),
            }
        }
        Ok(())
    }

    fn string(&mut self, r: &mut Reader<'_>, start: usize) -> Result<(), BatchError> {
        let trunc = truncated(start, "string");
        let id_at = r.pos;
        let id = r.u32().ok_or_else(trunc)?;
        let len = r.u32().ok_or_else(trunc)?;
        let text_at = r.pos;
        let raw = r.take(len as usize).ok_or_else(trunc)?;
        if id as usize != self.strings.len() {
            return Err(BatchError::NonDenseStringId {
                offset: id_at,
                id,
                expected: self.strings.len(),
            });
        }
        let text = std::str::from_utf8(raw).map_err(|_| BatchError::BadUtf8 {
            offset: text_at,
            id,
        })?;
        self.strings.push(Arc::from(text));
        Ok(())
    }

    /// Only the record's lengths are checked here; its keys and values when it is defined.
    fn define(r: &mut Reader<'_>, start: usize) -> Result<Record, BatchError> {
        let trunc = truncated(start, "define");
        let id = r.i64().ok_or_else(trunc)? as u64;
        let at = r.pos;
        let len = RawMap::measure(&r.bytes[at..]).ok_or_else(trunc)?;
        r.pos += len;
        Ok(Record::Define {
            id,
            raw: at..at + len,
        })
    }

    fn sample(&self, r: &mut Reader<'_>, start: usize) -> Result<RawSample, BatchError> {
        let trunc = truncated(start, "sample");
        let event_at = r.pos;
        let event = self.lookup(r.u32().ok_or_else(trunc)?, event_at)?;
        let start_ticks = r.i64().ok_or_else(trunc)?;
        let duration_ticks = r.i64().ok_or_else(trunc)?;
        let java_thread_id = r.i64().ok_or_else(trunc)?;
        let name_at = r.pos;
        let thread_name = self.lookup(r.u32().ok_or_else(trunc)?, name_at)?;
        let flags = r.u8().ok_or_else(trunc)?;
        let weight = r.i64().ok_or_else(trunc)?;
        let count = r.u16().ok_or_else(trunc)? as usize;
        if r.remaining() < count * 8 {
            return Err(trunc());
        }
        let mut frames = Vec::with_capacity(count);
        for _ in 0..count {
            let method_at = r.pos;
            let method = r.u32().ok_or_else(trunc)?;
            let line = r.i32().ok_or_else(trunc)?;
            frames.push(Frame {
                method: self.lookup(method, method_at)?,
                line,
            });
        }
        Ok(RawSample {
            event,
            start_ticks,
            duration_ticks,
            thread: ThreadInfo {
                id: u64::try_from(java_thread_id).ok(),
                name: thread_name,
                is_virtual: flags & FLAG_VIRTUAL != 0,
            },
            weight,
            frames,
            truncated: flags & FLAG_TRUNCATED != 0,
            carrier: flags & FLAG_CARRIER != 0,
        })
    }

    fn lookup(&self, id: u32, offset: usize) -> Result<Arc<str>, BatchError> {
        self.strings
            .get(id as usize)
            .cloned()
            .ok_or(BatchError::StringIdOutOfRange {
                offset,
                id,
                known: self.strings.len(),
            })
    }
}

fn truncated(offset: usize, record: &'static str) -> impl Fn() -> BatchError + Copy {
    move || BatchError::Truncated { offset, record }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|s| s.try_into().ok())
    }

    fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|a| a[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.array().map(i32::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }
}

/// Produces the batch format exactly as the bridge does, string interning included; for tests
/// here and elsewhere. Interning persists across [`Encoder::take`], like the bridge's table.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: Vec<u8>,
    ids: HashMap<Arc<str>, u32>,
}

impl Encoder {
    pub fn new() -> Self {
        Encoder::default()
    }

    /// The id of `s`, emitting a string record first if it is new.
    pub fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = u32::try_from(self.ids.len()).unwrap_or(u32::MAX);
        self.ids.insert(Arc::from(s), id);
        let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
        self.buf.push(TAG_STRING);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&len.to_le_bytes());
        self.buf.extend_from_slice(&s.as_bytes()[..len as usize]);
        id
    }

    /// A sample record. A thread without id is written as -1; more than 65535 frames are cut
    /// to 65535 and flagged truncated.
    pub fn sample(&mut self, s: &RawSample) {
        let event = self.string(&s.event);
        let name = self.string(&s.thread.name);
        let frames = &s.frames[..s.frames.len().min(u16::MAX as usize)];
        let methods: Vec<u32> = frames.iter().map(|f| self.string(&f.method)).collect();
        let mut flags = 0;
        if s.thread.is_virtual {
            flags |= FLAG_VIRTUAL;
        }
        if s.truncated || frames.len() < s.frames.len() {
            flags |= FLAG_TRUNCATED;
        }
        if s.carrier {
            flags |= FLAG_CARRIER;
        }
        let tid = s
            .thread
            .id
            .map_or(-1, |id| i64::try_from(id).unwrap_or(i64::MAX));
        self.buf.push(TAG_SAMPLE);
        self.buf.extend_from_slice(&event.to_le_bytes());
        self.buf.extend_from_slice(&s.start_ticks.to_le_bytes());
        self.buf.extend_from_slice(&s.duration_ticks.to_le_bytes());
        self.buf.extend_from_slice(&tid.to_le_bytes());
        self.buf.extend_from_slice(&name.to_le_bytes());
        self.buf.push(flags);
        self.buf.extend_from_slice(&s.weight.to_le_bytes());
        self.buf
            .extend_from_slice(&(frames.len() as u16).to_le_bytes());
        for (f, m) in frames.iter().zip(methods) {
            self.buf.extend_from_slice(&m.to_le_bytes());
            self.buf.extend_from_slice(&f.line.to_le_bytes());
        }
    }

    pub fn calibration(&mut self, b: Bracket) {
        self.buf.push(TAG_CALIBRATION);
        self.buf.extend_from_slice(&b.ticks.to_le_bytes());
        self.buf.extend_from_slice(&b.before_ns.to_le_bytes());
        self.buf.extend_from_slice(&b.after_ns.to_le_bytes());
    }

    /// A stream-end record; empty `message` for a normal end.
    pub fn stream_end(&mut self, message: &str) {
        let id = self.string(message);
        self.buf.push(TAG_STREAM_END);
        self.buf.extend_from_slice(&id.to_le_bytes());
    }

    /// A context definition record, as `BatchEncoder.define` writes it.
    pub fn define(&mut self, id: u64, entries: &[(&str, &str)]) {
        self.buf.push(TAG_DEFINE);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&raw_encode(entries));
    }

    /// A context release record.
    pub fn release(&mut self, id: u64) {
        self.buf.push(TAG_RELEASE);
        self.buf.extend_from_slice(&id.to_le_bytes());
    }

    /// Appends raw bytes (for tests of malformed input).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The batch built so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Returns the batch built so far and starts a new one (the string table is kept).
    pub fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

#[cfg(test)]
mod tests;
