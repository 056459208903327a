//! The bridge's definition log (`java/bridge/dev/jfrctx/agent/DefinitionLog.java`) under
//! concurrent writers, without the agent: `tests/java-bridge/.../DefinitionLogStress.java`,
//! compiled against the bridge sources themselves, runs 4 writer threads that define and release
//! 200 000 maps each through `Definitions` while one reader drains the log as the stream does at
//! each delivery, on JDK 17, 21 and 25 (JDK 22 changed which atomic accesses a `byte[]` allows).
//! Asserted by the workload, per JDK: every id whose `define` returned before a drain started is
//! in that drain or an earlier one; every map arrives once with its exact keys and values (ASCII,
//! non-ASCII, 200 kB values, one map larger than a chunk); every release once, after its
//! definition; per-writer order kept; nothing else read; a fifth thread whose `define` overflows
//! its stack at many points gets its maps delivered when `define` returned, never when it failed,
//! and leaves no reservation open. Here: it exits 0 and prints its counts. Also the ring writer
//! (`ring_writer_*`, workload `RingWriterWarm.java`): its VMInit warm-up, and writes overflowing
//! at the end of stacks.

use crate::common::{self, jdk};

use std::process::Command;

const WRITERS: &str = "4";
const MAPS: &str = "200000";

fn stress(version: u32) {
    let _guard = common::serial();
    let dest = jdk::bridge_workload("DefinitionLogStress", version);
    let out = Command::new(jdk::java(version))
        .arg("-cp")
        .arg(&dest)
        .args(["dev.jfrctx.agent.DefinitionLogStress", WRITERS, MAPS])
        .output()
        .expect("run DefinitionLogStress");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "JDK {version}: the definition log lost, reordered or corrupted a record:\n{stdout}{stderr}"
    );
    let counts: serde_json::Value =
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    println!("definition_log JDK {version}: {counts}");
    assert_eq!(counts["definitions"], 800_100, "{counts}");
    assert_eq!(counts["releases"], 533_332, "{counts}");
}

#[test]
fn definition_log_jdk17() {
    stress(17);
}

#[test]
fn definition_log_jdk21() {
    stress(21);
}

#[test]
fn definition_log_jdk25() {
    stress(25);
}

/// The ring writer's warm-up (`RingWriter.warm`, what `StreamBridge.start` runs at VMInit so
/// that no application thread runs the writer's method handles first at the end of its stack)
/// works, and the writer overflowing at the end of stacks leaves every ring whole: workload
/// `tests/java-bridge/.../RingWriterWarm.java`, without the agent.
fn ring_writer(version: u32) {
    let _guard = common::serial();
    let dest = jdk::bridge_workload("RingWriterWarm", version);
    let out = Command::new(jdk::java(version))
        .args([
            "--add-exports",
            "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-XX:CompileCommand=quiet",
            "-XX:CompileCommand=exclude,dev.jfrctx.agent.RingWriter::*",
        ])
        .arg("-cp")
        .arg(&dest)
        .arg("dev.jfrctx.agent.RingWriterWarm")
        .output()
        .expect("run RingWriterWarm");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "JDK {version}:\n{stdout}{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("ring writer: warm ok, "))
        .unwrap_or_else(|| panic!("JDK {version}: no result:\n{stdout}{stderr}"));
    println!("JDK {version}: {line}");
    let inside: u64 = line
        .split(", ")
        .nth(2)
        .and_then(|p| p.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(inside > 0, "no overflow inside the writer: {line}");
}

#[test]
fn ring_writer_jdk17() {
    ring_writer(17);
}

#[test]
fn ring_writer_jdk25() {
    ring_writer(25);
}
