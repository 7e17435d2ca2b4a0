//! Bounds on what enters the memory from outside: free text, session ids, project
//! paths, and how much of a client's text a log line repeats.
//!
//! Every front end (MCP tools, REST, the graph view) reaches these through the store,
//! so a refusal reads the same whichever route a write took.

use std::borrow::Cow;

/// Longest gist accepted. Gists should stay under 300 characters (the scan limit the
/// DEBT line counts as oversized); the hard cap leaves that advice room to work while
/// keeping one careless write from filling every later `kg_read`.
pub const MAX_GIST_CHARS: usize = 1_000;
/// Longest single note of a node or an edge.
pub const MAX_NOTE_CHARS: usize = 2_000;
/// Most notes on one node or edge.
pub const MAX_NOTES: usize = 50;
/// Longest touch (a file path or a search needle).
pub const MAX_TOUCH_CHARS: usize = 512;
/// Most touches on one node.
pub const MAX_TOUCHES: usize = 50;
/// Longest task id of a progress checkpoint.
pub const MAX_TASK_ID_CHARS: usize = 128;
/// Largest progress state, as compact JSON: a checkpoint, not a document store.
pub const MAX_PROGRESS_BYTES: usize = 64 * 1024;
/// Longest project path accepted (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4_096;
/// Longest Claude Code session id accepted (theirs are 36-character UUIDs).
pub const MAX_CLAUDE_SESSION_ID: usize = 128;
/// Longest search query accepted: a search is a few words, and every term is matched
/// against every node, so a megabyte query would hold a graph's lock for seconds.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// How much of a prompt recall reads: its start says what it is about, and the rest
/// (a pasted log) would only cost time.
pub const MAX_RECALL_CHARS: usize = 16_000;

/// A search query, refused when longer than [`MAX_QUERY_CHARS`].
pub fn query(text: &str) -> Result<&str, String> {
    let chars = text.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(format!(
            "The query is {chars} characters; the limit is {MAX_QUERY_CHARS}. Search with a few words that name the subject."
        ));
    }
    Ok(text)
}

/// The start of `text`, at most `most` characters (cut at a character boundary).
pub fn head(text: &str, most: usize) -> &str {
    match text.char_indices().nth(most) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

/// How much of a client-supplied path, id or text a log line repeats.
const LOG_CHARS: usize = 200;
/// Largest graph file, in bytes as saved. Every field of a node is bounded, but a
/// graph of many maximal nodes would still make each write rewrite tens of
/// megabytes; a write that would take a graph past this is refused, and a synced
/// graph file larger than this is not taken in. A large real memory (thousands of
/// nodes with notes) is well under a megabyte.
pub const MAX_GRAPH_BYTES: usize = 8 * 1024 * 1024;

/// The size of `text` as a graph file stores it, in characters: a printable character
/// counts one, a control character the escape it is stored as (`\n` two, `\u001b`
/// six). A limit counted this way holds on disk too: two thousand escape characters
/// are twelve thousand bytes, not two thousand. (Letters outside ASCII, stored as
/// `\uXXXX` too, count one: they are text a person reads; the graph bound holds them.)
pub fn stored_chars(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if c < ' ' => 6,
            _ => 1,
        })
        .sum()
}

/// "N characters", adding the stored size when control characters make it larger.
fn size_words(text: &str) -> (usize, String) {
    let stored = stored_chars(text);
    let chars = text.chars().count();
    let words = if stored == chars {
        format!("{chars} characters")
    } else {
        format!(
            "{chars} characters ({stored} as stored: a control character is kept as an escape of up to six)"
        )
    };
    (stored, words)
}

/// A gist ready to store: line breaks flattened to spaces (a gist renders as one
/// line of `kg_read`), refused when empty or longer than [`MAX_GIST_CHARS`].
pub fn gist(text: &str) -> Result<String, String> {
    let flat = one_line(text);
    if flat.trim().is_empty() {
        return Err(
            "Gist is empty: write the insight as one line (aim for under 300 characters)."
                .to_string(),
        );
    }
    let (size, words) = size_words(&flat);
    if size > MAX_GIST_CHARS {
        return Err(format!(
            "Gist is {words}; the limit is {MAX_GIST_CHARS}. Keep the gist to the one-line bottom line (aim for under 300) and move details into notes."
        ));
    }
    Ok(flat.into_owned())
}

/// Notes of a node or an edge, flattened and bounded like gists.
pub fn notes(items: Vec<String>) -> Result<Vec<String>, String> {
    bounded_items(items, ("Note", "notes"), MAX_NOTES, MAX_NOTE_CHARS)
}

/// Touches of a node, flattened and bounded.
pub fn touches(items: Vec<String>) -> Result<Vec<String>, String> {
    bounded_items(items, ("Touch", "touches"), MAX_TOUCHES, MAX_TOUCH_CHARS)
}

fn bounded_items(
    items: Vec<String>,
    (one, many): (&str, &str),
    most: usize,
    longest: usize,
) -> Result<Vec<String>, String> {
    if items.len() > most {
        return Err(format!(
            "Too many {many}: {} given, at most {most} are kept per node or edge.",
            items.len()
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let item = match one_line(&item) {
                Cow::Borrowed(_) => item,
                Cow::Owned(flat) => flat,
            };
            let (size, words) = size_words(&item);
            if size > longest {
                return Err(format!(
                    "{one} {} is {words}; the limit is {longest}.",
                    i + 1
                ));
            }
            Ok(item)
        })
        .collect()
}

/// Line feeds and carriage returns become single spaces: they are what splits the
/// one-line-per-node render. Other control and separator characters are kept as
/// given (stored and counted exactly, like any text).
fn one_line(text: &str) -> Cow<'_, str> {
    let is_break = |c: char| matches!(c, '\n' | '\r');
    if !text.contains(is_break) {
        return Cow::Borrowed(text);
    }
    let mut flat = String::with_capacity(text.len());
    let mut in_break = false;
    for c in text.chars() {
        if is_break(c) {
            if !in_break && !flat.ends_with(' ') {
                flat.push(' ');
            }
            in_break = true;
        } else {
            if in_break && c == ' ' && flat.ends_with(' ') {
                continue;
            }
            in_break = false;
            flat.push(c);
        }
    }
    Cow::Owned(flat.trim_end().to_string())
}

/// A progress checkpoint's task id and state, refused when too big.
pub fn task(task_id: &str, state: &serde_json::Value) -> Result<(), String> {
    let chars = task_id.chars().count();
    if chars > MAX_TASK_ID_CHARS {
        return Err(format!(
            "Task id is {chars} characters; the limit is {MAX_TASK_ID_CHARS}."
        ));
    }
    let bytes = state.to_string().len();
    if bytes > MAX_PROGRESS_BYTES {
        return Err(format!(
            "Progress state for task '{task_id}' is {bytes} bytes as JSON; the limit is {MAX_PROGRESS_BYTES}. Keep a checkpoint to what resuming needs."
        ));
    }
    Ok(())
}

/// Is `text` usable as a Claude Code session id (bounded, printable ASCII)?
pub fn is_claude_session_id(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_CLAUDE_SESSION_ID
        && text.bytes().all(|b| b.is_ascii_graphic())
}

/// A client-supplied text as a log line may repeat it: cut with an ellipsis past a
/// few hundred characters, so a flood of huge ids cannot flood the log too.
pub fn for_log(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(LOG_CHARS) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => Cow::Owned(format!(
            "{}… ({} characters)",
            &text[..cut],
            text.chars().count()
        )),
    }
}

/// The most words a new node id may have (since-0.9.30.md §5): an id names the
/// subject in three to five; the claim belongs in the gist.
pub const MAX_ID_WORDS: usize = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gists_are_one_bounded_line() {
        assert_eq!(gist("a\nb").as_deref(), Ok("a b"));
        assert_eq!(gist("a\r\n\r\n  b\n").as_deref(), Ok("a b"));
        assert_eq!(gist("plain").as_deref(), Ok("plain"));
        assert!(gist(" \n\t ").is_err());
        assert!(gist("").is_err());
        assert!(gist(&"x".repeat(MAX_GIST_CHARS)).is_ok());
        let refused = gist(&"é".repeat(MAX_GIST_CHARS + 1)).expect_err("too long");
        assert!(refused.starts_with("Gist is 1001 characters; the limit is 1000."));
    }

    #[test]
    fn notes_and_touches_are_bounded_per_item_and_in_number() {
        assert_eq!(notes(vec!["a\nb".into()]), Ok(vec!["a b".to_string()]));
        let many = notes(vec![String::new(); MAX_NOTES + 1]).expect_err("too many");
        assert_eq!(
            many,
            "Too many notes: 51 given, at most 50 are kept per node or edge."
        );
        let long = touches(vec!["ok".into(), "t".repeat(MAX_TOUCH_CHARS + 1)]).expect_err("long");
        assert_eq!(long, "Touch 2 is 513 characters; the limit is 512.");
        assert!(touches(vec!["src/lib.rs".into(); MAX_TOUCHES]).is_ok());
    }

    #[test]
    fn log_copies_are_cut() {
        assert_eq!(for_log("short"), "short");
        let long = "a".repeat(10_000);
        let cut = for_log(&long);
        assert!(
            cut.len() < 300 && cut.ends_with("… (10000 characters)"),
            "{cut}"
        );
    }

    #[test]
    fn claude_session_ids_are_bounded_printable_ascii() {
        assert!(is_claude_session_id("0b6f1c1e-6c1a-4b8e-9a57-1f2d3c4b5a69"));
        assert!(is_claude_session_id("cc-main-1"));
        assert!(!is_claude_session_id(""));
        assert!(!is_claude_session_id("has space"));
        assert!(!is_claude_session_id(
            &"x".repeat(MAX_CLAUDE_SESSION_ID + 1)
        ));
    }
}
