use super::*;
use crate::sink::spec::expand_pid;
use std::collections::HashMap;

fn ok(options: &str) -> Config {
    match parse_with(options, &no_files) {
        Ok(c) => c,
        Err(e) => panic!("{options:?}: {e}"),
    }
}

fn err(options: &str) -> String {
    match parse_with(options, &no_files) {
        Ok(c) => panic!("{options:?} parsed: {c:?}"),
        Err(e) => e.to_string(),
    }
}

fn no_files(p: &Path) -> io::Result<String> {
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not provided", p.display()),
    ))
}

fn with_files(options: &str, files: &[(&str, &str)]) -> Result<Config, String> {
    let map: HashMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let read = move |p: &Path| {
        map.get(p)
            .cloned()
            .ok_or_else(|| io::Error::from_raw_os_error(2))
    };
    parse_with(options, &read).map_err(|e| e.to_string())
}

fn file_sink(path: &str) -> SinkSpec {
    SinkSpec::new(SinkFormat::Jsonl, Output::File(PathBuf::from(path)))
}

/// `spec` with the options every spec of `c` got.
fn with_options(c: &Config, mut spec: SinkSpec) -> SinkSpec {
    spec.options = c.sink_options.clone();
    spec
}

#[test]
fn empty_options_give_every_default() {
    let c = ok("");
    assert_eq!(c, Config::default());
    assert_eq!(c.sinks, vec![file_sink("jfrctx-%p.jsonl")]);
    assert_eq!(c.period_ns, 20_000_000);
    assert_eq!(c.log_level, Level::Warn);
    assert_eq!(c.ring_capacity, 1024);
    assert_eq!(c.retention_ns, 5_000_000_000);
    assert!(!c.retention_set);
    assert_eq!(c.drain_interval_ns, 10_000_000);
    assert_eq!(c.stack_depth, 64);
    assert_eq!(c.sinks[0].to_string(), DEFAULT_SINK);
}

#[test]
fn each_option_is_read() {
    let c = ok(
        "sink=jsonl:/tmp/s.jsonl,period=10ms,log=info,ring=4096,retention=10s,\
                drain=5ms,stack_depth=128",
    );
    assert_eq!(c.sinks, vec![with_options(&c, file_sink("/tmp/s.jsonl"))]);
    assert_eq!(c.sinks[0].options.period_ns, 10_000_000);
    assert_eq!(c.period_ns, 10_000_000);
    assert_eq!(c.log_level, Level::Info);
    assert_eq!(c.ring_capacity, 4096);
    assert_eq!(c.retention_ns, 10_000_000_000);
    assert!(c.retention_set);
    assert_eq!(c.drain_interval_ns, 5_000_000);
    assert_eq!(c.stack_depth, 128);
}

#[test]
fn spaces_and_empty_items_are_tolerated() {
    let c = ok(" period = 1ms , , log=debug,");
    assert_eq!(c.period_ns, 1_000_000);
    assert_eq!(c.log_level, Level::Debug);
}

#[test]
fn sinks_repeat_and_stdout_is_dash() {
    let c = ok("sink=jsonl:-,sink=jsonl:/a/%p.jsonl,sink=jsonl");
    assert_eq!(
        c.sinks,
        vec![
            SinkSpec::new(SinkFormat::Jsonl, Output::Stdout),
            file_sink("/a/%p.jsonl"),
            file_sink("jfrctx-%p.jsonl"),
        ]
    );
    assert_eq!(c.sinks[0].to_string(), "jsonl:-");
    assert_eq!(c.sinks[1].resolve(42).to_string(), "jsonl:/a/42.jsonl");
}

#[test]
fn pid_expansion() {
    let o = Output::File(PathBuf::from("/t/%p-x-%p.jsonl"));
    assert_eq!(o.resolve(7), Output::File(PathBuf::from("/t/7-x-7.jsonl")));
    assert_eq!(Output::Stdout.resolve(7), Output::Stdout);
    assert_eq!(expand_pid(Path::new("/plain"), 1), PathBuf::from("/plain"));
}

#[test]
fn durations_take_every_unit() {
    for (text, ns) in [
        ("7ns", 7),
        ("7us", 7_000),
        ("7ms", 7_000_000),
        ("7s", 7_000_000_000),
        ("2m", 120_000_000_000),
    ] {
        assert_eq!(parse_duration("period", text), Ok(ns), "{text}");
    }
}

#[test]
fn durations_use_the_one_unit_table() {
    // `throttle=1/h` was always accepted; a duration takes the same units (JFR's).
    assert_eq!(ok("retention=1h").retention_ns, 3_600_000_000_000);
    assert_eq!(
        ok("interval=1d").sink_options.interval_ns,
        Some(86_400_000_000_000)
    );
}

#[test]
fn bad_durations() {
    for v in [
        "x",
        "10",
        "ms",
        "10w",
        "-5ms",
        "0ms",
        "1.5s",
        "99999999999999999999s",
        "9999999999m",
    ] {
        assert_eq!(
            err(&format!("period={v}")),
            format!("bad duration '{v}' for period (expected e.g. 20ms, 1s)")
        );
    }
}

#[test]
fn unknown_option_lists_known_ones() {
    assert_eq!(
        err("perod=10ms"),
        "unknown option 'perod' (known: sink, period, log, config, ring, spares, spare_ring, \
         retention, drain, stack_depth, interval, cardinality, collapsed_keys, svg_key, events, \
         throttle, latency, filter, push, push_app, push_labels, push_keys, push_budget, \
         push_tenant, push_auth, push_ca, cpu_sampler, jfr_max_size)"
    );
}

#[test]
fn missing_equals() {
    assert_eq!(
        err("period"),
        "missing '=' in option 'period' (expected key=value)"
    );
}

#[test]
fn sink_errors() {
    assert_eq!(err("sink="), "empty sink");
    assert_eq!(
        err("sink=foo:/x"),
        "unknown sink format 'foo' (known: jsonl, pprof, collapsed, svg, jfr)"
    );
    assert_eq!(
        err("sink=jsonl:"),
        "empty target in sink 'jsonl:' (expected e.g. jsonl:/tmp/s.jsonl or jsonl:-)"
    );
}

#[test]
fn log_level_errors() {
    assert_eq!(
        err("log=verbose"),
        "bad log level 'verbose' (known: error, warn, info, debug)"
    );
}

#[test]
fn range_errors() {
    assert_eq!(
        err("ring=1000"),
        "ring '1000' out of range (allowed: a power of two from 16 to 1048576)"
    );
    assert!(err("ring=8").starts_with("ring '8' out of range"));
    assert!(err("ring=2097152").starts_with("ring '2097152' out of range"));
    assert_eq!(ok("ring=16").ring_capacity, 16);
    assert_eq!(ok("ring=1048576").ring_capacity, 1 << 20);
    assert_eq!(err("ring=big"), "bad number 'big' for ring");
    assert_eq!(
        err("spare_ring=100"),
        "spare_ring '100' out of range (allowed: a power of two from 16 to 1048576 \
         (at most `ring`'s size is used))"
    );
    assert_eq!(ok("").spare_ring_capacity(), 64, "the default");
    assert_eq!(ok("spare_ring=16").spare_ring_capacity(), 16);
    assert_eq!(
        ok("ring=256,spare_ring=4096").spare_ring_capacity(),
        256,
        "never bigger than ring="
    );
    assert_eq!(
        err("retention=2s"),
        "retention '2s' out of range (allowed: at least 3s)"
    );
    assert_eq!(ok("retention=3s").retention_ns, 3_000_000_000);
    assert_eq!(
        err("drain=999us"),
        "drain '999us' out of range (allowed: 1ms to 1s)"
    );
    assert!(err("drain=2s").starts_with("drain '2s' out of range"));
    assert_eq!(ok("drain=1s").drain_interval_ns, 1_000_000_000);
    assert_eq!(
        err("stack_depth=0"),
        "stack_depth '0' out of range (allowed: 1 to 2048)"
    );
    assert!(err("stack_depth=2049").starts_with("stack_depth '2049' out of range"));
    assert_eq!(err("stack_depth=-1"), "bad number '-1' for stack_depth");
}

#[test]
fn duplicates_are_errors_except_sink() {
    assert_eq!(err("period=1ms,period=2ms"), "option 'period' given twice");
    assert_eq!(err("log=info,log=info"), "option 'log' given twice");
    assert_eq!(err("config=/a,config=/b"), "option 'config' given twice");
    assert_eq!(ok("sink=jsonl:/a,sink=jsonl:/b").sinks.len(), 2);
}

#[test]
fn config_file_is_read_and_overridden() {
    let file = "# comment\n\nperiod = 5ms\nlog=debug\nsink=jsonl:/f.jsonl\nsink=jsonl:-\n";
    let c = with_files("config=/etc/j.conf", &[("/etc/j.conf", file)]).unwrap();
    assert_eq!(c.period_ns, 5_000_000);
    assert_eq!(c.log_level, Level::Debug);
    assert_eq!(c.sinks.len(), 2);
    assert_eq!(c.ring_capacity, 1024);

    let c = with_files("config=/etc/j.conf,period=7ms", &[("/etc/j.conf", file)]).unwrap();
    assert_eq!(c.period_ns, 7_000_000);
    assert_eq!(c.log_level, Level::Debug);
    // Command-line sinks replace the file's sinks.
    let c = with_files(
        "sink=jsonl:/cli.jsonl,config=/etc/j.conf",
        &[("/etc/j.conf", file)],
    )
    .unwrap();
    assert_eq!(c.sinks, vec![with_options(&c, file_sink("/cli.jsonl"))]);
    // A file line may hold a comma in a path.
    let c = with_files("config=/c", &[("/c", "sink=jsonl:/a,b.jsonl")]).unwrap();
    assert_eq!(c.sinks, vec![file_sink("/a,b.jsonl")]);
}

#[test]
fn config_file_errors() {
    assert_eq!(
        with_files("config=/x", &[]).unwrap_err(),
        "config file /x: No such file or directory"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "period=1ms\n# c\nlog\n")]).unwrap_err(),
        "config file /x line 3: missing '='"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "config=/y\n")]).unwrap_err(),
        "config file /x line 1: config= is not allowed inside a config file"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "log=info\nlog=warn\n")]).unwrap_err(),
        "config file /x line 2: option 'log' given twice"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "period=fast\n")]).unwrap_err(),
        "config file /x line 1: bad duration 'fast' for period (expected e.g. 20ms, 1s)"
    );
    assert_eq!(
        with_files("config=/x", &[("/x", "colour=red\n")]).unwrap_err(),
        "config file /x line 1: unknown option 'colour' (known: sink, period, log, config, \
         ring, spares, spare_ring, retention, drain, stack_depth, interval, cardinality, \
         collapsed_keys, svg_key, events, throttle, latency, filter, push, push_app, push_labels, \
         push_keys, push_budget, push_tenant, push_auth, push_ca, cpu_sampler, jfr_max_size)"
    );
    assert_eq!(err("config="), "empty path for config");
}

#[test]
fn errors_are_one_line() {
    for e in [
        err("perod=1"),
        err("sink="),
        err("period=x"),
        with_files("config=/x", &[("/x", "a\n")]).unwrap_err(),
    ] {
        assert!(!e.contains('\n') && !e.starts_with("jfrctx"), "{e}");
    }
}

#[test]
fn io_message_drops_os_error_suffix() {
    assert_eq!(
        io_message(&io::Error::from_raw_os_error(2)),
        "No such file or directory"
    );
    assert_eq!(io_message(&io::Error::other("plain")), "plain");
}

#[test]
fn the_table_defaults_are_the_defaults() {
    let defaults = ok("");
    for opt in table::OPTIONS.iter() {
        let Some(text) = opt.default else { continue };
        let mut c = ok(&format!("{}={text}", opt.key));
        // Giving a retention, even the default one, keeps it in live mode.
        c.retention_set = false;
        assert_eq!(c, defaults, "{}={text} is not the default", opt.key);
    }
}

#[test]
fn every_key_is_in_the_table_once() {
    let keys: Vec<&str> = table::OPTIONS.iter().map(|o| o.key).collect();
    for (i, k) in keys.iter().enumerate() {
        assert!(!keys[..i].contains(k), "{k} twice");
    }
    assert!(err("nope=1").contains(&table::known_keys()));
}

mod sink_and_event_options;
