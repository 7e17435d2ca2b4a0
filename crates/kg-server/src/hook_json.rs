//! Claude Code's hook JSON at the server's edge: the payload a hook forwards is read
//! into kg-core's typed events ([`kg_core::PromptEvent`], [`kg_core::ToolUse`]), and
//! kg-core's decisions are answered as the hook output Claude Code reads
//! (`hookSpecificOutput.additionalContext`), or `{}` when there is nothing to say.

use kg_core::{PromptEvent, PromptReply, ToolUse};
use serde_json::{Map, Value, json};

/// `hookEventName` of the prompt hook.
pub(crate) const USER_PROMPT_SUBMIT: &str = "UserPromptSubmit";
/// `hookEventName` of the tool hook.
pub(crate) const POST_TOOL_USE: &str = "PostToolUse";

/// A text field of the payload; absent, or not text, is `None`.
fn text<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

/// The UserPromptSubmit payload as kg-core's prompt event.
pub(crate) fn prompt_event(payload: &Map<String, Value>) -> PromptEvent<'_> {
    PromptEvent {
        cwd: text(payload, "cwd"),
        harness_session: text(payload, "session_id"),
        prompt: text(payload, "prompt"),
        transcript_path: text(payload, "transcript_path"),
    }
}

/// The PostToolUse payload as kg-core's tool use.
pub(crate) fn tool_use(payload: &Map<String, Value>) -> ToolUse<'_> {
    let input = |key: &str| {
        payload
            .get("tool_input")
            .and_then(Value::as_object)
            .and_then(|i| text(i, key))
    };
    ToolUse {
        cwd: text(payload, "cwd"),
        tool_name: text(payload, "tool_name"),
        harness_session: text(payload, "session_id"),
        file_path: input("file_path"),
        url: input("url"),
        query: input("query"),
    }
}

/// The whole answer to a hook: the output that adds `text` to the model's context,
/// or `{}` when there is nothing to say.
pub(crate) fn answer(event: &str, text: Option<String>) -> Value {
    text.map_or_else(
        || json!({}),
        |text| json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}),
    )
}

/// The answer of `/api/prompt_context`: the hook output, `{"quiet": true}` (our
/// policy decided that no reminder fits either), or `{}` (the hook may add one of its
/// reminders).
pub(crate) fn prompt_answer(reply: PromptReply) -> Value {
    match reply {
        PromptReply::Say(text) => answer(USER_PROMPT_SUBMIT, Some(text)),
        PromptReply::Quiet => json!({"quiet": true}),
        PromptReply::Nothing => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kg_core::{JsonStyle, to_json};

    #[test]
    fn hook_outputs_have_the_claude_code_shape() {
        assert_eq!(answer(USER_PROMPT_SUBMIT, None), json!({}));
        let out = answer(POST_TOOL_USE, Some("KG capture: 'x'".to_string()));
        assert_eq!(
            to_json(&out, JsonStyle::WIRE),
            r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"KG capture: 'x'"}}"#
        );
        assert_eq!(
            prompt_answer(PromptReply::Say("t".into()))["hookSpecificOutput"]["hookEventName"],
            "UserPromptSubmit"
        );
        assert_eq!(prompt_answer(PromptReply::Quiet), json!({"quiet": true}));
        assert_eq!(prompt_answer(PromptReply::Nothing), json!({}));
    }

    #[test]
    fn fields_that_are_not_text_are_absent() {
        let payload = json!({
            "cwd": "/p", "session_id": 7, "prompt": "why",
            "tool_name": "Read", "tool_input": {"file_path": "/p/a.rs", "url": null},
        });
        let Value::Object(payload) = payload else {
            unreachable!("an object literal")
        };
        let event = prompt_event(&payload);
        assert_eq!(
            (
                event.cwd,
                event.harness_session,
                event.prompt,
                event.transcript_path
            ),
            (Some("/p"), None, Some("why"), None)
        );
        let used = tool_use(&payload);
        assert_eq!(
            (used.tool_name, used.file_path, used.url, used.query),
            (Some("Read"), Some("/p/a.rs"), None, None)
        );
    }
}
