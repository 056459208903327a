//! Throughput of the JFR file writer (`sink=jfr`): `JfrSink::record` over realistic samples,
//! then `finish` (the chunk's pools, metadata and header, written to a file), per sample.
//!
//! The samples: 64 platform threads, 2 000 distinct stacks of 10 to 40 frames drawn from 500
//! methods, 1 000 distinct contexts of 2 entries (shared `Arc`s, as the join hands them out),
//! 1 % unknown; the order is random. Times are the benchmark thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`, through `iter_custom`): on a shared machine wall time also counts
//! the moments the thread is descheduled. Target: ≥ 1 M samples/s on one core.
//!
//! `cargo bench --bench jfr_writer` (criterion; `-- --measurement-time 2` to shorten).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use jfrctx::core::model::{ContextMap, ContextualSample, Frame, ThreadInfo, UnknownReason};
use jfrctx::sink::jfr::chunk::Clock;
use jfrctx::sink::jfr::JfrSink;
use jfrctx::sink::{Sink, SinkOptions};

const SAMPLES: usize = 200_000;

fn cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id is valid on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Deterministic xorshift64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn samples() -> Vec<ContextualSample> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let methods: Vec<Arc<str>> = (0..500)
        .map(|i| {
            Arc::from(format!(
                "com.example.service{}.Handler{}.method{i}",
                i % 7,
                i % 40
            ))
        })
        .collect();
    let stacks: Vec<Vec<Frame>> = (0..2000)
        .map(|_| {
            let depth = 10 + rng.below(31);
            (0..depth)
                .map(|_| Frame {
                    method: Arc::clone(&methods[rng.below(methods.len())]),
                    line: rng.below(400) as i32,
                })
                .collect()
        })
        .collect();
    let contexts: Vec<Arc<ContextMap>> = (0..1000)
        .map(|i| {
            Arc::new(ContextMap::from_pairs(&[
                ("endpoint", format!("/api/v1/e{}", i % 50)),
                ("request", format!("r-{i}")),
            ]))
        })
        .collect();
    let threads: Vec<ThreadInfo> = (0..64)
        .map(|i| ThreadInfo {
            id: Some(100 + i),
            name: Arc::from(format!("worker-{i}")),
            is_virtual: false,
        })
        .collect();
    let event: Arc<str> = Arc::from("jdk.ExecutionSample");
    (0..SAMPLES)
        .map(|i| ContextualSample {
            event: Arc::clone(&event),
            time_ns: 1_000_000_000 + i as i64 * 10_000,
            duration_ns: 0,
            thread: threads[rng.below(threads.len())].clone(),
            context: if rng.below(100) == 0 {
                Err(UnknownReason::HistoryExpired)
            } else {
                Ok(Arc::clone(&contexts[rng.below(contexts.len())]))
            },
            weight: 20_000_000,
            frames: stacks[rng.below(stacks.len())].clone(),
            truncated: false,
        })
        .collect()
}

fn now() -> i64 {
    0
}

fn bench_record(c: &mut Criterion) {
    let samples = samples();
    let path = std::env::temp_dir().join(format!("jfrctx-bench-{}.jfr", std::process::id()));
    let clock = Clock {
        wall_ns: 1_700_000_000_000_000_000,
        mono_ns: 0,
    };
    let mut group = c.benchmark_group("jfr_writer");
    group.throughput(Throughput::Elements(SAMPLES as u64));
    group.sample_size(10);
    group.bench_function("record+finish", |b| {
        b.iter_custom(|iters| {
            let mut total = 0u64;
            for _ in 0..iters {
                let mut sink =
                    JfrSink::with_clock(&path, &SinkOptions::default(), clock, now).unwrap();
                let t0 = cpu_ns();
                for s in &samples {
                    sink.record(black_box(s)).unwrap();
                }
                sink.finish().unwrap();
                total += cpu_ns() - t0;
            }
            Duration::from_nanos(total)
        })
    });
    group.finish();
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    println!(
        "file: {size} bytes for {SAMPLES} samples ({:.1} bytes/sample)",
        size as f64 / SAMPLES as f64
    );
    let _ = std::fs::remove_file(&path);
}

criterion_group!(benches, bench_record);
criterion_main!(benches);
