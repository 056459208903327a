use super::*;

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn urls() {
    assert_eq!(
        url("http://127.0.0.1:4040"),
        Url {
            https: false,
            host: "127.0.0.1".into(),
            port: 4040,
            path: String::new()
        }
    );
    assert_eq!(url("http://pyro/").port, 80);
    let tls = url("HTTPS://pyro.example/p/");
    assert_eq!((tls.https, tls.port), (true, 443));
    assert_eq!(tls.to_string(), "https://pyro.example:443/p");
    assert_eq!(url("http://pyro/").path, "");
    assert_eq!(url("HTTP://pyro:1/a/b/").path, "/a/b");
    let v6 = url("http://[::1]:4040/p");
    assert_eq!((v6.host.as_str(), v6.port), ("::1", 4040));
    assert_eq!(v6.authority(), "[::1]:4040");
    assert_eq!(v6.to_string(), "http://[::1]:4040/p");
    assert_eq!(url("http://h:9").to_string(), "http://h:9");
}

#[test]
fn bad_urls() {
    let e = |s: &str| Url::parse(s).unwrap_err();
    assert!(e("ftp://x").starts_with("unsupported scheme 'ftp'"));
    assert!(e("pyro:4040").starts_with("expected http[s]://"));
    assert_eq!(e("http://h:0"), "bad port '0'");
    assert_eq!(e("http://h:99999"), "bad port '99999'");
    assert_eq!(e("http://h:"), "bad port ''");
    assert_eq!(e("http://:80"), "missing or bad host");
    assert!(e("http://h/x?y=1").starts_with("a query"));
    assert!(e("http://u:p@h").starts_with("user information"));
    assert_eq!(e("http://[::1"), "unterminated [IPv6] host");
}

#[test]
fn labels() {
    assert_eq!(
        parse_labels("env=prod+region=eu-1").unwrap(),
        vec![
            ("env".to_string(), "prod".to_string()),
            ("region".to_string(), "eu-1".to_string())
        ]
    );
    assert_eq!(
        parse_labels("v=a=b").unwrap_err(),
        "bad value 'a=b' for label v (non-empty, without spaces or { } , = + \")"
    );
    assert!(parse_labels("env").unwrap_err().contains("not KEY=VALUE"));
    assert!(parse_labels("1x=a")
        .unwrap_err()
        .starts_with("bad label name '1x'"));
    assert!(parse_labels("__name__=a")
        .unwrap_err()
        .starts_with("bad label name"));
    assert!(parse_labels("a=").unwrap_err().starts_with("bad value ''"));
    assert!(parse_labels("a=x+").unwrap_err().contains("not KEY=VALUE"));
    assert_eq!(parse_labels("a=1+a=2").unwrap_err(), "label a given twice");
}

#[test]
fn apps() {
    assert_eq!(parse_app("shop-api.v2").unwrap(), "shop-api.v2");
    assert!(parse_app("a b").is_err());
    assert!(parse_app("").is_err());
    let from = |c: &str| app_from_command(Some(c));
    assert_eq!(
        from("dev.jfrctx.demo.DemoService 15"),
        "dev.jfrctx.demo.DemoService"
    );
    assert_eq!(from("/opt/app/shop.jar --port 1"), "shop");
    assert_eq!(from("gt.GroundTruth"), "gt.GroundTruth");
    assert_eq!(from("weird$Main"), "weird_Main");
    assert_eq!(from(""), DEFAULT_APP);
    assert_eq!(app_from_command(None), DEFAULT_APP);
}

#[test]
fn the_ingest_target() {
    let labels = vec![("env".to_string(), "ci".to_string())];
    assert_eq!(
        ingest_target(&url("http://h:1/pyro"), "app", &labels, 100, 110, 100),
        "/pyro/ingest?name=app%7Benv%3Dci%7D&from=100&until=110&format=pprof&\
         spyName=jfrctx&sampleRate=100"
    );
    // An empty interval still spans one second; no labels give `app{}`.
    assert_eq!(
        ingest_target(&url("http://h:1"), "a", &[], 5, 5, 0),
        "/ingest?name=a%7B%7D&from=5&until=6&format=pprof&spyName=jfrctx&sampleRate=1"
    );
    assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
}

#[test]
fn auth_tenant_budget() {
    assert_eq!(
        Auth::parse("bearer:PYRO_TOKEN"),
        Ok(Auth::Bearer("PYRO_TOKEN".into()))
    );
    assert_eq!(Auth::parse("basic:P"), Ok(Auth::Basic("P".into())));
    assert!(Auth::parse("digest:P")
        .unwrap_err()
        .starts_with("unknown scheme"));
    assert!(Auth::parse("basic:")
        .unwrap_err()
        .starts_with("expected basic:VAR"));
    assert!(Auth::parse("basic:1X").is_err());
    let env = |v: &str| match v {
        "B" => Some("user:pa:ss".to_string()),
        "T" => Some("tok-123".to_string()),
        "NOCOLON" => Some("user".to_string()),
        _ => None,
    };
    assert_eq!(
        Auth::Basic("B".into()).header(&env),
        Ok(format!("Basic {}", base64(b"user:pa:ss")))
    );
    assert_eq!(
        Auth::Bearer("T".into()).header(&env),
        Ok("Bearer tok-123".into())
    );
    let missing = Auth::Bearer("NOPE".into()).header(&env).unwrap_err();
    assert_eq!(
        missing,
        "push_auth: the environment variable NOPE is not set"
    );
    let e = Auth::Basic("NOCOLON".into()).header(&env).unwrap_err();
    assert!(
        e.ends_with("must hold USER:PASSWORD") && !e.contains("user"),
        "{e}"
    );
    // RFC 4648 test vectors.
    let b = |s: &str| base64(s.as_bytes());
    assert_eq!(
        [
            b(""),
            b("f"),
            b("fo"),
            b("foo"),
            b("foob"),
            b("fooba"),
            b("foobar")
        ],
        ["", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"]
    );
    assert_eq!(parse_tenant("team-a_1").unwrap(), "team-a_1");
    assert!(parse_tenant("a|b").is_err());
    assert!(parse_tenant("").is_err());
    assert!(parse_tenant(&"x".repeat(151)).is_err());
    assert_eq!(parse_budget("20"), Ok(20));
    assert!(parse_budget("0").is_err());
    assert!(parse_budget("10001").is_err());
}

#[test]
fn sample_rates() {
    assert_eq!(sample_rate(10_000_000), 100);
    assert_eq!(sample_rate(1_000_000), 1000);
    assert_eq!(sample_rate(3_000_000), 333);
    assert_eq!(sample_rate(2_000_000_000), 1);
    assert_eq!(sample_rate(0), 1);
}
