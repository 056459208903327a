//! jfrctx next to another JFR recording: one started with `-XX:StartFlightRecording`, one started
//! and stopped with `jcmd JFR.start` / `JFR.stop` while the agent runs. Both must keep working:
//! the agent's JSON lines carry correct contexts (ground-truth workload, 0 wrong) and the other
//! recording is a valid file that `jfr summary` reads (exit 0) and that lists
//! `jdk.ExecutionSample`.
//!
//! Note: JFR merges the settings of all running recordings and they share chunk data, so the
//! other recording also holds the events the agent enabled (`jfrctx.Calibration`, and samples at
//! the agent's period). `cargo test --test coexistence -- --nocapture` prints what it found.

mod common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

fn check(jdk: u32, what: &str, jsonl: &Path, other: &Path, stderr: &str) {
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
        "JDK {jdk} {what}: only {correct} correct samples\n{stderr}"
    );
    assert!(
        correct * 100 >= (correct + unknown) * 95,
        "JDK {jdk} {what}: {unknown} unknown vs {correct} correct"
    );
    assert!(
        exec > 0,
        "JDK {jdk} {what}: the other recording has no jdk.ExecutionSample: {summary:?}"
    );
    assert!(
        stderr.contains("jfrctx: samples received="),
        "no agent summary:\n{stderr}"
    );
}

fn with_start_flight_recording(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("coexist-startfr-{jdk}.jsonl"));
    let other = common::out_file(&format!("coexist-startfr-{jdk}-other.jfr"));
    let args = vec![
        format!(
            "-XX:StartFlightRecording=filename={},settings=profile",
            other.display()
        ),
        common::agent_arg(&format!("sink=jsonl:{},period=5ms", jsonl.display())),
    ];
    let out = common::run_java_with(
        jdk,
        &args,
        "gt.GroundTruth",
        &["5", "platform"],
        Duration::from_secs(180),
    );
    assert!(out.status.success(), "JDK {jdk}:\n{}", out.dump());
    check(jdk, "StartFlightRecording", &jsonl, &other, &out.stderr);
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

fn with_jcmd_recording(jdk: u32) {
    let _serial = common::serial();
    let jsonl = common::out_file(&format!("coexist-jcmd-{jdk}.jsonl"));
    let other = common::out_file(&format!("coexist-jcmd-{jdk}-other.jfr"));
    let stderr_path = common::out_file(&format!("coexist-jcmd-{jdk}.err"));
    let mut cmd = Command::new(common::java(jdk));
    cmd.arg(common::agent_arg(&format!(
        "sink=jsonl:{},period=5ms",
        jsonl.display()
    )))
    .arg("-cp")
    .arg(common::classes())
    .args(["gt.GroundTruth", "9", "platform"])
    .env_remove("JAVA_TOOL_OPTIONS")
    .env_remove("_JAVA_OPTIONS")
    .env_remove("JDK_JAVA_OPTIONS")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(fs::File::create(&stderr_path).unwrap());
    let mut guard = common::ChildGuard(Some(cmd.spawn().expect("start java")));
    let pid = guard.child().id();
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
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = guard.child().try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "GroundTruth did not end");
        std::thread::sleep(Duration::from_millis(50));
    };
    guard.0 = None;
    let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
    assert!(
        status.success(),
        "JDK {jdk}: {status}\n{started}\n{stopped}\n{stderr}"
    );
    check(jdk, "jcmd JFR.start/stop", &jsonl, &other, &stderr);
}

#[test]
fn with_start_flight_recording_jdk17() {
    with_start_flight_recording(17);
}

#[test]
fn with_start_flight_recording_jdk25() {
    with_start_flight_recording(25);
}

#[test]
fn with_jcmd_recording_jdk17() {
    with_jcmd_recording(17);
}

#[test]
fn with_jcmd_recording_jdk25() {
    with_jcmd_recording(25);
}
