//! Minimal HTTP/1.1 POST over `std::net::TcpStream`: one request per connection
//! (`Connection: close`), a `multipart/form-data` body with the profile in the form file field
//! `profile` (what Pyroscope's `/ingest` reads for `format=pprof`), connect/read/write timeouts,
//! and the status code of the answer checked.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::spec::Url;

/// Longest wait for a connection to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest wait for one read or write on the connection.
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);
/// The status line must arrive within this many bytes.
const MAX_HEAD: usize = 4096;
/// Separates the parts of the form (never occurs in the gzip header the profile starts with
/// and is checked against the body anyway).
const BOUNDARY: &str = "jfrctx-7c1f3a9e5b2d4c68";

/// Why a push failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendError {
    pub message: String,
    /// False for answers that will not change (4xx other than 408 and 429).
    pub retryable: bool,
}

impl SendError {
    fn retry(message: String) -> SendError {
        SendError {
            message,
            retryable: true,
        }
    }
}

/// The form body: one file field `profile` holding `profile` (a gzipped pprof).
pub fn multipart(profile: &[u8]) -> (String, Vec<u8>) {
    let mut boundary = BOUNDARY.to_string();
    while profile
        .windows(boundary.len())
        .any(|w| w == boundary.as_bytes())
    {
        boundary.push('x');
    }
    let mut body = Vec::with_capacity(profile.len() + 256);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"profile\"; \
             filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(profile);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The request head for `POST target` with a body of `len` bytes.
pub fn request_head(url: &Url, target: &str, content_type: &str, len: usize) -> String {
    format!(
        "POST {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: jfrctx/{}\r\nContent-Type: \
         {content_type}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n",
        url.authority(),
        env!("CARGO_PKG_VERSION")
    )
}

/// The status code of a response head starting `HTTP/1.x NNN ...`; `None` until the whole
/// status line is there, an error when it is not HTTP.
pub fn status(head: &[u8]) -> Result<Option<u16>, String> {
    let Some(end) = head.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = String::from_utf8_lossy(&head[..end]);
    let mut parts = line.split(' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().and_then(|c| c.parse::<u16>().ok());
    match code {
        Some(c) if version.starts_with("HTTP/1.") && (100..600).contains(&c) => Ok(Some(c)),
        _ => Err(format!(
            "not an HTTP response: '{}'",
            line.chars().take(60).collect::<String>()
        )),
    }
}

/// Whether status `code` means the push was taken (`Ok`), or the error to report.
pub fn check_status(code: u16) -> Result<(), SendError> {
    match code {
        200..=299 => Ok(()),
        408 | 429 | 500..=599 => Err(SendError::retry(format!("HTTP status {code}"))),
        _ => Err(SendError {
            message: format!("HTTP status {code}"),
            retryable: false,
        }),
    }
}

/// POSTs `profile` to `url` at `target`, each step bounded by `timeout` (and by
/// [`CONNECT_TIMEOUT`] / [`IO_TIMEOUT`]).
pub fn post(url: &Url, target: &str, profile: &[u8], timeout: Duration) -> Result<(), SendError> {
    let io_err = |what: &str, e: std::io::Error| {
        SendError::retry(format!(
            "{what} {}: {}",
            url.authority(),
            crate::config::io_message(&e)
        ))
    };
    let timeout = timeout.max(Duration::from_millis(1));
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| io_err("cannot resolve", e))?
        .collect();
    let mut last = None;
    let mut stream = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT.min(timeout)) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let mut stream = match (stream, last) {
        (Some(s), _) => s,
        (None, Some(e)) => return Err(io_err("cannot connect to", e)),
        (None, None) => return Err(SendError::retry(format!("no address for {}", url.host))),
    };
    let io = Some(IO_TIMEOUT.min(timeout));
    stream
        .set_read_timeout(io)
        .and_then(|()| stream.set_write_timeout(io))
        .map_err(|e| io_err("socket options for", e))?;
    let _ = stream.set_nodelay(true);
    let (content_type, body) = multipart(profile);
    let head = request_head(url, target, &content_type, body.len());
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&body))
        .and_then(|()| stream.flush())
        .map_err(|e| io_err("cannot send to", e))?;
    let mut answer = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    loop {
        match status(&answer) {
            Ok(Some(code)) => return check_status(code),
            Ok(None) if answer.len() < MAX_HEAD => {}
            Ok(None) => return Err(SendError::retry("no HTTP status line".into())),
            Err(e) => return Err(SendError::retry(e)),
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                return Err(SendError::retry(
                    "connection closed without an answer".into(),
                ))
            }
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) => return Err(io_err("no answer from", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_body() {
        let (ct, body) = multipart(b"\x1f\x8bDATA");
        assert_eq!(ct, format!("multipart/form-data; boundary={BOUNDARY}"));
        let text = String::from_utf8_lossy(&body);
        assert!(text.starts_with(&format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; \
                                           name=\"profile\"; filename=\"profile.pprof\"\r\n"
        )));
        let mut tail = b"\r\n\r\n\x1f\x8bDATA".to_vec();
        tail.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
        assert!(body.ends_with(&tail), "{text}");
        // A profile that contains the boundary gets a longer one.
        let tricky = format!("a{BOUNDARY}b");
        let (ct, body) = multipart(tricky.as_bytes());
        assert_eq!(ct, format!("multipart/form-data; boundary={BOUNDARY}x"));
        assert!(String::from_utf8(body)
            .unwrap()
            .ends_with(&format!("--{BOUNDARY}x--\r\n")));
    }

    #[test]
    fn head() {
        let url = Url::parse("http://[::1]:4040").unwrap();
        let h = request_head(&url, "/ingest?x=1", "t/x", 12);
        assert!(h.starts_with("POST /ingest?x=1 HTTP/1.1\r\nHost: [::1]:4040\r\n"));
        assert!(h.contains("\r\nContent-Type: t/x\r\nContent-Length: 12\r\n"));
        assert!(h.ends_with("Connection: close\r\n\r\n"));
    }

    #[test]
    fn status_lines() {
        assert_eq!(status(b"HTTP/1.1 200 OK\r\n"), Ok(Some(200)));
        assert_eq!(status(b"HTTP/1.0 503\r\nx"), Ok(Some(503)));
        assert_eq!(status(b"HTTP/1.1 20"), Ok(None));
        assert!(status(b"SSH-2.0-OpenSSH\r\n").is_err());
        assert!(status(b"HTTP/1.1 abc\r\n").is_err());
        assert_eq!(check_status(204), Ok(()));
        assert!(check_status(503).unwrap_err().retryable);
        assert!(check_status(429).unwrap_err().retryable);
        let e = check_status(400).unwrap_err();
        assert_eq!(
            (e.message.as_str(), e.retryable),
            ("HTTP status 400", false)
        );
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
        let e = post(&url, "/ingest", b"x", Duration::from_secs(1)).unwrap_err();
        assert!(e.retryable, "{e:?}");
        assert!(
            e.message.starts_with("cannot connect to 127.0.0.1:"),
            "{e:?}"
        );
    }
}
