use super::*;
use crate::core::units::parse_throttle;

fn cfg(v: &str) -> String {
    bridge_config(
        &EventSelection::parse(v).unwrap(),
        20 * MS,
        None,
        CpuSampler::CpuTime,
    )
}

#[test]
fn presets_and_raw_entries_parse() {
    let s = EventSelection::parse("cpu+alloc+lock+park+io+native").unwrap();
    assert_eq!(s.presets.len(), 6);
    let s = EventSelection::parse("cpu+jdk.ThreadPark#threshold=1ms").unwrap();
    assert_eq!(s.presets, vec![Preset::Cpu]);
    assert_eq!(
        s.raw,
        vec![RawEvent {
            name: "jdk.ThreadPark".into(),
            settings: vec![("threshold".into(), "1 ms".into())]
        }]
    );
    assert_eq!(s.to_string(), "cpu+jdk.ThreadPark#threshold=1 ms");
    let s = EventSelection::parse("jdk.GCPhasePause").unwrap();
    assert!(s.presets.is_empty() && s.raw[0].settings.is_empty());
    assert_eq!(EventSelection::parse("cpu+cpu").unwrap().presets.len(), 1);
}

#[test]
fn bad_entries_are_errors() {
    for bad in [
        "",
        "cpu+",
        "wall",
        "cpu+heap",
        "jdk.X#threshold",
        "jdk.X#=1",
        "#x=1",
        "jdk..X",
        "jdk.X#a=1#a=2",
        "jdk.X+jdk.X",
        "jdk.X#t=a|b",
        "jdk.X#t=",
    ] {
        assert!(EventSelection::parse(bad).is_err(), "{bad:?} accepted");
    }
    assert!(EventSelection::parse("heap")
        .unwrap_err()
        .contains("unknown preset 'heap'"));
}

#[test]
fn the_cputime_sampler_falls_back_to_execution_sample() {
    assert_eq!(
        cfg("cpu"),
        "jdk.CPUTimeSample|stackTrace=true|throttle=20 ms\n\
         ?jdk.ExecutionSample|stackTrace=true|period=20 ms\n"
    );
    let t = parse_throttle("500/s").unwrap();
    let c = bridge_config(
        &EventSelection::default(),
        MS,
        Some(&t),
        CpuSampler::CpuTime,
    );
    assert!(c.starts_with("jdk.CPUTimeSample|stackTrace=true|throttle=500/s\n"));
    assert!(c.contains("?jdk.ExecutionSample|stackTrace=true|period=1 ms\n"));
}

#[test]
fn the_default_cpu_sampler_is_execution_sample_on_every_jdk() {
    let sel = EventSelection::parse("cpu").unwrap();
    let c = bridge_config(&sel, 20 * MS, None, CpuSampler::default());
    assert_eq!(c, "jdk.ExecutionSample|stackTrace=true|period=20 ms\n");
    // A raw entry still enables jdk.CPUTimeSample explicitly, beside it.
    let sel = EventSelection::parse("cpu+jdk.CPUTimeSample#throttle=5ms").unwrap();
    let c = bridge_config(&sel, 20 * MS, None, CpuSampler::Execution);
    assert_eq!(
        c,
        "jdk.ExecutionSample|stackTrace=true|period=20 ms\n\
         jdk.CPUTimeSample|stackTrace=true|throttle=5 ms\n"
    );
    assert_eq!(CpuSampler::parse("cputime"), Ok(CpuSampler::CpuTime));
    assert_eq!(CpuSampler::parse(" execution "), Ok(CpuSampler::Execution));
    for bad in ["", "auto", "CPUTime", "jdk.CPUTimeSample"] {
        assert!(CpuSampler::parse(bad)
            .unwrap_err()
            .contains("expected execution"));
    }
    assert_eq!(CpuSampler::CpuTime.name(), "cputime");
}

#[test]
fn the_cpu_sampler_in_use_comes_from_the_enabled_events() {
    assert_eq!(
        cpu_sampler_in_use("jfrctx.Calibration,jdk.ExecutionSample").as_deref(),
        Some("jdk.ExecutionSample")
    );
    assert_eq!(
        cpu_sampler_in_use("jdk.CPUTimeSample,jdk.ThreadPark").as_deref(),
        Some("jdk.CPUTimeSample")
    );
    assert_eq!(cpu_sampler_in_use("jdk.ThreadPark"), None);
    assert_eq!(cpu_sampler_in_use(""), None);
}

#[test]
fn presets_expand_to_their_events() {
    let c = cfg("alloc+lock+park+io+native");
    for e in [
        "jdk.ObjectAllocationSample|stackTrace=true|throttle=300/s",
        "jdk.JavaMonitorEnter|stackTrace=true|threshold=10 ms",
        "jdk.JavaMonitorWait|stackTrace=true|threshold=10 ms",
        "jdk.ThreadPark|stackTrace=true|threshold=10 ms",
        "jdk.SocketRead|stackTrace=true|threshold=10 ms",
        "jdk.FileWrite|stackTrace=true|threshold=10 ms",
        "jdk.NativeMethodSample|stackTrace=true|period=20 ms",
    ] {
        assert!(c.lines().any(|l| l == e), "{e} missing in\n{c}");
    }
    assert!(!c.contains('?'));
}

#[test]
fn raw_entries_override_presets() {
    let c = cfg("park+jdk.ThreadPark#threshold=1ms");
    assert_eq!(c, "jdk.ThreadPark|stackTrace=true|threshold=1 ms\n");
    // Asking for ExecutionSample explicitly keeps it on JDK 25 too.
    let c = cfg("jdk.ExecutionSample#period=5ms");
    assert_eq!(c, "jdk.ExecutionSample|stackTrace=true|period=5 ms\n");
    let c = cfg("cpu+jdk.ExecutionSample#period=5ms");
    assert_eq!(
        c,
        "jdk.CPUTimeSample|stackTrace=true|throttle=20 ms\n\
         jdk.ExecutionSample|stackTrace=true|period=5 ms\n"
    );
    let c = cfg("cpu+jdk.CPUTimeSample#throttle=1ms");
    assert_eq!(
        c,
        "jdk.CPUTimeSample|stackTrace=true|throttle=1 ms\n\
         ?jdk.ExecutionSample|stackTrace=true|period=20 ms\n"
    );
}

#[test]
fn throttle_and_latency_values() {
    assert_eq!(parse_throttle("10ms").unwrap(), "10 ms");
    assert_eq!(parse_throttle("500/s").unwrap(), "500/s");
    for bad in [
        "",
        "10",
        "0ms",
        "0/s",
        "ms",
        "10 parsecs",
        "5/fortnight",
        "-1ms",
    ] {
        assert!(parse_throttle(bad).is_err(), "{bad:?}");
    }
    assert_eq!(Latency::parse("default").unwrap(), Latency::Default);
    assert_eq!(
        Latency::parse("live").unwrap(),
        Latency::Live {
            interval_ns: 10 * MS
        }
    );
    assert_eq!(
        Latency::parse("live:20ms").unwrap(),
        Latency::Live {
            interval_ns: 20 * MS
        }
    );
    for bad in ["fast", "live:0ms", "live:2s", "live:", "Live"] {
        assert!(Latency::parse(bad).is_err(), "{bad:?}");
    }
}
