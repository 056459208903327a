//! What one contextualised sample is worth, per JFR event type: the value type an aggregating
//! sink (pprof, collapsed, svg) should sum. Pure.
//!
//! | events | sample type | unit | value of one sample |
//! |---|---|---|---|
//! | `jdk.ExecutionSample`, `jdk.CPUTimeSample` | `cpu` | `nanoseconds` | the sampling period the JVM really used (the sample's `weight`), else the configured one |
//! | `jdk.NativeMethodSample` | `native` | `nanoseconds` | likewise |
//! | `jdk.ObjectAllocationSample` | `alloc_space` | `bytes` | the event's `weight` |
//! | `jdk.JavaMonitorEnter`, `jdk.JavaMonitorWait`, `jdk.ThreadPark`, `jdk.Socket*`, `jdk.File*`, and any other event with a duration | `wait` | `nanoseconds` | the event's `duration_ns` |
//! | anything else | `samples` | `count` | 1 |
//!
//! Every kind also counts samples (`samples`/`count`, 1 each).
//!
//! A [`ValuePlan`] is decided once from the `events=` selection, before any sample arrives: the
//! kinds the enabled events can produce (so every output of a rotation carries the same value
//! types) and the sampling period of each sampling event. The period of one sample is that of its
//! own event: `period=` for `jdk.ExecutionSample`/`jdk.NativeMethodSample`, the `throttle` for
//! `jdk.CPUTimeSample` (a duration as is; a rate `N/unit` is, as in HotSpot, the active processor
//! count × unit / N), each overridable by a raw `events=` entry.
//!
//! The JVM samples at the shortest period of all running recordings that enable an event, so
//! beside another recording the real period can be shorter than the configured one. The stream
//! bridge therefore puts the real period into each sampling event's `weight` (the
//! `samplingPeriod` field of `jdk.CPUTimeSample`; for `jdk.ExecutionSample` and
//! `jdk.NativeMethodSample` the period JFR applied at the sample's instant, from the settings of
//! every recording, see ARCHITECTURE.md) and a sample with a positive weight is worth that; the
//! configured period is the fallback (weight 0).
pub use crate::core::events::table::kind_of;
use crate::core::events::{event_lines, CpuSampler, EventSelection};
pub use crate::core::kind::ValueKind;
use crate::core::model::ContextualSample;
use crate::core::units::setting_period_ns;

/// The value kinds an enabled event can produce: its own, or for an event this table does not
/// know, `wait` (when its samples have a duration) and `samples` (when they do not).
pub fn possible_kinds(event: &str) -> &'static [ValueKind] {
    match kind_of(event) {
        ValueKind::Count => &[ValueKind::Count, ValueKind::WaitNanos],
        ValueKind::CpuNanos => &[ValueKind::CpuNanos],
        ValueKind::NativeNanos => &[ValueKind::NativeNanos],
        ValueKind::AllocBytes => &[ValueKind::AllocBytes],
        ValueKind::WaitNanos => &[ValueKind::WaitNanos],
    }
}

/// `(sample_type, unit)` of an event type, e.g. `("alloc_space", "bytes")`.
pub fn value_of(event: &str) -> (&'static str, &'static str) {
    kind_of(event).sample_type()
}

/// The value of one sample in its kind's unit. `period_ns` is the configured sampling period (the
/// `period=` option; for `jdk.CPUTimeSample` a duration `throttle=` when one was given), used
/// for a sampling event only when the sample carries no real period (`weight` 0).
/// Unknown event types with a duration count as waits.
pub fn sample_value(s: &ContextualSample, period_ns: i64) -> (ValueKind, i64) {
    match kind_of(&s.event) {
        ValueKind::Count if s.duration_ns > 0 => (ValueKind::WaitNanos, s.duration_ns),
        ValueKind::Count => (ValueKind::Count, 1),
        k @ (ValueKind::CpuNanos | ValueKind::NativeNanos) if s.weight > 0 => (k, s.weight),
        k @ (ValueKind::CpuNanos | ValueKind::NativeNanos) => (k, period_ns.max(0)),
        ValueKind::AllocBytes => (ValueKind::AllocBytes, s.weight.max(0)),
        ValueKind::WaitNanos => (ValueKind::WaitNanos, s.duration_ns.max(0)),
    }
}

/// How the aggregated sinks value samples, decided from the enabled events (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuePlan {
    /// Kinds the enabled events can produce, sorted, without duplicates, never empty.
    kinds: Vec<ValueKind>,
    /// Per sampling event (`cpu`/`native` kinds): nanoseconds per sample.
    periods: Vec<(String, i64)>,
    /// For sampling events not listed (none when the plan comes from the events).
    default_period_ns: i64,
}

impl Default for ValuePlan {
    /// `events=cpu` with the default 20 ms period.
    fn default() -> Self {
        ValuePlan::new(
            &EventSelection::default(),
            20_000_000,
            None,
            CpuSampler::default(),
            1,
        )
    }
}

impl ValuePlan {
    /// The plan of `events=sel` with `period=period_ns` and `throttle=` (as returned by
    /// [`crate::core::units::parse_throttle`]) and `cpu_sampler=`; `cpus` is the active processor
    /// count, for a `jdk.CPUTimeSample` throttle given as a rate.
    pub fn new(
        sel: &EventSelection,
        period_ns: i64,
        throttle: Option<&str>,
        sampler: CpuSampler,
        cpus: u32,
    ) -> Self {
        let mut kinds = Vec::new();
        let mut periods = Vec::new();
        for (_, name, settings) in event_lines(sel, period_ns, throttle, sampler) {
            kinds.extend_from_slice(possible_kinds(&name));
            if matches!(kind_of(&name), ValueKind::CpuNanos | ValueKind::NativeNanos) {
                let setting = settings
                    .iter()
                    .find(|(k, _)| k == "period" || k == "throttle")
                    .and_then(|(_, v)| setting_period_ns(v, cpus));
                periods.push((name, setting.unwrap_or(period_ns)));
            }
        }
        if kinds.is_empty() {
            kinds.push(ValueKind::Count);
        }
        kinds.sort();
        kinds.dedup();
        ValuePlan {
            kinds,
            periods,
            default_period_ns: period_ns,
        }
    }

    /// The kinds the enabled events can produce, in [`ValueKind`] order.
    pub fn kinds(&self) -> &[ValueKind] {
        &self.kinds
    }

    /// The kind a profile shows first: `cpu` when enabled, else the first kind other than
    /// `samples`, else `samples`.
    pub fn default_kind(&self) -> ValueKind {
        self.kinds
            .iter()
            .copied()
            .find(|k| *k != ValueKind::Count)
            .unwrap_or(ValueKind::Count)
    }

    /// The sampling period of `kind` (`cpu` or `native`): that of its first enabled event.
    pub fn period_of(&self, kind: ValueKind) -> Option<i64> {
        self.periods
            .iter()
            .find(|(e, _)| kind_of(e) == kind)
            .map(|(_, p)| *p)
    }

    /// The kind and value of one sample (see [`sample_value`]), with its own event's period.
    pub fn value(&self, s: &ContextualSample) -> (ValueKind, i64) {
        let period = self
            .periods
            .iter()
            .find(|(e, _)| **e == *s.event)
            .map_or(self.default_period_ns, |(_, p)| *p);
        sample_value(s, period)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::ThreadInfo;
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
            context: Err(crate::core::model::UnknownReason::NoThread),
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

    fn plan(events: &str, throttle: Option<&str>) -> ValuePlan {
        let sel = EventSelection::parse(events).unwrap();
        ValuePlan::new(&sel, 20_000_000, throttle, CpuSampler::CpuTime, 4)
    }

    #[test]
    fn plans_list_the_kinds_of_the_enabled_events() {
        use ValueKind::*;
        assert_eq!(plan("cpu", None).kinds(), [CpuNanos]);
        let sel = EventSelection::default();
        assert_eq!(
            ValuePlan::new(&sel, 20_000_000, None, CpuSampler::Execution, 4),
            ValuePlan::default()
        );
        assert_eq!(
            plan("park+alloc+lock", None).kinds(),
            [AllocBytes, WaitNanos]
        );
        assert_eq!(
            plan("cpu+native+io", None).kinds(),
            [CpuNanos, NativeNanos, WaitNanos]
        );
        // An event the table does not know may be timed or not.
        assert_eq!(plan("jdk.GCPhasePause", None).kinds(), [Count, WaitNanos]);
        assert_eq!(plan("cpu+alloc", None).default_kind(), CpuNanos);
        assert_eq!(plan("park+alloc", None).default_kind(), AllocBytes);
        assert_eq!(plan("jdk.X", None).default_kind(), WaitNanos);
    }

    #[test]
    fn periods_follow_each_events_own_setting() {
        let mut s = sample("jdk.ExecutionSample", 0, 0);
        let p = plan("cpu", None);
        assert_eq!(p.value(&s), (ValueKind::CpuNanos, 20_000_000));
        assert_eq!(p.period_of(ValueKind::CpuNanos), Some(20_000_000));
        assert_eq!(p.period_of(ValueKind::NativeNanos), None);
        // A raw entry overrides the preset's period, per event.
        let p = plan("cpu+jdk.ExecutionSample#period=5ms", Some("10 ms"));
        assert_eq!(p.value(&s), (ValueKind::CpuNanos, 5_000_000));
        s.event = Arc::from("jdk.CPUTimeSample");
        assert_eq!(p.value(&s), (ValueKind::CpuNanos, 10_000_000));
        // A rate: 4 processors at 500/s is 8 ms of CPU per sample and thread.
        assert_eq!(plan("cpu", Some("500/s")).value(&s).1, 8_000_000);
        s.event = Arc::from("jdk.NativeMethodSample");
        assert_eq!(
            plan("native", None).value(&s),
            (ValueKind::NativeNanos, 20_000_000)
        );
        assert_eq!(setting_period_ns("0.5 ms", 1), Some(500_000));
        assert_eq!(setting_period_ns("2/ms", 1), Some(500_000));
        for bad in ["", "ms", "5 parsecs", "0/s", "x/s", "everyChunk"] {
            assert_eq!(setting_period_ns(bad, 1), None, "{bad:?}");
        }
    }

    #[test]
    fn a_real_period_in_the_weight_wins_over_the_configured_one() {
        let p = plan("cpu+native", None);
        for event in [
            "jdk.ExecutionSample",
            "jdk.CPUTimeSample",
            "jdk.NativeMethodSample",
        ] {
            let mut s = sample(event, 0, 0);
            let kind = kind_of(event);
            assert_eq!(p.value(&s), (kind, 20_000_000), "{event}");
            // Another recording made the JVM sample every 10 ms: each sample is worth 10 ms.
            s.weight = 10_000_000;
            assert_eq!(p.value(&s), (kind, 10_000_000), "{event}");
        }
    }

    #[test]
    fn names_and_descriptions() {
        assert_eq!(ValueKind::AllocBytes.name(), "alloc");
        assert_eq!(ValueKind::Count.describe(7, 7), "7 samples");
        assert_eq!(
            ValueKind::WaitNanos.describe(12_540_000, 3),
            "12.5 ms of wait in 3 samples"
        );
        assert_eq!(
            ValueKind::AllocBytes.describe(4096, 2),
            "4096 bytes allocated in 2 samples"
        );
    }
}
