//! Building what the OpenTelemetry tests (`tests/it/otel.rs`, `tests/it/otel_sdk.rs`) need: the jars of
//! `scripts/otel.sh` and `scripts/tomcat.sh`, and the bridge `java/otel` compiled against them
//! and the harness's facade, as `scripts/build.sh` makes `target/jfrctx-otel.jar`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn script_dir(script: &str) -> PathBuf {
    let out = Command::new("bash")
        .arg(super::root().join("scripts").join(script))
        .output()
        .unwrap_or_else(|e| panic!("run scripts/{script}: {e}"));
    assert!(
        out.status.success(),
        "scripts/{script} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn jars(dir: &Path) -> Vec<PathBuf> {
    let mut jars: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jar"))
        .collect();
    jars.sort();
    jars
}

pub fn java_files(dir: &Path, acc: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.expect("dir entry").path();
        if p.is_dir() {
            java_files(&p, acc);
        } else if p.extension().is_some_and(|x| x == "java") {
            acc.push(p);
        }
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for e in fs::read_dir(from).expect("read dir") {
        let p = e.expect("dir entry").path();
        let dest = to.join(p.file_name().expect("name"));
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            fs::copy(&p, &dest).expect("copy");
        }
    }
}

pub fn run_tool(tool: &str, args: &[OsString]) {
    let bin = super::jdk_home(17).join("bin").join(tool);
    let out = Command::new(&bin)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn javac(classpath: &[PathBuf], dest: &Path, sources: &Path) {
    let mut files = Vec::new();
    java_files(sources, &mut files);
    let mut args: Vec<OsString> = ["--release", "17", "-g", "-encoding", "UTF-8", "-cp"]
        .iter()
        .map(OsString::from)
        .collect();
    args.push(std::env::join_paths(classpath).expect("class path"));
    args.push("-d".into());
    args.push(dest.into());
    args.extend(files.into_iter().map(OsString::from));
    run_tool("javac", &args);
}

/// The OTel jars of `scripts/otel.sh`: the Java agent, and the SDK jars (everything else).
pub fn otel_jars() -> (PathBuf, Vec<PathBuf>) {
    let (agent, sdk): (Vec<PathBuf>, Vec<PathBuf>) =
        jars(&script_dir("otel.sh")).into_iter().partition(|j| {
            j.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("opentelemetry-javaagent-"))
        });
    let agent = agent
        .into_iter()
        .next()
        .expect("no opentelemetry-javaagent jar");
    (agent, sdk)
}

/// `java/otel` compiled against `sdk` and the harness's facade into `dir/ext-classes`, with its
/// `META-INF/services`; returns that directory.
pub fn bridge_classes(dir: &Path, sdk: &[PathBuf]) -> PathBuf {
    let root = super::root();
    let ext_classes = dir.join("ext-classes");
    fs::create_dir_all(&ext_classes).expect("mkdir");
    let mut cp = sdk.to_vec();
    cp.push(super::classes());
    javac(&cp, &ext_classes, &root.join("java/otel/src"));
    copy_tree(&root.join("java/otel/resources"), &ext_classes);
    ext_classes
}

/// `dir/jfrctx-otel.jar` as `scripts/build.sh` makes it: the facade, `dev.jfrctx.otel` and the
/// services file.
pub fn extension_jar(dir: &Path, ext_classes: &Path) -> PathBuf {
    let extension = dir.join("jfrctx-otel.jar");
    run_tool(
        "jar",
        &[
            "--create".into(),
            "--file".into(),
            extension.clone().into(),
            "-C".into(),
            super::classes().into_os_string(),
            "dev/jfrctx".into(),
            "-C".into(),
            ext_classes.into(),
            "dev/jfrctx/otel".into(),
            "-C".into(),
            ext_classes.into(),
            "META-INF".into(),
        ],
    );
    extension
}
