//! The kinds of value a sample can be worth (count, CPU time, native time, bytes, wait), with
//! their pprof sample types and display units. Pure; imports nothing.

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

impl ValueKind {
    /// Short name, used in file names (`stacks.alloc.txt`): `samples`, `cpu`, `native`,
    /// `alloc`, `wait`.
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::Count => "samples",
            ValueKind::CpuNanos => "cpu",
            ValueKind::NativeNanos => "native",
            ValueKind::AllocBytes => "alloc",
            ValueKind::WaitNanos => "wait",
        }
    }

    /// What a quantity of this kind is called in a flame graph, and the factor turning a value
    /// into it: nanoseconds are shown as milliseconds.
    pub fn display_unit(self) -> (&'static str, f64) {
        match self {
            ValueKind::Count => ("samples", 1.0),
            ValueKind::CpuNanos => ("ms of CPU", 1e-6),
            ValueKind::NativeNanos => ("ms in native code", 1e-6),
            ValueKind::AllocBytes => ("bytes allocated", 1.0),
            ValueKind::WaitNanos => ("ms of wait", 1e-6),
        }
    }

    /// `value` in words, with the number of samples behind it: `12.5 ms of wait in 3 samples`,
    /// `4096 bytes allocated in 2 samples`, `7 samples`.
    pub fn describe(self, value: u64, samples: u64) -> String {
        let (unit, factor) = self.display_unit();
        match self {
            ValueKind::Count => format!("{samples} {unit}"),
            ValueKind::AllocBytes => format!("{value} {unit} in {samples} samples"),
            _ => format!("{:.1} {unit} in {samples} samples", value as f64 * factor),
        }
    }
}
