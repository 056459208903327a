//! A ring's memory is never written after the agent has let go of it. Under the test hook
//! `JFRCTX_TEST_RING_GUARD` (agent/runtime/faults.rs) the pages of a ring the agent drops become
//! inaccessible instead of being freed or reused, so a facade that still writes into such a ring
//! (in a normal run: a write into freed memory, heap corruption, glibc aborting the JVM later)
//! crashes the JVM at that very write, with the writer's stack in its hs_err file.
//!
//! Workload: `gt.Carriers` (virtual threads whose every outermost context takes a ring and hands
//! it back at its close: thousands of rings a second), on JDK 21 and 25, with spare rings (the
//! default: taken from the spare queue without JNI, claimed by a header write, adopted by the
//! registry) and with the JNI registration (`spares=off`). Asserted: a clean exit, rings really cycled (`threads=`,
//! and with spares `spare_rings=`, in the agent's summary), samples received.
//!
//! Found this way: batches of spares refilled by two threads at once were queued out of the
//! order the agent made them; a thread that handed its ring back could then claim an *earlier*
//! spare, the registry adopted that thread's two claims in its own order, and the later adoption
//! replaced — and freed — the ring the thread was writing (2 guarded runs crashed of 2, and
//! 2 of 5; glibc's "corrupted double-linked list" once in about 30 unguarded runs). Now the
//! spare queue hands spares out in the order made, and the registry keeps a replaced ring's
//! memory unless every holder had handed it back.

use crate::common::{self, JvmRun};
use std::time::Duration;

/// Seconds of churn per JVM: enough for ten thousand rings and more, few enough that the
/// guarded (never freed) rings stay well inside the default `vm.max_map_count` (one mapping
/// each).
const SECONDS: &str = "2";
const THREADS: &str = "400";
/// JVMs per test: the bug above crashed about one guarded JVM in three of this size.
const RUNS: usize = 3;

fn churn(jdk: u32, spares: bool) {
    let _serial = common::serial();
    for run in 1..=RUNS {
        churn_once(jdk, spares, run);
    }
}

fn churn_once(jdk: u32, spares: bool, run: usize) {
    let name = format!(
        "ring-lifetime-{jdk}-{}-{run}",
        if spares { "spares" } else { "jni" }
    );
    let options = format!(
        "sink=jsonl:{{jsonl}},events=jdk.ExecutionSample#period=1ms{}",
        if spares { "" } else { ",spares=off" }
    );
    let out = JvmRun::new(jdk)
        .jsonl(&format!("{name}.jsonl"))
        .env("JFRCTX_TEST_RING_GUARD", "1")
        .agent(&options)
        .main("gt.Carriers")
        .args([SECONDS, THREADS])
        .timeout(Duration::from_secs(120))
        .run();
    out.assert_clean_exit();
    let summary = out.summary();
    println!("{name}: {}", summary.line);
    let rings = summary.figure("threads=");
    assert!(
        rings >= 1_000,
        "JDK {jdk}: only {rings} rings cycled: {}",
        summary.line
    );
    if spares {
        let taken = summary.figure("spare_rings=");
        assert!(
            taken * 2 >= rings,
            "JDK {jdk}: {taken} of {rings} rings were spares: {}",
            summary.line
        );
    }
    assert!(
        summary.received > 0,
        "JDK {jdk}: no samples: {}",
        summary.line
    );
}

#[test]
fn spare_rings_jdk21() {
    churn(21, true);
}

#[test]
fn spare_rings_jdk25() {
    churn(25, true);
}

#[test]
fn registered_rings_jdk25() {
    let _serial = common::serial();
    churn_once(25, false, 1);
}
