//! RecordingContextFilter and in-process listeners against ground truth, on JDK 17 and 25.
//!
//! Workload: `tests/java/ft/FilterWorkload.java`. Four threads burn CPU in `ft_acme`
//! `{ft: acme, tenant: acme}`, `ft_other` `{ft: other, tenant: other}`, `ft_plain` `{ft: plain}`
//! and `ft_none` `{}`; the method on a sample's stack says what its context is.
//!
//! - `phases`: the filter is changed at run time through the facade (hasContext, hasNoContext,
//!   hasKey, hasEntry, a per-type override, a reset, none); every sample taken during a phase's
//!   work window obeys that phase's filter and the expected methods show up. Each phase is
//!   followed by 2 s of idling so that its samples are decided before the next change (samples
//!   taken after a change always obey the new filter, by construction).
//! - `option`: the same through the `filter=` agent option; a bad `filter=` stops the JVM.
//! - `listener`: a counting listener receives exactly the samples of the JSON sink per `ft`
//!   value (the workload idles 3 s before reading its counts, so no in-flight tail remains for
//!   the workers' contexts); a throwing listener keeps receiving and is reported once; a listener
//!   that installs `{ft: listener}` and burns CPU never sees its own samples (the JSON sink does).

use crate::common::{self, JvmRun, Output};

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const METHODS: [&str; 4] = ["ft_acme", "ft_other", "ft_plain", "ft_none"];

/// The `ft_*` method on the stack, if any.
fn ft_method(sample: &Value) -> Option<&'static str> {
    let stack = sample["stack"].as_array()?;
    for f in stack {
        let m = f["method"].as_str().unwrap_or("");
        for want in METHODS.iter().chain(["ft_listener"].iter()) {
            if m.ends_with(&format!(".{want}")) {
                return Some(want);
            }
        }
    }
    None
}

fn context(sample: &Value) -> Option<BTreeMap<String, String>> {
    let c = sample["context"].as_object()?;
    Some(
        c.iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect(),
    )
}

fn summary_line(out: &Output) -> String {
    let lines: Vec<&str> = out
        .agent_lines()
        .into_iter()
        .filter(|l| l.starts_with("jfrctx: samples received="))
        .collect();
    assert_eq!(lines.len(), 1, "one summary line expected:\n{}", out.dump());
    lines[0].to_string()
}

fn count_after(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key))
        .map(|v| v.trim_end_matches([';', ',']).parse().unwrap_or(0))
        .unwrap_or(0)
}

type Ctx = Option<BTreeMap<String, String>>;

fn has_context(c: &Ctx) -> bool {
    c.as_ref().is_some_and(|m| !m.is_empty())
}
fn has_no_context(c: &Ctx) -> bool {
    c.as_ref().is_some_and(|m| m.is_empty())
}
fn has_tenant(c: &Ctx) -> bool {
    c.as_ref().is_some_and(|m| m.contains_key("tenant"))
}
fn tenant_acme(c: &Ctx) -> bool {
    c.as_ref()
        .is_some_and(|m| m.get("tenant").map(String::as_str) == Some("acme"))
}
fn tenant_and_other(c: &Ctx) -> bool {
    has_tenant(c) && c.as_ref().unwrap().get("ft").map(String::as_str) == Some("other")
}

/// The CPU sample event the agent records by default (`events=cpu`): `jdk.ExecutionSample` on
/// every JDK (`cpu_sampler=execution`).
fn sampler(_jdk: u32) -> &'static str {
    "jdk.ExecutionSample"
}

/// What a sample must satisfy in a phase, given whether it is of the sampler event type.
type Pred = fn(bool, &Ctx) -> bool;

/// Per phase: the spec the facade must produce (`{T}` is the sampler event), what every sample
/// must satisfy, and which `ft_*` methods must (true) or must not (false) appear among the
/// sampler's samples.
fn phases() -> Vec<(&'static str, Pred, [bool; 4])> {
    vec![
        (
            "*:has_context",
            |_, c| has_context(c),
            [true, true, true, false],
        ),
        (
            "*:has_no_context",
            |_, c| has_no_context(c),
            [false, false, false, true],
        ),
        (
            "*:has_key(tenant)",
            |_, c| has_tenant(c),
            [true, true, false, false],
        ),
        (
            "*:has_entry(tenant=acme)",
            |_, c| tenant_acme(c),
            [true, false, false, false],
        ),
        (
            "*:has_no_context;{T}:has_key(tenant)+has_entry(ft=other)",
            |t, c| {
                if t {
                    tenant_and_other(c)
                } else {
                    has_no_context(c)
                }
            },
            [false, true, false, false],
        ),
        (
            "*:has_context;{T}:any",
            |t, c| t || has_context(c),
            [true, true, true, true],
        ),
        ("", |_, _| true, [true, true, true, true]),
    ]
}

fn filter_phases(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("filter-phases-{jdk}.jsonl"));
    let opts = format!("sink=jsonl:{},period=10ms", jsonl.display());
    let out = JvmRun::new(jdk)
        .agent(&opts)
        .main("ft.FilterWorkload")
        .args(["phases", sampler(jdk)])
        .timeout(Duration::from_secs(120))
        .run();
    assert!(out.status.success(), "{}", out.dump());
    let windows: Vec<Value> = out
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    let expected = phases();
    assert_eq!(windows.len(), expected.len(), "{}", out.dump());
    let samples = common::read_json_lines(&jsonl);
    println!("JDK {jdk}: {} samples", samples.len());
    for (w, (spec, pred, want)) in windows.iter().zip(expected) {
        let spec = spec.replace("{T}", sampler(jdk));
        assert_eq!(w["spec"].as_str(), Some(spec.as_str()));
        let (start, end) = (
            w["start"].as_i64().unwrap(),
            w["work_end"].as_i64().unwrap(),
        );
        let mut seen = [0usize; 4];
        let mut in_window = 0;
        for s in &samples {
            let t = s["time_ns"].as_i64().unwrap_or(0);
            if t < start || t > end {
                continue;
            }
            in_window += 1;
            let ctx = context(s);
            let is_sampler = s["event"].as_str() == Some(sampler(jdk));
            assert!(
                pred(is_sampler, &ctx),
                "JDK {jdk} phase '{spec}': sample violates the filter: {s}"
            );
            if !is_sampler {
                continue;
            }
            if let Some(i) = ft_method(s).and_then(|m| METHODS.iter().position(|x| *x == m)) {
                seen[i] += 1;
            }
        }
        println!("  {spec:70} {in_window:5} samples, per method {seen:?}");
        for i in 0..4 {
            if want[i] {
                assert!(
                    seen[i] >= 3,
                    "JDK {jdk} phase '{spec}': too few {} samples: {seen:?}",
                    METHODS[i]
                );
            } else {
                assert_eq!(
                    seen[i], 0,
                    "JDK {jdk} phase '{spec}': {} passed: {seen:?}",
                    METHODS[i]
                );
            }
        }
    }
    let line = summary_line(&out);
    let received = count_after(&line, "received=");
    let filtered = count_after(&line, "filtered=");
    assert!(filtered > 0, "{line}");
    assert_eq!(
        samples.len() as u64,
        received - filtered,
        "JSON lines = received - filtered: {line}"
    );
}

fn filter_option(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("filter-option-{jdk}.jsonl"));
    let opts = format!(
        "sink=jsonl:{},period=10ms,filter={}:has_key(tenant)+has_entry(tenant=acme)",
        jsonl.display(),
        sampler(jdk)
    );
    let out = JvmRun::new(jdk)
        .agent(&opts)
        .main("ft.FilterWorkload")
        .args(["option"])
        .timeout(Duration::from_secs(60))
        .run();
    assert!(out.status.success(), "{}", out.dump());
    let samples = common::read_json_lines(&jsonl);
    let mut acme = 0;
    for s in &samples {
        if s["event"].as_str() != Some(sampler(jdk)) {
            continue; // other event types have no rule: they pass
        }
        assert!(tenant_acme(&context(s)), "JDK {jdk}: {s}");
        if ft_method(s) == Some("ft_acme") {
            acme += 1;
        }
    }
    assert!(acme >= 10, "JDK {jdk}: {acme} ft_acme samples");
    println!("JDK {jdk}: filter option kept {} samples", samples.len());

    let bad = JvmRun::new(jdk)
        .agent("filter=*:has_kye(x)")
        .main("ft.FilterWorkload")
        .args(["option"])
        .timeout(Duration::from_secs(60))
        .run();
    assert!(!bad.status.success(), "{}", bad.dump());
    assert_eq!(
        bad.agent_lines(),
        vec![
            "jfrctx: bad filter '*:has_kye(x)': rule '*:has_kye(x)': unknown predicate \
             'has_kye(x)' (known: any, has_context, has_no_context, has_key(K), has_entry(K=V))"
        ],
        "{}",
        bad.dump()
    );
}

fn listener(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("listener-{jdk}.jsonl"));
    let opts = format!("sink=jsonl:{},period=10ms", jsonl.display());
    let out = JvmRun::new(jdk)
        .agent(&opts)
        .main("ft.FilterWorkload")
        .args(["listener"])
        .timeout(Duration::from_secs(90))
        .run();
    assert!(out.status.success(), "{}", out.dump());
    let got = common::summary_json(&out).unwrap_or_else(|| panic!("{}", out.dump()));
    let samples = common::read_json_lines(&jsonl);
    let mut jsonl_per_ft: BTreeMap<String, u64> = BTreeMap::new();
    for s in &samples {
        if let Some(ft) = context(s).and_then(|c| c.get("ft").cloned()) {
            *jsonl_per_ft.entry(ft).or_default() += 1;
        }
    }
    let listener_per_ft: BTreeMap<String, u64> = got["per_ft"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    println!(
        "JDK {jdk}: jsonl {jsonl_per_ft:?}\n        listener {listener_per_ft:?}\n        {got}"
    );
    for ft in ["acme", "other", "plain"] {
        let j = jsonl_per_ft.get(ft).copied().unwrap_or(0);
        assert!(j >= 10, "JDK {jdk}: only {j} {ft} samples");
        assert_eq!(
            listener_per_ft.get(ft).copied().unwrap_or(0),
            j,
            "JDK {jdk}: listener and JSON sink disagree on ft={ft}"
        );
    }
    // The burner's own samples reach the JSON sink but never the listeners.
    assert!(
        jsonl_per_ft.get("listener").copied().unwrap_or(0) > 0,
        "no listener-thread samples"
    );
    assert_eq!(listener_per_ft.get("listener"), None);
    assert_eq!(got["self_seen"], 0);
    assert_eq!(got["wrong_thread"], 0);
    assert_eq!(
        got["thrown"], got["counted"],
        "the throwing listener keeps receiving"
    );
    assert_eq!(got["burned"], got["counted"]);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("listener failure on purpose"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.dump());
    assert!(
        summary_line(&out).contains("listener records="),
        "{}",
        out.dump()
    );
}

/// A listener that blocks forever: the application ends on time with exit code 0, the JSON sink
/// is complete, and the samples the listener never took are logged once and counted.
fn blocking_listener(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("listener-blocking-{jdk}.jsonl"));
    let opts = format!("sink=jsonl:{},period=10ms", jsonl.display());
    common::agent_lib(); // built before the clock starts
    let started = std::time::Instant::now();
    let out = JvmRun::new(jdk)
        .agent(&opts)
        .main("ft.FilterWorkload")
        .args(["blocking"])
        .timeout(Duration::from_secs(90))
        .run();
    let took = started.elapsed();
    assert!(out.status.success(), "{}", out.dump());
    assert!(took < Duration::from_secs(30), "JDK {jdk}: took {took:?}");
    let seen: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("")).unwrap();
    assert_eq!(seen["seen"], 1, "the listener blocked on its first sample");
    let line = summary_line(&out);
    let received = count_after(&line, "received=");
    let samples = common::read_json_lines(&jsonl);
    assert_eq!(samples.len() as u64, received, "{line}");
    let listener = line
        .split("listener ")
        .nth(1)
        .unwrap_or_else(|| panic!("no listener stats: {line}"));
    let (records, errors) = (
        count_after(listener, "records="),
        count_after(listener, "errors="),
    );
    println!(
        "JDK {jdk}: {took:?}, {received} received, listener records={records} errors={errors}"
    );
    assert!(errors > 0 && records + errors <= received, "{line}");
    let warnings: Vec<&str> = out
        .agent_lines()
        .into_iter()
        .filter(|l| l.contains("in-process listeners"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.dump());
    assert!(
        warnings[0].contains(&format!("{errors} samples")),
        "{}",
        warnings[0]
    );
}

#[test]
fn blocking_listener_jdk17() {
    blocking_listener(17);
}

#[test]
fn blocking_listener_jdk25() {
    blocking_listener(25);
}

#[test]
fn filter_phases_jdk17() {
    filter_phases(17);
}

#[test]
fn filter_phases_jdk25() {
    filter_phases(25);
}

#[test]
fn filter_option_jdk17() {
    filter_option(17);
}

#[test]
fn filter_option_jdk25() {
    filter_option(25);
}

#[test]
fn listener_jdk17() {
    listener(17);
}

#[test]
fn listener_jdk25() {
    listener(25);
}
