//! The worker thread and its round: drain the rings, decode the bridge's batches, run the join
//! pipeline, write the sinks, prune what is too old. Also the last round at VMDeath.

use crate::core::batch::{Decoder, Record};
use crate::core::clock::Calibrator;
use crate::core::filter::Filter;
use crate::core::join::Joiner;
use crate::core::model::{ContextualSample, RawSample};
use crate::options::Config;
use crate::runtime::faults::{take_panic, test_panic, PANIC_DEFINE, PANIC_WORKER};
use crate::runtime::pipeline;
use crate::runtime::state::{RingEvent, Shared};
use crate::runtime::summary::Counters;
use crate::sink::listener::{self, ListenerSink};
use crate::sink::{Sink, SinkSet};
use crate::time::monotonic_ns;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

/// Samples waiting for their join (deferred or uncalibrated) beyond this are dropped, counted.
const MAX_PENDING: usize = 1 << 20;

/// State owned by whoever runs a round: the worker, or VMDeath for the last one.
pub(crate) struct Core {
    pub(super) joiner: Joiner,
    pub(super) decoder: Decoder,
    pub(super) calibrator: Calibrator,
    pub(super) pending: VecDeque<RawSample>,
    /// Where decided samples go.
    pub(super) out: Output,
    pub(super) records: Vec<Record>,
    pub(super) stream_problem: Option<String>,
    pub(super) batch_errors: u64,
    /// The push sink's figures for the summary (`push=`; the sink itself is in `sinks`).
    pub(super) push: Option<crate::sink::push::PushHandle>,
    /// `now` of the last prune of histories and ids (see [`PRUNE_EVERY_NS`]).
    pub(super) pruned_at: Option<i64>,
    /// Spares taken from the queue as of the last top-up.
    pub(super) spares_taken: u64,
    /// Context definitions the repository refused (logged once).
    pub(super) definition_errors: u64,
    /// The last round found no entry in any ring and no ring come or gone (the worker's pace
    /// then stretches its sleep, `crate::runtime::pace`).
    pub(super) idle: bool,
}

/// Histories and released ids are pruned at most this often (not every round): pruning visits
/// every thread's history, and with thread-per-request virtual threads that is thousands of
/// them; what a later prune keeps longer only answers more old samples exactly.
const PRUNE_EVERY_NS: i64 = 100_000_000;

impl Core {
    pub(super) fn new(
        config: &Config,
        sinks: SinkSet,
        push: Option<crate::sink::push::PushHandle>,
        safety_ns: i64,
    ) -> Core {
        Core {
            joiner: Joiner::new(config.retention_ns, safety_ns),
            decoder: Decoder::new(),
            calibrator: Calibrator::new(),
            pending: VecDeque::new(),
            records: Vec::new(),
            out: Output {
                sinks,
                counters: Counters::default(),
                listener: ListenerSink::new(&listener::HUB),
                values: config.sink_options.values.clone(),
            },
            stream_problem: None,
            batch_errors: 0,
            push,
            pruned_at: None,
            spares_taken: 0,
            definition_errors: 0,
            idle: false,
        }
    }

    /// One round: drain rings, decode batches, join what is decidable, write to sinks.
    pub(super) fn round(&mut self, a: &Shared, last: bool) {
        let now = monotonic_ns();
        // Spares claimed since the last look become their threads' rings (queued as `New`).
        a.with_rings(|_, _| ());
        let mut events = self.apply_ring_events(a, now);
        self.joiner.drain(now);
        let retired = self.joiner.take_retired();
        events += retired.len();
        if !retired.is_empty() {
            // Virtual threads handed their rings back through the header (no JNI call): one
            // holder gone per hand-back, as `Natives.release`.
            a.with_rings(|rings, events| {
                for (handle, times) in retired {
                    for _ in 0..times {
                        if rings.release(handle) {
                            events.push(RingEvent::Released(handle));
                        }
                    }
                }
            });
        }
        events += self.apply_ring_events(a, now);
        self.idle = events == 0 && self.joiner.peak_fill() == 0.0;
        if !last && a.spares_wanted.load(Ordering::Relaxed) {
            // After the releases: the spares reuse the memory of the rings just dropped.
            a.adopt_and_top_up(&mut self.spares_taken);
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
                    Record::Define { id, raw } => {
                        let raw = bytes.get(raw).unwrap_or_default();
                        define(a, &mut self.definition_errors, id, raw, now);
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
            self.out.counters.add_dropped(excess as u64);
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
        self.out.sinks.flush_all();
        let _ = self.out.listener.flush();
    }

    /// Applies the queued ring events, in the registry's order; returns how many.
    fn apply_ring_events(&mut self, a: &Shared, now: i64) -> usize {
        let mut applied = 0;
        while let Some(e) = a.ring_events.pop() {
            applied += 1;
            match e {
                RingEvent::New(ring) => self.joiner.add_ring(ring),
                RingEvent::Released(handle) => {
                    self.joiner.release_ring(handle, now);
                }
                RingEvent::Ended(tid) => {
                    self.joiner.release_thread(tid, now);
                }
            }
        }
        applied
    }

    fn join_pending(&mut self, a: &Shared, last: bool) {
        let calibration = self.calibrator.calibration();
        let mut repo = a.repo.lock();
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
        let out = &mut self.out;
        pipeline::join_pending(
            &mut self.pending,
            calibration,
            &self.joiner,
            &mut repo,
            last,
            |s| out.emit(s, filter.as_deref()),
        );
    }

    pub(super) fn summary_line(&self, a: &Shared) -> String {
        let mut c = self.out.counters.clone();
        c.contexts = a.repo.lock().interned_total();
        c.threads = a.threads_registered.load(Ordering::Relaxed);
        {
            let rings = a.rings.lock();
            c.spare_rings = rings.claims().0;
            c.grown_rings = rings.grown();
        }
        c.lost_entries = self.joiner.counters().entries_lost;
        c.sinks = self.out.sinks.stats();
        c.sinks.extend(listener::HUB.stats());
        c.push = self.push.as_ref().map(|p| p.figures());
        c.replaced = self.out.sinks.replaced();
        c.line()
    }
}

/// A map the facade numbered itself. Bad input or a panic costs that one context (its
/// samples are unknown, `context_released`), logged once; the round goes on.
pub(super) fn define(a: &Shared, errors: &mut u64, id: u64, raw: &[u8], now: i64) {
    let defined = catch_unwind(AssertUnwindSafe(|| {
        test_panic(PANIC_DEFINE);
        a.repo.lock().define(id, raw, now)
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

/// The samples' way out: counted, valued, filtered, then written to the sinks and the
/// in-process listeners.
pub(super) struct Output {
    pub(super) sinks: SinkSet,
    pub(super) counters: Counters,
    /// In-process listeners (`dev.jfrctx.Samples`), fed after the filter.
    pub(super) listener: ListenerSink,
    /// How samples are valued: the CPU periods in the summary come from it.
    pub(super) values: crate::core::value::ValuePlan,
}

impl Output {
    pub(super) fn emit(&mut self, s: ContextualSample, filter: Option<&Filter>) {
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
}
