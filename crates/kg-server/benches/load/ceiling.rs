//! (g) The transport ceiling: the server beside a bare axum handler answering the
//! same bytes, and beside rmcp alone answering the same text.

use super::{Conn, knob, loadavg, session_of, spawn_bin, stop, wait_healthy};
use axum::body::Bytes;
use axum::http::header;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Keep-alive connections of the load generator.
const CONNECTIONS: usize = 16;

/// The full-read request, as raw HTTP/1.1 bytes, for `port`.
fn request(port: u16, sid: &str) -> Vec<u8> {
    let body =
        kg_test_support::http::tools_call("kg_read", &json!({"session_id": sid})).to_string();
    let mut head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in kg_test_support::http::MCP_HEADERS {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Where the head ends (after `\r\n\r\n`) and its `Content-Length`.
fn parse_head(buf: &[u8]) -> Option<(usize, usize)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })?;
    Some((end, length))
}

/// Send `request` to `port` over [`CONNECTIONS`] keep-alive connections for
/// `secs`; the answers that came back whole with a 200, and the bytes of one.
fn hammer(port: u16, request: &[u8], secs: u64) -> (u64, usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("generator runtime");
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let request = request.to_vec();
            tasks.push(tokio::spawn(async move {
                let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .expect("connect");
                stream.set_nodelay(true).expect("nodelay");
                let mut buf = Vec::with_capacity(64 * 1024);
                let (mut done, mut size) = (0u64, 0usize);
                while tokio::time::Instant::now() < deadline {
                    stream.write_all(&request).await.expect("send");
                    buf.clear();
                    let (end, length) = loop {
                        if let Some(parsed) = parse_head(&buf) {
                            break parsed;
                        }
                        let mut chunk = [0u8; 16 * 1024];
                        let n = stream.read(&mut chunk).await.expect("read");
                        assert!(n > 0, "the server closed the connection");
                        buf.extend_from_slice(&chunk[..n]);
                    };
                    while buf.len() < end + length {
                        let mut chunk = [0u8; 64 * 1024];
                        let n = stream.read(&mut chunk).await.expect("read");
                        assert!(n > 0, "the server closed the connection");
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    assert!(buf.starts_with(b"HTTP/1.1 200"), "not a 200");
                    done += 1;
                    size = end + length;
                }
                (done, size)
            }));
        }
        let mut total = (0, 0);
        for t in tasks {
            let (done, size) = t.await.expect("generator task");
            total = (total.0 + done, size);
        }
        total
    })
}

/// A bare axum server answering every POST with `answer` (as JSON), on the
/// runtime kg-memory serve uses (multi-threaded, a worker per core).
fn bare_server(answer: Vec<u8>) -> (u16, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("bare runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let answer = Bytes::from(answer);
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |_body: Bytes| {
            let answer = answer.clone();
            async move { ([(header::CONTENT_TYPE, "application/json")], answer) }
        }),
    );
    rt.spawn(async move {
        axum::serve(listener, app).await.expect("bare server");
    });
    (port, rt)
}

/// The MCP transport alone: rmcp's stateless streamable-HTTP service, configured as
/// `kg-memory serve` configures it, whose one tool answers `text` without touching a
/// store. What the transport costs before any memory work: the most a full read
/// could reach while it goes through rmcp.
fn rmcp_server(text: String) -> (u16, tokio::runtime::Runtime) {
    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ServerCapabilities,
        ServerConfig,
    };
    use rmcp::service::{RequestContext, RoleServer};
    use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    #[derive(Clone)]
    struct Constant(Arc<str>);
    impl rmcp::ServerHandler for Constant {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }
        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, rmcp::ErrorData> {
            let content = vec![ContentBlock::text(self.0.to_string())];
            Ok(CallToolResult::success(content).into())
        }
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rmcp runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(("127.0.0.1", 0)))
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_allowed_hosts(["127.0.0.1".to_string()]);
    let text: Arc<str> = text.into();
    let service = StreamableHttpService::new(
        move || Ok(Constant(text.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().fallback_service(service);
    rt.spawn(async move {
        axum::serve(listener, app).await.expect("rmcp server");
    });
    (port, rt)
}

/// Requests per second `port` answers `request` over `secs` (after a second's
/// warm-up), and the bytes of one answer.
fn rate(port: u16, request: &[u8], secs: u64) -> (f64, usize) {
    hammer(port, request, 1);
    let started = Instant::now();
    let (done, size) = hammer(port, request, secs);
    (done as f64 / started.elapsed().as_secs_f64(), size)
}

/// [`rate`] of a bare handler answering `answer` to `request` (made for `from`).
fn bare_rate(answer: &[u8], request: &[u8], from: u16, secs: u64) -> (f64, usize) {
    let (port, rt) = bare_server(answer.to_vec());
    let measured = rate(port, &request_for(port, request, from), secs);
    rt.shutdown_timeout(Duration::from_secs(1));
    measured
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Phase (g) on the seeded root, for this tree's binary and `KG_BENCH_BEFORE`.
pub fn phase(home: &Path, storage: &Path, project: &str) {
    let secs = knob("KG_BENCH_CEILING_SECS", 5) as u64;
    let rounds = knob("KG_BENCH_CEILING_ROUNDS", 3).max(1);
    let mut binaries = Vec::new();
    if let Ok(before) = std::env::var("KG_BENCH_BEFORE") {
        binaries.push(("before", before));
    }
    binaries.push(("this tree", super::bin()));
    println!(
        "(g) the transport ceiling: full kg_read, {CONNECTIONS} keep-alive connections, {secs} s per measurement, {rounds} round(s); loadavg {}",
        loadavg()
    );
    // (binary) → (ours req/s, bare req/s) per round
    let mut results: Vec<(&str, Vec<(f64, f64)>)> =
        binaries.iter().map(|(n, _)| (*n, Vec::new())).collect();
    // The MCP transport with no memory behind it, per round: (req/s, bare req/s).
    let mut transport: Vec<(f64, f64)> = Vec::new();
    for round in 0..rounds {
        let mut transport_text = None;
        for (b, (name, bin)) in binaries.iter().enumerate() {
            let env = [("KG_GRACE_PERIOD_DAYS", "0")];
            let mut server = spawn_bin(bin, home, storage, &env, None);
            wait_healthy(&mut server);
            let port = server.port;
            let sid = {
                let mut c = Conn::connect(port, true).expect("connect");
                c.initialize();
                session_of(&c.ok("kg_read", &json!({"cwd": project})))
            };
            let request = request(port, &sid);
            // The answer the bare handler repeats: this server's own, byte for byte.
            let answer = {
                let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
                std::io::Write::write_all(&mut c, &request).expect("send");
                let mut buf = Vec::new();
                let mut chunk = [0u8; 64 * 1024];
                let (end, length) = loop {
                    if let Some(p) = parse_head(&buf) {
                        break p;
                    }
                    let n = std::io::Read::read(&mut c, &mut chunk).expect("read");
                    buf.extend_from_slice(&chunk[..n]);
                };
                while buf.len() < end + length {
                    let n = std::io::Read::read(&mut c, &mut chunk).expect("read");
                    buf.extend_from_slice(&chunk[..n]);
                }
                buf[end..end + length].to_vec()
            };
            let (ours, size) = rate(port, &request, secs);
            stop(server);
            let (bare, bare_size) = bare_rate(&answer, &request, port, secs);
            println!(
                "    round {} · {name}: ours {ours:.0} req/s ({size} bytes a response), bare axum {bare:.0} req/s ({bare_size} bytes): {:.1} % of the ceiling; loadavg {}",
                round + 1,
                100.0 * ours / bare,
                loadavg()
            );
            results[b].1.push((ours, bare));
            transport_text = Some((answer, request, port));
        }
        // The transport alone, against a bare handler measured right after it.
        let Some((answer, request, from)) = &transport_text else {
            continue;
        };
        let text = serde_json::from_slice::<serde_json::Value>(answer)
            .ok()
            .and_then(|v| {
                v["result"]["content"][0]["text"]
                    .as_str()
                    .map(str::to_string)
            })
            .expect("the full read answers one text");
        let (port, rt) = rmcp_server(text);
        let (alone, alone_size) = rate(port, &request_for(port, request, *from), secs);
        rt.shutdown_timeout(Duration::from_secs(1));
        let (bare, _) = bare_rate(answer, request, *from, secs);
        println!(
            "    round {} · rmcp alone: {alone:.0} req/s ({alone_size} bytes a response), bare axum {bare:.0} req/s: {:.1} % of the ceiling; loadavg {}",
            round + 1,
            100.0 * alone / bare,
            loadavg()
        );
        transport.push((alone, bare));
    }
    println!("    | binary | full kg_read | bare axum, same answer | ratio | target ≥ 25 % |");
    println!("    |---|---|---|---|---|");
    for (name, v) in &results {
        let ours = median(v.iter().map(|r| r.0).collect());
        let bare = median(v.iter().map(|r| r.1).collect());
        let ratio = median(v.iter().map(|r| r.0 / r.1).collect());
        println!(
            "    | {name} | {ours:.0} req/s | {bare:.0} req/s | {:.1} % | {} |",
            100.0 * ratio,
            if ratio >= 0.25 { "met" } else { "missed" }
        );
    }
    if !transport.is_empty() {
        let alone = median(transport.iter().map(|r| r.0).collect());
        let bare = median(transport.iter().map(|r| r.1).collect());
        let ratio = median(transport.iter().map(|r| r.0 / r.1).collect());
        println!(
            "    | rmcp alone, same answer, no store | {alone:.0} req/s | {bare:.0} req/s | {:.1} % | (the most a full read through rmcp can reach) |",
            100.0 * ratio
        );
    }
}

/// `request` (made for `from`) addressed to `port` instead.
fn request_for(port: u16, request: &[u8], from: u16) -> Vec<u8> {
    let text = String::from_utf8_lossy(request).replace(
        &format!("Host: 127.0.0.1:{from}\r\n"),
        &format!("Host: 127.0.0.1:{port}\r\n"),
    );
    text.into_bytes()
}
