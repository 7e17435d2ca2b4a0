//! A small HTTP/1.1 client over std `TcpStream`, for speaking to the real server byte
//! for byte: one writer of request heads, one-shot exchanges (`Connection: close`),
//! connections kept alive across exchanges, and MCP's JSON-RPC over them.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The head of a request to `127.0.0.1:port`: the request line, `Host` (unless
/// `headers` name one, even an empty one), `headers` in order, `Content-Length` when
/// given, and the blank line.
pub fn request_head(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    content_length: Option<usize>,
) -> String {
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(n) = content_length {
        head.push_str(&format!("Content-Length: {n}\r\n"));
    }
    head.push_str("\r\n");
    head
}

/// The status code of a response head (0 when there is none).
pub fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The value of the header `name` in a response head, if any.
pub fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.lines().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// One exchange on its own connection (`Connection: close`): (status, head, body).
///
/// A POST, or any non-empty body, carries a `Content-Length`. A chunked body is
/// dechunked; a body shorter than its `Content-Length` is an error. A server may
/// answer (413) and close before a large body is sent: the answer is kept, not the
/// broken pipe.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> std::io::Result<(u16, String, Vec<u8>)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut all = vec![("Connection", "close")];
    all.extend_from_slice(headers);
    let length = (!body.is_empty() || method == "POST").then_some(body.len());
    stream.write_all(request_head(port, method, path, &all, length).as_bytes())?;
    let sent = stream.write_all(body);
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    if raw.is_empty() {
        sent?;
        read?;
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "no answer",
        ));
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of header"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let status = status_of(&head);
    if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    } else if let Some(len) = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok())
        && body.len() < len
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "answer cut short",
        ));
    }
    Ok((status, head, body))
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = data.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&data[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(n) = size else { break };
        data = &data[eol + 2..];
        if n == 0 || data.len() < n {
            break;
        }
        out.extend_from_slice(&data[..n]);
        data = &data[n..];
        data = data.strip_prefix(b"\r\n").unwrap_or(data);
    }
    out
}

/// A JSON request on its own connection; the answer is parsed when it is JSON, else
/// kept as a string.
pub fn json_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
    timeout: Duration,
) -> Result<(u16, Value), String> {
    let text = body.map(Value::to_string).unwrap_or_default();
    let headers: &[(&str, &str)] = if body.is_some() {
        &[("Content-Type", "application/json")]
    } else {
        &[]
    };
    let (status, _, raw) = request(port, method, path, headers, text.as_bytes(), timeout)
        .map_err(|e| format!("{method} {path}: {e}"))?;
    let value = serde_json::from_slice(&raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
    Ok((status, value))
}

/// One HTTP/1.1 connection kept alive across exchanges.
#[derive(Debug)]
pub struct KeepAlive {
    port: u16,
    reader: BufReader<TcpStream>,
    closed: bool,
}

impl KeepAlive {
    /// Connect to `127.0.0.1:port` (no Nagle delay; reads wait at most `timeout`).
    pub fn connect(port: u16, timeout: Duration) -> std::io::Result<KeepAlive> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        Ok(KeepAlive {
            port,
            reader: BufReader::with_capacity(64 * 1024, stream),
            closed: false,
        })
    }

    /// The connection itself (to watch it close, or to write to it by hand).
    pub fn stream(&mut self) -> &mut TcpStream {
        self.reader.get_mut()
    }

    /// Did the last answer end the connection (`Connection: close`, or a body that ran
    /// to the end of the stream)?
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Send one request (head and body in one write; `Content-Length` when there is a
    /// body) and read its answer: (status, head, body), the body by its
    /// `Content-Length`, by chunks, or to the end of the stream. A connection the
    /// server closed before answering is an `UnexpectedEof`.
    pub fn exchange(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> std::io::Result<(u16, String, Vec<u8>)> {
        let eof = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "connection closed");
        let mut bytes =
            request_head(self.port, method, path, headers, body.map(<[u8]>::len)).into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        self.reader.get_mut().write_all(&bytes)?;

        let reader = &mut self.reader;
        let mut head = String::new();
        if reader.read_line(&mut head)? == 0 {
            return Err(eof());
        }
        let mut length: Option<usize> = None;
        let mut chunked = false;
        let mut close = false;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Err(eof());
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            head.push_str(&line);
            if let Some((k, v)) = l.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
                match k.as_str() {
                    "content-length" => length = v.parse().ok(),
                    "transfer-encoding" => chunked = v.contains("chunked"),
                    "connection" => close |= v == "close",
                    _ => {}
                }
            }
        }
        let mut raw = Vec::new();
        if chunked {
            loop {
                line.clear();
                reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
                if size == 0 {
                    // Trailers end with an empty line.
                    loop {
                        line.clear();
                        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
                            break;
                        }
                    }
                    break;
                }
                let at = raw.len();
                raw.resize(at + size, 0);
                reader.read_exact(&mut raw[at..])?;
                let mut crlf = [0u8; 2];
                reader.read_exact(&mut crlf)?;
            }
        } else if let Some(n) = length {
            raw.resize(n, 0);
            reader.read_exact(&mut raw)?;
        } else {
            reader.read_to_end(&mut raw)?;
            close = true;
        }
        self.closed = close;
        let head = head.trim_end().to_string();
        Ok((status_of(&head), head, raw))
    }
}

/// The headers Claude Code sends with every MCP message.
pub const MCP_HEADERS: [(&str, &str); 2] = [
    ("Content-Type", "application/json"),
    ("Accept", "application/json, text/event-stream"),
];

/// The `initialize` request of the MCP handshake Claude Code makes.
pub fn mcp_initialize(client: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": client, "version": "1"}}})
}

/// The notification that ends the MCP handshake (answered 202).
pub fn mcp_initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

/// A `tools/call` request.
pub fn tools_call(tool: &str, args: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args}})
}

/// (text, isError) of a `tools/call` answer; `Err` unless it holds a tool result.
pub fn tool_result(body: &str) -> Result<(String, bool), String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("{e}: {}", clip(body)))?;
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .ok_or_else(|| format!("no tool result in {}", clip(body)))?;
    Ok((
        text.to_string(),
        v["result"]["isError"].as_bool().unwrap_or(false),
    ))
}

/// POST one JSON-RPC message to `/` as Claude Code does (on its own connection, no
/// session header); returns (status, body).
pub fn rpc(port: u16, message: &[u8], timeout: Duration) -> std::io::Result<(u16, String)> {
    let (status, _, body) = request(port, "POST", "/", &MCP_HEADERS, message, timeout)?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// One MCP tool call on its own connection; returns (text, isError). Anything but a
/// complete tool result is an `Err` (for a killed server: the call is in flight).
pub fn mcp_call(
    port: u16,
    tool: &str,
    args: &Value,
    timeout: Duration,
) -> Result<(String, bool), String> {
    let message = tools_call(tool, args);
    let (status, body) =
        rpc(port, message.to_string().as_bytes(), timeout).map_err(|e| format!("{tool}: {e}"))?;
    if status != 200 {
        return Err(format!("{tool}: HTTP {status}: {}", clip(&body)));
    }
    tool_result(&body).map_err(|e| format!("{tool}: {e}"))
}

/// The session id in the `Session: <sid>` footer of a `kg_read` answer.
pub fn session_of(text: &str) -> Option<String> {
    text.rsplit("Session: ")
        .next()
        .and_then(|t| t.get(..8))
        .filter(|s| kg_core::is_session_id(s))
        .map(str::to_string)
}

/// A short excerpt of a long answer, for failure messages.
pub fn clip(text: &str) -> String {
    let t: String = text.chars().take(400).collect();
    if t.len() < text.len() {
        format!("{t}…")
    } else {
        t
    }
}
