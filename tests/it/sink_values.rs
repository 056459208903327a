//! Value types of the aggregated sinks on real JVMs: `ev.EventWorkload mix` (allocations, monitor
//! contention, `Object.wait` and parks, each inside a method named after its context) runs with
//! `events=alloc+lock+park` and `sink=jsonl`, `sink=pprof`, `sink=collapsed` together. The pprof
//! file, read by `go tool pprof -raw` (Go from `PATH` or `/usr/local/go/bin/go`), must carry the
//! types `samples/count`, `alloc_space/bytes`, `wait/nanoseconds`, and per context value and per
//! `event` label its bytes and wait nanoseconds must equal the sums of `weight` and `duration_ns`
//! in the JSON lines of the same run; so must the collapsed files `c.alloc.txt` and
//! `c.wait.txt`.
//!
//! `cargo test --test it sink_values:: -- --nocapture` prints the figures per JDK.

use crate::common::{self, JvmRun};

use common::pprof_tool::pprof;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

/// The context key of the workload.
const KEY: &str = "ev";

/// Summed values per (label key, label value), per sample type.
type Sums = BTreeMap<(String, String), Vec<u64>>;

/// Parses the `Samples:` section of `go tool pprof -raw`: the header of sample types (the default
/// one marked `[dflt]`), then per sample `V1 V2 ...: LOCATION_IDS` and a label line
/// `k:[v] k:[v]...`. Returns the header's types and the value sums per label, with the key
/// `("", "")` holding the totals.
fn parse_raw(text: &str) -> (Vec<String>, Sums) {
    let mut lines = text.lines().skip_while(|l| !l.starts_with("Samples:"));
    assert!(lines.next().is_some(), "no Samples: section in\n{text}");
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut sums = Sums::new();
    let mut last: Vec<u64> = Vec::new();
    let add = |sums: &mut Sums, key: (String, String), v: &[u64]| {
        let slot = sums.entry(key).or_insert_with(|| vec![0; v.len()]);
        slot.iter_mut().zip(v).for_each(|(s, x)| *s += x);
    };
    for line in lines {
        if !line.starts_with(' ') {
            break; // "Locations", "Mappings", ...
        }
        let line = line.trim();
        if let Some((values, _)) = line.split_once(':').filter(|(v, _)| {
            let v: Vec<&str> = v.split_whitespace().collect();
            v.len() == header.len() && v.iter().all(|x| x.parse::<u64>().is_ok())
        }) {
            last = values
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            add(&mut sums, (String::new(), String::new()), &last);
            continue;
        }
        // Labels: `k:[v]` items; values may hold spaces (thread names), not `]`.
        let mut rest = line;
        while let Some(open) = rest.find(":[") {
            let key = rest[..open].trim().to_string();
            let close = rest[open..].find(']').expect("label value ends with ]") + open;
            let value = rest[open + 2..close].to_string();
            add(&mut sums, (key, value), &last);
            rest = &rest[close + 1..];
        }
    }
    (header, sums)
}

/// What the JSON lines say, per (label key, label value) like [`parse_raw`]: `[samples, bytes,
/// wait ns]` for the keys `ev` (known contexts with that key) and `event`, `("", "")` for all.
fn json_sums(samples: &[Value]) -> Sums {
    let mut sums = Sums::new();
    for s in samples {
        let event = s["event"].as_str().expect("event").to_string();
        let weight = s["weight"].as_u64().unwrap_or(0);
        let duration = s["duration_ns"].as_u64().unwrap_or(0);
        let v = match event.as_str() {
            "jdk.ObjectAllocationSample" => [1, weight, 0],
            "jdk.JavaMonitorEnter" | "jdk.JavaMonitorWait" | "jdk.ThreadPark" => [1, 0, duration],
            other => panic!("unexpected event {other} in {s}"),
        };
        let mut keys = vec![(String::new(), String::new()), ("event".into(), event)];
        if let Some(ctx) = s["context"][KEY].as_str() {
            keys.push((KEY.into(), ctx.into()));
        }
        for k in keys {
            let slot = sums.entry(k).or_insert_with(|| vec![0; 3]);
            slot.iter_mut().zip(v).for_each(|(s, x)| *s += x);
        }
    }
    sums
}

/// The root frame a collapsed line of `s` starts with (`collapsed_keys=ev`), and its event frame.
fn json_root(s: &Value) -> (String, String) {
    let root = match (&s["context"], s["unknown"].as_str()) {
        (Value::Null, Some(reason)) => format!("[unknown: {reason}]"),
        (Value::Object(ctx), _) => match ctx.get(KEY).and_then(Value::as_str) {
            Some(v) => format!("{KEY}={v}"),
            None => format!("{KEY}=-"),
        },
        _ => panic!("bad context in {s}"),
    };
    (root, format!("[{}]", s["event"].as_str().unwrap_or("?")))
}

/// Per (root frame, event frame): summed values of a collapsed file.
fn collapsed_sums(path: &Path) -> BTreeMap<(String, String), u64> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut sums = BTreeMap::new();
    for line in text.lines() {
        let (stack, n) = line.rsplit_once(' ').expect("VALUE at the end");
        let n: u64 = n
            .parse()
            .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let mut frames = stack.split(';');
        let root = frames.next().unwrap_or_default().to_string();
        let event = frames.next().unwrap_or_default().to_string();
        *sums.entry((root, event)).or_default() += n;
    }
    sums
}

fn values(jdk: u32) {
    let _serial = common::serial();
    let dir = common::target_dir()
        .join("it-out")
        .join(format!("values-{jdk}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let (a, b, c) = (dir.join("a.jsonl"), dir.join("b.pprof"), dir.join("c.txt"));
    let options = format!(
        "sink=jsonl:{},sink=pprof:{},sink=collapsed:{},collapsed_keys={KEY},events=alloc+lock+park",
        a.display(),
        b.display(),
        c.display()
    );
    let out = JvmRun::new(jdk)
        .agent(&options)
        .main("ev.EventWorkload")
        .args(["mix", "5"])
        .timeout(Duration::from_secs(180))
        .run();
    assert!(out.status.success(), "JDK {jdk}:\n{}", out.dump());
    let summary = out
        .agent_lines()
        .into_iter()
        .find(|l| l.starts_with("jfrctx: samples received="))
        .unwrap_or_else(|| panic!("no summary:\n{}", out.dump()))
        .to_string();
    for errors in summary.split(" errors=").skip(1) {
        assert!(errors.starts_with('0'), "a sink failed: {summary}");
    }
    let samples = common::read_json_lines(&a);
    let json = json_sums(&samples);
    let all = &json[&(String::new(), String::new())];
    println!(
        "values JDK {jdk}: {} samples, {} bytes, {:.1} ms of wait; per event {:?}",
        all[0],
        all[1],
        all[2] as f64 / 1e6,
        json.iter()
            .filter(|(k, _)| k.0 == "event")
            .map(|(k, v)| (k.1.as_str(), v))
            .collect::<Vec<_>>()
    );
    for event in [
        "jdk.ObjectAllocationSample",
        "jdk.JavaMonitorEnter",
        "jdk.ThreadPark",
    ] {
        let n = json
            .get(&("event".into(), event.into()))
            .map_or(0, |v| v[0]);
        assert!(
            n >= 10,
            "JDK {jdk}: only {n} {event} samples\n{}",
            out.dump()
        );
    }

    // pprof, read by pprof: the types, then per label the same sums as the JSON lines.
    let (header, raw) = parse_raw(&pprof(&b, &["-raw"]));
    assert_eq!(
        header,
        [
            "samples/count",
            "alloc_space/bytes[dflt]",
            "wait/nanoseconds"
        ],
        "JDK {jdk}: sample types"
    );
    let raw: Sums = raw
        .into_iter()
        .filter(|((k, _), _)| k.is_empty() || k == KEY || k == "event")
        .collect();
    assert_eq!(raw, json, "JDK {jdk}: pprof sums per label vs JSON lines");
    // Each type can be selected, and pprof's own total for it is the JSON lines' sum.
    for (index, unit, sum) in [("alloc_space", "B", all[1]), ("wait", "ns", all[2])] {
        let top = pprof(
            &b,
            &[
                "-top",
                &format!("-sample_index={index}"),
                &format!("-unit={unit}"),
            ],
        );
        let total = format!("of {sum}{unit} total");
        assert!(
            top.contains(&total),
            "JDK {jdk}: -sample_index={index}: {total:?} missing in\n{top}"
        );
    }

    // Collapsed: one file per kind, in its unit, per root and event frame as in the JSON lines.
    assert!(!c.exists(), "JDK {jdk}: untagged collapsed file written");
    let mut bytes: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut wait: BTreeMap<(String, String), u64> = BTreeMap::new();
    for s in &samples {
        let into = match s["event"].as_str() {
            Some("jdk.ObjectAllocationSample") => (&mut bytes, "weight"),
            _ => (&mut wait, "duration_ns"),
        };
        *into.0.entry(json_root(s)).or_default() += s[into.1].as_u64().unwrap_or(0);
    }
    assert_eq!(
        collapsed_sums(&dir.join("c.alloc.txt")),
        bytes,
        "JDK {jdk}: c.alloc.txt"
    );
    assert_eq!(
        collapsed_sums(&dir.join("c.wait.txt")),
        wait,
        "JDK {jdk}: c.wait.txt"
    );
    assert!(bytes.keys().any(|k| k.0 == "ev=alloc_a") && wait.keys().any(|k| k.0 == "ev=park_b"));
}

#[test]
fn values_per_type_jdk17() {
    values(17);
}

#[test]
fn values_per_type_jdk25() {
    values(25);
}

#[test]
fn raw_output_parser() {
    let text = "Samples:\nsamples/count alloc_space/bytes[dflt] wait/nanoseconds\n\
                \x20         3       4096          0: 1 2 3 \n\
                \x20               ev:[alloc_a] event:[jdk.ObjectAllocationSample] thread:[w 1]\n\
                \x20         1          0   15000000: 4 \n\
                \x20               event:[jdk.ThreadPark] thread:[p]\n\
                Locations\n     1: 0x0 M=1 a.B.c :1:0 s=0\n";
    let (header, sums) = parse_raw(text);
    assert_eq!(header.len(), 3);
    let get = |k: &str, v: &str| sums[&(k.to_string(), v.to_string())].clone();
    assert_eq!(get("", ""), [4, 4096, 15_000_000]);
    assert_eq!(get("ev", "alloc_a"), [3, 4096, 0]);
    assert_eq!(get("event", "jdk.ThreadPark"), [1, 0, 15_000_000]);
    assert_eq!(get("thread", "w 1"), [3, 4096, 0]);
}
