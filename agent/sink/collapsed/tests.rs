use super::*;
use crate::core::events::EventSelection;
use crate::sink::Policy;
use crate::sink::Sink;
use std::sync::Arc;

/// The sampling period of the tests: each CPU sample is worth 1 ms (1000000 ns).
const PERIOD: i64 = 1_000_000;

fn plan(events: &str) -> ValuePlan {
    ValuePlan::new(
        &EventSelection::parse(events).unwrap(),
        PERIOD,
        None,
        crate::core::events::CpuSampler::default(),
        1,
    )
}

fn sample(ctx: Result<&[(&str, &str)], UnknownReason>, stack: &[&str]) -> ContextualSample {
    let frames: Vec<(&str, i32)> = stack.iter().map(|m| (*m, 3)).collect();
    crate::core::model::test_samples::sample(ctx, "main", &frames)
}

fn options(keys: &[&str]) -> SinkOptions {
    SinkOptions {
        collapsed_keys: keys.iter().map(|k| k.to_string()).collect(),
        period_ns: PERIOD,
        values: plan("cpu"),
        ..SinkOptions::default()
    }
}

fn text(sink_options: &SinkOptions, samples: &[ContextualSample]) -> String {
    let mut sink = CollapsedSink::new(&Output::Stdout, sink_options, 0);
    for s in samples {
        sink.record(s).unwrap();
    }
    assert_eq!(sink.aggregate().kinds(), [ValueKind::CpuNanos]);
    sink.aggregate().text(ValueKind::CpuNanos)
}

#[test]
fn lines_are_root_first_aggregated_and_sorted() {
    let leaf_first = ["a.B.leaf", "a.B.mid", "a.B.main"];
    let samples = [
        sample(Ok(&[("endpoint", "/x")]), &leaf_first),
        sample(Ok(&[]), &["a.B.other", "a.B.main"]),
        sample(Ok(&[("endpoint", "/y")]), &leaf_first),
    ];
    assert_eq!(
        text(&options(&[]), &samples),
        "a.B.main;a.B.mid;a.B.leaf 2000000\na.B.main;a.B.other 1000000\n"
    );
}

#[test]
fn chosen_keys_are_root_frames_and_missing_ones_are_dashes() {
    let samples = [
        sample(Ok(&[("endpoint", "/orders"), ("tenant", "acme")]), &["m"]),
        sample(Ok(&[("endpoint", "/orders"), ("tenant", "acme")]), &["m"]),
        sample(Ok(&[("tenant", "acme"), ("x", "1")]), &["m"]),
        sample(Ok(&[]), &[]),
        sample(Err(UnknownReason::HistoryExpired), &["m"]),
    ];
    assert_eq!(
        text(&options(&["endpoint", "tenant"]), &samples),
        "[unknown: history_expired];m 1000000\n\
         endpoint=-;tenant=- 1000000\n\
         endpoint=-;tenant=acme;m 1000000\n\
         endpoint=/orders;tenant=acme;m 2000000\n"
    );
}

#[test]
fn unknown_and_empty_samples_without_keys() {
    let samples = [
        sample(Err(UnknownReason::NoThread), &[]),
        sample(Ok(&[]), &[]),
    ];
    assert_eq!(
        text(&options(&[]), &samples),
        "[no frames] 1000000\n[unknown: no_thread] 1000000\n"
    );
}

/// A sample of `event` with the given duration and weight.
fn event(event: &str, duration_ns: i64, weight: i64, stack: &[&str]) -> ContextualSample {
    let mut s = sample(Ok(&[("k", "v")]), stack);
    s.event = Arc::from(event);
    s.duration_ns = duration_ns;
    s.weight = weight;
    s
}

#[test]
fn each_value_kind_gets_its_own_output_in_its_unit() {
    let o = SinkOptions {
        collapsed_keys: vec!["k".into()],
        values: plan("cpu+alloc+lock+park"),
        ..options(&[])
    };
    let mut sink = CollapsedSink::new(&Output::Stdout, &o, 0);
    for s in [
        event("jdk.CPUTimeSample", 0, 0, &["leaf", "main"]),
        event("jdk.ExecutionSample", 0, 0, &["leaf", "main"]),
        event("jdk.ObjectAllocationSample", 0, 4096, &["alloc", "main"]),
        event("jdk.ObjectAllocationSample", 0, 100, &["alloc", "main"]),
        event("jdk.ThreadPark", 15_000_000, 0, &["park", "main"]),
        event("jdk.JavaMonitorEnter", 12_000_000, 0, &["lock", "main"]),
        event("jdk.ThreadPark", 20_000_000, 0, &["park", "main"]),
    ] {
        sink.record(&s).unwrap();
    }
    use ValueKind::*;
    assert_eq!(sink.aggregate().kinds(), [CpuNanos, AllocBytes, WaitNanos]);
    assert_eq!(sink.aggregate().text(CpuNanos), "k=v;main;leaf 2000000\n");
    assert_eq!(
        sink.aggregate().text(AllocBytes),
        "k=v;[jdk.ObjectAllocationSample];main;alloc 4196\n"
    );
    assert_eq!(
        sink.aggregate().text(WaitNanos),
        "k=v;[jdk.JavaMonitorEnter];main;lock 12000000\n\
         k=v;[jdk.ThreadPark];main;park 35000000\n"
    );
    assert_eq!(sink.aggregate().text(Count), "");
}

#[test]
fn output_paths_per_kind() {
    let p = Path::new("/d/stacks.txt");
    let single = plan("alloc");
    assert_eq!(kind_path(p, ValueKind::AllocBytes, &single), p);
    // Another kind than the plan's only one (which the events cannot produce) is tagged.
    assert_eq!(
        kind_path(p, ValueKind::WaitNanos, &single),
        Path::new("/d/stacks.wait.txt")
    );
    let several = plan("cpu+alloc+jdk.GCPhasePause");
    let paths: Vec<PathBuf> = several
        .kinds()
        .iter()
        .map(|k| numbered(&kind_path(p, *k, &several), Some(3)))
        .collect();
    let names = [
        "stacks.samples.0003.txt",
        "stacks.cpu.0003.txt",
        "stacks.alloc.0003.txt",
        "stacks.wait.0003.txt",
    ];
    assert_eq!(paths, names.map(|n| Path::new("/d").join(n)));
}

#[test]
fn stdout_takes_a_single_kind() {
    let o = SinkOptions {
        values: plan("cpu+park"),
        ..options(&[])
    };
    let err = CollapsedSink::open(&Output::Stdout, &o).err().unwrap();
    assert_eq!(
        err.to_string(),
        "stdout holds one value type but the events give 2 (cpu, wait): give a path"
    );
    assert!(CollapsedSink::open(&Output::Stdout, &options(&[])).is_ok());
}

#[test]
fn several_kinds_write_tagged_files_every_interval() {
    let dir = std::env::temp_dir().join(format!("jfrctx-collapsed-kinds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.txt");
    let o = SinkOptions {
        values: plan("alloc+park"),
        interval_ns: Some(1_000),
        ..options(&[])
    };
    let mut sink = CollapsedSink::open(&Output::File(path.clone()), &o).unwrap();
    assert!(dir.join("s.alloc.0001.txt").exists() && dir.join("s.wait.0001.txt").exists());
    sink.record(&event("jdk.ThreadPark", 7, 0, &["p"])).unwrap();
    sink.finish().unwrap();
    let read = |n: &str| std::fs::read_to_string(dir.join(n)).unwrap();
    assert_eq!(read("s.alloc.0001.txt"), "");
    assert_eq!(read("s.wait.0001.txt"), "[jdk.ThreadPark];p 7\n");
    assert!(!path.exists() && !dir.join("s.0001.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn separators_in_names_are_neutralised() {
    let samples = [sample(Ok(&[("k", "a;b\nc")]), &["x;y"])];
    assert_eq!(text(&options(&["k"]), &samples), "k=a_b c;x_y 1000000\n");
}

#[test]
fn cardinality_applies_to_root_frames() {
    let mut o = options(&["req", "tenant"]);
    o.cardinality = vec![
        ("req".into(), Policy::Cap(1)),
        ("tenant".into(), Policy::Drop),
    ];
    let samples = [
        sample(Ok(&[("req", "r1"), ("tenant", "t")]), &["m"]),
        sample(Ok(&[("req", "r2"), ("tenant", "t")]), &["m"]),
        sample(Ok(&[("req", "r1")]), &["m"]),
    ];
    let mut sink = CollapsedSink::new(&Output::Stdout, &o, 0);
    for s in &samples {
        sink.record(s).unwrap();
    }
    assert_eq!(
        sink.aggregate().text(ValueKind::CpuNanos),
        "req=other;tenant=-;m 1000000\nreq=r1;tenant=-;m 2000000\n"
    );
    assert_eq!(
        sink.replaced(),
        vec![("req".to_string(), 1), ("tenant".to_string(), 2)]
    );
}

#[test]
fn rotation_writes_one_file_per_interval_and_a_final_one() {
    let dir = std::env::temp_dir().join(format!("jfrctx-collapsed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stacks.txt");
    let mut o = options(&[]);
    o.interval_ns = Some(1_000);
    let mut sink = CollapsedSink::new(&Output::File(path.clone()), &o, 0);
    sink.record(&sample(Ok(&[]), &["a"])).unwrap();
    sink.flush_at(999).unwrap();
    sink.record(&sample(Ok(&[]), &["a"])).unwrap();
    sink.flush_at(1_000).unwrap(); // interval 1 over
    sink.flush_at(3_500).unwrap(); // intervals 2 (empty) and 3 over
    sink.record(&sample(Ok(&[]), &["b"])).unwrap();
    sink.finish().unwrap();
    assert!(sink.record(&sample(Ok(&[]), &["b"])).is_err());
    let read = |n: u32| std::fs::read_to_string(numbered(&path, Some(n))).unwrap();
    assert_eq!(read(1), "a 2000000\n");
    assert_eq!(read(2), "");
    assert_eq!(read(3), "");
    assert_eq!(read(4), "b 1000000\n");
    assert!(!numbered(&path, Some(5)).exists());
    assert!(dir.join("stacks.0004.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
