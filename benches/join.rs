//! Join throughput: `Joiner::decide` over realistic per-thread histories, and the whole worker
//! path for one bridge batch (decode → calibrate → decide → context lookup → no-op sink).
//!
//! Histories are built the way the agent builds them: a `Producer` per thread writes into its
//! shared ring (same protocol as the Java facade) and the joiner drains all rings every 10 ms of
//! simulated time, like the worker. Samples are in time order, spread uniformly over the retained
//! window, on uniformly random threads.
//!
//! Times are the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not wall-clock time:
//! on a shared machine the thread is descheduled now and then, which inflates wall time but not
//! the work done; the target is about one core's worth of work anyway.
//!
//! `definitions/...`: a never-seen map's whole life in the worker, per map — its definition
//! record decoded from a bridge batch, defined in the repository, released, and freed by
//! `collect` after the retention — for maps shaped like the OpenTelemetry bridge's (trace and
//! span ids, route, method) and like a per-request `{endpoint, request}`.
//!
//! `cargo bench --bench join` (criterion; pass `-- --measurement-time 1` etc. to shorten).
//! Target: ≥ 5 M samples/s on one core for `decide`. `decide/binary-search/...` is the same
//! work without the per-thread cursor (a binary search over the whole history per sample), the
//! same-run baseline.

use std::collections::VecDeque;
use std::hint::black_box;
use std::io;
use std::sync::Arc;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use jfrctx::core::batch::{Decoder, Encoder, Record};
use jfrctx::core::clock::{Bracket, Calibrator, MIN_BRACKETS};
use jfrctx::core::context::repo::Repository;
use jfrctx::core::context::ring::{Producer, Ring};
use jfrctx::core::join::{Decision, Joiner, DEFAULT_SAFETY_NS};
use jfrctx::core::model::{
    ContextId, ContextualSample, Frame, RawSample, ThreadInfo, EMPTY_CONTEXT,
};
use jfrctx::runtime::pipeline::join_pending;
use jfrctx::sink::{Sink, SinkSet};

/// Simulated start of the history (ns on the `System.nanoTime()` scale).
const T0: i64 = 1_000_000_000;
/// Simulated history length: 2 s (the agent keeps 5 s by default; 2 s bounds setup time).
const SPAN_NS: i64 = 2_000_000_000;
/// Worker round (drain) interval, as the agent's default `drain=10ms`.
const ROUND_NS: i64 = 10_000_000;
/// Offset of the JFR tick clock against nanoTime in the simulated calibration.
const TICK_OFFSET: i64 = 123_456_789;
/// Samples decided per benchmark iteration.
const SAMPLES: usize = 100_000;
/// Samples per bridge batch in the pipeline benchmark (a 1 s flush of a busy JVM).
const BATCH_SAMPLES: usize = 2_000;
/// Frames per sample in the pipeline benchmark.
const FRAMES: usize = 24;
/// Distinct context maps in use.
const CONTEXTS: usize = 48;

/// CPU time consumed by the calling thread, in nanoseconds.
fn thread_cpu_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call;
    // CLOCK_THREAD_CPUTIME_ID is always available on Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Criterion measurement: CPU time of the benchmark thread.
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = i64;
    type Value = i64;

    fn start(&self) -> i64 {
        thread_cpu_ns()
    }
    fn end(&self, start: i64) -> i64 {
        thread_cpu_ns() - start
    }
    fn add(&self, a: &i64, b: &i64) -> i64 {
        a + b
    }
    fn zero(&self) -> i64 {
        0
    }
    fn to_f64(&self, value: &i64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuNanos
    }
}

/// Shows CPU nanoseconds scaled to a readable unit, throughputs per CPU-second.
struct CpuNanos;

impl ValueFormatter for CpuNanos {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical < 1e3 {
            (1.0, "ns cpu")
        } else if typical < 1e6 {
            (1e-3, "µs cpu")
        } else if typical < 1e9 {
            (1e-6, "ms cpu")
        } else {
            (1e-9, "s cpu")
        };
        for v in values {
            *v *= factor;
        }
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per = match throughput {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n,
            // Criterion may add kinds; none is used here.
            #[allow(unreachable_patterns)]
            _ => 1,
        } as f64;
        for v in values {
            *v = per * 1e9 / *v / 1e6;
        }
        "M/cpu-s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// Deterministic xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One simulated JVM: interned contexts, rings drained into a joiner, samples to decide.
struct World {
    joiner: Joiner,
    repo: Repository,
    /// `(thread id, nanoTime)` of each sample, in time order.
    samples: Vec<(u64, i64)>,
    /// Transitions written per thread.
    transitions_per_thread: u64,
}

/// Builds `threads` histories in which each thread switches context on average every
/// `switch_ns` (uniform jitter ±50 %), half of the time to no context, as `activate`/`close`
/// pairs do.
fn world(threads: u64, switch_ns: i64) -> World {
    let mut repo = Repository::new(i64::MAX / 4);
    let ids: Vec<ContextId> = (0..CONTEXTS)
        .map(|i| {
            repo.intern(vec![
                (
                    "endpoint".to_string(),
                    format!("/api/v1/resource{}", i % 12),
                ),
                ("tenant".to_string(), format!("tenant-{}", i / 12)),
            ])
            .expect("intern")
        })
        .collect();
    // Retention covers the whole simulated span: nothing expires while deciding.
    let mut joiner = Joiner::new(SPAN_NS + ROUND_NS, DEFAULT_SAFETY_NS);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut producers: Vec<(Producer, i64, bool)> = (0..threads)
        .map(|tid| {
            let ring = Arc::new(Ring::new(1024, tid + 1, tid + 10_000));
            joiner.add_ring(ring.clone());
            // Each thread starts at a different phase.
            let first = T0 + rng.below(switch_ns as u64) as i64;
            (Producer::new(ring), first, false)
        })
        .collect();
    let mut round_end = T0 + ROUND_NS;
    let end = T0 + SPAN_NS;
    let mut written = 0u64;
    while round_end <= end {
        for (p, next, inside) in &mut producers {
            while *next < round_end {
                let ctx = if *inside {
                    EMPTY_CONTEXT
                } else {
                    ids[rng.below(ids.len() as u64) as usize]
                };
                p.push(*next, ctx);
                written += 1;
                *inside = !*inside;
                let jitter = rng.below(switch_ns as u64) as i64;
                *next += switch_ns / 2 + jitter;
            }
        }
        // The worker reads the clock at the start of its round: after every transition above.
        joiner.drain(round_end);
        round_end += ROUND_NS;
    }
    let counters = joiner.counters();
    assert_eq!(counters.entries_lost, 0, "rings must not overflow in setup");
    let watermark = joiner.watermark().expect("drained");
    let from = T0 + SPAN_NS / 4;
    let to = watermark - DEFAULT_SAFETY_NS;
    let samples = (0..SAMPLES)
        .map(|k| {
            let t = from + ((to - from) as i128 * k as i128 / SAMPLES as i128) as i64;
            (rng.below(threads) + 1, t)
        })
        .collect();
    World {
        joiner,
        repo,
        samples,
        transitions_per_thread: written / threads,
    }
}

fn decide_all(
    joiner: &Joiner,
    samples: &[(u64, i64)],
    decide: impl Fn(&Joiner, Option<u64>, i64) -> Decision,
) -> u64 {
    let mut sum = 0u64;
    for &(tid, t) in samples {
        match decide(joiner, Some(tid), t) {
            Decision::Context(id) => sum = sum.wrapping_add(id),
            Decision::Unknown(_) => sum = sum.wrapping_add(1 << 40),
            Decision::Defer => sum = sum.wrapping_add(1 << 50),
        }
    }
    sum
}

fn bench_decide(c: &mut Criterion<ThreadCpuTime>) {
    let mut group = c.benchmark_group("decide");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    for &(threads, switch_ns) in &[
        (8u64, 20_000i64),
        (64, 20_000),
        (8, 1_000_000),
        (64, 1_000_000),
    ] {
        let w = world(threads, switch_ns);
        // Every sample must be decided (no defer/unknown): otherwise the figure is meaningless.
        let undecided = w
            .samples
            .iter()
            .filter(|&&(tid, t)| !matches!(w.joiner.decide(Some(tid), t), Decision::Context(_)))
            .count();
        assert_eq!(undecided, 0, "all benchmark samples must be decidable");
        let id = format!(
            "threads={threads}/switch={}us/points={}",
            switch_ns / 1000,
            w.transitions_per_thread
        );
        group.bench_function(BenchmarkId::new("cursor", &id), |b| {
            b.iter(|| black_box(decide_all(&w.joiner, black_box(&w.samples), Joiner::decide)))
        });
        // Same-run baseline: one binary search over the whole history per sample.
        group.bench_function(BenchmarkId::new("binary-search", &id), |b| {
            b.iter(|| {
                black_box(decide_all(
                    &w.joiner,
                    black_box(&w.samples),
                    Joiner::decide_binary_search,
                ))
            })
        });
    }
    group.finish();
}

/// A sink that accepts everything and does nothing, to measure the path up to the sinks.
struct NoopSink {
    frames: u64,
}

impl Sink for NoopSink {
    fn name(&self) -> &str {
        "noop"
    }
    fn record(&mut self, s: &ContextualSample) -> io::Result<()> {
        self.frames += s.frames.len() as u64;
        black_box(&s.context);
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The bridge batches for `w`: the first one defines every string (decoded once in setup, as
/// the agent's decoder keeps its table for its lifetime); the second one, decoded in every
/// iteration, holds `BATCH_SAMPLES` samples and only refers to known strings.
fn batches(w: &World, threads: u64) -> (Decoder, Calibrator, Vec<u8>) {
    let mut enc = Encoder::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let methods: Vec<String> = (0..256)
        .map(|i| {
            format!(
                "com.example.service.layer{}.Component{}.method{}",
                i % 7,
                i % 31,
                i
            )
        })
        .collect();
    enc.string("jdk.ExecutionSample");
    for m in &methods {
        enc.string(m);
    }
    for tid in 1..=threads {
        enc.string(&format!("worker-{tid}"));
    }
    let mut cal = Calibrator::new();
    for k in 0..(MIN_BRACKETS as i64 * 2) {
        let before = T0 + k * 1_000_000;
        let b = Bracket {
            ticks: before + 40 - TICK_OFFSET,
            before_ns: before,
            after_ns: before + 80,
        };
        enc.calibration(b);
    }
    let definitions = enc.take();
    let mut decoder = Decoder::new();
    let mut records = Vec::new();
    decoder
        .decode(&definitions, &mut records)
        .expect("decode definitions");
    for r in records {
        if let Record::Calibration(b) = r {
            cal.add(b);
        }
    }
    let stride = w.samples.len() / BATCH_SAMPLES;
    for k in 0..BATCH_SAMPLES {
        let (tid, t) = w.samples[k * stride];
        let frames = (0..FRAMES)
            .map(|_| Frame {
                method: Arc::from(methods[rng.below(methods.len() as u64) as usize].as_str()),
                line: rng.below(500) as i32,
            })
            .collect();
        enc.sample(&RawSample {
            event: Arc::from("jdk.ExecutionSample"),
            start_ticks: t - TICK_OFFSET,
            duration_ticks: 0,
            thread: ThreadInfo {
                id: Some(tid),
                name: Arc::from(format!("worker-{tid}").as_str()),
                is_virtual: false,
            },
            weight: 0,
            frames,
            truncated: false,
            carrier: false,
        });
    }
    (decoder, cal, enc.take())
}

fn bench_pipeline(c: &mut Criterion<ThreadCpuTime>) {
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(BATCH_SAMPLES as u64));
    for &threads in &[8u64, 64] {
        let mut w = world(threads, 20_000);
        let (mut decoder, calibrator, batch) = batches(&w, threads);
        let calibration = calibrator.calibration().expect("calibrated");
        let mut sinks = SinkSet::new();
        sinks.push(Box::new(NoopSink { frames: 0 }));
        let mut records = Vec::with_capacity(BATCH_SAMPLES);
        let mut pending = VecDeque::with_capacity(BATCH_SAMPLES);
        // The worker's own pipeline (`runtime::pipeline::join_pending`): decide, build the
        // contextual sample, hand it to the sinks. A sample left pending was deferred.
        let mut check = |decoder: &mut Decoder, sinks: &mut SinkSet| -> (usize, usize) {
            records.clear();
            decoder.decode(&batch, &mut records).expect("decode");
            pending.extend(records.drain(..).filter_map(|r| match r {
                Record::Sample(s) => Some(s),
                _ => None,
            }));
            let (mut with_context, mut other) = (0, 0);
            join_pending(
                &mut pending,
                Some(calibration),
                &w.joiner,
                &mut w.repo,
                false,
                |out| {
                    if out.context.is_ok() {
                        with_context += 1;
                    } else {
                        other += 1;
                    }
                    sinks.record_all(&out);
                },
            );
            other += pending.len();
            pending.clear();
            (with_context, other)
        };
        let (with_context, other) = check(&mut decoder, &mut sinks);
        assert_eq!(
            (with_context, other),
            (BATCH_SAMPLES, 0),
            "every sample of the batch must be joined"
        );
        let id = format!("threads={threads}/frames={FRAMES}");
        group.bench_function(BenchmarkId::from_parameter(id), |b| {
            b.iter(|| black_box(check(&mut decoder, &mut sinks)))
        });
        if threads == 8 {
            // The decode step alone (records built and dropped), to apportion the path's cost.
            let mut only = Vec::with_capacity(BATCH_SAMPLES);
            let id = format!("decode-only/frames={FRAMES}");
            group.bench_function(BenchmarkId::from_parameter(id), |b| {
                b.iter(|| {
                    only.clear();
                    decoder.decode(&batch, &mut only).expect("decode");
                    black_box(only.len())
                })
            });
        }
    }
    group.finish();
}

/// The definitions benchmark's shapes: maps per batch, batches a released map is kept for
/// before `collect` frees it, and whether the caches are swept between batches.
/// - `warm`: 1 000 maps a batch, 10 batches kept (10 000 maps held), back to back.
/// - `round`: what the agent's worker sees in a server: 70 maps a round (≈ 7 000 new maps a
///   second at its 100 rounds a second), kept 500 rounds (the 5 s retention: 35 000 maps held),
///   and between rounds the 10 ms the other threads spend evicting the worker's lines (swept
///   here by writing 32 MiB, outside the measured time).
const DEFINITION_SHAPES: [(&str, usize, i64, bool); 2] =
    [("warm", 1_000, 10, false), ("round", 70, 500, true)];

/// Written between batches of the `round` shape to evict the caches.
const SWEEP_BYTES: usize = 32 << 20;

/// `n` never-seen maps shaped as `kind` says, numbered from `first`.
fn definition_batch(kind: &str, first: u64, n: usize) -> Vec<u8> {
    let mut enc = Encoder::new();
    for i in 0..n as u64 {
        let id = first + i;
        let (trace, span, request) = (
            format!("{:032x}", id.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            format!("{:016x}", id.wrapping_mul(0xC2B2_AE3D_27D4_EB4F)),
            id.to_string(),
        );
        let entries: Vec<(&str, &str)> = match kind {
            "otel-span" => vec![
                ("endpoint", "/app/handoff"),
                ("http.request.method", "GET"),
                ("span_id", &span),
                ("trace_id", &trace),
            ],
            _ => vec![("endpoint", "/app/cpu"), ("request", &request)],
        };
        enc.define(id, &entries);
        enc.release(id);
    }
    enc.take()
}

fn bench_definitions(c: &mut Criterion<ThreadCpuTime>) {
    let mut group = c.benchmark_group("definitions");
    let mut sweep = vec![0u8; SWEEP_BYTES];
    for (shape, per_batch, retained, cold) in DEFINITION_SHAPES {
        group.throughput(Throughput::Elements(per_batch as u64));
        for kind in ["otel-span", "endpoint-request"] {
            let mut decoder = Decoder::new();
            let mut repo = Repository::new(retained);
            let mut records = Vec::with_capacity(2 * per_batch);
            let mut next = jfrctx::core::context::repo::FIRST_DEFINED_ID;
            let mut now = 0i64;
            let id = format!("{kind}/{shape}");
            group.bench_function(BenchmarkId::from_parameter(id), |b| {
                b.iter_batched(
                    || {
                        let batch = definition_batch(kind, next, per_batch);
                        next += per_batch as u64;
                        if cold {
                            for line in sweep.chunks_mut(64) {
                                line[0] = line[0].wrapping_add(1);
                            }
                            black_box(&sweep);
                        }
                        batch
                    },
                    |batch| {
                        // The worker's handling of these records (`runtime::worker`): define,
                        // release at the batch's time, collect those released `retained`
                        // batches ago.
                        records.clear();
                        decoder.decode(&batch, &mut records).expect("decode");
                        now += 1;
                        for r in records.drain(..) {
                            match r {
                                Record::Define { id, raw } => {
                                    repo.define(id, &batch[raw], now).expect("define")
                                }
                                Record::Release(id) => assert!(repo.release(id, now)),
                                _ => unreachable!("only definitions and releases"),
                            }
                        }
                        let freed = repo.collect(now);
                        assert!(
                            freed == per_batch || (now <= retained && freed == 0),
                            "a batch's maps freed after their retention ({freed} at {now})"
                        );
                        black_box(freed)
                    },
                    criterion::BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = bench_decide, bench_pipeline, bench_definitions
}
criterion_main!(benches);
