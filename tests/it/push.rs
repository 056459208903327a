//! `push=URL`: the agent POSTs one pprof profile per interval to a Pyroscope `/ingest`. The server
//! is `fake_pyroscope`, which does what Grafana Pyroscope v1.19.3's ingest handler does (see its
//! module documentation): it refuses what Pyroscope refuses, with the same status and answer, and
//! stores what it accepts as Pyroscope's series. Its per-series totals are checked against the
//! JSON lines of the same run (`gt.GroundTruth`), also when the JVM ends by SIGTERM. Then dead
//! endpoints (nothing listening; a server that accepts but never answers): the JVM runs, exits
//! within a bounded time, the JSON lines are complete, each kind of fault is logged once and the
//! summary counts the failures and drops.
//!
//! `cargo test --test it push:: -- --nocapture` prints the figures.

use crate::common::{self, JvmRun, Run};
use crate::fake_pyroscope;

use fake_pyroscope::{Fake, Store};
use flate2::write::GzEncoder;
use jfrctx::sink::fnv1a_hex;
use jfrctx::sink::proto::{Function, Label, Line, Location, Profile, Sample, ValueType};
use prost::Message;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// Context key of the ground-truth workload.
const KEY: &str = "gt";
const TIMEOUT: Duration = Duration::from_secs(120);
/// The workload's closing stdout line starts with this.
const WORKLOAD_DONE: &str = "{\"workload\":\"GroundTruth\"";

/// Per value of series label `key` (`None`: series without it), the stored totals of sample type
/// `samples` for service `app`; and the number of such series.
fn totals(store: &Store, app: &str, key: &str) -> (BTreeMap<Option<String>, i64>, usize) {
    let mut by = BTreeMap::new();
    let mut n = 0;
    for (labels, v) in &store.series {
        let get = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if get("service_name").as_deref() != Some(app)
            || get("__type__").as_deref() != Some("samples")
        {
            continue;
        }
        n += 1;
        *by.entry(get(key)).or_default() += v;
    }
    (by, n)
}

/// Per value of context `key` in the JSON lines (`None`: without it), `hash`ed or not.
fn json_totals(samples: &[Value], key: &str, hash: bool) -> BTreeMap<Option<String>, i64> {
    let mut by = BTreeMap::new();
    for s in samples {
        let v = s["context"].get(key).and_then(Value::as_str);
        let v = v.map(|v| if hash { fnv1a_hex(v) } else { v.to_string() });
        *by.entry(v).or_default() += 1;
    }
    by
}

/// Spawns `gt.GroundTruth seconds` with `options`; returns its output and how long the JVM
/// took to exit after the workload printed its closing line.
fn run(jdk: u32, options: &str, seconds: &str) -> (Run, Duration) {
    let mut jvm = JvmRun::new(jdk)
        .agent(options)
        .main("gt.GroundTruth")
        .args([seconds])
        .timeout(TIMEOUT)
        .spawn();
    jvm.wait_for_stdout(WORKLOAD_DONE, TIMEOUT);
    let done = Instant::now();
    let out = jvm.finish();
    (out, done.elapsed())
}

/// `push ... profiles= pushed= refused= failed= retried= dropped=` of the summary line.
fn push_figures(line: &str) -> [u64; 6] {
    let tail = line
        .split("; push ")
        .nth(1)
        .unwrap_or_else(|| panic!("no push in {line}"));
    [
        "profiles=",
        "pushed=",
        "refused=",
        "failed=",
        "retried=",
        "dropped=",
    ]
    .map(|k| {
        let at = tail.find(k).unwrap_or_else(|| panic!("no {k} in {line}")) + k.len();
        let digits: String = tail[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().unwrap()
    })
}

#[test]
fn push_matches_json_lines_jdk21() {
    let _serial = common::serial();
    let fake = Fake::start();
    let jsonl = common::out_file("push.jsonl");
    let options = format!(
        "sink=jsonl:{},push={}/pyro,push_app=gt-test,push_labels=suite=push+jdk=21,\
         push_tenant=ci-tenant,interval=1s,period=1ms,cardinality={KEY}:hash",
        jsonl.display(),
        fake.url()
    );
    let (out, exit) = run(21, &options, "4");
    let store = fake.finish();
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.agent_messages().is_empty(), "{}", out.dump());
    let summary = out.agent_summary();
    let figures = push_figures(&summary.line);
    let samples = common::read_json_lines(&jsonl);

    for r in &store.requests {
        assert_eq!((r.status, r.answer.as_str()), (200, ""), "{r:?}");
        assert_eq!(
            r.headers.get("x-scope-orgid").map(String::as_str),
            Some("ci-tenant")
        );
        let (path, q) = r.target.split_once('?').unwrap();
        assert_eq!(path, "/pyro/ingest");
        let q: BTreeMap<&str, String> = q
            .split('&')
            .map(|kv| kv.split_once('=').unwrap())
            .map(|(k, v)| (k, fake_pyroscope::percent_decode(v)))
            .collect();
        assert_eq!(q["name"], "gt-test{suite=push,jdk=21}");
        assert_eq!(
            (q["format"].as_str(), q["spyName"].as_str()),
            ("pprof", "jfrctx")
        );
    }
    let (by, series) = totals(&store, "gt-test", KEY);
    let json_by = json_totals(&samples, KEY, true);
    println!(
        "push JDK 21: {} requests, {series} series of type samples, per {KEY} (hashed): {by:?}; \
         JVM exit {exit:?} after main; {}",
        store.requests.len(),
        summary.line
    );
    assert!(samples.len() >= 200, "only {} samples", samples.len());
    assert!(
        store.requests.len() >= 3,
        "only {} profiles",
        store.requests.len()
    );
    // Every profile taken; the stored totals are the JSON lines'.
    let n = store.requests.len() as u64;
    assert_eq!(figures, [n, n, 0, 0, 0, 0], "{}", summary.line);
    assert_eq!(by, json_by, "stored per {KEY} (hashed) vs JSON lines");
    let push_sink = summary.sink("push:http://127.0.0.1:");
    assert_eq!(
        (push_sink.records, push_sink.errors),
        (samples.len() as u64, 0)
    );
    // Series: gt (5 values) x layer (1) x thread names, far below the budget.
    assert!(series <= 64, "{series} series");
    let with_key = json_by
        .iter()
        .filter(|(k, _)| k.is_some())
        .map(|(_, v)| v)
        .sum::<i64>();
    let cardinality = format!("; cardinality: {KEY} replaced {with_key}");
    assert!(
        summary.line.contains(&format!("{cardinality};")) || summary.line.ends_with(&cardinality),
        "{} lacks {cardinality}",
        summary.line
    );
}

#[test]
fn the_last_profile_is_pushed_at_sigterm_jdk17() {
    let _serial = common::serial();
    let fake = Fake::start();
    let jsonl = common::out_file("push-sigterm.jsonl");
    let options = format!(
        "sink=jsonl:{},push={},push_app=gt-sigterm,interval=1s,period=5ms",
        jsonl.display(),
        fake.url()
    );
    let mut jvm = JvmRun::new(17)
        .agent(&options)
        .main("gt.Faults")
        .args(["wait"])
        .timeout(TIMEOUT)
        .spawn();
    jvm.wait_for_stdout("faults: ready", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(2500));
    jvm.signal(libc::SIGTERM);
    let out = jvm.finish();
    let store = fake.finish();
    assert_eq!(out.status.code(), Some(143), "{}", out.dump());
    let summary = out.agent_summary();
    let [profiles, pushed, refused, failed, _, dropped] = push_figures(&summary.line);
    let samples = common::read_json_lines(&jsonl);
    let (by, _) = totals(&store, "gt-sigterm", "thread");
    let stored: i64 = by.values().sum();
    println!(
        "push at SIGTERM: {stored} samples stored, {} JSON lines; {}",
        samples.len(),
        summary.line
    );
    assert!(profiles >= 2, "{}", summary.line);
    assert_eq!(
        (pushed, refused, failed, dropped),
        (profiles, 0, 0, 0),
        "{}",
        summary.line
    );
    assert_eq!(stored, samples.len() as i64, "stored vs JSON lines");
}

/// A gzipped pprof with one CPU sample labelled `labels`.
fn pprof(labels: &[(&str, &str)]) -> Vec<u8> {
    let mut strings = vec![String::new()];
    let mut s = |x: &str| {
        strings.push(x.to_string());
        strings.len() as i64 - 1
    };
    let p = Profile {
        sample_type: vec![
            ValueType {
                r#type: s("samples"),
                unit: s("count"),
            },
            ValueType {
                r#type: s("cpu"),
                unit: s("nanoseconds"),
            },
        ],
        sample: vec![Sample {
            location_id: vec![1],
            value: vec![1, 10_000_000],
            label: labels
                .iter()
                .map(|(k, v)| Label {
                    key: s(k),
                    str: s(v),
                    ..Label::default()
                })
                .collect(),
        }],
        location: vec![Location {
            id: 1,
            line: vec![Line {
                function_id: 1,
                line: 7,
                column: 0,
            }],
            ..Location::default()
        }],
        function: vec![Function {
            id: 1,
            name: s("A.a"),
            ..Function::default()
        }],
        ..Profile::default()
    };
    let mut p = p;
    p.string_table = strings;
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&p.encode_to_vec()).unwrap();
    gz.finish().unwrap()
}

fn post(port: u16, query: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    let head = format!(
        "POST /ingest?{query} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    fake_pyroscope::request(port, &head, body)
}

/// The form the agent sent before (a multipart body with `format=pprof`) is refused, as the
/// real server refuses it; the two forms Pyroscope reads are taken. The expected answers are
/// those Pyroscope v1.19.3 gave to the same requests.
#[test]
fn the_fake_answers_as_pyroscope_does() {
    let fake = Fake::start();
    let gz = pprof(&[("endpoint", "/a")]);
    let boundary = "b0undary";
    let mut form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"profile\"; \
         filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    form.extend_from_slice(&gz);
    form.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let multipart = format!("multipart/form-data; boundary={boundary}");
    let q = "name=app%7B%7D&from=1&until=2&spyName=jfrctx&sampleRate=100";
    // The old request: Pyroscope reads the form as one raw pprof and fails.
    let (status, answer) = post(fake.port, &format!("{q}&format=pprof"), &multipart, &form);
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer.starts_with(
            "{\"code\":\"unknown\",\"message\":\"parsing IngestInput-pprof failed \
             invalid_argument: "
        ),
        "{answer}"
    );
    // The form without format, and the raw body with it, are taken.
    assert_eq!(post(fake.port, q, &multipart, &form), (200, String::new()));
    let raw = "application/octet-stream";
    assert_eq!(
        post(fake.port, &format!("{q}&format=pprof"), raw, &gz),
        (200, String::new())
    );
    // Refusals, word for word.
    assert_eq!(
        post(fake.port, "name=a%20b%7B%7D&format=pprof", raw, &gz),
        (
            400,
            "{\"code\":\"invalid_argument\",\"message\":\"name: invalid service name: a b: \
             character is not allowed: ' '\"}"
                .to_string()
        )
    );
    assert_eq!(
        post(fake.port, "name=x5%7Bbad-key%3Dv%7D&format=pprof", raw, &gz),
        (
            400,
            "{\"code\":\"invalid_argument\",\"message\":\"name: invalid label name: bad-key: \
             character is not allowed: '-'\"}"
                .to_string()
        )
    );
    let (status, answer) = post(
        fake.port,
        "name=x2%7B%7D&format=pprof&spyName=jfrctx",
        raw,
        &pprof(&[("user-id", "u0")]),
    );
    let expected = serde_json::json!({
        "code": "unknown",
        "message": "pushing IngestInput-pprof failed push series with index 0 and id  failed: \
                    invalid_argument: invalid labels '{__delta__=\"false\", \
                    __name__=\"process_cpu\", pyroscope_spy=\"jfrctx\", service_name=\"x2\", \
                    user-id=\"u0\"}' with error: invalid label name 'user-id'"
    });
    assert_eq!((status, answer), (422, expected.to_string()));
    // Span ids do not split series, trace ids do (Pyroscope v1.19.3 gave 2 and 80 series).
    for i in 0..4 {
        let span = format!("{i:016x}");
        let trace = format!("{i:032x}");
        let q = "name=spans%7B%7D&format=pprof";
        assert_eq!(
            post(fake.port, q, raw, &pprof(&[("span_id", &span)])).0,
            200
        );
        let q = "name=traces%7B%7D&format=pprof";
        assert_eq!(
            post(fake.port, q, raw, &pprof(&[("trace_id", &trace)])).0,
            200
        );
    }
    let store = fake.finish();
    assert_eq!(totals(&store, "spans", "span_id").1, 1);
    assert_eq!(totals(&store, "traces", "trace_id").1, 4);
    assert_eq!(store.spans, 4);
}

/// Checks a run against an endpoint that takes nothing. The workload runs `seconds`: against a
/// silent endpoint an attempt fails only after its 5 s timeout, so the run must outlast one.
fn dead_endpoint(jdk: u32, url: &str, name: &str, seconds: &str) {
    let jsonl = common::out_file(&format!("push-dead-{name}.jsonl"));
    let options = format!(
        "sink=jsonl:{},push={url},interval=1s,period=5ms",
        jsonl.display()
    );
    let started = Instant::now();
    let (out, exit) = run(jdk, &options, seconds);
    let wall = started.elapsed();
    assert!(out.status.success(), "{}", out.dump());
    let summary = out.agent_summary();
    let [profiles, pushed, refused, failed, retried, dropped] = push_figures(&summary.line);
    let samples = common::read_json_lines(&jsonl);
    println!(
        "push to a dead endpoint ({name}) JDK {jdk}: JVM exit {exit:?} after main, {wall:?} in \
         all; {}",
        summary.line
    );
    // The other sink is complete.
    let json = summary.sink("jsonl:");
    assert_eq!((json.records, json.errors), (samples.len() as u64, 0));
    assert!(samples.len() >= 50, "only {} samples", samples.len());
    // No profile was taken; each failed or was dropped, and is counted.
    assert!(profiles >= 2, "{}", summary.line);
    assert_eq!((pushed, refused), (0, 0), "{}", summary.line);
    assert_eq!(failed + dropped, profiles, "{}", summary.line);
    if name == "refused" {
        // Refused connections fail at once: a profile uses up its attempts within the run.
        assert!(failed >= 1, "{}", summary.line);
        assert!(retried >= 1, "{}", summary.line);
    }
    // A silent endpoint fails an attempt only after its 5 s timeout, and a profile after four
    // attempts: longer than the run, so its profiles end dropped at exit, after the warning
    // below said that the first attempt failed and what happens next.
    // The push sink's samples are errors, not records.
    let push_sink = summary.sink("push:");
    assert_eq!(push_sink.records, 0, "{}", summary.line);
    // The first failure says what happens next; at most one more warning (drops).
    let messages = out.agent_messages();
    assert!((1..=2).contains(&messages.len()), "{}", out.dump());
    let failure = format!("jfrctx: warning: push to {url}: sending failed: ");
    assert!(messages[0].starts_with(&failure), "{}", messages[0]);
    assert!(
        messages[0].contains("; retrying in 0.5 s"),
        "{}",
        messages[0]
    );
    for m in &messages[1..] {
        assert!(
            m.starts_with(&format!("jfrctx: warning: push to {url}: ")),
            "{m}"
        );
        assert!(m.contains("dropped"), "{m}");
    }
    // Bounded exit: the push sink waits at most 2 s (+0.2 s); the rest is the JVM's own exit
    // (stopping the JFR stream, about a second).
    assert!(exit < Duration::from_secs(5), "exit took {exit:?}");
}

#[test]
fn refused_endpoint_jdk17() {
    let _serial = common::serial();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    dead_endpoint(17, &format!("http://127.0.0.1:{port}"), "refused", "4");
}

#[test]
fn silent_endpoint_jdk17() {
    let _serial = common::serial();
    // Connections complete in the backlog but are never accepted, so no answer ever comes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    dead_endpoint(17, &url, "silent", "9");
    drop(listener);
}
