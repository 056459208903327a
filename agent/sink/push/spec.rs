//! The push options (`push=URL`, `push_app=NAME`, `push_labels=K=V+K=V`, `push_keys=K+K`,
//! `push_budget=N`, `push_tenant=ID`, `push_auth=basic:VAR|bearer:VAR`, `push_ca=FILE`) and the
//! ingest request they give (pure).

use std::fmt;

/// Period of the pushes when `interval` is not given.
pub const DEFAULT_INTERVAL_NS: i64 = 10_000_000_000;
/// Application name when neither `push_app` nor the JVM's main class/jar gives one.
pub const DEFAULT_APP: &str = "jfrctx";

/// Default of `push_budget`: distinct values a label key may take in one interval.
pub const DEFAULT_BUDGET: u32 = 32;
/// Largest `push_budget`.
pub const BUDGET_MAX: u32 = 10_000;

/// An endpoint: `http[s]://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https://` (TLS).
    pub https: bool,
    pub host: String,
    pub port: u16,
    /// Empty or `/a/b` (no trailing `/`); `/ingest` is appended to it.
    pub path: String,
}

impl Url {
    /// Parses `http[s]://HOST[:PORT][/PATH]` (`[IPv6]` hosts too). The error says what is
    /// wrong.
    pub fn parse(s: &str) -> Result<Url, String> {
        let (https, rest) = match s.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
            Some((scheme, _)) => {
                return Err(format!(
                    "unsupported scheme '{scheme}' (use http:// or https://)"
                ))
            }
            None => return Err("expected http[s]://HOST[:PORT][/PATH]".into()),
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
            None if https => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("bad port '{p}'")),
            },
        };
        Ok(Url {
            https,
            host: host.to_string(),
            port,
            path: path.to_string(),
        })
    }

    /// `http[s]://host:port` (no path).
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority())
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
        write!(f, "{}{}", self.origin(), self.path)
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
    /// `push_keys=K+K`: exactly these sample label keys are pushed (no budget); `None`: every
    /// key within the budget.
    pub keys: Option<Vec<String>>,
    /// `push_budget=N` (`None`: [`DEFAULT_BUDGET`]).
    pub budget: Option<u32>,
    /// `push_tenant=ID`: sent as `X-Scope-OrgID`.
    pub tenant: Option<String>,
    /// `push_auth=basic:VAR|bearer:VAR`: the credentials are read from the environment
    /// variable `VAR` when the agent loads.
    pub auth: Option<Auth>,
    /// `push_ca=FILE`: PEM certificates trusted for https instead of the built-in roots.
    pub ca: Option<std::path::PathBuf>,
}

impl PushSpec {
    /// Without `push=URL`: the first other push option given (key, value), which then has no
    /// meaning.
    pub fn orphan(&self) -> Option<(&'static str, String)> {
        if self.url.is_some() {
            return None;
        }
        let labels = || {
            let l: Vec<String> = self
                .labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            l.join("+")
        };
        let path = |p: &std::path::PathBuf| p.display().to_string();
        [
            ("push_app", self.app.clone()),
            ("push_labels", (!self.labels.is_empty()).then(labels)),
            ("push_keys", self.keys.as_ref().map(|k| k.join("+"))),
            ("push_budget", self.budget.map(|b| b.to_string())),
            ("push_tenant", self.tenant.clone()),
            ("push_auth", self.auth.as_ref().map(Auth::to_string)),
            ("push_ca", self.ca.as_ref().map(path)),
        ]
        .into_iter()
        .find_map(|(k, v)| Some((k, v?)))
    }
}

/// `push_auth=`: the scheme and the environment variable holding the credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    /// `basic:VAR`, `VAR` holding `USER:PASSWORD`.
    Basic(String),
    /// `bearer:VAR`, `VAR` holding the token.
    Bearer(String),
}

impl Auth {
    /// `basic:VAR` or `bearer:VAR`.
    pub fn parse(s: &str) -> Result<Auth, String> {
        let (scheme, var) = s.split_once(':').unwrap_or((s, ""));
        let var_ok = !var.is_empty()
            && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !var.starts_with(|c: char| c.is_ascii_digit());
        if !var_ok {
            return Err(
                "expected basic:VAR or bearer:VAR, VAR naming an environment variable".into(),
            );
        }
        match scheme {
            "basic" => Ok(Auth::Basic(var.into())),
            "bearer" => Ok(Auth::Bearer(var.into())),
            _ => Err(format!("unknown scheme '{scheme}' (basic or bearer)")),
        }
    }

    /// The `Authorization` header value, from `lookup(VAR)` (the process environment). The
    /// error names the variable, never its value.
    pub fn header(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        let (var, basic) = match self {
            Auth::Basic(v) => (v, true),
            Auth::Bearer(v) => (v, false),
        };
        let value = lookup(var)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("push_auth: the environment variable {var} is not set"))?;
        if value.contains(|c: char| c.is_control()) {
            return Err(format!(
                "push_auth: the environment variable {var} holds control characters"
            ));
        }
        if basic {
            if !value.contains(':') {
                return Err(format!(
                    "push_auth: the environment variable {var} must hold USER:PASSWORD"
                ));
            }
            Ok(format!("Basic {}", base64(value.as_bytes())))
        } else {
            Ok(format!("Bearer {value}"))
        }
    }
}

impl fmt::Display for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Basic(v) => write!(f, "basic:{v}"),
            Auth::Bearer(v) => write!(f, "bearer:{v}"),
        }
    }
}

/// Standard base64 with padding (RFC 4648), for basic auth.
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `push_tenant=ID`: 1 to 150 characters among letters, digits and `!-_.*'()` (the tenant ids
/// Grafana's multi-tenant servers accept).
pub fn parse_tenant(s: &str) -> Result<String, String> {
    let ok = |c: char| c.is_ascii_alphanumeric() || "!-_.*'()".contains(c);
    if s.is_empty() || s.len() > 150 || !s.chars().all(ok) || s == "." || s == ".." {
        return Err("expected 1 to 150 letters, digits or !-_.*'()".into());
    }
    Ok(s.to_string())
}

/// `push_budget=N`, 1 to [`BUDGET_MAX`].
pub fn parse_budget(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=BUDGET_MAX).contains(&n) => Ok(n),
        _ => Err(format!("expected a number from 1 to {BUDGET_MAX}")),
    }
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
/// spyName=jfrctx&sampleRate=HZ` (`name` percent-encoded; `until` at least `from + 1`). The body
/// is the gzipped pprof itself: with `format=pprof` Pyroscope's `/ingest` reads the whole body as
/// one (gzipped or plain) pprof, so a multipart form must not carry `format=pprof`.
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
mod tests;
