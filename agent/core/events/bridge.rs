//! The stream bridge's event configuration: one `NAME|key=value|...` line per event to enable,
//! from the `events=` selection and the event table. Pure.

use super::table::{is_cpu_event, of_preset, EventType, Preset, Setting};
use super::{CpuSampler, EventSelection};

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
    let setting = |e: &EventType| -> (&'static str, String) {
        match e.setting {
            Setting::Period => ("period", period.clone()),
            Setting::CpuThrottle => (
                "throttle",
                throttle.map_or_else(|| period.clone(), str::to_string),
            ),
            Setting::Throttle(v) => ("throttle", v.to_string()),
            Setting::Threshold(v) => ("threshold", v.to_string()),
        }
    };
    for &p in &sel.presets {
        // The `cpu` preset enables one sampler: `jdk.ExecutionSample`, or with
        // `cpu_sampler=cputime` `jdk.CPUTimeSample` and `jdk.ExecutionSample` as its fallback.
        let events: Vec<(bool, &EventType)> = match (p, sampler) {
            (Preset::Cpu, CpuSampler::Execution) => of_preset(p)
                .filter(|e| e.setting == Setting::Period)
                .map(|e| (false, e))
                .collect(),
            (Preset::Cpu, CpuSampler::CpuTime) => of_preset(p)
                .filter(|e| e.setting == Setting::CpuThrottle)
                .chain(of_preset(p).filter(|e| e.setting == Setting::Period))
                .enumerate()
                .map(|(i, e)| (i > 0, e))
                .collect(),
            _ => of_preset(p).map(|e| (false, e)).collect(),
        };
        for (fallback, e) in events {
            let (key, value) = setting(e);
            push_line(&mut lines, fallback, e.name, &[(key, &value)]);
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
        .filter(|e| is_cpu_event(e))
        .collect();
    (!cpu.is_empty()).then(|| cpu.join("+"))
}
