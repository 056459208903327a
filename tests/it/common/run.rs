//! [`JvmRun`]: one JVM run declared in one expression (JDK, agent options, JVM flags, class path,
//! main class, arguments, frames, timeout), and [`Run`], what it produced with the checks every
//! test makes (exit status, the agent's summary against its JSON-lines file).
//!
//! ```ignore
//! let run = JvmRun::new(17)
//!     .jsonl("ground-truth-17.jsonl")
//!     .agent("sink=jsonl:{jsonl},period=1ms")
//!     .main("gt.GroundTruth")
//!     .args(&["6", "all"])
//!     .timeout(Duration::from_secs(180))
//!     .run();
//! run.assert_clean_exit();
//! let (summary, samples) = run.summary_and_samples();
//! ```
//!
//! JVM arguments keep the order of the calls that add them (`.agent(..)` included): the order
//! of `-agentpath:` and `-javaagent:` decides which agent loads first.

use super::jdk::java;
use super::jvm::{self, agent_arg, Frames, Jvm, Output};
use super::summary::AgentSummary;
use super::{classes, out_file, read_json_lines, summary_json};
use serde_json::Value;
use std::ffi::OsString;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a run may take when the test does not say.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// One JVM argument: the agent's (resolved when the run starts, `{jsonl}` replaced) or another.
#[derive(Clone, Debug)]
enum Arg {
    Agent(String),
    Jvm(String),
}

/// A JVM run being declared; [`JvmRun::run`] or [`JvmRun::spawn`] starts it.
#[derive(Clone, Debug)]
#[must_use]
pub struct JvmRun {
    java: PathBuf,
    what: String,
    jvm_args: Vec<Arg>,
    jsonl: Option<PathBuf>,
    classpath: Option<OsString>,
    main: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    frames: Frames,
    timeout: Duration,
    foreign_natives: Vec<String>,
}

impl JvmRun {
    /// A run on JDK `jdk` (17, 21 or 25).
    pub fn new(jdk: u32) -> JvmRun {
        JvmRun::with_java(&java(jdk), &format!("JDK {jdk}"))
    }

    /// A run on any `bin/java` (a JDK 11, a runtime without `jdk.jfr`); `what` names it in
    /// failure messages.
    pub fn with_java(java: &Path, what: &str) -> JvmRun {
        JvmRun {
            java: java.to_path_buf(),
            what: what.to_string(),
            jvm_args: Vec::new(),
            jsonl: None,
            classpath: None,
            main: None,
            args: Vec::new(),
            env: Vec::new(),
            frames: Frames::Exact,
            timeout: DEFAULT_TIMEOUT,
            foreign_natives: Vec::new(),
        }
    }

    /// Loads the agent with `options` (`""`: no options); `{jsonl}` in them stands for the file
    /// of [`JvmRun::jsonl`].
    pub fn agent(mut self, options: &str) -> JvmRun {
        self.jvm_args.push(Arg::Agent(options.to_string()));
        self
    }

    /// The JSON-lines file of the run: `target/it-out/<name>`, removed now; `{jsonl}` in the
    /// agent options stands for it, and [`Run::samples`] reads it.
    pub fn jsonl(mut self, name: &str) -> JvmRun {
        self.jsonl = Some(out_file(name));
        self
    }

    /// The JSON-lines file of the run at `path` (removed now), for a test that keeps a run's
    /// files together; otherwise as [`JvmRun::jsonl`].
    pub fn jsonl_at(mut self, path: &Path) -> JvmRun {
        let _ = std::fs::remove_file(path);
        self.jsonl = Some(path.to_path_buf());
        self
    }

    /// Adds one JVM argument (before `-cp`).
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> JvmRun {
        self.jvm_args.push(Arg::Jvm(arg.into()));
        self
    }

    /// Adds JVM arguments (before `-cp`).
    pub fn jvm_args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> JvmRun {
        self.jvm_args
            .extend(args.into_iter().map(|a| Arg::Jvm(a.into())));
        self
    }

    /// The class path instead of `target/it-classes` (facade and `tests/java` workloads).
    pub fn classpath(mut self, classpath: impl Into<OsString>) -> JvmRun {
        self.classpath = Some(classpath.into());
        self
    }

    /// The main class.
    pub fn main(mut self, class: &str) -> JvmRun {
        self.main = Some(class.to_string());
        self
    }

    /// The program arguments.
    pub fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> JvmRun {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// Adds an environment variable (the JVM starts from a cleaned environment).
    pub fn env(mut self, key: &str, value: &str) -> JvmRun {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Which frames HotSpot records ([`Frames::Exact`] unless told).
    pub fn frames(mut self, frames: Frames) -> JvmRun {
        self.frames = frames;
        self
    }

    /// How long the JVM may run, counted from its start (60 s unless told).
    pub fn timeout(mut self, timeout: Duration) -> JvmRun {
        self.timeout = timeout;
        self
    }

    /// `-Xcheck:jni` reports whose first frame names one of `natives` do not fail the run (see
    /// [`Jvm::wait_allowing_jni`]).
    pub fn allow_foreign_jni(mut self, natives: &[&str]) -> JvmRun {
        self.foreign_natives
            .extend(natives.iter().map(|n| n.to_string()));
        self
    }

    /// The JVM arguments as the JVM gets them (the agent's resolved).
    pub fn resolved_jvm_args(&self) -> Vec<String> {
        self.jvm_args
            .iter()
            .map(|a| match a {
                Arg::Agent(options) => agent_arg(&match &self.jsonl {
                    Some(p) => options.replace("{jsonl}", &p.display().to_string()),
                    None => {
                        assert!(
                            !options.contains("{jsonl}"),
                            "agent options {options:?} name {{jsonl}} but the run has no .jsonl(..)"
                        );
                        options.clone()
                    }
                }),
                Arg::Jvm(a) => a.clone(),
            })
            .collect()
    }

    /// Starts the JVM; the [`RunningJvm`] kills it when dropped before [`RunningJvm::finish`].
    pub fn spawn(self) -> RunningJvm {
        let main = self
            .main
            .clone()
            .unwrap_or_else(|| panic!("JvmRun on {} without .main(..)", self.what));
        let classpath = self
            .classpath
            .clone()
            .unwrap_or_else(|| classes().into_os_string());
        let jvm_args = self.resolved_jvm_args();
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let jvm = jvm::spawn(
            &self.java,
            &classpath,
            &jvm_args,
            self.frames,
            &main,
            &args,
            &env,
        );
        RunningJvm { jvm, run: self }
    }

    /// Runs the JVM to its end (see [`RunningJvm::finish`]).
    pub fn run(self) -> Run {
        self.spawn().finish()
    }
}

/// A JVM started by [`JvmRun::spawn`]: a [`Jvm`] (signal it, wait for its stdout) until
/// [`RunningJvm::finish`].
pub struct RunningJvm {
    jvm: Jvm,
    run: JvmRun,
}

impl Deref for RunningJvm {
    type Target = Jvm;
    fn deref(&self) -> &Jvm {
        &self.jvm
    }
}

impl DerefMut for RunningJvm {
    fn deref_mut(&mut self) -> &mut Jvm {
        &mut self.jvm
    }
}

impl RunningJvm {
    /// Waits for the JVM to exit within the run's timeout, and checks that `-Xcheck:jni`
    /// reported nothing (but the allowed foreign natives).
    pub fn finish(self) -> Run {
        let natives: Vec<&str> = self
            .run
            .foreign_natives
            .iter()
            .map(String::as_str)
            .collect();
        let out = self.jvm.wait_allowing_jni(self.run.timeout, &natives);
        let main = self.run.main.unwrap_or_default();
        Run {
            out,
            what: format!("{} {main}", self.run.what),
            jsonl: self.run.jsonl,
        }
    }
}

/// What a [`JvmRun`] produced; derefs to its [`Output`].
#[derive(Debug)]
pub struct Run {
    pub out: Output,
    /// `JDK N main.Class` (or the name given to [`JvmRun::with_java`]), for messages.
    pub what: String,
    /// The file of [`JvmRun::jsonl`].
    pub jsonl: Option<PathBuf>,
}

impl Deref for Run {
    type Target = Output;
    fn deref(&self) -> &Output {
        &self.out
    }
}

impl Run {
    /// Fails (with the output) unless the JVM exited with status 0.
    pub fn assert_clean_exit(&self) -> &Run {
        assert!(
            self.out.status.success(),
            "{} failed:\n{}",
            self.what,
            self.out.dump()
        );
        self
    }

    /// Fails (with the output) unless the JVM exited with `code`.
    pub fn assert_exit_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.out.status.code(),
            Some(code),
            "{}: exit status:\n{}",
            self.what,
            self.out.dump()
        );
        self
    }

    /// Fails (with the output) when the agent printed any `jfrctx:` line but its summary.
    pub fn assert_no_agent_messages(&self) -> &Run {
        assert!(
            self.out.agent_messages().is_empty(),
            "{}: unexpected jfrctx messages {:?}:\n{}",
            self.what,
            self.out.agent_messages(),
            self.out.dump()
        );
        self
    }

    /// The agent's exit summary: exactly one, adding up (see [`Output::agent_summary`]).
    pub fn summary(&self) -> AgentSummary {
        self.out.agent_summary()
    }

    /// The path of the JSON-lines file; panics when the run has none.
    pub fn jsonl_path(&self) -> &Path {
        self.jsonl
            .as_deref()
            .unwrap_or_else(|| panic!("{}: the run has no .jsonl(..)", self.what))
    }

    /// Every line of the JSON-lines file.
    pub fn samples(&self) -> Vec<Value> {
        read_json_lines(self.jsonl_path())
    }

    /// The summary and the samples, checking that the summary's `received` is the number of
    /// lines in the file (every sample received was written).
    pub fn summary_and_samples(&self) -> (AgentSummary, Vec<Value>) {
        let summary = self.summary();
        let samples = self.samples();
        assert_eq!(
            summary.received,
            samples.len() as u64,
            "{}: agent summary says received={} but {} has {} lines\n{}",
            self.what,
            summary.received,
            self.jsonl_path().display(),
            samples.len(),
            summary.line
        );
        (summary, samples)
    }

    /// The workload's closing JSON line on stdout; panics when there is none.
    pub fn workload_summary(&self) -> Value {
        summary_json(&self.out).unwrap_or_else(|| {
            panic!(
                "{}: no JSON summary from the workload:\n{}",
                self.what,
                self.out.dump()
            )
        })
    }
}
