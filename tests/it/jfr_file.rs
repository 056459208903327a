//! `sink=jfr:PATH` read by the JDK's own tools: one run of the ground-truth workload
//! (`tests/java/gt/GroundTruth.java`) writes `sink=jsonl` and `sink=jfr` together; then, with the
//! `jfr` tool of the same JDK:
//!
//! - `jfr summary` counts as many `jdk.ExecutionSample` events as the JSON lines hold;
//! - `jfr print --events jdk.ExecutionSample` reads every event (exit 0, one block per sample);
//! - `jfr print --json` gives, sample for sample, the JSON lines' time (up to the one constant
//!   offset between `System.nanoTime()` and the wall clock), thread, stack and context:
//!   `"context": {}` in JSON lines is `context: null, contextUnknown: null`; `"context": null,
//!   "unknown": R` is `context: null, contextUnknown: R`; a map is a `jfrctx.Context` whose value
//!   is that map as JSON text;
//! - `jfr view hot-methods` (JDK 21+) ranks the workload's `gt_*` methods first;
//! - JDK Mission Control's parser (`org.openjdk.jmc:flightrecorder` from Maven Central, through
//!   `scripts/jmc.sh`), driven by `tests/jmc/JmcCheck.java` (compiled here with JDK 17's `javac`),
//!   reads every event, and its time, thread, stack and context agree with the JSON lines the same
//!   way.
//!
//! `cargo test --test it jfr_file:: -- --nocapture` prints the figures per JDK.

mod read;

use crate::common::{self, JvmRun};
use read::{
    agree, complete_chunks, from_jfr_json, from_jmc, from_jsonl, jfr_tool, jmc_read, parse_instant,
    sorted,
};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const SECONDS: &str = "3";

/// Runs the workload with both sinks; returns the JSON lines' samples.
fn record(jdk: u32, jsonl: &Path, jfr: &Path) -> Vec<Value> {
    let _serial = common::serial();
    let options = format!(
        "sink=jsonl:{},sink=jfr:{},period=1ms,interval=1s",
        jsonl.display(),
        jfr.display()
    );
    let out = JvmRun::new(jdk)
        .agent(&options)
        .main("gt.GroundTruth")
        .args([SECONDS, "platform"])
        .timeout(Duration::from_secs(120))
        .run();
    assert!(out.status.success(), "JDK {jdk}:\n{}", out.dump());
    let summary = out.agent_summary();
    assert_eq!(summary.sink("jfr:").errors, 0, "{}", out.dump());
    let lines = common::read_json_lines(jsonl);
    assert_eq!(summary.sink("jfr:").records, lines.len() as u64);
    lines
}

fn check(jdk: u32) {
    let jsonl = common::out_file(&format!("jfr-file-{jdk}.jsonl"));
    let jfr = common::out_file(&format!("jfr-file-{jdk}.jfr"));
    let lines = record(jdk, &jsonl, &jfr);
    let path = jfr.to_str().unwrap();
    let size = std::fs::metadata(&jfr).unwrap().len();

    let summary = jfr_tool(jdk, &["summary", path]);
    let chunks = complete_chunks(&std::fs::read(&jfr).unwrap());
    assert!(chunks >= 2, "{chunks} chunks");
    assert!(summary.contains(&format!("Chunks: {chunks}")), "{summary}");
    let count = summary
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("jdk.ExecutionSample")).then(|| w.next()?.parse::<usize>().ok())?
        })
        .unwrap_or_else(|| panic!("no jdk.ExecutionSample row in jfr summary:\n{summary}"));
    let expected: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "jdk.ExecutionSample")
        .collect();
    assert!(expected.len() > 300, "only {} samples", expected.len());
    assert_eq!(count, expected.len(), "jfr summary:\n{summary}");

    let printed = jfr_tool(jdk, &["print", "--events", "jdk.ExecutionSample", path]);
    assert_eq!(
        printed.matches("jdk.ExecutionSample {").count(),
        expected.len()
    );
    assert!(
        printed.contains(r#"context = "{"gt":"#),
        "no context printed"
    );

    let json: Value = serde_json::from_str(&jfr_tool(
        jdk,
        &["print", "--json", "--stack-depth", "4096", path],
    ))
    .expect("jfr print --json gives JSON");
    let events = json["recording"]["events"].as_array().expect("events");
    let got = events
        .iter()
        .filter(|e| e["type"] == "jdk.ExecutionSample")
        .map(from_jfr_json)
        .collect();
    let want = sorted(expected.iter().map(|v| from_jsonl(v)).collect());
    let with_context = agree("jfr print --json", got, &want);
    assert!(with_context > 100, "{with_context} samples with a context");

    let jmc = jmc_read(&jfr);
    assert_eq!(jmc.len(), lines.len(), "JMC reads every event");
    let got = jmc
        .iter()
        .filter(|e| e["event"] == "jdk.ExecutionSample")
        .map(from_jmc)
        .collect();
    assert_eq!(agree("JMC", got, &want), with_context);

    if jdk >= 21 {
        let view = jfr_tool(jdk, &["view", "hot-methods", path]);
        let first = view
            .lines()
            .find(|l| l.contains('%'))
            .unwrap_or_else(|| panic!("no rows in jfr view hot-methods:\n{view}"));
        assert!(first.contains("gt.GroundTruth.gt_"), "{view}");
    }
    println!(
        "JDK {jdk}: {} samples ({with_context} with a context) in {chunks} chunks, {size} bytes \
         ({:.1} bytes/sample); jfr summary, print, print --json{}, JMC agree",
        want.len(),
        size as f64 / lines.len() as f64,
        if jdk >= 21 { ", view hot-methods" } else { "" }
    );
}

#[test]
fn jdk17() {
    check(17);
}

#[test]
fn jdk21() {
    check(21);
}

#[test]
fn jdk25() {
    check(25);
}

#[test]
fn instants_parse() {
    assert_eq!(parse_instant("1970-01-01T00:00:00Z"), 0);
    assert_eq!(parse_instant("1970-01-02T00:00:01.5Z"), 86_401_500_000_000);
    assert_eq!(
        parse_instant("2026-11-23T17:42:42.355722097Z"),
        1_795_455_762_355_722_097
    );
}

/// `interval=1s` ends a chunk every second; a JVM killed with SIGKILL (no VMDeath, no finish)
/// leaves a file whose completed chunks `jfr` reads whole, every sample with its right context.
#[test]
fn a_killed_jvm_leaves_its_completed_chunks_readable() {
    let jdk = 21;
    let jfr = common::out_file("jfr-file-killed.jfr");
    let options = format!("sink=jfr:{},interval=1s,period=1ms", jfr.display());
    let mut jvm = {
        let _serial = common::serial();
        JvmRun::new(jdk)
            .agent(&options)
            .main("gt.GroundTruth")
            .args(["30", "platform"])
            .timeout(Duration::from_secs(30))
            .spawn()
    };
    let started = std::time::Instant::now();
    let mut chunks = 0;
    while chunks < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{chunks} chunks after 30 s:\n{}",
            jvm.stdout_so_far()
        );
        std::thread::sleep(Duration::from_millis(100));
        chunks = complete_chunks(&std::fs::read(&jfr).unwrap_or_default());
    }
    jvm.signal(libc::SIGKILL);
    let out = jvm.finish();
    assert!(!out.status.success(), "the JVM was killed");
    let bytes = std::fs::read(&jfr).unwrap();
    let complete = complete_chunks(&bytes);
    assert!(complete >= 3);

    let path = jfr.to_str().unwrap();
    let summary = jfr_tool(jdk, &["summary", path]);
    let chunks = complete_chunks(&std::fs::read(&jfr).unwrap());
    assert!(chunks >= 2, "{chunks} chunks");
    assert!(summary.contains(&format!("Chunks: {chunks}")), "{summary}");
    assert!(
        summary.contains(&format!("Chunks: {complete}")),
        "{summary}"
    );
    let json: Value = serde_json::from_str(&jfr_tool(
        jdk,
        &["print", "--json", "--stack-depth", "4096", path],
    ))
    .unwrap();
    let mut correct = 0;
    for e in json["recording"]["events"].as_array().unwrap() {
        let s = from_jfr_json(e);
        let Some(gt) = s.stack.iter().find_map(|f| {
            let m = f.strip_prefix("gt.GroundTruth.")?.split(':').next()?;
            m.starts_with("gt_").then(|| m.to_string())
        }) else {
            continue;
        };
        match &s.context {
            Ok(ctx) => {
                assert_eq!(
                    ctx,
                    &crate::ground_truth::expected_context(&gt),
                    "{gt}: {s:?}"
                );
                correct += 1;
            }
            Err(reason) => assert!(!reason.is_empty()),
        }
    }
    assert!(
        correct > 100,
        "{correct} gt_* samples with the right context"
    );
    println!(
        "killed after {complete} chunks ({} bytes): {correct} gt_* samples with the right context",
        bytes.len()
    );
}

/// JDK 25's `jfr print` shows, on each `jdk.ThreadPark` of the file, the context of the
/// `jfrctx.ContextSpan` (field `@jdk.jfr.Contextual`) that covers it, and that context is the
/// park's own; one span per park with a context (`tests/java/ev/EventWorkload.java`, `park`).
#[test]
fn jdk25_shows_contextual_spans_on_park_events() {
    let jdk = 25;
    let jsonl = common::out_file("jfr-file-park.jsonl");
    let jfr = common::out_file("jfr-file-park.jfr");
    let options = format!(
        "sink=jsonl:{},sink=jfr:{},events=park",
        jsonl.display(),
        jfr.display()
    );
    let out = {
        let _serial = common::serial();
        JvmRun::new(jdk)
            .agent(&options)
            .main("ev.EventWorkload")
            .args(["park", "2"])
            .timeout(Duration::from_secs(120))
            .run()
    };
    assert!(out.status.success(), "{}", out.dump());
    let with_context = common::read_json_lines(&jsonl)
        .iter()
        .filter(|l| l["event"] == "jdk.ThreadPark")
        .filter(|l| l["context"].as_object().is_some_and(|m| !m.is_empty()))
        .count();
    assert!(with_context > 20, "{with_context} parks with a context");

    let printed = jfr_tool(
        jdk,
        &["print", "--events", "jdk.ThreadPark", jfr.to_str().unwrap()],
    );
    let mut shown = 0;
    for block in printed.split("jdk.ThreadPark {").skip(1) {
        let field = |prefix: &str| {
            block
                .lines()
                .find_map(|l| l.trim().strip_prefix(prefix).map(str::to_string))
        };
        let own = field("context = ");
        match field("Context: ContextSpan.context = ") {
            Some(span) => {
                assert_eq!(Some(span), own, "{block}");
                shown += 1;
            }
            None => assert!(own.is_none_or(|c| c == "N/A"), "no span shown:\n{block}"),
        }
    }
    assert_eq!(shown, with_context, "parks shown with their span's context");
    println!("JDK 25 jfr print: {shown} parks shown with their context span");
}

/// `jfr_max_size`: a file the writer bounded (its oldest chunks dropped and the rest rewritten)
/// reads whole in `jfr` (JDK 21) and JMC, every remaining event with its context. The
/// file is written through the sink's API directly (no JVM needed to produce it): samples with
/// a distinct context each, so that the 1 MiB bound is crossed quickly.
#[test]
fn a_file_bounded_by_jfr_max_size_reads_whole() {
    use jfrctx::core::model::{ContextMap, ContextualSample, Frame, ThreadInfo};
    use jfrctx::sink::jfr::chunk::Clock;
    use jfrctx::sink::jfr::JfrSink;
    use jfrctx::sink::{Sink, SinkOptions};
    use std::sync::Arc;

    let path = common::out_file("jfr-file-bounded.jfr");
    let options = SinkOptions {
        jfr_max_size: Some(1 << 20),
        ..SinkOptions::default()
    };
    fn now() -> i64 {
        0
    }
    let clock = Clock {
        wall_ns: 1_700_000_000_000_000_000,
        mono_ns: 0,
    };
    let mut sink = JfrSink::with_clock(&path, &options, clock, now).unwrap();
    let event: Arc<str> = Arc::from("jdk.ExecutionSample");
    let n = 60_000u64;
    for i in 0..n {
        let s = ContextualSample {
            event: Arc::clone(&event),
            time_ns: i as i64 * 1000,
            duration_ns: 0,
            thread: ThreadInfo {
                id: Some(1 + i % 4),
                name: Arc::from(format!("t{}", i % 4)),
                is_virtual: false,
            },
            context: Ok(Arc::new(ContextMap::from_pairs(&[("i", i.to_string())]))),
            weight: 0,
            frames: vec![Frame {
                method: Arc::from("a.B.c"),
                line: (i % 100) as i32,
            }],
            truncated: false,
        };
        sink.record(&s).unwrap();
    }
    sink.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let chunks = complete_chunks(&bytes);
    assert!(bytes.len() <= 1 << 20, "{} bytes", bytes.len());
    assert!(chunks >= 2, "{chunks} chunks");

    let check = |events: Vec<(u64, String)>, reader: &str| {
        assert!(
            !events.is_empty() && (events.len() as u64) < n,
            "{reader}: {}",
            events.len()
        );
        // The newest samples survive, each with its own context.
        let mut seen: Vec<u64> = events
            .iter()
            .map(|(t, ctx)| {
                let i = t / 1000;
                assert_eq!(ctx, &format!("{{\"i\":\"{i}\"}}"), "{reader}");
                i
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(*seen.last().unwrap(), n - 1, "{reader}");
        assert!(seen.windows(2).all(|w| w[1] == w[0] + 1), "{reader}: a gap");
        seen.len()
    };
    let mut counts = Vec::new();
    let jdk = 21;
    let json: Value =
        serde_json::from_str(&jfr_tool(jdk, &["print", "--json", path.to_str().unwrap()])).unwrap();
    let events = json["recording"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let v = &e["values"];
            let t = parse_instant(v["startTime"].as_str().unwrap());
            let t = (t - 1_700_000_000_000_000_000) as u64;
            (t, v["context"].as_str().unwrap().to_string())
        })
        .collect();
    counts.push(check(events, &format!("jfr {jdk}")));
    let jmc = jmc_read(&path)
        .iter()
        .map(|e| {
            let t = e["time_ns"].as_u64().unwrap() - 1_700_000_000_000_000_000;
            (t, e["context"].as_str().unwrap().to_string())
        })
        .collect();
    counts.push(check(jmc, "JMC"));
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
    println!(
        "bounded file: {} bytes, {chunks} chunks, {} of {n} samples kept, read alike by jfr and JMC",
        bytes.len(),
        counts[0]
    );
}
