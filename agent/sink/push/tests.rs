use super::*;
use crate::config::parse_with;
use crate::model::test_samples::sample;
use crate::sink::proto::Profile;
use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;

fn no_files(_: &Path) -> io::Result<String> {
    Err(io::Error::other("no files here"))
}

fn err(options: &str) -> String {
    match parse_with(options, &no_files) {
        Ok(c) => panic!("{options:?} parsed: {c:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn push_options() {
    let c = parse_with(
        "push=http://127.0.0.1:4040/pyro/,push_app=shop,push_labels=env=ci+region=eu-1,\
         interval=5s",
        &no_files,
    )
    .unwrap();
    assert_eq!(
        c.push.url.as_ref().unwrap().to_string(),
        "http://127.0.0.1:4040/pyro"
    );
    assert_eq!(c.push.app.as_deref(), Some("shop"));
    assert_eq!(c.push.labels.len(), 2);
    assert_eq!(c.sink_options.interval_ns, Some(5_000_000_000));
    assert!(parse_with("period=10ms", &no_files)
        .unwrap()
        .push
        .url
        .is_none());
}

#[test]
fn bad_options() {
    assert_eq!(
        err("push=https://pyro:4040"),
        "bad push 'https://pyro:4040': https is not supported (jfrctx pushes plain HTTP/1.1; \
         use an http:// URL, e.g. through a local TLS-terminating proxy)"
    );
    assert_eq!(
        err("push=http://h:x"),
        "bad push 'http://h:x': bad port 'x'"
    );
    assert_eq!(err("push_app=shop"), "bad push_app 'shop': needs push=URL");
    assert_eq!(
        err("push_labels=env=ci+a=b"),
        "bad push_labels 'env=ci+a=b': needs push=URL"
    );
    assert_eq!(
        err("push=http://a,push=http://b"),
        "option 'push' given twice"
    );
    assert_eq!(
        err("push=http://a,push_labels=env"),
        "bad push_labels 'env': 'env' is not KEY=VALUE (labels are joined by '+')"
    );
    assert!(err("push=http://a,push_app=a b").starts_with("bad push_app 'a b': expected a name"));
}

/// Accepts `n` requests on a local port and answers each with `status`; returns the port and
/// a handle giving the (target, profile) of each.
/// What the test server took: (request target, form field `profile`) per request.
type Taken = Vec<(String, Vec<u8>)>;

fn server(n: usize, status: u16) -> (u16, std::thread::JoinHandle<Taken>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..n {
            let (mut s, _) = listener.accept().unwrap();
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            let (head_end, len) = loop {
                let k = s.read(&mut buf).unwrap();
                assert!(k > 0, "closed early");
                data.extend_from_slice(&buf[..k]);
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&data[..i]).to_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    break (i + 4, len);
                }
            };
            while data.len() < head_end + len {
                let k = s.read(&mut buf).unwrap();
                data.extend_from_slice(&buf[..k]);
            }
            let head = String::from_utf8_lossy(&data[..head_end]).to_string();
            let target = head.split(' ').nth(1).unwrap().to_string();
            let body = &data[head_end..];
            // The one form field: after its part header, up to the closing boundary.
            let start = body.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
            let end = body.windows(4).rposition(|w| w == b"\r\n--").unwrap();
            got.push((target, body[start..end].to_vec()));
            let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            s.write_all(answer.as_bytes()).unwrap();
        }
        got
    });
    (port, handle)
}

fn decode(gz: &[u8]) -> Profile {
    let mut raw = Vec::new();
    GzDecoder::new(gz).read_to_end(&mut raw).unwrap();
    Profile::decode(raw.as_slice()).unwrap()
}

/// Samples per value of label `key` (first value, `samples/count`).
fn per_label(p: &Profile, key: &str) -> BTreeMap<String, i64> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for sample in &p.sample {
        for l in &sample.label {
            if s(l.key) == key {
                *out.entry(s(l.str)).or_default() += sample.value[0];
            }
        }
    }
    out
}

fn options(cardinality: &[(String, Policy)]) -> SinkOptions {
    SinkOptions {
        period_ns: 10_000_000,
        interval_ns: Some(1_000_000_000),
        cardinality: cardinality.to_vec(),
        ..SinkOptions::default()
    }
}

#[test]
fn pushes_intervals_with_labels_and_cardinality() {
    let (port, server) = server(2, 200);
    let url = Url::parse(&format!("http://127.0.0.1:{port}/p")).unwrap();
    let labels = vec![("env".to_string(), "ci".to_string())];
    let hash = [("request".to_string(), Policy::Hash)];
    let (mut sink, handle) = PushSink::new(url, "app".into(), labels, &options(&hash));
    let a = sample(
        Ok(&[("endpoint", "/a"), ("request", "r1")]),
        "w",
        &[("M.m", 1)],
    );
    let b = sample(Ok(&[("endpoint", "/b")]), "w", &[("M.n", 2)]);
    for _ in 0..3 {
        sink.record(&a).unwrap();
    }
    sink.record(&b).unwrap();
    // The first interval ends; an empty one is not sent.
    sink.flush_at(now_ns() + 1_000_000_000).unwrap();
    sink.flush_at(now_ns() + 2_000_000_000).unwrap();
    sink.record(&b).unwrap();
    sink.finish().unwrap();
    let got = server.join().unwrap();
    assert_eq!(got.len(), 2);
    let first = decode(&got[0].1);
    assert_eq!(
        per_label(&first, "endpoint"),
        BTreeMap::from([("/a".into(), 3), ("/b".into(), 1)])
    );
    assert_eq!(
        per_label(&first, "request"),
        BTreeMap::from([(crate::sink::fnv1a_hex("r1"), 3)])
    );
    assert_eq!(
        per_label(&decode(&got[1].1), "endpoint"),
        BTreeMap::from([("/b".into(), 1)])
    );
    let target = &got[0].0;
    assert!(
        target.starts_with("/p/ingest?name=app%7Benv%3Dci%7D&from="),
        "{target}"
    );
    assert!(
        target.ends_with("&format=pprof&spyName=jfrctx&sampleRate=100"),
        "{target}"
    );
    assert_eq!(sink.replaced(), vec![("request".to_string(), 3)]);
    let f = handle.figures();
    assert_eq!((f.profiles, f.pushed, f.retried, f.dropped), (2, 2, 0, 0));
}

#[test]
fn a_rejecting_endpoint_drops_without_retry() {
    let (port, server) = server(1, 400);
    let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let (mut sink, handle) = PushSink::new(url, "app".into(), vec![], &options(&[]));
    sink.record(&sample(Ok(&[]), "w", &[("M.m", 1)])).unwrap();
    sink.finish().unwrap();
    assert_eq!(server.join().unwrap().len(), 1);
    let f = handle.figures();
    assert_eq!((f.profiles, f.pushed, f.retried, f.dropped), (1, 0, 0, 1));
}

#[test]
fn a_dead_endpoint_bounds_finish_and_the_queue() {
    // Accepts connections (backlog) but never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let (mut sink, handle) = PushSink::new(url, "app".into(), vec![], &options(&[]));
    let s = sample(Ok(&[]), "w", &[("M.m", 1)]);
    let start = now_ns();
    for i in 1..=12 {
        sink.record(&s).unwrap();
        sink.flush_at(start + i * 1_000_000_000).unwrap();
    }
    sink.record(&s).unwrap();
    let t = Instant::now();
    sink.finish().unwrap();
    let took = t.elapsed();
    assert!(took <= EXIT_BOUND + Duration::from_millis(400), "{took:?}");
    let f = handle.figures();
    // 13 profiles: the queue kept at most 8 (+1 in flight), nothing was taken.
    assert_eq!(f.profiles, 13);
    assert_eq!(f.pushed, 0);
    assert_eq!(f.dropped, 13, "{f:?}");
    drop(listener);
}
