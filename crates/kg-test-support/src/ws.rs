//! WebSocket clients of the server's `/ws`.

use futures_util::{Stream, StreamExt};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::tungstenite::{Error, Message};

/// A client's end of `/ws`.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A current-thread runtime, for a synchronous test that speaks WebSocket.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Open `ws://127.0.0.1:<port>/ws<query>` with `headers` added to (or replacing
/// those of) the handshake. `Err` names why it failed (a refused handshake's status
/// among it), or that it took longer than `timeout`.
pub async fn connect(
    port: u16,
    query: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Result<Socket, String> {
    let mut request = format!("ws://127.0.0.1:{port}/ws{query}")
        .into_client_request()
        .map_err(|e| e.to_string())?;
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("{name}: {e}"))?;
        let value = HeaderValue::from_str(value).map_err(|e| format!("{name}: {e}"))?;
        request.headers_mut().insert(header, value);
    }
    tokio::time::timeout(timeout, tokio_tungstenite::connect_async(request))
        .await
        .map_err(|_| format!("no handshake within {timeout:?}"))?
        .map(|(socket, _)| socket)
        .map_err(|e| e.to_string())
}

/// The next text message, parsed as JSON (other frames are skipped). `Err` when none
/// comes within `timeout`, the socket closes or fails, or the text is not JSON.
pub async fn next_json<S>(ws: &mut S, timeout: Duration) -> Result<Value, String>
where
    S: Stream<Item = Result<Message, Error>> + Unpin,
{
    loop {
        let message = tokio::time::timeout(timeout, ws.next())
            .await
            .map_err(|_| format!("no message within {timeout:?}"))?
            .ok_or("the socket closed")?
            .map_err(|e| e.to_string())?;
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).map_err(|e| format!("{e}: {text}"));
        }
    }
}

/// A WebSocket upgraded by hand on a std `TcpStream` (the `101` status line read,
/// nothing else): thousands of these cost a test or bench nothing but sockets.
pub fn upgrade_raw(port: u16, timeout: Duration) -> TcpStream {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    socket.set_read_timeout(Some(timeout)).expect("timeout");
    let head = crate::http::request_head(
        port,
        "GET",
        "/ws",
        &[
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ],
        None,
    );
    socket.write_all(head.as_bytes()).expect("handshake");
    let mut status = [0u8; 12];
    socket.read_exact(&mut status).expect("handshake answer");
    assert_eq!(&status, b"HTTP/1.1 101", "WebSocket upgraded");
    socket
}
