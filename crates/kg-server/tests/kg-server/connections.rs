//! Connections are bounded in number and in time (issue 17, item 7), against the real
//! server over raw HTTP: slow and idle connections are closed, more connections than
//! the open-file limit neither starve `/health` nor break saving, WebSockets live on,
//! and a hook whose stdin never closes still ends.
//!
//! Every test here failed against the server before the bounded accept loop
//! (`axum::serve`, `src/listener.rs` absent), run with the same test code: each
//! comment says how.

use crate::server::{ServerProcess, free_port, logged, serve, temp_home};
use crate::wire;
use kg_test_support::http::{KeepAlive, header, request_head};
use kg_test_support::ws;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bound for anything that should happen; a server that never does it fails the test
/// instead of hanging it. Well above the timeouts under test (10 s).
const LIVENESS: Duration = Duration::from_secs(40);
/// More than the common default soft limit of 1,024 open files.
const FLOOD: usize = 1_100;

/// Floods run one at a time: each holds 1,100 sockets of this test process.
static FLOODING: Mutex<()> = Mutex::new(());

/// `kg-memory serve` started with `RLIMIT_NOFILE` = (soft, hard), as a login shell
/// with the common default limits would start it.
fn start_limited(home: &Path, soft: u64, hard: u64) -> ServerProcess {
    use std::os::unix::process::CommandExt;
    let mut serve = logged(home, &home.join("storage"));
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        serve.command().pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut server = serve.spawn();
    server.wait_healthy(LIVENESS, Duration::from_millis(20));
    server
}

/// A plain server, default limits.
fn plain_server(home: &Path) -> ServerProcess {
    serve(home, &home.join("storage"), &[])
}

/// This test process needs more than 1,024 sockets for a flood.
fn allow_own_sockets(wanted: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write only the struct we pass.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < wanted {
            assert!(
                limit.rlim_max >= wanted,
                "these tests need {wanted} open files; the hard limit is {}",
                limit.rlim_max
            );
            limit.rlim_cur = wanted;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

/// Open `FLOOD` connections that send nothing. Connections the server does not
/// take may fail to connect; they are simply not held.
fn flood(port: u16) -> Vec<TcpStream> {
    allow_own_sockets(4096);
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    (0..FLOOD)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok())
        .collect()
}

/// One request on its own connection: (status, body).
fn get(port: u16, path: &str, timeout: Duration) -> std::io::Result<(u16, String)> {
    wire::request(port, "GET", path, &[], b"", timeout)
        .map(|(status, _, body)| (status, String::from_utf8_lossy(&body).into_owned()))
}

/// A raw connection, for writing by hand.
fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(LIVENESS))
        .expect("read timeout");
    stream
}

/// A connection kept alive across [`exchange`]s.
fn keep_alive(port: u16) -> KeepAlive {
    KeepAlive::connect(port, LIVENESS).expect("connect")
}

/// Send one JSON request on a kept-alive connection and read its answer: (status,
/// body).
fn exchange(conn: &mut KeepAlive, method: &str, path: &str, body: &str) -> (u16, String) {
    let headers = [("Content-Type", "application/json")];
    let (status, head, body) = conn
        .exchange(method, path, &headers, Some(body.as_bytes()))
        .unwrap_or_else(|e| panic!("no answer to {method} {path} in time: {e}"));
    assert!(
        header(&head, "content-length").is_some(),
        "{method} {path}: no content-length in {head}"
    );
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// Has the server closed `stream` within `limit`? Whatever it still sends is read
/// and dropped.
fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while start.elapsed() < limit {
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("read timeout");
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => {}
        }
    }
    false
}

/// Write a user-level node through REST on `conn`, then find it in `user.json`.
fn write_and_find_node(conn: &mut KeepAlive, home: &Path, id: &str) {
    let body = json!({"level": "user", "id": id, "gist": "saved while flooded"}).to_string();
    let (status, answer) = exchange(conn, "POST", "/api/nodes", &body);
    assert_eq!(status, 200, "the write was refused: {answer}");
    let saved = std::fs::read_to_string(home.join("storage/user.json")).expect("user.json");
    assert!(saved.contains(id), "{id} is not on disk");
}

// Old server: the trickled header kept the connection for as long as the client
// liked (still open after 40 s).
#[test]
fn headers_that_never_end_are_cut_off() {
    let (_dir, home) = temp_home();
    let server = plain_server(&home);
    let mut slow = connect(server.port);
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("start");
    // One header line a second: never quiet long enough to count as idle.
    let start = Instant::now();
    let mut closed = false;
    while !closed && start.elapsed() < LIVENESS {
        closed = slow.write_all(b"X-Slow: 1\r\n").is_err()
            || closed_within(&mut slow, Duration::from_secs(1));
    }
    assert!(closed, "a connection trickling its headers is still open");
    assert!(matches!(
        get(server.port, "/health", LIVENESS),
        Ok((200, _))
    ));
}

// Old server: an idle keep-alive connection stayed open (still open after 40 s).
#[test]
fn idle_keep_alive_connections_are_closed() {
    let (_dir, home) = temp_home();
    let server = plain_server(&home);
    let mut idle = keep_alive(server.port);
    assert_eq!(exchange(&mut idle, "GET", "/health", "").0, 200);
    assert!(
        closed_within(idle.stream(), LIVENESS),
        "an idle keep-alive connection is still open"
    );
    // A connection that never sends anything goes the same way.
    let mut silent = connect(server.port);
    assert!(
        closed_within(&mut silent, LIVENESS),
        "a silent connection is still open"
    );
}

// Old server: the handler waited for the rest of the body forever (still open after
// 40 s).
#[test]
fn a_body_that_stops_arriving_is_cut_off() {
    let (_dir, home) = temp_home();
    let server = plain_server(&home);
    let mut stalled = connect(server.port);
    let headers = [("Content-Type", "application/json")];
    let head = request_head(server.port, "POST", "/api/nodes", &headers, Some(200));
    stalled
        .write_all(format!("{head}{{\"level\": ").as_bytes())
        .expect("send");
    assert!(
        closed_within(&mut stalled, LIVENESS),
        "a connection whose body stopped is still open"
    );
}

// Old server (soft limit 1,024): accepting stopped at "Too many open files" and
// `/health` got no answer within 40 s.
#[test]
fn more_idle_connections_than_the_default_file_limit_leave_the_server_working() {
    let _one = FLOODING.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, home) = temp_home();
    let server = start_limited(&home, 1024, 8192);
    let held = flood(server.port);
    assert_eq!(held.len(), FLOOD, "every connection was taken");
    let health = get(server.port, "/health", LIVENESS);
    assert!(
        matches!(health, Ok((200, _))),
        "/health with {FLOOD} idle connections: {health:?}\n{}",
        server.log_tail()
    );
    let mut writer = keep_alive(server.port);
    write_and_find_node(&mut writer, &home, "saved-past-1024");
    drop(held);
}

// Old server (limit 1,024, not raisable): the new `/health` waited unanswered in the
// backlog, and the write on an open connection failed with "Too many open files".
#[test]
fn at_the_cap_new_connections_get_503_and_saving_still_works() {
    let _one = FLOODING.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, home) = temp_home();
    let server = start_limited(&home, 1024, 1024);
    let mut early = keep_alive(server.port);
    assert_eq!(exchange(&mut early, "GET", "/health", "").0, 200);
    let held = flood(server.port);
    let refused = wire::request(server.port, "GET", "/health", &[], b"", LIVENESS);
    let (status, head, _) = refused.expect("an answer at the cap");
    assert_eq!(status, 503, "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after"), "{head}");
    // Connections already open still work, and the file handles to save are there.
    write_and_find_node(&mut early, &home, "saved-at-the-cap");
    // The idle ones are closed in time, and the server takes new connections again.
    let start = Instant::now();
    while !matches!(
        get(server.port, "/health", Duration::from_secs(5)),
        Ok((200, _))
    ) {
        assert!(
            start.elapsed() < LIVENESS,
            "still full:\n{}",
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(held);
}

// Old server: the idle connections were never closed, so no new request got through
// while the WebSocket waited (no `/health` within 40 s).
#[test]
fn websockets_outlive_the_idle_timeout_while_idle_connections_are_closed() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let _one = FLOODING.lock().unwrap_or_else(|e| e.into_inner());
    let (_dir, home) = temp_home();
    let server = start_limited(&home, 1024, 1024);
    let port = server.port;
    let runtime = ws::runtime();
    let next_json = |socket: &mut ws::Socket| {
        runtime
            .block_on(ws::next_json(socket, LIVENESS))
            .expect("a message in time")
    };
    let mut socket = runtime
        .block_on(ws::connect(port, "", &[], LIVENESS))
        .expect("websocket");
    assert_eq!(next_json(&mut socket)["type"], "connected");
    let opened = Instant::now();
    // Like the graph view, the socket now says nothing while the server fills up.
    let held = flood(port);
    let start = Instant::now();
    while !matches!(get(port, "/health", Duration::from_secs(5)), Ok((200, _))) {
        assert!(
            start.elapsed() < LIVENESS,
            "still full:\n{}",
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(
        (kg_server::listener::IDLE_TIMEOUT + Duration::from_secs(2))
            .saturating_sub(opened.elapsed()),
    );
    runtime
        .block_on(socket.send(Message::Text("ping".into())))
        .expect("ping");
    assert_eq!(next_json(&mut socket), json!({"type": "pong"}));
    let mut writer = keep_alive(port);
    write_and_find_node(&mut writer, &home, "heard-live");
    let change = next_json(&mut socket);
    assert_eq!(
        (change["type"].as_str(), change["node"]["id"].as_str()),
        (Some("node_updated"), Some("heard-live")),
        "{change}"
    );
    drop(held);
}

// Old hook: it read stdin to its end and so waited forever (killed after 40 s).
#[test]
fn a_hook_whose_stdin_never_closes_ends_within_its_budget() {
    let (_dir, home) = temp_home();
    for event in ["prompt-submit", "post-tool"] {
        let mut child = Command::new(kg_test_support::kg_memory_bin())
            .args(["hook", event])
            .env("HOME", &home)
            .env("KG_STORAGE_ROOT", home.join("storage"))
            .env("KG_HTTP_PORT", free_port().to_string())
            .env_remove("KG_HTTP_HOST")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn hook");
        // A whole payload, but stdin stays open (the handle lives until the end).
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(
                json!({"session_id": "x", "prompt": "hello"})
                    .to_string()
                    .as_bytes(),
            )
            .expect("payload");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break Some(status);
            }
            if start.elapsed() > LIVENESS {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        if let Some(mut stdout) = child.stdout.take() {
            let _ = stdout.read_to_string(&mut out);
        }
        drop(stdin);
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "{event} with stdin held open did not end by itself"
        );
        assert_eq!(out, "", "{event} printed something");
    }
}
