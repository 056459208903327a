use super::*;
use std::collections::BTreeMap;

/// `(stack, labels, count)`.
type In<'a> = (u64, &'a [(&'a str, &'a str)], i64);

/// A profile with one sample per `(stack, labels, count)`.
fn profile(samples: &[In]) -> Profile {
    let mut t = StringTable::new(vec![String::new()]);
    let sample = samples
        .iter()
        .map(|(stack, labels, n)| Sample {
            location_id: vec![*stack],
            value: vec![*n, *n * 10],
            label: labels
                .iter()
                .map(|(k, v)| Label {
                    key: t.index(k),
                    str: t.index(v),
                    ..Label::default()
                })
                .collect(),
        })
        .collect();
    Profile {
        sample,
        string_table: t.into_vec(),
        ..Profile::default()
    }
}

/// `(stack, sorted "k=v" labels) -> (count, value)` of a profile.
fn view(p: &Profile) -> BTreeMap<(u64, Vec<String>), (i64, i64)> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for x in &p.sample {
        let mut l: Vec<String> = x
            .label
            .iter()
            .map(|l| format!("{}={}", s(l.key), s(l.str)))
            .collect();
        l.sort();
        let e = out.entry((x.location_id[0], l)).or_insert((0, 0));
        e.0 += x.value[0];
        e.1 += x.value[1];
    }
    out
}

fn key(stack: u64, labels: &[&str]) -> (u64, Vec<String>) {
    (stack, labels.iter().map(|s| s.to_string()).collect())
}

#[test]
fn a_key_over_the_budget_is_left_out_from_then_on() {
    let mut plan = LabelPlan::new(None, 2, 0);
    let mut p = profile(&[
        (1, &[("endpoint", "/a"), ("request", "1")], 3),
        (1, &[("endpoint", "/a"), ("request", "2")], 1),
        (1, &[("endpoint", "/a"), ("request", "3")], 1),
        (2, &[("endpoint", "/b"), ("request", "4")], 2),
    ]);
    let notices = plan.prepare(&mut p);
    assert_eq!(
        notices,
        vec![Notice {
            key: "request".into(),
            reason: Reason::Budget(3)
        }]
    );
    // Samples kept, merged without the label.
    assert_eq!(
        view(&p),
        BTreeMap::from([
            (key(1, &["endpoint=/a"]), (5, 50)),
            (key(2, &["endpoint=/b"]), (2, 20)),
        ])
    );
    assert_eq!(p.sample.len(), 2);
    assert!(plan.is_left_out("request"));
    // The next interval: one value only, still left out; no new notice.
    let mut q = profile(&[(1, &[("endpoint", "/a"), ("request", "9")], 1)]);
    assert!(plan.prepare(&mut q).is_empty());
    assert_eq!(
        view(&q),
        BTreeMap::from([(key(1, &["endpoint=/a"]), (1, 10))])
    );
    assert_eq!(plan.left_out(), vec![("request".to_string(), 8)]);
}

#[test]
fn within_the_budget_everything_is_kept() {
    let mut plan = LabelPlan::new(None, 2, 0);
    let input = [
        (1, &[("endpoint", "/a"), ("thread", "t1")][..], 3),
        (1, &[("endpoint", "/b"), ("thread", "t2")][..], 1),
    ];
    let mut p = profile(&input);
    assert!(plan.prepare(&mut p).is_empty());
    assert_eq!(view(&p), view(&profile(&input)));
    assert!(plan.left_out().is_empty());
}

#[test]
fn span_ids_pass_trace_ids_do_not() {
    let mut plan = LabelPlan::new(None, 1, 0);
    let mut p = profile(&[
        (
            1,
            &[
                ("spanId", "00f067aa0ba902b7"),
                ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"),
            ],
            1,
        ),
        (
            1,
            &[
                ("spanId", "00f067aa0ba902b8"),
                ("trace_id", "4bf92f3577b34da6a3ce929d0e0e4737"),
            ],
            1,
        ),
        (1, &[("spanId", "not-a-span")], 1),
    ]);
    let notices = plan.prepare(&mut p);
    assert_eq!(
        notices,
        vec![Notice {
            key: "trace_id".into(),
            reason: Reason::Trace
        }]
    );
    // Span ids are exempt from the budget (1) and renamed; the invalid one is dropped.
    assert_eq!(
        view(&p),
        BTreeMap::from([
            (key(1, &[]), (1, 10)),
            (key(1, &["span_id=00f067aa0ba902b7"]), (1, 10)),
            (key(1, &["span_id=00f067aa0ba902b8"]), (1, 10)),
        ])
    );
}

#[test]
fn push_keys_override_the_budget() {
    let mut plan = LabelPlan::new(Some(vec!["request".into(), "trace_id".into()]), 1, 0);
    let mut p = profile(&[
        (
            1,
            &[("endpoint", "/a"), ("request", "1"), ("trace_id", "t1")],
            1,
        ),
        (
            1,
            &[("endpoint", "/b"), ("request", "2"), ("trace_id", "t2")],
            1,
        ),
    ]);
    assert!(plan.prepare(&mut p).is_empty());
    assert_eq!(
        view(&p),
        BTreeMap::from([
            (key(1, &["request=1", "trace_id=t1"]), (1, 10)),
            (key(1, &["request=2", "trace_id=t2"]), (1, 10)),
        ])
    );
}

#[test]
fn names_pyroscope_refuses_and_long_values() {
    let mut plan = LabelPlan::new(None, 10, 0);
    let long = "x".repeat(MAX_VALUE_LEN + 1);
    let mut p = profile(&[
        (
            1,
            &[("user-id", "u1"), ("app.tier", "web"), ("path", &long)],
            1,
        ),
        (
            1,
            &[("user-id", "u2"), ("app.tier", "web"), ("path", "/x")],
            1,
        ),
    ]);
    let notices = plan.prepare(&mut p);
    assert_eq!(
        notices,
        vec![Notice {
            key: "user-id".into(),
            reason: Reason::BadName
        }]
    );
    assert_eq!(
        view(&p),
        BTreeMap::from([
            (key(1, &["app_tier=web"]), (1, 10)),
            (key(1, &["app_tier=web", "path=/x"]), (1, 10)),
        ])
    );
    assert_eq!(pushed_name("9a"), None);
    assert_eq!(pushed_name("_a.b").as_deref(), Some("_a_b"));
}

#[test]
fn too_many_keys_and_too_many_samples() {
    let mut plan = LabelPlan::new(None, 10, MAX_KEYS - 2);
    let mut p = profile(&[(1, &[("a", "1"), ("b", "1"), ("c", "1")], 1)]);
    let notices = plan.prepare(&mut p);
    assert_eq!(
        notices,
        vec![Notice {
            key: "c".into(),
            reason: Reason::TooManyKeys
        }]
    );
    assert_eq!(
        view(&p),
        BTreeMap::from([(key(1, &["a=1", "b=1"]), (1, 10))])
    );

    // More distinct samples than Pyroscope takes: span ids go, the samples merge.
    let spans: Vec<String> = (0..=MAX_SAMPLES).map(|i| format!("{i:016x}")).collect();
    let labels: Vec<[(&str, &str); 1]> = spans.iter().map(|s| [("span_id", s.as_str())]).collect();
    let input: Vec<In> = labels.iter().map(|l| (1, &l[..], 1)).collect();
    let mut p = profile(&input);
    LabelPlan::new(None, 10, 0).prepare(&mut p);
    assert_eq!(p.sample.len(), 1);
    assert_eq!(p.sample[0].value[0], MAX_SAMPLES as i64 + 1);
}
