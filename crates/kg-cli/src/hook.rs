//! Hook couriers: `kg-memory hook session-start | prompt-submit | post-tool`.
//!
//! Claude Code runs these with the hook's JSON on stdin. Each posts it to the server
//! and prints the ready-made answer. Every decision is the server's; every failure —
//! server down, slow, garbage in — prints nothing and exits 0, because a hook must
//! never break a session.

use crate::session_notice::{Agent, Offline, session_start_offline};
use kg_client as client;
use kg_server::config::Settings;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The whole exchange of one hook stays within this.
pub const HOOK_BUDGET: Duration = Duration::from_secs(3);
/// Hook payloads are small; anything bigger is not from Claude Code.
const MAX_STDIN: u64 = 4 << 20;

/// Which hook is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    PromptSubmit,
    PostTool,
}

impl HookEvent {
    pub fn parse(name: &str) -> Option<HookEvent> {
        match name {
            "session-start" => Some(HookEvent::SessionStart),
            "prompt-submit" => Some(HookEvent::PromptSubmit),
            "post-tool" => Some(HookEvent::PostTool),
            _ => None,
        }
    }
}

/// Read stdin (bounded in size) until it is closed or `deadline` passes; `None` if it
/// is not closed in time. A stdin that is never closed must not hold the hook: the
/// read runs on a thread of its own, left behind (blocked) when the hook exits.
pub fn read_stdin(deadline: Instant) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("hook-stdin".into())
        .spawn(move || {
            use std::io::Read;
            let mut text = String::new();
            let read = std::io::stdin()
                .take(MAX_STDIN)
                .read_to_string(&mut text)
                .map(|_| text);
            // The hook may have given up waiting; nobody to tell then.
            let _ = tx.send(read);
        })
        .ok()?;
    rx.recv_timeout(left(deadline)).ok()?.ok()
}

/// Run a hook on its stdin text, within what is `left` of the hook's `deadline`;
/// returns what to print (possibly nothing).
pub async fn run(
    event: HookEvent,
    agent: Agent,
    stdin: &str,
    settings: &Settings,
    deadline: Instant,
) -> Option<String> {
    let payload: Value = serde_json::from_str(stdin.trim()).ok()?;
    payload.as_object()?;
    // The server holding the storage root, whatever port it chose; else the configured one.
    let (base, held) = kg_server::root_lock::server_of(settings);
    // Nobody holds the root, yet a server may answer at the configured address: one
    // serving another storage root. This session's memory is not there.
    let elsewhere = match held {
        Some(_) => None,
        None => kg_server::root_lock::serves_another_root(&base, settings).await,
    };
    if let Some(stranger) = elsewhere {
        return match event {
            HookEvent::SessionStart => Some(session_start_offline(
                &Offline::OtherRoot(&stranger),
                agent,
                settings,
                &base,
            )),
            // Said once, at session start.
            HookEvent::PromptSubmit | HookEvent::PostTool => None,
        };
    }
    match event {
        HookEvent::SessionStart => {
            session_start(&payload, agent, settings, &base, held, deadline).await
        }
        HookEvent::PromptSubmit => prompt_submit(stdin, &payload, &base, deadline).await,
        HookEvent::PostTool => relay(&format!("{base}/api/tool_event"), stdin, deadline).await,
    }
}

/// Time kept at the end of the hook's budget to print what it has to say.
const SAY_MARGIN: Duration = Duration::from_millis(150);

fn left(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

/// POST the payload; print the answer only when it carries hook output.
async fn relay(url: &str, body: &str, deadline: Instant) -> Option<String> {
    let answer = client::post(url, body, left(deadline)).await.ok()?;
    let value: Value = serde_json::from_str(&answer).ok()?;
    value.get("hookSpecificOutput")?;
    Some(answer)
}

async fn prompt_submit(
    stdin: &str,
    payload: &Value,
    base: &str,
    deadline: Instant,
) -> Option<String> {
    let url = format!("{base}/api/prompt_context");
    let answer = client::post(&url, stdin, left(deadline)).await.ok()?;
    let value: Value = serde_json::from_str(&answer).ok()?;
    if value.get("hookSpecificOutput").is_some() {
        return Some(answer);
    }
    // The server chose silence (our policy picks reminders there, by the session's
    // state and the prompt's topic).
    if value.get("quiet").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    // The reference's way (`KG_POLICY=reference`): nothing to recall, so a short
    // reminder at random, staged by how long the conversation is — but only for a
    // real prompt (not for whatever else reached this hook).
    payload["prompt"].as_str()?;
    let bytes = payload["transcript_path"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()));
    let pool = kg_core::reminder_pool(bytes);
    let pick = pool.get(random_index(pool.len()))?;
    Some(hook_json("UserPromptSubmit", pick.text, None))
}

fn hook_json(event: &str, context: &str, system_message: Option<String>) -> String {
    let mut out = serde_json::Map::new();
    if let Some(m) = system_message {
        out.insert("systemMessage".into(), Value::String(m));
    }
    out.insert(
        "hookSpecificOutput".into(),
        json!({"hookEventName": event, "additionalContext": context}),
    );
    Value::Object(out).to_string()
}

/// A cheap random index (the standard library's per-process random hash keys).
fn random_index(len: usize) -> usize {
    use std::hash::{BuildHasher, Hasher};
    if len == 0 {
        return 0;
    }
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() % len as u64) as usize
}

async fn session_start(
    payload: &Value,
    agent: Agent,
    settings: &Settings,
    base: &str,
    held: Option<kg_server::root_lock::RootHeld>,
    deadline: Instant,
) -> Option<String> {
    let healthy = client::get(
        &format!("{base}/health"),
        left(deadline).min(Duration::from_secs(2)),
    )
    .await
    .is_ok();
    if !healthy {
        // A second server on a held root would save over the holder's writes.
        if let Some(held) = held {
            return Some(session_start_offline(
                &Offline::RootHeldSilent(&held),
                agent,
                settings,
                base,
            ));
        }
        // A program that is not KG Memory on the port: a server started now could
        // never listen, and the person must learn why here, not from a log. The
        // question has only what is left of the hook's time (the health call above may
        // have used most of it): a program that takes connections and stays silent
        // past it is such a program, and saying so late would mean saying nothing.
        let asked = crate::route_check::who_answers(base, settings);
        let answerer = tokio::time::timeout(left(deadline).saturating_sub(SAY_MARGIN), asked)
            .await
            .unwrap_or(crate::route_check::Answerer::OtherProgram);
        if answerer == crate::route_check::Answerer::OtherProgram {
            return Some(session_start_offline(
                &Offline::PortTaken,
                agent,
                settings,
                base,
            ));
        }
        // Start one for the next prompts; never wait for it, never restart one.
        return Some(match kg_server::launch::start_detached(settings) {
            Ok(_) => session_start_offline(&Offline::Starting, agent, settings, base),
            Err(e) => {
                session_start_offline(&Offline::CannotStart(&e.to_string()), agent, settings, base)
            }
        });
    }
    let text = |key: &str| {
        payload[key]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let project = text("cwd")
        .or_else(|| std::env::var("CLAUDE_PROJECT_DIR").ok())
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.to_string_lossy().into_owned())
        })?;
    let mut query = format!("project_path={}", client::encode(&project));
    for (param, key) in [
        ("claude_session_id", "session_id"),
        ("source", "source"),
        ("transcript_path", "transcript_path"),
    ] {
        if let Some(v) = text(key) {
            query.push_str(&format!("&{param}={}", client::encode(&v)));
        }
    }
    let answer = client::get(
        &format!("{base}/api/session_bootstrap?{query}"),
        left(deadline),
    )
    .await
    .ok()?;
    let boot: Value = serde_json::from_str(&answer).ok()?;
    let context = boot["context"].as_str().filter(|c| !c.is_empty())?;
    let sid = boot["session_id"].as_str()?;
    let stats = &boot["stats"];
    let counts = stats["user_active"].as_u64().map(|user| {
        (
            user,
            stats["project_active"].as_u64().unwrap_or(0),
            stats["shown_gists"].as_u64().unwrap_or(0),
        )
    });
    let reused = boot["reused"].as_bool().unwrap_or(false);
    let mut notice = kg_core::session_start_notice(sid, reused, counts);
    // Which project's graph an ambiguous folder got is the user's to know as well.
    if let Some(project) = boot["project_notice"].as_str() {
        notice.push(' ');
        notice.push_str(project);
    }
    Some(hook_json("SessionStart", context, Some(notice)))
}
