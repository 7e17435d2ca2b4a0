//! `kg-memory stdio`: MCP over stdio for clients that only speak stdio (Claude
//! Desktop). Each newline-delimited JSON-RPC message is relayed to the running HTTP
//! server and its answer written back as one line; a server is started when none
//! answers, at the start and whenever it goes away mid-session. Stdout belongs to the
//! protocol, so every log line goes to stderr.

use kg_client::{self as client, ClientError};
use kg_server::config::Settings;
use kg_server::launch::{Started, serve_command, start_detached};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long to wait for a server this bridge started.
const START_WAIT: Duration = Duration::from_secs(20);
/// One relayed request may take this long (a full read of a big graph is well below).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How often to look again at a server coming up.
const POLL: Duration = Duration::from_millis(100);

/// Why the bridge has no server to relay to, or stopped relaying.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// A server of another storage root answers on this root's port.
    #[error(
        "the KG Memory server at {base} {why}; stop it, or give this storage root a port of its own (--port N)"
    )]
    AnotherRoot { base: String, why: String },
    /// No server could be started.
    #[error("cannot start the KG Memory server; start it yourself with `{command}`: {error}")]
    CannotStart {
        command: String,
        error: std::io::Error,
    },
    /// The server started here exited before answering.
    #[error(
        "the KG Memory server this bridge started for {base} stopped at once: {reason} (its log: {log}). Fix that, then retry, or start the server yourself with `{command}`"
    )]
    StoppedAtOnce {
        base: String,
        reason: String,
        log: String,
        command: String,
    },
    /// The root's holder never answered; no second server was started.
    #[error(
        "the storage root {root} is held by {who}, which did not answer within {START_WAIT:?}; no second server was started. Check it with `kg-memory status`"
    )]
    HolderSilent { root: String, who: String },
    /// The server started here did not come up in time.
    #[error("the KG Memory server did not come up at {base} within {START_WAIT:?}; see {log}")]
    NotUp { base: String, log: String },
    /// Stdin could not be read.
    #[error(transparent)]
    Read(std::io::Error),
    /// Stdout could not be written (other than the client closing it).
    #[error("cannot write to the client: {0}")]
    Write(std::io::Error),
}

/// A KG Memory server answers at `base` (not merely something on that port).
async fn healthy(base: &str) -> bool {
    kg_client::probe_health(base).await.is_some()
}

/// Make sure a server answers, starting one if needed; returns its base URL. The
/// server holding the storage root is the one to talk to, whatever port it chose, and
/// none is started while the root is held (a second one would lose writes). A server
/// started here that exits (its port taken by another program, say) is reported at
/// once, with what it logged.
pub async fn ensure_server(settings: &Settings) -> Result<String, BridgeError> {
    let (base, held) = kg_server::root_lock::server_of(settings);
    if healthy(&base).await {
        if held.is_none()
            && let Some(stranger) = kg_server::root_lock::serves_another_root(&base, settings).await
        {
            return Err(BridgeError::AnotherRoot {
                why: stranger.why(&settings.storage_root),
                base,
            });
        }
        return Ok(base);
    }
    let mut started: Option<Started> = match &held {
        Some(held) => {
            eprintln!(
                "kg-memory stdio: {} holds {} but does not answer yet; waiting for it",
                held.who(),
                held.root.display()
            );
            None
        }
        None => {
            eprintln!("kg-memory stdio: no server at {base}; starting one");
            Some(
                start_detached(settings).map_err(|error| BridgeError::CannotStart {
                    command: serve_command(settings),
                    error,
                })?,
            )
        }
    };
    let since = Instant::now();
    while since.elapsed() < START_WAIT {
        tokio::time::sleep(POLL).await;
        // Whoever won the root meanwhile (ours, or one started at the same moment).
        let (base, _) = kg_server::root_lock::server_of(settings);
        let exited = started.as_mut().and_then(Started::exited);
        if healthy(&base).await {
            return Ok(base);
        }
        if let (Some(reason), Some(s)) = (exited, &started) {
            return Err(BridgeError::StoppedAtOnce {
                base,
                reason,
                log: s.log().display().to_string(),
                command: serve_command(settings),
            });
        }
    }
    match (held, started) {
        (Some(held), _) => Err(BridgeError::HolderSilent {
            root: held.root.display().to_string(),
            who: held.who(),
        }),
        (None, started) => Err(BridgeError::NotUp {
            log: started
                .as_ref()
                .map_or_else(
                    || settings.state_dir().join("server.log"),
                    |s| s.log().to_path_buf(),
                )
                .display()
                .to_string(),
            base,
        }),
    }
}

/// Relay stdin to the server until stdin closes (or the client stops reading).
pub async fn run(settings: &Settings) -> Result<(), BridgeError> {
    let mut url = format!("{}/", ensure_server(settings).await?);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await.map_err(BridgeError::Read)? {
        if line.trim().is_empty() {
            continue;
        }
        let reply = match relay(&url, &line).await {
            Relayed::Reply(reply) => Some(reply),
            Relayed::Nothing => None,
            Relayed::Lost { id, error, reached } => {
                eprintln!("kg-memory stdio: {error}");
                recover(settings, &mut url, &line, id, reached).await
            }
        };
        if let Some(reply) = reply {
            let written = async {
                out.write_all(reply.as_bytes()).await?;
                out.write_all(b"\n").await?;
                out.flush().await
            };
            match written.await {
                // The client closed its end: nobody left to serve.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
                other => other.map_err(BridgeError::Write)?,
            }
        }
    }
    Ok(())
}

/// The server went away: bring one back (or learn why not) and send the message again
/// if it never reached the old one; the reply, or an error reply saying what happened.
async fn recover(
    settings: &Settings,
    url: &mut String,
    line: &str,
    id: Option<Value>,
    reached: bool,
) -> Option<String> {
    let id = id.filter(|i| !i.is_null());
    match ensure_server(settings).await {
        Ok(base) => {
            *url = format!("{base}/");
            if reached {
                // It may have been carried out: sending it twice could write twice.
                return Some(error_reply(
                    id?,
                    "the KG Memory server stopped while answering this request and was started again; check the result and call again if needed",
                ));
            }
            match relay(url, line).await {
                Relayed::Reply(reply) => Some(reply),
                Relayed::Nothing => None,
                Relayed::Lost { error, .. } => Some(error_reply(
                    id?,
                    &format!("KG Memory server unreachable: {error}"),
                )),
            }
        }
        Err(e) => {
            eprintln!("kg-memory stdio: {e}");
            Some(error_reply(
                id?,
                &format!("KG Memory server unreachable, and it could not be started again: {e}"),
            ))
        }
    }
}

/// What became of one relayed message.
#[derive(Debug)]
enum Relayed {
    /// The line to send back.
    Reply(String),
    /// A notification: nothing to answer.
    Nothing,
    /// No answer from the server. `reached`: the request may have got there.
    Lost {
        id: Option<Value>,
        error: ClientError,
        reached: bool,
    },
}

/// Forward one message.
async fn relay(url: &str, line: &str) -> Relayed {
    let id = serde_json::from_str::<Value>(line)
        .ok()
        .map(|v| v.get("id").cloned().unwrap_or(Value::Null));
    match client::request("POST", url, Some(line), REQUEST_TIMEOUT).await {
        Ok(a) if a.status == 202 => Relayed::Nothing,
        Ok(a) if is_message(&a.body) || (success(a.status) && !a.body.trim().is_empty()) => {
            Relayed::Reply(sse_payload(&a.body).trim().to_string())
        }
        // Not a KG Memory answer (another program on the port, say): the request
        // was not carried out, so it may be sent again once a server is back.
        Ok(a) if !success(a.status) => Relayed::Lost {
            id,
            error: ClientError::Status {
                url: url.to_string(),
                status: a.status,
                body: a.body,
            },
            reached: false,
        },
        Ok(a) => match id.filter(|i| !i.is_null()) {
            Some(id) => Relayed::Reply(error_reply(
                id,
                &format!("empty answer from the server (HTTP {})", a.status),
            )),
            None => Relayed::Nothing,
        },
        // A slow answer is not a dead server: say so, restart nothing.
        Err(error @ ClientError::Timeout(..)) => match id.filter(|i| !i.is_null()) {
            Some(id) => Relayed::Reply(error_reply(
                id,
                &format!("KG Memory server did not answer: {error}"),
            )),
            None => Relayed::Nothing,
        },
        Err(error) => {
            // Refused at connect: the request never left.
            let reached = !matches!(
                &error,
                ClientError::Io(_, e) if e.kind() == std::io::ErrorKind::ConnectionRefused
            );
            Relayed::Lost { id, error, reached }
        }
    }
}

fn success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// A JSON-RPC message (a server's error answers carry one too, with a 4xx status).
fn is_message(body: &str) -> bool {
    serde_json::from_str::<Value>(sse_payload(body).trim())
        .is_ok_and(|v| v.get("jsonrpc").is_some())
}

/// A server may answer with an event stream; the JSON-RPC message is its `data:`.
fn sse_payload(body: &str) -> &str {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(body)
}

fn error_reply(id: Value, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}}).to_string()
}
