//! A minimal HTTP/1.1 client for the application-server tests: keep-alive GETs against the
//! embedded Tomcat on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A keep-alive connection to `127.0.0.1:port` (20 s read timeout, no Nagle delay).
pub fn connect(port: u16) -> BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to Tomcat");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    s.set_nodelay(true).expect("nodelay");
    BufReader::new(s)
}

/// One HTTP/1.1 GET with `headers` on a keep-alive connection; returns (status line, body,
/// whether the server closes the connection).
pub fn get(
    reader: &mut BufReader<TcpStream>,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(String, String, bool)> {
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    reader.get_mut().write_all(request.as_bytes())?;
    let mut status = String::new();
    reader.read_line(&mut status)?;
    let mut length = 0;
    let mut close = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse::<usize>().unwrap_or(0);
        } else if name == "connection" && value.eq_ignore_ascii_case("close") {
            close = true;
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok((
        status.trim_end().to_string(),
        String::from_utf8_lossy(&body).into_owned(),
        close,
    ))
}
