//! Agent lifecycle (Loaded → Running → Stopped), the worker thread and the queues between the
//! JNI entry points and the pure cores. No JNI of its own besides what `stream` does at VMInit
//! and VMDeath.

use crate::core::batch::{Decoder, Record};
use crate::core::clock::Calibrator;
use crate::core::context::registry::{Registration, RingRegistry};
use crate::core::context::repo::Repository;
use crate::core::context::ring::Ring;
use crate::core::filter::Filter;
use crate::core::join::{Decision, Joiner};
use crate::core::model::{ContextualSample, RawSample, UnknownReason};
use crate::jvm::jvmti::Jvmti;
use crate::jvm::stream::{self, NativeFns};
use crate::options::{self, Config};
use crate::runtime::summary::Counters;
use crate::sink::listener::{self, ListenerSink};
use crate::sink::{Sink, SinkSet};
use crate::time::monotonic_ns;
use crossbeam_queue::SegQueue;
use jni::Env;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
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
/// The worker carries on after a panic (logged) this many times; then it stops for good.
const MAX_WORKER_PANICS: u32 = 3;

/// The process-wide agent, created by `Agent_OnLoad`.
struct Agent {
    config: Config,
    state: AtomicU8,
    repo: Mutex<Repository>,
    /// Live rings by thread, shared by every facade copy (registration and release are rare:
    /// once per thread and copy).
    rings: Mutex<RingRegistry>,
    new_rings: SegQueue<Arc<Ring>>,
    released: SegQueue<u64>,
    ended_threads: SegQueue<u64>,
    batches: SegQueue<Vec<u8>>,
    next_handle: AtomicU64,
    threads_registered: AtomicU64,
    core: Mutex<Core>,
    stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The JFR stream was started at VMInit (so VMDeath has one to stop).
    stream_started: AtomicBool,
    /// The `RecordingContextFilter` (the `filter=` option, replaced by `Natives.setFilter`);
    /// `None`: every sample passes.
    filter: Mutex<Option<Arc<Filter>>>,
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
    /// In-process listeners (`dev.jfrctx.Samples`), fed after the filter.
    listener: ListenerSink,
    /// The push sink's figures for the summary (`push=`; the sink itself is in `sinks`).
    push: Option<crate::sink::push::PushHandle>,
    /// How samples are valued: the CPU periods in the summary come from it.
    values: crate::core::value::ValuePlan,
    /// `now` of the last prune of histories and ids (see [`PRUNE_EVERY_NS`]).
    pruned_at: Option<i64>,
    /// Context definitions the repository refused (logged once).
    definition_errors: u64,
}

/// Histories and released ids are pruned at most this often (not every round): pruning visits
/// every thread's history, and with thread-per-request virtual threads that is thousands of
/// them; what a later prune keeps longer only answers more old samples exactly.
const PRUNE_EVERY_NS: i64 = 100_000_000;

static AGENT: OnceLock<Agent> = OnceLock::new();

fn agent() -> Option<&'static Agent> {
    AGENT.get()
}

/// Parses options, checks the JVM version, opens the sinks. Errors are one line, no prefix.
pub fn load(options: &str, jvmti: &Jvmti) -> Result<(), String> {
    install_panic_hook();
    let config = options::parse(options).map_err(|e| e.to_string())?;
    crate::log::set_level(config.log_level);
    if let Some(v) = std::env::var_os("JFRCTX_TEST_PANIC") {
        TEST_PANIC.store(parse_test_panic(&v.to_string_lossy())?, Ordering::Relaxed);
    }
    // During OnLoad only the VM's own properties exist: `java.specification.version` is set
    // later by the class library, `java.vm.specification.version` ("11", "17", ...) is there.
    let version = jvmti
        .system_property("java.vm.specification.version")
        .or_else(|| jvmti.system_property("java.specification.version"));
    if let Some(v) = version {
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
    let mut sinks = SinkSet::open_all(&config.sinks, std::process::id())?;
    let push = match config.push.url.clone() {
        None => None,
        Some(url) => {
            let app = config.push.app.clone().unwrap_or_else(|| {
                let command = jvmti.system_property("sun.java.command");
                crate::sink::push::spec::app_from_command(command.as_deref())
            });
            let env = |var: &str| std::env::var(var).ok();
            let (sink, handle) = crate::sink::push::PushSink::new(
                url,
                app,
                &config.push,
                &config.sink_options,
                &env,
            )?;
            sinks.push(Box::new(sink));
            Some(handle)
        }
    };
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
        listener: ListenerSink::new(&listener::HUB),
        push,
        values: config.sink_options.values.clone(),
        pruned_at: None,
        definition_errors: 0,
    };
    let agent = Agent {
        repo: Mutex::new(Repository::new(config.retention_ns)),
        filter: Mutex::new(config.filter.clone().map(Arc::new)),
        config,
        state: AtomicU8::new(LOADED),
        rings: Mutex::new(RingRegistry::new()),
        new_rings: SegQueue::new(),
        released: SegQueue::new(),
        ended_threads: SegQueue::new(),
        batches: SegQueue::new(),
        next_handle: AtomicU64::new(1),
        threads_registered: AtomicU64::new(0),
        core: Mutex::new(core),
        stop: AtomicBool::new(false),
        worker: Mutex::new(None),
        stream_started: AtomicBool::new(false),
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
    let events = crate::core::events::bridge_config(
        &a.config.events,
        a.config.period_ns,
        a.config.throttle.as_deref(),
        a.config.cpu_sampler,
    );
    if let Err(msg) = stream::start(env, &events, fns) {
        a.core.lock().stream_problem = Some(msg.clone());
        // Nothing to profile: the facade stays a no-op (no rings) and VMDeath stops nothing.
        a.state.store(STOPPED, Ordering::Release);
        return Err(format!(
            "cannot start the JFR stream ({msg}); the application runs without profiling"
        ));
    }
    a.stream_started.store(true, Ordering::Release);
    for w in stream::warnings(env) {
        crate::warn!("{w}");
    }
    let enabled = stream::enabled_events(env);
    crate::info!("recording started ({enabled})");
    a.core.lock().counters.cpu_sampler = crate::core::events::cpu_sampler_in_use(&enabled);
    if let crate::core::events::Latency::Live { interval_ns } = a.config.latency {
        match stream::start_live(env, (interval_ns / 1_000_000).max(1)) {
            Ok(()) => {
                let retention = live_retention(a.config.retention_ns, a.config.retention_set);
                a.core.lock().joiner.set_retention_ns(retention);
                a.repo.lock().set_retention_ns(retention);
                crate::info!(
                    "live mode: forced JFR flush every {} ms, history kept {} ms",
                    interval_ns / 1_000_000,
                    retention / 1_000_000
                )
            }
            Err(msg) => {
                crate::warn!("latency=live unavailable ({msg}); JFR's default latency (~1 s)")
            }
        }
    }
    Ok(())
}

/// History kept in live mode unless `retention=` says otherwise: samples arrive within ~100 ms
/// there, and 2 s still covers JFR's own once-a-second flush should the forced flushes stop
/// (a sample later than that is `history_expired`, never guessed).
pub const LIVE_RETENTION_NS: i64 = 2_000_000_000;

/// The retention to use once live mode runs: the configured one when given, else the shorter
/// of it and [`LIVE_RETENTION_NS`].
pub fn live_retention(configured_ns: i64, explicit: bool) -> i64 {
    if explicit {
        configured_ns
    } else {
        configured_ns.min(LIVE_RETENTION_NS)
    }
}

/// VMDeath: stop the stream, run the last round, finish the sinks, print the summary.
pub fn on_vm_death(env: &mut Env<'_>) -> Result<(), String> {
    let Some(a) = agent() else { return Ok(()) };
    if a.stream_started.load(Ordering::Acquire) {
        if let Some(problem) = stream::stop(env, STOP_TIMEOUT_MS) {
            crate::warn!("stopping the JFR stream: {problem}");
        }
        let (skipped, by_type) = stream::skipped_events(env);
        if skipped > 0 {
            crate::info!("events of other recordings not selected by events=: {by_type}");
        }
        a.core.lock().counters.not_selected = skipped;
    }
    shutdown(a);
    Ok(())
}

/// How long the exit waits for the listener thread to take the last samples.
const LISTENER_EXIT_WAIT: Duration = Duration::from_millis(500);

fn shutdown(a: &Agent) {
    a.state.store(STOPPED, Ordering::Release);
    a.stop.store(true, Ordering::Release);
    if let Some(worker) = a.worker.lock().take() {
        worker.thread().unpark();
        let _ = worker.join();
    }
    let mut core = a.core.lock();
    // Each step is fenced on its own: a panic in one still lets the sinks finish and the summary
    // print (a panic in a `catch_unwind` leaves the mutex unlocked, parking_lot does not poison).
    if catch_unwind(AssertUnwindSafe(|| core.round(a, true))).is_err() {
        crate::error!(
            "internal error in the last round ({}); samples not yet written are lost",
            take_panic()
        );
    }
    if catch_unwind(AssertUnwindSafe(|| core.sinks.finish_all())).is_err() {
        crate::error!("internal error finishing the sinks ({})", take_panic());
    }
    let never_taken = listener::HUB.wait_taken(LISTENER_EXIT_WAIT);
    if never_taken > 0 {
        crate::warn!(
            "{never_taken} samples for the in-process listeners were never taken (a listener \
             is blocked or slow); they count as listener errors"
        );
    }
    let line = catch_unwind(AssertUnwindSafe(|| core.summary_line(a))).unwrap_or_else(|_| {
        format!(
            "jfrctx: error: internal error writing the summary ({})",
            take_panic()
        )
    });
    eprintln!("{line}");
}

fn worker_loop(interval: Duration) {
    let Some(a) = agent() else { return };
    let mut panics = 0;
    // Adaptive pace (`crate::runtime::pace`): shorter sleeps while a ring fills fast, back to `interval`
    // when quiet.
    let configured = i64::try_from(interval.as_nanos()).unwrap_or(i64::MAX);
    let mut sleep = configured;
    let mut last_drain: Option<i64> = None;
    while !a.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(Duration::from_nanos(sleep as u64));
        if a.stop.load(Ordering::Acquire) {
            break;
        }
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut core = a.core.lock();
            core.round(a, false);
            (core.joiner.watermark(), core.joiner.peak_fill())
        }));
        if let Ok((drained_at, fill)) = result {
            let elapsed = match (last_drain, drained_at) {
                (Some(before), Some(now)) => now.saturating_sub(before),
                _ => 0,
            };
            last_drain = drained_at;
            sleep = crate::runtime::pace::next_sleep_ns(configured, sleep, elapsed, fill);
        }
        if result.is_err() {
            // What the round had taken out of the queues may be lost; everything else (rings,
            // histories, pending samples, sinks) is still in place, so the next round goes on.
            panics += 1;
            if panics < MAX_WORKER_PANICS {
                crate::error!(
                    "internal error in the worker ({}); it carries on, samples of that round \
                     may be missing",
                    take_panic()
                );
                continue;
            }
            crate::error!(
                "internal error in the worker ({}), {panics} times; profiling stops, the \
                 application keeps running",
                take_panic()
            );
            a.state.store(STOPPED, Ordering::Release);
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
        for (handle, times) in self.joiner.take_retired() {
            // A virtual thread handed its ring back through the header (no JNI call): one
            // holder gone per hand-back, as `Natives.release`.
            for _ in 0..times {
                if a.rings.lock().release(handle) {
                    self.joiner.release_ring(handle, now);
                }
            }
        }
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
                    Record::Define { id, entries } => {
                        define(a, &mut self.definition_errors, id, entries)
                    }
                    Record::Release(id) => {
                        a.repo.lock().release(id, now);
                    }
                    Record::StreamEnd(msg) => {
                        if !msg.is_empty() {
                            crate::warn!("the JFR stream ended: {msg}");
                            self.stream_problem = Some(msg);
                        }
                    }
                }
            }
        }
        if !last {
            test_panic(PANIC_WORKER);
        }
        if self.pending.len() > MAX_PENDING {
            let excess = self.pending.len() - MAX_PENDING;
            self.pending.drain(..excess);
            self.counters.add_dropped(excess as u64);
        }
        self.join_pending(a, last);
        if last
            || self
                .pruned_at
                .is_none_or(|t| now.saturating_sub(t) >= PRUNE_EVERY_NS)
        {
            self.joiner.prune(now);
            a.repo.lock().collect(now);
            self.pruned_at = Some(now);
        }
        self.sinks.flush_all();
        let _ = self.listener.flush();
    }

    fn join_pending(&mut self, a: &Agent, last: bool) {
        let calibration = self.calibrator.calibration();
        let mut keep = VecDeque::new();
        let repo = a.repo.lock();
        // Read once per round: a filter set now applies to every sample decided from here on.
        let filter = a.filter.lock().clone();
        if last && calibration.is_none() && !self.pending.is_empty() {
            crate::warn!(
                "the JFR clock was never calibrated ({} brackets arrived, {} needed); the last {} \
                 samples are unknown (not_calibrated)",
                self.calibrator.len(),
                crate::core::clock::MIN_BRACKETS,
                self.pending.len()
            );
        }
        while let Some(s) = self.pending.pop_front() {
            let Some(cal) = calibration else {
                if last {
                    let out = contextual(s, 0, 0, Err(UnknownReason::NotCalibrated));
                    self.emit(out, filter.as_deref());
                } else {
                    keep.push_back(s);
                }
                continue;
            };
            let t = cal.to_nanos(s.start_ticks);
            let decision = if crate::core::carrier::in_carrier_transition(&s) {
                Decision::Unknown(UnknownReason::CarrierTransition)
            } else if last {
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
            self.emit(contextual(s, t, d, context), filter.as_deref());
        }
        self.pending = keep;
    }

    fn emit(&mut self, s: ContextualSample, filter: Option<&Filter>) {
        self.counters.add(&s);
        if let (crate::core::value::ValueKind::CpuNanos, ns) = self.values.value(&s) {
            self.counters.add_cpu_period(ns);
        }
        if filter.is_some_and(|f| !f.accepts(&s)) {
            self.counters.filtered += 1;
            return;
        }
        self.sinks.record_all(&s);
        let _ = self.listener.record(&s);
    }

    fn summary_line(&self, a: &Agent) -> String {
        let mut c = self.counters.clone();
        c.contexts = a.repo.lock().interned_total();
        c.threads = a.threads_registered.load(Ordering::Relaxed);
        c.lost_entries = self.joiner.counters().entries_lost;
        c.sinks = self.sinks.stats();
        c.sinks.extend(listener::HUB.stats());
        c.push = self.push.as_ref().map(|p| p.figures());
        c.replaced = self.sinks.replaced();
        c.line()
    }
}

fn contextual(
    s: RawSample,
    time_ns: i64,
    duration_ns: i64,
    context: Result<Arc<crate::core::model::ContextMap>, UnknownReason>,
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

/// A map the facade numbered itself. Bad input or a panic costs that one context (its
/// samples are unknown, `context_released`), logged once; the round goes on.
fn define(a: &Agent, errors: &mut u64, id: u64, entries: Vec<(String, String)>) {
    let defined = catch_unwind(AssertUnwindSafe(|| {
        test_panic(PANIC_DEFINE);
        a.repo.lock().define(id, entries)
    }));
    let problem = match defined {
        Ok(Ok(())) => return,
        Ok(Err(e)) => format!("bad context definition from the facade ({e})"),
        Err(_) => format!("internal error defining a context ({})", take_panic()),
    };
    *errors += 1;
    if *errors == 1 {
        crate::error!(
            "{problem}; samples in that context are reported unknown (context_released), the \
             application carries on (further ones are not logged)"
        );
    }
}

/// `Natives.intern`: one reference on the returned id; drops one per released id.
pub fn intern(entries: Vec<(String, String)>, released: &[i64]) -> Result<u64, String> {
    let Some(a) = agent() else { return Ok(0) };
    if a.state.load(Ordering::Acquire) != RUNNING {
        return Ok(0);
    }
    let interned = catch_unwind(AssertUnwindSafe(|| {
        test_panic(PANIC_INTERN);
        let now = monotonic_ns();
        let mut repo = a.repo.lock();
        for &id in released {
            if id > 0 {
                repo.release(id as u64, now);
            }
        }
        repo.intern(entries)
    }));
    // A panic here must not reach the facade as an exception: it would disable context recording
    // for the rest of the run, and samples would then claim "no context". The context gets an id
    // the repository never hands out instead, so its samples are reported unknown.
    interned.unwrap_or_else(|_| {
        static LOGGED: AtomicBool = AtomicBool::new(false);
        if !LOGGED.swap(true, Ordering::Relaxed) {
            crate::error!(
                "internal error in Natives.intern ({}); samples in that context are reported \
                 unknown (context_released), the application carries on (further ones are not \
                 logged)",
                take_panic()
            );
        }
        Ok(UNINTERNED_CONTEXT)
    })
}

/// The id given to a context whose interning failed: never interned, so `repo.get` finds nothing
/// and its samples are unknown; releasing it is a no-op.
const UNINTERNED_CONTEXT: u64 = i64::MAX as u64;

/// `Natives.register`: the calling thread's ring, allocated on its first registration; a
/// thread registered again (by another copy of the facade, in another class loader) gets the
/// same ring, so that its transitions have one home. None when not running.
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
    let registration = a.rings.lock().register(thread_id as u64, || {
        let handle = a.next_handle.fetch_add(1, Ordering::Relaxed);
        Arc::new(Ring::new(cap, thread_id as u64, handle))
    });
    let ring = registration.ring();
    let mem = (ring.as_ptr(), ring.byte_len());
    if let Registration::New(ring) = registration {
        a.new_rings.push(ring);
        a.threads_registered.fetch_add(1, Ordering::Relaxed);
    }
    Some(mem)
}

/// `Natives.grow`: the sole holder of ring `handle` moves to a ring of `capacity` entries (the
/// worker asked for it, see `join::growth`); None when refused (not running, another facade copy
/// holds the ring too, an unknown handle). The worker drains the old ring one last time when it
/// picks up the new one; the caller writes only to the new one from now on.
pub fn grow(handle: i64, capacity: i32) -> Option<(*mut u8, usize)> {
    let a = agent()?;
    if a.state.load(Ordering::Acquire) != RUNNING || handle <= 0 || capacity <= 0 {
        return None;
    }
    let cap = (capacity as usize).min(crate::core::context::ring::MAX_GROWN_CAPACITY);
    let ring = a.rings.lock().grow(handle as u64, |tid| {
        Arc::new(Ring::new(cap, tid, handle as u64))
    })?;
    let mem = (ring.as_ptr(), ring.byte_len());
    a.new_rings.push(ring);
    Some(mem)
}

/// `Natives.release`: one holder of the ring (a facade copy's writer) is gone; the worker
/// drains and frees the ring when it was the last.
pub fn release(handle: i64) {
    if let Some(a) = agent() {
        if handle > 0 && a.rings.lock().release(handle as u64) {
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
        if thread_id >= 0 && a.rings.lock().thread_ended(thread_id as u64) {
            a.ended_threads.push(thread_id as u64);
        }
    }
}

/// `Natives.deliver`: one encoded batch from the stream bridge.
pub fn deliver(bytes: Vec<u8>) {
    if let Some(a) = agent() {
        // Stopped (after the worker gave up): nobody would ever take the batch off the queue.
        if a.state.load(Ordering::Acquire) == STOPPED {
            return;
        }
        test_panic(PANIC_DELIVER);
        a.batches.push(bytes);
    }
}

/// `Natives.setFilter`: replaces the filter (`None` or a blank spec: no filter). Samples decided
/// from the next worker round on obey it. The error is one line.
pub fn set_filter(spec: Option<&str>) -> Result<(), String> {
    let filter = Filter::parse(spec.unwrap_or(""))?;
    if let Some(a) = agent() {
        match &filter {
            Some(f) => crate::info!("filter set: {f}"),
            None => crate::info!("filter removed"),
        }
        *a.filter.lock() = filter.map(Arc::new);
    }
    Ok(())
}

/// `Natives.setListening`: switches delivery to in-process listeners on or off.
pub fn set_listening(on: bool, listener_thread: i64) {
    let on = on && agent().is_some_and(|a| a.state.load(Ordering::Acquire) == RUNNING);
    listener::HUB.set_listening(on, listener_thread);
}

/// `Natives.pollSamples`: the next listener batch, waiting at most `timeout`.
pub fn poll_samples(timeout: Duration) -> Option<Vec<u8>> {
    listener::HUB.poll(timeout)
}

// ---- panics ------------------------------------------------------------------------------------

thread_local! {
    /// Message and location of the last panic on this thread, set by the panic hook.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replaces std's multi-line panic report by a note kept for the catch site, which logs it on
/// its one `jfrctx:` line (every agent entry point and thread catches panics). The hook belongs
/// to this library's own copy of std, so other native code in the process is not affected.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let _ = LAST_PANIC.try_with(|p| *p.borrow_mut() = Some(format!("panic{at}: {msg}")));
    }));
}

/// The last panic on this thread (see [`install_panic_hook`]), for a catch site's log line.
pub fn take_panic() -> String {
    LAST_PANIC
        .try_with(|p| p.borrow_mut().take())
        .ok()
        .flatten()
        .unwrap_or_else(|| "panic".into())
}

// ---- test hook -----------------------------------------------------------------------------------
//
// `JFRCTX_TEST_PANIC=intern|deliver|worker|define` (several: comma-separated), read once by `load`,
// is a hook for the fault tests (tests/faults.rs) and nothing else: the named path panics once —
// `intern` in `Natives.intern`, `deliver` in `Natives.deliver`, `worker` in a worker round,
// `define` where the worker records a map the facade numbered itself — so
// that the tests can check the JVM survives a panic there. Unset, it costs one relaxed load on
// those paths.

const PANIC_INTERN: u8 = 1;
const PANIC_DELIVER: u8 = 2;
const PANIC_WORKER: u8 = 4;
const PANIC_DEFINE: u8 = 8;
const PANIC_POINTS: [(&str, u8); 4] = [
    ("intern", PANIC_INTERN),
    ("deliver", PANIC_DELIVER),
    ("worker", PANIC_WORKER),
    ("define", PANIC_DEFINE),
];

/// The panic points still armed.
static TEST_PANIC: AtomicU8 = AtomicU8::new(0);

fn parse_test_panic(value: &str) -> Result<u8, String> {
    let mut bits = 0;
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let Some((_, bit)) = PANIC_POINTS.iter().find(|(n, _)| *n == item) else {
            return Err(format!(
                "JFRCTX_TEST_PANIC: unknown point '{item}' (known: intern, deliver, worker, define)"
            ));
        };
        bits |= bit;
    }
    Ok(bits)
}

/// Panics once if the test hook armed `point`.
fn test_panic(point: u8) {
    if TEST_PANIC.load(Ordering::Relaxed) & point != 0
        && TEST_PANIC.fetch_and(!point, Ordering::AcqRel) & point != 0
    {
        // Literal messages: a `&'static str` payload is what every catch site can print.
        match point {
            PANIC_INTERN => panic!("JFRCTX_TEST_PANIC=intern"),
            PANIC_DELIVER => panic!("JFRCTX_TEST_PANIC=deliver"),
            PANIC_DEFINE => panic!("JFRCTX_TEST_PANIC=define"),
            _ => panic!("JFRCTX_TEST_PANIC=worker"),
        }
    }
}

#[cfg(test)]
mod live_retention_tests {
    use super::*;

    #[test]
    fn live_mode_shortens_only_an_unset_retention() {
        assert_eq!(live_retention(5_000_000_000, false), LIVE_RETENTION_NS);
        assert_eq!(live_retention(5_000_000_000, true), 5_000_000_000);
        assert_eq!(live_retention(1_500_000_000, false), 1_500_000_000);
    }
}

#[cfg(test)]
mod fault_hook_tests {
    use super::*;

    #[test]
    fn test_panic_points_parse() {
        assert_eq!(parse_test_panic(""), Ok(0));
        assert_eq!(parse_test_panic("worker"), Ok(PANIC_WORKER));
        assert_eq!(
            parse_test_panic("intern, deliver"),
            Ok(PANIC_INTERN | PANIC_DELIVER)
        );
        assert!(parse_test_panic("everywhere")
            .unwrap_err()
            .contains("everywhere"));
    }

    #[test]
    fn an_armed_point_panics_once_with_its_name() {
        TEST_PANIC.fetch_or(PANIC_DELIVER, Ordering::AcqRel);
        let first = std::panic::catch_unwind(|| test_panic(PANIC_DELIVER));
        let msg = first.unwrap_err();
        assert_eq!(
            msg.downcast_ref::<&str>().copied(),
            Some("JFRCTX_TEST_PANIC=deliver")
        );
        test_panic(PANIC_DELIVER);
        test_panic(PANIC_WORKER);
    }
}
