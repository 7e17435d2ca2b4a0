//! `kg-memory stdio`: MCP over stdio for clients that only speak stdio (Claude
//! Desktop). Each newline-delimited JSON-RPC message is relayed to the running HTTP
//! server and its answer written back as one line; a server is started when none
//! answers. Stdout belongs to the protocol, so every log line goes to stderr.

use crate::client;
use crate::config::Settings;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// How long to wait for a server this bridge started.
const START_WAIT: Duration = Duration::from_secs(20);
/// One relayed request may take this long (a full read of a big graph is well below).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

async fn healthy(base: &str) -> bool {
    client::get(&format!("{base}/health"), Duration::from_secs(2))
        .await
        .is_ok()
}

/// Make sure a server answers, starting one if needed; returns its base URL. The
/// server holding the storage root is the one to talk to, whatever port it chose, and
/// none is started while the root is held (a second one would lose writes).
pub async fn ensure_server(settings: &Settings) -> anyhow::Result<String> {
    let (base, held) = crate::root_lock::server_of(settings);
    if healthy(&base).await {
        return Ok(base);
    }
    match &held {
        Some(held) => eprintln!(
            "kg-memory stdio: {} holds {} but does not answer yet; waiting for it",
            held.who(),
            held.root.display()
        ),
        None => {
            eprintln!("kg-memory stdio: no server at {base}; starting one");
            crate::hook::start_detached(settings)?;
        }
    }
    let started = Instant::now();
    while started.elapsed() < START_WAIT {
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Whoever won the root meanwhile (ours, or one started at the same moment).
        let (base, _) = crate::root_lock::server_of(settings);
        if healthy(&base).await {
            return Ok(base);
        }
    }
    match held {
        Some(held) => anyhow::bail!(
            "the storage root {} is held by {}, which did not answer within {START_WAIT:?}; no second server was started. Check it with `kg-memory status`",
            held.root.display(),
            held.who()
        ),
        None => anyhow::bail!(
            "the KG Memory server did not come up at {base} within {START_WAIT:?}; see ~/.local/state/kg-memory/server.log"
        ),
    }
}

/// Relay stdin to the server until stdin closes.
pub async fn run(settings: &Settings) -> anyhow::Result<()> {
    let url = format!("{}/", ensure_server(settings).await?);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = relay(&url, &line).await {
            out.write_all(reply.as_bytes()).await?;
            out.write_all(b"\n").await?;
            out.flush().await?;
        }
    }
    Ok(())
}

/// Forward one message; `None` for notifications (nothing to answer).
async fn relay(url: &str, line: &str) -> Option<String> {
    let id = serde_json::from_str::<Value>(line)
        .ok()
        .map(|v| v.get("id").cloned().unwrap_or(Value::Null));
    let answer = client::request("POST", url, Some(line), REQUEST_TIMEOUT).await;
    match answer {
        Ok(a) if a.status == 202 => None,
        Ok(a) if !a.body.trim().is_empty() => Some(sse_payload(&a.body).trim().to_string()),
        Ok(a) => Some(error_reply(
            id,
            -32603,
            &format!("empty answer from the server (HTTP {})", a.status),
        )),
        Err(e) => {
            eprintln!("kg-memory stdio: {e}");
            // Requests get an error reply; a failed notification has nobody to tell.
            let id = id.filter(|i| !i.is_null())?;
            Some(error_reply(
                Some(id),
                -32603,
                &format!("KG Memory server unreachable: {e}"),
            ))
        }
    }
}

/// A server may answer with an event stream; the JSON-RPC message is its `data:`.
fn sse_payload(body: &str) -> &str {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(body)
}

fn error_reply(id: Option<Value>, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id.unwrap_or(Value::Null), "error": {"code": code, "message": message}})
        .to_string()
}
