//! The agent's life: `load` (Agent_OnLoad: options, JVM check, sinks), VMInit (worker thread,
//! JFR stream), VMDeath (last round, sinks finished, summary). States Loaded → Running →
//! Stopped; the process-wide [`Agent`] holds the queues between the JNI entry points
//! (`natives`) and the worker (`worker`). No JNI of its own besides what `jvm::stream` does at
//! VMInit and VMDeath.

use crate::core::context::registry::RingRegistry;
use crate::core::context::repo::Repository;
use crate::core::context::ring::Blocks;
use crate::jvm::jvmti::Jvmti;
use crate::jvm::stream::{self, NativeFns};
use crate::options;
use crate::runtime::error::AgentError;
use crate::runtime::faults::{install_panic_hook, parse_test_panic, take_panic, TEST_PANIC};
use crate::runtime::pace;
use crate::runtime::state::{Shared, KEEP_BLOCKS, KEEP_SPARE_BLOCKS, LOADED, RUNNING, STOPPED};
use crate::runtime::worker::Core;
use crate::sink::listener;
use crate::sink::SinkSet;
use crossbeam_queue::SegQueue;
use jni::Env;
use parking_lot::Mutex;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

/// A transition is published at most this long after its timestamp is read (see join.rs).
const SAFETY_NS: i64 = 1_000_000;
/// How long VMDeath waits for the stream's last flush.
const STOP_TIMEOUT_MS: i64 = 5_000;
/// The worker carries on after a panic (logged) this many times; then it stops for good.
pub(super) const MAX_WORKER_PANICS: u32 = 3;

/// The process-wide agent, created by `Agent_OnLoad`: what the entry points and the worker
/// share, the worker's round state and the worker thread.
pub(super) struct Agent {
    shared: Shared,
    core: Mutex<Core>,
    stop: AtomicBool,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The worker's thread, for `Natives.wake` (set once it is spawned).
    worker_thread: OnceLock<Thread>,
    /// The JFR stream was started at VMInit (so VMDeath has one to stop).
    stream_started: AtomicBool,
}

/// Field access reads through to the shared part (`a.repo`, `a.rings`, ...).
impl std::ops::Deref for Agent {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// Non-zero while the worker sleeps longer than `drain` (its idle stretch,
/// `crate::runtime::pace`). Every thread reads it at the half laps of its ring (the facade's
/// `WorkerWake`, through `Natives.wakeWord`: hence a static, whose address never changes) and
/// calls `Natives.wake` when it is set.
pub(super) static LONG_SLEEP: AtomicU64 = AtomicU64::new(0);

impl Agent {
    /// Clears [`LONG_SLEEP`] and, when it was set, ends the worker's sleep now (its next round
    /// starts at once): the first of the threads that saw the word makes the call count.
    pub(super) fn wake_worker(&self) {
        if LONG_SLEEP.swap(0, Ordering::SeqCst) != 0 {
            if let Some(t) = self.worker_thread.get() {
                t.unpark();
            }
        }
    }
}

pub(super) fn agent() -> Option<&'static Agent> {
    AGENT.get()
}

/// Parses options, checks the JVM version, opens the sinks. Errors are one line, no prefix.
pub fn load(options: &str, jvmti: &Jvmti) -> Result<(), AgentError> {
    install_panic_hook();
    let config = options::parse(options)?;
    crate::log::set_level(config.log_level);
    if let Some(v) = std::env::var_os("JFRCTX_TEST_PANIC") {
        let points = parse_test_panic(&v.to_string_lossy()).map_err(AgentError::TestHook)?;
        TEST_PANIC.store(points, Ordering::Relaxed);
    }
    if std::env::var_os("JFRCTX_TEST_RING_GUARD").is_some() {
        crate::core::context::ring::guard_freed_rings(crate::runtime::faults::guard_ring);
    }
    crate::core::context::ring::use_page_source(crate::runtime::pages::SOURCE);
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
            return Err(AgentError::OldJava(v));
        }
    }
    let mut sinks =
        SinkSet::open_all(&config.sinks, std::process::id()).map_err(AgentError::Sink)?;
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
            )
            .map_err(AgentError::Sink)?;
            sinks.push(Box::new(sink));
            Some(handle)
        }
    };
    let core = Core::new(&config, sinks, push, SAFETY_NS);
    let blocks = Blocks::new(config.ring_capacity, KEEP_BLOCKS);
    let spare_blocks = if config.spare_ring_capacity() == blocks.capacity() {
        Arc::clone(&blocks)
    } else {
        Blocks::new(config.spare_ring_capacity(), KEEP_SPARE_BLOCKS)
    };
    let agent = Agent {
        shared: Shared {
            repo: Mutex::new(Repository::new(config.retention_ns)),
            filter: Mutex::new(config.filter.clone().map(Arc::new)),
            config,
            state: AtomicU8::new(LOADED),
            rings: Mutex::new(RingRegistry::new()),
            ring_events: SegQueue::new(),
            blocks,
            spare_blocks,
            spares_made: AtomicU64::new(0),
            spares_wanted: AtomicBool::new(false),
            batches: SegQueue::new(),
            next_handle: AtomicU64::new(1),
            threads_registered: AtomicU64::new(0),
        },
        core: Mutex::new(core),
        stop: AtomicBool::new(false),
        worker: Mutex::new(None),
        worker_thread: OnceLock::new(),
        stream_started: AtomicBool::new(false),
    };
    AGENT.set(agent).map_err(|_| AgentError::LoadedTwice)
}

/// VMInit: start the worker, then the JFR stream.
pub fn on_vm_init(env: &mut Env<'_>, fns: &NativeFns) -> Result<(), AgentError> {
    let Some(a) = agent() else { return Ok(()) };
    a.state.store(RUNNING, Ordering::Release);
    let interval = Duration::from_nanos(a.config.drain_interval_ns as u64);
    let handle = std::thread::Builder::new()
        .name("jfrctx-worker".into())
        .spawn(move || worker_loop(interval))
        .map_err(AgentError::Worker)?;
    let _ = a.worker_thread.set(handle.thread().clone());
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
        return Err(AgentError::Stream(msg));
    }
    a.stream_started.store(true, Ordering::Release);
    for w in stream::warnings(env) {
        crate::warn!("{w}");
    }
    let enabled = stream::enabled_events(env);
    crate::info!("recording started ({enabled})");
    a.core.lock().out.counters.cpu_sampler = crate::core::events::cpu_sampler_in_use(&enabled);
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
        a.core.lock().out.counters.not_selected = skipped;
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
    if catch_unwind(AssertUnwindSafe(|| core.out.sinks.finish_all())).is_err() {
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
    // Adaptive pace (`crate::runtime::pace`): shorter sleeps while a ring fills fast, back to
    // `interval` when quiet, longer while idle (not in live mode, whose rounds follow its flushes).
    let configured = i64::try_from(interval.as_nanos()).unwrap_or(i64::MAX);
    let idle_max = match a.config.latency {
        crate::core::events::Latency::Live { .. } => configured,
        _ => pace::idle_max_ns(configured),
    };
    let mut sleep = configured;
    let mut last_drain: Option<i64> = None;
    let mut told_rounds = 0u32;
    // The sleeps before the idle rounds in a row so far (`pace::long_sleep`'s `settled`).
    let mut idle_ns = 0i64;
    // The word as the worker left it after its last round (a thread's wake clears it since).
    let mut left_told = false;
    while !a.stop.load(Ordering::Acquire) {
        std::thread::park_timeout(Duration::from_nanos(sleep as u64));
        if a.stop.load(Ordering::Acquire) {
            break;
        }
        let told = LONG_SLEEP.load(Ordering::Acquire) != 0;
        told_rounds = if told {
            told_rounds.saturating_add(1)
        } else {
            0
        };
        let result = catch_unwind(AssertUnwindSafe(|| {
            let mut core = a.core.lock();
            // While the word is set, this round's drain tells every ring (`pace::long_sleep`).
            core.joiner.set_wake_hint(told);
            core.round(a, false);
            (core.joiner.watermark(), core.joiner.peak_fill(), core.idle)
        }));
        if let Ok((drained_at, fill, idle)) = result {
            let elapsed = match (last_drain, drained_at) {
                (Some(before), Some(now)) => now.saturating_sub(before),
                _ => 0,
            };
            last_drain = drained_at;
            let told_now = LONG_SLEEP.load(Ordering::Acquire) != 0;
            let woken = left_told && !told_now;
            idle_ns = if idle {
                idle_ns.saturating_add(sleep)
            } else {
                0
            };
            let settled = idle_ns >= idle_max;
            let can_stretch = idle_max > configured;
            let (how, word) =
                pace::long_sleep(can_stretch, idle, settled, told_rounds, told_now, woken);
            left_told = match word {
                pace::Word::Set => {
                    LONG_SLEEP.store(1, Ordering::SeqCst);
                    true
                }
                pace::Word::Clear => {
                    LONG_SLEEP.store(0, Ordering::SeqCst);
                    false
                }
                pace::Word::Keep => told_now,
            };
            sleep = pace::next_round_sleep_ns(configured, idle_max, sleep, elapsed, fill, how);
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
