use super::*;
use crate::core::model::{ContextMap, ThreadInfo};
use std::sync::Arc;

fn sample(context: Result<Arc<ContextMap>, UnknownReason>) -> ContextualSample {
    ContextualSample {
        event: Arc::from("jdk.ExecutionSample"),
        time_ns: 0,
        duration_ns: 0,
        thread: ThreadInfo {
            id: Some(1),
            name: Arc::from("t"),
            is_virtual: false,
        },
        context,
        weight: 0,
        frames: vec![],
        truncated: false,
    }
}

fn with(k: &str, v: &str) -> Result<Arc<ContextMap>, UnknownReason> {
    Ok(Arc::new(ContextMap::from_pairs(&[(k, v)])))
}

fn sink(name: &str, records: u64, errors: u64) -> SinkStats {
    SinkStats {
        name: name.into(),
        records,
        errors,
    }
}

#[test]
fn the_example_line() {
    let mut c = Counters::new();
    for _ in 0..1000 {
        c.add(&sample(with("endpoint", "/orders")));
    }
    for _ in 0..200 {
        c.add(&sample(Ok(Arc::new(ContextMap::default()))));
    }
    for _ in 0..30 {
        c.add(&sample(Err(UnknownReason::NoThread)));
    }
    for _ in 0..4 {
        c.add(&sample(Err(UnknownReason::HistoryExpired)));
    }
    c.sinks.push(sink("jsonl:/tmp/x", 1234, 0));
    c.contexts = 57;
    c.threads = 12;
    assert!(c.balanced());
    assert_eq!(
        c.line(),
        "jfrctx: samples received=1234 with_context=1000 without_context=200 unknown=34 \
         (no_thread=30 history_expired=4) dropped=0; sinks jsonl:/tmp/x records=1234 \
         errors=0; contexts=57 threads=12 lost_entries=0"
    );
    c.spare_rings = 10;
    c.grown_rings = 2;
    assert!(
        c.line()
            .ends_with("contexts=57 threads=12 spare_rings=10 grown_rings=2 lost_entries=0"),
        "{}",
        c.line()
    );
}

#[test]
fn filtered_is_shown_apart_from_the_invariant() {
    let mut c = Counters::new();
    c.add(&sample(with("k", "v")));
    c.add(&sample(Ok(Arc::new(ContextMap::default()))));
    c.filtered = 1;
    assert!(c.balanced());
    assert_eq!(
        c.line(),
        "jfrctx: samples received=2 with_context=1 without_context=1 unknown=0 dropped=0 \
         filtered=1; sinks none; contexts=0 threads=0 lost_entries=0"
    );
}

#[test]
fn push_and_cardinality_tails() {
    let mut c = Counters::new();
    c.add(&sample(with("request", "r-1")));
    c.sinks.push(sink("pprof:/p", 1, 0));
    c.push = Some(PushFigures {
        target: "http://127.0.0.1:4040".into(),
        profiles: 7,
        pushed: 3,
        refused: 2,
        failed: 1,
        retried: 7,
        dropped: 1,
        last_refusal: Some((422, "{\"code\":\"unknown\"}".into())),
        left_out: vec![("request".into(), 90), ("thread".into(), 4)],
        lost_samples: 12,
    });
    let both = vec![("request".to_string(), 1234), ("tenant".to_string(), 0)];
    c.replaced = vec![
        ("pprof:/p".into(), both.clone()),
        ("push:http://127.0.0.1:4040".into(), both),
    ];
    assert!(c.balanced());
    assert_eq!(
        c.line(),
        "jfrctx: samples received=1 with_context=1 without_context=0 unknown=0 dropped=0; \
         sinks pprof:/p records=1 errors=0; contexts=0 threads=0 lost_entries=0; push \
         http://127.0.0.1:4040 profiles=7 pushed=3 refused=2 failed=1 retried=7 dropped=1 \
         left_out=request:90,thread:4 (last refusal: HTTP 422: {\"code\":\"unknown\"}); \
         cardinality: request replaced 1234, tenant replaced 0"
    );
}

#[test]
fn replaced_counts_that_differ_name_their_sinks() {
    let r = vec![
        ("pprof:/p".to_string(), vec![("request".to_string(), 10)]),
        ("svg:/d".to_string(), vec![("request".to_string(), 4)]),
        ("collapsed:/c".to_string(), vec![("user".to_string(), 2)]),
    ];
    assert_eq!(
        replaced_text(&r),
        "request replaced 10 (pprof:/p) 4 (svg:/d), user replaced 2"
    );
    assert_eq!(replaced_text(&[]), "");
}

#[test]
fn cpu_sampler_and_not_selected_tails() {
    let mut c = Counters::new();
    c.add(&sample(with("k", "v")));
    c.cpu_sampler = Some("jdk.ExecutionSample".into());
    let head = "jfrctx: samples received=1 with_context=1 without_context=0 unknown=0 \
                dropped=0; sinks none; contexts=0 threads=0 lost_entries=0";
    assert_eq!(c.line(), format!("{head}; cpu_sampler=jdk.ExecutionSample"));
    c.add_cpu_period(20_000_000);
    assert_eq!(
        c.line(),
        format!("{head}; cpu_sampler=jdk.ExecutionSample period=20ms")
    );
    c.add_cpu_period(10_000_000);
    c.add_cpu_period(12_500_000);
    c.not_selected = 4950;
    assert_eq!(
        c.line(),
        format!("{head}; cpu_sampler=jdk.ExecutionSample period=10ms..20ms; not_selected=4950")
    );
    assert!(c.balanced());
    assert_eq!(ms(250_000), "0.25ms");
    assert_eq!(ms(1_500_000), "1.5ms");
}

#[test]
fn empty_counters() {
    let c = Counters::new();
    assert!(c.balanced());
    assert_eq!(
        c.line(),
        "jfrctx: samples received=0 with_context=0 without_context=0 unknown=0 dropped=0; \
         sinks none; contexts=0 threads=0 lost_entries=0"
    );
}

#[test]
fn invariant_holds_for_every_mix() {
    let mut c = Counters::new();
    for (i, reason) in UnknownReason::ALL.iter().enumerate() {
        for _ in 0..=i {
            c.add(&sample(Err(*reason)));
        }
        c.add(&sample(with("k", "v")));
        c.add(&sample(Ok(Arc::new(ContextMap::default()))));
        c.add_dropped(i as u64);
        assert!(c.balanced(), "{c:?}");
    }
    let n = UnknownReason::ALL.len() as u64;
    assert_eq!(c.unknown_total(), n * (n + 1) / 2);
    assert_eq!(c.unknown_of(UnknownReason::ContextReleased), 6);
    assert_eq!(
        c.received,
        c.with_context + c.without_context + c.unknown_total() + c.dropped
    );
    c.received += 1;
    assert!(!c.balanced());
}

#[test]
fn several_sinks_and_one_line() {
    let mut c = Counters::new();
    c.add_dropped(3);
    c.add_unknown(UnknownReason::LogOverflow);
    c.sinks = vec![sink("jsonl:-", 1, 0), sink("jsonl:/a\nb", 0, 1)];
    c.lost_entries = 9;
    let line = c.line();
    assert_eq!(
        line,
        "jfrctx: samples received=4 with_context=0 without_context=0 unknown=1 \
         (log_overflow=1) dropped=3; sinks jsonl:- records=1 errors=0, jsonl:/a b records=0 \
         errors=1; contexts=0 threads=0 lost_entries=9"
    );
}
