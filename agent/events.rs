//! Which JFR events the agent records (`events=`, `throttle=`) and how fast they reach the sinks
//! (`latency=`). Pure: parsing, and the configuration text handed to the stream bridge.
//!
//! `events=` is a `+`-separated list (commas separate options) of presets and raw entries:
//!
//! | preset   | JFR events (settings)                                                        |
//! |----------|------------------------------------------------------------------------------|
//! | `cpu`    | `jdk.ExecutionSample` (`period`) on every JDK; with `cpu_sampler=cputime`, `jdk.CPUTimeSample` (`throttle`, default: the `period`) where the JDK has it (25+), else `jdk.ExecutionSample` |
//! | `native` | `jdk.NativeMethodSample` (`period`)                                           |
//! | `alloc`  | `jdk.ObjectAllocationSample` (`throttle=300/s`), weight = bytes              |
//! | `lock`   | `jdk.JavaMonitorEnter`, `jdk.JavaMonitorWait` (`threshold=10 ms`)             |
//! | `park`   | `jdk.ThreadPark` (`threshold=10 ms`)                                          |
//! | `io`     | `jdk.SocketRead`, `jdk.SocketWrite`, `jdk.FileRead`, `jdk.FileWrite` (`threshold=10 ms`) |
//!
//! A raw entry is `jdk.Name` or `jdk.Name#setting=value#setting=value...`; its settings override
//! those of a preset enabling the same event. Every event is recorded with its stack trace.

use std::fmt;

const MS: i64 = 1_000_000;

/// Threshold of the duration presets (`lock`, `park`, `io`): JFR's `profile.jfc` value.
pub const WAIT_THRESHOLD: &str = "10 ms";
/// Throttle of the `alloc` preset: JFR's `profile.jfc` value.
pub const ALLOC_THROTTLE: &str = "300/s";

/// Which JFR event the `cpu` preset records (`cpu_sampler=`).
///
/// The default is [`CpuSampler::Execution`] on every JDK: `jdk.CPUTimeSample` (JDK 25+) can abort
/// the JVM in JFR's flush path (JDK-8387409, fix not yet released), so it is only used when asked
/// for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuSampler {
    /// `jdk.ExecutionSample` at `period=`, on every JDK.
    #[default]
    Execution,
    /// `jdk.CPUTimeSample` at `throttle=` where the JDK has it (25+), else `jdk.ExecutionSample`.
    CpuTime,
}

impl CpuSampler {
    pub fn name(self) -> &'static str {
        match self {
            CpuSampler::Execution => "execution",
            CpuSampler::CpuTime => "cputime",
        }
    }

    /// `execution` or `cputime`; the error says what is expected.
    pub fn parse(value: &str) -> Result<CpuSampler, String> {
        match value.trim() {
            "execution" => Ok(CpuSampler::Execution),
            "cputime" => Ok(CpuSampler::CpuTime),
            other => Err(format!(
                "expected execution (jdk.ExecutionSample, the default) or cputime \
                 (jdk.CPUTimeSample, JDK 25+), got '{other}'"
            )),
        }
    }
}

/// A named group of JFR events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Preset {
    Cpu,
    Native,
    Alloc,
    Lock,
    Park,
    Io,
}

impl Preset {
    pub const ALL: [Preset; 6] = [
        Preset::Cpu,
        Preset::Native,
        Preset::Alloc,
        Preset::Lock,
        Preset::Park,
        Preset::Io,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Cpu => "cpu",
            Preset::Native => "native",
            Preset::Alloc => "alloc",
            Preset::Lock => "lock",
            Preset::Park => "park",
            Preset::Io => "io",
        }
    }

    pub fn parse(s: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// `jdk.Name#key=value#...`: one JFR event with explicit settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEvent {
    pub name: String,
    pub settings: Vec<(String, String)>,
}

/// The parsed `events=` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventSelection {
    pub presets: Vec<Preset>,
    pub raw: Vec<RawEvent>,
}

impl Default for EventSelection {
    /// `events=cpu`.
    fn default() -> Self {
        EventSelection {
            presets: vec![Preset::Cpu],
            raw: Vec::new(),
        }
    }
}

impl EventSelection {
    /// Parses `cpu+alloc+jdk.ThreadPark#threshold=1ms`. The error says what is wrong.
    pub fn parse(value: &str) -> Result<EventSelection, String> {
        let mut sel = EventSelection {
            presets: Vec::new(),
            raw: Vec::new(),
        };
        for item in value.split('+') {
            let item = item.trim();
            if item.is_empty() {
                return Err("empty entry (expected e.g. cpu+alloc+lock+park+io)".into());
            }
            if item.contains('.') || item.contains('#') {
                let raw = parse_raw(item)?;
                if sel.raw.iter().any(|r| r.name == raw.name) {
                    return Err(format!("event {} given twice", raw.name));
                }
                sel.raw.push(raw);
            } else {
                let p = Preset::parse(item).ok_or_else(|| {
                    let known: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                    format!(
                        "unknown preset '{item}' (known: {}, or a JFR event as jdk.Name#setting=value)",
                        known.join(", ")
                    )
                })?;
                if !sel.presets.contains(&p) {
                    sel.presets.push(p);
                }
            }
        }
        Ok(sel)
    }
}

impl fmt::Display for EventSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items: Vec<String> = self.presets.iter().map(|p| p.name().to_string()).collect();
        for r in &self.raw {
            let mut s = r.name.clone();
            for (k, v) in &r.settings {
                s.push_str(&format!("#{k}={v}"));
            }
            items.push(s);
        }
        f.write_str(&items.join("+"))
    }
}

fn parse_raw(item: &str) -> Result<RawEvent, String> {
    let mut parts = item.split('#');
    let name = parts.next().unwrap_or("").trim();
    let valid_name = !name.is_empty()
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '$');
    if !valid_name {
        return Err(format!(
            "bad event name in '{item}' (expected e.g. jdk.ThreadPark#threshold=1ms)"
        ));
    }
    let mut settings: Vec<(String, String)> = Vec::new();
    for s in parts {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("missing '=' in setting '{s}' of {name}"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("bad setting name '{k}' for {name}"));
        }
        if v.is_empty() || v.contains(['|', '\n', '\r']) {
            return Err(format!("bad value '{v}' for {name}#{k}"));
        }
        if settings.iter().any(|(x, _)| x == k) {
            return Err(format!("setting {k} given twice for {name}"));
        }
        settings.push((k.to_string(), jfr_value(v)));
    }
    Ok(RawEvent {
        name: name.to_string(),
        settings,
    })
}

/// `10ms` → `10 ms` (JFR's timespan spelling); anything else unchanged.
fn jfr_value(v: &str) -> String {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (digits, unit) = v.split_at(split);
    if !digits.is_empty() && matches!(unit, "ns" | "us" | "ms" | "s" | "m" | "h" | "d") {
        format!("{digits} {unit}")
    } else {
        v.to_string()
    }
}

/// Parses `throttle=`: a CPU-time period (`10ms`, `500us`) or a rate (`500/s`, `20/ms`);
/// returns the JFR setting value (`10 ms`, `500/s`).
pub fn parse_throttle(value: &str) -> Result<String, String> {
    let v = value.trim();
    let bad = || format!("expected a period such as 10ms or a rate such as 500/s, got '{v}'");
    if let Some((n, unit)) = v.split_once('/') {
        let n: u64 = n.parse().map_err(|_| bad())?;
        if n == 0 || !matches!(unit, "ns" | "us" | "ms" | "s" | "m" | "h" | "d") {
            return Err(bad());
        }
        return Ok(format!("{n}/{unit}"));
    }
    let split = v.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = v.split_at(split);
    let n: u64 = digits.parse().map_err(|_| bad())?;
    if n == 0 || !matches!(unit, "ns" | "us" | "ms" | "s") {
        return Err(bad());
    }
    Ok(format!("{n} {unit}"))
}

/// How quickly samples travel from JFR to the sinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Latency {
    /// JFR's own flush, about once a second.
    #[default]
    Default,
    /// The agent forces a JFR flush every `interval_ns`.
    Live { interval_ns: i64 },
}

/// Forced-flush interval of `latency=live`.
pub const LIVE_INTERVAL_NS: i64 = 10 * MS;

impl Latency {
    /// `default`, `live` (a forced flush every 10 ms) or `live:DURATION` (1 ms … 1 s).
    pub fn parse(value: &str) -> Result<Latency, String> {
        match value.trim() {
            "default" => Ok(Latency::Default),
            "live" => Ok(Latency::Live {
                interval_ns: LIVE_INTERVAL_NS,
            }),
            other => {
                let d = other.strip_prefix("live:").ok_or_else(|| {
                    format!("expected default, live or live:DURATION, got '{other}'")
                })?;
                let ns = crate::config::parse_duration("latency", d).map_err(|e| e.to_string())?;
                if !(MS..=1_000 * MS).contains(&ns) {
                    return Err(format!(
                        "live flush interval '{d}' out of range (1ms to 1s)"
                    ));
                }
                Ok(Latency::Live { interval_ns: ns })
            }
        }
    }
}

/// One bridge line: (fallback, event name, settings).
pub type Line = (bool, String, Vec<(String, String)>);

fn push_line(lines: &mut Vec<Line>, fallback: bool, name: &str, settings: &[(&str, &str)]) {
    let mut s: Vec<(String, String)> = vec![("stackTrace".into(), "true".into())];
    s.extend(settings.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    lines.push((fallback, name.to_string(), s));
}

/// The bridge's event configuration: one `NAME|key=value|...` line per event. A line starting
/// with `?` is the fallback of the line before it: enabled only when the running JDK lacks that
/// event. `period_ns` is the sampling period (`period=`), `throttle` the `throttle=` value as
/// returned by [`parse_throttle`], `sampler` the `cpu_sampler=` choice.
pub fn bridge_config(
    sel: &EventSelection,
    period_ns: i64,
    throttle: Option<&str>,
    sampler: CpuSampler,
) -> String {
    let mut out = String::new();
    for (fallback, name, settings) in &event_lines(sel, period_ns, throttle, sampler) {
        if *fallback {
            out.push('?');
        }
        out.push_str(name);
        for (k, v) in settings {
            out.push('|');
            out.push_str(k);
            out.push('=');
            out.push_str(v);
        }
        out.push('\n');
    }
    out
}

/// The events to enable with their final settings (presets, then raw entries applied), in the
/// order of [`bridge_config`]'s lines.
pub fn event_lines(
    sel: &EventSelection,
    period_ns: i64,
    throttle: Option<&str>,
    sampler: CpuSampler,
) -> Vec<Line> {
    let period = format!("{} ms", (period_ns as f64) / 1e6);
    let mut lines: Vec<Line> = Vec::new();
    let mut add = |fallback: bool, name: &str, settings: &[(&str, &str)]| {
        push_line(&mut lines, fallback, name, settings)
    };
    for p in &sel.presets {
        match p {
            Preset::Cpu if sampler == CpuSampler::Execution => {
                add(false, "jdk.ExecutionSample", &[("period", &period)]);
            }
            Preset::Cpu => {
                let cpu_throttle = throttle
                    .map(str::to_string)
                    .unwrap_or_else(|| period.clone());
                add(false, "jdk.CPUTimeSample", &[("throttle", &cpu_throttle)]);
                add(true, "jdk.ExecutionSample", &[("period", &period)]);
            }
            Preset::Native => add(false, "jdk.NativeMethodSample", &[("period", &period)]),
            Preset::Alloc => add(
                false,
                "jdk.ObjectAllocationSample",
                &[("throttle", ALLOC_THROTTLE)],
            ),
            Preset::Lock => {
                add(
                    false,
                    "jdk.JavaMonitorEnter",
                    &[("threshold", WAIT_THRESHOLD)],
                );
                add(
                    false,
                    "jdk.JavaMonitorWait",
                    &[("threshold", WAIT_THRESHOLD)],
                );
            }
            Preset::Park => add(false, "jdk.ThreadPark", &[("threshold", WAIT_THRESHOLD)]),
            Preset::Io => {
                for e in [
                    "jdk.SocketRead",
                    "jdk.SocketWrite",
                    "jdk.FileRead",
                    "jdk.FileWrite",
                ] {
                    add(false, e, &[("threshold", WAIT_THRESHOLD)]);
                }
            }
        }
    }
    for r in &sel.raw {
        // A raw entry edits the line of a preset enabling the same event in place; naming a
        // fallback event explicitly makes it a plain line (always enabled).
        let i = match lines.iter().position(|(_, n, _)| *n == r.name) {
            Some(i) => {
                lines[i].0 = false;
                i
            }
            None => {
                push_line(&mut lines, false, &r.name, &[]);
                lines.len() - 1
            }
        };
        let settings = &mut lines[i].2;
        for (k, v) in &r.settings {
            match settings.iter_mut().find(|(x, _)| x == k) {
                Some(slot) => slot.1 = v.clone(),
                None => settings.push((k.clone(), v.clone())),
            }
        }
    }
    lines
}

/// The CPU sampling events among the enabled ones (`StreamBridge.enabledEvents`, comma-separated),
/// joined with `+`; `None` without one.
pub fn cpu_sampler_in_use(enabled: &str) -> Option<String> {
    let cpu: Vec<&str> = enabled
        .split(',')
        .map(str::trim)
        .filter(|e| crate::value::kind_of(e) == crate::value::ValueKind::CpuNanos)
        .collect();
    (!cpu.is_empty()).then(|| cpu.join("+"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
