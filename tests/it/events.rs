//! Non-CPU events (`events=alloc|lock|park`), the CPU sampler (`jdk.ExecutionSample` by default,
//! `jdk.CPUTimeSample` with `cpu_sampler=cputime` on JDK 25) and the delivery
//! latency of `latency=live`, on real JVMs. The workload (`tests/java/ev/EventWorkload.java`)
//! produces every event of interest inside a method named after the context installed around it
//! (`ev_X` ↔ `{ev: X}`, `ev_none`/`ev_cpu_none` ↔ `{}`), so the stack alone says which context
//! each event must carry.
//!
//! `cargo test --test it events:: -- --nocapture` prints the figures (events per JDK, latency p50/p99
//! and process CPU in default and live mode).

use crate::common::{self, JvmRun, Output};

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EV_CLASS: &str = "ev.EventWorkload.";

/// The innermost `ev_*` method of a sample's stack (leaf first), if any.
fn ev_method(sample: &Value) -> Option<String> {
    sample["stack"].as_array()?.iter().find_map(|f| {
        let m = f["method"].as_str()?.strip_prefix(EV_CLASS)?;
        m.starts_with("ev_").then(|| m.to_string())
    })
}

/// `ev_none`, `ev_cpu_none` → `{}`; `ev_X` → `{ev: X}`.
fn expected(method: &str) -> BTreeMap<String, String> {
    let name = method.strip_prefix("ev_").expect("ev_ method");
    let mut m = BTreeMap::new();
    if !name.ends_with("none") {
        m.insert("ev".to_string(), name.to_string());
    }
    m
}

#[derive(Default, Debug)]
struct Tally {
    correct: usize,
    unknown: usize,
    wrong: Vec<String>,
    per_method: BTreeMap<String, usize>,
}

/// Classifies every sample of an event in `events` that has an `ev_*` frame.
fn tally(samples: &[Value], events: &[&str]) -> Tally {
    let mut t = Tally::default();
    for s in samples {
        let Some(ev) = s["event"].as_str() else {
            continue;
        };
        if !events.contains(&ev) {
            continue;
        }
        let Some(method) = ev_method(s) else { continue };
        match s.get("context") {
            Some(Value::Object(ctx)) => {
                let got: BTreeMap<String, String> = ctx
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("?").to_string()))
                    .collect();
                if got == expected(&method) {
                    t.correct += 1;
                    *t.per_method.entry(method).or_default() += 1;
                } else if t.wrong.len() < 10 {
                    t.wrong.push(format!("{ev} in {method}: context {got:?}"));
                } else {
                    t.wrong.push(String::new());
                }
            }
            Some(Value::Null) if s["unknown"].is_string() => t.unknown += 1,
            _ => t
                .wrong
                .push(format!("{ev} in {method}: bad context field {s}")),
        }
    }
    t
}

/// Runs the workload in `mode` with the agent (`options` appended) and returns the samples.
fn run(jdk: u32, mode: &str, seconds: &str, options: &str) -> (Vec<Value>, Output) {
    run_as(jdk, mode, mode, seconds, options)
}

/// [`run`] with the output file named after `tag` instead of `mode`.
fn run_as(jdk: u32, mode: &str, tag: &str, seconds: &str, options: &str) -> (Vec<Value>, Output) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("events-{tag}-{jdk}.jsonl"));
    let opts = format!("sink=jsonl:{},{options}", jsonl.display());
    let out = JvmRun::new(jdk)
        .agent(&opts)
        .main("ev.EventWorkload")
        .args([mode, seconds])
        .timeout(Duration::from_secs(180))
        .run();
    assert!(
        out.status.success(),
        "EventWorkload {mode} failed on JDK {jdk}:\n{}",
        out.dump()
    );
    (common::read_json_lines(&jsonl), out.out)
}

fn assert_clean(jdk: u32, what: &str, t: &Tally, min_correct: usize, out: &Output) {
    println!(
        "{what} JDK {jdk}: correct {} unknown {} wrong {} per method {:?}",
        t.correct,
        t.unknown,
        t.wrong.len(),
        t.per_method
    );
    assert!(
        t.wrong.is_empty(),
        "{what} JDK {jdk}: {} wrong:\n{}\n{}",
        t.wrong.len(),
        t.wrong.join("\n"),
        out.dump()
    );
    assert!(
        t.correct >= min_correct,
        "{what} JDK {jdk}: only {} correct samples (need {min_correct})\n{}",
        t.correct,
        out.dump()
    );
    assert!(
        t.unknown * 20 <= t.correct,
        "{what} JDK {jdk}: too many unknown ({} vs {} correct)\n{}",
        t.unknown,
        t.correct,
        out.dump()
    );
}

fn alloc(jdk: u32) {
    let (samples, out) = run(jdk, "alloc", "5", "events=alloc");
    let alloc: Vec<&Value> = samples
        .iter()
        .filter(|s| s["event"] == "jdk.ObjectAllocationSample")
        .collect();
    assert!(
        alloc.iter().all(|s| s["weight"].as_i64().unwrap_or(0) > 0),
        "JDK {jdk}: an allocation sample without weight"
    );
    assert!(
        samples
            .iter()
            .all(|s| s["event"] == "jdk.ObjectAllocationSample"),
        "JDK {jdk}: events=alloc recorded other events"
    );
    let t = tally(&samples, &["jdk.ObjectAllocationSample"]);
    assert_clean(jdk, "alloc", &t, 50, &out);
    for m in ["ev_alloc_a", "ev_alloc_b", "ev_none"] {
        assert!(t.per_method.contains_key(m), "JDK {jdk}: no sample in {m}");
    }
}

fn lock(jdk: u32) {
    let (samples, out) = run(jdk, "lock", "5", "events=lock");
    let events = ["jdk.JavaMonitorEnter", "jdk.JavaMonitorWait"];
    let t = tally(&samples, &events);
    assert_clean(jdk, "lock", &t, 20, &out);
    for m in ["ev_lock_a", "ev_lock_b", "ev_wait"] {
        assert!(
            t.per_method.contains_key(m),
            "JDK {jdk}: no lock event in {m}"
        );
    }
    for s in &samples {
        if ev_method(s).is_some_and(|m| m.starts_with("ev_lock_")) {
            assert_eq!(s["event"], "jdk.JavaMonitorEnter", "{s}");
            // The waiting thread (eventThread), not the holder.
            let name = s["thread"]["name"].as_str().unwrap_or("");
            assert!(name.starts_with("waiter-"), "JDK {jdk}: {s}");
            assert!(s["duration_ns"].as_i64().unwrap_or(0) >= 9_000_000, "{s}");
        }
    }
}

fn park(jdk: u32) {
    let (samples, out) = run(jdk, "park", "4", "events=park");
    let t = tally(&samples, &["jdk.ThreadPark"]);
    assert_clean(jdk, "park", &t, 50, &out);
    let mut durations: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for s in &samples {
        if let Some(m) = ev_method(s) {
            durations
                .entry(m)
                .or_default()
                .push(s["duration_ns"].as_i64().unwrap_or(0));
        }
    }
    for (m, lo, hi) in [("ev_park_a", 14, 200), ("ev_park_b", 24, 300)] {
        let mut d = durations.remove(m).unwrap_or_default();
        assert!(!d.is_empty(), "JDK {jdk}: no park in {m}");
        d.sort_unstable();
        let median_ms = d[d.len() / 2] / 1_000_000;
        println!(
            "park JDK {jdk}: {m} {} events, median {median_ms} ms",
            d.len()
        );
        assert!(
            (lo..=hi).contains(&median_ms),
            "JDK {jdk}: {m} median duration {median_ms} ms"
        );
        assert!(d[0] >= 9_000_000, "JDK {jdk}: {m} park below threshold");
    }
}

/// `events=cpu` with `cpu_sampler=` (`sampler`, "" for the default) records `want` only, each
/// sample worth 10 ms (`period=10ms`: the `jdk.ExecutionSample` period or, with `cputime`, the
/// `jdk.CPUTimeSample` throttle, whose `samplingPeriod` says the same), and the summary names it.
fn cpu(jdk: u32, sampler: &str, want: &str) {
    let opts = match sampler {
        "" => "events=cpu,period=10ms".to_string(),
        s => format!("events=cpu,period=10ms,cpu_sampler={s}"),
    };
    let (samples, out) = run_as(jdk, "cpu", &format!("cpu{sampler}"), "4", &opts);
    assert!(!samples.is_empty(), "JDK {jdk}: no samples\n{}", out.dump());
    let other: Vec<&Value> = samples.iter().filter(|s| s["event"] != want).collect();
    assert!(
        other.is_empty(),
        "JDK {jdk}: expected only {want}, got {}",
        other[0]
    );
    // Each sample is worth its real sampling period. HotSpot's CPU-time sampler says so itself
    // (`samplingPeriod`), and a sample that stands for a missed timer tick says a multiple.
    let mut weights: Vec<i64> = samples
        .iter()
        .map(|s| s["weight"].as_i64().unwrap_or(0))
        .collect();
    weights.sort_unstable();
    let multiples = weights.iter().all(|w| *w > 0 && w % 10_000_000 == 0);
    assert!(
        multiples && weights[weights.len() / 2] == 10_000_000,
        "JDK {jdk}: {want} weights are not its 10 ms period: {weights:?}"
    );
    if want == "jdk.ExecutionSample" {
        assert_eq!(weights.last(), Some(&10_000_000), "JDK {jdk}: {weights:?}");
    }
    let summary = out.agent_summary();
    assert!(
        summary
            .line
            .contains(&format!("; cpu_sampler={want} period=10ms")),
        "JDK {jdk}: the summary does not name {want}: {}",
        summary.line
    );
    if sampler == "cputime" && want == "jdk.ExecutionSample" {
        let warned = out.agent_messages().into_iter().any(|l| {
            l.contains("event jdk.CPUTimeSample is not available")
                && l.contains("jdk.ExecutionSample is recorded instead")
        });
        assert!(warned, "JDK {jdk}: no fallback warning\n{}", out.dump());
    }
    let t = tally(&samples, &[want]);
    assert_clean(jdk, &format!("cpu ({want})"), &t, 50, &out);
}

#[test]
fn alloc_events_carry_the_allocating_context_jdk17() {
    alloc(17);
}
#[test]
fn alloc_events_carry_the_allocating_context_jdk21() {
    alloc(21);
}
#[test]
fn alloc_events_carry_the_allocating_context_jdk25() {
    alloc(25);
}
#[test]
fn lock_events_carry_the_waiting_context_jdk17() {
    lock(17);
}
#[test]
fn lock_events_carry_the_waiting_context_jdk21() {
    lock(21);
}
#[test]
fn lock_events_carry_the_waiting_context_jdk25() {
    lock(25);
}
#[test]
fn park_events_carry_context_and_duration_jdk17() {
    park(17);
}
#[test]
fn park_events_carry_context_and_duration_jdk21() {
    park(21);
}
#[test]
fn park_events_carry_context_and_duration_jdk25() {
    park(25);
}
#[test]
fn cpu_is_execution_sample_on_every_jdk_by_default() {
    cpu(21, "", "jdk.ExecutionSample");
    cpu(25, "", "jdk.ExecutionSample");
}
#[test]
fn cpu_sampler_cputime_is_cpu_time_sample_on_25_and_falls_back_before() {
    cpu(25, "cputime", "jdk.CPUTimeSample");
    cpu(17, "cputime", "jdk.ExecutionSample");
}

#[test]
fn missing_event_type_is_a_warning_not_a_failure() {
    let (samples, out) = run(17, "cpu", "2", "events=cpu+jdk.NoSuchEvent#threshold=1ms");
    let warn: Vec<&str> = out
        .agent_lines()
        .into_iter()
        .filter(|l| l.contains("jdk.NoSuchEvent"))
        .collect();
    assert_eq!(warn.len(), 1, "{}", out.dump());
    assert!(
        warn[0].starts_with("jfrctx: warning: event jdk.NoSuchEvent is not available"),
        "{}",
        warn[0]
    );
    assert!(!samples.is_empty());
}

#[test]
fn unknown_preset_stops_the_jvm_with_one_line() {
    for (opts, needle) in [
        ("events=cpu+heap", "unknown preset 'heap'"),
        ("events=jdk.ThreadPark#threshold", "missing '='"),
    ] {
        let out = JvmRun::new(17)
            .agent(opts)
            .main("ev.EventWorkload")
            .args(["cpu", "1"])
            .timeout(Duration::from_secs(60))
            .run();
        assert!(!out.status.success(), "{opts} started:\n{}", out.dump());
        let lines = out.agent_lines();
        assert_eq!(lines.len(), 1, "{opts}:\n{}", out.dump());
        assert!(lines[0].contains(needle), "{opts}: {}", lines[0]);
    }
}

// ---- delivery latency ------------------------------------------------------------------------

/// `CLOCK_MONOTONIC` (the scale of `time_ns`: `System.nanoTime()` on Linux).
fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub struct Delivery {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub samples: usize,
    pub process_cpu_ns: i64,
}

/// Runs the cpu workload for `seconds` and tails the JSON-lines file every 2 ms while the JVM
/// runs: the delay of a sample is the instant its line became readable minus its `time_ns`
/// (both `CLOCK_MONOTONIC`). Samples of the first 1.5 s (calibration warm-up) and lines that
/// appear only after the JVM has exited are left out.
pub fn delivery(jdk: u32, latency: &str, seconds: u32) -> Delivery {
    let _serial = common::serial();
    let name = format!("latency-{jdk}-{}", latency.replace(':', "_"));
    let jsonl = common::out_file(&format!("{name}.jsonl"));
    let stdout = common::out_file(&format!("{name}.out"));
    let stderr = common::out_file(&format!("{name}.err"));
    let opts = format!(
        "sink=jsonl:{},events=cpu,period=10ms,latency={latency},log=info",
        jsonl.display()
    );
    let mut cmd = Command::new(common::java(jdk));
    cmd.arg(common::agent_arg(&opts))
        .arg("-cp")
        .arg(common::classes())
        .args(["ev.EventWorkload", "cpu", &seconds.to_string()])
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .stdin(Stdio::null())
        .stdout(fs::File::create(&stdout).unwrap())
        .stderr(fs::File::create(&stderr).unwrap());
    let mut guard = common::ChildGuard(Some(cmd.spawn().expect("start java")));
    let start = Instant::now();
    let mut offset = 0u64;
    let mut partial = String::new();
    let mut delays: Vec<i64> = Vec::new();
    let mut first: Option<i64> = None;
    let status = loop {
        let exited = guard.child().try_wait().expect("wait");
        if exited.is_none() {
            read_new(&jsonl, &mut offset, &mut partial, |line| {
                let now = monotonic_ns();
                let v: Value = serde_json::from_str(line).expect("json line");
                let t = v["time_ns"].as_i64().unwrap_or(0);
                if t > 0 {
                    let f = *first.get_or_insert(t);
                    if t >= f + 1_500_000_000 {
                        delays.push(now - t);
                    }
                }
            });
        }
        if let Some(s) = exited {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(seconds as u64 + 120),
            "latency run timed out"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    guard.0 = None;
    let err = fs::read_to_string(&stderr).unwrap_or_default();
    assert!(
        status.success(),
        "JDK {jdk} latency={latency}: {status}\n{err}"
    );
    if latency.starts_with("live") {
        // Live mode shortens the history it keeps (no `retention=` given).
        assert!(
            err.contains("history kept 2000 ms"),
            "JDK {jdk}: live mode did not start as expected:\n{err}"
        );
    }
    let out = fs::read_to_string(&stdout).unwrap_or_default();
    let summary: Value = out
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no workload summary:\n{out}\n{err}"));
    assert!(
        delays.len() >= 50,
        "JDK {jdk} latency={latency}: only {} samples seen while running\n{err}",
        delays.len()
    );
    delays.sort_unstable();
    let pct = |p: f64| delays[((delays.len() - 1) as f64 * p).round() as usize] as f64 / 1e6;
    Delivery {
        p50_ms: pct(0.50),
        p99_ms: pct(0.99),
        max_ms: *delays.last().unwrap() as f64 / 1e6,
        samples: delays.len(),
        process_cpu_ns: summary["process_cpu_ns"].as_i64().unwrap_or(0),
    }
}

/// Reads the complete lines appended to `path` since `offset`.
fn read_new(path: &Path, offset: &mut u64, partial: &mut String, mut each: impl FnMut(&str)) {
    let Ok(mut f) = fs::File::open(path) else {
        return;
    };
    if f.seek(SeekFrom::Start(*offset)).is_err() {
        return;
    }
    let mut buf = String::new();
    if let Ok(n) = f.read_to_string(&mut buf) {
        *offset += n as u64;
        partial.push_str(&buf);
        while let Some(i) = partial.find('\n') {
            let line: String = partial.drain(..=i).collect();
            if !line.trim().is_empty() {
                each(line.trim_end());
            }
        }
    }
}

fn latency(jdk: u32) {
    let seconds = 8;
    let d = delivery(jdk, "default", seconds);
    let l = delivery(jdk, "live", seconds);
    for (mode, x) in [("default", &d), ("live", &l)] {
        println!(
            "latency JDK {jdk} {mode:<7}: p50 {:7.1} ms  p99 {:7.1} ms  max {:7.1} ms  ({} samples)  \
             process CPU {:.3} s",
            x.p50_ms,
            x.p99_ms,
            x.max_ms,
            x.samples,
            x.process_cpu_ns as f64 / 1e9
        );
    }
    // The target is p99 <= 150 ms; this loaded 2-core machine gets a margin.
    assert!(
        l.p99_ms <= 300.0,
        "JDK {jdk}: live p99 {:.1} ms > 300 ms",
        l.p99_ms
    );
    assert!(
        d.p99_ms >= 500.0,
        "JDK {jdk}: default p99 {:.1} ms: JFR's ~1 s flush expected",
        d.p99_ms
    );
    assert!(l.p50_ms < d.p50_ms, "JDK {jdk}: live is not faster");
}

#[test]
fn live_latency_jdk17() {
    latency(17);
}

#[test]
fn live_latency_jdk21() {
    latency(21);
}

#[test]
fn live_latency_jdk25() {
    latency(25);
}

#[test]
fn expectation_table() {
    assert!(expected("ev_none").is_empty());
    assert!(expected("ev_cpu_none").is_empty());
    assert_eq!(expected("ev_lock_a")["ev"], "lock_a");
    let s = serde_json::json!({"event":"jdk.ThreadPark","context":{"ev":"park_a"},
        "stack":[{"method":"jdk.internal.misc.Unsafe.park","line":-1},
                 {"method":"ev.EventWorkload.ev_park_a","line":3}]});
    let t = tally(&[s], &["jdk.ThreadPark"]);
    assert_eq!(t.correct, 1);
}
