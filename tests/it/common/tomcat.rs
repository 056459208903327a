//! The embedded Tomcat of `examples/servlet/server` (`EmbeddedTomcat`), as the application-server
//! tests run it: jars from `scripts/tomcat.sh`, the launcher compiled against them, a run that
//! prints `listening on 127.0.0.1:PORT` and stops on `GET /admin/stop`.

use super::http::{connect, get};
use super::run::{JvmRun, Run, RunningJvm};
use super::{jars, root, script_dir};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The launcher's main class (`examples/servlet/server`).
pub const LAUNCHER: &str = "dev.jfrctx.examples.server.EmbeddedTomcat";

const LISTENING: &str = "listening on 127.0.0.1:";

/// Tomcat's jars: `scripts/tomcat.sh` prints their directory (fetching them once).
pub fn tomcat_jars() -> Vec<PathBuf> {
    let dir = script_dir("tomcat.sh");
    let jars = jars(&dir);
    assert!(
        jars.iter()
            .any(|j| j.to_string_lossy().contains("tomcat-embed-core")),
        "no tomcat-embed-core jar in {}",
        dir.display()
    );
    jars
}

/// Compiles the launcher against `tomcat` into `dest`.
pub fn compile_launcher(tomcat: &[PathBuf], dest: &Path) {
    super::jdk::javac_to(tomcat, dest, &root().join("examples/servlet/server"));
}

/// A Tomcat that is up and listening.
pub struct Server {
    pub jvm: RunningJvm,
    pub port: u16,
}

impl Server {
    /// Starts `run` (main class [`LAUNCHER`]) and waits up to `startup` for its port.
    pub fn start(run: JvmRun, startup: Duration) -> Server {
        let mut jvm = run.main(LAUNCHER).spawn();
        jvm.wait_for_stdout(LISTENING, startup);
        let so_far = jvm.stdout_so_far();
        let port: u16 = so_far
            .split(LISTENING)
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {so_far:?}"));
        Server { jvm, port }
    }

    /// `GET /admin/stop` (answered 200), then waits for the JVM's exit.
    pub fn stop(self, headers: &[(&str, &str)]) -> Run {
        let (status, _, _) =
            get(&mut connect(self.port), "/admin/stop", headers).expect("GET /admin/stop");
        assert!(status.starts_with("HTTP/1.1 200"), "/admin/stop: {status}");
        self.jvm.finish()
    }
}
