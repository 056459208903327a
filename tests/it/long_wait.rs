//! A wait longer than the retention (`jdk.JavaMonitorWait`), on threads whose context over the
//! wait is proven by what the agent keeps: `tests/java/gt/LongWait.java` runs three threads that
//! each wait 4.5 s in `gt_wait`, with `retention=3s`. The event is committed when the wait ends
//! and reaches the agent about a second later, so its start is well behind the retention when it
//! is decided. Expected:
//!
//! - `never-ctx` (never installed a context, never registered a ring): `{}`;
//! - `closed-ctx` (its context closed before the wait; the history keeps that transition to
//!   EMPTY as the point in force at the retention cut): `{}`;
//! - `in-ctx` (waits inside {gt: waiting}): {gt: waiting}.
//!
//! Before the history kept answering from the point in force at its cut, all three were
//! `unknown: history_expired`. The unit tests in `agent/core/join/tests.rs` and
//! `agent/core/context/history/tests.rs` check that a pruned stretch that had a context stays unknown.

use crate::common::{self, JvmRun};

use serde_json::{json, Value};
use std::time::Duration;

const WAIT_MS: &str = "4500";
/// The wait events must last about this long (ns).
const MIN_WAIT_NS: i64 = 4_000_000_000;

fn long_wait(jdk: u32) {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("long-wait-{jdk}.jsonl"))
        .agent("sink=jsonl:{jsonl},events=lock,retention=3s")
        .main("gt.LongWait")
        .args([WAIT_MS])
        .timeout(Duration::from_secs(60))
        .run();
    out.assert_clean_exit();
    let samples = out.samples();
    let waits: Vec<&Value> = samples
        .iter()
        .filter(|s| {
            s["event"] == "jdk.JavaMonitorWait"
                && common::verdict::innermost(s, "gt.LongWait.", "gt_wait").is_some()
        })
        .collect();
    for (thread, expected) in [
        ("never-ctx", json!({})),
        ("closed-ctx", json!({})),
        ("in-ctx", json!({"gt": "waiting"})),
    ] {
        let mine: Vec<&&Value> = waits
            .iter()
            .filter(|s| s["thread"]["name"] == thread)
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "JDK {jdk}: expected one wait of {thread}, got {mine:?}\n{}",
            out.dump()
        );
        let s = mine[0];
        let d = s["duration_ns"].as_i64().unwrap_or(0);
        assert!(
            d >= MIN_WAIT_NS,
            "JDK {jdk}: {thread} waited only {d} ns: {s}"
        );
        println!(
            "long wait JDK {jdk}: {thread} {:.1} s -> context {} {}",
            d as f64 / 1e9,
            s["context"],
            s["unknown"].as_str().unwrap_or("")
        );
        assert_eq!(s["context"], expected, "JDK {jdk}: {thread}: {s}");
    }
}

#[test]
fn long_wait_jdk17() {
    long_wait(17);
}

#[test]
fn long_wait_jdk25() {
    long_wait(25);
}
