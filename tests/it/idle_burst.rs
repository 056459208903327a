//! A burst of context switches after a quiet spell loses no entry. While every ring is idle the
//! agent's worker stretches its sleep up to ten times `drain` (`agent/runtime/pace.rs`); here
//! `drain=100ms`, so it sleeps a whole second. `tests/java/gt/IdleBurst.java` then switches
//! 4 000 times in ≈ 40 ms on one thread: four times what its 1 024-entry ring holds. The facade
//! wakes the worker when a half lap finds half the ring undrained (`ThreadLog.halfLap`,
//! `Natives.wake`), so the worker drains before the oldest entries are overwritten and its pace
//! then follows the fill. Without that wake, each burst loses ≈ 3 000 entries
//! (`lost_entries=`), and its samples become `unknown: log_overflow`.
//!
//! The bursting thread's first context takes a spare ring of 64 entries (`spare_ring=`'s
//! default), whose header already asks for the default 1 024: the burst moves it there at its
//! first lap, before any entry is overwritten (`grown_rings=` counts it, `lost_entries=` stays 0).
//!
//! The stretch must not start in the gaps of work that comes in bursts: `tests/java/gt/
//! BurstyThreads.java` starts a batch of fresh threads every 20 ms, each building one context,
//! and reads how often the worker woke (its voluntary context switches). At `drain=10ms` that is
//! about 100 a second; when the word was set in the short rounds after each batch, the next
//! batch's first thread woke the worker and the short rounds began again: ≈ 300 a second.

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
        // Quiet for 3 s: after 1 s of idle rounds (ten times `drain`) the sleep doubles 200,
        // 400, 800 ms.
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
    assert!(summary.figure("spare_rings=") >= 1, "{}", summary.line);
    assert!(summary.figure("grown_rings=") >= 1, "{}", summary.line);
}

#[test]
fn idle_burst_jdk17() {
    idle_burst(17);
}

#[test]
fn idle_burst_jdk25() {
    idle_burst(25);
}

/// Wake-ups a second the worker may make at `drain=10ms`: its 100 rounds, and some waits for the
/// lock it shares with the stream thread.
const BURSTY_MAX_WAKEUPS: f64 = 160.0;

fn bursty_threads(jdk: u32) {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("bursty-threads-{jdk}.jsonl"))
        .agent("sink=jsonl:{jsonl},drain=10ms")
        .main("gt.BurstyThreads")
        // 150 batches of 16 threads, 20 ms apart: ≈ 3.5 s measured.
        .args(["150", "16", "20"])
        .timeout(Duration::from_secs(90))
        .run();
    out.assert_clean_exit();
    let line = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("worker wake-ups per second "))
        .unwrap_or_else(|| panic!("no wake-up count\n{}", out.dump()));
    let per_second: f64 = line.trim().parse().expect("a number");
    println!("bursty threads JDK {jdk}: worker wake-ups per second {per_second}");
    assert!(
        per_second <= BURSTY_MAX_WAKEUPS,
        "the worker woke {per_second} times a second (at most {BURSTY_MAX_WAKEUPS})\n{}",
        out.dump()
    );
}

#[test]
fn bursty_threads_jdk17() {
    bursty_threads(17);
}

#[test]
fn bursty_threads_jdk25() {
    bursty_threads(25);
}
