//! Ambient memory: what the Claude Code hooks receive without the model asking —
//! the session-start preload (interfaces.md §7.1), prompt recall (§7.3, in
//! `ambient/prompt.rs`) and capture nudges after tool use (§7.4, in
//! `ambient/tool_event.rs`). Every decision is made here; the hooks only relay.

mod file_recall;
mod prompt;
mod tool_event;

pub use file_recall::{FileRecall, FileTouch, file_recall};
pub use prompt::{PromptReply, prompt_context, prompt_reply};
pub use tool_event::tool_event;

// The thresholds and helpers behind the decisions, for this crate's tests.
#[cfg(feature = "internals")]
pub use crate::push::{PUSH_GIST_CHARS, PUSH_MAX_NODES, PUSH_MIN_SHARED_WORDS};
#[cfg(feature = "internals")]
pub use file_recall::{
    FILE_RECALL_BUDGET, FILE_RECALL_MAX_NODES, FILE_RECALL_WINDOW_SECS, FILE_RECALLS_PER_WINDOW,
};
#[cfg(feature = "internals")]
pub use prompt::{
    GATE_MANY_TERMS, GATE_ONE_TERM, MAX_TERMS, MIN_HUMAN_CHARS, MIN_TERM_CHARS, RECALL_BUDGET,
    RECALL_HEADER, RECALL_MAX_HITS, REMINDER_GAP_SECS, human_text, prompt_terms,
};
#[cfg(feature = "internals")]
pub use tool_event::{
    MAX_TARGET_BYTES, NUDGE_GAP_SECS, NUDGES_PER_SESSION, READ_THRESHOLD, TARGET_COOLDOWN_SECS,
    WEB_THRESHOLD,
};

use crate::render::ReadKind;
use crate::session::recover_from_transcript;
use crate::store::{Store, StoreError};
use crate::tools::render_session;
use crate::wording;

/// A prompt as the prompt hook reports it (Claude Code's UserPromptSubmit); the
/// server reads it from the hook's JSON. A field the hook left out, or sent as
/// something other than text, is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PromptEvent<'a> {
    /// The folder the agent runs in (`cwd`).
    pub cwd: Option<&'a str>,
    /// The agent's own session id (`session_id`), through which the KG session is found.
    pub harness_session: Option<&'a str>,
    /// What the person typed (`prompt`).
    pub prompt: Option<&'a str>,
    /// The agent's transcript file (`transcript_path`), where a reminder looks for
    /// what the session already said.
    pub transcript_path: Option<&'a str>,
}

/// A finished tool call as the tool hook reports it (Claude Code's PostToolUse); the
/// server reads it from the hook's JSON. A field the hook left out, or sent as
/// something other than text, is `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolUse<'a> {
    /// The folder the agent runs in (`cwd`).
    pub cwd: Option<&'a str>,
    /// The tool's name (`tool_name`): `Read`, `WebFetch`, `WebSearch`, ….
    pub tool_name: Option<&'a str>,
    /// The agent's own session id (`session_id`).
    pub harness_session: Option<&'a str>,
    /// The file a `Read` read (`tool_input.file_path`).
    pub file_path: Option<&'a str>,
    /// The page a `WebFetch` fetched (`tool_input.url`).
    pub url: Option<&'a str>,
    /// What a `WebSearch` searched for (`tool_input.query`).
    pub query: Option<&'a str>,
}

/// What other sessions wrote that bears on the work of the session a hook speaks
/// for ([`crate::push::session_news`]); the hook names the agent's session and folder
/// instead of a KG session.
pub fn hook_news(
    store: &Store,
    harness_session: Option<&str>,
    cwd: &str,
    now: f64,
) -> Option<String> {
    if store.config().policy != crate::store::Policy::Ours {
        return None;
    }
    let sid = store.hook_session(harness_session, Some(cwd))?;
    crate::push::session_news(store, &sid, now)
}

/// What the SessionStart hook sends.
#[derive(Debug, Clone, Default)]
pub struct BootstrapRequest {
    /// The session's project folder (the hook's `cwd`); resolved (symlinks followed), it
    /// is the project root and must lie inside the home folder.
    pub project_path: String,
    /// Claude Code's own session id. The KG session is bound to it, so later hooks and a
    /// `resume` find the same session; an id that cannot be Claude Code's is ignored.
    pub claude_session_id: Option<String>,
    /// `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// Claude Code's transcript file. On `resume` or `compact` with no bound session, the
    /// last `Session: <id>` marker in its tail recovers the KG session.
    pub transcript_path: Option<String>,
}

/// Counts reported with a preload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreloadStats {
    /// Active nodes of the user graph.
    pub user_active: usize,
    /// Active nodes of the session's project graph (0 while it has none).
    pub project_active: usize,
    /// Nodes of both levels whose gist the preload shows in full; the SessionStart
    /// notice says `kg_read` renders the rest.
    pub shown_gists: usize,
}

/// The bootstrap answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Bootstrap {
    /// The KG session the preload is for; the context names it (`Session: <id>`) so the
    /// model passes it as the `kg_*` tools' `session_id`.
    pub session_id: String,
    /// An existing session was continued (the one bound to this Claude session, or the
    /// one a `resume`/`compact` transcript names) instead of a new one registered; its
    /// seen-state carries over.
    pub reused: bool,
    /// Header + body (or the continuity note of a resume).
    pub context: String,
    /// When the session's folder could belong to more than one project: which one it
    /// uses and which other folder could have been it, for the person (`context` ends
    /// with the model's version). Only for a new session, never under the reference
    /// policy.
    pub project_notice: Option<String>,
    /// The body alone (empty on resume).
    pub text: String,
    /// `None` on resume (nothing rendered).
    pub stats: Option<PreloadStats>,
}

/// The most of a transcript read to recover a session: its end, where the last
/// session marker is. A transcript is the caller's file; only its tail is read so a
/// huge one cannot exhaust memory.
pub const TRANSCRIPT_TAIL_BYTES: u64 = 64 << 20;

/// A transcript's text (its last [`TRANSCRIPT_TAIL_BYTES`]), or `None` when the path
/// is not a readable regular file: devices (`/dev/zero` never ends) and FIFOs (a read
/// blocks until someone writes) are not transcripts.
fn read_transcript(path: &str) -> Option<String> {
    let (bytes, whole) =
        crate::stranger::read_regular_tail(std::path::Path::new(path), TRANSCRIPT_TAIL_BYTES)
            .ok()?;
    if whole {
        return String::from_utf8(bytes).ok();
    }
    // The cut may split a line (or a character): start at the next full line.
    let from = bytes
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| i + 1);
    Some(String::from_utf8_lossy(&bytes[from..]).into_owned())
}

/// Which header a preload gets.
#[derive(Clone, Copy)]
pub enum PreloadHeader<'a> {
    /// The product's: under our policy it says whether the preload is complete (then
    /// no full read is owed) or names what it left out; under the reference's, the
    /// reference's partial header ([`wording::preload_header`]).
    Standard,
    /// A fixed text for a session id, whatever the render leaves out (tests that
    /// replay the reference's budget with a header of its length).
    Fixed(&'a dyn Fn(&str) -> String),
}

impl std::fmt::Debug for PreloadHeader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PreloadHeader::Standard => "Standard",
            PreloadHeader::Fixed(_) => "Fixed",
        })
    }
}

/// Start or resume a KG session for a Claude Code session and render its preload
/// under `header`.
pub fn session_bootstrap(
    store: &Store,
    request: &BootstrapRequest,
    header: PreloadHeader<'_>,
    now: f64,
) -> Result<Bootstrap, StoreError> {
    // A folder outside the allowed ones has no project graph, but the user graph is
    // still the person's memory: preload it, and say why the project part is missing.
    let choice = match store.project_of(&request.project_path) {
        Ok(choice) => Some(choice),
        Err(StoreError::Path(crate::namespace::PathError::OutsideHome(_))) => None,
        Err(e) => return Err(e),
    };
    let root = choice.as_ref().map(|c| c.root.clone());
    let source = request.source.as_deref().unwrap_or("");
    // An id that cannot be Claude Code's is not bound (it would be stored and shown).
    let claude = request
        .claude_session_id
        .as_deref()
        .filter(|c| crate::limits::is_claude_session_id(c));
    let mut reused = None;
    if let Some(c) = claude
        && source != "clear"
    {
        reused = store.with_sessions(|s| s.find_by_claude_sid(c).map(str::to_string));
    }
    if reused.is_none()
        && matches!(source, "resume" | "compact")
        && let Some(path) = request.transcript_path.as_deref()
        && let Some(candidate) = read_transcript(path).and_then(|t| recover_from_transcript(&t))
        && store.session(&candidate).is_some_and(|r| {
            // Its project, or (registered before projects were found from subfolders)
            // the folder itself.
            r.project_path == root || r.project_path == choice.as_ref().map(|c| c.folder.clone())
        })
    {
        if let Some(c) = claude {
            store.bind_claude(&candidate, c);
        }
        reused = Some(candidate);
    }
    let (sid, was_reused) = match reused {
        Some(sid) => (sid, true),
        None => (store.register_in(root.clone(), claude, now), false),
    };
    if was_reused && source == "resume" {
        return Ok(Bootstrap {
            context: wording::resume_note(&sid),
            session_id: sid,
            reused: true,
            project_notice: None,
            text: String::new(),
            stats: None,
        });
    }
    let ours = store.config().policy == crate::store::Policy::Ours;
    let head = match header {
        PreloadHeader::Fixed(text) => text(&sid),
        PreloadHeader::Standard if ours => wording::preload_header_ours(&sid, [0; 3]),
        PreloadHeader::Standard => wording::preload_header(&sid),
    };
    // The preload is sized for the agent whose transcript the hook names.
    let client = crate::tools::pages::Client::from_transcript(request.transcript_path.as_deref());
    let (mut rendered, mut viewed_at) = render_session(
        store,
        &sid,
        ReadKind::Preload,
        client,
        Some(&head),
        None,
        now,
    );
    // Ours says whether the preload is complete, and if not, what it left out. The
    // header is part of the budget, so the render is redone with the header that
    // says so, until what it says holds.
    let mut complete = false;
    if ours && matches!(header, PreloadHeader::Standard) {
        for _ in 0..3 {
            let said = wording::preload_header_ours(&sid, rendered.left_out.counts());
            if said == head && rendered.left_out.is_nothing() {
                break;
            }
            let again = render_session(
                store,
                &sid,
                ReadKind::Preload,
                client,
                Some(&said),
                None,
                now,
            );
            let settled = again.0.left_out == rendered.left_out;
            (rendered, viewed_at) = again;
            if settled {
                break;
            }
        }
        complete = rendered.left_out.is_nothing();
    }
    store.with_sessions_mut(|sessions| {
        if let Some(r) = sessions.lookup_mut(&sid) {
            // Everything is in context: no full read is owed.
            r.preload_complete = complete;
            r.preloaded_ids = Some(rendered.shown_ids.to_vec());
            r.mark_seen(rendered.shown_ids.iter());
            r.record_view(
                rendered.shown_ids.iter(),
                crate::session::View::Seen,
                viewed_at,
            );
        }
    });
    let body = rendered.body().to_string();
    let mut context = rendered.text;
    if root.is_none() {
        context.push_str("\n\n");
        context.push_str(&wording::no_project_memory(&request.project_path));
    }
    // Said once, at the start of a new session: a continued one was told already.
    let choice = choice.filter(|_| !was_reused);
    if let Some(note) = choice.as_ref().and_then(|c| c.note()) {
        context.push_str("\n\n");
        context.push_str(&note);
    }
    let project_notice = choice.and_then(|c| c.notice());
    Ok(Bootstrap {
        session_id: sid,
        reused: was_reused,
        context,
        project_notice,
        text: body,
        stats: Some(PreloadStats {
            user_active: rendered.user_active,
            project_active: rendered.project_active,
            shown_gists: rendered.shown_ids.len(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_as_transcripts() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, "Session: 0badf00d\n").expect("write");
        let text = read_transcript(&file.to_string_lossy());
        assert_eq!(text.as_deref(), Some("Session: 0badf00d\n"));
        assert_eq!(read_transcript(&dir.path().to_string_lossy()), None);
        assert_eq!(read_transcript("/nonexistent/t.jsonl"), None);
        #[cfg(unix)]
        {
            assert_eq!(read_transcript("/dev/zero"), None);
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_string_lossy().as_bytes()).expect("path");
            // SAFETY: a valid path; mkfifo only creates the node.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(read_transcript(&fifo.to_string_lossy()), None);
        }
    }

    #[test]
    fn a_long_transcript_is_read_from_its_last_full_line() {
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("t.jsonl");
        let f = std::fs::File::create(&file).expect("create");
        f.set_len(TRANSCRIPT_TAIL_BYTES + 10).expect("sparse");
        drop(f);
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open");
        writeln!(f, "\nSession: 0badf00d").expect("marker");
        let text = read_transcript(&file.to_string_lossy()).expect("read");
        assert!(text.len() as u64 <= TRANSCRIPT_TAIL_BYTES);
        assert_eq!(recover_from_transcript(&text).as_deref(), Some("0badf00d"));
    }
}
