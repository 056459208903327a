//! The checks of `tests/it/otel.rs`: every sample's span against the spans the OTel agent
//! exported (thread, interval under one clock shift per trace), and the ground truth of `burn`.

use super::{Span, SERVLET, WORK};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Clock mapping slack at span edges (span epoch times vs sample `nanoTime`).
const TOLERANCE: i64 = 200_000;
/// The largest shift of one trace's span times against `nanoTime` accepted (see [`check`]).
const MAX_SHIFT: i64 = 20_000_000;
/// Threads a request's Context is handed to: the service's pool, and the virtual-thread
/// scheduler's carriers (the OTel agent wraps the `ForkJoinPool` task that mounts a virtual thread
/// in its `ContextPropagatingRunnable`: the carrier has the submitter's Context while it runs it).
const HANDOFF_THREADS: [&str; 2] = ["otel-pool-", "ForkJoinPool-1-worker-"];
/// The methods inside which the OTel agent keeps the submitter's Context attached on a handoff
/// thread for the whole run of a task: its wrapper of a `ForkJoinPool` task (the one that mounts
/// a virtual thread included) and the run methods its executor advice wraps
/// (`opentelemetry-java-instrumentation`, `executors/bootstrap` `ContextPropagatingRunnable`,
/// `JavaExecutorInstrumentation`/`FutureTask` and `ForkJoinTask` advice: attach on enter, close on
/// exit), and `RunnableInstrumentation`'s advice on every `Runnable`'s public `run()`, which is
/// how the `CompletableFuture` tasks of `/chain` get theirs on the pool. Outside the task's own
/// code (after it returned, before the scope closes) the thread still has that Context, so a
/// sample there carries the span even after the span ended: seen 5.5 ms after the end on a loaded
/// machine, a carrier preempted in `ContextPropagatingRunnable.run` after the virtual thread it had
/// mounted finished its request, and 3.8 ms after it in `CompletableFuture$Completion.run`
/// closing its scope after the stage it ran had completed the future the servlet waited on.
const TASK_RUN_FRAMES: [&str; 6] = [
    "io.opentelemetry.javaagent.bootstrap.executors.ContextPropagatingRunnable.run",
    "java.util.concurrent.FutureTask.run",
    "java.util.concurrent.ForkJoinTask.doExec",
    "java.util.concurrent.CompletableFuture$Completion.run",
    "java.util.concurrent.CompletableFuture$AsyncSupply.run",
    "java.util.concurrent.CompletableFuture$AsyncRun.run",
];

#[derive(Default)]
pub(super) struct Figures {
    pub(super) with_span: u64,
    pub(super) own_thread: u64,
    pub(super) handed_off: u64,
    /// Handed-off samples in the OTel task wrapper outside the task (see [`TASK_RUN_FRAMES`]).
    pub(super) in_task_wrapper: u64,
    pub(super) truth: BTreeMap<&'static str, u64>,
    /// Ground-truth samples whose thread ran more than one `work_X` span within [`MAX_SHIFT`].
    pub(super) truth_ambiguous: u64,
    pub(super) truth_unknown: u64,
    pub(super) on_virtual: u64,
    pub(super) wrong: Vec<String>,
    /// The largest clock shift a trace needed (ns), and the traces checked.
    pub(super) max_shift: i64,
    pub(super) traces: usize,
}

/// The outermost frames of the threads a Context is handed to (leaf first, so the last): a stack
/// that does not end in one of them is cut short.
const THREAD_ENTRY_FRAMES: [&str; 2] = [
    "java.lang.Thread.run",
    "java.util.concurrent.ForkJoinWorkerThread.run",
];

/// Whether the sample's thread is in an OTel task wrapper's own code ([`TASK_RUN_FRAMES`]), not
/// in the task (no frame of the service, no virtual thread running). A stack cut short with no
/// such frame in what is left counts too: its wrapper frame, if any, is below the cut. A stack
/// is cut short when it does not reach its thread's entry ([`THREAD_ENTRY_FRAMES`]): at JFR's
/// depth limit (`truncated`; seen once on JDK 21: a carrier 15 ms after its span's end, deep in
/// the OTel agent's class transformation, Byte Buddy's type pool parsing a class being loaded),
/// or where JFR's walk stops at a call into Java from native code (seen on JDK 21 on a loaded
/// machine: a carrier 35 ms after the end of its request's server span, 27 frames of Byte Buddy
/// resolving the OTel agent's advice for a class being loaded, the outermost
/// `sun.instrument.InstrumentationImpl.transform`, which the JVM calls from inside class loading;
/// not truncated). Either way the wrapper's scope is presumably still open below the cut.
fn in_task_wrapper(sample: &Value) -> bool {
    let Some(stack) = sample["stack"].as_array() else {
        return false;
    };
    let methods: Vec<&str> = stack.iter().filter_map(|f| f["method"].as_str()).collect();
    let cut = sample["truncated"].as_bool() == Some(true)
        || !methods
            .last()
            .is_some_and(|m| THREAD_ENTRY_FRAMES.contains(m));
    (cut || methods.iter().any(|m| TASK_RUN_FRAMES.contains(m)))
        && !methods.iter().any(|m| {
            m.starts_with("dev.jfrctx.tests.otel.") || m.starts_with("java.lang.VirtualThread.")
        })
}

impl Figures {
    /// The first `n` wrong findings, each cut to 600 bytes: short, so that the end of a long log
    /// (all that a CI report may keep) still shows them.
    pub(super) fn first_wrong(&self, n: usize) -> String {
        let short: Vec<String> = self.wrong.iter().take(n).map(|w| cut(w, 600)).collect();
        short.join("\n  ")
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), marked when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let end = (0..=max)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}…", &text[..end])
}

/// The `work_*` method that called `burn` on the sample's stack (leaf first).
fn burning_in(sample: &Value) -> Option<&'static str> {
    let stack = sample["stack"].as_array()?;
    let burn = format!("{SERVLET}.burn");
    let at = stack.iter().position(|f| f["method"] == burn.as_str())?;
    let caller = stack.get(at + 1)?["method"].as_str()?;
    let name = caller.strip_prefix(SERVLET)?.strip_prefix('.')?;
    WORK.iter().copied().find(|w| *w == name)
}

/// The checks. Span times need care: the OTel SDK dates a trace's spans from one anchor read
/// when its root starts (`AnchoredClock`: `clock.now()` then `System.nanoTime()`, two reads), so
/// a request thread preempted between them shifts that whole trace against `nanoTime` (seen:
/// 3.5 ms on this 2-core machine). So every span of a trace must contain its samples under one
/// shift per trace, of at most [`MAX_SHIFT`], within [`TOLERANCE`].
pub(super) fn check(samples: &[Value], spans: &HashMap<String, Span>, offset: i64) -> Figures {
    let mut f = Figures::default();
    let mut by_thread: HashMap<i64, Vec<(&String, &Span)>> = HashMap::new();
    for (id, s) in spans {
        by_thread.entry(s.thread).or_default().push((id, s));
    }
    let root_route = |trace: &str| {
        spans
            .values()
            .find(|s| s.server && s.trace == trace)
            .and_then(|s| s.route.clone())
    };
    // per trace: the shifts under which all its samples so far lie in their spans
    let mut shifts: HashMap<&str, (i64, i64, Vec<String>)> = HashMap::new();
    for s in samples {
        let t = s["time_ns"].as_i64().expect("time_ns") + offset;
        let thread = s["thread"]["id"].as_i64().unwrap_or(-1);
        let thread_name = s["thread"]["name"].as_str().unwrap_or("");
        let ctx = s["context"].as_object();
        let span_id = ctx.and_then(|c| c.get("span_id")).and_then(Value::as_str);
        if let Some(id) = span_id {
            f.with_span += 1;
            let trace = ctx.and_then(|c| c.get("trace_id")).and_then(Value::as_str);
            match spans.get(id) {
                None => f.wrong.push(format!("span {id} was not exported: {s}")),
                Some(span) if Some(span.trace.as_str()) != trace => f.wrong.push(format!(
                    "span {id} is of trace {}, the sample says {trace:?}",
                    span.trace
                )),
                Some(span) => {
                    let (lo, hi, seen) = shifts.entry(span.trace.as_str()).or_insert((
                        -MAX_SHIFT,
                        MAX_SHIFT,
                        Vec::new(),
                    ));
                    let handed_off = span.thread != thread
                        && HANDOFF_THREADS.iter().any(|p| thread_name.starts_with(p));
                    *lo = (*lo).max(span.start - TOLERANCE - t);
                    // The task wrapper's Context may outlive the span (see TASK_RUN_FRAMES);
                    // it can never precede it.
                    if handed_off && in_task_wrapper(s) {
                        f.in_task_wrapper += 1;
                    } else {
                        *hi = (*hi).min(span.end + TOLERANCE - t);
                    }
                    let top: Vec<&str> = s["stack"]
                        .as_array()
                        .map(|st| {
                            st.iter()
                                .take(6)
                                .filter_map(|f| f["method"].as_str())
                                .collect()
                        })
                        .unwrap_or_default();
                    seen.push(format!(
                        "{} at {t} in [{}, {}] on {thread_name} ({})",
                        span.name,
                        span.start,
                        span.end,
                        top.join(" < ")
                    ));
                    if span.thread == thread {
                        f.own_thread += 1;
                    } else if HANDOFF_THREADS.iter().any(|p| thread_name.starts_with(p)) {
                        f.handed_off += 1;
                    } else {
                        f.wrong.push(format!(
                            "span {id} {} ran on thread {}, the sample on {thread} {thread_name}",
                            span.name, span.thread
                        ));
                    }
                }
            }
        }
        let Some(work) = burning_in(s) else {
            continue;
        };
        if s["thread"]["virtual"] == true {
            f.on_virtual += 1;
        }
        let Some(ctx) = ctx else {
            match s["unknown"].as_str() {
                Some(r) if !r.is_empty() => f.truth_unknown += 1,
                _ => f.wrong.push(format!("{work}: null context without reason")),
            }
            continue;
        };
        let want_name = format!("OtelWorkServlet.{work}");
        let near: Vec<&(&String, &Span)> = by_thread
            .get(&thread)
            .map(|v| {
                v.iter()
                    .filter(|(_, sp)| {
                        sp.name == want_name
                            && sp.start - MAX_SHIFT - TOLERANCE <= t
                            && t <= sp.end + MAX_SHIFT + TOLERANCE
                    })
                    .collect()
            })
            .unwrap_or_default();
        let Some((want_id, want)) = near
            .iter()
            .find(|(id, _)| Some(id.as_str()) == span_id)
            .copied()
            .copied()
        else {
            f.wrong.push(format!(
                "{work} on thread {thread} at {t}: the sample's span {span_id:?} is none of the \
                 {} {want_name} spans of that thread around then",
                near.len()
            ));
            continue;
        };
        if near.len() > 1 {
            f.truth_ambiguous += 1;
        }
        let want_ctx: BTreeMap<&str, String> = [
            ("trace_id", want.trace.clone()),
            ("span_id", want_id.to_string()),
            ("method", "GET".to_string()),
            (
                "endpoint",
                root_route(&want.trace).unwrap_or_else(|| "?".into()),
            ),
        ]
        .into_iter()
        .collect();
        let got: BTreeMap<&str, String> = ctx
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("?").to_string()))
            .collect();
        if got == want_ctx {
            *f.truth.entry(work).or_insert(0) += 1;
        } else {
            f.wrong
                .push(format!("{work}: context {got:?}, expected {want_ctx:?}"));
        }
    }
    f.traces = shifts.len();
    for (trace, (lo, hi, seen)) in shifts {
        if lo > hi {
            f.wrong.push(format!(
                "trace {trace}: no clock shift within {MAX_SHIFT} ns puts every sample in its span: {}",
                seen.join("; ")
            ));
        } else {
            // the smallest shift this trace needs
            let need = if lo > 0 {
                lo
            } else if hi < 0 {
                -hi
            } else {
                0
            };
            f.max_shift = f.max_shift.max(need);
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::in_task_wrapper;
    use serde_json::{json, Value};

    fn sample(methods: &[&str], truncated: bool) -> Value {
        let stack: Vec<Value> = methods.iter().map(|m| json!({ "method": m })).collect();
        json!({ "stack": stack, "truncated": truncated })
    }

    #[test]
    fn a_stack_cut_short_without_service_frames_is_in_the_wrapper() {
        // leaf first: Byte Buddy resolving advice inside a class load, as JFR gave it (27 frames)
        let upcall = [
            "net.bytebuddy.matcher.FilterableList$AbstractBase.filter",
            "net.bytebuddy.agent.builder.AgentBuilder$Default$ExecutingTransformer.transform",
            "sun.instrument.TransformerManager.transform",
            "sun.instrument.InstrumentationImpl.transform",
        ];
        assert!(in_task_wrapper(&sample(&upcall, false)));
        assert!(in_task_wrapper(&sample(&upcall[..2], true)));
        // whole stacks (down to the thread's entry) without a wrapper frame: the end bound applies
        let idle = [
            "java.util.concurrent.ForkJoinPool.awaitWork",
            "java.util.concurrent.ForkJoinPool.runWorker",
            "java.util.concurrent.ForkJoinWorkerThread.run",
        ];
        assert!(!in_task_wrapper(&sample(&idle, false)));
        let pool = [
            "java.util.concurrent.CompletableFuture.postComplete",
            "java.util.concurrent.ThreadPoolExecutor$Worker.run",
            "java.lang.Thread.runWith",
            "java.lang.Thread.run",
        ];
        assert!(!in_task_wrapper(&sample(&pool, false)));
        assert!(!in_task_wrapper(&Value::Null));
    }

    #[test]
    fn service_or_virtual_thread_frames_are_never_the_wrapper_alone() {
        let wrapper =
            "io.opentelemetry.javaagent.bootstrap.executors.ContextPropagatingRunnable.run";
        assert!(in_task_wrapper(&sample(&[wrapper], false)));
        for inner in [
            "dev.jfrctx.tests.otel.OtelWorkServlet.burn",
            "java.lang.VirtualThread.run",
        ] {
            assert!(!in_task_wrapper(&sample(&[inner, wrapper], false)));
            assert!(!in_task_wrapper(&sample(
                &[inner, "sun.instrument.InstrumentationImpl.transform"],
                false
            )));
        }
    }
}
