//! A minimal HTTP/1.1 client for talking to a KG Memory server on this machine
//! (health probes, `kg-memory status`, hook couriers). Loopback only, so no TLS, no
//! proxies, no redirects — and no dependency that would need them.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A failed request, in words.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0} is not an http://host:port URL")]
    Url(String),
    #[error("no answer from {0} within {1:?}")]
    Timeout(String, Duration),
    #[error("cannot reach {0}: {1}")]
    Io(String, std::io::Error),
    #[error("unexpected answer from {0}: {1}")]
    Protocol(String, String),
    #[error("{url} answered {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
}

/// A response.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: String,
}

fn split(url: &str) -> Result<(String, String), ClientError> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| ClientError::Url(url.to_string()))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(ClientError::Url(url.to_string()));
    }
    Ok((authority.to_string(), path.to_string()))
}

/// Send one request and read the whole answer, within `timeout`.
pub async fn request(
    method: &str,
    url: &str,
    body: Option<&str>,
    timeout: Duration,
) -> Result<Answer, ClientError> {
    tokio::time::timeout(timeout, exchange(method, url, body))
        .await
        .map_err(|_| ClientError::Timeout(url.to_string(), timeout))?
}

async fn exchange(method: &str, url: &str, body: Option<&str>) -> Result<Answer, ClientError> {
    let (authority, path) = split(url)?;
    let io = |e| ClientError::Io(url.to_string(), e);
    let mut stream = TcpStream::connect(&authority).await.map_err(io)?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\n"
    );
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.map_err(io)?;
    if let Some(body) = body {
        stream.write_all(body.as_bytes()).await.map_err(io)?;
    }
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.map_err(io)?;
    parse(url, &raw)
}

fn parse(url: &str, raw: &[u8]) -> Result<Answer, ClientError> {
    let bad = |why: &str| ClientError::Protocol(url.to_string(), why.to_string());
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no header end"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad("header is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status line"))?;
    let chunked = lines.any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let mut body = raw[end + 4..].to_vec();
    if chunked {
        body = dechunk(&body).ok_or_else(|| bad("broken chunked body"))?;
    }
    let body = String::from_utf8(body).map_err(|_| bad("body is not UTF-8"))?;
    Ok(Answer { status, body })
}

fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(data.get(..size)?);
        data = data.get(size + 2..)?;
    }
}

/// GET a URL and return the body of a 2xx answer.
pub async fn get(url: &str, timeout: Duration) -> Result<String, ClientError> {
    ok(url, request("GET", url, None, timeout).await?)
}

/// POST a JSON body and return the body of a 2xx answer.
pub async fn post(url: &str, body: &str, timeout: Duration) -> Result<String, ClientError> {
    ok(url, request("POST", url, Some(body), timeout).await?)
}

fn ok(url: &str, answer: Answer) -> Result<String, ClientError> {
    if (200..300).contains(&answer.status) {
        Ok(answer.body)
    } else {
        Err(ClientError::Status {
            url: url.to_string(),
            status: answer.status,
            body: answer.body,
        })
    }
}

/// Percent-encode a query value.
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_chunked_answers() {
        let plain = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            parse("u", plain).map(|a| a.body).ok().as_deref(),
            Some("{}")
        );
        let chunked = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nNot \r\n5\r\nFound\r\n0\r\n\r\n";
        let a = parse("u", chunked).expect("parses");
        assert_eq!((a.status, a.body.as_str()), (404, "Not Found"));
        assert!(parse("u", b"garbage").is_err());
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(encode("/home/a b/ü"), "/home/a%20b/%C3%BC");
    }
}
