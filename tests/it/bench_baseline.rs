//! The server benchmark's "JFR alone" baselines record what the agent records.
//!
//! `bench/server/src/.../BenchServer.java` (`--jfr-events`, the `jfr-all` configuration) runs
//! without the agent, so it repeats in Java the events and settings of the agent's presets
//! (`agent/core/events/table.rs`). This test reads its `enable` method and checks, preset by
//! preset, the same event names as the table (for `cpu`: the default CPU sampler,
//! `jdk.ExecutionSample`, which the benchmark's agent options keep), the table's allocation
//! throttle and its wait threshold. No JVM runs.

use crate::common;
use jfrctx::core::events::table::{of_preset, Preset, Setting, ALLOC_THROTTLE, WAIT_THRESHOLD};
use std::collections::BTreeSet;

const SOURCE: &str = "bench/server/src/dev/jfrctx/bench/server/BenchServer.java";

/// The body of `BenchServer.SampleCounter.enable`, from its signature to the next method.
fn enable_body(java: &str) -> &str {
    let start = java
        .find("private static void enable(")
        .expect("BenchServer.java has no enable method");
    let rest = &java[start..];
    let end = rest
        .find("static SampleCounter start(")
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Every `"jdk.NAME"` string literal in `text`.
fn event_names(text: &str) -> BTreeSet<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("jdk."))
        .map(str::to_string)
        .collect()
}

/// The text of `case "PRESET":` up to the next `case` or `default`.
fn case_block<'a>(body: &'a str, preset: &str) -> &'a str {
    let label = format!("case \"{preset}\":");
    let start = body
        .find(&label)
        .unwrap_or_else(|| panic!("BenchServer.enable has no {label}"));
    let rest = &body[start + label.len()..];
    let end = ["case \"", "default:"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn jfr_alone_enables_the_agents_presets_with_the_agents_settings() {
    let java = std::fs::read_to_string(common::root().join(SOURCE)).expect("read BenchServer.java");
    let body = enable_body(&java);
    for preset in Preset::ALL {
        let name = preset.name();
        if !body.contains(&format!("case \"{name}\":")) {
            // Presets the benchmark does not record (its configurations use cpu+alloc+lock+park+io).
            assert!(
                !["cpu", "alloc", "lock", "park", "io"].contains(&name),
                "BenchServer.enable lacks preset {name}"
            );
            continue;
        }
        let block = case_block(body, name);
        let mut want: BTreeSet<String> = of_preset(preset).map(|e| e.name.to_string()).collect();
        if preset == Preset::Cpu {
            want.retain(|n| n == "jdk.ExecutionSample");
        }
        assert_eq!(event_names(block), want, "preset {name}: events");
        for e in of_preset(preset).filter(|e| want.contains(e.name)) {
            match e.setting {
                Setting::Period | Setting::CpuThrottle => {
                    assert!(
                        block.contains("withPeriod("),
                        "preset {name}: {} period",
                        e.name
                    )
                }
                Setting::Throttle(rate) => assert!(
                    block.contains(&format!(".with(\"throttle\", \"{rate}\")")),
                    "preset {name}: {} throttle {rate}",
                    e.name
                ),
                Setting::Threshold(_) => {
                    assert!(
                        block.contains("withThreshold(wait)"),
                        "preset {name}: {} threshold",
                        e.name
                    )
                }
            }
        }
    }
    // `wait` is the table's threshold, and the allocation throttle is the table's.
    let ms: u64 = WAIT_THRESHOLD
        .strip_suffix(" ms")
        .and_then(|n| n.parse().ok())
        .expect("WAIT_THRESHOLD in ms");
    assert!(
        body.contains(&format!("Duration wait = Duration.ofMillis({ms});")),
        "BenchServer's wait threshold is not {WAIT_THRESHOLD}"
    );
    assert!(
        body.contains(ALLOC_THROTTLE),
        "BenchServer's throttle is not {ALLOC_THROTTLE}"
    );
}

#[test]
fn case_blocks_and_names_are_read_as_written() {
    let body = "switch (p) { case \"a\": s.enable(\"jdk.X\").withPeriod(d); break;\n\
                case \"b\": for (String e : new String[] {\"jdk.Y\", \"jdk.Z\"}) {} break;\n\
                default: throw new IllegalArgumentException(\"jdk.not\"); }";
    assert_eq!(
        event_names(case_block(body, "a")),
        BTreeSet::from(["jdk.X".to_string()])
    );
    assert_eq!(
        event_names(case_block(body, "b")),
        BTreeSet::from(["jdk.Y".to_string(), "jdk.Z".to_string()])
    );
}
