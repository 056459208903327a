//! The application-server path: an embedded Apache Tomcat 10.1 (`examples/servlet/server`) serves
//! the example web application (`examples/servlet/webapp`: `RecordingContextServletFilter`
//! installs {endpoint, request} around every request; `WorkServlet` burns CPU in `work_orders`,
//! `work_search`, `work_report`), with the agent loaded, under load from a client in this test.
//!
//! Tomcat's jars come from Maven Central through `scripts/tomcat.sh` (cached in
//! `${JFRCTX_CACHE:-~/.cache/jfrctx}/tomcat-VERSION`; the test runs the script, which fails with
//! one line when Maven cannot fetch them). The example is compiled here with JDK 17's `javac`.
//!
//! Both places a deployment may put the facade jar, each in its own run (one copy per JVM):
//! - `lib`: on the server's class path (a standalone Tomcat's `lib/`), next to Tomcat's jars; the
//!   web application has only `WEB-INF/classes`;
//! - `webapp`: only in the web application's `WEB-INF/lib/jfrctx.jar`, loaded by Tomcat's
//!   web-application class loader; the server's class path has Tomcat and the launcher only.
//!
//! Runs: JDK 17 `lib` and `webapp` with platform request threads (Tomcat's pool), JDK 21
//! `webapp` with virtual request threads (Tomcat 10.1's `useVirtualThreads`).
//!
//! The load: [`CLIENTS`] keep-alive connections over 127.0.0.1 for [`LOAD`], each request to
//! `/shop/orders`, `/shop/search` or `/shop/report` in turn with `X-Request-Id: NAME-CLIENT-N`
//! (the filter takes it as the `request` value); every answer must be `200` with the endpoint in
//! its body.
//!
//! Asserted per run, at `period=1ms` into JSON lines, with
//! `-XX:CompileCommand=dontinline,...WorkServlet::work_*` so that a `work_*` frame on a sample's
//! stack really is that method (not code C2 inlined around it):
//! - every sample in `work_NAME` carries exactly {endpoint: /NAME, request: NAME-...} (correct) or
//!   is unknown with a reason; 0 wrong; ≥ [`MIN_CORRECT_PERCENT`] % correct and ≥
//!   [`MIN_PER_ENDPOINT`] correct samples per endpoint; in the virtual run those samples are on
//!   virtual threads, in the others on platform threads;
//! - the server exits 0 after `/admin/stop`; the summary adds up, its `received` equals the lines
//!   written, the sink has 0 errors, `lost_entries=0`, `contexts` ≥ the requests served (each
//!   request id makes a new context map); no other `jfrctx:` line.
//!
//! With the Java agent (`-javaagent:target/jfrctx-agent.jar`, `scripts/javaagent.sh`), the load
//! goes to `/shop/async/NAME` instead (`AsyncWorkServlet`: `startAsync()`, the first half of the
//! work on a plain `Executors.newFixedThreadPool`, the second in a `CompletableFuture.supplyAsync`
//! stage, no `RecordingContext` call): every sample in `AsyncWorkServlet.work_NAME` must carry
//! {endpoint: /async/NAME, request: NAME-...}, on whichever thread it ran. Runs: JDK 17 with the
//! facade on the server's class path and in `WEB-INF/lib` (Tomcat's web-application loader,
//! child-first, gets the facade classes from the Java agent's bootstrap copy), JDK 21 with the
//! facade in `WEB-INF/lib` and virtual request threads.
//!
//! `cargo test --test it app_server:: -- --nocapture` prints the figures per run.

use crate::common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// The endpoints, each served by `WorkServlet.work_NAME`.
const ENDPOINTS: [&str; 3] = ["orders", "search", "report"];
const WORK_CLASS: &str = "dev.jfrctx.examples.servlet.WorkServlet.";
const ASYNC_WORK_CLASS: &str = "dev.jfrctx.examples.servlet.AsyncWorkServlet.";

/// How the requests are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Serving {
    /// `WorkServlet` on the request thread.
    Sync,
    /// `AsyncWorkServlet`, under the Java agent.
    AsyncJavaAgent,
}

impl Serving {
    /// The path between `/shop` and the endpoint name, and the endpoint's route prefix.
    fn prefix(self) -> &'static str {
        match self {
            Serving::Sync => "/",
            Serving::AsyncJavaAgent => "/async/",
        }
    }
    fn work_class(self) -> &'static str {
        match self {
            Serving::Sync => WORK_CLASS,
            Serving::AsyncJavaAgent => ASYNC_WORK_CLASS,
        }
    }
}
const LAUNCHER: &str = "dev.jfrctx.examples.server.EmbeddedTomcat";
/// Concurrent client connections.
const CLIENTS: usize = 4;
/// How long the client drives the server.
const LOAD: Duration = Duration::from_secs(5);
/// The same for the asynchronous endpoints (fewer requests answered per second).
const LOAD_ASYNC: Duration = Duration::from_secs(8);
const MIN_CORRECT_PERCENT: f64 = 95.0;
const MIN_PER_ENDPOINT: u64 = 30;
/// The same for the asynchronous endpoints: fewer requests are answered (each waits for two
/// hand-offs and, where the common pool has one thread, `CompletableFuture` starts a thread per
/// stage; under a load average of 12 one run answered 78 per endpoint in 5 s).
const MIN_PER_ENDPOINT_ASYNC: u64 = 12;
/// One run, start to exit.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// The facade on the server's class path (Tomcat's `lib/`).
    ServerLib,
    /// The facade in `WEB-INF/lib` of the web application only.
    WebappLib,
}

/// Tomcat's jars: `scripts/tomcat.sh` prints their directory (fetching them once).
fn tomcat_jars() -> Vec<PathBuf> {
    let out = Command::new("bash")
        .arg(common::root().join("scripts/tomcat.sh"))
        .output()
        .expect("run scripts/tomcat.sh");
    assert!(
        out.status.success(),
        "scripts/tomcat.sh failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let mut jars: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    assert!(
        jars.iter()
            .any(|j| j.to_string_lossy().contains("tomcat-embed-core")),
        "no tomcat-embed-core jar in {}",
        dir.display()
    );
    jars
}

fn java_files(dir: &Path, acc: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            java_files(&p, acc);
        } else if p.extension().is_some_and(|x| x == "java") {
            acc.push(p);
        }
    }
}

fn run_tool(tool: &str, args: &[OsString]) {
    let bin = common::jdk_home(17).join("bin").join(tool);
    let out = Command::new(&bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn javac(classpath: &[PathBuf], dest: &Path, sources: &Path) {
    let mut files = Vec::new();
    java_files(sources, &mut files);
    let mut args: Vec<OsString> = ["--release", "17", "-g", "-encoding", "UTF-8", "-cp"]
        .iter()
        .map(OsString::from)
        .collect();
    args.push(std::env::join_paths(classpath).expect("class path"));
    args.push("-d".into());
    args.push(dest.into());
    args.extend(files.into_iter().map(OsString::from));
    run_tool("javac", &args);
}

/// What every run shares: Tomcat's jars, the compiled launcher and web application, the facade
/// jar (from the harness's compiled facade).
struct Build {
    tomcat: Vec<PathBuf>,
    server_classes: PathBuf,
    webapp_classes: PathBuf,
    facade_jar: PathBuf,
}

fn build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| {
        let tomcat = tomcat_jars();
        let examples = common::root().join("examples/servlet");
        let dir = common::target_dir()
            .join("it-out/app_server")
            .join(format!("build-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let server_classes = dir.join("server");
        let webapp_classes = dir.join("webapp-classes");
        fs::create_dir_all(&server_classes).expect("mkdir");
        fs::create_dir_all(&webapp_classes).expect("mkdir");

        // The facade alone, as target/jfrctx.jar holds it (the harness compiles it with the
        // test workloads, which live in other packages).
        let facade_classes = common::classes();
        let facade_jar = dir.join("jfrctx.jar");
        run_tool(
            "jar",
            &[
                "--create".into(),
                "--file".into(),
                facade_jar.clone().into(),
                "-C".into(),
                facade_classes.into(),
                "dev/jfrctx".into(),
            ],
        );

        javac(&tomcat, &server_classes, &examples.join("server"));
        let mut cp = tomcat.clone();
        cp.push(facade_jar.clone());
        javac(&cp, &webapp_classes, &examples.join("webapp/src"));
        Build {
            tomcat,
            server_classes,
            webapp_classes,
            facade_jar,
        }
    })
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for e in fs::read_dir(from).expect("read dir") {
        let p = e.expect("dir entry").path();
        let dest = to.join(p.file_name().expect("name"));
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            fs::copy(&p, &dest).expect("copy");
        }
    }
}

/// Lays out one run's server: `DIR/lib` (the server class path's extra jars) and `DIR/webapp`
/// (the deployed application). Returns the server class path.
fn lay_out(dir: &Path, layout: Layout) -> (OsString, PathBuf) {
    let b = build();
    let _ = fs::remove_dir_all(dir);
    let webapp = dir.join("webapp");
    copy_tree(&b.webapp_classes, &webapp.join("WEB-INF/classes"));
    fs::copy(
        common::root().join("examples/servlet/webapp/WEB-INF/web.xml"),
        webapp.join("WEB-INF/web.xml"),
    )
    .expect("copy web.xml");
    let mut classpath = b.tomcat.clone();
    classpath.push(b.server_classes.clone());
    match layout {
        Layout::ServerLib => {
            let lib = dir.join("lib");
            fs::create_dir_all(&lib).expect("mkdir lib");
            fs::copy(&b.facade_jar, lib.join("jfrctx.jar")).expect("copy jar");
            classpath.push(lib.join("jfrctx.jar"));
        }
        Layout::WebappLib => {
            let lib = webapp.join("WEB-INF/lib");
            fs::create_dir_all(&lib).expect("mkdir WEB-INF/lib");
            fs::copy(&b.facade_jar, lib.join("jfrctx.jar")).expect("copy jar");
        }
    }
    (
        std::env::join_paths(&classpath).expect("class path"),
        webapp,
    )
}

// ---- the load generator ---------------------------------------------------------------------

/// One HTTP/1.1 GET on a keep-alive connection; returns (status line, body, server closes).
fn get(
    reader: &mut BufReader<TcpStream>,
    path: &str,
    request_id: &str,
) -> std::io::Result<(String, String, bool)> {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: {request_id}\r\n\r\n");
    reader.get_mut().write_all(request.as_bytes())?;
    let mut status = String::new();
    reader.read_line(&mut status)?;
    let mut length = None;
    let mut close = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse::<usize>().ok();
        } else if name == "connection" && value.eq_ignore_ascii_case("close") {
            close = true;
        }
    }
    let mut body = vec![0u8; length.unwrap_or(0)];
    reader.read_exact(&mut body)?;
    Ok((
        status.trim_end().to_string(),
        String::from_utf8_lossy(&body).into_owned(),
        close,
    ))
}

fn connect(port: u16) -> BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to Tomcat");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    BufReader::new(s)
}

/// Drives `/shop/{orders,search,report}` from [`CLIENTS`] connections for [`LOAD`]; returns the
/// requests answered per endpoint name.
fn drive(port: u16, serving: Serving) -> BTreeMap<&'static str, u64> {
    let prefix = serving.prefix();
    let deadline = Instant::now()
        + match serving {
            Serving::Sync => LOAD,
            Serving::AsyncJavaAgent => LOAD_ASYNC,
        };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            thread::spawn(move || {
                let mut counts = BTreeMap::new();
                let prefix = prefix;
                let mut conn = connect(port);
                let mut n = 0usize;
                while Instant::now() < deadline && n < 100_000 {
                    let name = ENDPOINTS[(client + n) % ENDPOINTS.len()];
                    let id = format!("{name}-{client}-{n}");
                    let path = format!("/shop{prefix}{name}");
                    let (status, body, close) = get(&mut conn, &path, &id)
                        .unwrap_or_else(|e| panic!("GET {path} ({id}): {e}"));
                    assert!(
                        status.starts_with("HTTP/1.1 200"),
                        "GET {path}: {status}\n{body}"
                    );
                    assert!(
                        body.starts_with(&format!("{prefix}{name} ")),
                        "GET {path}: body {body:?}"
                    );
                    *counts.entry(name).or_insert(0u64) += 1;
                    n += 1;
                    if close {
                        conn = connect(port); // Tomcat's maxKeepAliveRequests reached
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

// ---- checking the samples -------------------------------------------------------------------

#[derive(Default, Debug)]
struct Figures {
    correct: BTreeMap<&'static str, u64>,
    unknown: BTreeMap<String, u64>,
    wrong: Vec<String>,
    on_virtual: u64,
    on_platform: u64,
}

/// The endpoint whose work method is on the sample's stack (innermost first).
fn work_endpoint(sample: &Value, serving: Serving) -> Option<&'static str> {
    let stack = sample["stack"].as_array()?;
    stack.iter().find_map(|f| {
        let name = f["method"].as_str()?.strip_prefix(serving.work_class())?;
        let name = name.strip_prefix("work_")?;
        ENDPOINTS.iter().copied().find(|e| *e == name)
    })
}

fn check_samples(samples: &[Value], serving: Serving) -> Figures {
    let mut f = Figures::default();
    for s in samples {
        let Some(endpoint) = work_endpoint(s, serving) else {
            continue;
        };
        if s["thread"]["virtual"] == Value::Bool(true) {
            f.on_virtual += 1;
        } else {
            f.on_platform += 1;
        }
        match &s["context"] {
            Value::Object(ctx) => {
                let expected_endpoint = format!("{}{endpoint}", serving.prefix());
                let ok = ctx.len() == 2
                    && ctx.get("endpoint").and_then(Value::as_str) == Some(&expected_endpoint)
                    && ctx
                        .get("request")
                        .and_then(Value::as_str)
                        .is_some_and(|r| r.starts_with(&format!("{endpoint}-")));
                if ok {
                    *f.correct.entry(endpoint).or_insert(0) += 1;
                } else {
                    f.wrong
                        .push(format!("work_{endpoint}: {}", Value::Object(ctx.clone())));
                }
            }
            Value::Null => match s["unknown"].as_str() {
                Some(r) if !r.is_empty() => *f.unknown.entry(r.to_string()).or_insert(0) += 1,
                _ => f
                    .wrong
                    .push(format!("work_{endpoint}: null context, no reason")),
            },
            other => f.wrong.push(format!("work_{endpoint}: context {other}")),
        }
    }
    f
}

fn number_after(line: &str, key: &str) -> u64 {
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + key.len();
    line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {key} in {line}"))
}

fn run(jdk: u32, layout: Layout, virtual_threads: bool) {
    run_serving(jdk, layout, virtual_threads, Serving::Sync);
}

use common::javaagent::java_agent_jar;

fn run_serving(jdk: u32, layout: Layout, virtual_threads: bool, serving: Serving) {
    let _serial = common::serial();
    let name = format!(
        "jdk{jdk}-{}-{}{}",
        match layout {
            Layout::ServerLib => "lib",
            Layout::WebappLib => "webapp",
        },
        if virtual_threads {
            "virtual"
        } else {
            "platform"
        },
        match serving {
            Serving::Sync => "",
            Serving::AsyncJavaAgent => "-async-javaagent",
        }
    );
    let dir = common::target_dir().join("it-out/app_server").join(&name);
    let (classpath, webapp) = lay_out(&dir, layout);
    let jsonl = dir.join("samples.jsonl");
    let mut jvm_args = vec![
        common::agent_arg(&format!("sink=jsonl:{},period=1ms", jsonl.display())),
        "-XX:CompileCommand=quiet".to_string(),
        "-XX:CompileCommand=dontinline,dev.jfrctx.examples.servlet.WorkServlet::work_*".to_string(),
        "-XX:CompileCommand=dontinline,dev.jfrctx.examples.servlet.AsyncWorkServlet::work_*"
            .to_string(),
    ];
    if serving == Serving::AsyncJavaAgent {
        jvm_args.push(format!("-javaagent:{}", java_agent_jar().display()));
    }
    let webapp_arg = webapp.display().to_string();
    let mut args = vec!["--webapp", webapp_arg.as_str(), "--seconds", "80"];
    if virtual_threads {
        args.push("--virtual");
    }
    let started = Instant::now();
    let mut jvm = common::spawn_java_cp(
        &common::java(jdk),
        &classpath,
        &jvm_args,
        LAUNCHER,
        &args,
        &[],
    );
    jvm.wait_for_stdout("listening on 127.0.0.1:", Duration::from_secs(60));
    let so_far = jvm.stdout_so_far();
    let port: u16 = so_far
        .split("listening on 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {so_far:?}"));
    let served = drive(port, serving);
    let (status, _, _) = get(&mut connect(port), "/admin/stop", "stop").expect("GET /admin/stop");
    assert!(status.starts_with("HTTP/1.1 200"), "/admin/stop: {status}");
    let out = jvm.wait(RUN_TIMEOUT);
    let wall = started.elapsed();
    assert!(
        out.status.success(),
        "Tomcat did not exit 0:\n{}",
        out.dump()
    );
    assert!(out.stdout.contains("stopped"), "{}", out.dump());

    let summary = out.agent_summary(); // exactly one, and it adds up
    let samples = common::read_json_lines(&jsonl);
    assert_eq!(
        summary.received,
        samples.len() as u64,
        "summary received != lines in {}\n{}",
        jsonl.display(),
        summary.line
    );
    assert_eq!(summary.sink("jsonl").errors, 0, "{}", summary.line);
    assert_eq!(
        number_after(&summary.line, "lost_entries="),
        0,
        "{}",
        summary.line
    );
    let requests: u64 = served.values().sum();
    let contexts = number_after(&summary.line, "contexts=");
    assert!(
        contexts >= requests,
        "contexts={contexts} < {requests} requests, each with its own request id: {}",
        summary.line
    );
    assert!(
        out.agent_messages().is_empty(),
        "unexpected agent messages: {:?}\n{}",
        out.agent_messages(),
        out.dump()
    );

    let f = check_samples(&samples, serving);
    let correct: u64 = f.correct.values().sum();
    let unknown: u64 = f.unknown.values().sum();
    let classified = correct + unknown + f.wrong.len() as u64;
    println!(
        "app_server {name}: {wall:.1?}, requests {served:?}; samples {} (summary: {}); in work_*: \
         {classified}, correct {:?}, unknown {:?}, wrong {}, on virtual threads {}, on platform \
         threads {}",
        samples.len(),
        summary.line,
        f.correct,
        f.unknown,
        f.wrong.len(),
        f.on_virtual,
        f.on_platform
    );
    assert!(
        f.wrong.is_empty(),
        "{name}: {} samples with a wrong context, e.g. {:?}",
        f.wrong.len(),
        &f.wrong[..f.wrong.len().min(5)]
    );
    for e in ENDPOINTS {
        assert!(
            served.get(e).copied().unwrap_or(0) > 0,
            "{name}: no request to /{e} served"
        );
        let n = f.correct.get(e).copied().unwrap_or(0);
        let min = match serving {
            Serving::Sync => MIN_PER_ENDPOINT,
            Serving::AsyncJavaAgent => MIN_PER_ENDPOINT_ASYNC,
        };
        assert!(
            n >= min,
            "{name}: only {n} correct samples in work_{e} (want >= {min})"
        );
    }
    let percent = 100.0 * correct as f64 / classified as f64;
    assert!(
        percent >= MIN_CORRECT_PERCENT,
        "{name}: {percent:.1} % correct (want >= {MIN_CORRECT_PERCENT}); unknown {:?}",
        f.unknown
    );
    if serving == Serving::AsyncJavaAgent {
        // The work runs on the pool's and the common pool's platform threads.
        assert_eq!(
            f.on_virtual, 0,
            "{name}: async work samples on virtual threads"
        );
    } else if virtual_threads {
        assert_eq!(f.on_platform, 0, "{name}: work samples on platform threads");
    } else {
        assert_eq!(f.on_virtual, 0, "{name}: work samples on virtual threads");
    }
}

#[test]
fn jdk17_facade_in_server_lib() {
    run(17, Layout::ServerLib, false);
}

#[test]
fn jdk17_facade_in_webapp_lib() {
    run(17, Layout::WebappLib, false);
}

#[test]
fn jdk21_facade_in_webapp_lib_virtual_request_threads() {
    run(21, Layout::WebappLib, true);
}

#[test]
fn jdk17_async_servlet_java_agent_facade_in_server_lib() {
    run_serving(17, Layout::ServerLib, false, Serving::AsyncJavaAgent);
}

#[test]
fn jdk21_async_servlet_java_agent_facade_in_webapp_lib_virtual_request_threads() {
    run_serving(21, Layout::WebappLib, true, Serving::AsyncJavaAgent);
}

#[test]
fn jdk17_async_servlet_java_agent_facade_in_webapp_lib() {
    run_serving(17, Layout::WebappLib, false, Serving::AsyncJavaAgent);
}
