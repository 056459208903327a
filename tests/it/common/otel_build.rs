//! Building what the OpenTelemetry tests (`otel`, `otel_sdk`) need: the jars of `scripts/otel.sh`,
//! and the bridge `java/otel` compiled against them
//! and the harness's facade, as `scripts/build.sh` makes `target/jfrctx-otel.jar`.

use super::jdk::{javac_to, run_tool};
use super::{copy_tree, jars, script_dir};
use std::fs;
use std::path::{Path, PathBuf};

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
    javac_to(&cp, &ext_classes, &root.join("java/otel/src"));
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
