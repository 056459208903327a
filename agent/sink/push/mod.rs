//! Push sink (`push=URL`): every `interval` (default 10 s) the samples of the interval are
//! encoded as a gzipped pprof profile by [`PprofSink`] (through its public API: one
//! `PprofSink` per interval) and POSTed to a Pyroscope-compatible `URL/ingest` (see
//! [`spec::ingest_target`], [`http::post`]), context keys as pprof labels.
//!
//! The worker only encodes and queues; the thread `jfrctx-push` (started with the first
//! profile) sends. The queue holds at most [`policy::QUEUE_CAPACITY`] profiles (a new one drops
//! the oldest); a failing profile is retried with backoff ([`policy::deliver`]) and then
//! dropped. The first fault is logged (one warning), later ones only counted: the summary shows
//! `push URL profiles=N pushed=N retried=N dropped=N`, with `profiles = pushed + dropped`. At
//! exit the last profile is queued and [`Sink::finish`] waits at most [`EXIT_BOUND`] (plus a
//! little) for the thread to send what is queued; what is left then is dropped (counted) and the
//! thread, whose sockets time out by the same deadline, is not waited for.

pub mod http;
pub mod policy;
pub mod spec;

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use parking_lot::{Condvar, Mutex};
use prost::Message;

use super::pprof::PprofSink;
use super::{now_ns, Labeler, Policy, Rotation, Sink, SinkOptions};
use crate::model::{ContextMap, ContextualSample};
use crate::summary::PushFigures;
use policy::{Attempts, Bounded, Outcome};
use spec::Url;

/// How long `finish` waits at exit for the queued profiles to be sent.
pub const EXIT_BOUND: Duration = Duration::from_secs(2);
/// Extra wait past the deadline for the thread to report (its sockets give up by the deadline).
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// One encoded profile waiting to be sent.
struct Job {
    /// The request target (`/ingest?...`).
    target: String,
    /// Gzipped pprof.
    body: Vec<u8>,
}

/// What the worker and the push thread share, under one lock.
struct State {
    queue: Bounded<Job>,
    in_flight: bool,
    /// Set by `finish`: no more profiles; the thread ends when the queue is empty.
    closed: bool,
    /// The exit deadline, set by `finish`.
    deadline: Option<Instant>,
    /// `finish` stopped waiting: the thread reports nothing more.
    abandoned: bool,
    /// The thread has ended.
    done: bool,
    figures: PushFigures,
    /// The first fault was logged.
    logged: bool,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on a new job, on close, and when the thread ends.
    wake: Condvar,
    url: Url,
}

impl Shared {
    /// Logs the first fault only.
    fn fault(&self, state: &mut State, message: &str) {
        if !state.logged {
            state.logged = true;
            crate::warn!(
                "push to {} failed: {message}; retrying with backoff, further failures are only \
                 counted (exit summary)",
                self.url
            );
        }
    }
}

pub struct PushSink {
    name: String,
    /// Aggregates the current interval (no cardinality of its own: applied here).
    pprof: PprofSink,
    /// The options the per-interval `PprofSink`s get.
    pprof_options: SinkOptions,
    labeler: Option<Labeler>,
    rotation: Rotation,
    app: String,
    labels: Vec<(String, String)>,
    sample_rate: i64,
    samples: u64,
    shared: Arc<Shared>,
    thread_started: bool,
    finished: bool,
}

/// The summary figures of a push sink, readable after the sink moved into the `SinkSet`.
#[derive(Clone)]
pub struct PushHandle(Arc<Shared>);

impl PushHandle {
    pub fn figures(&self) -> PushFigures {
        self.0.state.lock().figures.clone()
    }
}

impl PushSink {
    /// A sink pushing to `url` as `app` with static `labels`; `options.interval_ns` is the push
    /// period (default [`spec::DEFAULT_INTERVAL_NS`]). Touches no network until the first push.
    pub fn new(
        url: Url,
        app: String,
        labels: Vec<(String, String)>,
        options: &SinkOptions,
    ) -> (PushSink, PushHandle) {
        let now = now_ns();
        let interval = options.interval_ns.unwrap_or(spec::DEFAULT_INTERVAL_NS);
        let pprof_options = SinkOptions {
            interval_ns: None,
            cardinality: Vec::new(),
            ..options.clone()
        };
        let rules = options.cardinality.iter().any(|(_, p)| *p != Policy::Keep);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Bounded::new(policy::QUEUE_CAPACITY),
                in_flight: false,
                closed: false,
                deadline: None,
                abandoned: false,
                done: false,
                figures: PushFigures {
                    target: url.to_string(),
                    ..PushFigures::default()
                },
                logged: false,
            }),
            wake: Condvar::new(),
            url,
        });
        let sink = PushSink {
            name: format!("push:{}", shared.url),
            pprof: PprofSink::new(Path::new("push"), &pprof_options, now),
            pprof_options,
            labeler: rules.then(|| Labeler::new(&options.cardinality)),
            rotation: Rotation::new(Some(interval), now),
            app,
            labels,
            sample_rate: spec::sample_rate(options.period_ns),
            samples: 0,
            shared: Arc::clone(&shared),
            thread_started: false,
            finished: false,
        };
        (sink, PushHandle(shared))
    }

    /// Ends the current interval at `now_ns`: its profile (when it holds samples) is queued.
    fn cut(&mut self, now_ns: i64) -> io::Result<()> {
        let fresh = PprofSink::new(Path::new("push"), &self.pprof_options, now_ns);
        let done = std::mem::replace(&mut self.pprof, fresh);
        if std::mem::take(&mut self.samples) == 0 {
            return Ok(());
        }
        let profile = done.profile(now_ns);
        let from_s = profile.time_nanos.div_euclid(1_000_000_000);
        let until_s = (profile.time_nanos.saturating_add(profile.duration_nanos) + 999_999_999)
            / 1_000_000_000;
        let mut gz = GzEncoder::new(Vec::new(), Compression::default());
        gz.write_all(&profile.encode_to_vec())?;
        let job = Job {
            target: spec::ingest_target(
                &self.shared.url,
                &self.app,
                &self.labels,
                from_s,
                until_s,
                self.sample_rate,
            ),
            body: gz.finish()?,
        };
        self.enqueue(job);
        Ok(())
    }

    fn enqueue(&mut self, job: Job) {
        let mut st = self.shared.state.lock();
        st.figures.profiles += 1;
        if st.queue.push(job).is_some() {
            st.figures.dropped += 1;
            self.shared.fault(
                &mut st,
                "the queue is full (the endpoint is too slow or down)",
            );
        }
        drop(st);
        self.shared.wake.notify_all();
        if !self.thread_started {
            self.thread_started = true;
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("jfrctx-push".into())
                .spawn(move || run(&shared));
            if let Err(e) = spawned {
                let mut st = self.shared.state.lock();
                st.done = true;
                st.abandoned = true;
                st.figures.dropped += st.queue.clear() as u64;
                self.shared
                    .fault(&mut st, &format!("cannot start the push thread: {e}"));
            }
        }
    }

    /// Rotates if the interval is over at `now_ns` (what `flush` does with the current time).
    pub fn flush_at(&mut self, now_ns: i64) -> io::Result<()> {
        while self.rotation.due(now_ns) {
            self.cut(now_ns)?;
        }
        Ok(())
    }
}

impl Sink for PushSink {
    fn name(&self) -> &str {
        &self.name
    }

    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        if self.finished {
            return Err(io::Error::other("record after finish"));
        }
        self.samples += 1;
        match (&mut self.labeler, &s.context) {
            (Some(labeler), Ok(map)) => {
                let mut labeled = s.clone();
                labeled.context = Ok(Arc::new(ContextMap {
                    entries: labeler.apply(map),
                }));
                self.pprof.record(&labeled)
            }
            _ => self.pprof.record(s),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_at(now_ns())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.finished = true;
        let cut = self.cut(now_ns());
        let deadline = Instant::now() + EXIT_BOUND;
        let mut st = self.shared.state.lock();
        st.closed = true;
        st.deadline = Some(deadline);
        self.shared.wake.notify_all();
        if self.thread_started {
            while !st.done && Instant::now() < deadline + EXIT_GRACE {
                self.shared.wake.wait_until(&mut st, deadline + EXIT_GRACE);
            }
        }
        if !st.done {
            st.abandoned = true;
        }
        // Normally nothing is left; else what is queued or in flight is dropped.
        let left = st.queue.clear() as u64 + u64::from(st.abandoned && st.in_flight);
        if left > 0 {
            st.figures.dropped += left;
            self.shared.fault(
                &mut st,
                "the endpoint did not take the profiles before exit",
            );
        }
        cut
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler
            .as_ref()
            .map(Labeler::replaced)
            .unwrap_or_default()
    }
}

/// The `jfrctx-push` thread: sends queued profiles until closed and empty (or abandoned).
fn run(shared: &Shared) {
    loop {
        let job = {
            let mut st = shared.state.lock();
            loop {
                if st.abandoned {
                    return;
                }
                if let Some(job) = st.queue.pop() {
                    st.in_flight = true;
                    break job;
                }
                if st.closed {
                    st.done = true;
                    shared.wake.notify_all();
                    return;
                }
                shared.wake.wait(&mut st);
            }
        };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            policy::deliver(&mut Net { shared, job: &job })
        }))
        .unwrap_or_else(|_| Outcome {
            pushed: false,
            retries: 0,
            error: Some("internal error while sending".into()),
        });
        let mut st = shared.state.lock();
        st.in_flight = false;
        if st.abandoned {
            return;
        }
        st.figures.retried += u64::from(outcome.retries);
        if outcome.pushed {
            st.figures.pushed += 1;
        } else {
            st.figures.dropped += 1;
        }
        if let Some(e) = &outcome.error {
            shared.fault(&mut st, e);
        }
    }
}

/// [`Attempts`] over the network, the monotonic clock and the shared state.
struct Net<'a> {
    shared: &'a Shared,
    job: &'a Job,
}

fn origin() -> Instant {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Attempts for Net<'_> {
    fn now(&mut self) -> Duration {
        Instant::now().saturating_duration_since(origin())
    }

    fn deadline(&mut self) -> Option<Duration> {
        let d = self.shared.state.lock().deadline?;
        Some(d.saturating_duration_since(origin()))
    }

    fn send(&mut self, timeout: Duration) -> Result<(), http::SendError> {
        http::post(&self.shared.url, &self.job.target, &self.job.body, timeout)
    }

    /// Waits `d`; wakes early when the exit deadline is set meanwhile (the attempt loop then
    /// cuts its plan to it) or when `finish` stopped waiting.
    fn pause(&mut self, d: Duration) {
        let until = Instant::now() + d;
        let mut st = self.shared.state.lock();
        let closing = st.deadline.is_some();
        while st.deadline.is_some() == closing && !st.abandoned && Instant::now() < until {
            self.shared.wake.wait_until(&mut st, until);
        }
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
