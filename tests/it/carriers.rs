//! Samples taken on the carrier of a virtual thread (JDK 21 and 25): `tests/java/gt/Carriers.java`
//! runs 400 virtual threads `c-i` that yield, park, sleep inside `synchronized` (pinned on 21)
//! and allocate, all inside {gt: vc, n: i} in the method `gt_vc`, and run `gt_none` without a
//! context in between. The agent samples every 1 ms (`jdk.ExecutionSample`) and records
//! allocation samples.
//!
//! JFR names the *carrier* as the sampled thread when the virtual thread's frames are on the
//! stack but the thread identity is the carrier's: on JDK 21 `VirtualThread` switches the
//! identity to the carrier around `scheduleUnpark`/`cancel` (`switchToCarrierThread`) and before
//! it freezes or after it thaws. Such a sample must never get the carrier's context (`{}`): the
//! agent gives it the virtual thread's context when it can prove it, else `unknown:
//! carrier_transition`.
//!
//! Asserted, per JDK: 0 wrong samples among those whose stack holds `gt_vc` or `gt_none` (`gt_vc`:
//! exactly {gt: vc, n: i} on thread `c-i`, never `{}`, and nothing known on another thread; `gt_none`:
//! `{}`, or unknown); enough correct samples; the agent's summary matches the file. Printed: the
//! carrier samples (platform thread, virtual thread's frames) and their verdicts.
//!
//! The `gt_*` methods are kept out of line (`-XX:CompileCommand=dontinline,gt.Carriers::gt_*`):
//! HotSpot can credit a sample to the wrong one of several methods C2 inlined into one body,
//! which would read as a wrong context (README, Limits).
//!
//! `cargo test --test it carriers:: -- --nocapture` prints the figures.

use crate::common::{self, JvmRun};

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const CLASS: &str = "gt.Carriers.";
const SECONDS: &str = "6";
const THREADS: &str = "400";
const MIN_CORRECT: usize = 300;
const DONTINLINE: &str = "-XX:CompileCommand=quiet,dontinline,gt.Carriers::gt_*";

#[derive(Debug, PartialEq)]
enum Verdict {
    Correct,
    Unknown(String),
    Wrong(String),
}

/// `i` of a thread named `c-i`.
fn index(sample: &Value) -> Option<u64> {
    sample["thread"]["name"]
        .as_str()?
        .strip_prefix("c-")?
        .parse()
        .ok()
}

/// The stack holds frames of a virtual thread's continuation although JFR named a platform
/// thread.
fn carrier_sample(sample: &Value) -> bool {
    sample["thread"]["virtual"].as_bool() == Some(false)
        && sample["stack"].as_array().is_some_and(|s| {
            s.iter().any(|f| {
                matches!(
                    f["method"].as_str(),
                    Some("java.lang.VirtualThread.run" | "jdk.internal.vm.Continuation.enter")
                )
            })
        })
}

fn classify(sample: &Value, method: &str) -> Verdict {
    let ctx = match sample.get("context") {
        Some(Value::Object(ctx)) => ctx,
        Some(Value::Null) => {
            return match sample["unknown"].as_str() {
                Some(r) if !r.is_empty() => Verdict::Unknown(r.to_string()),
                _ => Verdict::Wrong("context null without a reason".into()),
            }
        }
        other => return Verdict::Wrong(format!("bad context field {other:?}")),
    };
    let got: BTreeMap<&str, &str> = ctx
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("?")))
        .collect();
    match (method, index(sample)) {
        ("gt_vc", Some(i)) => {
            let n = i.to_string();
            if got == BTreeMap::from([("gt", "vc"), ("n", n.as_str())]) {
                Verdict::Correct
            } else {
                Verdict::Wrong(format!("expected {{gt: vc, n: {i}}}, got {got:?}"))
            }
        }
        ("gt_vc", None) => Verdict::Wrong(format!(
            "gt_vc on thread {}: only unknown is right, got {got:?}",
            sample["thread"]
        )),
        _ if got.is_empty() => Verdict::Correct,
        _ => Verdict::Wrong(format!("expected {{}}, got {got:?}")),
    }
}

fn carriers(jdk: u32) {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("carriers-{jdk}.jsonl"))
        .jvm_arg(DONTINLINE)
        .agent("sink=jsonl:{jsonl},events=jdk.ExecutionSample#period=1ms+alloc")
        .main("gt.Carriers")
        .args([SECONDS, THREADS])
        .timeout(Duration::from_secs(120))
        .run();
    out.assert_clean_exit();
    let work = out.workload_summary();
    let (_, samples) = out.summary_and_samples();

    let mut correct = 0usize;
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let mut wrong = Vec::new();
    let mut gap = Vec::new();
    let mut carrier: BTreeMap<String, usize> = BTreeMap::new();
    let mut carrier_examples = Vec::new();
    let mut no_thread = 0usize;
    for s in &samples {
        if s["thread"]["id"].is_null() {
            no_thread += 1;
        }
        let is_carrier = carrier_sample(s);
        let Some(method) = common::verdict::innermost(s, CLASS, "gt_") else {
            if is_carrier {
                *carrier
                    .entry(format!("outside gt_*: {}", describe(s)))
                    .or_default() += 1;
            }
            continue;
        };
        let v = classify(s, &method);
        if is_carrier {
            let short = match &v {
                Verdict::Correct => "correct".to_string(),
                Verdict::Unknown(r) => format!("unknown {r}"),
                Verdict::Wrong(_) => "wrong".to_string(),
            };
            *carrier.entry(format!("{method}: {short}")).or_default() += 1;
            if carrier_examples.len() < 3 {
                carrier_examples.push(s.to_string());
            }
        }
        match v {
            Verdict::Correct => correct += 1,
            Verdict::Unknown(r) => *unknown.entry(r).or_default() += 1,
            Verdict::Wrong(_) if sampler_gap(s, &method) => gap.push(s.to_string()),
            Verdict::Wrong(why) => wrong.push(format!("{why}: {s}")),
        }
    }
    let in_gt = correct + unknown.values().sum::<usize>() + wrong.len() + gap.len();
    common::verdict::assert_sampler_gap_bounded(jdk, &gap, in_gt);
    println!(
        "carriers JDK {jdk}: {} samples ({no_thread} without a thread); in gt_*: correct {correct}, \
         unknown {unknown:?}, wrong {}; carrier samples {carrier:?}",
        samples.len(),
        wrong.len()
    );
    for e in &carrier_examples {
        println!("    carrier sample: {e}");
    }
    println!("    workload: {work}");
    common::verdict::assert_none_wrong(jdk, &wrong);
    assert!(
        correct >= MIN_CORRECT,
        "JDK {jdk}: only {correct} correct samples (need {MIN_CORRECT}); unknown {unknown:?}"
    );
}

/// The signature of JFR's sampler timing gap (README, Limits): `jdk.ExecutionSample` reads the
/// time before it stops the thread, so a thread that closes its context in those microseconds is
/// sampled with the frames of the next phase and the time of the previous one. Here: an execution
/// sample in `gt_none` (just after the close) that carries exactly the context its own thread
/// closed. Any other wrong context (another thread's, the carrier's) is counted as wrong.
fn sampler_gap(sample: &Value, method: &str) -> bool {
    let Some(i) = index(sample) else { return false };
    let n = i.to_string();
    method == "gt_none"
        && sample["event"] == "jdk.ExecutionSample"
        && sample["context"] == serde_json::json!({"gt": "vc", "n": n})
}

/// Event and reason of a sample, for the printed tally.
fn describe(s: &Value) -> String {
    let ctx = if s["context"].is_null() {
        format!("unknown {}", s["unknown"].as_str().unwrap_or("?"))
    } else {
        s["context"].to_string()
    };
    format!("{} {ctx}", s["event"].as_str().unwrap_or("?"))
}

#[test]
fn classification() {
    let s = |name: &str, virt: bool, ctx: Value, method: &str| {
        serde_json::json!({"thread": {"id": 7, "name": name, "virtual": virt}, "context": ctx,
            "stack": [{"method": format!("{CLASS}{method}"), "line": 1}]})
    };
    let vc = |n: &str| serde_json::json!({"gt": "vc", "n": n});
    assert_eq!(
        classify(&s("c-7", true, vc("7"), "gt_vc"), "gt_vc"),
        Verdict::Correct
    );
    assert!(matches!(
        classify(&s("c-7", true, vc("8"), "gt_vc"), "gt_vc"),
        Verdict::Wrong(_)
    ));
    assert!(matches!(
        classify(&s("c-7", true, serde_json::json!({}), "gt_vc"), "gt_vc"),
        Verdict::Wrong(_)
    ));
    // On a carrier, gt_vc can only be unknown.
    let mut on_carrier = s(
        "ForkJoinPool-1-worker-1",
        false,
        serde_json::json!({}),
        "gt_vc",
    );
    assert!(!carrier_sample(&on_carrier));
    on_carrier["stack"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"method": "java.lang.VirtualThread.run", "line": -1}));
    assert!(carrier_sample(&on_carrier));
    assert!(matches!(classify(&on_carrier, "gt_vc"), Verdict::Wrong(_)));
    let mut unknown = on_carrier.clone();
    unknown["context"] = Value::Null;
    unknown["unknown"] = "carrier_transition".into();
    assert_eq!(
        classify(&unknown, "gt_vc"),
        Verdict::Unknown("carrier_transition".into())
    );
    assert_eq!(
        classify(&s("c-7", true, serde_json::json!({}), "gt_none"), "gt_none"),
        Verdict::Correct
    );
    assert!(matches!(
        classify(&s("c-7", true, vc("7"), "gt_none"), "gt_none"),
        Verdict::Wrong(_)
    ));
    assert!(!carrier_sample(&s("c-7", true, vc("7"), "gt_vc")));
}

#[test]
fn carriers_jdk21() {
    carriers(21);
}

#[test]
fn carriers_jdk25() {
    carriers(25);
}

#[test]
fn only_a_threads_own_previous_context_in_gt_none_is_a_sampler_gap() {
    let sample = |thread: &str, ctx: Value| {
        serde_json::json!({"event": "jdk.ExecutionSample", "context": ctx,
            "thread": {"id": 395, "name": thread, "virtual": true}})
    };
    let own = serde_json::json!({"gt": "vc", "n": "368"});
    let other = serde_json::json!({"gt": "vc", "n": "7"});
    assert!(sampler_gap(&sample("c-368", own.clone()), "gt_none"));
    assert!(!sampler_gap(&sample("c-368", other), "gt_none"));
    assert!(!sampler_gap(&sample("c-368", own.clone()), "gt_vc"));
    assert!(!sampler_gap(
        &sample("ForkJoinPool-1-worker-1", own.clone()),
        "gt_none"
    ));
    let mut alloc = sample("c-368", own);
    alloc["event"] = "jdk.ObjectAllocationSample".into();
    assert!(!sampler_gap(&alloc, "gt_none"));
}
