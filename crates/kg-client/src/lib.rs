//! KG Memory's client: a minimal HTTP/1.1 client for talking to a KG Memory server on
//! this machine (health probes, `kg-memory status`, hook couriers, the stdio bridge,
//! the tray): one request per connection over hyper's HTTP/1 client, the same hyper
//! the server runs on.
//! Loopback only, so no TLS, no proxies, no redirects — and no dependency that would
//! need them.

use http_body_util::BodyExt;
use hyper::client::conn::http1;
use hyper::{Request, Uri, header};
use hyper_util::rt::TokioIo;
use std::time::Duration;
use tokio::net::TcpStream;

/// The header a browser page cannot send to another site without a CORS preflight,
/// which this server never answers: our own clients send it on the routes that
/// register or change state without a JSON body (`kg-memory hook` does).
pub const CLIENT_HEADER: &str = "x-kg-client";

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

/// One request on its own connection (`Connection: close`), over hyper's HTTP/1
/// client. The connection is driven here, not spawned, so a timeout that drops this
/// future also closes the socket.
async fn exchange(method: &str, url: &str, body: Option<&str>) -> Result<Answer, ClientError> {
    let (authority, path) = split(url)?;
    let path = Uri::try_from(path).map_err(|_| ClientError::Url(url.to_string()))?;
    let mut head = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, &authority)
        .header(header::CONNECTION, "close")
        .header(header::ACCEPT, "application/json, text/event-stream")
        // Our routes that start sessions ask a browser for this; ours sends it always.
        .header(CLIENT_HEADER, "kg-memory");
    if let Some(body) = body {
        head = head
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, body.len());
    }
    let request = head
        .body(body.unwrap_or_default().to_string())
        .map_err(|e| ClientError::Protocol(url.to_string(), e.to_string()))?;

    let stream = TcpStream::connect(&authority)
        .await
        .map_err(|e| ClientError::Io(url.to_string(), e))?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| failure(url, e))?;
    let answer = async {
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| failure(url, e))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failure(url, e))?
            .to_bytes();
        let body = String::from_utf8(Vec::from(body))
            .map_err(|_| ClientError::Protocol(url.to_string(), "body is not UTF-8".to_string()))?;
        Ok(Answer { status, body })
    };
    // The connection's own failure also reaches the request, so once it ends there
    // is nothing left to wait for but the answer.
    let drive = async {
        let _ = connection.await;
        std::future::pending().await
    };
    tokio::select! {
        answer = answer => answer,
        never = drive => never,
    }
}

/// A hyper error in words: an I/O failure underneath (a reset, a broken pipe) reads
/// as one, anything else is a protocol error.
fn failure(url: &str, e: hyper::Error) -> ClientError {
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            let io = std::io::Error::new(io.kind(), io.to_string());
            return ClientError::Io(url.to_string(), io);
        }
        cause = c.source();
    }
    ClientError::Protocol(url.to_string(), e.to_string())
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

/// Ask `/health` at `base` whether a KG Memory server answers; returns its version.
pub async fn probe_health(base: &str) -> Option<String> {
    let url = format!("{base}/health");
    let body = get(&url, std::time::Duration::from_secs(2)).await.ok()?;
    let value: serde_json::Value = serde_json::from_str(&body).ok()?;
    (value["transport"] == "streamable-http")
        .then(|| value["version"].as_str().unwrap_or("?").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const WAIT: Duration = Duration::from_secs(5);

    /// A one-shot server on 127.0.0.1: it reads one request (head and
    /// `Content-Length` body), answers with `answer` byte for byte, and closes.
    /// Returns its base URL and the request it saw.
    async fn serve_once(answer: &'static [u8]) -> (String, tokio::task::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut raw = Vec::new();
            let mut buf = [0u8; 1024];
            loop {
                let n = socket.read(&mut buf).await.expect("read");
                raw.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&raw);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().to_string())
                        })
                        .map_or(0, |v| v.parse::<usize>().expect("length"));
                    if raw.len() >= end + 4 + length {
                        break;
                    }
                }
                assert!(n > 0, "the client closed before its request was whole");
            }
            socket.write_all(answer).await.expect("write");
            socket.shutdown().await.expect("shutdown");
            String::from_utf8(raw).expect("UTF-8 request")
        });
        (base, seen)
    }

    #[tokio::test]
    async fn reads_a_plain_answer_and_sends_a_json_post() {
        let (base, seen) =
            serve_once(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
                .await;
        let url = format!("{base}/api/prompt_context?x=1");
        let answer = request("POST", &url, Some(r#"{"a":1}"#), WAIT)
            .await
            .expect("answers");
        assert_eq!((answer.status, answer.body.as_str()), (200, "{}"));
        let seen = seen.await.expect("server").to_ascii_lowercase();
        assert!(
            seen.starts_with("post /api/prompt_context?x=1 http/1.1\r\n"),
            "{seen}"
        );
        for line in [
            format!("host: {}", &base["http://".len()..]),
            "connection: close".to_string(),
            "accept: application/json, text/event-stream".to_string(),
            "content-type: application/json".to_string(),
            "content-length: 7".to_string(),
        ] {
            assert!(
                seen.contains(&format!("\r\n{line}\r\n")),
                "{line} missing in {seen}"
            );
        }
        assert!(seen.ends_with("\r\n\r\n{\"a\":1}"), "{seen}");
    }

    #[tokio::test]
    async fn reads_a_chunked_answer_and_sends_a_bare_get() {
        let (base, seen) = serve_once(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nNot \r\n5\r\nFound\r\n0\r\n\r\n",
        )
        .await;
        let answer = request("GET", &base, None, WAIT).await.expect("answers");
        assert_eq!((answer.status, answer.body.as_str()), (404, "Not Found"));
        let seen = seen.await.expect("server").to_ascii_lowercase();
        assert!(seen.starts_with("get / http/1.1\r\n"), "{seen}");
        assert!(
            !seen.contains("content-length") && !seen.contains("content-type"),
            "{seen}"
        );
        // `get` hands back a 2xx body only.
        let (base, _) =
            serve_once(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy").await;
        let e = get(&format!("{base}/health"), WAIT)
            .await
            .expect_err("a 503");
        assert!(
            matches!(e, ClientError::Status { status: 503, ref body, .. } if body == "busy"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn reads_an_answer_that_ends_with_the_connection() {
        let (base, _) =
            serve_once(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end").await;
        assert_eq!(get(&base, WAIT).await.expect("answers"), "until the end");
    }

    #[tokio::test]
    async fn failures_in_words() {
        let (base, _) = serve_once(b"garbage").await;
        let e = get(&base, WAIT).await.expect_err("garbage");
        assert!(matches!(e, ClientError::Protocol(..)), "{e}");
        let (base, _) = serve_once(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n\xff\xfe").await;
        let e = get(&base, WAIT).await.expect_err("not UTF-8");
        assert_eq!(
            e.to_string(),
            format!("unexpected answer from {base}: body is not UTF-8")
        );

        for bad in ["https://127.0.0.1:1/", "http:///x", "127.0.0.1:1"] {
            let e = get(bad, WAIT).await.expect_err("bad URL");
            assert_eq!(
                e.to_string(),
                format!("{bad} is not an http://host:port URL")
            );
        }

        // Nobody listening: a port that was just free.
        let free = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/health", free.local_addr().expect("addr"));
        drop(free);
        let e = get(&url, WAIT).await.expect_err("refused");
        assert!(matches!(e, ClientError::Io(..)), "{e}");
        assert!(
            e.to_string().starts_with(&format!("cannot reach {url}: ")),
            "{e}"
        );

        // A server that accepts and never answers.
        let silent = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/", silent.local_addr().expect("addr"));
        let short = Duration::from_millis(200);
        let e = get(&url, short).await.expect_err("timeout");
        assert_eq!(
            e.to_string(),
            format!("no answer from {url} within {short:?}")
        );
    }

    #[test]
    fn encodes_query_values() {
        assert_eq!(encode("/home/a b/ü"), "/home/a%20b/%C3%BC");
    }
}
