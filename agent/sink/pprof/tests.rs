use super::*;
use crate::sink::Policy;
use crate::sink::Sink;
use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::Read;

const PERIOD: i64 = 1_000_000;

use crate::core::model::test_samples::sample;

fn plan(events: &str) -> ValuePlan {
    let sel = crate::core::events::EventSelection::parse(events).unwrap();
    ValuePlan::new(
        &sel,
        PERIOD,
        None,
        crate::core::events::CpuSampler::default(),
        1,
    )
}

fn options() -> SinkOptions {
    SinkOptions {
        period_ns: PERIOD,
        values: plan("cpu"),
        ..SinkOptions::default()
    }
}

fn sink_with(options: &SinkOptions, samples: &[ContextualSample]) -> PprofSink {
    let mut sink = PprofSink::new(Path::new("/unused.pprof"), options, 0);
    for s in samples {
        sink.record(s).unwrap();
    }
    sink
}

/// A sample of a decoded profile, readable: (values, leaf-first "method:line", labels).
type Readable = (Vec<i64>, Vec<String>, BTreeMap<String, String>);

fn readable(p: &Profile) -> Vec<Readable> {
    let s = |i: i64| p.string_table[i as usize].clone();
    p.sample
        .iter()
        .map(|sample| {
            let stack = sample
                .location_id
                .iter()
                .map(|id| {
                    let loc = &p.location[*id as usize - 1];
                    assert_eq!(loc.id, *id);
                    assert_eq!(loc.mapping_id, 1);
                    assert_eq!(loc.line.len(), 1);
                    let f = &p.function[loc.line[0].function_id as usize - 1];
                    format!("{}:{}", s(f.name), loc.line[0].line)
                })
                .collect();
            let labels = sample.label.iter().map(|l| (s(l.key), s(l.str))).collect();
            (sample.value.clone(), stack, labels)
        })
        .collect()
}

fn labels(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn header_sample_types_and_period() {
    let p = sink_with(&options(), &[]).profile(5_000);
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(p.string_table[0], "");
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
    let period_type = p.period_type.unwrap();
    assert_eq!(
        (s(period_type.r#type), s(period_type.unit)),
        ("cpu", "nanoseconds")
    );
    assert_eq!(p.period, PERIOD);
    assert_eq!(s(p.default_sample_type), "cpu");
    assert_eq!(p.duration_nanos, 5_000);
    assert!(p.time_nanos > 0);
    assert_eq!(s(p.comment[0]), "jfrctx");
    assert!(p.sample.is_empty() && p.location.is_empty());
    assert_eq!(p.mapping.len(), 1);
    assert_eq!(s(p.mapping[0].filename), "jvm");
    assert!(p.mapping[0].has_functions && p.mapping[0].has_line_numbers);
}

#[test]
fn identical_stacks_and_labels_aggregate() {
    let stack = [("a.B.leaf", 7), ("a.B.main", -1)];
    let orders = [("endpoint", "/orders"), ("tenant", "acme")];
    let samples = [
        sample(Ok(&orders), "w-1", &stack),
        sample(Ok(&orders), "w-1", &stack),
        sample(Ok(&orders), "w-2", &stack), // other thread
        sample(Ok(&[("endpoint", "/cart")]), "w-1", &stack), // other context
        sample(Ok(&orders), "w-1", &[("a.B.leaf", 8), ("a.B.main", -1)]), // other line
        sample(Ok(&orders), "w-1", &stack),
    ];
    let p = sink_with(&options(), &samples).profile(0);
    let got = readable(&p);
    let stack_of = |leaf_line: i32| vec![format!("a.B.leaf:{leaf_line}"), "a.B.main:0".to_string()];
    let with_thread = |t: &str, ctx: &[(&str, &str)]| {
        let mut l = labels(ctx);
        l.insert("thread".into(), t.into());
        l
    };
    let expected: Vec<Readable> = vec![
        (
            vec![1, PERIOD],
            stack_of(7),
            with_thread("w-1", &[("endpoint", "/cart")]),
        ),
        (
            vec![3, 3 * PERIOD],
            stack_of(7),
            with_thread("w-1", &orders),
        ),
        (vec![1, PERIOD], stack_of(8), with_thread("w-1", &orders)),
        (vec![1, PERIOD], stack_of(7), with_thread("w-2", &orders)),
    ];
    assert_eq!(got, expected);
    // Interning: one function per method, one location per (function, line).
    assert_eq!(p.function.len(), 2);
    assert_eq!(p.location.len(), 3);
    let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, samples.len() as i64);
}

#[test]
fn unknown_and_empty_contexts() {
    let samples = [
        sample(Err(UnknownReason::LogOverflow), "w", &[("m", 1)]),
        sample(Ok(&[]), "w", &[]),
    ];
    let got = readable(&sink_with(&options(), &samples).profile(0));
    assert_eq!(
        got,
        vec![
            (vec![1, PERIOD], vec![], labels(&[("thread", "w")])),
            (
                vec![1, PERIOD],
                vec!["m:1".to_string()],
                labels(&[("thread", "w"), ("jfrctx_unknown", "log_overflow")])
            ),
        ]
    );
}

#[test]
fn cardinality_policies_shape_the_labels() {
    let mut o = options();
    o.cardinality = vec![
        ("request".into(), Policy::Hash),
        ("user".into(), Policy::Drop),
        ("tenant".into(), Policy::Cap(1)),
    ];
    let samples = [
        sample(
            Ok(&[("request", "foobar"), ("tenant", "a"), ("user", "u")]),
            "w",
            &[],
        ),
        sample(Ok(&[("request", "foobar"), ("tenant", "b")]), "w", &[]),
    ];
    let sink = sink_with(&o, &samples);
    let got: Vec<BTreeMap<String, String>> = readable(&sink.profile(0))
        .into_iter()
        .map(|r| r.2)
        .collect();
    assert_eq!(
        got,
        vec![
            labels(&[("request", "bf9cf968"), ("tenant", "a"), ("thread", "w")]),
            labels(&[
                ("request", "bf9cf968"),
                ("tenant", "other"),
                ("thread", "w")
            ]),
        ]
    );
    assert_eq!(
        sink.replaced(),
        vec![
            ("request".into(), 2),
            ("user".into(), 1),
            ("tenant".into(), 1)
        ]
    );
}

fn read_profile(path: &Path) -> Profile {
    let mut bytes = Vec::new();
    GzDecoder::new(File::open(path).unwrap())
        .read_to_end(&mut bytes)
        .unwrap_or_else(|e| panic!("{} is not gzip: {e}", path.display()));
    Profile::decode(bytes.as_slice()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrctx-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn finish_writes_a_gzipped_profile() {
    let dir = temp_dir("pprof-finish");
    let path = dir.join("cpu.pprof");
    let mut sink = PprofSink::open(&path, &options()).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    assert_eq!(sink.name(), format!("pprof:{}", path.display()));
    let s = sample(Ok(&[("endpoint", "/x")]), "w", &[("m", 1)]);
    sink.record(&s).unwrap();
    sink.record(&s).unwrap();
    sink.flush().unwrap();
    sink.finish().unwrap();
    assert!(sink.record(&s).is_err());
    let p = read_profile(&path);
    assert_eq!(p.sample.len(), 1);
    assert_eq!(p.sample[0].value, vec![2, 2 * PERIOD]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rotation_writes_numbered_profiles() {
    let dir = temp_dir("pprof-rotation");
    let path = dir.join("profile.pprof");
    let mut o = options();
    o.interval_ns = Some(1_000);
    let mut sink = PprofSink::new(&path, &o, 10_000);
    let s = sample(Ok(&[]), "w", &[("m", 1)]);
    sink.record(&s).unwrap();
    sink.flush_at(10_999).unwrap();
    assert!(!dir.join("profile.0001.pprof").exists());
    sink.flush_at(11_000).unwrap();
    sink.record(&s).unwrap();
    sink.record(&s).unwrap();
    sink.flush_at(13_100).unwrap(); // intervals 2 and 3 over: 3 is empty
    sink.record(&s).unwrap();
    sink.finish().unwrap();
    let count = |n: &str| -> i64 {
        let p = read_profile(&dir.join(n));
        p.sample.iter().map(|s| s.value[0]).sum()
    };
    assert_eq!(count("profile.0001.pprof"), 1);
    assert_eq!(count("profile.0002.pprof"), 2);
    assert_eq!(count("profile.0003.pprof"), 0);
    assert_eq!(count("profile.0004.pprof"), 1);
    assert!(!dir.join("profile.0005.pprof").exists());
    assert!(!path.exists());
    let p = read_profile(&dir.join("profile.0002.pprof"));
    assert_eq!(p.duration_nanos, 2_100);
    assert_eq!(p.string_table[p.comment[0] as usize], "jfrctx interval 2");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A sample of `event` on thread `w` in method `m`.
fn event(event: &str, duration_ns: i64, weight: i64) -> ContextualSample {
    let mut s = sample(Ok(&[]), "w", &[("m", 1)]);
    s.event = Arc::from(event);
    s.duration_ns = duration_ns;
    s.weight = weight;
    s
}

fn types(p: &Profile) -> Vec<(String, String)> {
    let s = |i: i64| p.string_table[i as usize].clone();
    p.sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect()
}

#[test]
fn each_event_adds_its_value_to_its_own_type() {
    let mut o = options();
    o.values = plan("cpu+alloc+lock+park");
    let samples = [
        event("jdk.ObjectAllocationSample", 0, 4096),
        event("jdk.ObjectAllocationSample", 0, 100),
        event("jdk.CPUTimeSample", 0, 0),
        event("jdk.ThreadPark", 15_000_000, 0),
        event("jdk.JavaMonitorEnter", 12_000_000, 0),
        event("jdk.ThreadPark", 20_000_000, 0),
    ];
    let p = sink_with(&o, &samples).profile(0);
    let t = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        types(&p),
        [
            t("samples", "count"),
            t("cpu", "nanoseconds"),
            t("alloc_space", "bytes"),
            t("wait", "nanoseconds")
        ]
    );
    let s = |i: i64| p.string_table[i as usize].as_str();
    assert_eq!(s(p.default_sample_type), "cpu");
    let period_type = p.period_type.unwrap();
    assert_eq!(s(period_type.r#type), "cpu");
    assert_eq!(p.period, PERIOD);
    let m = vec!["m:1".to_string()];
    let with_event = |e: &str| labels(&[("thread", "w"), ("event", e)]);
    assert_eq!(
        readable(&p),
        vec![
            (vec![1, PERIOD, 0, 0], m.clone(), labels(&[("thread", "w")])),
            (
                vec![1, 0, 0, 12_000_000],
                m.clone(),
                with_event("jdk.JavaMonitorEnter")
            ),
            (
                vec![2, 0, 4196, 0],
                m.clone(),
                with_event("jdk.ObjectAllocationSample")
            ),
            (vec![2, 0, 0, 35_000_000], m, with_event("jdk.ThreadPark")),
        ]
    );
}

#[test]
fn types_come_from_the_enabled_events_not_the_samples() {
    // No sample at all: the types are there anyway (every rotated file has the same ones).
    let mut o = options();
    o.values = plan("park+alloc");
    let p = sink_with(&o, &[]).profile(0);
    let names: Vec<String> = types(&p).into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["samples", "alloc_space", "wait"]);
    let s = |i: i64| p.string_table[i as usize].as_str();
    // Without cpu: the first kind other than samples; no sampling period.
    assert_eq!(s(p.default_sample_type), "alloc_space");
    assert!(p.period_type.is_none() && p.period == 0);
    // An unknown event: timed samples go to wait, instant ones are only counted.
    o.values = plan("jdk.GCPhasePause");
    let p = sink_with(&o, &[event("jdk.X", 0, 0), event("jdk.X", 5, 0)]).profile(0);
    let names: Vec<String> = types(&p).into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["samples", "wait"]);
    assert_eq!(p.sample[0].value, vec![2, 5]);
    // A kind the events cannot produce is added rather than lost.
    o.values = plan("park");
    let p = sink_with(&o, &[event("jdk.ExecutionSample", 0, 0)]).profile(0);
    let names: Vec<String> = types(&p).into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["samples", "wait", "cpu"]);
    assert_eq!(p.sample[0].value, vec![1, 0, PERIOD]);
}

#[test]
fn real_sampling_periods_give_the_values_and_the_header_period() {
    // Another recording made the JVM sample every 10 ms for two samples, the agent's 20 ms for
    // one: each is worth its own period, and the header says the shortest.
    let mut o = options();
    o.values = plan("cpu");
    let samples = [
        event("jdk.ExecutionSample", 0, 10_000_000),
        event("jdk.ExecutionSample", 0, 10_000_000),
        event("jdk.ExecutionSample", 0, 20_000_000),
    ];
    let mut sink = sink_with(&o, &samples);
    let p = sink.profile(0);
    assert_eq!(p.period, 10_000_000);
    assert_eq!(p.sample.len(), 1);
    assert_eq!(p.sample[0].value, vec![3, 40_000_000]);
    // A new output starts over: without samples the configured period.
    sink.aggregate_mut().profile.reset(0);
    assert_eq!(sink.profile(0).period, PERIOD);
}
