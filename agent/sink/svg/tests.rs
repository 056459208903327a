use super::*;
use crate::sink::Policy;
use crate::sink::Sink;
use std::sync::Arc;

fn sample(ctx: Result<&[(&str, &str)], UnknownReason>, stack: &[&str]) -> ContextualSample {
    let frames: Vec<(&str, i32)> = stack.iter().map(|m| (*m, 1)).collect();
    crate::core::model::test_samples::sample(ctx, "main", &frames)
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jfrctx-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

#[test]
fn file_names_are_sanitized_and_unique() {
    let mut used = HashSet::new();
    let mut f = |k: &str, v: &str| file_name(k, v, &mut used);
    assert_eq!(f("endpoint", "/orders"), "endpoint-_orders.svg");
    assert_eq!(f("endpoint", "_orders"), "endpoint-_orders.2.svg");
    assert_eq!(f("endpoint", "?orders"), "endpoint-_orders.3.svg");
    assert_eq!(f("gt", "alpha"), "gt-alpha.svg");
    assert_eq!(f("t", "Ünï code/../x y"), "t-_n__code_.._x_y.svg");
    assert_eq!(f(".k", "v"), "_k-v.svg");
    let long = f("k", &"x".repeat(500));
    assert_eq!(long.len(), MAX_STEM + ".svg".len());
}

#[test]
fn writes_all_per_value_svgs_and_an_index() {
    let dir = temp_dir("svg-write");
    let options = SinkOptions {
        svg_key: "gt".into(),
        ..SinkOptions::default()
    };
    let mut sink = SvgSink::open(&dir, &options).unwrap();
    let samples = [
        sample(Ok(&[("gt", "alpha")]), &["leaf", "main"]),
        sample(Ok(&[("gt", "alpha")]), &["leaf", "main"]),
        sample(Ok(&[("gt", "a/b"), ("x", "1")]), &["w.B.elsewhere", "main"]),
        sample(Ok(&[]), &["idle"]),
        sample(Err(UnknownReason::NoThread), &[]),
    ];
    for s in &samples {
        sink.record(s).unwrap();
    }
    sink.flush().unwrap();
    sink.finish().unwrap();
    assert!(sink.record(&samples[0]).is_err());
    let index = fs::read_to_string(dir.join("index.txt")).unwrap();
    assert_eq!(
        index,
        "all.svg\t100000000\t5\tall\ngt-a_b.svg\t20000000\t1\tgt=a/b\n\
         gt-alpha.svg\t40000000\t2\tgt=alpha\n"
    );
    let all = fs::read_to_string(dir.join("all.svg")).unwrap();
    assert!(all.starts_with("<?xml"), "{}", &all[..100]);
    // The default plan: events=cpu, 20 ms per sample.
    assert!(all.contains("jfrctx — all — 100.0 ms of CPU in 5 samples"));
    assert!(all.contains("ms of CPU, "), "tooltips in ms of CPU");
    for frame in ["gt=alpha", "gt=a/b", "gt=-", "[unknown: no_thread]", "idle"] {
        assert!(all.contains(frame), "{frame} missing in all.svg");
    }
    let alpha = fs::read_to_string(dir.join("gt-alpha.svg")).unwrap();
    assert!(alpha.contains("jfrctx — gt=alpha — 40.0 ms of CPU in 2 samples"));
    assert!(alpha.contains("leaf") && !alpha.contains("w.B.elsewhere"));
    assert!(alpha.trim_end().ends_with("</svg>"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn empty_outputs_and_rotation_directories() {
    let dir = temp_dir("svg-rotation");
    let options = SinkOptions {
        interval_ns: Some(100),
        cardinality: vec![("endpoint".into(), Policy::Cap(1))],
        ..SinkOptions::default()
    };
    let mut sink = SvgSink::new(&dir, &options, 0);
    sink.record(&sample(Ok(&[("endpoint", "/a")]), &["m"]))
        .unwrap();
    sink.record(&sample(Ok(&[("endpoint", "/b")]), &["m"]))
        .unwrap();
    sink.flush_at(100).unwrap();
    sink.flush_at(250).unwrap();
    sink.finish().unwrap();
    let index = |n: &str| fs::read_to_string(dir.join(n).join("index.txt")).unwrap();
    assert_eq!(
        index("0001"),
        "all.svg\t40000000\t2\tall\nendpoint-_a.svg\t20000000\t1\tendpoint=/a\n\
         endpoint-other.svg\t20000000\t1\tendpoint=other\n"
    );
    assert_eq!(index("0002"), "all.svg\t0\t0\tall\n");
    assert_eq!(index("0003"), "all.svg\t0\t0\tall\n");
    let empty = fs::read_to_string(dir.join("0002/all.svg")).unwrap();
    assert!(
        empty.starts_with("<?xml") && empty.contains("jfrctx — all — 0.0 ms of CPU in 0 samples")
    );
    assert_eq!(sink.replaced(), vec![("endpoint".to_string(), 1)]);
    assert!(!dir.join("0004").exists());
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn titles_are_escaped_in_the_empty_placeholder() {
    let dir = temp_dir("svg-escape");
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.svg");
    render(&path, "k=<a&b>", ValueKind::Count, Tally::default(), &[]).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.contains("k=&lt;a&amp;b&gt;") && !text.contains("<a&b>"));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn each_value_kind_gets_a_subdirectory_in_its_unit() {
    let dir = temp_dir("svg-kinds");
    let sel = crate::core::events::EventSelection::parse("alloc+park").unwrap();
    let options = SinkOptions {
        svg_key: "gt".into(),
        interval_ns: Some(100),
        values: ValuePlan::new(
            &sel,
            1_000_000,
            None,
            crate::core::events::CpuSampler::default(),
            1,
        ),
        ..SinkOptions::default()
    };
    let mut sink = SvgSink::open(&dir, &options).unwrap();
    assert!(dir.join("0001/alloc/index.txt").exists() && dir.join("0001/wait/index.txt").exists());
    let mut park = sample(Ok(&[("gt", "a")]), &["park", "main"]);
    park.event = Arc::from("jdk.ThreadPark");
    park.duration_ns = 15_000_000;
    let mut alloc = sample(Ok(&[("gt", "a")]), &["alloc", "main"]);
    alloc.event = Arc::from("jdk.ObjectAllocationSample");
    alloc.weight = 4096;
    for s in [&park, &park, &alloc] {
        sink.record(s).unwrap();
    }
    sink.finish().unwrap();
    let read = |n: &str| fs::read_to_string(dir.join(n)).unwrap();
    assert_eq!(
        read("0001/wait/index.txt"),
        "all.svg\t30000000\t2\tall\ngt-a.svg\t30000000\t2\tgt=a\n"
    );
    assert_eq!(
        read("0001/alloc/index.txt"),
        "all.svg\t4096\t1\tall\ngt-a.svg\t4096\t1\tgt=a\n"
    );
    let wait = read("0001/wait/gt-a.svg");
    assert!(wait.contains("jfrctx — gt=a — 30.0 ms of wait in 2 samples"));
    assert!(wait.contains("[jdk.ThreadPark]") && wait.contains("(30 ms of wait, 100"));
    let bytes = read("0001/alloc/all.svg");
    assert!(bytes.contains("jfrctx — all — 4096 bytes allocated in 1 samples"));
    assert!(
        bytes.contains("all (4,096 bytes allocated, 100%)"),
        "tooltip in bytes"
    );
    assert!(!dir.join("0001/all.svg").exists() && !dir.join("0002").exists());
    fs::remove_dir_all(&dir).unwrap();
}
