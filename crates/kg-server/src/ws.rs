//! `/ws`: live changes for the graph view (interfaces.md §5), fed by the store's
//! change log, so every mutation from any path reaches subscribers.
//!
//! A connection is keyed by a KG session (minted for it when none is given); the
//! writing session never hears its own changes. Project-level changes reach
//! connections whose session works in that project or that subscribed to it with
//! `?project_path=`.

use crate::payload::{self, LiveMessage};
use crate::state::AppState;
use axum::Router;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use kg_core::{Change, Level};
use kg_core::{JsonStyle, to_json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Which project-level changes a connection receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subscription {
    /// Those of its session's project.
    Session,
    /// Those of one project (and its session's).
    Project(String),
    /// Every project's.
    All,
}

pub fn router() -> Router<Arc<AppState>> {
    Router::new().route("/ws", get(upgrade))
}

async fn upgrade(
    State(state): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    // The Host and Origin guards already ran (app.rs); a refused page never upgrades.
    let subscription = params
        .get("project_path")
        .filter(|p| !p.is_empty())
        .and_then(|p| state.store.resolve_root(p).ok());
    let requested = params.get("session_id").filter(|s| !s.is_empty()).cloned();
    // `?scope=all`: every project's changes (the tray follows all graphs).
    let subscription = if params.get("scope").is_some_and(|s| s == "all") {
        Subscription::All
    } else {
        subscription.map_or(Subscription::Session, Subscription::Project)
    };
    upgrade
        .read_buffer_size(READ_BUFFER)
        .max_message_size(MAX_CLIENT_MESSAGE)
        .max_frame_size(MAX_CLIENT_MESSAGE)
        .on_failed_upgrade(|e| log::debug!("websocket upgrade failed: {e}"))
        .on_upgrade(move |socket| connection(state, socket, requested, subscription))
}

/// The largest message a client may send. Clients only ever send `ping`; the
/// framework's default (64 MiB) would let any local process make the server buffer that
/// much per connection. A larger message closes the connection.
const MAX_CLIENT_MESSAGE: usize = 64 * 1024;

/// The read buffer each connection starts with (the framework's default is 128 KiB,
/// allocated up front). Clients only send `ping`; the buffer still grows for a
/// larger message, up to the limit above. Thousands of open views stay cheap.
const READ_BUFFER: usize = 4 * 1024;

/// A client that does not take a message within this long is dropped: a stalled
/// reader must not hold the connection's task (or the server's shutdown) hostage.
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Send one message; false when the client is gone or stalled.
async fn send(socket: &mut WebSocket, message: Message) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, socket.send(message)).await,
        Ok(Ok(()))
    )
}

fn send_text(message: &LiveMessage) -> Message {
    Message::Text(Utf8Bytes::from(to_json(
        &payload::value(message),
        JsonStyle::WIRE,
    )))
}

async fn connection(
    state: Arc<AppState>,
    mut socket: WebSocket,
    requested: Option<String>,
    subscription: Subscription,
) {
    // A connection without a session gets an id of its own to tag its writes (so it
    // does not hear its own echo), but no record in the session registry: a page
    // left open, or thousands of connections, must neither rewrite the registry nor
    // push agents' sessions out of it.
    let sid = requested.unwrap_or_else(|| state.ws.mint(&state.store));
    let me = state.ws.claim(&sid);
    let mut changes = state.changes.subscribe();
    // Read after subscribing: every change numbered from here on is logged after the
    // subscription, so it comes over this connection.
    let greeting = LiveMessage::Connected {
        session_id: &sid,
        change_head: state.store.change_head(),
    };
    if !send(&mut socket, send_text(&greeting)).await {
        state.ws.release(&sid, me);
        return;
    }
    // Idle sockets are pinged; one whose peer answers nothing (no pong, no message)
    // for two pings is closed: a connection left open by a client that went away must
    // not hold one of the server's connection slots for ever.
    let every = state.settings.ws_ping_interval;
    let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    let mut heard = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = pings.tick() => {
                if heard.elapsed() > every * 2 {
                    log::debug!("websocket {sid}: no answer to two pings; closed");
                    send(&mut socket, Message::Close(None)).await;
                    break;
                }
                if !send(&mut socket, Message::Ping(Default::default())).await {
                    break;
                }
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    heard = tokio::time::Instant::now();
                    if text.as_str().trim() == "ping"
                        && !send(&mut socket, send_text(&LiveMessage::Pong)).await
                    {
                        break;
                    }
                }
                // Binary frames and pings are not part of the protocol: ignored, but
                // they (and pongs) show the peer is there.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => heard = tokio::time::Instant::now(),
            },
            change = changes.recv() => match change {
                Ok(change) => {
                    if !state.ws.holds(&sid, me) {
                        break; // a newer connection took this session over
                    }
                    let session_project = state
                        .store
                        .with_sessions(|s| s.lookup(&sid).and_then(|r| r.project_path.clone()));
                    if let Some(message) = message_for(&change, &sid, session_project.as_deref(), &subscription)
                        && !send(&mut socket, send_text(&message)).await
                    {
                        break;
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    // Too slow to keep up: tell the client to reload rather than drift.
                    let hint = LiveMessage::Resync { missed };
                    if !send(&mut socket, send_text(&hint)).await {
                        break;
                    }
                }
                Err(RecvError::Closed) => break,
            },
            () = state.shutdown.cancelled() => {
                send(&mut socket, Message::Close(None)).await;
                break;
            }
        }
    }
    state.ws.release(&sid, me);
}

/// The message a connection gets for a change, if any.
pub fn message_for<'a>(
    change: &'a Change,
    sid: &str,
    session_project: Option<&str>,
    subscription: &Subscription,
) -> Option<LiveMessage<'a>> {
    if change.source_session.as_deref() == Some(sid) {
        return None;
    }
    if change.level == Level::Project {
        let project = change.project_path.as_deref()?;
        let subscribed = match subscription {
            Subscription::All => true,
            Subscription::Project(p) => p == project,
            Subscription::Session => false,
        };
        if session_project != Some(project) && !subscribed {
            return None;
        }
    }
    Some(LiveMessage::change(change))
}
