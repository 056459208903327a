//! Event types as the JDK declares them (name, label, category, `startTime`, `duration` where the
//! JDK's has one, the thread field, `stackTrace`, the value jfrctx carries), plus jfrctx's two
//! fields: `context` (a `jfrctx.Context` constant, null when the sample had no context) and
//! `contextUnknown` (the reason the context could not be decided, null when it was).
//!
//! jfrctx receives a sample's time, duration, thread, stack and one value (`weight`), so an
//! event type keeps those of the JDK's fields and leaves out the others (a monitor's class, a
//! park's timeout, a socket's address, ...): readers see them as absent, not as made-up values.
//! An event type jfrctx does not know (a raw `events=` entry) is written with `startTime`,
//! `duration`, `eventThread` and `stackTrace`.

use super::metadata::{
    Annotation, Field, Type, CATEGORY, CONTEXT, CONTEXTUAL, DATA_AMOUNT, DESCRIPTION, LABEL, LONG,
    STACK_TRACE, STRING, THREAD, TIMESPAN, TIMESTAMP,
};
use crate::core::events::table::{self, JfrWeight};
use crate::core::kind::ValueKind;

/// Name of the context-interval event type (see [`context_span_type`]).
pub const CONTEXT_SPAN: &str = "jfrctx.ContextSpan";

/// `jfrctx.ContextSpan { startTime, duration, eventThread, context }`, `context` annotated
/// `@jdk.jfr.Contextual`: JDK 25's `jfr print` shows the contextual fields of the spans that
/// cover an event on the same thread (`Context: ContextSpan.context = ...`) on that event.
pub fn context_span_type(id: u64) -> Type {
    Type {
        id,
        name: CONTEXT_SPAN.into(),
        super_type: super::metadata::EVENT,
        simple: false,
        fields: vec![
            Field::new("startTime", LONG)
                .label("Start Time")
                .with(Annotation::new(TIMESTAMP, "TICKS")),
            Field::new("duration", LONG)
                .label("Duration")
                .with(Annotation::new(TIMESPAN, "TICKS")),
            Field::pooled("eventThread", THREAD).label("Event Thread"),
            Field::pooled("context", CONTEXT)
                .label("Context")
                .with(Annotation::marker(CONTEXTUAL)),
        ],
        annotations: vec![
            Annotation::new(LABEL, "Recording Context Span"),
            Annotation::new(
                DESCRIPTION,
                "The thread had this context over the span: it was blocked in the event the \
                 span covers",
            ),
            Annotation::array(CATEGORY, &["jfrctx"]),
        ],
    }
}

/// What an event of a type carries besides its time, thread and stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    None,
    /// `weight`, bytes (`jdk.ObjectAllocationSample`).
    Bytes,
    /// `samplingPeriod`, nanoseconds (`jdk.CPUTimeSample`).
    Period,
}

/// The layout of one event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub duration: bool,
    /// `sampledThread` for the JDK's samplers, else `eventThread`.
    pub thread_field: &'static str,
    pub value: Value,
    pub label: &'static str,
    pub category: &'static [&'static str],
}

/// The shape of `event`: the event table's for the types it knows, a generic one otherwise.
pub fn shape(event: &str) -> Shape {
    match table::lookup(event) {
        Some(e) => Shape {
            duration: e.kind == ValueKind::WaitNanos,
            thread_field: e.thread_field,
            value: match e.weight {
                JfrWeight::None => Value::None,
                JfrWeight::Bytes => Value::Bytes,
                JfrWeight::Period => Value::Period,
            },
            label: e.label,
            category: e.category,
        },
        None => Shape {
            duration: true,
            thread_field: "eventThread",
            value: Value::None,
            label: "",
            category: table::STATISTICS,
        },
    }
}

/// The metadata type of event `name` with type id `id`.
pub fn event_type(id: u64, name: &str) -> Type {
    let shape = shape(name);
    let mut fields = vec![Field::new("startTime", LONG)
        .label("Start Time")
        .with(Annotation::new(TIMESTAMP, "TICKS"))];
    if shape.duration {
        fields.push(
            Field::new("duration", LONG)
                .label("Duration")
                .with(Annotation::new(TIMESPAN, "TICKS")),
        );
    }
    let thread_label = if shape.thread_field == "sampledThread" {
        "Thread"
    } else {
        "Event Thread"
    };
    fields.push(Field::pooled(shape.thread_field, THREAD).label(thread_label));
    fields.push(Field::pooled("stackTrace", STACK_TRACE).label("Stack Trace"));
    match shape.value {
        Value::None => {}
        Value::Bytes => fields.push(
            Field::new("weight", LONG)
                .label("Sample Weight")
                .with(Annotation::new(DATA_AMOUNT, "BYTES")),
        ),
        Value::Period => fields.push(
            Field::new("samplingPeriod", LONG)
                .label("Sampling Period")
                .with(Annotation::new(TIMESPAN, "NANOSECONDS")),
        ),
    }
    fields.push(Field::pooled("context", CONTEXT).label("Context"));
    fields.push(Field::new("contextUnknown", STRING).label("Context Unknown"));
    let label = if shape.label.is_empty() {
        name
    } else {
        shape.label
    };
    Type {
        id,
        name: name.into(),
        super_type: super::metadata::EVENT,
        simple: false,
        fields,
        annotations: vec![
            Annotation::new(LABEL, label),
            Annotation::array(CATEGORY, shape.category),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &Type) -> Vec<&str> {
        t.fields.iter().map(|f| f.name.as_str()).collect()
    }

    #[test]
    fn jdk_layouts() {
        assert_eq!(
            names(&event_type(100, "jdk.ExecutionSample")),
            [
                "startTime",
                "sampledThread",
                "stackTrace",
                "context",
                "contextUnknown"
            ]
        );
        assert_eq!(
            names(&event_type(100, "jdk.ThreadPark")),
            [
                "startTime",
                "duration",
                "eventThread",
                "stackTrace",
                "context",
                "contextUnknown"
            ]
        );
        assert_eq!(
            names(&event_type(100, "jdk.ObjectAllocationSample"))[3],
            "weight"
        );
        assert_eq!(
            names(&event_type(100, "jdk.CPUTimeSample"))[3],
            "samplingPeriod"
        );
    }

    #[test]
    fn unknown_events_are_generic_and_labelled_by_name() {
        let t = event_type(101, "jdk.GCPhasePause");
        assert_eq!(
            names(&t)[..4],
            ["startTime", "duration", "eventThread", "stackTrace"]
        );
        assert_eq!(t.annotations[0], Annotation::new(LABEL, "jdk.GCPhasePause"));
    }
}
