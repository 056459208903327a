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

mod samples;
mod setup;

use crate::common::javaagent::java_agent_jar;
use crate::common::tomcat::Server;
use crate::common::{self, AgentSummary, JvmRun, Run};
use samples::{check_samples, drive, Figures};
use setup::lay_out;
use std::collections::BTreeMap;
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
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Serving::Sync => "/",
            Serving::AsyncJavaAgent => "/async/",
        }
    }
    pub(crate) fn work_class(self) -> &'static str {
        match self {
            Serving::Sync => WORK_CLASS,
            Serving::AsyncJavaAgent => ASYNC_WORK_CLASS,
        }
    }
}
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

fn run(jdk: u32, layout: Layout, virtual_threads: bool) {
    run_serving(jdk, layout, virtual_threads, Serving::Sync);
}

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
    let mut jvm = JvmRun::new(jdk)
        .jsonl_at(&dir.join("samples.jsonl"))
        .agent("sink=jsonl:{jsonl},period=1ms")
        .jvm_args([
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,dev.jfrctx.examples.servlet.WorkServlet::work_*",
            "-XX:CompileCommand=dontinline,dev.jfrctx.examples.servlet.AsyncWorkServlet::work_*",
        ]);
    if serving == Serving::AsyncJavaAgent {
        jvm = jvm.jvm_arg(format!("-javaagent:{}", java_agent_jar().display()));
    }
    let webapp_arg = webapp.display().to_string();
    let mut args = vec!["--webapp", webapp_arg.as_str(), "--seconds", "80"];
    if virtual_threads {
        args.push("--virtual");
    }
    let started = Instant::now();
    let server = Server::start(
        jvm.classpath(classpath).args(args).timeout(RUN_TIMEOUT),
        Duration::from_secs(60),
    );
    let served = drive(server.port, serving);
    let out = server.stop(&[("X-Request-Id", "stop")]);
    let wall = started.elapsed();
    let (summary, samples) = check_run(&out, &served);

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
    check_figures(&name, &f, &served, serving, virtual_threads, classified);
}

/// The server's exit and the agent's summary: exit 0 after `stopped`, the summary's `received`
/// equal to the lines written, no sink error, no lost entry, a context per request, no other
/// `jfrctx:` line.
fn check_run(
    out: &Run,
    served: &BTreeMap<&'static str, u64>,
) -> (AgentSummary, Vec<serde_json::Value>) {
    assert!(
        out.status.success(),
        "Tomcat did not exit 0:\n{}",
        out.dump()
    );
    assert!(out.stdout.contains("stopped"), "{}", out.dump());
    let (summary, samples) = out.summary_and_samples(); // exactly one summary, and it adds up
    assert_eq!(summary.sink("jsonl").errors, 0, "{}", summary.line);
    assert_eq!(summary.figure("lost_entries="), 0, "{}", summary.line);
    let requests: u64 = served.values().sum();
    let contexts = summary.figure("contexts=");
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
    (summary, samples)
}

/// The verdicts: no wrong context, every endpoint served and sampled enough, the share correct,
/// and the samples on the kind of thread the run serves from.
fn check_figures(
    name: &str,
    f: &Figures,
    served: &BTreeMap<&'static str, u64>,
    serving: Serving,
    virtual_threads: bool,
    classified: u64,
) {
    let correct: u64 = f.correct.values().sum();
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
