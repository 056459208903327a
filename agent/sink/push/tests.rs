use super::*;
use crate::core::model::test_samples::sample;
use crate::options::parse_with;
use crate::sink::proto::Profile;
use crate::sink::Sink;
use crate::time::monotonic_ns;
use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;

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
fn more_push_options() {
    let c = parse_with(
        "push=https://pyro.example/,push_keys=endpoint+thread,push_budget=12,push_tenant=team-a,\
         push_auth=bearer:PYRO_TOKEN,push_ca=/etc/ca.pem",
        &no_files,
    )
    .unwrap();
    let p = &c.push;
    assert_eq!(
        p.url.as_ref().unwrap().to_string(),
        "https://pyro.example:443"
    );
    assert_eq!(
        p.keys,
        Some(vec!["endpoint".to_string(), "thread".to_string()])
    );
    assert_eq!(p.budget, Some(12));
    assert_eq!(p.tenant.as_deref(), Some("team-a"));
    assert_eq!(p.auth, Some(spec::Auth::Bearer("PYRO_TOKEN".into())));
    assert_eq!(p.ca.as_deref(), Some(Path::new("/etc/ca.pem")));
    assert_eq!(err("push_budget=5"), "bad push_budget '5': needs push=URL");
    assert_eq!(
        err("push_auth=basic:X"),
        "bad push_auth 'basic:X': needs push=URL"
    );
    assert!(err("push=http://a,push_budget=0").starts_with("bad push_budget '0': expected"));
    assert!(err("push=http://a,push_tenant=a|b").starts_with("bad push_tenant 'a|b'"));
    assert!(err("push=http://a,push_auth=token").starts_with("bad push_auth 'token'"));
    assert!(err("push=http://a,push_ca=").starts_with("bad push_ca ''"));
}

#[test]
fn a_missing_credential_fails_at_load_without_its_value() {
    let url = Url::parse("http://127.0.0.1:1").unwrap();
    let spec = PushSpec {
        auth: Some(spec::Auth::Bearer("JFRCTX_TEST_NO_SUCH_VAR".into())),
        ..PushSpec::default()
    };
    let e = PushSink::new(url, "app".into(), &spec, &options(&[]), &|_| None)
        .err()
        .unwrap();
    assert_eq!(
        e,
        "push_auth: the environment variable JFRCTX_TEST_NO_SUCH_VAR is not set"
    );
}

#[test]
fn bad_options() {
    assert_eq!(
        err("push=http://h:x"),
        "bad push 'http://h:x': bad port 'x'"
    );
    assert!(err("push=ftp://pyro").starts_with("bad push 'ftp://pyro': unsupported scheme"));
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

/// What the test server took: (request head, body) per request.
type Taken = Vec<(String, Vec<u8>)>;

/// Accepts `n` requests on a local port and answers each with `status` and a short JSON body
/// (`Connection: close`); returns the port and a handle giving the (head, body) of each.
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
            got.push((head, data[head_end..].to_vec()));
            let body = "{\"code\":\"x\",\"message\":\"test answer\"}";
            let answer = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
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

fn new_sink(url: Url) -> (PushSink, PushHandle) {
    PushSink::new(
        url,
        "app".into(),
        &PushSpec::default(),
        &options(&[]),
        &|_| None,
    )
    .unwrap()
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
    let spec = PushSpec {
        labels: vec![("env".to_string(), "ci".to_string())],
        tenant: Some("team-a".into()),
        auth: Some(spec::Auth::Basic("CRED".into())),
        ..PushSpec::default()
    };
    let hash = [("request".to_string(), Policy::Hash)];
    let env = |v: &str| (v == "CRED").then(|| "u:secret".to_string());
    let (mut sink, handle) =
        PushSink::new(url, "app".into(), &spec, &options(&hash), &env).unwrap();
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
    sink.flush_at(monotonic_ns() + 1_000_000_000).unwrap();
    sink.flush_at(monotonic_ns() + 2_000_000_000).unwrap();
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
    let head = &got[0].0;
    assert!(
        head.starts_with("POST /p/ingest?name=app%7Benv%3Dci%7D&from="),
        "{head}"
    );
    assert!(
        head.contains("&format=pprof&spyName=jfrctx&sampleRate=100 HTTP/1.1\r\n"),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("\r\ncontent-type: application/octet-stream\r\n"),
        "{head}"
    );
    assert!(lower.contains("\r\nx-scope-orgid: team-a\r\n"), "{head}");
    let basic = format!("\r\nauthorization: basic {}\r\n", spec::base64(b"u:secret"));
    assert!(lower.contains(&basic.to_ascii_lowercase()), "{head}");
    assert_eq!(sink.replaced(), vec![("request".to_string(), 3)]);
    let f = handle.figures();
    assert_eq!((f.profiles, f.pushed, f.retried, f.dropped), (2, 2, 0, 0));
    assert_eq!(sink.undelivered(), 0);
}

#[test]
fn a_rejecting_endpoint_drops_without_retry() {
    let (port, server) = server(1, 422);
    let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let (mut sink, handle) = new_sink(url);
    sink.record(&sample(Ok(&[]), "w", &[("M.m", 1)])).unwrap();
    sink.record(&sample(Ok(&[]), "w", &[("M.m", 1)])).unwrap();
    sink.finish().unwrap();
    assert_eq!(server.join().unwrap().len(), 1);
    let f = handle.figures();
    assert_eq!(
        (f.profiles, f.pushed, f.refused, f.failed, f.retried, f.dropped),
        (1, 0, 1, 0, 0, 0)
    );
    assert_eq!(
        f.last_refusal,
        Some((422, "{\"code\":\"x\",\"message\":\"test answer\"}".into()))
    );
    assert_eq!((f.lost_samples, sink.undelivered()), (2, 2));
}

#[test]
fn a_dead_endpoint_bounds_finish_and_the_queue() {
    // Accepts connections (backlog) but never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let (mut sink, handle) = new_sink(url);
    let s = sample(Ok(&[]), "w", &[("M.m", 1)]);
    let start = monotonic_ns();
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
    // The one in flight at the deadline fails or is dropped; the queue's overflow is dropped.
    assert_eq!(f.failed + f.dropped, 13, "{f:?}");
    assert!(f.dropped >= 4, "{f:?}");
    assert_eq!(f.lost_samples, 13);
    drop(listener);
}

/// A local TLS server (rustls, self-signed certificate for 127.0.0.1) answering `n` requests
/// with 200; returns the port, the certificate as PEM, and the request heads it read.
fn tls_server(n: usize) -> (u16, String, std::thread::JoinHandle<Vec<String>>) {
    use std::sync::Arc;
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let pem = key.cert.pem();
    let der = rustls::pki_types::CertificateDer::from(key.cert.der().to_vec());
    let private =
        rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![der], private)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut heads = Vec::new();
        for _ in 0..n {
            let (tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let conn = rustls::ServerConnection::new(Arc::clone(&config)).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut data = Vec::new();
            let mut buf = [0u8; 4096];
            // A failed handshake (the client refused the certificate) ends this connection.
            let head_end = loop {
                match tls.read(&mut buf) {
                    Ok(0) | Err(_) => break None,
                    Ok(k) => data.extend_from_slice(&buf[..k]),
                }
                if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
            };
            let Some(head_end) = head_end else {
                heads.push(String::new());
                continue;
            };
            let head = String::from_utf8_lossy(&data[..head_end]).to_string();
            let len: usize = head
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| l.strip_prefix("content-length: ").map(str::to_string))
                .unwrap()
                .parse()
                .unwrap();
            while data.len() < head_end + len {
                let k = tls.read(&mut buf).unwrap();
                data.extend_from_slice(&buf[..k]);
            }
            heads.push(head);
            // A chunked answer: the client must read it as such.
            tls.write_all(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                  2\r\nok\r\n0\r\n\r\n",
            )
            .unwrap();
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
        heads
    });
    (port, pem, handle)
}

#[test]
fn https_with_a_trusted_ca_file() {
    let (port, pem, server) = tls_server(2);
    let dir = std::env::temp_dir().join(format!("jfrctx-push-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, &pem).unwrap();
    let url = Url::parse(&format!("https://127.0.0.1:{port}/p")).unwrap();
    // Without the CA file the built-in roots refuse the self-signed certificate: a failure.
    let c = http::Client::new(&url, None, None, None).unwrap();
    let e = c
        .post("/p/ingest?x=1", b"body", Duration::from_secs(5))
        .unwrap_err();
    assert!(e.retryable && e.refusal.is_none(), "{e:?}");
    assert!(e.message.to_lowercase().contains("certificate"), "{e:?}");
    // With it the profile goes through, the tenant header with it.
    let c = http::Client::new(&url, Some("t1".into()), None, Some(&ca)).unwrap();
    c.post("/p/ingest?x=1", b"body", Duration::from_secs(5))
        .unwrap();
    let heads = server.join().unwrap();
    assert_eq!(heads[0], "", "the first handshake must fail");
    assert!(
        heads[1].starts_with("POST /p/ingest?x=1 HTTP/1.1\r\n"),
        "{}",
        heads[1]
    );
    assert!(heads[1]
        .to_ascii_lowercase()
        .contains("\r\nx-scope-orgid: t1\r\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_key_over_the_budget_leaves_the_pushed_labels_and_is_counted() {
    let (port, server) = server(2, 200);
    let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
    let spec = PushSpec {
        budget: Some(2),
        ..PushSpec::default()
    };
    let (mut sink, handle) =
        PushSink::new(url, "app".into(), &spec, &options(&[]), &|_| None).unwrap();
    let start = monotonic_ns();
    for interval in 0..2 {
        for r in 0..3 {
            let id = format!("r{interval}-{r}");
            let s = sample(
                Ok(&[("endpoint", "/a"), ("request", &id)]),
                "w",
                &[("M.m", 1)],
            );
            sink.record(&s).unwrap();
        }
        sink.flush_at(start + (interval + 1) * 1_000_000_000)
            .unwrap();
    }
    sink.finish().unwrap();
    let got = server.join().unwrap();
    for (_, body) in &got {
        let p = decode(body);
        assert_eq!(
            per_label(&p, "endpoint"),
            BTreeMap::from([("/a".into(), 3)])
        );
        assert!(per_label(&p, "request").is_empty());
    }
    // 3 samples stripped when the profile was cut, 3 before they were aggregated.
    let f = handle.figures();
    assert_eq!(f.left_out, vec![("request".to_string(), 6)]);
    assert_eq!((f.profiles, f.pushed), (2, 2));
}
