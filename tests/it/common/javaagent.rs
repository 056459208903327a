//! The Java agent jar for the tests that run it (`tests/it/propagation.rs`, `tests/it/app_server.rs`).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// `target/jfrctx-agent.jar`, built once per test process by `scripts/javaagent.sh`.
pub fn java_agent_jar() -> PathBuf {
    static JAR: OnceLock<PathBuf> = OnceLock::new();
    JAR.get_or_init(|| {
        let out = Command::new("bash")
            .arg(super::root().join("scripts/javaagent.sh"))
            .output()
            .expect("run scripts/javaagent.sh");
        assert!(
            out.status.success(),
            "scripts/javaagent.sh failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let jar = super::root().join("target/jfrctx-agent.jar");
        assert!(jar.is_file(), "no {}", jar.display());
        jar
    })
    .clone()
}
