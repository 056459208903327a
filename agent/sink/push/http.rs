//! The push's HTTP client, over `ureq` (rustls for https, proxies from `HTTPS_PROXY` /
//! `HTTP_PROXY` / `ALL_PROXY` and `NO_PROXY`, chunked or sized answers): one `POST` of a
//! gzipped pprof body per profile, bounded by a timeout, with the tenant and credentials
//! headers; redirects (301, 302, 307, 308) are followed by posting the body again (at most
//! [`MAX_REDIRECTS`]), credentials only to the same host without a downgrade to http. The
//! answer decides: 2xx taken; 4xx other than 408 and 429 a refusal, with its status and the
//! start of its body; everything else (5xx, 408, 429, network) worth retrying.

use std::io::Read;
use std::time::Duration;

use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};

use super::spec::Url;

/// Longest wait for a connection to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Redirects followed per push.
pub const MAX_REDIRECTS: usize = 3;
/// How much of a refusal's body is kept.
pub const EXCERPT: usize = 200;

/// Why a push failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub message: String,
    /// False for answers that will not change (4xx other than 408 and 429).
    pub retryable: bool,
    /// A refusal: the status and the start of the server's answer.
    pub refusal: Option<(u16, String)>,
}

impl SendError {
    pub fn retry(message: String) -> SendError {
        SendError {
            message,
            retryable: true,
            refusal: None,
        }
    }
}

/// Whether status `code` (with the start of the answer's body) means the push was taken.
pub fn check_status(code: u16, excerpt: &str) -> Result<(), SendError> {
    let message = if excerpt.is_empty() {
        format!("HTTP {code}")
    } else {
        format!("HTTP {code}: {excerpt}")
    };
    match code {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(SendError::retry(message)),
        400..=499 => Err(SendError {
            message,
            retryable: false,
            refusal: Some((code, excerpt.to_string())),
        }),
        _ => Err(SendError::retry(message)),
    }
}

/// The first [`EXCERPT`] bytes of an answer as one line of text.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(EXCERPT)]);
    text.trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The URL a `Location` header points to, from the request's `url`.
pub fn resolve(url: &str, location: &str) -> Option<String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(location.to_string());
    }
    let scheme_end = url.find("://")? + 3;
    let origin_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    location
        .starts_with('/')
        .then(|| format!("{}{location}", &url[..origin_end]))
}

/// Whether credentials given for `from` may go to `to`: same host, no downgrade to http.
pub fn same_host(from: &str, to: &str) -> bool {
    let split = |u: &str| -> Option<(bool, String)> {
        let (scheme, rest) = u.split_once("://")?;
        let authority = rest.split('/').next()?;
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next()?.to_string(),
            None => authority.split(':').next()?.to_string(),
        };
        Some((
            scheme.eq_ignore_ascii_case("https"),
            host.to_ascii_lowercase(),
        ))
    };
    match (split(from), split(to)) {
        (Some((from_tls, a)), Some((to_tls, b))) => a == b && (to_tls || !from_tls),
        _ => false,
    }
}

/// Reads the PEM certificates of `push_ca=FILE`.
fn roots(path: &std::path::Path) -> Result<RootCerts, String> {
    let pem = std::fs::read(path).map_err(|e| {
        format!(
            "push_ca: cannot read {}: {}",
            path.display(),
            crate::log::io_message(&e)
        )
    })?;
    let mut certs = Vec::new();
    for item in parse_pem(&pem) {
        match item {
            Ok(PemItem::Certificate(c)) => certs.push(c),
            Ok(_) => {}
            Err(e) => return Err(format!("push_ca: {}: {e}", path.display())),
        }
    }
    if certs.is_empty() {
        return Err(format!(
            "push_ca: {} holds no PEM certificate",
            path.display()
        ));
    }
    Ok(RootCerts::new_with_certs(&certs))
}

/// One endpoint's client: the `ureq` agent (connection pool, TLS, proxy) and the headers.
pub struct Client {
    agent: ureq::Agent,
    base: String,
    /// `X-Scope-OrgID`.
    tenant: Option<String>,
    /// `Authorization` (never shown).
    authorization: Option<String>,
}

impl Client {
    /// `ca`: PEM roots trusted instead of the built-in ones (for https).
    pub fn new(
        url: &Url,
        tenant: Option<String>,
        authorization: Option<String>,
        ca: Option<&std::path::Path>,
    ) -> Result<Client, String> {
        let mut tls = TlsConfig::builder();
        if let Some(path) = ca {
            tls = tls.root_certs(roots(path)?);
        }
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .user_agent(format!("jfrctx/{}", env!("CARGO_PKG_VERSION")))
            .tls_config(tls.build())
            .build();
        Ok(Client {
            agent: config.new_agent(),
            base: url.origin(),
            tenant,
            authorization,
        })
    }

    /// POSTs `body` (a gzipped pprof) to `target` (`/PATH/ingest?...`), all of it (redirects
    /// included) bounded by `timeout`.
    pub fn post(&self, target: &str, body: &[u8], timeout: Duration) -> Result<(), SendError> {
        let first = format!("{}{target}", self.base);
        let mut url = first.clone();
        let started = std::time::Instant::now();
        for _ in 0..=MAX_REDIRECTS {
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(SendError::retry("timed out following redirects".into()));
            }
            let mut req = self
                .agent
                .post(&url)
                .config()
                .timeout_global(Some(left))
                .build()
                .header("Content-Type", "application/octet-stream");
            if same_host(&first, &url) {
                if let Some(t) = &self.tenant {
                    req = req.header("X-Scope-OrgID", t);
                }
                if let Some(a) = &self.authorization {
                    req = req.header("Authorization", a);
                }
            }
            let mut resp = req.send(body).map_err(|e| SendError::retry(describe(&e)))?;
            let status = resp.status().as_u16();
            if matches!(status, 301 | 302 | 307 | 308) {
                let location = resp
                    .headers()
                    .get("location")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|l| resolve(&url, l));
                match location {
                    Some(next) => {
                        url = next;
                        continue;
                    }
                    None => return check_status(400, "redirect without a usable Location"),
                }
            }
            let mut head = Vec::with_capacity(EXCERPT);
            if !(200..300).contains(&status) {
                let _ = resp
                    .body_mut()
                    .as_reader()
                    .take(EXCERPT as u64)
                    .read_to_end(&mut head);
            }
            return check_status(status, &excerpt(&head));
        }
        Err(SendError::retry(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }
}

/// A `ureq` error as a short phrase (no credentials: ureq's errors hold none).
fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Io(io) => crate::log::io_message(io),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(check_status(204, ""), Ok(()));
        assert!(check_status(503, "").unwrap_err().retryable);
        assert!(check_status(429, "slow down").unwrap_err().retryable);
        let e = check_status(422, "{\"code\":\"unknown\"}").unwrap_err();
        assert_eq!(
            e,
            SendError {
                message: "HTTP 422: {\"code\":\"unknown\"}".into(),
                retryable: false,
                refusal: Some((422, "{\"code\":\"unknown\"}".into())),
            }
        );
        assert_eq!(check_status(400, "").unwrap_err().message, "HTTP 400");
    }

    #[test]
    fn excerpts() {
        assert_eq!(excerpt(b" a\nb\r\n"), "a b");
        assert_eq!(excerpt(&[b'x'; 500]).len(), EXCERPT);
        assert_eq!(excerpt(b"\xff ok"), "\u{fffd} ok");
    }

    #[test]
    fn redirects() {
        let u = "http://h:1/p/ingest?x=1";
        assert_eq!(
            resolve(u, "/q/ingest?y").as_deref(),
            Some("http://h:1/q/ingest?y")
        );
        assert_eq!(
            resolve(u, "https://g/ingest").as_deref(),
            Some("https://g/ingest")
        );
        assert_eq!(resolve(u, "ingest"), None);
        assert!(same_host(u, "https://H:443/x"));
        assert!(same_host("https://h/x", "https://h:8443/y"));
        assert!(!same_host("https://h/x", "http://h/y"));
        assert!(!same_host(u, "http://evil/x"));
        assert!(same_host("http://[::1]:1/a", "http://[::1]:2/b"));
    }

    #[test]
    fn refused_connection_is_a_retryable_error() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = Url::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let c = Client::new(&url, None, None, None).unwrap();
        let e = c.post("/ingest", b"x", Duration::from_secs(1)).unwrap_err();
        assert!(e.retryable && e.refusal.is_none(), "{e:?}");
        assert!(e.message.contains("refused"), "{e:?}");
    }

    #[test]
    fn a_bad_ca_file_is_named() {
        let url = Url::parse("https://h").unwrap();
        let missing = std::path::Path::new("/nonexistent/ca.pem");
        let e = Client::new(&url, None, None, Some(missing)).err().unwrap();
        assert!(
            e.starts_with("push_ca: cannot read /nonexistent/ca.pem: "),
            "{e}"
        );
    }
}
