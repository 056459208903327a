//! Every way a JVM ends goes through the agent's VMDeath: the end of `main`, `System.exit(3)`,
//! SIGTERM (exit 143) and an uncaught exception in `main` (exit 1). In each case the JSON-lines
//! file is complete (every line parses and their number is the summary's `received`) and the
//! summary line is printed once and adds up. Workload: `tests/java/gt/Faults.java`.

use crate::common;

use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

fn options(jsonl: &std::path::Path) -> String {
    format!("sink=jsonl:{},period=10ms", jsonl.display())
}

/// The checks every exit path shares: exit code, complete file, one balanced summary, no other
/// `jfrctx:` line.
fn assert_complete(out: &common::Output, jsonl: &std::path::Path, code: i32) {
    assert_eq!(out.status.code(), Some(code), "{}", out.dump());
    let summary = out.agent_summary();
    let samples = common::read_json_lines(jsonl);
    assert_eq!(
        samples.len() as u64,
        summary.received,
        "{} has {} lines, the summary says: {}",
        jsonl.display(),
        samples.len(),
        summary.line
    );
    assert!(summary.received > 0, "no samples: {}", summary.line);
    assert!(
        out.agent_messages().is_empty(),
        "unexpected jfrctx messages:\n{}",
        out.dump()
    );
}

/// `gt.Faults MODE 2` on `jdk`, expecting exit code `code`.
fn ends_by(jdk: u32, mode: &str, code: i32) -> common::Output {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("exit-{mode}-{jdk}.jsonl"));
    let out = common::run_java(
        jdk,
        Some(&options(&jsonl)),
        "gt.Faults",
        &[mode, "2"],
        TIMEOUT,
    );
    assert!(
        out.stdout.contains("\"done\":true"),
        "the workload did not reach its end:\n{}",
        out.dump()
    );
    assert_complete(&out, &jsonl, code);
    out
}

fn sigterm(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("exit-sigterm-{jdk}.jsonl"));
    let mut jvm = common::spawn_java(
        &common::java(jdk),
        &[common::agent_arg(&options(&jsonl))],
        "gt.Faults",
        &["wait"],
        &[],
    );
    jvm.wait_for_stdout("faults: ready", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));
    jvm.signal(libc::SIGTERM);
    let out = jvm.wait(TIMEOUT);
    // 128 + SIGTERM: the JVM ran its shutdown hooks (and VMDeath) and exited.
    assert_complete(&out, &jsonl, 143);
}

#[test]
fn end_of_main_jdk17() {
    ends_by(17, "normal", 0);
}

#[test]
fn system_exit_jdk17() {
    ends_by(17, "exit3", 3);
}

#[test]
fn uncaught_exception_jdk17() {
    let out = ends_by(17, "throw", 1);
    assert!(
        out.stderr.contains("Exception in thread \"main\""),
        "{}",
        out.dump()
    );
}

#[test]
fn sigterm_jdk17() {
    sigterm(17);
}

#[test]
fn system_exit_jdk25() {
    ends_by(25, "exit3", 3);
}

#[test]
fn uncaught_exception_jdk21() {
    ends_by(21, "throw", 1);
}

#[test]
fn sigterm_jdk25() {
    sigterm(25);
}
