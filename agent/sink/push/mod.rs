//! Push sink (`push=URL`): [`Push`] over the shared base ([`super::base`]). It holds the pprof
//! aggregation [`PprofProfile`]; every `interval` (default 10 s) the profile of the interval,
//! its labels chosen by [`labels::LabelPlan`] (a budget of distinct values per key, span ids per
//! sample), is gzipped and POSTed as the request body to a Pyroscope `URL/ingest?...&
//! format=pprof` (see [`spec::ingest_target`], [`http::Client`]).
//!
//! The worker only encodes and queues; the thread `jfrctx-push` (started with the first
//! profile) sends. The queue holds at most [`policy::QUEUE_CAPACITY`] profiles (a new one drops
//! the oldest); a failing profile is retried with backoff ([`policy::deliver`]) unless the
//! server refused it (4xx). The first fault of each kind (refusal, failure, drop) is logged with
//! what happens next, later ones only counted: the summary shows `push URL profiles=N pushed=N
//! refused=N failed=N retried=N dropped=N`, with `profiles = pushed + refused + failed +
//! dropped`, and the last refusal's status and answer. At exit the last profile is queued and
//! `finish` ([`Push::close`]) waits at most [`EXIT_BOUND`] (plus a little) for the thread to send
//! what is queued; what is left then is dropped (counted) and the thread, whose requests time
//! out by the same deadline, is not waited for.

pub mod figures;
pub mod http;
pub mod labels;
pub mod policy;
pub mod spec;

use crate::time::monotonic_ns;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flate2::write::GzEncoder;
use flate2::Compression;
use parking_lot::{Condvar, Mutex};
use prost::Message;

use super::base::{Aggregate, End, Rotating};
use super::pprof::PprofProfile;
use super::{Labeler, Policy, SinkOptions};
use crate::core::model::ContextualSample;
pub use figures::PushFigures;
use labels::{LabelPlan, Notice, Reason};
use policy::{Attempts, Bounded, Outcome};
use spec::{PushSpec, Url};

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
    /// Samples in it.
    samples: u64,
}

/// The kinds of faults, each logged once.
#[derive(Clone, Copy)]
enum Fault {
    Refused,
    Failed,
    Dropped,
}

/// What the worker and the push thread share, under one lock.
struct State {
    queue: Bounded<Job>,
    /// Samples of the profile being sent (0: none).
    in_flight: Option<u64>,
    /// Set by `finish`: no more profiles; the thread ends when the queue is empty.
    closed: bool,
    /// The exit deadline, set by `finish`.
    deadline: Option<Instant>,
    /// `finish` stopped waiting: the thread reports nothing more.
    abandoned: bool,
    /// The thread has ended.
    done: bool,
    figures: PushFigures,
    /// Per [`Fault`]: its first occurrence was logged.
    logged: [bool; 3],
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on a new job, on close, and when the thread ends.
    wake: Condvar,
    url: Url,
    client: http::Client,
}

impl Shared {
    /// Logs the first fault of each kind: `message` says what happened and what happens next.
    fn fault(&self, state: &mut State, kind: Fault, message: &str) {
        let logged = &mut state.logged[kind as usize];
        if !*logged {
            *logged = true;
            let more = match kind {
                Fault::Refused => "further refusals",
                Fault::Failed => "further failures",
                Fault::Dropped => "further drops",
            };
            crate::warn!(
                "push to {}: {message}; {more} are only counted (exit summary)",
                self.url
            );
        }
    }

    /// Counts a profile that was not taken.
    fn lost(&self, state: &mut State, samples: u64) {
        state.figures.lost_samples += samples;
    }
}

/// The push sink: [`Push`] over the shared base; its intervals are the push periods.
pub type PushSink = Rotating<Push>;

/// The profile of the current interval, and the queue its profiles go to.
pub struct Push {
    /// The samples of the current interval, labelled by `labeler` and `plan`.
    profile: PprofProfile,
    labeler: Option<Labeler>,
    plan: LabelPlan,
    budget: u32,
    app: String,
    labels: Vec<(String, String)>,
    sample_rate: i64,
    shared: Arc<Shared>,
    thread_started: bool,
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
    /// A sink pushing to `url` as `app` with the options of `spec`; `options.interval_ns` is the
    /// push period (default [`spec::DEFAULT_INTERVAL_NS`]); `env` reads the environment
    /// (`push_auth`). Touches no network until the first push; the error (a credential that is
    /// not set, an unreadable `push_ca`) is one line.
    pub fn new(
        url: Url,
        app: String,
        spec: &PushSpec,
        options: &SinkOptions,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(PushSink, PushHandle), String> {
        let authorization = spec.auth.as_ref().map(|a| a.header(env)).transpose()?;
        let client =
            http::Client::new(&url, spec.tenant.clone(), authorization, spec.ca.as_deref())?;
        let now = monotonic_ns();
        let interval = options.interval_ns.unwrap_or(spec::DEFAULT_INTERVAL_NS);
        let rules = options.cardinality.iter().any(|(_, p)| *p != Policy::Keep);
        let budget = spec.budget.unwrap_or(spec::DEFAULT_BUDGET);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Bounded::new(policy::QUEUE_CAPACITY),
                in_flight: None,
                closed: false,
                deadline: None,
                abandoned: false,
                done: false,
                figures: PushFigures {
                    target: url.to_string(),
                    ..PushFigures::default()
                },
                logged: [false; 3],
            }),
            wake: Condvar::new(),
            url,
            client,
        });
        let push = Push {
            profile: PprofProfile::new(&options.values, now),
            labeler: rules.then(|| Labeler::new(&options.cardinality)),
            plan: LabelPlan::new(spec.keys.clone(), budget, spec.labels.len()),
            budget,
            app,
            labels: spec.labels.clone(),
            sample_rate: spec::sample_rate(options.period_ns),
            shared: Arc::clone(&shared),
            thread_started: false,
        };
        let name = format!("push:{}", shared.url);
        let sink = Rotating::over(name, push, Some(interval), now);
        Ok((sink, PushHandle(shared)))
    }
}

impl Push {
    /// Logs a key newly left out of pushed labels.
    fn notice(&self, n: &Notice) {
        let why = match n.reason {
            Reason::Budget(d) => format!(
                "it took {d} distinct values, over push_budget={} (each label set is a \
                 Pyroscope series)",
                self.budget
            ),
            Reason::Trace => "it holds trace ids, which would make one Pyroscope series per \
                              trace (Pyroscope keeps only span_id per sample)"
                .into(),
            Reason::BadName => "Pyroscope refuses this label name".into(),
            Reason::TooManyKeys => {
                format!("a series may have at most {} such labels", labels::MAX_KEYS)
            }
        };
        crate::warn!(
            "push to {}: label {} is left out of pushed profiles from now on: {why}; the other \
             sinks keep it (push_keys= chooses the pushed labels)",
            self.shared.url,
            n.key
        );
    }

    /// Ends the current interval at `now_ns`: its profile (when it holds samples) is queued.
    fn cut(&mut self, now_ns: i64) -> io::Result<()> {
        if self.profile.is_empty() {
            self.profile.reset(now_ns);
            return Ok(());
        }
        let mut profile = self.profile.profile(None, now_ns);
        self.profile.reset(now_ns);
        for n in self.plan.prepare(&mut profile) {
            self.notice(&n);
        }
        let samples = profile
            .sample
            .iter()
            .map(|s| s.value.first().copied().unwrap_or(0).max(0) as u64)
            .sum();
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
            samples,
        };
        self.enqueue(job);
        let left_out = self.plan.left_out();
        self.shared.state.lock().figures.left_out = left_out;
        Ok(())
    }

    fn enqueue(&mut self, job: Job) {
        let mut st = self.shared.state.lock();
        st.figures.profiles += 1;
        if let Some(old) = st.queue.push(job) {
            st.figures.dropped += 1;
            self.shared.lost(&mut st, old.samples);
            self.shared.fault(
                &mut st,
                Fault::Dropped,
                &format!(
                    "{} profiles wait already (the endpoint is slow or down); the oldest is \
                     dropped to keep the newest",
                    policy::QUEUE_CAPACITY
                ),
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
                while let Some(j) = st.queue.pop() {
                    st.figures.dropped += 1;
                    self.shared.lost(&mut st, j.samples);
                }
                self.shared.fault(
                    &mut st,
                    Fault::Dropped,
                    &format!("cannot start the push thread ({e}); profiles are dropped"),
                );
            }
        }
    }
}

impl Aggregate for Push {
    fn increment(&mut self, s: &ContextualSample) -> io::Result<()> {
        let context = match &s.context {
            Err(_) => Vec::new(),
            Ok(map) => {
                let strip = map.iter().any(|(k, _)| self.plan.is_left_out(k));
                let mut entries = match &mut self.labeler {
                    Some(labeler) => labeler.apply(map),
                    None => map
                        .iter()
                        .map(|(k, v)| (Arc::from(k), Arc::from(v)))
                        .collect(),
                };
                if strip {
                    // Keys never pushed again are not aggregated on (and counted as left out).
                    let plan = &mut self.plan;
                    entries.retain(|(k, _)| {
                        let out = plan.is_left_out(k);
                        if out {
                            plan.stripped(k);
                        }
                        !out
                    });
                }
                entries
            }
        };
        self.profile.increment(s, context);
        Ok(())
    }

    /// Ends the interval: its profile (when it holds samples) is queued.
    fn write(&mut self, end: End) -> io::Result<()> {
        self.cut(end.now_ns)
    }

    /// Waits at most [`EXIT_BOUND`] for the queued profiles to be sent; what is left is
    /// dropped.
    fn close(&mut self) -> io::Result<()> {
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
        let mut left = 0;
        while let Some(j) = st.queue.pop() {
            left += 1;
            self.shared.lost(&mut st, j.samples);
        }
        if let (true, Some(samples)) = (st.abandoned, st.in_flight) {
            left += 1;
            self.shared.lost(&mut st, samples);
        }
        if left > 0 {
            st.figures.dropped += left;
            self.shared.fault(
                &mut st,
                Fault::Dropped,
                &format!(
                    "{left} profile(s) were not sent within the exit bound of {} s and are \
                     dropped",
                    EXIT_BOUND.as_secs()
                ),
            );
        }
        Ok(())
    }

    fn replaced(&self) -> Vec<(String, u64)> {
        self.labeler
            .as_ref()
            .map(Labeler::replaced)
            .unwrap_or_default()
    }

    fn undelivered(&self) -> u64 {
        self.shared.state.lock().figures.lost_samples
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
                    st.in_flight = Some(job.samples);
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
            attempts: 0,
            retries: 0,
            error: Some("internal error while sending".into()),
            refused: None,
        });
        let mut st = shared.state.lock();
        st.in_flight = None;
        if st.abandoned {
            return;
        }
        let f = &mut st.figures;
        f.retried += u64::from(outcome.retries);
        if outcome.pushed {
            f.pushed += 1;
            continue;
        }
        if outcome.refused.is_some() {
            f.refused += 1;
            f.last_refusal.clone_from(&outcome.refused);
        } else if outcome.attempts > 0 {
            f.failed += 1;
        } else {
            f.dropped += 1;
            let e = outcome.error.unwrap_or_default();
            shared.fault(
                &mut st,
                Fault::Dropped,
                &format!("{e}; the profile is dropped"),
            );
        }
        shared.lost(&mut st, job.samples);
    }
}

/// [`Attempts`] over the network, the monotonic clock and the shared state.
struct Net<'a> {
    shared: &'a Shared,
    job: &'a Job,
}

impl Attempts for Net<'_> {
    fn now(&mut self) -> Duration {
        Duration::from_nanos(monotonic_ns().max(0) as u64)
    }

    /// The exit deadline (an `Instant`, for the condition variable) on the scale of `now`.
    fn deadline(&mut self) -> Option<Duration> {
        let d = self.shared.state.lock().deadline?;
        Some(self.now() + d.saturating_duration_since(Instant::now()))
    }

    fn send(&mut self, timeout: Duration) -> Result<(), http::SendError> {
        self.shared
            .client
            .post(&self.job.target, &self.job.body, timeout)
    }

    fn failed(&mut self, e: &http::SendError, retry_in: Option<Duration>) {
        let mut st = self.shared.state.lock();
        if let Some((status, answer)) = &e.refusal {
            let message = format!(
                "the server refused a profile: HTTP {status}: {answer}; that profile is dropped \
                 (a refusal is not retried), later ones are still sent"
            );
            self.shared.fault(&mut st, Fault::Refused, &message);
            return;
        }
        let next = match retry_in {
            Some(d) => format!(
                "retrying in {:.1} s (at most {} attempts per profile), then the profile is \
                 dropped and later ones are still sent",
                d.as_secs_f64(),
                policy::MAX_ATTEMPTS
            ),
            None => "the profile is dropped, later ones are still sent".into(),
        };
        let message = format!("sending failed: {}; {next}", e.message);
        self.shared.fault(&mut st, Fault::Failed, &message);
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
mod tests;
