//! A fake Grafana Pyroscope `/ingest` for the push tests: it does with each query parameter and
//! body form what Pyroscope v1.19.3 does, refuses what it refuses with the same status and JSON
//! answer, and decodes and stores what it accepts, split into series as Pyroscope splits them.
//!
//! Mirrored source (github.com/grafana/pyroscope at v1.19.3):
//! - `pkg/ingester/pyroscope/ingest_handler.go`: `name` parsed by `labelset.Parse` (a bad name
//!   is `400 {"code":"invalid_argument","message":"name: ..."}`); the body form chosen by
//!   `format` first and the `Content-Type` second: `format=pprof` reads the whole body as one
//!   pprof, a `multipart/form-data` body without `format` reads the form field `profile`; any
//!   other form (trie, tree, lines, jfr, speedscope, or a bare body, i.e. "groups") is answered
//!   `501` by the fake: jfrctx never sends them, and the fake does not model their parsers.
//!   Ingestion failures are `422 {"code":"unknown","message":"..."}` (`ErrorWithStatus`).
//! - `api/model/labelset/{labelset,validate}.go`: service and label name characters.
//! - `pkg/og/convert/pprof/profile.go`: the form fields (`prev_profile` refused), the series
//!   labels `__name__` (`metricName`), `__delta__`, `pyroscope_spy`, `service_name`.
//! - `pkg/pprof/pprof.go` `RawFromBytesWithLimit`: gzipped or plain protobuf; errors prefixed
//!   `parsing IngestInput-pprof failed invalid_argument: ` (prost's decode messages differ in
//!   wording from Go's, the status and prefix are the same).
//! - `pkg/validation/validate.go` (`ValidateProfile`, `ValidateLabels`) with the default limits:
//!   16 000 samples, 100 labels per sample, 30 label names per series, 2048-byte values, label
//!   names `[A-Za-z_][A-Za-z0-9_.]*` with dots sanitized to `_`, no duplicates.
//! - `pkg/model/pprofsplit/pprof_split.go`: `profile_id` renamed `span_id`; samples grouped by
//!   their labels except `span_id`; a sample label whose name the series already has is ignored.
//!   Each (series, sample type) is what Pyroscope stores as a series of a profile type.

#![allow(dead_code)]

use flate2::read::GzDecoder;
use jfrctx::sink::proto::Profile;
use prost::Message;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Series labels, sorted by name.
pub type Labels = Vec<(String, String)>;

/// One request the fake answered.
#[derive(Debug, Clone)]
pub struct Taken {
    pub method: String,
    pub target: String,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
    pub status: u16,
    pub answer: String,
}

/// What the fake stored.
#[derive(Debug, Default)]
pub struct Store {
    pub requests: Vec<Taken>,
    /// Per series (labels with `__type__` = the sample type): the sum of its values.
    pub series: BTreeMap<Labels, i64>,
    /// Samples stored with a valid span id.
    pub spans: u64,
}

pub struct Fake {
    pub port: u16,
    store: Arc<Mutex<Store>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Fake {
    pub fn start() -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let store = Arc::new(Mutex::new(Store::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (store.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !sp.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let st = st.clone();
                        thread::spawn(move || serve(conn, &st));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Fake {
            port,
            store,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn finish(mut self) -> Store {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("fake server thread");
        }
        // Connections still open end with their peer.
        thread::sleep(Duration::from_millis(50));
        std::mem::take(&mut *self.store.lock().unwrap())
    }
}

/// Serves requests on one connection (keep-alive) until the peer closes it.
fn serve(conn: TcpStream, store: &Mutex<Store>) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.trim_end().splitn(3, ' ');
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let body = match read_body(&mut r, &headers) {
            Some(b) => b,
            None => return,
        };
        let path = target.split('?').next().unwrap_or_default();
        let (status, answer) = if method == "POST" && path.ends_with("/ingest") {
            let mut st = store.lock().unwrap();
            ingest(&target, &headers, &body, &mut st)
        } else {
            (404, "404 page not found\n".to_string())
        };
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            422 => "Unprocessable Entity",
            _ => "Other",
        };
        let content_type = if answer.starts_with('{') {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        let head = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: \
             {}\r\n\r\n",
            answer.len()
        );
        store.lock().unwrap().requests.push(Taken {
            method,
            target,
            headers: headers.clone(),
            status,
            answer: answer.clone(),
        });
        if out.write_all(head.as_bytes()).is_err() || out.write_all(answer.as_bytes()).is_err() {
            return;
        }
        if headers
            .get("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"))
        {
            return;
        }
    }
}

/// A `Content-Length` or `chunked` request body.
fn read_body(r: &mut impl BufRead, headers: &BTreeMap<String, String>) -> Option<Vec<u8>> {
    if headers
        .get("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"))
    {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).ok()?;
            if n == 0 {
                return Some(body);
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    let len: usize = headers
        .get("content-length")
        .map_or(Some(0), |l| l.parse().ok())?;
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(body)
}

fn json(code: &str, message: &str) -> String {
    serde_json::json!({ "code": code, "message": message }).to_string()
}

/// Go's `%q` of a rune, for the characters the tests use.
fn quote(c: char) -> String {
    format!("'{}'", c.escape_default())
}

fn label_rune(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// `labelset.Parse`: the service name and the `{k=v,...}` labels of `name`.
fn parse_name(name: &str) -> Result<(String, BTreeMap<String, String>), String> {
    let (service, rest) = name.split_once('{').unwrap_or((name, ""));
    let service = service.trim();
    if service.is_empty() {
        return Err("service name is required".into());
    }
    if let Some(c) = service
        .chars()
        .find(|&c| !(label_rune(c) || "-./".contains(c)))
    {
        return Err(format!(
            "invalid service name: {service}: character is not allowed: {}",
            quote(c)
        ));
    }
    let mut labels = BTreeMap::new();
    let inner = rest.split('}').next().unwrap_or_default();
    for pair in inner.split(',').filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            continue;
        };
        let k = k.trim();
        if k != "__name__" {
            if k.is_empty() {
                return Err("label name is required".into());
            }
            if let Some(c) = k.chars().find(|&c| !label_rune(c)) {
                return Err(format!(
                    "invalid label name: {k}: character is not allowed: {}",
                    quote(c)
                ));
            }
        }
        labels.insert(k.to_string(), v.trim().to_string());
    }
    Ok((service.to_string(), labels))
}

fn query(target: &str) -> BTreeMap<String, String> {
    let q = target.split_once('?').map_or("", |(_, q)| q);
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), percent_decode(v)))
        .collect()
}

pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() + 1 && i + 3 <= b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What `ServeHTTP` answers for one `/ingest` request.
fn ingest(
    target: &str,
    headers: &BTreeMap<String, String>,
    body: &[u8],
    store: &mut Store,
) -> (u16, String) {
    let q = query(target);
    let (service, name_labels) = match parse_name(q.get("name").map_or("", String::as_str)) {
        Ok(v) => v,
        Err(e) => return (400, json("invalid_argument", &format!("name: {e}"))),
    };
    let format = q.get("format").map_or("", String::as_str);
    let content_type = headers.get("content-type").map_or("", String::as_str);
    let raw = match format {
        "pprof" => body.to_vec(),
        "" if content_type.contains("multipart/form-data") => {
            match form_profile(content_type, body) {
                Ok(p) => p,
                Err(e) => {
                    let m = format!(
                        "parsing IngestInput-pprof failed failed to parse pprof /ingest multipart \
                     form {e}"
                    );
                    return (422, json("unknown", &m));
                }
            }
        }
        other => {
            let form = if other.is_empty() { "groups" } else { other };
            return (501, format!("fake: the {form} format is not modelled\n"));
        }
    };
    if raw.is_empty() {
        return (200, String::new());
    }
    let failed = |e: String| {
        (
            422,
            json("unknown", &format!("parsing IngestInput-pprof failed {e}")),
        )
    };
    let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        if let Err(e) = GzDecoder::new(raw.as_slice()).read_to_end(&mut out) {
            return failed(format!("invalid_argument: gzip reset: {e}"));
        }
        out
    } else {
        raw
    };
    let mut p = match Profile::decode(bytes.as_slice()) {
        Ok(p) => p,
        Err(e) => return failed(format!("invalid_argument: proto: {e}")),
    };
    let spy = q
        .get("spyName")
        .filter(|s| !s.is_empty())
        .map_or("unknown", String::as_str);
    let mut series: Labels = vec![
        ("__name__".into(), metric_name(&p)),
        ("__delta__".into(), "false".into()),
        ("pyroscope_spy".into(), spy.into()),
    ];
    if !name_labels.contains_key("service_name") {
        series.push(("service_name".into(), service));
    }
    for (k, v) in &name_labels {
        if !k.starts_with("__") {
            series.push((k.clone(), v.clone()));
        }
    }
    let pushing = |e: String| {
        let m = format!(
            "pushing IngestInput-pprof failed push series with index 0 and id  failed: \
             invalid_argument: {e}"
        );
        (422, json("unknown", &m))
    };
    if let Err(e) = validate_profile(&p, &series) {
        return pushing(e);
    }
    // pprofsplit: profile_id is span_id; group by the other string labels.
    for x in &mut p.string_table {
        if x == "profile_id" {
            *x = "span_id".into();
        }
    }
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let types: Vec<String> = p.sample_type.iter().map(|t| s(t.r#type)).collect();
    let mut groups: BTreeMap<Labels, (Vec<i64>, u64)> = BTreeMap::new();
    for sample in &p.sample {
        let mut labels = series.clone();
        let mut span = false;
        for l in &sample.label {
            let k = s(l.key);
            if k == "span_id" {
                let v = s(l.str);
                span |= v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit());
                continue;
            }
            if l.str <= 0 || labels.iter().any(|(n, _)| *n == k) {
                continue;
            }
            labels.push((k, s(l.str)));
        }
        let e = groups
            .entry(labels)
            .or_insert_with(|| (vec![0; types.len()], 0));
        for (a, b) in e.0.iter_mut().zip(&sample.value) {
            *a += b;
        }
        e.1 += u64::from(span);
    }
    let mut validated = Vec::new();
    for (labels, values) in groups {
        match validate_labels(labels) {
            Ok(l) => validated.push((l, values)),
            Err(e) => return pushing(e),
        }
    }
    for (labels, (values, spans)) in validated {
        store.spans += spans;
        for (t, v) in types.iter().zip(values) {
            let mut l = labels.clone();
            l.push(("__type__".into(), t.clone()));
            l.sort();
            *store.series.entry(l).or_default() += v;
        }
    }
    (200, String::new())
}

/// The field `profile` of a `multipart/form-data` body (`loadPprofFromForm`).
fn form_profile(content_type: &str, body: &[u8]) -> Result<Vec<u8>, String> {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))
        .ok_or("no multipart boundary")?
        .trim_matches('"');
    let delimiter = format!("--{boundary}");
    let find = |from: usize, what: &[u8]| {
        body.get(from..)?
            .windows(what.len())
            .position(|w| w == what)
            .map(|i| i + from)
    };
    let mut at = find(0, delimiter.as_bytes()).ok_or("multipart: NextPart: EOF")?;
    let mut profile = None;
    loop {
        let part = at + delimiter.len();
        if body[part..].starts_with(b"--") {
            break;
        }
        let head_end = find(part, b"\r\n\r\n").ok_or("multipart: NextPart: EOF")? + 4;
        let next = find(head_end, format!("\r\n{delimiter}").as_bytes())
            .ok_or("multipart: NextPart: EOF")?;
        let head = String::from_utf8_lossy(&body[part..head_end]);
        if head.contains("name=\"prev_profile\"") {
            return Err("unsupported client version. Please update \
                        github.com/grafana/pyroscope-go to the latest version"
                .into());
        }
        if head.contains("name=\"profile\"") {
            profile = Some(body[head_end..next].to_vec());
        }
        at = next + 2;
    }
    Ok(profile.unwrap_or_default())
}

/// `metricName` of `pkg/og/convert/pprof/profile.go` (default sample type config).
fn metric_name(p: &Profile) -> String {
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let types: Vec<String> = p.sample_type.iter().map(|t| s(t.r#type)).collect();
    if types.iter().any(|t| t == "wall") {
        return "wall".into();
    }
    for t in &types {
        if t.contains("cpu") {
            return "process_cpu".into();
        }
        if t.contains("alloc_") || t.contains("inuse_") || t == "space" || t == "objects" {
            return "memory".into();
        }
        if t.contains("mutex_") {
            return "mutex".into();
        }
        if t.contains("block_") {
            return "block".into();
        }
        if t.contains("goroutines") {
            return "goroutines".into();
        }
    }
    types.last().cloned().unwrap_or_default()
}

fn labels_text(ls: &[(String, String)]) -> String {
    let mut ls = ls.to_vec();
    ls.sort();
    let parts: Vec<String> = ls.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{{{}}}", parts.join(", "))
}

/// `ValidateProfile` with the default limits.
fn validate_profile(p: &Profile, series: &[(String, String)]) -> Result<(), String> {
    if p.sample_type.is_empty() {
        return Err("empty profile".into());
    }
    if p.sample.len() > 16_000 {
        return Err(format!(
            "the profile with labels '{}' exceeds the samples count limit \
             (max_profile_stacktrace_samples, actual: {}, limit: 16000)",
            labels_text(series),
            p.sample.len()
        ));
    }
    for s in &p.sample {
        if s.label.len() > 100 {
            return Err(format!(
                "profile with labels '{}' has too many sample labels",
                labels_text(series)
            ));
        }
        if s.value.len() != p.sample_type.len() {
            return Err("sample value length mismatch".into());
        }
    }
    if p.location.iter().any(|l| l.id == 0) {
        return Err("location id is 0".into());
    }
    if p.function.iter().any(|f| f.id == 0) {
        return Err("function id is 0".into());
    }
    Ok(())
}

/// `ValidateLabels` with the default limits and sanitizing on: the labels as stored.
fn validate_labels(mut ls: Labels) -> Result<Labels, String> {
    let invalid = |ls: &Labels, why: String| {
        format!("invalid labels '{}' with error: {why}", labels_text(ls))
    };
    if ls.len() > 30 {
        return Err(format!(
            "profile series '{}' has {} label names; limit 30",
            labels_text(&ls),
            ls.len()
        ));
    }
    let original = ls.clone();
    for (k, v) in &mut ls {
        let ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(label_rune);
        if !ok {
            return Err(invalid(&original, format!("invalid label name '{k}'")));
        }
        if v.len() > 2048 {
            return Err(format!("label value too long: '{v}'"));
        }
        *k = k.replace('.', "_");
    }
    ls.sort();
    if let Some(w) = ls.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("duplicate label name: '{}'", w[0].0));
    }
    Ok(ls)
}

/// Sends one raw HTTP/1.1 request to the fake; returns the status and the answer's body.
pub fn request(port: u16, head: &str, body: &[u8]) -> (u16, String) {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(body).unwrap();
    let mut r = BufReader::new(c);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    let code: u16 = status.split(' ').nth(1).unwrap().parse().unwrap();
    let mut len = 0;
    loop {
        let mut h = String::new();
        r.read_line(&mut h).unwrap();
        if h.trim().is_empty() {
            break;
        }
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut answer = vec![0; len];
    r.read_exact(&mut answer).unwrap();
    (code, String::from_utf8(answer).unwrap())
}
