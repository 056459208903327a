//! The one table of the JFR event types the agent knows: which preset enables each (and with
//! which setting), what one sample of it is worth, whether it is a CPU sampler, and how the `jfr`
//! sink declares it. Read by `events=` (the bridge's lines), the value plan, the aggregating sinks
//! (the `event` label), the summary (the CPU sampler in use) and the jfr sink (the event type's
//! label, thread field and category, mirroring the JDK's own `metadata.xml`).
//!
//! Adding an event is one entry here. An event not in the table (a raw `events=jdk.Name` entry)
//! is worth a count, or its duration when it has one, and gets a generic JFR type.

use crate::core::kind::ValueKind;

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

/// The setting a preset enables an event with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// `period` = the `period=` option.
    Period,
    /// `throttle` = the `throttle=` option, default the `period=` (the CPU-time sampler).
    CpuThrottle,
    /// `throttle` = this rate (JFR's `profile.jfc` value).
    Throttle(&'static str),
    /// `threshold` = this duration (JFR's `profile.jfc` value).
    Threshold(&'static str),
}

/// Where the JFR event keeps what a sample weighs, as the jfr sink writes it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JfrWeight {
    None,
    /// `weight`: allocated bytes.
    Bytes,
    /// `samplingPeriod`: the CPU-time period.
    Period,
}

/// One JFR event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventType {
    pub name: &'static str,
    /// The preset enabling it; `None`: only a raw `events=` entry does.
    pub preset: Option<Preset>,
    pub setting: Setting,
    /// What one sample is worth.
    pub kind: ValueKind,
    /// A CPU sampler: no `event` label in pprof/collapsed, its period shown in the summary.
    pub cpu: bool,
    /// The JDK's label of the type (`@Label`).
    pub label: &'static str,
    /// `sampledThread` for the JDK's stack samplers, else `eventThread`.
    pub thread_field: &'static str,
    pub weight: JfrWeight,
    /// The JDK's category of the type.
    pub category: &'static [&'static str],
}

/// Threshold of the duration presets (`lock`, `park`, `io`): JFR's `profile.jfc` value.
pub const WAIT_THRESHOLD: &str = "10 ms";
/// Throttle of the `alloc` preset: JFR's `profile.jfc` value.
pub const ALLOC_THROTTLE: &str = "300/s";

pub const PROFILING: &[&str] = &["Java Virtual Machine", "Profiling"];
pub const JAVA_APP: &[&str] = &["Java Application"];
pub const STATISTICS: &[&str] = &["Java Application", "Statistics"];

const fn sampler(
    name: &'static str,
    preset: Preset,
    setting: Setting,
    kind: ValueKind,
    label: &'static str,
    thread_field: &'static str,
    weight: JfrWeight,
) -> EventType {
    EventType {
        name,
        preset: Some(preset),
        setting,
        kind,
        cpu: matches!(kind, ValueKind::CpuNanos),
        label,
        thread_field,
        weight,
        category: PROFILING,
    }
}

const fn wait(name: &'static str, preset: Option<Preset>, label: &'static str) -> EventType {
    EventType {
        name,
        preset,
        setting: Setting::Threshold(WAIT_THRESHOLD),
        kind: ValueKind::WaitNanos,
        cpu: false,
        label,
        thread_field: "eventThread",
        weight: JfrWeight::None,
        category: JAVA_APP,
    }
}

/// The table. Order matters only within a preset: it is the order of the bridge's lines.
pub const EVENTS: [EventType; 12] = [
    sampler(
        "jdk.ExecutionSample",
        Preset::Cpu,
        Setting::Period,
        ValueKind::CpuNanos,
        "Method Profiling Sample",
        "sampledThread",
        JfrWeight::None,
    ),
    sampler(
        "jdk.CPUTimeSample",
        Preset::Cpu,
        Setting::CpuThrottle,
        ValueKind::CpuNanos,
        "CPU Time Sample",
        "eventThread",
        JfrWeight::Period,
    ),
    sampler(
        "jdk.NativeMethodSample",
        Preset::Native,
        Setting::Period,
        ValueKind::NativeNanos,
        "Method Profiling Sample Native",
        "sampledThread",
        JfrWeight::None,
    ),
    EventType {
        category: JAVA_APP,
        ..sampler(
            "jdk.ObjectAllocationSample",
            Preset::Alloc,
            Setting::Throttle(ALLOC_THROTTLE),
            ValueKind::AllocBytes,
            "Object Allocation Sample",
            "eventThread",
            JfrWeight::Bytes,
        )
    },
    wait(
        "jdk.JavaMonitorEnter",
        Some(Preset::Lock),
        "Java Monitor Blocked",
    ),
    wait(
        "jdk.JavaMonitorWait",
        Some(Preset::Lock),
        "Java Monitor Wait",
    ),
    wait("jdk.ThreadPark", Some(Preset::Park), "Java Thread Park"),
    wait("jdk.SocketRead", Some(Preset::Io), "Socket Read"),
    wait("jdk.SocketWrite", Some(Preset::Io), "Socket Write"),
    wait("jdk.FileRead", Some(Preset::Io), "File Read"),
    wait("jdk.FileWrite", Some(Preset::Io), "File Write"),
    wait("jdk.FileForce", None, "File Force"),
];

/// The entry of `name`, when the table has one.
pub fn lookup(name: &str) -> Option<&'static EventType> {
    EVENTS.iter().find(|e| e.name == name)
}

/// The value kind of an event type, by name: the table's, else `Count`.
pub fn kind_of(name: &str) -> ValueKind {
    lookup(name).map_or(ValueKind::Count, |e| e.kind)
}

/// Whether `name` is one of the CPU samplers.
pub fn is_cpu_event(name: &str) -> bool {
    lookup(name).is_some_and(|e| e.cpu)
}

/// The events `preset` enables, in the table's order.
pub fn of_preset(preset: Preset) -> impl Iterator<Item = &'static EventType> {
    EVENTS.iter().filter(move |e| e.preset == Some(preset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_preset_has_events() {
        for (i, e) in EVENTS.iter().enumerate() {
            assert!(EVENTS[..i].iter().all(|x| x.name != e.name), "{}", e.name);
        }
        for p in Preset::ALL {
            assert!(of_preset(p).next().is_some(), "{p:?}");
        }
    }

    #[test]
    fn lookups() {
        assert!(is_cpu_event("jdk.ExecutionSample") && is_cpu_event("jdk.CPUTimeSample"));
        assert!(!is_cpu_event("jdk.NativeMethodSample") && !is_cpu_event("jdk.GCPhasePause"));
        assert_eq!(kind_of("jdk.FileForce"), ValueKind::WaitNanos);
        assert_eq!(kind_of("jdk.GCPhasePause"), ValueKind::Count);
    }
}
