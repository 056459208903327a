//! Several copies of the facade side by side (`tests/java/mc/MultiCopy.java`), as in an
//! application server with `jfrctx.jar` in two web applications' `WEB-INF/lib`: each copy in
//! its own class loader, copies nested on the same threads in random orders, each copy's own
//! nesting inside, and redeploy churn (loaders dropped and loaded again, 20 times).
//!
//! Before the ring registry (`agent/core/context/registry.rs`) a second copy registering the same
//! thread made the agent drop the first ring while the first copy still wrote into it: the JVM
//! died with SIGSEGV or `malloc(): corrupted ...` in every run.
//!
//! Ground truth: `mc_cK` runs in `{mc: cK}`, `mc_cKdeep` in `{mc: cK, deep: yes}`, `mc_none` in
//! `{}`; those methods are kept out of line (a sample in a method that C2 inlined into another
//! may be credited to the wrong one of them, which would read as a wrong context).

use crate::common::{self, JvmRun};

use common::verdict::{self, Verdict};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const DONTINLINE: &str = "-XX:CompileCommand=dontinline,mc.MultiCopy*::mc_*";

/// The context `mc_*` must run in.
fn expected(method: &str) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let name = method.strip_prefix("mc_").expect("an mc_* method");
    if name != "none" {
        let (copy, deep) = match name.strip_suffix("deep") {
            Some(c) => (c, true),
            None => (name, false),
        };
        m.insert("mc".to_string(), copy.to_string());
        if deep {
            m.insert("deep".to_string(), "yes".to_string());
        }
    }
    m
}

/// The innermost `mc_*` frame: `mc.MultiCopy$Plugin.mc_cK[deep]` or `mc.MultiCopy.mc_none`.
fn mc_method(sample: &Value) -> Option<String> {
    verdict::innermost(sample, "mc.MultiCopy$Plugin.", "mc_")
        .or_else(|| verdict::innermost(sample, "mc.MultiCopy.", "mc_"))
}

/// Runs the workload and checks every `mc_*` sample; returns the workload's summary.
fn run(jdk: u32, label: &str, args: &[&str]) -> Value {
    let _serial = common::serial();
    let out = JvmRun::new(jdk)
        .jsonl(&format!("multi-copy-{jdk}-{label}.jsonl"))
        .agent("sink=jsonl:{jsonl},period=1ms")
        .jvm_args(["-XX:CompileCommand=quiet", DONTINLINE])
        .main("mc.MultiCopy")
        .args(args)
        .timeout(Duration::from_secs(120))
        .run();
    assert!(
        out.status.success(),
        "MultiCopy {args:?} failed on JDK {jdk}:\n{}",
        out.dump()
    );
    let (summary, samples) = out.summary_and_samples();
    let work = out.workload_summary();

    let (mut correct, mut unknown, mut wrong) = (0usize, 0usize, Vec::new());
    let mut per_method: BTreeMap<String, usize> = BTreeMap::new();
    for s in &samples {
        let Some(method) = mc_method(s) else { continue };
        *per_method.entry(method.clone()).or_default() += 1;
        match verdict::classify(s, &expected(&method)) {
            Verdict::Correct => correct += 1,
            Verdict::Unknown(_) => unknown += 1,
            Verdict::Wrong(w) => wrong.push(format!("{method}: {w}")),
        }
    }
    let total = correct + unknown + wrong.len();
    println!(
        "JDK {jdk} {label}: {total} samples in mc_* methods: {correct} correct, {unknown} \
         unknown, {} wrong; per method {per_method:?}; workload {work}; {}",
        wrong.len(),
        summary.line
    );
    assert!(
        wrong.is_empty(),
        "{} samples carry a wrong context, e.g. {:?}\n{}",
        wrong.len(),
        &wrong[..wrong.len().min(5)],
        summary.line
    );
    assert!(
        total >= 200,
        "too few samples in mc_* methods ({total}) to mean anything"
    );
    assert!(
        correct as f64 >= 0.99 * total as f64,
        "only {correct} of {total} correct"
    );
    let copies: usize = args[1].parse().unwrap();
    for k in 0..copies {
        let m = format!("mc_c{k}");
        assert!(
            per_method.get(&m).copied().unwrap_or(0) > 0,
            "no sample in copy {k}'s {m}: {per_method:?}"
        );
    }
    work
}

#[test]
fn two_copies_nested_on_platform_threads_jdk17() {
    run(17, "two-platform", &["5", "2", "platform"]);
}

#[test]
fn three_copies_nested_on_virtual_threads_jdk21() {
    run(21, "three-virtual", &["5", "3", "virtual"]);
}

#[test]
fn three_copies_nested_on_platform_threads_jdk25() {
    run(25, "three-platform", &["5", "3", "platform"]);
}

/// 20 redeploys: each loads two copies, uses them on its own threads (a server renews its
/// threads when a web application stops) and drops them. Every dropped loader must be collected
/// (the agent holds nothing that pins one), and contexts stay correct throughout.
#[test]
fn twenty_redeploys_leave_no_loader_behind_jdk21() {
    let work = run(21, "redeploy", &["8", "2", "virtual", "20"]);
    assert_eq!(work["collected_loaders"], 40, "{work}");
}
