//! Claude Code's hook JSON for kg-core's own tests, which call the ambient functions
//! in process: a payload read into kg-core's typed events, and a reply written as the
//! hook output. The server reads and answers the real wire the same way
//! (`kg-server/src/hook_json.rs`); its `golden_wire::` tests replay the reference's
//! hook fixtures over HTTP, so the two cannot drift apart unnoticed.

use kg_core::{PromptEvent, ToolUse};
use serde_json::{Value, json};

/// `hookEventName` of the prompt hook.
pub const USER_PROMPT_SUBMIT: &str = "UserPromptSubmit";
/// `hookEventName` of the tool hook.
pub const POST_TOOL_USE: &str = "PostToolUse";

/// A text field of `value`; absent, or not text, is `None`.
fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// A UserPromptSubmit payload as kg-core's prompt event.
pub fn prompt_event(payload: &Value) -> PromptEvent<'_> {
    PromptEvent {
        cwd: text(payload, "cwd"),
        harness_session: text(payload, "session_id"),
        prompt: text(payload, "prompt"),
        transcript_path: text(payload, "transcript_path"),
    }
}

/// A PostToolUse payload as kg-core's tool use.
pub fn tool_use(payload: &Value) -> ToolUse<'_> {
    let input = |key: &str| payload.get("tool_input").and_then(|i| text(i, key));
    ToolUse {
        cwd: text(payload, "cwd"),
        tool_name: text(payload, "tool_name"),
        harness_session: text(payload, "session_id"),
        file_path: input("file_path"),
        url: input("url"),
        query: input("query"),
    }
}

/// The hook output that adds `text` to the model's context, or `{}`.
pub fn answer(event: &str, text: Option<String>) -> Value {
    text.map_or_else(
        || json!({}),
        |text| json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}),
    )
}
