//! What one contextualised sample is worth, per JFR event type: the value type an aggregating
//! sink (pprof, collapsed, svg) should sum. Pure.
//!
//! | events | sample type | unit | value of one sample |
//! |---|---|---|---|
//! | `jdk.ExecutionSample`, `jdk.CPUTimeSample` | `cpu` | `nanoseconds` | the sampling period (`period=`, or a duration `throttle=`) |
//! | `jdk.NativeMethodSample` | `native` | `nanoseconds` | the sampling period |
//! | `jdk.ObjectAllocationSample` | `alloc_space` | `bytes` | the event's `weight` |
//! | `jdk.JavaMonitorEnter`, `jdk.JavaMonitorWait`, `jdk.ThreadPark`, `jdk.Socket*`, `jdk.File*`, and any other event with a duration | `wait` | `nanoseconds` | the event's `duration_ns` |
//! | anything else | `samples` | `count` | 1 |
//!
//! Every kind also counts samples (`samples`/`count`, 1 each).

use crate::model::ContextualSample;

/// The kind of value an event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ValueKind {
    /// 1 per sample.
    Count,
    /// CPU time: one sampling period per sample.
    CpuNanos,
    /// Time in native code: one sampling period per sample.
    NativeNanos,
    /// Allocated bytes (the sample's weight).
    AllocBytes,
    /// Time spent blocked or waiting (the event's duration).
    WaitNanos,
}

impl ValueKind {
    /// The pprof `sample_type` `(type, unit)` of this kind.
    pub fn sample_type(self) -> (&'static str, &'static str) {
        match self {
            ValueKind::Count => ("samples", "count"),
            ValueKind::CpuNanos => ("cpu", "nanoseconds"),
            ValueKind::NativeNanos => ("native", "nanoseconds"),
            ValueKind::AllocBytes => ("alloc_space", "bytes"),
            ValueKind::WaitNanos => ("wait", "nanoseconds"),
        }
    }
}

/// The value kind of an event type, by name.
pub fn kind_of(event: &str) -> ValueKind {
    match event {
        "jdk.ExecutionSample" | "jdk.CPUTimeSample" => ValueKind::CpuNanos,
        "jdk.NativeMethodSample" => ValueKind::NativeNanos,
        "jdk.ObjectAllocationSample" => ValueKind::AllocBytes,
        "jdk.JavaMonitorEnter"
        | "jdk.JavaMonitorWait"
        | "jdk.ThreadPark"
        | "jdk.SocketRead"
        | "jdk.SocketWrite"
        | "jdk.FileRead"
        | "jdk.FileWrite"
        | "jdk.FileForce" => ValueKind::WaitNanos,
        _ => ValueKind::Count,
    }
}

/// `(sample_type, unit)` of an event type, e.g. `("alloc_space", "bytes")`.
pub fn value_of(event: &str) -> (&'static str, &'static str) {
    kind_of(event).sample_type()
}

/// The value of one sample in its kind's unit. `period_ns` is the sampling period (the
/// `period=` option; for `jdk.CPUTimeSample` a duration `throttle=` when one was given).
/// Unknown event types with a duration count as waits.
pub fn sample_value(s: &ContextualSample, period_ns: i64) -> (ValueKind, i64) {
    match kind_of(&s.event) {
        ValueKind::Count if s.duration_ns > 0 => (ValueKind::WaitNanos, s.duration_ns),
        ValueKind::Count => (ValueKind::Count, 1),
        k @ (ValueKind::CpuNanos | ValueKind::NativeNanos) => (k, period_ns.max(0)),
        ValueKind::AllocBytes => (ValueKind::AllocBytes, s.weight.max(0)),
        ValueKind::WaitNanos => (ValueKind::WaitNanos, s.duration_ns.max(0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ThreadInfo;
    use std::sync::Arc;

    fn sample(event: &str, duration_ns: i64, weight: i64) -> ContextualSample {
        ContextualSample {
            event: Arc::from(event),
            time_ns: 1,
            duration_ns,
            thread: ThreadInfo {
                id: Some(1),
                name: Arc::from("t"),
                is_virtual: false,
            },
            context: Err(crate::model::UnknownReason::NoThread),
            weight,
            frames: Vec::new(),
            truncated: false,
        }
    }

    #[test]
    fn value_types_per_event() {
        assert_eq!(value_of("jdk.ExecutionSample"), ("cpu", "nanoseconds"));
        assert_eq!(value_of("jdk.CPUTimeSample"), ("cpu", "nanoseconds"));
        assert_eq!(
            value_of("jdk.NativeMethodSample"),
            ("native", "nanoseconds")
        );
        assert_eq!(
            value_of("jdk.ObjectAllocationSample"),
            ("alloc_space", "bytes")
        );
        assert_eq!(value_of("jdk.ThreadPark"), ("wait", "nanoseconds"));
        assert_eq!(value_of("jdk.JavaMonitorEnter"), ("wait", "nanoseconds"));
        assert_eq!(value_of("jdk.SocketRead"), ("wait", "nanoseconds"));
        assert_eq!(value_of("jdk.Whatever"), ("samples", "count"));
    }

    #[test]
    fn values_per_sample() {
        let p = 10_000_000;
        assert_eq!(
            sample_value(&sample("jdk.ExecutionSample", 0, 0), p),
            (ValueKind::CpuNanos, p)
        );
        assert_eq!(
            sample_value(&sample("jdk.ObjectAllocationSample", 0, 4096), p),
            (ValueKind::AllocBytes, 4096)
        );
        assert_eq!(
            sample_value(&sample("jdk.ThreadPark", 15_000_000, 0), p),
            (ValueKind::WaitNanos, 15_000_000)
        );
        assert_eq!(
            sample_value(&sample("jdk.GCPhasePause", 5, 0), p),
            (ValueKind::WaitNanos, 5)
        );
        assert_eq!(
            sample_value(&sample("jdk.Whatever", 0, 0), p),
            (ValueKind::Count, 1)
        );
    }
}
