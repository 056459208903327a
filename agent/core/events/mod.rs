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

use crate::core::units::{jfr_timespan, parse_duration};

pub mod bridge;
pub mod table;

pub use bridge::{bridge_config, cpu_sampler_in_use, event_lines, Line};
pub use table::{Preset, ALLOC_THROTTLE, WAIT_THRESHOLD};

const MS: i64 = 1_000_000;

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
        settings.push((k.to_string(), jfr_timespan(v)));
    }
    Ok(RawEvent {
        name: name.to_string(),
        settings,
    })
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
                let ns = parse_duration(d).ok_or_else(|| {
                    format!("bad duration '{d}' for latency (expected e.g. 20ms, 1s)")
                })?;
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

#[cfg(test)]
mod tests;
