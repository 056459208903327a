//! The aggregated sinks against the JSON lines of the same run: `gt.GroundTruth` runs with
//! `sink=jsonl`, `sink=pprof`, `sink=collapsed` and `sink=svg` together, and every aggregate must
//! count exactly what the JSON lines hold. The pprof file is read with the real reader,
//! `go tool pprof -raw` (Go from `PATH` or `/usr/local/go/bin/go`; the test fails, saying so,
//! when there is none).
//!
//! `cargo test --test it sinks:: -- --nocapture` prints the counts per JDK.

use crate::common::{self, JvmRun, Run};

use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Label and context key of the ground-truth workload.
const KEY: &str = "gt";

/// A fresh directory `target/it-out/<name>`.
fn out_dir(name: &str) -> PathBuf {
    let dir = common::target_dir().join("it-out").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    dir
}

// ---- go tool pprof ---------------------------------------------------------------------------

/// `go tool pprof -raw ARGS... FILE`, which must succeed; its stdout.
fn pprof_raw(file: &Path, args: &[&str]) -> String {
    let mut all = vec!["-raw"];
    all.extend_from_slice(args);
    common::pprof_tool::pprof(file, &all)
}

/// Sample counts read from `go tool pprof -raw` output.
#[derive(Debug, Default, PartialEq)]
struct RawCounts {
    /// Sum of the first value (`samples/count`) over all samples.
    total: u64,
    /// The same per value of the string label `key`; samples without it are not counted here.
    by_value: BTreeMap<String, u64>,
}

/// Parses the `Samples:` section of `-raw` output: a header line, then per sample a line
/// `COUNT CPU: LOCATION_IDS...` followed by a label line `k:[v] k:[v]...`.
fn parse_raw(text: &str, key: &str) -> RawCounts {
    let mut counts = RawCounts::default();
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Samples:"));
    assert!(lines.next().is_some(), "no Samples: section in\n{text}");
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("samples/count"), "header {header:?}");
    let needle = format!("{key}:[");
    let mut last = 0;
    for line in lines {
        if !line.starts_with(' ') {
            break; // "Locations", "Mappings", ...
        }
        let line = line.trim();
        let first = line.split_whitespace().next().unwrap_or_default();
        if line.contains(':') && !first.contains(':') && first.parse::<u64>().is_ok() {
            last = first.parse().unwrap();
            counts.total += last;
        } else if let Some(start) = line.find(&needle) {
            let rest = &line[start + needle.len()..];
            let value = &rest[..rest.find(']').expect("label value ends with ]")];
            *counts.by_value.entry(value.to_string()).or_default() += last;
        }
    }
    counts
}

// ---- what the JSON lines say -----------------------------------------------------------------

/// Per-run counts from the JSON lines.
#[derive(Debug, Default)]
struct JsonCounts {
    total: u64,
    /// Samples whose context has `gt`, per value.
    by_value: BTreeMap<String, u64>,
    /// The root frame the collapsed/svg sinks must give each sample, counted.
    by_root: BTreeMap<String, u64>,
}

fn json_counts(samples: &[Value]) -> JsonCounts {
    let mut c = JsonCounts::default();
    for s in samples {
        c.total += 1;
        let root = match (&s["context"], s["unknown"].as_str()) {
            (Value::Null, Some(reason)) => format!("[unknown: {reason}]"),
            (Value::Object(ctx), _) => match ctx.get(KEY).and_then(Value::as_str) {
                Some(v) => {
                    *c.by_value.entry(v.to_string()).or_default() += 1;
                    format!("{KEY}={v}")
                }
                None => format!("{KEY}=-"),
            },
            _ => panic!("bad context in {s}"),
        };
        *c.by_root.entry(root).or_default() += 1;
    }
    c
}

/// Per root frame (the text before the first `;`): summed counts of a collapsed file.
fn collapsed_roots(path: &Path) -> BTreeMap<String, u64> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut roots = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("{}: bad line {line:?}", path.display()));
        let n: u64 = n
            .parse()
            .unwrap_or_else(|_| panic!("{}: bad count in {line:?}", path.display()));
        let root = stack.split(';').next().unwrap_or_default();
        *roots.entry(root.to_string()).or_default() += n;
    }
    roots
}

/// Nanoseconds of CPU per sample of these runs (`period=1ms`: the `jdk.ExecutionSample` period,
/// which no other recording shortens there).
const PERIOD_NS: u64 = 1_000_000;

/// `index.txt` of an svg output directory: (file, value, samples, context) per line.
fn svg_index(dir: &Path) -> Vec<(String, u64, u64, String)> {
    let path = dir.join("index.txt");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{}: bad line {l:?}", path.display());
            let n = |i: usize| f[i].parse().unwrap();
            (f[0].to_string(), n(1), n(2), f[3].to_string())
        })
        .collect()
}

fn run_ground_truth(jdk: u32, seconds: &str, options: &str) -> Run {
    let out = JvmRun::new(jdk)
        .agent(options)
        .main("gt.GroundTruth")
        .args([seconds])
        .timeout(Duration::from_secs(180))
        .run();
    assert!(
        out.status.success(),
        "GroundTruth failed on JDK {jdk}:\n{}",
        out.dump()
    );
    let summary: Vec<&str> = out
        .agent_lines()
        .into_iter()
        .filter(|l| l.starts_with("jfrctx: samples received="))
        .collect();
    assert_eq!(summary.len(), 1, "no agent summary:\n{}", out.dump());
    for sink in ["jsonl:", "pprof:", "collapsed:", "svg:"] {
        assert!(
            summary[0].contains(sink),
            "{sink} missing in {}",
            summary[0]
        );
    }
    for errors in summary[0].split(" errors=").skip(1) {
        let n: String = errors.chars().take_while(char::is_ascii_digit).collect();
        assert_eq!(n, "0", "a sink failed: {}", summary[0]);
    }
    out
}

fn all_sinks(jdk: u32) {
    let _serial = common::serial();
    let dir = out_dir(&format!("sinks-{jdk}"));
    let (a, b, c, d) = (
        dir.join("a.jsonl"),
        dir.join("b.pprof"),
        dir.join("c.collapsed"),
        dir.join("d"),
    );
    let options = format!(
        "sink=jsonl:{},sink=pprof:{},sink=collapsed:{},sink=svg:{},collapsed_keys={KEY},\
         svg_key={KEY},period=1ms",
        a.display(),
        b.display(),
        c.display(),
        d.display()
    );
    run_ground_truth(jdk, "4", &options);
    let json = json_counts(&common::read_json_lines(&a));
    println!(
        "sinks JDK {jdk}: {} samples, per {KEY}: {:?}, per root: {:?}",
        json.total, json.by_value, json.by_root
    );
    assert!(json.total >= 200, "only {} samples", json.total);
    assert!(json.by_value.contains_key("alpha"), "{:?}", json.by_value);

    // pprof, read by pprof itself.
    let raw = parse_raw(&pprof_raw(&b, &[]), KEY);
    assert_eq!(raw.total, json.total, "pprof total vs JSON lines");
    assert_eq!(raw.by_value, json.by_value, "pprof per {KEY} vs JSON lines");
    let focus = format!("-tagfocus={KEY}=alpha");
    let alpha = parse_raw(&pprof_raw(&b, &[&focus]), KEY);
    assert_eq!(alpha.total, json.by_value["alpha"], "{focus}");
    assert_eq!(alpha.by_value.keys().collect::<Vec<_>>(), ["alpha"]);

    // Collapsed: one root frame per gt value, `gt=-`, or `[unknown: reason]`; CPU nanoseconds.
    let cpu_by_root: BTreeMap<String, u64> = json
        .by_root
        .iter()
        .map(|(root, n)| (root.clone(), n * PERIOD_NS))
        .collect();
    assert_eq!(
        collapsed_roots(&c),
        cpu_by_root,
        "collapsed roots vs JSON lines"
    );

    // SVG: all.svg plus one per gt value, titled, listed in index.txt.
    let entry = |file: String, n: u64, context: String| (file, n * PERIOD_NS, n, context);
    let mut expected = vec![entry("all.svg".into(), json.total, "all".into())];
    for (v, n) in &json.by_value {
        expected.push(entry(format!("{KEY}-{v}.svg"), *n, format!("{KEY}={v}")));
    }
    assert_eq!(svg_index(&d), expected);
    for (file, ns, n, context) in &expected {
        let path = d.join(file);
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let head = text.trim_start();
        assert!(
            head.starts_with("<?xml") || head.starts_with("<svg"),
            "{} does not start like SVG",
            path.display()
        );
        assert!(text.trim_end().ends_with("</svg>"), "{}", path.display());
        let ms = *ns as f64 / 1e6;
        let title = format!("jfrctx — {context} — {ms:.1} ms of CPU in {n} samples");
        assert!(text.contains(&title), "{} lacks {title:?}", path.display());
    }
    let svgs = fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            let e = e.as_ref().unwrap();
            e.path().extension().is_some_and(|x| x == "svg")
        })
        .count();
    assert_eq!(svgs, expected.len(), "SVG files in {}", d.display());
}

#[test]
fn sinks_jdk17() {
    all_sinks(17);
}

#[test]
fn sinks_jdk25() {
    all_sinks(25);
}

/// `interval=1s` over a ~4 s run: several numbered outputs per sink, whose counts add up to the
/// JSON lines' total.
#[test]
fn rotation_jdk21() {
    let _serial = common::serial();
    let dir = out_dir("sinks-rotation");
    let (a, b, c, d) = (
        dir.join("a.jsonl"),
        dir.join("b.pprof"),
        dir.join("c.txt"),
        dir.join("d"),
    );
    let options = format!(
        "sink=jsonl:{},sink=pprof:{},sink=collapsed:{},sink=svg:{},svg_key={KEY},period=1ms,\
         interval=1s",
        a.display(),
        b.display(),
        c.display(),
        d.display()
    );
    run_ground_truth(21, "4", &options);
    let json = json_counts(&common::read_json_lines(&a));
    assert!(!b.exists() && !c.exists(), "unnumbered outputs written");

    let numbered = |n: usize| {
        (
            dir.join(format!("b.{n:04}.pprof")),
            dir.join(format!("c.{n:04}.txt")),
            d.join(format!("{n:04}")),
        )
    };
    let mut files = 0;
    while numbered(files + 1).0.exists() {
        files += 1;
    }
    assert!(files >= 3, "only {files} pprof files in {}", dir.display());
    assert!(!numbered(files + 1).1.exists() && !numbered(files + 1).2.exists());

    let (mut pprof_total, mut collapsed_total, mut svg_total) = (0, 0, 0);
    let mut non_empty = 0;
    for n in 1..=files {
        let (p, c, s) = numbered(n);
        let raw = parse_raw(&pprof_raw(&p, &[]), KEY);
        let folded: u64 = collapsed_roots(&c).values().sum();
        let index = svg_index(&s);
        assert_eq!(index[0].0, "all.svg");
        assert_eq!(
            raw.total * PERIOD_NS,
            folded,
            "interval {n}: pprof vs collapsed"
        );
        assert_eq!(
            raw.total * PERIOD_NS,
            index[0].1,
            "interval {n}: pprof vs svg"
        );
        assert_eq!(raw.total, index[0].2, "interval {n}: pprof vs svg samples");
        pprof_total += raw.total;
        collapsed_total += folded / PERIOD_NS;
        svg_total += index[0].2;
        non_empty += usize::from(raw.total > 0);
    }
    println!(
        "rotation JDK 21: {files} intervals ({non_empty} with samples), {pprof_total} samples"
    );
    assert!(
        non_empty >= 2,
        "samples in only {non_empty} of {files} intervals"
    );
    assert_eq!(pprof_total, json.total, "pprof intervals vs JSON lines");
    assert_eq!(
        collapsed_total, json.total,
        "collapsed intervals vs JSON lines"
    );
    assert_eq!(svg_total, json.total, "svg intervals vs JSON lines");
}

#[test]
fn raw_output_parser() {
    let text = "Comment: jfrctx\nSamples:\nsamples/count cpu/nanoseconds[dflt]\n\
                \x20         3    3000000: 1 2 3 \n\
                \x20               gt:[alpha] thread:[w 1]\n\
                \x20         2    2000000: 4 \n\
                \x20               thread:[JFR Shutdown Hook]\n\
                \x20         1    1000000: \n\
                \x20               gt:[beta] jfrctx_unknown:[x] thread:[t]\n\
                Locations\n     1: 0x0 M=1 a.B.c :1:0 s=0\n";
    let raw = parse_raw(text, "gt");
    assert_eq!(raw.total, 6);
    assert_eq!(
        raw.by_value,
        BTreeMap::from([("alpha".to_string(), 3), ("beta".to_string(), 1)])
    );
}
