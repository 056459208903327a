//! Ground-truth classification shared by the accuracy tests: a workload runs each piece of work
//! in a method named after the context installed around it, so a sample's stack says which
//! context the sample must carry. Each test maps method names to expected contexts; this module
//! finds the method and compares.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A sample's verdict against the context its stack implies.
#[derive(Debug)]
pub enum Verdict {
    Correct,
    /// Marked unknown, with the agent's reason.
    Unknown(String),
    /// Carries another context (or a malformed `context` field): what was found.
    Wrong(String),
}

/// The innermost frame (leaf first) whose method is `class` + a name starting with `prefix`;
/// returns that name without `class`.
pub fn innermost(sample: &Value, class: &str, prefix: &str) -> Option<String> {
    sample["stack"].as_array()?.iter().find_map(|f| {
        let simple = f["method"].as_str()?.strip_prefix(class)?;
        simple.starts_with(prefix).then(|| simple.to_string())
    })
}

/// A JSON context object as a sorted map; `None` when a value is not a string.
pub fn as_string_map(ctx: &Map<String, Value>) -> Option<BTreeMap<String, String>> {
    ctx.iter()
        .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
        .collect()
}

/// Compares a sample's `context` (and `unknown`) fields with `expected`.
pub fn classify(sample: &Value, expected: &BTreeMap<String, String>) -> Verdict {
    match sample.get("context") {
        Some(Value::Object(ctx)) => match as_string_map(ctx) {
            Some(got) if got == *expected => Verdict::Correct,
            _ => Verdict::Wrong(format!(
                "expected {expected:?}, got {}",
                Value::Object(ctx.clone())
            )),
        },
        Some(Value::Null) => match sample.get("unknown").and_then(Value::as_str) {
            Some(reason) if !reason.is_empty() => Verdict::Unknown(reason.to_string()),
            _ => Verdict::Wrong("context null without an `unknown` reason".into()),
        },
        Some(other) => Verdict::Wrong(format!("context is neither an object nor null: {other}")),
        None => Verdict::Wrong("no `context` field".into()),
    }
}

/// Fails, listing the first ten, when any sample of the run on JDK `jdk` carried a wrong context.
pub fn assert_none_wrong(jdk: u32, wrong: &[String]) {
    assert!(
        wrong.is_empty(),
        "JDK {jdk}: {} wrong samples; first ones:\n  {}",
        wrong.len(),
        wrong
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

/// Bounds the samples a test counted apart as JFR's sampler timing gap (README, Limits): the
/// sample's time is read before its stack is walked, so a thread that switches context in between
/// gets the frames of one context and the time of the other. A test counts a sample here only
/// when it carries exactly the context its *own* thread had on the other side of that switch;
/// any other wrong context stays wrong. At most one such sample, plus one per 5 000 samples of
/// the checked methods (`in_scope`), is accepted; each one is printed.
pub fn assert_sampler_gap_bounded(jdk: u32, gap: &[String], in_scope: usize) {
    for g in gap {
        println!("    sampler gap (README, Limits): {g}");
    }
    assert!(
        gap.len() <= 1 + in_scope / 5000,
        "JDK {jdk}: {} samples carry their own thread's context from the other side of a switch, \
         more than the JFR sampler's timing gap explains ({in_scope} samples checked)",
        gap.len()
    );
}
