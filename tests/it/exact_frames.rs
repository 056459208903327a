//! The agent makes HotSpot keep debug information at every compiled pc (what
//! `-XX:+DebugNonSafepoints` does), so a sample taken in inlined code names the inlined method
//! instead of the nearest safepoint's, and gets the context that method ran under.
//!
//! Workload `tests/java/fr/Inlining.java`: nearly all CPU is in `inner`, inlined into `outer`'s
//! loop. With exact frames most samples end in `inner`; an explicit `-XX:-DebugNonSafepoints`
//! (which the agent respects) credits them to `outer`. The control run proves the check can fail.

use crate::common::{self, Frames, JvmRun};

use serde_json::Value;
use std::time::Duration;

/// Share of the samples inside `fr.Inlining` whose leaf frame is `inner`, with the JVM's own
/// frames (the harness adds no `DebugNonSafepoints`: what is measured is the agent's doing).
fn inner_share(jdk: u32, jvm_flags: &[&str]) -> (f64, usize) {
    let _serial = common::serial();
    let tag = if jvm_flags.is_empty() { "auto" } else { "off" };
    // 2 ms: enough samples (≥ 100 needed) even when the machine is loaded and the workload gets
    // little CPU in its 3 s.
    let run = JvmRun::new(jdk)
        .jvm_args(jvm_flags.iter().copied())
        .frames(Frames::AsIs)
        .jsonl(&format!("exact-frames-{tag}-{jdk}.jsonl"))
        .agent("sink=jsonl:{jsonl},period=2ms")
        .main("fr.Inlining")
        .args(["3"])
        .timeout(Duration::from_secs(60))
        .run();
    run.assert_clean_exit();
    let leaves: Vec<String> = run
        .samples()
        .iter()
        .filter_map(|s: &Value| {
            let stack = s["stack"].as_array()?;
            let ours = stack
                .iter()
                .any(|f| f["method"].as_str().is_some_and(|m| m.starts_with("fr.")));
            ours.then(|| stack[0]["method"].as_str().unwrap_or("").to_string())
        })
        .collect();
    let inner = leaves.iter().filter(|m| *m == "fr.Inlining.inner").count();
    assert!(
        leaves.len() >= 100,
        "JDK {jdk}: only {} samples",
        leaves.len()
    );
    (inner as f64 / leaves.len() as f64, leaves.len())
}

fn check(jdk: u32) {
    let (auto, n) = inner_share(jdk, &[]);
    let (off, m) = inner_share(
        jdk,
        &["-XX:+UnlockDiagnosticVMOptions", "-XX:-DebugNonSafepoints"],
    );
    println!("JDK {jdk}: leaf inner {auto:.2} of {n} (agent default), {off:.2} of {m} (flag off)");
    assert!(
        auto >= 0.5,
        "JDK {jdk}: only {auto:.2} of samples end in the inlined method"
    );
    assert!(
        off <= 0.3,
        "JDK {jdk}: control without debug info had {off:.2}"
    );
}

#[test]
fn inlined_frames_are_exact_without_flags_jdk17() {
    check(17);
}

#[test]
fn inlined_frames_are_exact_without_flags_jdk21() {
    check(21);
}

#[test]
fn inlined_frames_are_exact_without_flags_jdk25() {
    check(25);
}
