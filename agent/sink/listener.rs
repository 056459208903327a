//! The in-process listener sink: hands samples to `dev.jfrctx.Samples` listeners in the JVM.
//!
//! Pull model, so that the worker never calls into Java: while at least one listener is
//! registered, the facade's `jfrctx-listeners` thread has called `Natives.setListening(true,
//! its thread id)` and loops on `Natives.pollSamples(timeout)`. The worker encodes the samples
//! of each round into one self-contained batch and queues it in the [`Hub`]; `pollSamples`
//! takes the oldest batch (waiting up to the timeout). Samples taken on the listener thread
//! itself are never queued, so a listener's own CPU time cannot feed back into listeners.
//!
//! Listener batch format (little-endian; string ids are dense from 0 and local to the batch):
//!
//! | tag | record | fields |
//! |---|---|---|
//! | 1 | string | `u32 id`, `u32 len`, `len` bytes UTF-8 |
//! | 2 | sample | `u32 event`, `i64 time_ns`, `i64 java_thread_id` (-1: none), `u32 thread_name`, `u8 flags` (bit0 virtual), `u8 kind` (0: context known, 1: unknown), then for kind 0 `u16 n` and `n` × (`u32 key`, `u32 value`), for kind 1 `u32 reason`; then `u16 frames` and per frame `u32 method`, `i32 line` |
//!
//! Everything here is pure Rust (no JNI): `entry.rs` turns `pollSamples` into [`Hub::poll`].

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use super::{Sink, SinkStats};
use crate::core::model::ContextualSample;

pub const TAG_STRING: u8 = 1;
pub const TAG_SAMPLE: u8 = 2;
/// Queued bytes beyond which a new batch is dropped (counted) instead of queued.
pub const MAX_QUEUED_BYTES: usize = 64 << 20;
/// A batch is handed over early when it grows beyond this.
const BATCH_BYTES: usize = 1 << 20;

struct Queue {
    batches: VecDeque<(Vec<u8>, u64)>,
    bytes: usize,
}

/// The hand-over point between the worker and the listener thread.
pub struct Hub {
    listening: AtomicBool,
    /// Java thread id of the listener thread (-1: none).
    listener_thread: AtomicI64,
    /// Whether listening was ever switched on (the summary shows the listener only then).
    used: AtomicBool,
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Samples queued for the listener thread.
    queued: AtomicU64,
    /// Samples the listener thread took.
    delivered: AtomicU64,
    /// Samples not delivered: their batch found the queue full, or listening stopped first.
    dropped: AtomicU64,
    /// Whether the full-queue warning was written.
    warned_full: AtomicBool,
}

/// The process-wide hub used by the agent and the natives.
pub static HUB: Hub = Hub::new();

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub const fn new() -> Hub {
        Hub {
            listening: AtomicBool::new(false),
            listener_thread: AtomicI64::new(-1),
            used: AtomicBool::new(false),
            queue: Mutex::new(Queue {
                batches: VecDeque::new(),
                bytes: 0,
            }),
            ready: Condvar::new(),
            queued: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            warned_full: AtomicBool::new(false),
        }
    }

    /// Switches delivery on (with the listener thread's Java id) or off (queued batches are
    /// discarded and counted as dropped).
    pub fn set_listening(&self, on: bool, listener_thread: i64) {
        let mut q = self.queue.lock();
        self.listener_thread
            .store(if on { listener_thread } else { -1 }, Ordering::Release);
        self.listening.store(on, Ordering::Release);
        if on {
            self.used.store(true, Ordering::Relaxed);
        } else {
            let n: u64 = q.batches.iter().map(|(_, n)| n).sum();
            self.dropped.fetch_add(n, Ordering::Relaxed);
            q.batches.clear();
            q.bytes = 0;
        }
        self.ready.notify_all();
    }

    pub fn listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    pub fn listener_thread(&self) -> i64 {
        self.listener_thread.load(Ordering::Acquire)
    }

    /// Queues one batch of `samples` samples (dropped and counted when the queue is full or
    /// nobody listens).
    pub fn push(&self, batch: Vec<u8>, samples: u64) {
        let mut q = self.queue.lock();
        if !self.listening() {
            self.dropped.fetch_add(samples, Ordering::Relaxed);
            return;
        }
        if q.bytes + batch.len() > MAX_QUEUED_BYTES {
            self.dropped.fetch_add(samples, Ordering::Relaxed);
            if !self.warned_full.swap(true, Ordering::Relaxed) {
                crate::warn!(
                    "the in-process listeners are not keeping up ({} MiB of samples wait for \
                     them; is a listener blocked?): samples for them are dropped and counted \
                     until they catch up",
                    MAX_QUEUED_BYTES >> 20
                );
            }
            return;
        }
        q.bytes += batch.len();
        q.batches.push_back((batch, samples));
        self.queued.fetch_add(samples, Ordering::Relaxed);
        self.ready.notify_all();
    }

    /// The oldest batch, waiting at most `timeout` for one; `None` when none came.
    pub fn poll(&self, timeout: Duration) -> Option<Vec<u8>> {
        let mut q = self.queue.lock();
        // Waits even while delivery is off, so that a poller never spins.
        if q.batches.is_empty() {
            self.ready.wait_for(&mut q, timeout);
        }
        let (batch, samples) = q.batches.pop_front()?;
        q.bytes -= batch.len();
        self.delivered.fetch_add(samples, Ordering::Relaxed);
        Some(batch)
    }

    /// Waits up to `limit` for the listener thread to take every queued batch (only while
    /// listening); returns the samples still queued.
    pub fn wait_taken(&self, limit: Duration) -> u64 {
        let end = std::time::Instant::now() + limit;
        loop {
            let pending = self.pending();
            if pending == 0 || !self.listening() || std::time::Instant::now() >= end {
                return pending;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Samples queued and not yet taken by the listener thread.
    pub fn pending(&self) -> u64 {
        self.queue.lock().batches.iter().map(|(_, n)| n).sum()
    }

    /// For the summary, once listening was used: `listener records=DELIVERED errors=LOST`,
    /// where LOST counts the samples dropped and those still waiting (at exit: never taken,
    /// e.g. because a listener blocked).
    pub fn stats(&self) -> Option<SinkStats> {
        self.used.load(Ordering::Relaxed).then(|| SinkStats {
            name: "listener".into(),
            records: self.delivered.load(Ordering::Relaxed),
            errors: self.dropped.load(Ordering::Relaxed) + self.pending(),
        })
    }
}

/// Encodes samples into listener batches and queues them in a [`Hub`]. Not part of the
/// `SinkSet`: the agent feeds it after the filter, and it does nothing while nobody listens.
pub struct ListenerSink {
    hub: &'static Hub,
    enc: Encoder,
}

impl ListenerSink {
    pub fn new(hub: &'static Hub) -> ListenerSink {
        ListenerSink {
            hub,
            enc: Encoder::default(),
        }
    }

    fn hand_over(&mut self) {
        if self.enc.samples > 0 {
            let (bytes, n) = self.enc.take();
            self.hub.push(bytes, n);
        }
    }
}

impl Sink for ListenerSink {
    fn name(&self) -> &str {
        "listener"
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if !self.hub.listening() {
            self.enc.clear();
            return Ok(());
        }
        let me = self.hub.listener_thread();
        if me >= 0 && s.thread.id == Some(me as u64) {
            return Ok(());
        }
        self.enc.sample(s);
        if self.enc.buf.len() >= BATCH_BYTES {
            self.hand_over();
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over();
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.hand_over();
        Ok(())
    }
}

/// Builds one batch in the listener format.
#[derive(Default)]
pub struct Encoder {
    buf: Vec<u8>,
    strings: HashMap<String, u32>,
    samples: u64,
}

impl Encoder {
    fn clear(&mut self) {
        self.buf.clear();
        self.strings.clear();
        self.samples = 0;
    }

    /// The batch so far and its sample count; the encoder starts a new batch.
    pub fn take(&mut self) -> (Vec<u8>, u64) {
        let out = (std::mem::take(&mut self.buf), self.samples);
        self.clear();
        out
    }

    fn string(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.buf.push(TAG_STRING);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(s.as_bytes());
        self.strings.insert(s.to_string(), id);
        id
    }

    /// Appends one sample (strings first, then the sample record).
    pub fn sample(&mut self, s: &ContextualSample) {
        let event = self.string(&s.event);
        let thread_name = self.string(&s.thread.name);
        let context: Result<Vec<(u32, u32)>, u32> = match &s.context {
            Ok(map) => Ok(map
                .iter()
                .take(u16::MAX as usize)
                .map(|(k, v)| (self.string(k), self.string(v)))
                .collect()),
            Err(reason) => Err(self.string(reason.as_str())),
        };
        let frames: Vec<(u32, i32)> = s
            .frames
            .iter()
            .take(u16::MAX as usize)
            .map(|f| (self.string(&f.method), f.line))
            .collect();
        let b = &mut self.buf;
        b.push(TAG_SAMPLE);
        b.extend_from_slice(&event.to_le_bytes());
        b.extend_from_slice(&s.time_ns.to_le_bytes());
        let tid = s.thread.id.map_or(-1, |t| t as i64);
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(&thread_name.to_le_bytes());
        b.push(u8::from(s.thread.is_virtual));
        match context {
            Ok(entries) => {
                b.push(0);
                b.extend_from_slice(&(entries.len() as u16).to_le_bytes());
                for (k, v) in entries {
                    b.extend_from_slice(&k.to_le_bytes());
                    b.extend_from_slice(&v.to_le_bytes());
                }
            }
            Err(reason) => {
                b.push(1);
                b.extend_from_slice(&reason.to_le_bytes());
            }
        }
        b.extend_from_slice(&(frames.len() as u16).to_le_bytes());
        for (m, line) in frames {
            b.extend_from_slice(&m.to_le_bytes());
            b.extend_from_slice(&line.to_le_bytes());
        }
        self.samples += 1;
    }
}

#[cfg(test)]
mod tests;
