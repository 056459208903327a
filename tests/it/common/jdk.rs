//! The JDKs the tests run on: `JFRCTX_JDKNN`, else the cache of `scripts/jdks.sh`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The JDK feature versions the tests run on.
pub const JDKS: [u32; 3] = [17, 21, 25];

fn cache_dir() -> PathBuf {
    if let Some(c) = std::env::var_os("JFRCTX_CACHE") {
        return PathBuf::from(c);
    }
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
    PathBuf::from(home).join(".cache/jfrctx")
}

fn is_runtime(home: &Path) -> bool {
    home.join("bin/java").is_file()
}

/// The home of JDK `version` (17, 21 or 25). Panics with instructions when it is missing.
pub fn jdk_home(version: u32) -> PathBuf {
    let var = format!("JFRCTX_JDK{version}");
    if let Some(v) = std::env::var_os(&var) {
        let p = PathBuf::from(&v);
        assert!(
            is_runtime(&p),
            "{var}={} has no bin/java; run `scripts/jdks.sh` (or fix {var})",
            p.display()
        );
        return p;
    }
    let mut candidates = vec![cache_dir().join(format!("jdk-{version}"))];
    if version == 17 {
        candidates.push(PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64"));
        candidates.push(PathBuf::from("/usr/lib/jvm/java-17-openjdk-arm64"));
    }
    for c in &candidates {
        if is_runtime(c) {
            return c.clone();
        }
    }
    panic!(
        "JDK {version} not found ({var} unset; looked in {}). Run `scripts/jdks.sh` to install \
         it, then `source scripts/jdks.sh` (or run `scripts/test.sh`, which does both)",
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// `bin/java` of JDK `version`.
pub fn java(version: u32) -> PathBuf {
    jdk_home(version).join("bin/java")
}

/// JDK 17's `javac` (the only JDK here with one; everything is compiled `--release 17`).
pub fn javac() -> PathBuf {
    let javac = jdk_home(17).join("bin/javac");
    assert!(
        javac.is_file(),
        "{} missing: JDK 17 must be a full JDK (apt-get install openjdk-17-jdk-headless, or run \
         scripts/jdks.sh)",
        javac.display()
    );
    javac
}

/// Runs JDK 17's `bin/TOOL args` (`jar`, `javac`); panics with its output when it fails.
pub fn run_tool(tool: &str, args: &[OsString]) {
    let bin = jdk_home(17).join("bin").join(tool);
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

/// Every `.java` file under `dir`.
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

/// Compiles every `.java` file under `sources` against `classpath` into `dest` (`javac
/// --release 17 -g`).
pub fn javac_to(classpath: &[PathBuf], dest: &Path, sources: &Path) {
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

/// Compiles `tests/java-bridge/dev/jfrctx/agent/{name}.java` against the bridge's own sources
/// (`java/bridge`, no agent) into a fresh `target/it-{name}-{version}`; returns that directory.
pub fn bridge_workload(name: &str, version: u32) -> PathBuf {
    let root = super::root();
    let dest = super::target_dir().join(format!("it-{name}-{version}"));
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
        root.join(format!("tests/java-bridge/dev/jfrctx/agent/{name}.java"))
            .into(),
    ];
    run_tool("javac", &args);
    dest
}
