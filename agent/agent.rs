//! Agent lifecycle (Loaded → Running → Stopped), the worker thread and the queues between the
//! JNI entry points and the pure cores. No JNI of its own besides what `stream` does at VMInit
//! and VMDeath.

use crate::batch::{Decoder, Record};
use crate::clock::Calibrator;
use crate::config::{self, Config};
use crate::context::repo::Repository;
use crate::context::ring::Ring;
use crate::join::{Decision, Joiner};
use crate::jvmti::Jvmti;
use crate::model::{ContextualSample, RawSample, UnknownReason};
use crate::sink::SinkSet;
use crate::stream::{self, NativeFns};
use crate::summary::Counters;
use crossbeam_queue::SegQueue;
use jni::Env;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

const LOADED: u8 = 0;
const RUNNING: u8 = 1;
const STOPPED: u8 = 2;
/// Samples waiting for their join (deferred or uncalibrated) beyond this are dropped, counted.
const MAX_PENDING: usize = 1 << 20;
/// A transition is published at most this long after its timestamp is read (see join.rs).
const SAFETY_NS: i64 = 1_000_000;
/// How long VMDeath waits for the stream's last flush.
const STOP_TIMEOUT_MS: i64 = 5_000;

/// The process-wide agent, created by `Agent_OnLoad`.
struct Agent {
    config: Config,
    state: AtomicU8,
    repo: Mutex<Repository>,
    new_rings: SegQueue<Arc<Ring>>,
    released: SegQueue<u64>,
    ended_threads: SegQueue<u64>,
    batches: SegQueue<Vec<u8>>,
    next_handle: AtomicU64,
    threads_registered: AtomicU64,
    core: Mutex<Core>,
    stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
}

/// State owned by whoever runs a round: the worker, or VMDeath for the last one.
struct Core {
    joiner: Joiner,
    decoder: Decoder,
    calibrator: Calibrator,
    pending: VecDeque<RawSample>,
    records: Vec<Record>,
    sinks: SinkSet,
    counters: Counters,
    stream_problem: Option<String>,
    batch_errors: u64,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

fn agent() -> Option<&'static Agent> {
    AGENT.get()
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock behind `System.nanoTime()` on Linux.
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Parses options, checks the JVM version, opens the sinks. Errors are one line, no prefix.
pub fn load(options: &str, jvmti: &Jvmti) -> Result<(), String> {
    let config = config::parse(options).map_err(|e| e.to_string())?;
    crate::log::set_level(config.log_level);
    if let Some(v) = jvmti.system_property("java.specification.version") {
        let major: u32 = v
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major < 17 {
            return Err(format!(
                "this JVM is Java {v}; jfrctx needs Java 17 or newer"
            ));
        }
    }
    let sinks = SinkSet::open_all(&config.sinks, std::process::id())?;
    let core = Core {
        joiner: Joiner::new(config.retention_ns, SAFETY_NS),
        decoder: Decoder::new(),
        calibrator: Calibrator::new(),
        pending: VecDeque::new(),
        records: Vec::new(),
        sinks,
        counters: Counters::default(),
        stream_problem: None,
        batch_errors: 0,
    };
    let agent = Agent {
        repo: Mutex::new(Repository::new(config.retention_ns)),
        config,
        state: AtomicU8::new(LOADED),
        new_rings: SegQueue::new(),
        released: SegQueue::new(),
        ended_threads: SegQueue::new(),
        batches: SegQueue::new(),
        next_handle: AtomicU64::new(1),
        threads_registered: AtomicU64::new(0),
        core: Mutex::new(core),
        stop: AtomicBool::new(false),
        worker: Mutex::new(None),
    };
    AGENT
        .set(agent)
        .map_err(|_| "the agent is loaded twice".to_string())
}

/// VMInit: start the worker, then the JFR stream.
pub fn on_vm_init(env: &mut Env<'_>, fns: &NativeFns) -> Result<(), String> {
    let Some(a) = agent() else { return Ok(()) };
    a.state.store(RUNNING, Ordering::Release);
    let interval = Duration::from_nanos(a.config.drain_interval_ns as u64);
    let handle = std::thread::Builder::new()
        .name("jfrctx-worker".into())
        .spawn(move || worker_loop(interval))
        .map_err(|e| format!("cannot start the worker thread: {e}"))?;
    *a.worker.lock() = Some(handle);
    let events = stream::event_config(a.config.period_ns);
    if let Err(msg) = stream::start(env, &events, fns) {
        a.core.lock().stream_problem = Some(msg.clone());
        return Err(format!(
            "cannot start the JFR stream ({msg}); the application runs without profiling"
        ));
    }
    crate::info!("recording started ({})", events.trim());
    Ok(())
}

/// VMDeath: stop the stream, run the last round, finish the sinks, print the summary.
pub fn on_vm_death(env: &mut Env<'_>) -> Result<(), String> {
    let Some(a) = agent() else { return Ok(()) };
    if let Some(problem) = stream::stop(env, STOP_TIMEOUT_MS) {
        crate::warn!("stopping the JFR stream: {problem}");
    }
    shutdown(a);
    Ok(())
}

fn shutdown(a: &Agent) {
    a.state.store(STOPPED, Ordering::Release);
    a.stop.store(true, Ordering::Release);
    if let Some(worker) = a.worker.lock().take() {
        worker.thread().unpark();
        let _ = worker.join();
    }
    let mut core = a.core.lock();
    core.round(a, true);
    core.sinks.finish_all();
    let line = core.summary_line(a);
    eprintln!("{line}");
}

fn worker_loop(interval: Duration) {
    let Some(a) = agent() else { return };
    while !a.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(interval);
        if a.stop.load(Ordering::Acquire) {
            break;
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.core.lock().round(a, false);
        }));
        if result.is_err() {
            crate::error!("internal error in the worker; samples from now on are not joined");
            break;
        }
    }
}

impl Core {
    /// One round: drain rings, decode batches, join what is decidable, write to sinks.
    fn round(&mut self, a: &Agent, last: bool) {
        let now = monotonic_ns();
        while let Some(ring) = a.new_rings.pop() {
            self.joiner.add_ring(ring);
        }
        while let Some(handle) = a.released.pop() {
            self.joiner.release_ring(handle, now);
        }
        while let Some(tid) = a.ended_threads.pop() {
            self.joiner.release_thread(tid, now);
        }
        self.joiner.drain(now);
        while let Some(bytes) = a.batches.pop() {
            self.records.clear();
            if let Err(e) = self.decoder.decode(&bytes, &mut self.records) {
                self.batch_errors += 1;
                if self.batch_errors == 1 {
                    crate::error!("bad batch from the stream bridge: {e}");
                }
            }
            for record in self.records.drain(..) {
                match record {
                    Record::Sample(s) => self.pending.push_back(s),
                    Record::Calibration(b) => self.calibrator.add(b),
                    Record::StreamEnd(msg) => {
                        if !msg.is_empty() {
                            crate::warn!("the JFR stream ended: {msg}");
                            self.stream_problem = Some(msg);
                        }
                    }
                }
            }
        }
        if self.pending.len() > MAX_PENDING {
            let excess = self.pending.len() - MAX_PENDING;
            self.pending.drain(..excess);
            self.counters.add_dropped(excess as u64);
        }
        self.join_pending(a, last);
        self.joiner.prune(now);
        a.repo.lock().collect(now);
        self.sinks.flush_all();
    }

    fn join_pending(&mut self, a: &Agent, last: bool) {
        let calibration = self.calibrator.calibration();
        let mut keep = VecDeque::new();
        let repo = a.repo.lock();
        while let Some(s) = self.pending.pop_front() {
            let Some(cal) = calibration else {
                if last {
                    let out = contextual(s, 0, 0, Err(UnknownReason::NotCalibrated));
                    self.emit(out);
                } else {
                    keep.push_back(s);
                }
                continue;
            };
            let t = cal.to_nanos(s.start_ticks);
            let decision = if last {
                self.joiner.decide_final(s.thread.id, t)
            } else {
                self.joiner.decide(s.thread.id, t)
            };
            let context = match decision {
                Decision::Defer => {
                    keep.push_back(s);
                    continue;
                }
                Decision::Unknown(r) => Err(r),
                Decision::Context(id) => repo.get(id).ok_or(UnknownReason::ContextReleased),
            };
            let d = cal.duration_to_nanos(s.duration_ticks);
            self.emit(contextual(s, t, d, context));
        }
        self.pending = keep;
    }

    fn emit(&mut self, s: ContextualSample) {
        self.counters.add(&s);
        self.sinks.record_all(&s);
    }

    fn summary_line(&self, a: &Agent) -> String {
        let mut c = self.counters.clone();
        c.contexts = a.repo.lock().interned_total();
        c.threads = a.threads_registered.load(Ordering::Relaxed);
        c.lost_entries = self.joiner.counters().entries_lost;
        c.sinks = self.sinks.stats();
        c.line()
    }
}

fn contextual(
    s: RawSample,
    time_ns: i64,
    duration_ns: i64,
    context: Result<Arc<crate::model::ContextMap>, UnknownReason>,
) -> ContextualSample {
    ContextualSample {
        event: s.event,
        time_ns,
        duration_ns,
        thread: s.thread,
        context,
        weight: s.weight,
        frames: s.frames,
        truncated: s.truncated,
    }
}

/// `Natives.intern`: one reference on the returned id; drops one per released id.
pub fn intern(entries: Vec<(String, String)>, released: &[i64]) -> Result<u64, String> {
    let Some(a) = agent() else { return Ok(0) };
    if a.state.load(Ordering::Acquire) != RUNNING {
        return Ok(0);
    }
    let now = monotonic_ns();
    let mut repo = a.repo.lock();
    for &id in released {
        if id > 0 {
            repo.release(id as u64, now);
        }
    }
    repo.intern(entries)
}

/// `Natives.register`: allocates the calling thread's ring; None when not running.
pub fn register(thread_id: i64, capacity: i32) -> Option<(*mut u8, usize)> {
    let a = agent()?;
    if a.state.load(Ordering::Acquire) != RUNNING || thread_id < 0 {
        return None;
    }
    let cap = if capacity > 0 {
        capacity as usize
    } else {
        a.config.ring_capacity
    };
    let handle = a.next_handle.fetch_add(1, Ordering::Relaxed);
    let ring = Arc::new(Ring::new(cap, thread_id as u64, handle));
    let mem = (ring.as_ptr(), ring.byte_len());
    a.new_rings.push(ring);
    a.threads_registered.fetch_add(1, Ordering::Relaxed);
    Some(mem)
}

/// `Natives.release`: the ring's owner is gone.
pub fn release(handle: i64) {
    if let Some(a) = agent() {
        if handle > 0 {
            a.released.push(handle as u64);
        }
    }
}

/// Whether ThreadEnd events are worth a JNI call: only while running and once some thread has
/// registered a ring.
pub fn wants_thread_end() -> bool {
    agent().is_some_and(|a| {
        a.state.load(Ordering::Acquire) == RUNNING
            && a.threads_registered.load(Ordering::Relaxed) > 0
    })
}

/// JVMTI ThreadEnd: the platform thread `thread_id` is gone; its ring (if any) is released.
pub fn thread_ended(thread_id: i64) {
    if let Some(a) = agent() {
        if thread_id >= 0 {
            a.ended_threads.push(thread_id as u64);
        }
    }
}

/// `Natives.deliver`: one encoded batch from the stream bridge.
pub fn deliver(bytes: Vec<u8>) {
    if let Some(a) = agent() {
        a.batches.push(bytes);
    }
}
