//! Shared harness for the integration tests that run real JVMs with the agent.
//!
//! - JDKs come from `JFRCTX_JDK17/21/25`, else from the cache of `scripts/jdks.sh`
//!   (`${JFRCTX_CACHE:-$HOME/.cache/jfrctx}/jdk-NN`; JDK 17 also from `/usr/lib/jvm`). A missing
//!   JDK fails the test with a message saying to run `scripts/jdks.sh`: never a silent skip.
//! - The agent cdylib is built once per test run (`$CARGO build --release --lib`), and the facade
//!   plus `tests/java` are compiled once into `target/it-classes`, both behind an `flock` on
//!   `target/.jfrctx-it.lock` so that parallel test processes (nextest) do not race.
//! - [`run_java`] runs a JVM with a timeout; [`ChildGuard`] kills it if the test panics.
//!   [`spawn_java`] starts one and hands back a [`Jvm`] to act on while it runs (signal it, wait
//!   for a line on its stdout) before [`Jvm::wait`].
//! - Every JVM started here runs with `-Xcheck:jni`, and the run fails when HotSpot's JNI checker
//!   reports anything ([`jni_check_reports`]): it prints, on stdout, `WARNING in native method:
//!   ...` (JDK 17, 21, 25: e.g. a JNI call with an exception pending), `WARNING: JNI local refs:
//!   N, exceeds capacity: M`, or `FATAL ERROR in native method: ...` (then aborts).
//! - [`AgentSummary`] parses the agent's exit line `jfrctx: samples received=N ...`.
#![allow(dead_code)]

pub mod javaagent;
pub mod otel_build;
pub mod pprof_tool;
pub mod verdict;

use std::collections::hash_map::DefaultHasher;
use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::Read;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// The JDK feature versions the tests run on.
pub const JDKS: [u32; 3] = [17, 21, 25];

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string())
}

/// Cargo's target directory for this workspace (honours `CARGO_TARGET_DIR` and cargo config).
pub fn target_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("CARGO_TARGET_DIR") {
            let d = PathBuf::from(d);
            return if d.is_absolute() { d } else { root().join(d) };
        }
        let out = Command::new(cargo())
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(root())
            .stderr(Stdio::inherit())
            .output();
        if let Ok(out) = out {
            if out.status.success() {
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) {
                    if let Some(d) = v["target_directory"].as_str() {
                        return PathBuf::from(d);
                    }
                }
            }
        }
        root().join("target")
    })
    .clone()
}

// ---- JDKs ----------------------------------------------------------------------------------

fn cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("JFRCTX_CACHE") {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/jfrctx")
}

fn is_runtime(home: &Path) -> bool {
    home.join("bin/java").is_file()
}

/// The home of JDK `version` (17, 21 or 25). Panics with instructions when it is missing.
pub fn jdk_home(version: u32) -> PathBuf {
    let var = format!("JFRCTX_JDK{version}");
    if let Some(v) = std::env::var_os(&var) {
        let p = PathBuf::from(&v);
        assert!(
            is_runtime(&p),
            "{var}={} has no bin/java; run `scripts/jdks.sh` (or fix {var})",
            p.display()
        );
        return p;
    }
    let mut candidates = vec![cache_dir().join(format!("jdk-{version}"))];
    if version == 17 {
        candidates.push(PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64"));
        candidates.push(PathBuf::from("/usr/lib/jvm/java-17-openjdk-arm64"));
    }
    for c in &candidates {
        if is_runtime(c) {
            return c.clone();
        }
    }
    panic!(
        "JDK {version} not found ({var} unset; looked in {}). Run `scripts/jdks.sh` to install \
         it, then `source scripts/jdks.sh` (or run `scripts/test.sh`, which does both)",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// `bin/java` of JDK `version`.
pub fn java(version: u32) -> PathBuf {
    jdk_home(version).join("bin/java")
}

/// JDK 17's `javac` (the only JDK here with one; everything is compiled `--release 17`).
fn javac() -> PathBuf {
    let javac = jdk_home(17).join("bin/javac");
    assert!(
        javac.is_file(),
        "{} missing: JDK 17 must be a full JDK (apt-get install openjdk-17-jdk-headless, or run \
         scripts/jdks.sh)",
        javac.display()
    );
    javac
}

// ---- one-time build steps, serialized across processes -------------------------------------

/// An exclusive `flock` on `target/.jfrctx-it.lock`, released on drop.
struct FileLock(File);

impl FileLock {
    fn acquire() -> FileLock {
        let dir = target_dir();
        fs::create_dir_all(&dir).expect("create target dir");
        let path = dir.join(".jfrctx-it.lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
        // SAFETY: flock on a file descriptor we own; blocks until the lock is ours.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(
            rc,
            0,
            "flock {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
        FileLock(f)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // SAFETY: unlocking our own descriptor (closing it would release the lock too).
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

/// Path of the agent cdylib, built (once per test process, under the lock) with
/// `$CARGO build --release --lib`. Cargo itself makes the build a no-op when it is fresh.
pub fn agent_lib() -> PathBuf {
    static LIB: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    LIB.get_or_init(|| {
        let _lock = FileLock::acquire();
        let out = Command::new(cargo())
            .args(["build", "--release", "--lib", "--quiet", "--manifest-path"])
            .arg(root().join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", target_dir())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", cargo()))?;
        if !out.status.success() {
            return Err(format!(
                "`cargo build --release --lib` failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let lib = target_dir().join("release/libjfrctx.so");
        if !lib.is_file() {
            return Err(format!(
                "cargo build succeeded but {} is missing",
                lib.display()
            ));
        }
        Ok(lib)
    })
    .clone()
    .unwrap_or_else(|e| panic!("{e}"))
}

fn java_sources(dir: &Path, acc: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                java_sources(&p, acc);
            } else if p.extension().is_some_and(|x| x == "java") {
                acc.push(p);
            }
        }
    }
}

/// `target/it-classes`: the facade (`java/src/main/java`) and the workloads (`tests/java`),
/// compiled with JDK 17 `javac --release 17`. Recompiled only when a source changed (a hash of
/// paths and contents is kept in `.stamp`); compiled into a fresh directory and swapped in.
pub fn classes() -> PathBuf {
    static CLASSES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLASSES
        .get_or_init(compile_classes)
        .clone()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn compile_classes() -> Result<PathBuf, String> {
    let root = root();
    let mut sources = Vec::new();
    java_sources(&root.join("java/src/main/java"), &mut sources);
    // Test-only read-back (dev.jfrctx.internal.Introspection), never in jfrctx.jar.
    java_sources(&root.join("java/src/testFixtures/java"), &mut sources);
    java_sources(&root.join("tests/java"), &mut sources);
    sources.sort();
    if sources.is_empty() {
        return Err("no Java sources under java/src/main/java and tests/java".into());
    }
    let javac = javac();
    let mut h = DefaultHasher::new();
    javac.hash(&mut h);
    for s in &sources {
        s.hash(&mut h);
        fs::read(s)
            .map_err(|e| format!("read {}: {e}", s.display()))?
            .hash(&mut h);
    }
    let stamp = format!("{:016x}\n", h.finish());

    let _lock = FileLock::acquire();
    let dest = target_dir().join("it-classes");
    if fs::read_to_string(dest.join(".stamp")).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(dest);
    }
    let fresh = target_dir().join(format!("it-classes.new.{}", std::process::id()));
    let _ = fs::remove_dir_all(&fresh);
    fs::create_dir_all(&fresh).map_err(|e| format!("create {}: {e}", fresh.display()))?;
    let out = Command::new(&javac)
        .args([
            "--release",
            "17",
            "-g",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-d",
        ])
        .arg(&fresh)
        .args(&sources)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", javac.display()))?;
    if !out.status.success() {
        let _ = fs::remove_dir_all(&fresh);
        return Err(format!(
            "javac failed on the facade + tests/java:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    fs::write(fresh.join(".stamp"), &stamp).map_err(|e| e.to_string())?;
    let _ = fs::remove_dir_all(&dest);
    fs::rename(&fresh, &dest).map_err(|e| format!("rename to {}: {e}", dest.display()))?;
    Ok(dest)
}

// ---- running JVMs --------------------------------------------------------------------------

/// Kills (and reaps) the child process when dropped, e.g. when a test panics.
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child already taken")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            if let Ok(None) = c.try_wait() {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
    }
}

/// What a JVM run produced.
#[derive(Debug)]
pub struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout and stderr, for assertion messages.
    pub fn dump(&self) -> String {
        format!(
            "status: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }

    /// The stderr lines written by the agent (prefix `jfrctx:`).
    pub fn agent_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("jfrctx:"))
            .collect()
    }
}

/// The `-agentpath:` argument for `options` (built agent).
pub fn agent_arg(options: &str) -> String {
    let lib = agent_lib();
    if options.is_empty() {
        format!("-agentpath:{}", lib.display())
    } else {
        format!("-agentpath:{}={options}", lib.display())
    }
}

/// Runs `main_class` from `target/it-classes` on JDK `jdk`, with the agent when
/// `agent_options` is `Some` (`Some("")`: agent without options). Panics (after killing the
/// JVM) when it runs longer than `timeout`.
pub fn run_java(
    jdk: u32,
    agent_options: Option<&str>,
    main_class: &str,
    args: &[&str],
    timeout: Duration,
) -> Output {
    let mut jvm_args = Vec::new();
    if let Some(opts) = agent_options {
        jvm_args.push(agent_arg(opts));
    }
    run_java_with(jdk, &jvm_args, main_class, args, timeout)
}

/// Like [`run_java`] with arbitrary JVM arguments placed before `-cp`.
pub fn run_java_with(
    jdk: u32,
    jvm_args: &[String],
    main_class: &str,
    args: &[&str],
    timeout: Duration,
) -> Output {
    spawn_java(&java(jdk), jvm_args, main_class, args, &[]).wait(timeout)
}

/// The JVM flag every JVM started here gets.
pub const XCHECK_JNI: &str = "-Xcheck:jni";

/// Not a JVM flag: in `jvm_args`, asks [`spawn_java`] not to add `-XX:+DebugNonSafepoints`.
pub const AS_IS_FRAMES: &str = "jfrctx-test:as-is-frames";

/// The lines of `text` in which HotSpot's `-Xcheck:jni` reports a problem (same format on JDK
/// 17, 21 and 25; HotSpot prints them on stdout, followed by native frames).
pub fn jni_check_reports(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            l.starts_with("WARNING in native method:")
                || l.starts_with("WARNING: JNI ")
                || l.starts_with("FATAL ERROR in native method:")
        })
        .collect()
}

/// A running JVM started by [`spawn_java`]; killed when dropped before [`Jvm::wait`].
pub struct Jvm {
    guard: ChildGuard,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<thread::JoinHandle<()>>,
    described: String,
    started: Instant,
}

fn pump(mut from: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => into
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend_from_slice(&buf[..n]),
            }
        }
    })
}

/// Starts `java` (any `bin/java`) with `jvm_args` (plus `-Xcheck:jni`) and `-cp
/// target/it-classes main_class args`, with `env` added to a cleaned environment.
pub fn spawn_java(
    java: &Path,
    jvm_args: &[String],
    main_class: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Jvm {
    spawn_java_cp(java, classes().as_os_str(), jvm_args, main_class, args, env)
}

/// Like [`spawn_java`] with `classpath` (e.g. `a.jar:dir`) instead of `target/it-classes`: for
/// a JVM whose class path must not hold the facade (an application server that gets it from a
/// web application).
pub fn spawn_java_cp(
    java: &Path,
    classpath: &std::ffi::OsStr,
    jvm_args: &[String],
    main_class: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Jvm {
    let mut cmd = Command::new(java);
    if !jvm_args.iter().any(|a| a == XCHECK_JNI) {
        cmd.arg(XCHECK_JNI);
    }
    // Exact frames: without DebugNonSafepoints HotSpot may credit a sample taken next to a call
    // to the callee, which the ground-truth checks would count as a wrong context. The agent
    // turns it on by itself (tests/exact_frames.rs checks that); the flag keeps runs without the
    // agent comparable. A test that sets the flag either way, or asks for the JVM's own default
    // with `AS_IS_FRAMES`, is left alone.
    let as_is = jvm_args.iter().any(|a| a == AS_IS_FRAMES);
    if !as_is && !jvm_args.iter().any(|a| a.contains("DebugNonSafepoints")) {
        cmd.args(["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"]);
    }
    let jvm_args: Vec<&String> = jvm_args.iter().filter(|a| *a != AS_IS_FRAMES).collect();
    cmd.args(jvm_args)
        .arg("-cp")
        .arg(classpath)
        .arg(main_class)
        .args(args)
        .current_dir(root())
        .env_remove("JAVA_TOOL_OPTIONS")
        .env_remove("_JAVA_OPTIONS")
        .env_remove("JDK_JAVA_OPTIONS")
        .env_remove("JFRCTX_TEST_PANIC")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let described = format!("{:?}", cmd);
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {described}: {e}"));
    let mut guard = ChildGuard(Some(child));
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let readers = vec![
        pump(guard.child().stdout.take().unwrap(), stdout.clone()),
        pump(guard.child().stderr.take().unwrap(), stderr.clone()),
    ];
    Jvm {
        guard,
        stdout,
        stderr,
        readers,
        described,
        started: Instant::now(),
    }
}

impl Jvm {
    pub fn pid(&mut self) -> i32 {
        self.guard.child().id() as i32
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the JVM.
    pub fn signal(&mut self, signal: i32) {
        let pid = self.pid();
        // SAFETY: kill(2) on the pid of our own child, which is not reaped yet (we own it).
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(
            rc,
            0,
            "kill({pid}, {signal}): {}",
            std::io::Error::last_os_error()
        );
    }

    /// What the JVM printed on stdout so far.
    pub fn stdout_so_far(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }

    /// Waits until stdout contains `needle`; panics (killing the JVM) after `timeout` or when
    /// the JVM exits first.
    pub fn wait_for_stdout(&mut self, needle: &str, timeout: Duration) {
        let start = Instant::now();
        while !self.stdout_so_far().contains(needle) {
            let exited = matches!(self.guard.child().try_wait(), Ok(Some(_)));
            if exited || start.elapsed() >= timeout {
                let why = if exited { "exited" } else { "timed out" };
                let out = self.finish();
                panic!(
                    "JVM {why} before printing {needle:?}: {}\n{}",
                    self.described,
                    out.dump()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the JVM if it still runs, reaps it, and collects its output.
    fn finish(&mut self) -> Output {
        let status = match self.guard.0.take() {
            Some(mut c) => {
                if let Ok(None) = c.try_wait() {
                    let _ = c.kill();
                }
                c.wait().expect("wait for the JVM")
            }
            None => panic!("JVM already reaped"),
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let take = |b: &Arc<Mutex<Vec<u8>>>| {
            String::from_utf8_lossy(&b.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
        };
        Output {
            status,
            stdout: take(&self.stdout),
            stderr: take(&self.stderr),
        }
    }

    /// Waits for the JVM to exit (counting from its start), then checks that `-Xcheck:jni`
    /// reported nothing. Panics (after killing the JVM) when it runs longer than `timeout`.
    pub fn wait(self, timeout: Duration) -> Output {
        self.wait_allowing_jni(timeout, &[])
    }

    /// Like [`Jvm::wait`], except that a `-Xcheck:jni` report whose first frame (the line after
    /// it) names one of `foreign_natives` is not counted: for reports about JDK natives that
    /// another agent calls (the OTel Java agent's `Instrumentation.getAllLoadedClasses` makes the
    /// JDK's `InstrumentationImpl.getAllLoadedClasses0` exceed its local-ref capacity), which no
    /// jfrctx code runs in.
    pub fn wait_allowing_jni(mut self, timeout: Duration, foreign_natives: &[&str]) -> Output {
        let exited = loop {
            match self.guard.child().try_wait() {
                Ok(Some(_)) => break true,
                Ok(None) if self.started.elapsed() >= timeout => break false,
                Ok(None) => thread::sleep(Duration::from_millis(20)),
                Err(e) => panic!("waiting for {}: {e}", self.described),
            }
        };
        let out = self.finish();
        if !exited {
            panic!(
                "timed out after {timeout:?}: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                self.described, out.stdout, out.stderr
            );
        }
        let foreign = |text: &str, report: &str| {
            let next = text
                .split_once(report)
                .and_then(|(_, rest)| rest.lines().nth(1))
                .unwrap_or("");
            next.trim_start().starts_with("at ") && foreign_natives.iter().any(|n| next.contains(n))
        };
        let reports: Vec<&str> = jni_check_reports(&out.stdout)
            .into_iter()
            .filter(|r| !foreign(&out.stdout, r))
            .chain(
                jni_check_reports(&out.stderr)
                    .into_iter()
                    .filter(|r| !foreign(&out.stderr, r)),
            )
            .collect();
        assert!(
            reports.is_empty(),
            "-Xcheck:jni reported {} problem(s) in {}:\n  {}\n{}",
            reports.len(),
            self.described,
            reports.join("\n  "),
            out.dump()
        );
        out
    }
}

/// Serializes the heavy JVM runs of one test binary (the machine has two cores; parallel
/// sampled JVMs would only starve each other).
pub fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|p| p.into_inner())
}

// ---- files and JSON ------------------------------------------------------------------------

/// A fresh output path `target/it-out/<name>` (any previous file removed). Kept after the test
/// for inspection.
pub fn out_file(name: &str) -> PathBuf {
    let dir = target_dir().join("it-out");
    fs::create_dir_all(&dir).expect("create target/it-out");
    let p = dir.join(name);
    let _ = fs::remove_file(&p);
    p
}

/// Parses every line of a JSON-lines file. Panics on a malformed line (naming it); an empty or
/// whitespace-only last line is tolerated.
pub fn read_json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    parse_json_lines(&text, &path.display().to_string())
}

/// Parses JSON lines from a string (`what` names the source in panics). Blank lines are skipped.
pub fn parse_json_lines(text: &str, what: &str) -> Vec<serde_json::Value> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("{what}:{}: bad JSON ({e}): {l}", i + 1))
        })
        .collect()
}

/// The last stdout line that parses as a JSON object (the workloads' summary line).
pub fn summary_json(out: &Output) -> Option<serde_json::Value> {
    out.stdout
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .find(|v| v.is_object())
}

// ---- the agent's exit summary --------------------------------------------------------------

/// One sink's figures in the summary: `NAME records=N errors=N`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkFigures {
    pub name: String,
    pub records: u64,
    pub errors: u64,
}

/// The agent's exit line `jfrctx: samples received=N with_context=N without_context=N
/// unknown=N (...) dropped=N [filtered=N]; sinks NAME records=N errors=N, ...; ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSummary {
    pub line: String,
    pub received: u64,
    pub with_context: u64,
    pub without_context: u64,
    pub unknown: u64,
    pub dropped: u64,
    pub sinks: Vec<SinkFigures>,
}

fn number_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

impl AgentSummary {
    /// Parses the summary line; `None` when `line` is not one.
    pub fn parse(line: &str) -> Option<AgentSummary> {
        let rest = line.strip_prefix("jfrctx: samples ")?;
        let mut parts = rest.splitn(3, "; ");
        let counts = parts.next()?;
        let sinks = parts.next()?.strip_prefix("sinks")?.trim();
        let mut figures = Vec::new();
        if sinks != "none" {
            for item in sinks.split(", ") {
                // NAME records=N errors=N (NAME may hold spaces: split from the right)
                let (head, errors) = item.rsplit_once(" errors=")?;
                let (name, records) = head.rsplit_once(" records=")?;
                figures.push(SinkFigures {
                    name: name.to_string(),
                    records: records.parse().ok()?,
                    errors: errors.parse().ok()?,
                });
            }
        }
        Some(AgentSummary {
            line: line.to_string(),
            received: number_after(counts, "received=")?,
            with_context: number_after(counts, "with_context=")?,
            without_context: number_after(counts, "without_context=")?,
            unknown: number_after(counts, " unknown=")?,
            dropped: number_after(counts, "dropped=")?,
            sinks: figures,
        })
    }

    /// `received == with_context + without_context + unknown + dropped`.
    pub fn balanced(&self) -> bool {
        self.received == self.with_context + self.without_context + self.unknown + self.dropped
    }

    pub fn sink(&self, name_part: &str) -> &SinkFigures {
        self.sinks
            .iter()
            .find(|s| s.name.contains(name_part))
            .unwrap_or_else(|| panic!("no sink {name_part:?} in {}", self.line))
    }
}

impl Output {
    /// The agent's exit summary; panics (with the output) unless there is exactly one, and
    /// unless it adds up.
    pub fn agent_summary(&self) -> AgentSummary {
        let lines: Vec<&str> = self
            .agent_lines()
            .into_iter()
            .filter(|l| l.starts_with("jfrctx: samples "))
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "expected exactly one `jfrctx: samples ...` summary line:\n{}",
            self.dump()
        );
        let summary = AgentSummary::parse(lines[0])
            .unwrap_or_else(|| panic!("cannot parse the summary {:?}", lines[0]));
        assert!(
            summary.balanced(),
            "summary does not add up (received = with + without + unknown + dropped): {}",
            summary.line
        );
        summary
    }

    /// The `jfrctx:` lines other than the summary.
    pub fn agent_messages(&self) -> Vec<&str> {
        self.agent_lines()
            .into_iter()
            .filter(|l| !l.starts_with("jfrctx: samples "))
            .collect()
    }
}
