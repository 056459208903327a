//! The OpenTelemetry bridge with the real OTel Java agent: an embedded Apache Tomcat 10.1
//! (`examples/servlet/server`) serves `tests/otel/webapp` (no jfrctx and no OpenTelemetry code in
//! it) under `-javaagent:opentelemetry-javaagent.jar` (Maven Central, through `scripts/otel.sh`)
//! with `-Dotel.javaagent.extensions=jfrctx-otel.jar` (compiled here from `java/otel` and the
//! harness's facade, as `scripts/build.sh` builds `target/jfrctx-otel.jar`) and the jfrctx agent.
//! The OTel agent exports its spans with its own `logging-otlp` exporter (OTLP JSON on stderr).
//!
//! The service: `/sync` (`work_sync` on the request thread), `/pool` (`work_front` on the request
//! thread, then `work_pool` on an `ExecutorService` thread), `/chain` (`work_stage1` and
//! `work_stage2` on pool threads, a `CompletableFuture.supplyAsync(..).thenApplyAsync(..)` chain),
//! each `work_*` a span of the agent's method instrumentation
//! (`otel.instrumentation.methods.include`), each spending its CPU in `burn` (kept out of line).
//!
//! Asserted per run (JDK 17 platform request threads; JDK 21 virtual request threads):
//! - every sample carrying `span_id` names an exported span of its `trace_id` whose thread is
//!   the sample's (or, on a thread the OTel agent carried the request's Context to, a span of that
//!   request: counted as handed off; see [`check::HANDOFF_THREADS`]) and whose interval contains
//!   the sample. Span times are epoch ns, samples `System.nanoTime()`: mapped with `/clock`,
//!   which answers both; the SDK dates each trace from its own anchor, so each trace may be
//!   shifted by one constant of at most [`check::MAX_SHIFT`] (see [`check()`]), then within
//!   [`check::TOLERANCE`]: 0 wrong. A handed-off sample in the OTel task wrapper's own code only
//!   has to follow its span's start: the wrapper keeps the Context attached until its task
//!   returns, which can be after the span ended (see [`check::TASK_RUN_FRAMES`]);
//! - ground truth: a sample in `burn` under `work_X` carries exactly the span of `work_X` that
//!   ran on that thread at that time, with `method=GET` and `endpoint` = the request's
//!   `http.route`: 0 wrong, at most [`MAX_UNKNOWN_PERCENT`] % unknown, and at least
//!   [`MIN_PER_WORK`] such samples per `work_*`; the virtual run has them on virtual threads;
//! - every request answered 200, the server exits 0, the summary adds up, no jfrctx message.
//!
//! `cargo test --test it otel:: -- --nocapture` prints the figures per run; each run leaves its
//! samples (`samples.jsonl`), the server's stderr with the exported spans (`server.stderr`) and
//! the clock offset it was checked with (`clock_offset_ns`) in `target/it-out/otel/<run>/`. The
//! SDK path (no OTel agent) is `tests/it/otel_sdk.rs`.

use crate::common;

mod check;

use check::check;

use common::http::{connect, get};
use common::jdk::javac_to;
use common::otel_build;
use common::tomcat::{compile_launcher, tomcat_jars, Server};
use common::JvmRun;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

const SERVLET: &str = "dev.jfrctx.tests.otel.OtelWorkServlet";
const WORK: [&str; 5] = [
    "work_sync",
    "work_front",
    "work_pool",
    "work_stage1",
    "work_stage2",
];
const PATHS: [&str; 3] = ["sync", "pool", "chain"];
const CLIENTS: usize = 4;
const LOAD: Duration = Duration::from_secs(5);
const MIN_PER_WORK: u64 = 20;
const MAX_UNKNOWN_PERCENT: f64 = 5.0;
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// The JDK native that the OTel agent's class discovery overflows under `-Xcheck:jni`.
const OTEL_AGENT_JDK_NATIVE: &str = "sun.instrument.InstrumentationImpl.getAllLoadedClasses0";

struct Build {
    tomcat: Vec<PathBuf>,
    otel_agent: PathBuf,
    extension: PathBuf,
    server_classes: PathBuf,
    webapp: PathBuf,
}

fn build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| {
        let tomcat = tomcat_jars();
        let (otel_agent, sdk) = otel_build::otel_jars();
        let root = common::root();
        let dir = common::target_dir()
            .join("it-out/otel")
            .join(format!("build-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let ext_classes = otel_build::bridge_classes(&dir, &sdk);
        let extension = otel_build::extension_jar(&dir, &ext_classes);

        let server_classes = dir.join("server");
        let webapp = dir.join("webapp");
        fs::create_dir_all(&server_classes).expect("mkdir");
        fs::create_dir_all(webapp.join("WEB-INF/classes")).expect("mkdir");
        compile_launcher(&tomcat, &server_classes);
        javac_to(
            &tomcat,
            &webapp.join("WEB-INF/classes"),
            &root.join("tests/otel/webapp/src"),
        );
        fs::copy(
            root.join("tests/otel/webapp/WEB-INF/web.xml"),
            webapp.join("WEB-INF/web.xml"),
        )
        .expect("copy web.xml");
        Build {
            tomcat,
            otel_agent,
            extension,
            server_classes,
            webapp,
        }
    })
}

/// `epoch_ns - nano_time` from `/clock` (the answer with the tightest epoch bracket of 20).
fn clock_offset(port: u16) -> i64 {
    let mut conn = connect(port);
    let mut best: Option<(i64, i64)> = None; // (bracket width, offset)
    for _ in 0..20 {
        let (status, body, _) = get(&mut conn, "/shop/clock", &[]).expect("GET /shop/clock");
        assert!(status.starts_with("HTTP/1.1 200"), "/clock: {status}");
        let v: Vec<i64> = body
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().expect("clock number"))
            .collect();
        let (before, nano, after) = (v[0], v[1], v[2]);
        let width = after - before;
        if best.is_none_or(|(w, _)| width < w) {
            best = Some((width, before + width / 2 - nano));
        }
    }
    best.expect("clock answers").1
}

fn drive(port: u16) -> BTreeMap<&'static str, u64> {
    let deadline = Instant::now() + LOAD;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            thread::spawn(move || {
                let mut counts = BTreeMap::new();
                let mut conn = connect(port);
                let mut n = 0usize;
                while Instant::now() < deadline && n < 100_000 {
                    let name = PATHS[(client + n) % PATHS.len()];
                    let (status, body, close) = get(&mut conn, &format!("/shop/{name}"), &[])
                        .unwrap_or_else(|e| panic!("GET /shop/{name}: {e}"));
                    assert!(
                        status.starts_with("HTTP/1.1 200"),
                        "GET /shop/{name}: {status}\n{body}"
                    );
                    assert!(body.starts_with(&format!("/{name} ")), "body {body:?}");
                    *counts.entry(name).or_insert(0u64) += 1;
                    n += 1;
                    if close {
                        conn = connect(port);
                    }
                }
                counts
            })
        })
        .collect();
    let mut total = BTreeMap::new();
    for c in clients {
        for (k, v) in c.join().expect("client thread") {
            *total.entry(k).or_insert(0) += v;
        }
    }
    total
}

// ---- spans --------------------------------------------------------------------------------

#[derive(Debug)]
struct Span {
    trace: String,
    name: String,
    server: bool,
    start: i64,
    end: i64,
    thread: i64,
    route: Option<String>,
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn number(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().expect("number"),
        Value::Number(n) => n.as_i64().expect("i64"),
        other => panic!("not a number: {other}"),
    }
}

/// The spans the agent's `logging-otlp` exporter wrote (one OTLP JSON document per line, after
/// `OtlpJsonLoggingSpanExporter - `), by span id.
fn exported_spans(stderr: &str) -> HashMap<String, Span> {
    let mut spans = HashMap::new();
    for line in stderr.lines() {
        let Some((_, json)) = line.split_once("OtlpJsonLoggingSpanExporter - ") else {
            continue;
        };
        let doc: Value = serde_json::from_str(json).expect("OTLP JSON");
        for scope in doc["scopeSpans"].as_array().expect("scopeSpans") {
            for s in scope["spans"].as_array().expect("spans") {
                let thread = attribute(s, "thread.id")
                    .map(|v| number(&v["intValue"]))
                    .unwrap_or_else(|| panic!("span without thread.id: {s}"));
                let span = Span {
                    trace: s["traceId"].as_str().expect("traceId").to_string(),
                    name: s["name"].as_str().expect("name").to_string(),
                    server: s["kind"] == 2,
                    start: number(&s["startTimeUnixNano"]),
                    end: number(&s["endTimeUnixNano"]),
                    thread,
                    route: attribute(s, "http.route")
                        .and_then(|v| v["stringValue"].as_str())
                        .map(str::to_string),
                };
                spans.insert(s["spanId"].as_str().expect("spanId").to_string(), span);
            }
        }
    }
    spans
}

fn run(jdk: u32, virtual_threads: bool) {
    let _serial = common::serial();
    let b = build();
    let name = format!(
        "jdk{jdk}-{}",
        if virtual_threads {
            "virtual"
        } else {
            "platform"
        }
    );
    let dir = common::target_dir().join("it-out/otel").join(&name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("mkdir");
    let mut classpath = b.tomcat.clone();
    classpath.push(b.server_classes.clone());
    let classpath = std::env::join_paths(&classpath).expect("class path");
    let methods = format!("{SERVLET}[{}]", WORK.join(","));
    let webapp = b.webapp.display().to_string();
    let mut args = vec!["--webapp", webapp.as_str(), "--seconds", "100"];
    if virtual_threads {
        args.push("--virtual");
    }
    let jvm = JvmRun::new(jdk)
        .jsonl_at(&dir.join("samples.jsonl"))
        .agent("sink=jsonl:{jsonl},period=1ms")
        .jvm_args([
            format!("-javaagent:{}", b.otel_agent.display()),
            format!("-Dotel.javaagent.extensions={}", b.extension.display()),
            "-Dotel.service.name=shop".to_string(),
            "-Dotel.traces.exporter=logging-otlp".to_string(),
            "-Dotel.metrics.exporter=none".to_string(),
            "-Dotel.logs.exporter=none".to_string(),
            "-Dotel.bsp.schedule.delay=200".to_string(),
            "-Dotel.bsp.max.queue.size=100000".to_string(),
            format!("-Dotel.instrumentation.methods.include={methods}"),
            "-XX:CompileCommand=quiet".to_string(),
            format!("-XX:CompileCommand=dontinline,{SERVLET}::burn"),
        ])
        .classpath(classpath)
        .args(args)
        .timeout(RUN_TIMEOUT)
        .allow_foreign_jni(&[OTEL_AGENT_JDK_NATIVE]);
    let started = Instant::now();
    let server = Server::start(jvm, Duration::from_secs(90));
    let offset = clock_offset(server.port);
    let served = drive(server.port);
    let out = server.stop(&[]);
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "Tomcat did not exit 0:\n{}",
        out.dump()
    );
    let (summary, samples) = out.summary_and_samples();
    assert_eq!(summary.sink("jsonl").errors, 0, "{}", summary.line);
    assert!(
        out.agent_messages().is_empty(),
        "unexpected agent messages: {:?}",
        out.agent_messages()
    );
    assert!(
        !out.stderr.contains("jfrctx-otel:"),
        "the bridge complained:\n{}",
        out.stderr
    );
    // Kept beside the samples for a second look at a failure: the spans (OTLP JSON lines) and
    // the clock offset they were checked with.
    let _ = fs::write(dir.join("server.stderr"), &out.stderr);
    let _ = fs::write(dir.join("clock_offset_ns"), offset.to_string());
    let spans = exported_spans(&out.stderr);
    let requests: u64 = served.values().sum();
    let servers = spans.values().filter(|s| s.server).count() as u64;
    // every request's server span was exported (plus /clock and /admin/stop)
    assert!(
        servers > requests,
        "{servers} server spans for {requests} requests"
    );

    let f = check(&samples, &spans, offset);
    let truth: u64 = f.truth.values().sum();
    println!(
        "otel {name}: {wall:.1?}, requests {served:?}, spans {}; samples {}, with span_id {} \
         (own thread {}, handed off {}, of which in a task wrapper {}; {} traces, largest clock \
         shift {} ns); ground truth in \
         burn: {:?} ({} near another span of the name), unknown {}, on virtual threads {}; wrong \
         {}; {}",
        spans.len(),
        samples.len(),
        f.with_span,
        f.own_thread,
        f.handed_off,
        f.in_task_wrapper,
        f.traces,
        f.max_shift,
        f.truth,
        f.truth_ambiguous,
        f.truth_unknown,
        f.on_virtual,
        f.wrong.len(),
        summary.line
    );
    for w in &f.wrong {
        println!("otel {name}: wrong: {w}");
    }
    assert!(
        f.wrong.is_empty(),
        "{name}: {} wrong (all printed above), e.g.\n  {}",
        f.wrong.len(),
        f.first_wrong(3)
    );
    for w in WORK {
        let n = f.truth.get(w).copied().unwrap_or(0);
        assert!(n >= MIN_PER_WORK, "{name}: {n} ground-truth samples in {w}");
    }
    let unknown_percent = 100.0 * f.truth_unknown as f64 / (truth + f.truth_unknown) as f64;
    assert!(
        unknown_percent <= MAX_UNKNOWN_PERCENT,
        "{name}: {unknown_percent:.1} % unknown"
    );
    if virtual_threads {
        assert!(f.on_virtual > 0, "{name}: no sample on a virtual thread");
    } else {
        assert_eq!(f.on_virtual, 0, "{name}: samples on virtual threads");
    }
}

#[test]
fn jdk17_platform_request_threads() {
    run(17, false);
}

#[test]
fn jdk21_virtual_request_threads() {
    run(21, true);
}
