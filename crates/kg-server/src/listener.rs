//! The accept loop: HTTP/1.1 connections bounded in number and in time.
//!
//! `axum::serve` accepts until the process runs out of file handles and keeps every
//! connection for as long as the client likes; 1,100 idle connections then starve
//! `/health` and make saving fail with "Too many open files". Here:
//!
//! - the soft open-file limit is raised towards the hard one at start, and the number
//!   of connections is capped below it, keeping [`FD_HEADROOM`] handles for graph
//!   files, the git autocommit and the tray app;
//! - a connection over the cap is accepted and answered `503` (with `Retry-After`)
//!   and closed, instead of waiting unseen in the kernel's backlog;
//! - a request's headers must arrive within [`HEADER_READ_TIMEOUT`], and a connection
//!   on which nothing moves for [`IDLE_TIMEOUT`] while no handler is working is
//!   closed (an idle keep-alive, a body that stops arriving, an answer nobody reads).
//!
//! A WebSocket leaves this loop's watch when it is upgraded: the graph view and the
//! tray keep one open for hours without sending anything, and `ws.rs` ends it on
//! shutdown. It still holds its place under the cap until it closes.

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use hyper::body::{Bytes, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio_util::sync::CancellationToken;

/// A request's headers must be complete this long after the connection opened or the
/// previous answer went out. Local clients send them at once; this only bounds a
/// client that trickles them.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection on which no byte moves for this long, while no handler is working on
/// a request of it, is closed. Longer than the keep-alive of the MCP clients' pools
/// (Node's 4 s, httpx's 5 s), so they let go first and never race our close.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Never more connections than this, whatever the open-file limit allows: far above
/// what one person's agents, browser tabs and tray use (a few dozen), and enough for
/// the load benchmark's 1,100 idle connections and 3,000 WebSockets.
pub const MAX_CONNECTIONS: usize = 8192;
/// Open-file handles kept out of the connection cap: graph and session files while
/// saving (temp file, folder fsync), transcripts, git's pipes, refused connections
/// still being answered, and whatever the hosting process (the tray app) holds.
pub const FD_HEADROOM: u64 = 256;
/// A refused connection gets this long to take its `503` before it is dropped.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);
/// At most this many refused connections linger at once (they use the headroom);
/// beyond it, the `503` is written if the socket takes it at once, then dropped.
const MAX_LINGERING: usize = 32;
/// Pause after an accept error that is not the client's (e.g. out of file handles),
/// so a full table is not polled in a tight loop.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How many connections and how long each may stay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

impl Limits {
    /// The production limits, the cap derived from this process's open-file limit
    /// (raised first as far as needed and allowed).
    pub fn for_this_process() -> Limits {
        let open_files = raise_open_file_limit(MAX_CONNECTIONS as u64 + FD_HEADROOM);
        Limits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            max_connections: connection_cap(open_files),
        }
    }
}

/// The cap under an open-file limit (`None`: not limited per process).
fn connection_cap(open_files: Option<u64>) -> usize {
    let Some(limit) = open_files else {
        return MAX_CONNECTIONS;
    };
    // A tiny limit still keeps half for connections, so the server stays reachable.
    let usable = limit - FD_HEADROOM.min(limit / 2);
    usize::try_from(usable).map_or(MAX_CONNECTIONS, |u| u.clamp(1, MAX_CONNECTIONS))
}

/// Raise the soft `RLIMIT_NOFILE` to `wanted` (or the hard limit, if lower); returns
/// the soft limit in force afterwards. The default soft limit of 1,024 is a relic of
/// `select()`; nothing in this process uses `select()`.
#[cfg(unix)]
fn raise_open_file_limit(wanted: u64) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes into the struct we pass.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        log::warn!(
            "cannot read the open-file limit: {}",
            io::Error::last_os_error()
        );
        return None;
    }
    #[allow(
        clippy::useless_conversion,
        reason = "rlim_t is narrower on some targets"
    )]
    let (soft, hard) = (u64::from(limit.rlim_cur), u64::from(limit.rlim_max));
    let target = wanted.min(hard);
    if soft >= target {
        return Some(soft);
    }
    let raised = libc::rlimit {
        rlim_cur: target as libc::rlim_t,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit only reads the struct we pass.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        log::debug!("open-file limit raised from {soft} to {target}");
        Some(target)
    } else {
        log::warn!(
            "cannot raise the open-file limit from {soft} to {target}: {}",
            io::Error::last_os_error()
        );
        Some(soft)
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit(_wanted: u64) -> Option<u64> {
    None
}

/// Serve `router` on `listener` until `shutdown` resolves; then stop accepting, let
/// every connection finish the request it is on, and return once all have closed.
/// (Upgraded WebSockets are not waited for; they watch the server's own shutdown.)
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    if limits.max_connections < MAX_CONNECTIONS {
        log::info!(
            "the open-file limit allows at most {} connections (raise `ulimit -n` for more)",
            limits.max_connections
        );
    }
    log::debug!(
        "at most {} connections; headers within {:?}, idle for at most {:?}",
        limits.max_connections,
        limits.header_read_timeout,
        limits.idle_timeout
    );
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let lingering = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    // Each connection task holds a receiver; `closed()` resolves when all are gone.
    let (open_tx, open_rx) = watch::channel(());
    let mut last_warning: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) if is_connection_error(&e) => continue,
            Err(e) => {
                if last_warning.is_none_or(|t| t.elapsed() > Duration::from_secs(60)) {
                    log::warn!("cannot accept connections: {e}; retrying");
                    last_warning = Some(Instant::now());
                }
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                tokio::spawn(connection(
                    Watched::new(stream, slot),
                    router.clone(),
                    limits,
                    stop.clone(),
                    open_rx.clone(),
                ));
            }
            Err(_) => refuse(stream, &lingering),
        }
    }
    drop(listener);
    stop.cancel();
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}

fn is_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Answer a connection over the cap with `503` and close it. The client's request is
/// read and dropped while the answer lingers, so closing does not reset the
/// connection under the client's feet before it has read the answer.
fn refuse(stream: TcpStream, lingering: &Arc<AtomicUsize>) {
    const BODY: &str = "KG Memory has too many open connections; try again in a moment.\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    if lingering.fetch_add(1, Ordering::Relaxed) >= MAX_LINGERING {
        lingering.fetch_sub(1, Ordering::Relaxed);
        // A fresh socket's send buffer is empty: this writes the whole answer.
        let _ = stream.try_write(answer.as_bytes());
        return;
    }
    let lingering = lingering.clone();
    tokio::spawn(async move {
        let mut stream = stream;
        let _ = tokio::time::timeout(REFUSAL_LINGER, async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            io::Result::Ok(())
        })
        .await;
        lingering.fetch_sub(1, Ordering::Relaxed);
    });
}

/// Serve one connection until it closes, goes idle, or the server stops.
async fn connection(
    io: Watched,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
    _open: watch::Receiver<()>,
) {
    let activity = io.activity.clone();
    let handler = Handler {
        router,
        activity: activity.clone(),
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(io), handler)
        .with_upgrades();
    tokio::pin!(conn);
    let mut draining = false;
    loop {
        // While a handler works there is nothing to wait for; look again later.
        let wait = match activity.quiet_for() {
            None => limits.idle_timeout,
            Some(quiet) if quiet >= limits.idle_timeout => {
                log::debug!("closing a connection idle for {quiet:?}");
                return;
            }
            Some(quiet) => limits.idle_timeout - quiet,
        };
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    log::debug!("connection ended: {e}");
                }
                return;
            }
            () = stop.cancelled(), if !draining => {
                draining = true;
                conn.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// What a connection did last, shared by its socket, its requests and its watchdog.
#[derive(Debug)]
struct Activity {
    born: Instant,
    /// Milliseconds after `born` when a byte was last read or written.
    last_io: AtomicU64,
    /// Requests whose body has arrived and whose answer the handler is still making.
    working: AtomicUsize,
}

impl Activity {
    fn touch(&self) {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_io.store(now, Ordering::Relaxed);
    }

    /// How long nothing has moved; `None` while a handler is working.
    fn quiet_for(&self) -> Option<Duration> {
        if self.working.load(Ordering::Acquire) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_io.load(Ordering::Relaxed));
        Some(self.born.elapsed().saturating_sub(last))
    }
}

/// The TCP stream of a connection: notes activity, and holds the connection's place
/// under the cap for as long as the socket is open (through a WebSocket upgrade too).
#[derive(Debug)]
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
    _slot: OwnedSemaphorePermit,
}

impl Watched {
    fn new(stream: TcpStream, slot: OwnedSemaphorePermit) -> Watched {
        Watched {
            stream,
            activity: Arc::new(Activity {
                born: Instant::now(),
                last_io: AtomicU64::new(0),
                working: AtomicUsize::new(0),
            }),
            _slot: slot,
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Hands requests to the router, marking when the server (not the client) is the one
/// a connection waits for.
struct Handler {
    router: Router,
    activity: Arc<Activity>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Handler {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let exchange = Arc::new(Exchange {
            stage: AtomicU8::new(RECEIVING),
            activity: self.activity.clone(),
        });
        let answered = Answered(exchange.clone());
        let request = request.map(|body| {
            if hyper::body::Body::is_end_stream(&body) {
                exchange.received();
            }
            Body::new(WatchedBody { body, exchange })
        });
        let mut router = self.router.clone();
        Box::pin(async move {
            let response = tower::Service::call(&mut router, request).await;
            drop(answered);
            response
        })
    }
}

const RECEIVING: u8 = 0;
const WORKING: u8 = 1;
const ANSWERED: u8 = 2;

/// One request's stage: its body arriving (the client's turn), the handler working
/// (the server's turn), answered.
struct Exchange {
    stage: AtomicU8,
    activity: Arc<Activity>,
}

impl Exchange {
    fn received(&self) {
        if self
            .stage
            .compare_exchange(RECEIVING, WORKING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            self.activity.working.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn answered(&self) {
        if self.stage.swap(ANSWERED, Ordering::AcqRel) == WORKING {
            self.activity.working.fetch_sub(1, Ordering::AcqRel);
            // The answer goes out now: idleness counts from here, not from the request.
            self.activity.touch();
        }
    }
}

/// Marks its request answered when the handler's future ends (or is dropped).
struct Answered(Arc<Exchange>);

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.answered();
    }
}

/// A request body that marks its request received once it has all arrived (or the
/// handler no longer wants it).
struct WatchedBody {
    body: Incoming,
    exchange: Arc<Exchange>,
}

impl hyper::body::Body for WatchedBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) || self.body.is_end_stream() {
            self.exchange.received();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for WatchedBody {
    fn drop(&mut self) {
        self.exchange.received();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_keeps_headroom_below_the_open_file_limit() {
        assert_eq!(connection_cap(None), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(1024)), 1024 - FD_HEADROOM as usize);
        assert_eq!(
            connection_cap(Some(MAX_CONNECTIONS as u64 + FD_HEADROOM)),
            MAX_CONNECTIONS
        );
        assert_eq!(connection_cap(Some(1 << 20)), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(256)), 128);
        assert_eq!(connection_cap(Some(0)), 1);
    }
}
