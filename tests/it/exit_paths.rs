//! Every way a JVM ends goes through the agent's VMDeath: the end of `main`, `System.exit(3)`,
//! SIGTERM (exit 143) and an uncaught exception in `main` (exit 1). In each case the JSON-lines
//! file is complete (every line parses and their number is the summary's `received`) and the
//! summary line is printed once and adds up. Workload: `tests/java/gt/Faults.java`.

use crate::common::{self, JvmRun, Run};

use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

const OPTIONS: &str = "sink=jsonl:{jsonl},period=10ms";

/// The checks every exit path shares: exit code, complete file, one balanced summary, no other
/// `jfrctx:` line.
fn assert_complete(out: &Run, code: i32) {
    out.assert_exit_code(code);
    let (summary, _) = out.summary_and_samples();
    assert!(summary.received > 0, "no samples: {}", summary.line);
    out.assert_no_agent_messages();
}

/// `gt.Faults MODE 2` on `jdk`, expecting exit code `code`.
fn ends_by(jdk: u32, mode: &str, code: i32) -> Run {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("exit-{mode}-{jdk}.jsonl"))
        .agent(OPTIONS)
        .main("gt.Faults")
        .args([mode, "2"])
        .timeout(TIMEOUT)
        .run();
    assert!(
        out.stdout.contains("\"done\":true"),
        "the workload did not reach its end:\n{}",
        out.dump()
    );
    assert_complete(&out, code);
    out
}

fn sigterm(jdk: u32) {
    let _serial = common::serial();
    let mut jvm = JvmRun::new(jdk)
        .jsonl(&format!("exit-sigterm-{jdk}.jsonl"))
        .agent(OPTIONS)
        .main("gt.Faults")
        .args(["wait"])
        .timeout(TIMEOUT)
        .spawn();
    jvm.wait_for_stdout("faults: ready", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));
    jvm.signal(libc::SIGTERM);
    let out = jvm.finish();
    // 128 + SIGTERM: the JVM ran its shutdown hooks (and VMDeath) and exited.
    assert_complete(&out, 143);
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
