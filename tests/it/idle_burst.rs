//! A burst of context switches after a quiet spell loses no entry. While every ring is idle the
//! agent's worker stretches its sleep up to ten times `drain` (`agent/runtime/pace.rs`); here
//! `drain=100ms`, so it sleeps a whole second. `tests/java/gt/IdleBurst.java` then switches
//! 4 000 times in ≈ 40 ms on one thread: four times what its 1 024-entry ring holds. The facade
//! wakes the worker when a half lap finds half the ring undrained (`ThreadLog.halfLap`,
//! `Natives.wake`), so the worker drains before the oldest entries are overwritten and its pace
//! then follows the fill. Without that wake, each burst loses ≈ 3 000 entries
//! (`lost_entries=`), and its samples become `unknown: log_overflow`.

use crate::common::{self, JvmRun};
use std::time::Duration;

/// Quiet spells and bursts per JVM.
const CYCLES: u64 = 3;
/// Switch pairs per burst (two transitions each).
const PAIRS: u64 = 2_000;

fn idle_burst(jdk: u32) {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("idle-burst-{jdk}.jsonl"))
        .agent("sink=jsonl:{jsonl},drain=100ms")
        .main("gt.IdleBurst")
        // Quiet for 3 s: the sleep doubles 200, 400, 800 ms and then stays at 1 s.
        .args([
            CYCLES.to_string(),
            "3000".into(),
            PAIRS.to_string(),
            "10000".into(),
        ])
        .timeout(Duration::from_secs(90))
        .run();
    out.assert_clean_exit();
    let written = CYCLES * PAIRS * 2;
    assert!(
        out.stdout.contains(&format!("transitions {written}")),
        "{}",
        out.dump()
    );
    let (summary, _samples) = out.summary_and_samples();
    println!("idle burst JDK {jdk}: {}", summary.line);
    assert_eq!(summary.figure("lost_entries="), 0, "{}", out.dump());
}

#[test]
fn idle_burst_jdk17() {
    idle_burst(17);
}

#[test]
fn idle_burst_jdk25() {
    idle_burst(25);
}
