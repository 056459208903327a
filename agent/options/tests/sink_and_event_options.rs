//! The options of the sinks (`interval`, `cardinality`, ...) and of the events (`events=`,
//! `cpu_sampler=`, `throttle=`, `latency=`).

use super::*;

#[test]
fn aggregated_sink_formats() {
    let c = ok("sink=pprof:/p.pprof,sink=collapsed:/c.txt,sink=collapsed:-,sink=svg:/d");
    let formats: Vec<(SinkFormat, String)> = c
        .sinks
        .iter()
        .map(|s| (s.format, s.target.to_string()))
        .collect();
    assert_eq!(
        formats,
        vec![
            (SinkFormat::Pprof, "/p.pprof".to_string()),
            (SinkFormat::Collapsed, "/c.txt".to_string()),
            (SinkFormat::Collapsed, "-".to_string()),
            (SinkFormat::Svg, "/d".to_string()),
        ]
    );
    let defaults: Vec<String> = ok("sink=pprof,sink=collapsed,sink=svg")
        .sinks
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        defaults,
        [
            "pprof:jfrctx-%p.pprof",
            "collapsed:jfrctx-%p.collapsed",
            "svg:jfrctx-%p-svg"
        ]
    );
    assert_eq!(
        err("sink=pprof:-"),
        "bad sink 'pprof:-': pprof cannot write to stdout (give a path)"
    );
    assert_eq!(
        err("sink=svg:-"),
        "bad sink 'svg:-': svg cannot write to stdout (give a path)"
    );
}

#[test]
fn sink_options_defaults_and_values() {
    let o = ok("sink=pprof:/p").sinks[0].options.clone();
    assert_eq!(o, SinkOptions::default());
    assert_eq!(o.period_ns, 20_000_000);
    assert_eq!(o.interval_ns, None);
    assert!(o.cardinality.is_empty() && o.collapsed_keys.is_empty());
    assert_eq!(o.svg_key, "endpoint");

    let c = ok("sink=pprof:/p,sink=svg:/d,period=1ms,interval=90s,\
                cardinality=request:hash+tenant:cap:50+user:drop+endpoint:keep,\
                collapsed_keys=endpoint + tenant,svg_key=tenant");
    let o = &c.sink_options;
    assert_eq!(o.period_ns, 1_000_000);
    assert_eq!(o.interval_ns, Some(90_000_000_000));
    assert_eq!(
        o.cardinality,
        vec![
            ("request".to_string(), Policy::Hash),
            ("tenant".to_string(), Policy::Cap(50)),
            ("user".to_string(), Policy::Drop),
            ("endpoint".to_string(), Policy::Keep),
        ]
    );
    assert_eq!(o.collapsed_keys, ["endpoint", "tenant"]);
    assert_eq!(o.svg_key, "tenant");
    assert!(c.sinks.iter().all(|s| s.options == *o));
    assert_eq!(
        ok("interval=1s").sink_options.interval_ns,
        Some(1_000_000_000)
    );
    assert_eq!(
        ok("cardinality=k:cap:1000000")
            .sink_options
            .cardinality
            .len(),
        1
    );
}

#[test]
fn sink_options_layer_like_the_others() {
    let file = "interval=10s\nsvg_key=tenant\ncollapsed_keys=a+b\n";
    let c = with_files("config=/f,svg_key=route", &[("/f", file)]).unwrap();
    assert_eq!(c.sink_options.interval_ns, Some(10_000_000_000));
    assert_eq!(c.sink_options.svg_key, "route");
    assert_eq!(c.sink_options.collapsed_keys, ["a", "b"]);
    // The file's sinks get the merged options too.
    let c = with_files("config=/f,period=5ms", &[("/f", "sink=pprof:/p\n")]).unwrap();
    assert_eq!(c.sinks[0].options.period_ns, 5_000_000);
}

#[test]
fn sink_option_errors() {
    assert_eq!(
        err("interval=500ms"),
        "interval '500ms' out of range (allowed: at least 1s)"
    );
    assert_eq!(
        err("interval=soon"),
        "bad duration 'soon' for interval (expected e.g. 20ms, 1s)"
    );
    assert_eq!(
        err("interval=1s,interval=2s"),
        "option 'interval' given twice"
    );
    assert_eq!(
        err("sink=collapsed:-,interval=1s"),
        "bad sink 'collapsed:-': interval cannot rotate stdout (give a path)"
    );
    assert_eq!(ok("sink=jsonl:-,interval=1s").sinks.len(), 1);
    let policies = "(known: keep, drop, hash, cap:N with N from 1 to 1000000)";
    for (value, why) in [
        ("", "'' is not KEY:POLICY".to_string()),
        ("tenant", "'tenant' is not KEY:POLICY".to_string()),
        (":hash", "':hash' is not KEY:POLICY".to_string()),
        ("a:hash+", "'' is not KEY:POLICY".to_string()),
        ("a:keep+a:drop", "key a given twice".to_string()),
        (
            "a:squash",
            format!("unknown policy 'squash' for a {policies}"),
        ),
        (
            "a:cap:0",
            format!("unknown policy 'cap:0' for a {policies}"),
        ),
        (
            "a:cap:x",
            format!("unknown policy 'cap:x' for a {policies}"),
        ),
        (
            "a:cap:1000001",
            format!("unknown policy 'cap:1000001' for a {policies}"),
        ),
        ("a:cap", format!("unknown policy 'cap' for a {policies}")),
    ] {
        assert_eq!(
            err(&format!("cardinality={value}")),
            format!("bad cardinality '{value}': {why}"),
            "{value}"
        );
    }
    let empty = "empty key (expected e.g. endpoint+tenant)";
    assert_eq!(
        err("collapsed_keys="),
        format!("bad collapsed_keys '': {empty}")
    );
    assert_eq!(
        err("collapsed_keys=a++b"),
        format!("bad collapsed_keys 'a++b': {empty}")
    );
    assert_eq!(
        err("collapsed_keys=a+b+a"),
        "bad collapsed_keys 'a+b+a': key a given twice"
    );
    assert_eq!(err("svg_key="), format!("bad svg_key '': {empty}"));
    assert_eq!(
        err("svg_key=a+b"),
        "bad svg_key 'a+b': exactly one key expected"
    );
    assert_eq!(err("svg_key=a,svg_key=b"), "option 'svg_key' given twice");
    assert_eq!(
        err("cardinality=a:drop,cardinality=b:drop"),
        "option 'cardinality' given twice"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "cardinality=a:cap:0\n")]).unwrap_err(),
        format!("config file /x line 1: bad cardinality 'a:cap:0': unknown policy 'cap:0' for a {policies}")
    );
}

// ---- events=, throttle=, latency= (agent/core/events/) ----------------------------------------

#[test]
fn events_option_takes_presets_and_raw_entries() {
    use crate::core::events::{EventSelection, Latency, Preset};
    let c = ok("");
    assert_eq!(c.events, EventSelection::default());
    assert_eq!(c.events.presets, vec![Preset::Cpu]);
    assert_eq!(c.latency, Latency::Default);
    assert_eq!(c.throttle, None);
    let c = ok("events=cpu+alloc+lock+park+io,cpu_sampler=cputime,throttle=500/s,latency=live");
    assert_eq!(c.events.presets.len(), 5);
    assert_eq!(c.throttle.as_deref(), Some("500/s"));
    assert!(matches!(
        c.latency,
        Latency::Live {
            interval_ns: 10_000_000
        }
    ));
    let c = ok(
        "events=cpu+jdk.ThreadPark#threshold=1ms,cpu_sampler=cputime,throttle=10ms,\
         latency=live:20ms",
    );
    assert_eq!(c.events.raw[0].name, "jdk.ThreadPark");
    assert_eq!(c.throttle.as_deref(), Some("10 ms"));
    let c = with_files("events=park", &[("f", "events=alloc\nlatency=live")]).unwrap();
    assert_eq!(c, ok("events=park"));
    let c = with_files(
        "config=f,events=park",
        &[("f", "events=alloc\nlatency=live")],
    )
    .unwrap();
    assert_eq!(c.events.presets, vec![Preset::Park]);
    assert!(matches!(c.latency, Latency::Live { .. }));
}

#[test]
fn cpu_sampler_option_picks_the_cpu_event() {
    use crate::core::events::CpuSampler;
    assert_eq!(ok("").cpu_sampler, CpuSampler::Execution);
    assert_eq!(ok("cpu_sampler=cputime").cpu_sampler, CpuSampler::CpuTime);
    assert_eq!(
        ok("cpu_sampler=execution").cpu_sampler,
        CpuSampler::Execution
    );
    let c = with_files(
        "config=f,cpu_sampler=execution",
        &[("f", "cpu_sampler=cputime")],
    )
    .unwrap();
    assert_eq!(c.cpu_sampler, CpuSampler::Execution);
    let c = with_files("config=f", &[("f", "cpu_sampler=cputime\nthrottle=10ms")]).unwrap();
    assert_eq!(c.cpu_sampler, CpuSampler::CpuTime);
    assert_eq!(c.throttle.as_deref(), Some("10 ms"));
}

#[test]
fn bad_events_throttle_latency_are_one_line_errors() {
    for (opts, needle) in [
        ("events=heap", "bad events 'heap': unknown preset 'heap'"),
        ("events=cpu+", "bad events 'cpu+': empty entry"),
        (
            "events=jdk.ThreadPark#threshold",
            "missing '=' in setting 'threshold'",
        ),
        ("events=cpu,events=alloc", "option 'events' given twice"),
        ("throttle=fast", "bad throttle 'fast'"),
        (
            "cpu_sampler=auto",
            "bad cpu_sampler 'auto': expected execution",
        ),
        (
            "cpu_sampler=cputime,cpu_sampler=execution",
            "option 'cpu_sampler' given twice",
        ),
        (
            "throttle=500/s",
            "bad throttle '500/s': throttle sets jdk.CPUTimeSample, which the cpu preset \
             records only with cpu_sampler=cputime",
        ),
        ("latency=instant", "bad latency 'instant'"),
        ("latency=live:5s", "out of range"),
    ] {
        let e = err(opts);
        assert!(e.contains(needle), "{opts}: {e}");
        assert!(!e.contains('\n'), "{opts}: {e}");
    }
}

#[test]
fn jfr_sink_and_max_size() {
    let c = ok("sink=jfr:/tmp/x.jfr,jfr_max_size=64m,interval=10s");
    assert_eq!(c.sinks[0].format, SinkFormat::Jfr);
    assert_eq!(c.sinks[0].options.jfr_max_size, Some(64 << 20));
    assert_eq!(c.sinks[0].options.interval_ns, Some(10_000_000_000));
    assert_eq!(
        ok("sink=jfr").sinks[0].target,
        Output::File(PathBuf::from("jfrctx-%p.jfr"))
    );
    assert_eq!(
        err("sink=jfr:-"),
        "bad sink 'jfr:-': jfr cannot write to stdout (give a path)"
    );
    assert_eq!(
        err("jfr_max_size=100k"),
        "bad jfr_max_size '100k': at least 1m"
    );
    assert_eq!(
        err("jfr_max_size=lots"),
        "bad jfr_max_size 'lots': expected a size such as 64m, 512k or 1g"
    );
    assert_eq!(
        err("jfr_max_size=1m,jfr_max_size=2m"),
        "option 'jfr_max_size' given twice"
    );
}
