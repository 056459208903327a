//! The push options (`push=URL`, `push_app=NAME`, `push_labels=K=V+K=V`) and the ingest request
//! line they give (pure).

use std::fmt;

/// Period of the pushes when `interval` is not given.
pub const DEFAULT_INTERVAL_NS: i64 = 10_000_000_000;
/// Application name when neither `push_app` nor the JVM's main class/jar gives one.
pub const DEFAULT_APP: &str = "jfrctx";

/// A plain-HTTP endpoint: `http://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Empty or `/a/b` (no trailing `/`); `/ingest` is appended to it.
    pub path: String,
}

impl Url {
    /// Parses `http://HOST[:PORT][/PATH]` (`[IPv6]` hosts too). The error says what is wrong.
    pub fn parse(s: &str) -> Result<Url, String> {
        let rest = match s.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(
                    "https is not supported (jfrctx pushes plain HTTP/1.1; use an \
                            http:// URL, e.g. through a local TLS-terminating proxy)"
                        .into(),
                )
            }
            Some((scheme, _)) => {
                return Err(format!("unsupported scheme '{scheme}' (use http://)"))
            }
            None => return Err("expected http://HOST[:PORT][/PATH]".into()),
        };
        if rest.contains(['?', '#']) {
            return Err("a query or fragment is not allowed (the agent adds /ingest?...)".into());
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err("user information in the URL is not supported".into());
        }
        if path.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err("the path contains spaces or control characters".into());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6.split_once(']').ok_or("unterminated [IPv6] host")?;
            (h, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control()) {
            return Err("missing or bad host".into());
        }
        let port = match port {
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("bad port '{p}'")),
            },
        };
        Ok(Url {
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// `host:port` as it goes into the `Host` header and into `connect`.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.path)
    }
}

/// The push options after parsing; `url` is `None` without `push=`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushSpec {
    pub url: Option<Url>,
    /// `push_app=NAME`; `None`: the main class (or jar) of the JVM, else [`DEFAULT_APP`].
    pub app: Option<String>,
    /// `push_labels=K=V+K=V`, in the order given.
    pub labels: Vec<(String, String)>,
}

fn app_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// `push_app=NAME`: ASCII letters, digits, `.`, `_`, `-`.
pub fn parse_app(s: &str) -> Result<String, String> {
    if s.is_empty() || !s.chars().all(app_char) {
        return Err("expected a name of ASCII letters, digits, '.', '_' or '-'".into());
    }
    Ok(s.to_string())
}

/// The default application name from the JVM's `sun.java.command` (`MAIN_CLASS args...` or
/// `app.jar args...`): the full class name, or the jar's file name without `.jar`, with
/// characters other than those of [`parse_app`] turned into `_`; [`DEFAULT_APP`] when nothing
/// is left.
pub fn app_from_command(command: Option<&str>) -> String {
    let first = command
        .and_then(|c| c.split_whitespace().next())
        .unwrap_or_default();
    let base = first.rsplit('/').next().unwrap_or_default();
    let base = base.strip_suffix(".jar").unwrap_or(base);
    let name: String = base
        .chars()
        .map(|c| if app_char(c) { c } else { '_' })
        .collect();
    if name.chars().any(|c| c.is_ascii_alphanumeric()) {
        name
    } else {
        DEFAULT_APP.to_string()
    }
}

/// `push_labels=env=prod+region=eu-1`: keys `[A-Za-z_][A-Za-z0-9_]*` (not starting `__`),
/// values non-empty without `{ } , = + "` or spaces; keys unique.
pub fn parse_labels(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for item in s.split('+') {
        let Some((k, v)) = item.split_once('=') else {
            return Err(format!(
                "'{item}' is not KEY=VALUE (labels are joined by '+')"
            ));
        };
        let key_ok = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !k.starts_with("__");
        if !key_ok {
            return Err(format!(
                "bad label name '{k}' (letters, digits, '_'; not starting with a digit or '__')"
            ));
        }
        let bad_value = |c: char| "{},=+\"".contains(c) || c.is_whitespace() || c.is_control();
        if v.is_empty() || v.contains(bad_value) {
            return Err(format!(
                "bad value '{v}' for label {k} (non-empty, without spaces or {{ }} , = + \")"
            ));
        }
        if out.iter().any(|(o, _)| o == k) {
            return Err(format!("label {k} given twice"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    Ok(out)
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The request target of one push: `PATH/ingest?name=APP{k=v,...}&from=S&until=S&format=pprof&
/// spyName=jfrctx&sampleRate=HZ` (`name` percent-encoded; `until` at least `from + 1`).
pub fn ingest_target(
    url: &Url,
    app: &str,
    labels: &[(String, String)],
    from_s: i64,
    until_s: i64,
    sample_rate: i64,
) -> String {
    let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let name = format!("{app}{{{}}}", labels.join(","));
    format!(
        "{}/ingest?name={}&from={from_s}&until={}&format=pprof&spyName=jfrctx&sampleRate={}",
        url.path,
        percent_encode(&name),
        until_s.max(from_s + 1),
        sample_rate.max(1)
    )
}

/// Sampling rate in Hz for `period_ns` (rounded, at least 1).
pub fn sample_rate(period_ns: i64) -> i64 {
    if period_ns <= 0 {
        return 1;
    }
    ((1_000_000_000 + period_ns / 2) / period_ns).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn urls() {
        assert_eq!(
            url("http://127.0.0.1:4040"),
            Url {
                host: "127.0.0.1".into(),
                port: 4040,
                path: String::new()
            }
        );
        assert_eq!(url("http://pyro/").port, 80);
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
        assert!(e("https://pyro:4040").starts_with("https is not supported"));
        assert!(e("ftp://x").starts_with("unsupported scheme 'ftp'"));
        assert!(e("pyro:4040").starts_with("expected http://"));
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
    fn sample_rates() {
        assert_eq!(sample_rate(10_000_000), 100);
        assert_eq!(sample_rate(1_000_000), 1000);
        assert_eq!(sample_rate(3_000_000), 333);
        assert_eq!(sample_rate(2_000_000_000), 1);
        assert_eq!(sample_rate(0), 1);
    }
}
