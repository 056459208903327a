//! `push=URL`: the agent POSTs one pprof profile per interval to a Pyroscope-compatible
//! `/ingest`. A small HTTP server inside the test takes them; every body is decoded (multipart
//! form field `profile`, gunzipped, `profile.proto` through the crate's prost types) and its
//! per-label counts are checked against the JSON lines of the same run (`gt.GroundTruth`).
//! Then dead endpoints (nothing listening; a server that accepts but never answers): the JVM runs,
//! exits within a bounded time, the JSON lines are complete, the fault is logged once and the
//! summary counts the drops.
//!
//! `cargo test --test push -- --nocapture` prints the figures.

mod common;

use flate2::read::GzDecoder;
use jfrctx::sink::fnv1a_hex;
use jfrctx::sink::proto::Profile;
use prost::Message;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Context key of the ground-truth workload.
const KEY: &str = "gt";
const TIMEOUT: Duration = Duration::from_secs(120);
/// The workload's closing stdout line starts with this.
const WORKLOAD_DONE: &str = "{\"workload\":\"GroundTruth\"";

/// One request the server took: its target (path and query) and the form field `profile`.
struct Request {
    target: String,
    profile: Vec<u8>,
}

/// An HTTP/1.1 server on 127.0.0.1 answering every POST with 200 after reading its body.
struct Server {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (r, s) = (requests.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let req = handle(conn);
                        r.lock().unwrap().push(req);
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            port,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Vec<Request> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("server thread");
        }
        std::mem::take(&mut *self.requests.lock().unwrap())
    }
}

/// Reads one request (head, `Content-Length` body), answers 200, returns it.
fn handle(mut conn: TcpStream) -> Request {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 16384];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = conn.read(&mut buf).expect("read head");
        assert!(n > 0, "connection closed inside the head");
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8(data[..head_end].to_vec()).expect("ASCII head");
    let mut lines = head.lines();
    let request_line = lines.next().unwrap_or_default().to_string();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no {name} header in {head}"))
    };
    let len: usize = header("content-length").parse().expect("Content-Length");
    let content_type = header("content-type");
    while data.len() < head_end + len {
        let n = conn.read(&mut buf).expect("read body");
        assert!(n > 0, "connection closed inside the body");
        data.extend_from_slice(&buf[..n]);
    }
    conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut parts = request_line.split(' ');
    assert_eq!(parts.next(), Some("POST"), "{request_line}");
    let target = parts.next().expect("target").to_string();
    assert_eq!(parts.next(), Some("HTTP/1.1"), "{request_line}");
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("Content-Type {content_type}"));
    let profile = form_field(&data[head_end..head_end + len], boundary, "profile");
    Request { target, profile }
}

/// The content of the form field `name` of a `multipart/form-data` body.
fn form_field(body: &[u8], boundary: &str, name: &str) -> Vec<u8> {
    let delimiter = format!("--{boundary}");
    let find = |from: usize, what: &[u8]| {
        body[from..]
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| i + from)
    };
    let mut at = find(0, delimiter.as_bytes()).expect("first boundary");
    loop {
        let part = at + delimiter.len();
        assert!(!body[part..].starts_with(b"--"), "no form field {name}");
        let head_end = find(part, b"\r\n\r\n").expect("part head") + 4;
        let next = find(head_end, format!("\r\n{delimiter}").as_bytes()).expect("next boundary");
        let head = String::from_utf8_lossy(&body[part..head_end]);
        if head.contains(&format!("name=\"{name}\"")) {
            return body[head_end..next].to_vec();
        }
        at = next + 2;
    }
}

/// `%XX` decoding of a query value.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).expect("hex"));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

fn query(target: &str) -> BTreeMap<String, String> {
    let (path, q) = target.split_once('?').expect("query");
    assert_eq!(path, "/pyro/ingest");
    q.split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("k=v");
            (k.to_string(), percent_decode(v))
        })
        .collect()
}

fn decode(gz: &[u8]) -> Profile {
    let mut raw = Vec::new();
    GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("the profile is gzipped");
    Profile::decode(raw.as_slice()).expect("the profile decodes as profile.proto")
}

/// `samples/count` summed over all samples, and per value of the label `key`.
fn counts(p: &Profile, key: &str) -> (u64, BTreeMap<String, u64>) {
    let s = |i: i64| p.string_table[i as usize].as_str();
    let count = p
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == "samples" && s(t.unit) == "count")
        .expect("sample type samples/count");
    let (mut total, mut by) = (0, BTreeMap::new());
    for sample in &p.sample {
        let n = sample.value[count] as u64;
        total += n;
        for l in sample.label.iter().filter(|l| s(l.key) == key) {
            *by.entry(s(l.str).to_string()).or_default() += n;
        }
    }
    (total, by)
}

/// Spawns `gt.GroundTruth seconds` with `options`; returns its output and how long the JVM
/// took to exit after the workload printed its closing line.
fn run(jdk: u32, options: &str, seconds: &str) -> (common::Output, Duration) {
    let mut jvm = common::spawn_java(
        &common::java(jdk),
        &[common::agent_arg(options)],
        "gt.GroundTruth",
        &[seconds],
        &[],
    );
    jvm.wait_for_stdout(WORKLOAD_DONE, TIMEOUT);
    let done = Instant::now();
    let out = jvm.wait(TIMEOUT);
    (out, done.elapsed())
}

/// `push ... profiles=N pushed=N retried=N dropped=N` of the summary line.
fn push_figures(line: &str) -> [u64; 4] {
    let tail = line
        .split("; push ")
        .nth(1)
        .unwrap_or_else(|| panic!("no push in {line}"));
    ["profiles=", "pushed=", "retried=", "dropped="].map(|k| {
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
    let server = Server::start();
    let jsonl = common::out_file("push.jsonl");
    let options = format!(
        "sink=jsonl:{},push=http://127.0.0.1:{}/pyro,push_app=gt-test,\
         push_labels=suite=push+jdk=21,interval=1s,period=1ms,cardinality={KEY}:hash",
        jsonl.display(),
        server.port
    );
    let (out, exit) = run(21, &options, "4");
    let requests = server.finish();
    assert!(out.status.success(), "{}", out.dump());
    assert!(out.agent_messages().is_empty(), "{}", out.dump());
    let summary = out.agent_summary();
    let [profiles, pushed, retried, dropped] = push_figures(&summary.line);

    let samples = common::read_json_lines(&jsonl);
    let mut json_by: BTreeMap<String, u64> = BTreeMap::new();
    for s in &samples {
        if let Some(v) = s["context"].get(KEY).and_then(Value::as_str) {
            *json_by.entry(fnv1a_hex(v)).or_default() += 1;
        }
    }
    let with_key: u64 = json_by.values().sum();

    let (mut total, mut by) = (0u64, BTreeMap::<String, u64>::new());
    let mut last_until = 0;
    let mut non_empty = 0;
    for r in &requests {
        let q = query(&r.target);
        assert_eq!(q["name"], "gt-test{suite=push,jdk=21}", "{}", r.target);
        assert_eq!(q["format"], "pprof");
        assert_eq!(q["spyName"], "jfrctx");
        assert_eq!(q["sampleRate"], "1000");
        let (from, until): (u64, u64) = (q["from"].parse().unwrap(), q["until"].parse().unwrap());
        assert!(from < until && from + 1 >= last_until, "{}", r.target);
        last_until = until;
        let (t, b) = counts(&decode(&r.profile), KEY);
        total += t;
        non_empty += usize::from(t > 0);
        for (k, v) in b {
            *by.entry(k).or_default() += v;
        }
    }
    println!(
        "push JDK 21: {} profiles ({non_empty} with samples), {total} samples, {} JSON lines, \
         per {KEY} (hashed): {by:?}; JVM exit {exit:?} after main; {}",
        requests.len(),
        samples.len(),
        summary.line
    );
    assert!(samples.len() >= 200, "only {} samples", samples.len());
    assert!(requests.len() >= 3, "only {} profiles", requests.len());
    assert_eq!(total, samples.len() as u64, "pushed samples vs JSON lines");
    assert_eq!(by, json_by, "pushed per {KEY} (hashed) vs JSON lines");
    assert_eq!(
        [profiles, pushed, retried, dropped],
        [requests.len() as u64, requests.len() as u64, 0, 0],
        "{}",
        summary.line
    );
    let push_sink = summary.sink("push:http://127.0.0.1:");
    assert_eq!(
        (push_sink.records, push_sink.errors),
        (samples.len() as u64, 0)
    );
    let cardinality = format!("; cardinality: {KEY} replaced {with_key}");
    assert!(
        summary.line.ends_with(&cardinality),
        "{} lacks {cardinality}",
        summary.line
    );
}

/// Checks a run against an endpoint that takes nothing.
fn dead_endpoint(jdk: u32, url: &str, name: &str) {
    let jsonl = common::out_file(&format!("push-dead-{name}.jsonl"));
    let options = format!(
        "sink=jsonl:{},push={url},interval=1s,period=5ms",
        jsonl.display()
    );
    let started = Instant::now();
    let (out, exit) = run(jdk, &options, "4");
    let wall = started.elapsed();
    assert!(out.status.success(), "{}", out.dump());
    let summary = out.agent_summary();
    let [profiles, pushed, retried, dropped] = push_figures(&summary.line);
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
    // Every profile was dropped, and counted (one or more during the run, the last at exit).
    assert!(profiles >= 2, "{}", summary.line);
    assert_eq!((pushed, dropped), (0, profiles), "{}", summary.line);
    if name == "refused" {
        assert!(retried >= 1, "{}", summary.line);
    }
    // One warning names the fault; nothing else.
    let messages = out.agent_messages();
    assert_eq!(messages.len(), 1, "{}", out.dump());
    assert!(
        messages[0].starts_with(&format!("jfrctx: warning: push to {url} failed: ")),
        "{}",
        messages[0]
    );
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
    dead_endpoint(17, &format!("http://127.0.0.1:{port}"), "refused");
}

#[test]
fn silent_endpoint_jdk17() {
    let _serial = common::serial();
    // Connections complete in the backlog but are never accepted, so no answer ever comes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    dead_endpoint(17, &url, "silent");
    drop(listener);
}

#[test]
fn form_and_query_helpers() {
    let body = b"--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nno\r\n--B\r\n\
                 Content-Disposition: form-data; name=\"profile\"; filename=\"p\"\r\n\r\n\
                 \x1f\x8b\r\n--B--\r\n";
    assert_eq!(form_field(body, "B", "profile"), b"\x1f\x8b");
    assert_eq!(percent_decode("a%7Bb%3Dc%7D"), "a{b=c}");
}
