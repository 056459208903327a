//! The load on the example's endpoints, and the verdict on each sample in a `work_*` method.

use super::{Serving, CLIENTS, ENDPOINTS, LOAD, LOAD_ASYNC};
use crate::common::http::{connect, get};
use serde_json::Value;
use std::collections::BTreeMap;
use std::thread;
use std::time::Instant;

/// Drives `/shop/{orders,search,report}` from [`CLIENTS`] connections for [`LOAD`]; returns the
/// requests answered per endpoint name.
pub(super) fn drive(port: u16, serving: Serving) -> BTreeMap<&'static str, u64> {
    let prefix = serving.prefix();
    let deadline = Instant::now()
        + match serving {
            Serving::Sync => LOAD,
            Serving::AsyncJavaAgent => LOAD_ASYNC,
        };
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            thread::spawn(move || {
                let mut counts = BTreeMap::new();
                let prefix = prefix;
                let mut conn = connect(port);
                let mut n = 0usize;
                while Instant::now() < deadline && n < 100_000 {
                    let name = ENDPOINTS[(client + n) % ENDPOINTS.len()];
                    let id = format!("{name}-{client}-{n}");
                    let path = format!("/shop{prefix}{name}");
                    let (status, body, close) = get(&mut conn, &path, &[("X-Request-Id", &id)])
                        .unwrap_or_else(|e| panic!("GET {path} ({id}): {e}"));
                    assert!(
                        status.starts_with("HTTP/1.1 200"),
                        "GET {path}: {status}\n{body}"
                    );
                    assert!(
                        body.starts_with(&format!("{prefix}{name} ")),
                        "GET {path}: body {body:?}"
                    );
                    *counts.entry(name).or_insert(0u64) += 1;
                    n += 1;
                    if close {
                        conn = connect(port); // Tomcat's maxKeepAliveRequests reached
                    }
                }
                counts
            })
        })
        .collect();
    let mut total = BTreeMap::new();
    for c in clients {
        for (k, v) in c.join().expect("client thread") {
            *total.entry(k).or_insert(0) += v;
        }
    }
    total
}

#[derive(Default, Debug)]
pub(super) struct Figures {
    pub correct: BTreeMap<&'static str, u64>,
    pub unknown: BTreeMap<String, u64>,
    pub wrong: Vec<String>,
    pub on_virtual: u64,
    pub on_platform: u64,
}

/// The endpoint whose work method is on the sample's stack (innermost first).
fn work_endpoint(sample: &Value, serving: Serving) -> Option<&'static str> {
    let stack = sample["stack"].as_array()?;
    stack.iter().find_map(|f| {
        let name = f["method"].as_str()?.strip_prefix(serving.work_class())?;
        let name = name.strip_prefix("work_")?;
        ENDPOINTS.iter().copied().find(|e| *e == name)
    })
}

pub(super) fn check_samples(samples: &[Value], serving: Serving) -> Figures {
    let mut f = Figures::default();
    for s in samples {
        let Some(endpoint) = work_endpoint(s, serving) else {
            continue;
        };
        if s["thread"]["virtual"] == Value::Bool(true) {
            f.on_virtual += 1;
        } else {
            f.on_platform += 1;
        }
        match &s["context"] {
            Value::Object(ctx) => {
                let expected_endpoint = format!("{}{endpoint}", serving.prefix());
                let ok = ctx.len() == 2
                    && ctx.get("endpoint").and_then(Value::as_str) == Some(&expected_endpoint)
                    && ctx
                        .get("request")
                        .and_then(Value::as_str)
                        .is_some_and(|r| r.starts_with(&format!("{endpoint}-")));
                if ok {
                    *f.correct.entry(endpoint).or_insert(0) += 1;
                } else {
                    f.wrong
                        .push(format!("work_{endpoint}: {}", Value::Object(ctx.clone())));
                }
            }
            Value::Null => match s["unknown"].as_str() {
                Some(r) if !r.is_empty() => *f.unknown.entry(r.to_string()).or_insert(0) += 1,
                _ => f
                    .wrong
                    .push(format!("work_{endpoint}: null context, no reason")),
            },
            other => f.wrong.push(format!("work_{endpoint}: context {other}")),
        }
    }
    f
}
