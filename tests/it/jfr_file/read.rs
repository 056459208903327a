//! Reading the jfr sink's files back: the `jfr` tool of a JDK, JDK Mission Control's parser
//! (`tests/jmc/JmcCheck.java`), the chunk headers; and each reader's view of a sample, to compare
//! with the JSON lines.

use crate::common;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// One sample as both files tell it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sample {
    /// ns: `time_ns` (monotonic) for JSON lines, epoch ns for JFR.
    pub(super) time: i128,
    pub(super) thread: Option<u64>,
    /// `Ok(map)` (empty: no context) or `Err(reason)`.
    pub(super) context: Result<BTreeMap<String, String>, String>,
    /// `method:line`, leaf first.
    pub(super) stack: Vec<String>,
}

pub(super) fn from_jsonl(v: &Value) -> Sample {
    let context = match (&v["context"], v["unknown"].as_str()) {
        (Value::Object(m), None) => Ok(m
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("string value").to_string()))
            .collect()),
        (Value::Null, Some(r)) => Err(r.to_string()),
        other => panic!("unexpected context in JSON lines: {other:?}"),
    };
    Sample {
        time: i128::from(v["time_ns"].as_i64().expect("time_ns")),
        thread: v["thread"]["id"].as_u64(),
        context,
        stack: v["stack"]
            .as_array()
            .expect("stack")
            .iter()
            .map(|f| format!("{}:{}", f["method"].as_str().unwrap(), f["line"]))
            .collect(),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub(super) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Epoch ns of an `Instant.toString()` text (`2026-11-23T17:42:42.355722097Z`, fraction of 0 to
/// 9 digits).
pub(super) fn parse_instant(s: &str) -> i128 {
    let s = s
        .strip_suffix('Z')
        .unwrap_or_else(|| panic!("not UTC: {s}"));
    let (date, time) = s.split_once('T').expect("T");
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let mut ns: i128 = 0;
    for (i, c) in frac.chars().enumerate() {
        ns += i128::from(c.to_digit(10).unwrap()) * 10i128.pow(8 - i as u32);
    }
    let secs = days_from_civil(d[0], d[1], d[2]) * 86_400 + t[0] * 3600 + t[1] * 60 + t[2];
    i128::from(secs) * 1_000_000_000 + ns
}

/// A sample's context as the JFR file holds it: `context` null and `contextUnknown` null (no
/// context), null and a reason (unknown), or the `jfrctx.Context` value, the entries' JSON text.
pub(super) fn file_context(
    context: &Value,
    unknown: Option<&str>,
    reader: &str,
) -> Result<BTreeMap<String, String>, String> {
    match (context, unknown) {
        (Value::Null, None) => Ok(BTreeMap::new()),
        (Value::Null, Some(r)) => Err(r.to_string()),
        (Value::String(json), None) => {
            let m: serde_json::Map<String, Value> = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("{reader}: context {json:?} is not a JSON object: {e}"));
            assert!(!m.is_empty(), "{reader}: an empty context must be null");
            Ok(m.into_iter()
                .map(|(k, v)| (k, v.as_str().expect("string value").to_string()))
                .collect())
        }
        other => panic!("{reader}: unexpected context {other:?}"),
    }
}

pub(super) fn from_jfr_json(e: &Value) -> Sample {
    let v = &e["values"];
    let context = file_context(
        &v["context"],
        v["contextUnknown"].as_str(),
        "jfr print --json",
    );
    let stack = v["stackTrace"]["frames"]
        .as_array()
        .map(|frames| {
            frames
                .iter()
                .map(|f| {
                    let m = &f["method"];
                    let class = m["type"]["name"].as_str().unwrap().replace('/', ".");
                    format!(
                        "{class}.{}:{}",
                        m["name"].as_str().unwrap(),
                        f["lineNumber"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Sample {
        time: parse_instant(v["startTime"].as_str().expect("startTime")),
        thread: v["sampledThread"]["javaThreadId"].as_u64(),
        context,
        stack,
    }
}

/// A JMC checker output line (see `tests/jmc/JmcCheck.java`).
pub(super) fn from_jmc(v: &Value) -> Sample {
    let context = file_context(&v["context"], v["unknown"].as_str(), "JMC");
    Sample {
        time: i128::from(v["time_ns"].as_i64().expect("time_ns")),
        thread: v["thread"].as_u64(),
        context,
        stack: v["stack"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect(),
    }
}

/// JMC's jars (`scripts/jmc.sh` fetches them once) and `JmcCheck` compiled against them: the
/// class path to run it with.
pub(super) fn jmc_classpath() -> &'static str {
    static CP: OnceLock<String> = OnceLock::new();
    CP.get_or_init(|| {
        let out = Command::new("bash")
            .arg(common::root().join("scripts/jmc.sh"))
            .output()
            .expect("run scripts/jmc.sh");
        assert!(
            out.status.success(),
            "scripts/jmc.sh failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
        let mut jars: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jar"))
            .map(|p| p.display().to_string())
            .collect();
        jars.sort();
        let classes = common::target_dir().join("it-jmc-classes");
        std::fs::create_dir_all(&classes).unwrap();
        let javac = common::jdk_home(17).join("bin/javac");
        let out = Command::new(&javac)
            .args(["--release", "17", "-cp", &jars.join(":"), "-d"])
            .arg(&classes)
            .arg(common::root().join("tests/jmc/JmcCheck.java"))
            .output()
            .expect("run javac");
        assert!(
            out.status.success(),
            "javac JmcCheck: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        jars.push(classes.display().to_string());
        jars.join(":")
    })
}

/// Every event of `jfr` as JMC's parser reads it.
pub(super) fn jmc_read(jfr: &Path) -> Vec<Value> {
    let out = Command::new(common::java(17))
        .args(["-cp", jmc_classpath(), "JmcCheck"])
        .arg(jfr)
        .output()
        .expect("run JmcCheck");
    assert!(
        out.status.success(),
        "JmcCheck {} failed: {}",
        jfr.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    common::parse_json_lines(&String::from_utf8_lossy(&out.stdout), "JmcCheck")
}

/// `got` (a reader's view of the JFR file) equals `want` (the JSON lines) sample for sample,
/// times up to one constant offset; returns the samples with a non-empty context.
pub(super) fn agree(reader: &str, got: Vec<Sample>, want: &[Sample]) -> usize {
    let got = sorted(got);
    assert_eq!(got.len(), want.len(), "{reader}: number of samples");
    let offset = got[0].time - want[0].time;
    let mut with_context = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g.time - w.time,
            offset,
            "{reader}, sample {i}: times do not differ by the file's one offset"
        );
        let shifted = Sample {
            time: g.time - offset,
            ..g.clone()
        };
        assert_eq!(&shifted, w, "{reader}, sample {i} differs");
        with_context += usize::from(matches!(&w.context, Ok(m) if !m.is_empty()));
    }
    with_context
}

pub(super) fn jfr_tool(jdk: u32, args: &[&str]) -> String {
    let out = Command::new(common::jdk_home(jdk).join("bin/jfr"))
        .args(args)
        .output()
        .expect("run jfr");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "jfr {args:?} (JDK {jdk}) failed: {}\n{}\n{}",
        out.status,
        &stdout[..stdout.len().min(4000)],
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub(super) fn sorted(mut v: Vec<Sample>) -> Vec<Sample> {
    v.sort_by_key(|a| (a.time, a.thread));
    v
}

/// The number of complete chunks at the start of `bytes` (each a header whose size fits).
pub(super) fn complete_chunks(bytes: &[u8]) -> usize {
    let mut at = 0usize;
    let mut n = 0;
    while bytes.len() >= at + 68 && &bytes[at..at + 4] == b"FLR\0" {
        let size = u64::from_be_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        if size < 68 || at + size > bytes.len() {
            break;
        }
        at += size;
        n += 1;
    }
    n
}
