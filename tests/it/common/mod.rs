//! Shared harness for the integration tests that run real JVMs with the agent.
//!
//! - JDKs come from `JFRCTX_JDK17/21/25`, else from the cache of `scripts/jdks.sh`
//!   (`${JFRCTX_CACHE:-$HOME/.cache/jfrctx}/jdk-NN`; JDK 17 also from `/usr/lib/jvm`). A missing
//!   JDK fails the test with a message saying to run `scripts/jdks.sh`: never a silent skip
//!   ([`jdk`]).
//! - The agent cdylib is built once per test run (`$CARGO build --release --lib`), and the facade
//!   (with its test-only read-back, `java/src/testFixtures/java`) plus `tests/java` are compiled
//!   once into `target/it-classes`, both behind an `flock` on
//!   `target/.jfrctx-it.lock` so that parallel test processes (nextest) do not race.
//! - [`JvmRun`] declares a run (JDK, agent options, JVM flags, main class, arguments, frames,
//!   timeout) and gives back a [`Run`]: the output, the agent's parsed summary, the samples of
//!   its JSON-lines sink, and the shared assertions. [`JvmRun::spawn`] hands back the running
//!   [`Jvm`] to act on (signal it, wait for a line on its stdout) before it finishes;
//!   [`ChildGuard`] kills it if the test panics ([`jvm`]).
//! - Every JVM started here runs with `-Xcheck:jni`, and the run fails when HotSpot's JNI checker
//!   reports anything ([`jni_check_reports`]): it prints, on stdout, `WARNING in native method:
//!   ...` (JDK 17, 21, 25: e.g. a JNI call with an exception pending), `WARNING: JNI local refs:
//!   N, exceeds capacity: M`, or `FATAL ERROR in native method: ...` (then aborts).
//! - [`AgentSummary`] parses the agent's exit line `jfrctx: samples received=N ...` ([`summary`]).
//! - [`http`] and [`tomcat`]: the HTTP client and the embedded-Tomcat launch shared by the
//!   application-server tests.
#![allow(dead_code)]

pub mod http;
pub mod javaagent;
pub mod jdk;
pub mod jvm;
pub mod otel_build;
pub mod pprof_tool;
pub mod run;
pub mod summary;
pub mod tomcat;
pub mod verdict;

#[allow(unused_imports)]
// the harness's vocabulary, whether or not every module uses all of it
pub use jdk::{java, jdk_home, JDKS};
#[allow(unused_imports)]
pub use jvm::{agent_arg, jni_check_reports, ChildGuard, Frames, Jvm, Output, XCHECK_JNI};
pub use run::{JvmRun, Run};
#[allow(unused_imports)]
pub use summary::{AgentSummary, SinkFigures};

use std::collections::hash_map::DefaultHasher;
use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use jdk::javac;

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

/// `target/it-classes`: the facade (`java/src/main/java`), its test-only read-back
/// (`java/src/testFixtures/java`) and the workloads (`tests/java`),
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

/// Serializes the heavy JVM runs of the integration-test binary (the machine has two cores;
/// parallel sampled JVMs would only starve each other): the write side of one lock.
pub fn serial() -> RwLockWriteGuard<'static, ()> {
    HEAVY.write().unwrap_or_else(|p| p.into_inner())
}

/// For a test whose JVMs are short and light (bad options, refused starts): the read side of
/// the lock [`serial`] writes, so light tests run two at a time but never beside a heavy run
/// (as when each concern was its own test binary and cargo ran the binaries one by one). Take it
/// once per test, at its start.
pub fn light() -> RwLockReadGuard<'static, ()> {
    HEAVY.read().unwrap_or_else(|p| p.into_inner())
}

static HEAVY: RwLock<()> = RwLock::new(());

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

/// The directory `scripts/SCRIPT` prints (the cached jars of `tomcat.sh`, `otel.sh`, ...).
pub fn script_dir(script: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(root().join("scripts").join(script))
        .output()
        .unwrap_or_else(|e| panic!("run scripts/{script}: {e}"));
    assert!(
        out.status.success(),
        "scripts/{script} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The `.jar` files in `dir`, sorted.
pub fn jars(dir: &Path) -> Vec<PathBuf> {
    let mut jars: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    jars
}

/// Copies the tree `from` into `to`.
pub fn copy_tree(from: &Path, to: &Path) {
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
