use super::*;
use crate::core::model::{ContextMap, ThreadInfo, UnknownReason};
use std::sync::Arc;

const EXEC: &str = "jdk.ExecutionSample";

fn sample(event: &str, context: Result<Vec<(&str, &str)>, UnknownReason>) -> ContextualSample {
    let context = context.map(|mut entries| {
        entries.sort();
        Arc::new(ContextMap::from_pairs(&entries))
    });
    ContextualSample {
        event: Arc::from(event),
        time_ns: 1,
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

fn acme() -> ContextualSample {
    sample(EXEC, Ok(vec![("tenant", "acme"), ("endpoint", "/a")]))
}
fn other() -> ContextualSample {
    sample(EXEC, Ok(vec![("tenant", "other")]))
}
fn empty() -> ContextualSample {
    sample(EXEC, Ok(vec![]))
}
fn unknown() -> ContextualSample {
    sample(EXEC, Err(UnknownReason::LogOverflow))
}

fn f(spec: &str) -> Filter {
    Filter::parse(spec)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .expect("a filter")
}

fn passes(spec: &str) -> [bool; 4] {
    let f = f(spec);
    [acme(), other(), empty(), unknown()].map(|s| f.accepts(&s))
}

fn err(spec: &str) -> String {
    Filter::parse(spec).expect_err(spec)
}

#[test]
fn empty_spec_is_no_filter() {
    assert_eq!(Filter::parse(""), Ok(None));
    assert_eq!(Filter::parse("  "), Ok(None));
}

#[test]
fn each_predicate() {
    //                                     acme   other  empty  unknown
    assert_eq!(passes("*:has_context"), [true, true, false, false]);
    assert_eq!(passes("*:has_no_context"), [false, false, true, false]);
    assert_eq!(passes("*:has_key(tenant)"), [true, true, false, false]);
    assert_eq!(passes("*:has_key(endpoint)"), [true, false, false, false]);
    assert_eq!(
        passes("*:has_entry(tenant=acme)"),
        [true, false, false, false]
    );
    assert_eq!(passes("*:any"), [true, true, true, true]);
}

#[test]
fn predicates_are_anded() {
    assert_eq!(
        passes("*:has_key(tenant)+has_entry(tenant=other)"),
        [false, true, false, false]
    );
    assert_eq!(
        passes("*:has_context+has_no_context"),
        [false, false, false, false]
    );
}

#[test]
fn per_type_rule_overrides_all_types() {
    let h = f("*:has_no_context;jdk.ExecutionSample:has_entry(tenant=acme)");
    assert!(h.accepts(&acme()));
    assert!(!h.accepts(&empty()));
    let alloc = |c| sample("jdk.ObjectAllocationSample", c);
    assert!(h.accepts(&alloc(Ok(vec![]))));
    assert!(!h.accepts(&alloc(Ok(vec![("tenant", "acme")]))));
    // `any` for a type lets all of it through whatever `*` says (the facade's reset()).
    let g = f("*:has_context;jdk.ExecutionSample:any");
    assert!(g.accepts(&unknown()) && g.accepts(&empty()));
    assert!(!g.accepts(&alloc(Ok(vec![]))));
}

#[test]
fn types_without_rule_pass() {
    let f = f("jdk.ObjectAllocationSample:has_context");
    assert!(f.accepts(&empty()) && f.accepts(&unknown()));
}

#[test]
fn percent_escapes() {
    let f = f("*:has_entry(a%3Bb=x%2C%20y%25)");
    assert_eq!(
        f.all.as_ref().unwrap().preds,
        vec![Pred::HasEntry("a;b".into(), "x, y%".into())]
    );
    let s = sample(EXEC, Ok(vec![("a;b", "x, y%")]));
    assert!(f.accepts(&s));
    let utf8 = Filter::parse("*:has_key(%C3%A9)").unwrap().unwrap();
    assert_eq!(utf8.all.unwrap().preds, vec![Pred::HasKey("é".into())]);
}

#[test]
fn display_round_trips() {
    for spec in [
        "*:has_context",
        "*:any;jdk.ExecutionSample:has_key(k)+has_entry(k=v%3Dw)",
        "jdk.A:has_no_context;jdk.B:has_entry(%C3%A9=%2B)",
    ] {
        let parsed = f(spec);
        assert_eq!(parsed.to_string(), spec);
        assert_eq!(f(&parsed.to_string()), parsed);
    }
    assert_eq!(encode_part("a b;é"), "a%20b%3B%C3%A9");
}

#[test]
fn whitespace_around_items_is_ignored() {
    assert_eq!(
        f(" * : has_context + has_key( k ) ; jdk.X : any "),
        f("*:has_context+has_key(k);jdk.X:any")
    );
}

#[test]
fn errors_are_one_line_and_name_the_problem() {
    assert_eq!(
        err("has_context"),
        "rule 'has_context' has no ':' (expected TYPE:PREDICATE, e.g. *:has_context)"
    );
    assert_eq!(
        err("*:has_kye(x)"),
        "rule '*:has_kye(x)': unknown predicate 'has_kye(x)' (known: any, has_context, \
         has_no_context, has_key(K), has_entry(K=V))"
    );
    assert_eq!(
        err("*:has_entry(k)"),
        "rule '*:has_entry(k)': 'has_entry(k)' has no '=' (expected has_entry(KEY=VALUE))"
    );
    assert_eq!(err("*:has_key()"), "rule '*:has_key()': empty key");
    assert_eq!(
        err("*:has_key(a%zz)"),
        "rule '*:has_key(a%zz)': bad escape in key 'a%zz' (expected %XX)"
    );
    assert_eq!(
        err("*:has_entry(k=a=b)"),
        "rule '*:has_entry(k=a=b)': value 'a=b' contains '=' (write it as %3D)"
    );
    assert_eq!(
        err("*:any+has_context"),
        "rule '*:any+has_context': 'any' cannot be combined with other predicates"
    );
    assert_eq!(err("*:has_context;*:any"), "type * given twice");
    assert_eq!(err("jdk.A:any;jdk.A:any"), "type jdk.A given twice");
    assert_eq!(
        err("*:has_context;"),
        "empty rule (expected TYPE:PREDICATE, e.g. *:has_context)"
    );
    assert!(err("*:").starts_with("rule '*:': no predicate"));
    assert_eq!(err(":any"), "bad event type '' in rule ':any'");
    assert_eq!(
        err("*:has_key(%FF)"),
        "rule '*:has_key(%FF)': key '%FF' is not UTF-8 after decoding"
    );
    for e in [err("*:has_kye(x)"), err("a b:any"), err("*:has_key(\n)")] {
        assert!(!e.contains('\n'), "{e:?}");
    }
}

#[test]
fn the_filter_option() {
    use crate::options::parse_with;
    let no_files = |_: &std::path::Path| -> std::io::Result<String> { unreachable!() };
    let c = parse_with(
        "filter=jdk.ExecutionSample:has_key(endpoint)+has_entry(tenant=acme),period=10ms",
        &no_files,
    )
    .unwrap();
    assert_eq!(
        c.filter,
        Some(f(
            "jdk.ExecutionSample:has_key(endpoint)+has_entry(tenant=acme)"
        ))
    );
    assert_eq!(parse_with("", &no_files).unwrap().filter, None);
    assert_eq!(parse_with("filter=", &no_files).unwrap().filter, None);
    assert_eq!(
        parse_with("filter=*:has_kye(x)", &no_files)
            .unwrap_err()
            .to_string(),
        "bad filter '*:has_kye(x)': rule '*:has_kye(x)': unknown predicate 'has_kye(x)' (known: \
         any, has_context, has_no_context, has_key(K), has_entry(K=V))"
    );
    assert_eq!(
        parse_with("filter=*:any,filter=*:any", &no_files)
            .unwrap_err()
            .to_string(),
        "option 'filter' given twice"
    );
}
