//! jfrctx next to another JFR recording: one started with `-XX:StartFlightRecording`, one started
//! and stopped with `jcmd JFR.start` / `JFR.stop` while the agent runs, with the JDK's `profile`
//! and `default` settings. Both must keep working: the agent's JSON lines carry correct contexts
//! (ground-truth workload, 0 wrong) and the other recording is a valid file that `jfr summary`
//! reads (exit 0) and that lists `jdk.ExecutionSample`.
//!
//! JFR merges the settings of all running recordings and they share chunk data, so the agent's
//! stream sees every event type the other recording enables, and the JVM samples
//! `jdk.ExecutionSample` at the shortest period of the two. So the tests also check that only the
//! selected event type reaches the sinks (the rest counted as `not_selected=` in the summary), and
//! that each sample is worth the period the JVM really sampled at: the JSON lines' `weight`s are
//! the expected periods (the other recording's while it runs, the agent's `period=` otherwise),
//! each period is confirmed by the spacing of consecutive samples of one thread, and pprof (read
//! by `go tool pprof -raw`) sums exactly those weights with the shortest one as its `Period`.
//! `cargo test --test it coexistence:: -- --nocapture` prints what it found.

use crate::common::{self, JvmRun, Output};

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const GT_CLASS: &str = "gt.GroundTruth.";

/// (correct, unknown, wrong examples) over samples in `gt_*` methods.
fn classify(samples: &[Value]) -> (usize, usize, Vec<String>) {
    let (mut correct, mut unknown, mut wrong) = (0, 0, Vec::new());
    for s in samples {
        let Some(method) = s["stack"].as_array().and_then(|st| {
            st.iter().find_map(|f| {
                let m = f["method"].as_str()?.strip_prefix(GT_CLASS)?;
                m.starts_with("gt_").then(|| m.to_string())
            })
        }) else {
            continue;
        };
        let mut want = BTreeMap::new();
        match method.as_str() {
            "gt_none" => {}
            "gt_inner" => {
                want.insert("gt".to_string(), "inner".to_string());
                want.insert("layer".to_string(), "2".to_string());
            }
            m => {
                want.insert("gt".to_string(), m["gt_".len()..].to_string());
            }
        }
        match &s["context"] {
            Value::Object(ctx) => {
                let got: BTreeMap<String, String> = ctx
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("?").to_string()))
                    .collect();
                if got == want {
                    correct += 1;
                } else {
                    wrong.push(format!("{method}: {got:?}"));
                }
            }
            Value::Null if s["unknown"].is_string() => unknown += 1,
            other => wrong.push(format!("{method}: context {other}")),
        }
    }
    (correct, unknown, wrong)
}

/// `jfr summary FILE` of JDK `jdk`: must exit 0; returns event name → count.
fn jfr_summary(jdk: u32, file: &Path) -> BTreeMap<String, u64> {
    let out = Command::new(common::jdk_home(jdk).join("bin/jfr"))
        .arg("summary")
        .arg(file)
        .output()
        .expect("run jfr");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "jfr summary {} failed: {}\n{}{}",
        file.display(),
        out.status,
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(name), Some(n)) = (it.next(), it.next()) {
            if let Ok(n) = n.parse::<u64>() {
                counts.insert(name.to_string(), n);
            }
        }
    }
    counts
}

/// One run beside another recording: what to expect of it.
struct Case {
    jdk: u32,
    what: String,
    /// The agent's `period=` in ms.
    agent_ms: i64,
    /// The other recording's `jdk.ExecutionSample` period in ms (its `.jfc`).
    other_ms: i64,
    /// The other recording ran for only part of the agent's run (`jcmd`).
    part_time: bool,
}

const MS: i64 = 1_000_000;

/// Gaps (ns) between consecutive samples of one thread, grouped by the later sample's weight;
/// only pairs of equal weight count (a gap across a period change says nothing).
fn gaps_by_weight(samples: &[Value]) -> BTreeMap<i64, Vec<i64>> {
    let mut by_thread: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
    for s in samples {
        let (Some(t), Some(tid)) = (s["time_ns"].as_i64(), s["thread"]["id"].as_i64()) else {
            continue;
        };
        let w = s["weight"].as_i64().unwrap_or(0);
        by_thread.entry(tid).or_default().push((t, w));
    }
    let mut gaps: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for list in by_thread.values_mut() {
        list.sort_unstable();
        for pair in list.windows(2) {
            if pair[0].1 == pair[1].1 {
                gaps.entry(pair[1].1)
                    .or_default()
                    .push(pair[1].0 - pair[0].0);
            }
        }
    }
    for g in gaps.values_mut() {
        g.sort_unstable();
    }
    gaps
}

/// (samples, values) of the `cpu/nanoseconds` type and the `Period:` of a pprof file, read by
/// `go tool pprof -raw`.
fn pprof_cpu(file: &Path) -> (i64, i64, i64) {
    let raw = common::pprof_tool::pprof(file, &["-raw"]);
    let mut period = None;
    let mut columns: Option<Vec<String>> = None;
    let (mut samples, mut cpu) = (0, 0);
    for line in raw.lines() {
        if let Some(p) = line.strip_prefix("Period: ") {
            period = p.trim().parse().ok();
        } else if line.starts_with("samples/count") {
            columns = Some(line.split_whitespace().map(str::to_string).collect());
        } else if line.starts_with("Locations") || line.starts_with("Mappings") {
            columns = None;
        } else if let (Some(cols), Some((values, _))) = (&columns, line.split_once(':')) {
            let v: Vec<i64> = values
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if v.len() == cols.len() {
                samples += v[0];
                let i = cols
                    .iter()
                    .position(|c| c.starts_with("cpu/"))
                    .expect("cpu");
                cpu += v[i];
            }
        }
    }
    (samples, cpu, period.expect("a Period line"))
}

fn check(case: &Case, jsonl: &Path, pprof: &Path, other: &Path, out: &Output) {
    let (jdk, what) = (case.jdk, case.what.as_str());
    let samples = common::read_json_lines(jsonl);
    let (correct, unknown, wrong) = classify(&samples);
    let summary = jfr_summary(jdk, other);
    let exec = summary.get("jdk.ExecutionSample").copied().unwrap_or(0);
    let calib = summary.get("jfrctx.Calibration").copied().unwrap_or(0);
    println!(
        "coexistence JDK {jdk} {what}: jfrctx {} lines, gt_* correct {correct} unknown {unknown} \
         wrong {}; other recording {}: jdk.ExecutionSample {exec}, jfrctx.Calibration {calib}, \
         {} event types",
        samples.len(),
        wrong.len(),
        other.display(),
        summary.len()
    );
    assert!(
        wrong.is_empty(),
        "JDK {jdk} {what}: wrong contexts: {:?}",
        &wrong[..wrong.len().min(10)]
    );
    assert!(
        correct >= 100,
        "JDK {jdk} {what}: only {correct} correct samples\n{}",
        out.dump()
    );
    assert!(
        correct * 100 >= (correct + unknown) * 95,
        "JDK {jdk} {what}: {unknown} unknown vs {correct} correct"
    );
    assert!(
        exec > 0,
        "JDK {jdk} {what}: the other recording has no jdk.ExecutionSample: {summary:?}"
    );

    // Only the selected event type reaches the sinks; the rest is counted, not received.
    let mut types: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &samples {
        *types.entry(s["event"].as_str().unwrap_or("?")).or_default() += 1;
    }
    let agent = out.agent_summary();
    println!("  types {types:?}\n  {}", agent.line);
    assert_eq!(
        types.keys().copied().collect::<Vec<_>>(),
        ["jdk.ExecutionSample"],
        "JDK {jdk} {what}: event types in the JSON lines: {types:?}"
    );
    assert_eq!(agent.sink("jsonl:").records, samples.len() as u64);
    let not_selected = agent
        .line
        .split("; not_selected=")
        .nth(1)
        .and_then(|n| n.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        not_selected > 0,
        "JDK {jdk} {what}: the other recording's events are not counted: {}",
        agent.line
    );

    // Each sample is worth the period the JVM sampled at: the other recording's while it ran.
    let (fast, slow) = (case.other_ms * MS, case.agent_ms * MS);
    let mut per_weight: BTreeMap<i64, usize> = BTreeMap::new();
    for s in &samples {
        *per_weight
            .entry(s["weight"].as_i64().unwrap_or(0))
            .or_default() += 1;
    }
    println!("  samples per weight {per_weight:?}");
    assert!(
        per_weight.keys().all(|w| *w == fast || *w == slow),
        "JDK {jdk} {what}: weights {per_weight:?}, expected {fast} or {slow}"
    );
    let n_fast = per_weight.get(&fast).copied().unwrap_or(0);
    let n_slow = per_weight.get(&slow).copied().unwrap_or(0);
    if case.part_time {
        assert!(
            n_fast >= 50 && n_slow >= 50,
            "JDK {jdk} {what}: expected both periods: {per_weight:?}"
        );
        // In time order the weights change twice (start and stop of the other recording), give
        // or take samples within a few ms of a change.
        let mut by_time: Vec<(i64, i64)> = samples
            .iter()
            .map(|s| {
                (
                    s["time_ns"].as_i64().unwrap_or(0),
                    s["weight"].as_i64().unwrap_or(0),
                )
            })
            .collect();
        by_time.sort_unstable();
        let changes = by_time.windows(2).filter(|p| p[0].1 != p[1].1).count();
        assert!(
            changes <= 6,
            "JDK {jdk} {what}: the weight changes {changes} times in time order"
        );
    } else {
        assert!(
            n_fast * 10 >= samples.len() * 9,
            "JDK {jdk} {what}: the other recording ran all along, yet {per_weight:?}"
        );
    }
    // Ground truth for the period: JFR's sampler visits a thread at most once per period, and a
    // thread running Java code is often sampled in consecutive periods. So the short end of one
    // thread's gaps (5th percentile) sits at the period: not below it (the weight would overstate
    // the period), and not at a multiple of it (the weight would understate it).
    for (w, gaps) in gaps_by_weight(&samples) {
        if gaps.len() < 40 {
            continue;
        }
        let p5 = gaps[gaps.len() / 20];
        println!(
            "  weight {} ms: {} gaps of one thread, 5th percentile {:.1} ms, median {:.1} ms",
            w / MS,
            gaps.len(),
            p5 as f64 / 1e6,
            gaps[gaps.len() / 2] as f64 / 1e6
        );
        assert!(
            p5 * 10 >= w * 8 && p5 * 10 <= w * 15,
            "JDK {jdk} {what}: samples worth {w} ns came {p5} ns apart (5th percentile of one \
             thread's gaps)"
        );
    }

    // pprof sums exactly those periods, and says the shortest.
    let (p_samples, p_cpu, p_period) = pprof_cpu(pprof);
    let json_cpu: i64 = samples.iter().filter_map(|s| s["weight"].as_i64()).sum();
    assert_eq!(
        p_samples,
        samples.len() as i64,
        "JDK {jdk} {what}: pprof samples"
    );
    assert_eq!(p_cpu, json_cpu, "JDK {jdk} {what}: pprof cpu nanoseconds");
    let shortest = if n_fast > 0 { fast } else { slow };
    assert_eq!(p_period, shortest, "JDK {jdk} {what}: pprof Period");
    assert!(
        agent
            .line
            .contains("; cpu_sampler=jdk.ExecutionSample period="),
        "JDK {jdk} {what}: {}",
        agent.line
    );
}

fn agent_options(case: &Case, jsonl: &Path, pprof: &Path) -> String {
    format!(
        "sink=jsonl:{},sink=pprof:{},period={}ms",
        jsonl.display(),
        pprof.display(),
        case.agent_ms
    )
}

/// `-XX:StartFlightRecording` with the JDK's `settings` file, all along the agent's run.
fn with_start_flight_recording(jdk: u32, settings: &str, agent_ms: i64, other_ms: i64) {
    let _serial = common::serial();
    let case = Case {
        jdk,
        what: format!("StartFlightRecording settings={settings}"),
        agent_ms,
        other_ms,
        part_time: false,
    };
    let jsonl = common::out_file(&format!("coexist-startfr-{settings}-{jdk}.jsonl"));
    let pprof = common::out_file(&format!("coexist-startfr-{settings}-{jdk}.pprof"));
    let other = common::out_file(&format!("coexist-startfr-{settings}-{jdk}-other.jfr"));
    let out = JvmRun::new(jdk)
        .jvm_arg(format!(
            "-XX:StartFlightRecording=filename={},settings={settings}",
            other.display()
        ))
        .agent(&agent_options(&case, &jsonl, &pprof))
        .main("gt.GroundTruth")
        .args(["5", "platform"])
        .timeout(Duration::from_secs(180))
        .run();
    assert!(out.status.success(), "JDK {jdk}:\n{}", out.dump());
    check(&case, &jsonl, &pprof, &other, &out);
}
fn jcmd(jdk: u32, pid: u32, args: &[&str]) -> String {
    let out = Command::new(common::jdk_home(jdk).join("bin/jcmd"))
        .arg(pid.to_string())
        .args(args)
        .output()
        .expect("run jcmd");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "jcmd {args:?}: {}\n{text}",
        out.status
    );
    text
}

/// `jcmd JFR.start settings=profile` 2 s into the agent's run, `JFR.stop` 3 s later.
fn with_jcmd_recording(jdk: u32, agent_ms: i64) {
    let _serial = common::serial();
    let case = Case {
        jdk,
        what: "jcmd JFR.start/stop settings=profile".into(),
        agent_ms,
        other_ms: 10,
        part_time: true,
    };
    let jsonl = common::out_file(&format!("coexist-jcmd-{jdk}.jsonl"));
    let pprof = common::out_file(&format!("coexist-jcmd-{jdk}.pprof"));
    let other = common::out_file(&format!("coexist-jcmd-{jdk}-other.jfr"));
    let mut jvm = JvmRun::new(jdk)
        .agent(&agent_options(&case, &jsonl, &pprof))
        .main("gt.GroundTruth")
        .args(["9", "platform"])
        .timeout(Duration::from_secs(120))
        .spawn();
    let pid = jvm.pid() as u32;
    std::thread::sleep(Duration::from_secs(2));
    let started = jcmd(
        jdk,
        pid,
        &[
            "JFR.start",
            "name=x",
            "settings=profile",
            &format!("filename={}", other.display()),
        ],
    );
    std::thread::sleep(Duration::from_secs(3));
    let stopped = jcmd(jdk, pid, &["JFR.stop", "name=x"]);
    let out = jvm.finish();
    assert!(
        out.status.success(),
        "JDK {jdk}:\n{started}\n{stopped}\n{}",
        out.dump()
    );
    check(&case, &jsonl, &pprof, &other, &out);
}

// One JDK per scenario, all three across them (each run is a GroundTruth of 5 or 9 s).

/// `profile` samples every 10 ms: the agent's 20 ms samples come twice as often.
#[test]
fn beside_start_flight_recording_profile_jdk21() {
    with_start_flight_recording(21, "profile", 20, 10);
}

/// `default` samples every 20 ms, beside an agent asking for 50 ms.
#[test]
fn beside_start_flight_recording_default_jdk17() {
    with_start_flight_recording(17, "default", 50, 20);
}

#[test]
fn beside_jcmd_recording_jdk25() {
    with_jcmd_recording(25, 20);
}

#[test]
fn beside_jcmd_recording_jdk17() {
    with_jcmd_recording(17, 20);
}
