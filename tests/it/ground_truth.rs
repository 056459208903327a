//! Ground truth for the join: `tests/java/gt/GroundTruth.java` does all its CPU work in methods
//! whose names say which context must be installed (`gt_alpha` → `{gt: alpha}`, ...). The agent
//! samples it every 1 ms into a JSON-lines file; every sample whose stack holds a `gt_*` method
//! is classified as correct (context equals the expectation), unknown (`context: null` with an
//! `unknown` reason) or wrong (anything else). Wrong must be 0, correct ≥ 99 %. One kind of
//! wrong is counted apart and bounded instead: JFR's sampler timing gap (README, Limits) at the
//! one nested switch, a sample in `gt_inner` with the enclosing `{gt: outer}` its thread had just
//! before (or in `gt_outer` with the inner context it had just after), as `carriers.rs` and
//! `no_thread.rs` do. A sample whose stack cannot have run (a workload frame above a `gt_*`
//! method, which calls none) is no ground truth: left out, at most 0.1 % of them.
//!
//! `cargo test --test it ground_truth:: -- --nocapture` prints the figures per JDK.

use crate::common::{self, JvmRun};

use common::verdict::{self, Verdict};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const SECONDS: &str = "8";
/// At least this many samples must land in `gt_*` methods for the run to mean anything.
const MIN_GT_SAMPLES: usize = 300;
/// correct / (correct + unknown + wrong) must reach this.
const MIN_CORRECT_RATIO: f64 = 0.99;

/// The class holding the work methods, as it appears in `stack[].method`.
const GT_CLASS: &str = "gt.GroundTruth.";

/// The context a `gt_*` method must run in, derived from its name alone:
///
/// | method      | expected context            |
/// |-------------|-----------------------------|
/// | `gt_none`   | `{}`                        |
/// | `gt_inner`  | `{gt: inner, layer: "2"}`   |
/// | `gt_X`      | `{gt: X}` (alpha, beta, outer, pooled) |
pub(crate) fn expected_context(method: &str) -> BTreeMap<String, String> {
    let name = method.strip_prefix("gt_").expect("a gt_* method");
    let mut m = BTreeMap::new();
    match name {
        "none" => {}
        "inner" => {
            m.insert("gt".into(), "inner".into());
            m.insert("layer".into(), "2".into());
        }
        other => {
            m.insert("gt".into(), other.into());
        }
    }
    m
}

/// The innermost `gt_*` method of the workload on the stack (leaf first), if any.
fn gt_method(sample: &Value) -> Option<String> {
    verdict::innermost(sample, GT_CLASS, "gt_")
}

fn classify(sample: &Value, method: &str) -> Verdict {
    verdict::classify(sample, &expected_context(method))
}

#[derive(Default)]
struct Tally {
    correct: usize,
    unknown: BTreeMap<String, usize>,
    wrong: usize,
    /// Wrong samples with the sampler gap's signature (see [`sampler_gap`]).
    gap: Vec<String>,
    /// Samples whose stack cannot have run (see [`impossible_stack`]), left out.
    impossible: Vec<String>,
    wrong_examples: Vec<String>,
    per_method: BTreeMap<String, (usize, usize, usize)>,
    virtual_correct: usize,
}

impl Tally {
    fn unknown_total(&self) -> usize {
        self.unknown.values().sum()
    }
    fn total(&self) -> usize {
        self.correct + self.unknown_total() + self.wrong
    }
}

fn ground_truth(jdk: u32, mode: &str) {
    ground_truth_with(jdk, mode, &[SECONDS, mode], "");
}

/// `args` for the workload; `label` tells runs of one JDK and mode apart (file names, output).
fn ground_truth_with(jdk: u32, mode: &str, args: &[&str], label: &str) -> serde_json::Value {
    let _serial = common::serial();
    // The gt_* methods stay out of line: a sample in one of several methods C2 inlined into one
    // body can be credited to a neighbour (README, Limits), which would read as a wrong context.
    let run = JvmRun::new(jdk)
        .jsonl(&format!("ground-truth-{jdk}-{mode}{label}.jsonl"))
        .agent("sink=jsonl:{jsonl},period=1ms")
        .jvm_args([
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=dontinline,gt.GroundTruth::gt_*",
        ])
        .main("gt.GroundTruth")
        .args(args)
        .timeout(Duration::from_secs(180))
        .run();
    run.assert_clean_exit();
    let work = run.workload_summary();
    // The agent's one-line exit summary, and its count against the file.
    let (summary, samples) = run.summary_and_samples();
    let t = tally(&samples);
    report(
        jdk,
        &format!("{mode}{label}"),
        &t,
        samples.len(),
        &summary.line,
        &work,
    );
    check(jdk, mode, &t, &samples, run.jsonl_path());
    work
}

/// The classes whose methods the `gt_*` methods call (`System.nanoTime`, `Long.bitCount`,
/// `Long.reverse`, `Long.rotateLeft`, `Math.sqrt`, `Double.doubleToRawLongBits`), which call
/// only into the same classes (`Long.reverse` calls `Long.reverseBytes` until it is compiled as
/// an intrinsic): the only frames that can sit above one of them.
const GT_CALLEE_CLASSES: &[&str] = &[
    "java.lang.System.",
    "java.lang.Long.",
    "java.lang.Math.",
    "java.lang.StrictMath.",
    "java.lang.Double.",
];

/// Whether a frame outside [`GT_CALLEE_CLASSES`] sits above the innermost `gt_*` method (leaf
/// first). The `gt_*` methods are kept out of line and call nothing else, so such a stack cannot
/// have run: the JVM's stack walk mixed frames at the sample's instruction. Seen
/// on JDK 17: `phaseNanos`, which `beta` calls before it installs its context, on top of
/// `gt_beta` (at a million switches a second), and `RandomSupport.boundedNextLong`, which
/// `phaseNanos` calls, on top of `gt_beta` (both cores loaded by other JVMs), each with the `{}`
/// the thread had in `phaseNanos`. Its frames say nothing about where the thread was, so it is
/// no ground truth.
fn impossible_stack(sample: &Value) -> bool {
    let Some(stack) = sample["stack"].as_array() else {
        return false;
    };
    let methods: Vec<&str> = stack.iter().filter_map(|f| f["method"].as_str()).collect();
    let Some(innermost) = methods.iter().position(|m| {
        m.strip_prefix(GT_CLASS)
            .is_some_and(|name| name.starts_with("gt_"))
    }) else {
        return false;
    };
    methods[..innermost]
        .iter()
        .any(|m| !GT_CALLEE_CLASSES.iter().any(|c| m.starts_with(c)))
}

/// Every sample in a `gt_*` method, classified.
fn tally(samples: &[Value]) -> Tally {
    let mut t = Tally::default();
    for s in samples {
        let Some(method) = gt_method(s) else { continue };
        if impossible_stack(s) {
            t.impossible.push(format!("{method} {s}"));
            continue;
        }
        let entry = t.per_method.entry(method.clone()).or_default();
        match classify(s, &method) {
            Verdict::Correct => {
                t.correct += 1;
                entry.0 += 1;
                if s["thread"]["virtual"].as_bool() == Some(true) {
                    t.virtual_correct += 1;
                }
            }
            Verdict::Unknown(reason) => {
                *t.unknown.entry(reason).or_default() += 1;
                entry.1 += 1;
            }
            Verdict::Wrong(_) if sampler_gap(s, &method) => {
                t.gap.push(format!("{method} {s}"));
            }
            Verdict::Wrong(why) => {
                t.wrong += 1;
                entry.2 += 1;
                if t.wrong_examples.len() < 20 {
                    t.wrong_examples.push(format!(
                        "{method} t={} thread={}: {why}",
                        s["time_ns"], s["thread"]
                    ));
                }
            }
        }
    }
    t
}

/// Prints the figures of one run (`cargo test -- --nocapture`).
fn report(jdk: u32, run: &str, t: &Tally, lines: usize, summary: &str, work: &Value) {
    let total = t.total();
    let pct = |n: usize| {
        if total == 0 {
            0.0
        } else {
            100.0 * n as f64 / total as f64
        }
    };
    println!(
        "ground truth JDK {jdk} {run}: {lines} lines, {total} in gt_* methods: correct {} ({:.2} %), \
         unknown {} ({:.2} %) {:?}, wrong {}, stacks that cannot have run {}",
        t.correct,
        pct(t.correct),
        t.unknown_total(),
        pct(t.unknown_total()),
        t.unknown,
        t.wrong,
        t.impossible.len()
    );
    for (m, (c, u, w)) in &t.per_method {
        println!("    {m:<10} correct {c:>6}  unknown {u:>5}  wrong {w:>5}");
    }
    println!("    {summary}");
    println!("    workload: {work}");
}

/// The sampler gap's signature at the workload's nested switch (its thread's own context on
/// the other side of it): `gt_inner` with `{gt: outer}`, or `gt_outer` with the inner context.
fn sampler_gap(sample: &Value, method: &str) -> bool {
    let other_side = match method {
        "gt_inner" => serde_json::json!({"gt": "outer"}),
        "gt_outer" => serde_json::json!({"gt": "inner", "layer": "2"}),
        _ => return false,
    };
    sample["event"] == "jdk.ExecutionSample" && sample["context"] == other_side
}

/// No wrong context, enough samples, the share correct, every method seen, the thread kind.
fn check(jdk: u32, mode: &str, t: &Tally, samples: &[Value], jsonl: &std::path::Path) {
    let total = t.total();
    verdict::assert_sampler_gap_bounded(jdk, &t.gap, total + t.gap.len());
    for i in &t.impossible {
        println!("    a stack that cannot have run, left out: {i}");
    }
    assert!(
        t.impossible.len() * 1000 <= total.max(1000),
        "JDK {jdk} {mode}: {} samples with stacks that cannot have run, over 0.1 % of {total}",
        t.impossible.len()
    );
    assert_eq!(
        t.wrong,
        0,
        "JDK {jdk} {mode}: {} wrong contexts; first ones:\n  {}",
        t.wrong,
        t.wrong_examples.join("\n  ")
    );
    assert!(
        total >= MIN_GT_SAMPLES,
        "JDK {jdk} {mode}: only {total} samples in gt_* methods (need {MIN_GT_SAMPLES}); \
         {} lines in {}",
        samples.len(),
        jsonl.display()
    );
    let ratio = t.correct as f64 / total as f64;
    assert!(
        ratio >= MIN_CORRECT_RATIO,
        "JDK {jdk} {mode}: correct {:.2} % < {:.0} % (unknown {:?})",
        100.0 * ratio,
        100.0 * MIN_CORRECT_RATIO,
        t.unknown
    );
    // Every gt_* method must have been seen, so that each kind of transition was exercised.
    for m in [
        "gt_alpha",
        "gt_beta",
        "gt_none",
        "gt_outer",
        "gt_inner",
        "gt_pooled",
    ] {
        assert!(
            t.per_method.get(m).is_some_and(|e| e.0 > 0),
            "JDK {jdk} {mode}: no correct sample in {m}"
        );
    }
    // The thread kind must be reported as it was.
    if mode == "virtual" {
        assert!(
            t.virtual_correct * 10 >= t.correct * 9,
            "JDK {jdk} virtual: only {} of {} correct samples flagged virtual",
            t.virtual_correct,
            t.correct
        );
    } else {
        assert_eq!(
            t.virtual_correct, 0,
            "JDK {jdk} platform: samples flagged virtual"
        );
    }
}

#[test]
fn a_workload_frame_above_a_gt_method_is_an_impossible_stack() {
    let stack = |methods: &[&str]| {
        let frames: Vec<Value> = methods
            .iter()
            .map(|m| serde_json::json!({"method": m, "line": 1}))
            .collect();
        serde_json::json!({"event": "jdk.ExecutionSample", "stack": frames})
    };
    // The one seen: phaseNanos (called by beta before its context) on top of gt_beta.
    assert!(impossible_stack(&stack(&[
        "gt.GroundTruth.phaseNanos",
        "gt.GroundTruth.gt_beta",
        "gt.GroundTruth.beta",
    ])));
    // A JDK method gt_* does not call (phaseNanos's random bound) on top of gt_beta.
    assert!(impossible_stack(&stack(&[
        "jdk.internal.util.random.RandomSupport.boundedNextLong",
        "gt.GroundTruth.gt_beta",
        "gt.GroundTruth.beta",
    ])));
    // What gt_* methods do call, with what those call, or nothing above them: a real stack.
    assert!(!impossible_stack(&stack(&[
        "java.lang.System.nanoTime",
        "gt.GroundTruth.gt_beta",
        "gt.GroundTruth.beta",
    ])));
    assert!(!impossible_stack(&stack(&[
        "java.lang.Long.reverseBytes",
        "java.lang.Long.reverse",
        "gt.GroundTruth.gt_outer",
        "gt.GroundTruth.nested",
    ])));
    assert!(!impossible_stack(&stack(&[
        "gt.GroundTruth.gt_inner",
        "gt.GroundTruth.nested",
    ])));
}

#[test]
fn expectation_table() {
    let m = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    assert_eq!(expected_context("gt_alpha"), m(&[("gt", "alpha")]));
    assert_eq!(expected_context("gt_pooled"), m(&[("gt", "pooled")]));
    assert_eq!(expected_context("gt_none"), m(&[]));
    assert_eq!(
        expected_context("gt_inner"),
        m(&[("gt", "inner"), ("layer", "2")])
    );

    let sample = serde_json::json!({
        "event": "jdk.ExecutionSample", "time_ns": 1,
        "thread": {"id": 1, "name": "w", "virtual": false},
        "context": {"gt": "inner", "layer": "2"},
        "stack": [{"method": "java.lang.System.nanoTime", "line": -1},
                  {"method": "gt.GroundTruth.gt_inner", "line": 3},
                  {"method": "gt.GroundTruth.nested", "line": 9}]
    });
    let method = gt_method(&sample).unwrap();
    assert_eq!(method, "gt_inner");
    assert!(matches!(classify(&sample, &method), Verdict::Correct));
    assert!(matches!(classify(&sample, "gt_outer"), Verdict::Wrong(_)));
    let unknown = serde_json::json!({"context": null, "unknown": "no_thread"});
    assert!(matches!(classify(&unknown, "gt_alpha"), Verdict::Unknown(r) if r == "no_thread"));
    assert!(matches!(
        classify(&serde_json::json!({"context": null}), "gt_alpha"),
        Verdict::Wrong(_)
    ));
    assert!(matches!(
        classify(&serde_json::json!({"context": {}}), "gt_none"),
        Verdict::Correct
    ));
    // The received count the run compares with the file comes from the summary's parser.
    let line = "jfrctx: samples received=1234 with_context=1200 without_context=30 unknown=4 \
                (no_thread=4) dropped=0; sinks jsonl:/x records=1234 errors=0; contexts=7";
    let summary = common::AgentSummary::parse(line).expect("a summary line");
    assert_eq!((summary.received, summary.figure("contexts=")), (1234, 7));
    assert!(summary.balanced());
    assert!(common::AgentSummary::parse("jfrctx: samples received=7, x").is_none());
}

#[test]
fn ground_truth_jdk17() {
    ground_truth(17, "platform");
}

/// Bursting threads: 2 workers at ≈ 100 k transitions/s each (phases divided by 200) with the
/// default 1024-entry ring, which fills in ≈ 10 ms at that rate: the worker's adaptive drain must
/// keep `log_overflow` out. Run by hand (`-- --ignored --nocapture`): its rate depends on the
/// cores the workload gets. Figures in bench/README.md ("Accuracy under load").
#[test]
#[ignore]
fn ground_truth_jdk17_burst() {
    ground_truth_with(17, "platform", &[SECONDS, "platform", "2", "200"], "-burst");
}

/// One thread switching as fast as it can (phases divided by 20 000: about 1 M transitions/s
/// on this 2-core machine): its ring grows (ARCHITECTURE.md, "Ring growth") and the drain speeds
/// up, so that at most 1 % of its samples are unknown and none is wrong.
#[test]
fn ground_truth_jdk17_a_million_switches_a_second() {
    let work = ground_truth_with(17, "platform", &["6", "platform", "1", "20000"], "-fast");
    let rate = work["worker_transitions_per_s"].as_f64().unwrap_or(0.0);
    assert!(
        rate >= 300_000.0,
        "the workload reached only {rate} transitions/s: too slow to test fast switching"
    );
}

#[test]
fn ground_truth_jdk21() {
    ground_truth(21, "platform");
}

#[test]
fn ground_truth_jdk25() {
    ground_truth(25, "platform");
}

#[test]
fn ground_truth_jdk21_virtual() {
    ground_truth(21, "virtual");
}

#[test]
fn ground_truth_jdk25_virtual() {
    ground_truth(25, "virtual");
}
