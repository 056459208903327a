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
//! and leaves no reservation open. Here: it exits 0 and prints its counts.

use crate::common::{self, jdk};

use std::ffi::OsString;
use std::process::Command;

const WRITERS: &str = "4";
const MAPS: &str = "200000";

fn stress(version: u32) {
    let _guard = common::serial();
    let root = common::root();
    let dest = common::target_dir().join(format!("it-definition-log-{version}"));
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::create_dir_all(&dest).expect("create the class directory");
    let args: Vec<OsString> = vec![
        "--release".into(),
        "17".into(),
        "-encoding".into(),
        "UTF-8".into(),
        "-sourcepath".into(),
        root.join("java/bridge").into(),
        "-d".into(),
        dest.clone().into(),
        root.join("tests/java-bridge/dev/jfrctx/agent/DefinitionLogStress.java")
            .into(),
    ];
    jdk::run_tool("javac", &args);
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
