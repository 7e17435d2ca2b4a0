//! Replies longer than a client keeps whole, in parts (since-0.9.30.md §6): sized in
//! the client's own unit, cut at line ends, each part but the last ending with how to
//! fetch the next (`kg_read(session_id, more=true)`).

use crate::wording;

/// Who is reading, as far as the reply's size goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Client {
    /// Claude Code, and any MCP client that is not Codex: sizes in UTF-16 code units.
    #[default]
    ClaudeCode,
    /// OpenAI's Codex CLI: sizes in UTF-8 bytes.
    Codex,
}

impl Client {
    /// The client an MCP `User-Agent` names: `codex…` (any case) is Codex, anything
    /// else (or none) is treated as Claude Code.
    pub fn from_user_agent(agent: Option<&str>) -> Client {
        match agent {
            Some(a) if a.trim_start().to_ascii_lowercase().starts_with("codex") => Client::Codex,
            _ => Client::ClaudeCode,
        }
    }

    /// The client a hook's transcript names: Codex keeps its sessions as
    /// `rollout-*.jsonl` files under its home (`~/.codex/sessions/…`); anything else
    /// is Claude Code's.
    pub fn from_transcript(path: Option<&str>) -> Client {
        let Some(path) = path.filter(|p| !p.is_empty()) else {
            return Client::ClaudeCode;
        };
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        if name.starts_with("rollout-") || path.contains("/.codex/") || path.contains("\\.codex\\")
        {
            Client::Codex
        } else {
            Client::ClaudeCode
        }
    }

    /// The preload's budget for this client, in its unit, from the configured one:
    /// Codex reads a tenth less (the reference gives it 9,000 bytes beside 10,000).
    pub fn preload_budget(self, configured: usize) -> usize {
        match self {
            Client::ClaudeCode => configured,
            Client::Codex => configured / 10 * 9,
        }
    }

    /// The unit it measures text in.
    pub fn unit(self) -> Unit {
        match self {
            Client::ClaudeCode => Unit::Utf16,
            Client::Codex => Unit::Bytes,
        }
    }

    /// The longest tool reply it keeps whole, in its unit.
    pub fn reply_limit(self) -> usize {
        match self {
            Client::ClaudeCode => 45_000,
            Client::Codex => 36_000,
        }
    }
}

/// A way of measuring text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Unicode characters (what the budgets of the reference count).
    Chars,
    /// UTF-16 code units (JavaScript's `length`: Claude Code).
    Utf16,
    /// UTF-8 bytes (Codex).
    Bytes,
}

impl Unit {
    /// The length of `text` in this unit.
    pub fn len(self, text: &str) -> usize {
        match self {
            Unit::Chars => crate::model::char_len(text),
            // A character takes two code units when its UTF-8 takes four bytes, else
            // one: count lead bytes, and four-byte leads again (a byte loop the
            // compiler vectorises; replies are tens of kilobytes).
            Unit::Utf16 => text
                .bytes()
                .map(|b| usize::from(b & 0xC0 != 0x80) + usize::from(b >= 0xF0))
                .sum(),
            Unit::Bytes => text.len(),
        }
    }
}

/// Room kept in each part for its footer.
pub const FOOTER_ROOM: usize = 300;

/// `text` cut into parts of at most `limit − 300` units, at line ends (the newline at a
/// cut dropped); a line longer than that is cut at the longest prefix that fits. One
/// part when it fits whole. Footers are not added here.
pub fn split_parts(text: String, unit: Unit, limit: usize) -> Vec<String> {
    // No unit counts more than UTF-8's bytes.
    if text.len() <= limit || unit.len(&text) <= limit {
        return vec![text];
    }
    let room = limit.saturating_sub(FOOTER_ROOM).max(1);
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut used = 0;
    for line in text.split('\n') {
        let mut line = line;
        loop {
            let need = unit.len(line) + usize::from(!part.is_empty());
            if used + need <= room {
                if !part.is_empty() {
                    part.push('\n');
                }
                part.push_str(line);
                used += need;
                break;
            }
            if !part.is_empty() {
                parts.push(std::mem::take(&mut part));
                used = 0;
                continue;
            }
            // A line longer than a whole part: its longest prefix that fits.
            let mut cut = 0;
            let mut size = 0;
            for (at, c) in line.char_indices() {
                let w = unit.len(c.encode_utf8(&mut [0; 4]));
                if size + w > room {
                    break;
                }
                size += w;
                cut = at + c.len_utf8();
            }
            let cut = cut.max(line.chars().next().map_or(0, char::len_utf8));
            parts.push(line[..cut].to_string());
            line = &line[cut..];
            if line.is_empty() {
                break;
            }
        }
    }
    if !part.is_empty() || parts.is_empty() {
        parts.push(part);
    }
    parts
}

/// The parts of a reply with their footers: every part but the last says which part it
/// is, that the reply goes on, and the call that fetches the next.
pub fn with_footers(parts: Vec<String>, sid: &str) -> Vec<String> {
    let total = parts.len();
    parts
        .into_iter()
        .enumerate()
        .map(|(i, mut text)| {
            if i + 1 < total {
                text.push_str("\n\n");
                text.push_str(&wording::part_footer(i + 1, total, sid));
            }
            text
        })
        .collect()
}

/// The node ids `text` shows on a line of their own: `  <id>: `, `  <id> (` (an
/// active gist, a preloaded or locked one) or a node block `▸ <id>`.
pub fn ids_shown_in(text: &str, ids: &[String]) -> Vec<String> {
    ids.iter()
        .filter(|id| {
            text.contains(&format!("\n  {id}: "))
                || text.contains(&format!("\n  {id} ("))
                || text.starts_with(&format!("  {id}: "))
                || text.contains(&format!("▸ {id} "))
                || text.contains(&format!("▸ {id}:"))
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_told_apart_by_their_user_agent() {
        assert_eq!(
            Client::from_user_agent(Some("Codex/0.3 (linux)")),
            Client::Codex
        );
        assert_eq!(
            Client::from_user_agent(Some("codex_cli_rs/1.0")),
            Client::Codex
        );
        for (path, client) in [
            (
                Some("/home/u/.codex/sessions/2026/12/05/rollout-2026-x.jsonl"),
                Client::Codex,
            ),
            (Some("/elsewhere/rollout-1.jsonl"), Client::Codex),
            (
                Some("/home/u/.claude/projects/-p/0b1e.jsonl"),
                Client::ClaudeCode,
            ),
            (Some(""), Client::ClaudeCode),
            (None, Client::ClaudeCode),
        ] {
            assert_eq!(Client::from_transcript(path), client, "{path:?}");
        }
        assert_eq!(Client::Codex.preload_budget(10_000), 9_000);
        assert_eq!(
            Client::from_user_agent(Some("claude-code/2.0")),
            Client::ClaudeCode
        );
        assert_eq!(Client::from_user_agent(None), Client::ClaudeCode);
    }

    #[test]
    fn units_count_what_the_clients_count() {
        let text = "aé😀";
        assert_eq!(Unit::Chars.len(text), 3);
        assert_eq!(Unit::Utf16.len(text), 4);
        assert_eq!(Unit::Bytes.len(text), 1 + 2 + 4);
    }

    #[test]
    fn utf16_length_is_what_javascript_counts() {
        for text in [
            "",
            "plain",
            "ж→ü",
            "emoji 😀 and 𝄞 too",
            "\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}",
        ] {
            let expected: usize = text.chars().map(char::len_utf16).sum();
            assert_eq!(Unit::Utf16.len(text), expected, "{text:?}");
        }
    }

    #[test]
    fn parts_cut_at_line_ends_and_lose_nothing() {
        let lines: Vec<String> = (0..400)
            .map(|i| format!("line {i:03} {}", "ж".repeat(i % 40)))
            .collect();
        let text = lines.join("\n");
        for unit in [Unit::Utf16, Unit::Bytes] {
            let parts = split_parts(text.clone(), unit, 2_000);
            assert!(parts.len() > 2);
            assert!(parts.iter().all(|p| unit.len(p) <= 2_000 - FOOTER_ROOM));
            assert_eq!(parts.join("\n"), text, "nothing repeated or lost");
        }
        // A line longer than a part is cut inside, never lost.
        let long = "x".repeat(5_000);
        let parts = split_parts(long.clone(), Unit::Bytes, 1_300);
        assert_eq!(parts.concat(), long);
        assert!(parts.iter().all(|p| p.len() <= 1_000));
        assert_eq!(split_parts("short".into(), Unit::Utf16, 45_000), ["short"]);
    }
}
