use super::*;
use crate::core::model::{ContextMap, ThreadInfo};
use crate::sink::spec::Output;
use crate::sink::Policy;
use std::path::Path;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Fails `record` from the `fail_at`-th call on (0-based); logs calls into `log`.
struct Fake {
    name: String,
    fail_at: Option<usize>,
    calls: Arc<Mutex<Vec<String>>>,
    n: usize,
}

impl Sink for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn record(&mut self, _: &ContextualSample) -> io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{} record", self.name));
        self.n += 1;
        match self.fail_at {
            Some(k) if self.n > k => Err(io::Error::other("disk full")),
            _ => Ok(()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{} flush", self.name));
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("{} finish", self.name));
        Ok(())
    }
}

fn fake(name: &str, fail_at: Option<usize>, calls: &Arc<Mutex<Vec<String>>>) -> Box<dyn Sink> {
    Box::new(Fake {
        name: name.into(),
        fail_at,
        calls: Arc::clone(calls),
        n: 0,
    })
}

fn sample() -> ContextualSample {
    ContextualSample {
        event: Arc::from("jdk.ExecutionSample"),
        time_ns: 1,
        duration_ns: 0,
        thread: ThreadInfo {
            id: Some(1),
            name: Arc::from("main"),
            is_virtual: false,
        },
        context: Ok(Arc::new(ContextMap::default())),
        weight: 0,
        frames: vec![],
        truncated: false,
    }
}

fn stats(name: &str, records: u64, errors: u64) -> SinkStats {
    SinkStats {
        name: name.into(),
        records,
        errors,
    }
}

#[test]
fn a_failing_sink_is_disabled_and_the_others_continue() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut set = SinkSet::new();
    set.push(fake("good", None, &calls));
    set.push(fake("bad", Some(2), &calls));
    assert_eq!(set.active(), 2);
    for _ in 0..5 {
        set.record_all(&sample());
    }
    set.flush_all();
    set.finish_all();
    set.finish_all();
    assert_eq!(set.stats(), vec![stats("good", 5, 0), stats("bad", 2, 3)]);
    let calls = calls.lock().unwrap();
    let bad_calls = calls.iter().filter(|c| c.starts_with("bad")).count();
    assert_eq!(bad_calls, 3, "{calls:?}");
    assert_eq!(calls.iter().filter(|c| *c == "good finish").count(), 1);
    assert_eq!(set.active(), 0);
}

#[test]
fn records_after_finish_count_as_errors() {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut set = SinkSet::new();
    set.push(fake("a", None, &calls));
    set.record_all(&sample());
    set.finish_all();
    set.record_all(&sample());
    assert_eq!(set.stats(), vec![stats("a", 1, 1)]);
}

#[test]
fn open_reports_an_unwritable_path() {
    let spec = SinkSpec::new(
        SinkFormat::Jsonl,
        Output::File(PathBuf::from("/nonexistent-jfrctx-dir/x-%p.jsonl")),
    );
    let err = open(&spec, 12).err().expect("open must fail");
    assert_eq!(
        err,
        "cannot open jsonl sink /nonexistent-jfrctx-dir/x-12.jsonl: No such file or directory"
    );
    assert!(SinkSet::open_all(&[spec], 1).is_err());
}

#[test]
fn open_resolves_pid_and_names_the_sink() {
    let dir = std::env::temp_dir().join(format!("jfrctx-sink-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spec = SinkSpec::new(SinkFormat::Jsonl, Output::File(dir.join("s-%p.jsonl")));
    let mut set = SinkSet::open_all(&[spec], 77).unwrap();
    let path = dir.join("s-77.jsonl");
    assert_eq!(set.stats()[0].name, format!("jsonl:{}", path.display()));
    set.record_all(&sample());
    set.finish_all();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn map(kv: &[(&str, &str)]) -> ContextMap {
    let mut entries = kv.to_vec();
    entries.sort();
    ContextMap::from_pairs(&entries)
}

fn labels(l: &[(Arc<str>, Arc<str>)]) -> Vec<(String, String)> {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn fnv1a_known_values() {
    assert_eq!(fnv1a_hex(""), "811c9dc5");
    assert_eq!(fnv1a_hex("a"), "e40c292c");
    assert_eq!(fnv1a_hex("foobar"), "bf9cf968");
}

#[test]
fn labeler_keeps_everything_by_default() {
    let mut l = Labeler::new(&[("endpoint".into(), Policy::Keep)]);
    let m = map(&[("endpoint", "/a"), ("tenant", "t")]);
    assert_eq!(
        labels(&l.apply(&m)),
        pairs(&[("endpoint", "/a"), ("tenant", "t")])
    );
    assert!(l.replaced().is_empty());
}

#[test]
fn labeler_drop_and_hash() {
    let mut l = Labeler::new(&[
        ("user".into(), Policy::Drop),
        ("request".into(), Policy::Hash),
    ]);
    let m = map(&[("endpoint", "/a"), ("request", "foobar"), ("user", "bob")]);
    assert_eq!(
        labels(&l.apply(&m)),
        pairs(&[("endpoint", "/a"), ("request", "bf9cf968")])
    );
    l.apply(&map(&[("user", "eve")]));
    assert_eq!(
        l.replaced(),
        vec![("user".to_string(), 2), ("request".to_string(), 1)]
    );
}

#[test]
fn labeler_cap_keeps_the_first_distinct_values() {
    let mut l = Labeler::new(&[("tenant".into(), Policy::Cap(2))]);
    let seq = ["a", "b", "a", "c", "b", "d", "c"];
    let got: Vec<String> = seq
        .iter()
        .map(|v| l.apply(&map(&[("tenant", v)]))[0].1.to_string())
        .collect();
    assert_eq!(got, ["a", "b", "a", OTHER, "b", OTHER, OTHER]);
    assert_eq!(l.replaced(), vec![("tenant".to_string(), 3)]);
}

#[test]
fn rotation_without_interval_never_rotates() {
    let mut r = Rotation::new(None, 0);
    assert!(!r.due(i64::MAX));
    assert_eq!(r.peek(), None);
    assert_eq!(r.take(), None);
}

#[test]
fn rotation_counts_intervals_from_the_start() {
    let mut r = Rotation::new(Some(100), 50);
    assert_eq!(r.peek(), Some(1));
    assert!(!r.due(149));
    assert!(r.due(150));
    assert_eq!(r.take(), Some(1));
    assert!(!r.due(249));
    // A stall over two intervals: both are due, one after the other.
    assert!(r.due(360));
    assert_eq!(r.take(), Some(2));
    assert!(r.due(360));
    assert_eq!(r.take(), Some(3));
    assert!(!r.due(360));
    assert_eq!(r.peek(), Some(4));
}

#[test]
fn numbered_paths() {
    let n = |p: &str, i: Option<u32>| numbered(Path::new(p), i).display().to_string();
    assert_eq!(n("/t/profile.pprof", None), "/t/profile.pprof");
    assert_eq!(n("/t/profile.pprof", Some(1)), "/t/profile.0001.pprof");
    assert_eq!(n("/t/profile.pprof", Some(12345)), "/t/profile.12345.pprof");
    assert_eq!(n("/t/cpu.pb.gz", Some(2)), "/t/cpu.0002.pb.gz");
    assert_eq!(n("/t/a.b.txt", Some(3)), "/t/a.b.0003.txt");
    assert_eq!(n("stacks", Some(4)), "stacks.0004");
    assert_eq!(n("/t/.hidden", Some(5)), "/t/.hidden.0005");
    assert_eq!(n("/t.d/x", Some(6)), "/t.d/x.0006");
}

#[test]
fn open_reports_unusable_targets_of_aggregated_sinks() {
    for (format, expect) in [
        (
            SinkFormat::Pprof,
            "cannot open pprof sink /nonexistent-jfrctx-dir/p",
        ),
        (
            SinkFormat::Collapsed,
            "cannot open collapsed sink /nonexistent-jfrctx-dir/p",
        ),
    ] {
        let spec = SinkSpec::new(format, Output::File("/nonexistent-jfrctx-dir/p".into()));
        assert_eq!(
            open(&spec, 1).err().unwrap(),
            format!("{expect}: No such file or directory")
        );
    }
    let spec = SinkSpec::new(SinkFormat::Svg, Output::File("/proc/jfrctx-svg".into()));
    let err = open(&spec, 1).err().unwrap();
    assert!(
        err.starts_with("cannot open svg sink /proc/jfrctx-svg: "),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let spec = SinkSpec::new(SinkFormat::Pprof, Output::Stdout);
    assert_eq!(
        open(&spec, 1).err().unwrap(),
        "cannot open pprof sink -: cannot write to stdout"
    );
}

#[test]
fn open_creates_the_first_outputs_and_reports_replacements() {
    let dir = std::env::temp_dir().join(format!("jfrctx-open-agg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let options = SinkOptions {
        interval_ns: Some(60_000_000_000),
        cardinality: vec![("user".into(), Policy::Drop)],
        ..SinkOptions::default()
    };
    let mut specs = Vec::new();
    for (format, target) in [
        (SinkFormat::Pprof, "p-%p.pprof"),
        (SinkFormat::Collapsed, "c.txt"),
        (SinkFormat::Svg, "svg/nested"),
        (SinkFormat::Jsonl, "j.jsonl"),
    ] {
        let mut spec = SinkSpec::new(format, Output::File(dir.join(target)));
        spec.options = options.clone();
        specs.push(spec);
    }
    let mut set = SinkSet::open_all(&specs, 9).unwrap();
    assert!(dir.join("p-9.0001.pprof").is_file());
    assert!(dir.join("c.0001.txt").is_file());
    assert!(dir.join("svg/nested/0001/index.txt").is_file());
    let mut s = sample();
    s.context = Ok(Arc::new(map(&[("user", "bob")])));
    set.record_all(&s);
    set.finish_all();
    let replaced = set.replaced();
    assert_eq!(replaced.len(), 3, "{replaced:?}");
    for (name, r) in &replaced {
        assert_eq!(r, &vec![("user".to_string(), 1)], "{name}");
    }
    assert_eq!(set.stats().iter().map(|s| s.errors).sum::<u64>(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}
