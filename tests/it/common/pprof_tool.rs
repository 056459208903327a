//! `go tool pprof`, the real reader the pprof tests check the agent's files with.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The `go` command: from `PATH`, else `/usr/local/go/bin/go`.
pub fn go() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("go"))
            .find(|p| p.is_file())
    });
    let fallback = PathBuf::from("/usr/local/go/bin/go");
    on_path
        .or_else(|| fallback.is_file().then_some(fallback))
        .expect(
            "Go is needed to read pprof files with `go tool pprof` and was found neither on PATH \
             nor at /usr/local/go/bin/go: install Go (https://go.dev/dl, or apt-get install \
             golang-go)",
        )
}

/// `go tool pprof ARGS... FILE`, which must succeed; its stdout. Runs in `target/it-out` with
/// the local Go toolchain only.
pub fn pprof(file: &Path, args: &[&str]) -> String {
    let out = Command::new(go())
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .current_dir(super::target_dir().join("it-out"))
        .env("GOTOOLCHAIN", "local")
        .env_remove("GOFLAGS")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run go tool pprof: {e}"));
    assert!(
        out.status.success(),
        "go tool pprof {args:?} {} failed ({}):\n{}",
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("pprof output is UTF-8")
}
