//! Starting JVMs (for [`super::JvmRun`]): [`spawn`] gives a [`Jvm`] to act on while it runs, the
//! `-Xcheck:jni` check of every run, and [`ChildGuard`], which kills a JVM when a test panics.

use super::{agent_lib, root};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

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

/// The JVM flag every JVM started here gets.
pub const XCHECK_JNI: &str = "-Xcheck:jni";

/// Which frames HotSpot records at a sample.
///
/// Without `-XX:+DebugNonSafepoints` HotSpot may credit a sample taken next to a call to the
/// callee, which the ground-truth checks would count as a wrong context. The agent turns it on by
/// itself (`exact_frames` checks that); adding the flag keeps runs without the agent comparable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Frames {
    /// `-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints`, unless the JVM arguments set
    /// `DebugNonSafepoints` either way themselves.
    #[default]
    Exact,
    /// Nothing added: the JVM's own default, or what the agent makes of it.
    AsIs,
}

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

/// A running JVM started by [`spawn`]; killed when dropped before [`Jvm::wait`].
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

/// Starts `java` with `-Xcheck:jni` (unless given), the flags `frames` asks for, `jvm_args`, `-cp
/// classpath main_class args`, and `env` added to a cleaned environment.
pub(super) fn spawn(
    java: &Path,
    classpath: &std::ffi::OsStr,
    jvm_args: &[String],
    frames: Frames,
    main_class: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Jvm {
    let mut cmd = Command::new(java);
    if !jvm_args.iter().any(|a| a == XCHECK_JNI) {
        cmd.arg(XCHECK_JNI);
    }
    // A test that sets the flag either way is left alone.
    if frames == Frames::Exact && !jvm_args.iter().any(|a| a.contains("DebugNonSafepoints")) {
        cmd.args(["-XX:+UnlockDiagnosticVMOptions", "-XX:+DebugNonSafepoints"]);
    }
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
