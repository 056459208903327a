//! Agent options: a bad option makes the JVM refuse to start, with exactly one `jfrctx:` line on
//! stderr naming the problem; a valid set starts and runs. Also: without the agent, the facade
//! is a no-op and the workload runs normally.

use crate::common::{self, JvmRun};

use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(90);

/// Runs GroundTruth briefly with `options` on `jdk` and checks the JVM refused to start with one
/// `jfrctx:` line that contains `names` (what the user got wrong).
fn assert_rejected(jdk: u32, options: &str, names: &str) {
    let out = JvmRun::new(jdk)
        .agent(options)
        .main("gt.GroundTruth")
        .args(["1", "platform"])
        .timeout(TIMEOUT)
        .run();
    assert!(
        !out.status.success(),
        "JDK {jdk}: the JVM started with bad options {options:?}:\n{}",
        out.dump()
    );
    assert!(
        common::summary_json(&out).is_none(),
        "JDK {jdk}: the workload ran despite bad options {options:?}:\n{}",
        out.dump()
    );
    let lines = out.agent_lines();
    assert_eq!(
        lines.len(),
        1,
        "JDK {jdk}, options {options:?}: expected exactly one `jfrctx:` stderr line:\n{}",
        out.dump()
    );
    assert!(
        lines[0].contains(names),
        "JDK {jdk}, options {options:?}: the message should name {names:?}: {:?}",
        lines[0]
    );
}

#[test]
fn unknown_option() {
    let _light = common::light();
    assert_rejected(17, "perod=1ms", "perod");
}

#[test]
fn bad_period() {
    let _light = common::light();
    assert_rejected(17, "period=abc", "abc");
}

#[test]
fn empty_sink() {
    let _light = common::light();
    assert_rejected(17, "sink=", "sink");
}

#[test]
fn unknown_sink_kind() {
    let _light = common::light();
    assert_rejected(17, "sink=foo:x", "foo");
}

#[test]
fn unwritable_sink_file() {
    let _light = common::light();
    assert_rejected(
        17,
        "sink=jsonl:/nonexistent-dir/x.jsonl",
        "/nonexistent-dir/x.jsonl",
    );
}

#[test]
fn missing_config_file() {
    let _light = common::light();
    assert_rejected(17, "config=/nonexistent", "/nonexistent");
}

#[test]
fn bad_option_rejected_on_jdk21_and_jdk25() {
    let _light = common::light();
    assert_rejected(21, "perod=1ms", "perod");
    assert_rejected(25, "period=abc", "abc");
}

#[test]
fn valid_options_start() {
    let _light = common::light();
    let options = "sink=jsonl:{jsonl},period=10ms";
    let out = JvmRun::new(17)
        .jsonl("options-valid.jsonl")
        .agent(options)
        .main("gt.GroundTruth")
        .args(["2", "platform"])
        .timeout(TIMEOUT)
        .run();
    assert!(
        out.status.success(),
        "valid options {options:?} failed:\n{}",
        out.dump()
    );
    assert!(
        common::summary_json(&out).is_some(),
        "no workload summary:\n{}",
        out.dump()
    );
    assert!(
        out.agent_lines()
            .iter()
            .any(|l| l.starts_with("jfrctx: samples received=")),
        "no agent summary line:\n{}",
        out.dump()
    );
    let samples = out.samples();
    assert!(
        !samples.is_empty(),
        "{} is empty",
        out.jsonl_path().display()
    );
}

/// Without `-agentpath`, the facade must be a no-op: the workload runs and finishes normally,
/// and nothing is printed by jfrctx.
fn runs_without_agent(jdk: u32, mode: &str) {
    let out = JvmRun::new(jdk)
        .main("gt.GroundTruth")
        .args(["2", mode])
        .timeout(TIMEOUT)
        .run();
    assert!(
        out.status.success(),
        "JDK {jdk} {mode} without agent failed:\n{}",
        out.dump()
    );
    let work = common::summary_json(&out)
        .unwrap_or_else(|| panic!("no workload summary:\n{}", out.dump()));
    assert_eq!(work["mode"], mode);
    for phase in ["alpha", "beta", "none", "nested"] {
        assert!(
            work["phases"][phase].as_u64().unwrap_or(0) > 0,
            "no {phase} phase ran: {work}"
        );
    }
    let pooled: u64 = ["pooled_run", "pooled_call", "pooled_activate"]
        .iter()
        .map(|k| work["phases"][k].as_u64().unwrap_or(0))
        .sum();
    assert!(pooled > 0, "no pooled task ran: {work}");
    assert!(
        out.agent_lines().is_empty(),
        "jfrctx printed without an agent:\n{}",
        out.dump()
    );
}

#[test]
fn no_agent_jdk17() {
    let _light = common::light();
    runs_without_agent(17, "platform");
}

#[test]
fn no_agent_jdk21_virtual() {
    let _light = common::light();
    runs_without_agent(21, "virtual");
}

#[test]
fn no_agent_jdk25() {
    let _light = common::light();
    runs_without_agent(25, "platform");
}
