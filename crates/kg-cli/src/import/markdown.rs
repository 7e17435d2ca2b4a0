//! Claude Code's memory files: `CLAUDE.md` (project, user or local instructions) and
//! auto memory's `MEMORY.md`. Claude Code's documentation asks for one memory per
//! bullet, grouped under descriptive headings, so:
//!
//! - each top-level bullet (`-`, `*`, `+`, `1.`) becomes a node: its text is the gist
//!   (cut to the scan limit, the whole text then kept in the notes), its id the first
//!   words as kebab-case;
//! - nested bullets and indented lines under it become its notes;
//! - a heading with bullets of its own becomes a topic node, and each of its bullets an
//!   edge `bullet --part-of--> topic` (a topic under another topic is part of it too), so
//!   nothing arrives unconnected;
//! - prose, tables, code blocks, front matter and `@path` imports are not memories in
//!   this sense: they are skipped, and the preview says which lines.

use super::text::{bullet_id, fit_notes, headline, one_line, quoted};
use super::{NewEdge, NewNode, Parsed, Problem, Skip};
use std::collections::{HashMap, HashSet};

/// The label of the edges from a bullet to its heading's topic node.
pub const PART_OF: &str = "part-of";

/// Parse the whole file, or say everything that is wrong with it.
pub fn parse(text: &str, file_name: &str) -> Result<Parsed, Vec<Problem>> {
    let mut reader = Reader::new(file_name);
    let mut lines = text.split('\n').enumerate().peekable();
    // YAML front matter (auto memory's topic files carry it) is not a memory.
    if text.starts_with("---") {
        let mut closed = None;
        for (index, raw) in text.split('\n').enumerate().skip(1) {
            if matches!(raw.trim_end(), "---" | "...") {
                closed = Some(index);
                break;
            }
        }
        if let Some(end) = closed {
            reader.skip_range(1, end + 1, "front matter");
            for _ in 0..=end {
                lines.next();
            }
        }
    }
    for (index, raw) in lines {
        reader.line(index + 1, raw.strip_suffix('\r').unwrap_or(raw));
    }
    reader.finish()
}

struct Heading {
    level: usize,
    text: String,
    line: usize,
    /// The topic node, once one of the heading's own bullets needed it.
    topic: Option<String>,
}

/// A top-level bullet being read (its nested lines may follow).
struct Bullet {
    line: usize,
    indent: usize,
    text: String,
    notes: Vec<String>,
}

struct Reader<'a> {
    file_name: &'a str,
    parsed: Parsed,
    problems: Vec<Problem>,
    headings: Vec<Heading>,
    bullet: Option<Bullet>,
    /// The fence that opened the code block being skipped: its character and length.
    fence: Option<(char, usize, usize)>,
    in_comment: Option<usize>,
    previous_blank: bool,
    /// Ids given out so far (nodes of this file), for unique ids.
    used: HashSet<String>,
    /// Topic id by heading text: a heading repeated later reuses its topic.
    topics: HashMap<String, String>,
    /// Bullet text → the line it was first seen on.
    texts: HashMap<String, usize>,
    /// Lines skipped for a reason, coalesced into ranges at the end.
    skipped_lines: Vec<(usize, &'static str)>,
}

impl<'a> Reader<'a> {
    fn new(file_name: &'a str) -> Self {
        Reader {
            file_name,
            parsed: Parsed::default(),
            problems: Vec::new(),
            headings: Vec::new(),
            bullet: None,
            fence: None,
            in_comment: None,
            previous_blank: true,
            used: HashSet::new(),
            topics: HashMap::new(),
            texts: HashMap::new(),
            skipped_lines: Vec::new(),
        }
    }

    fn skip_range(&mut self, first: usize, last: usize, why: &'static str) {
        self.skipped_lines.extend((first..=last).map(|l| (l, why)));
    }

    fn line(&mut self, line: usize, raw: &str) {
        let trimmed = raw.trim();
        if let Some((c, len, opened)) = self.fence {
            if is_fence(trimmed).is_some_and(|(c2, len2)| c2 == c && len2 >= len)
                && trimmed.chars().all(|x| x == c)
            {
                self.fence = None;
                self.skip_range(opened, line, "a code block");
            }
            return;
        }
        if let Some(opened) = self.in_comment {
            if trimmed.contains("-->") {
                self.in_comment = None;
                self.skip_range(opened, line, "an HTML comment");
            }
            return;
        }
        if trimmed.is_empty() {
            self.previous_blank = true;
            return;
        }
        let blank_before = std::mem::replace(&mut self.previous_blank, false);
        if let Some(fence) = is_fence(trimmed) {
            self.close_bullet();
            self.fence = Some((fence.0, fence.1, line));
            return;
        }
        if trimmed.starts_with("<!--") {
            if trimmed.contains("-->") {
                self.skipped_lines.push((line, "an HTML comment"));
            } else {
                self.in_comment = Some(line);
            }
            return;
        }
        if let Some((level, text)) = heading(trimmed) {
            self.close_bullet();
            while self.headings.last().is_some_and(|h| h.level >= level) {
                self.headings.pop();
            }
            self.headings.push(Heading {
                level,
                text,
                line,
                topic: None,
            });
            return;
        }
        if is_thematic_break(trimmed) {
            self.close_bullet();
            return;
        }
        let indent = indent_of(raw);
        if let Some(item) = bullet_text(raw.trim_start()) {
            match &mut self.bullet {
                Some(open) if indent > open.indent => open.notes.push(one_line(item)),
                _ => {
                    self.close_bullet();
                    self.bullet = Some(Bullet {
                        line,
                        indent,
                        text: one_line(item),
                        notes: Vec::new(),
                    });
                }
            }
            return;
        }
        // A line that is not a bullet: part of the open bullet when indented under it
        // or (markdown's lazy continuation) right after it; otherwise prose.
        match &mut self.bullet {
            Some(open) if indent > open.indent || !blank_before => {
                let target = open.notes.last_mut().unwrap_or(&mut open.text);
                target.push(' ');
                target.push_str(&one_line(trimmed));
            }
            _ => {
                self.close_bullet();
                let why = if is_import(trimmed) {
                    "an @import of another file (import that file on its own)"
                } else if trimmed.starts_with('|') {
                    "a table"
                } else {
                    "text outside a bullet list"
                };
                self.skipped_lines.push((line, why));
            }
        }
    }

    /// Turn the open bullet into a node (and its topic, and their edges).
    fn close_bullet(&mut self) {
        let Some(bullet) = self.bullet.take() else {
            return;
        };
        let line = bullet.line;
        let text = strip_checkbox(&bullet.text).to_string();
        if text.is_empty() {
            self.parsed.skipped.push(Skip {
                line,
                reason: "an empty bullet".into(),
            });
            return;
        }
        if is_import(&text) {
            self.skipped_lines.push((
                line,
                "an @import of another file (import that file on its own)",
            ));
            return;
        }
        if let Some(first) = self.texts.get(&text) {
            self.parsed.skipped.push(Skip {
                line,
                reason: format!("the same text as line {first}"),
            });
            return;
        }
        self.texts.insert(text.clone(), line);
        for target in linked_files(&text) {
            self.parsed.notices.push(Skip {
                line,
                reason: format!(
                    "links to {target}, which is not read; import that file on its own to bring its content"
                ),
            });
        }

        let (gist, cut) = headline(&text);
        let mut texts = Vec::new();
        if cut {
            texts.push(text.clone());
        }
        texts.extend(bullet.notes);
        let section = self.headings.last().map(|h| h.text.clone());
        let mut provenance = format!("Imported from {} line {line}", self.file_name);
        if let Some(section) = &section {
            provenance.push_str(&format!(", section {}", quoted(section)));
        }
        provenance.push('.');
        let mut notes = match fit_notes(&texts, 1) {
            Ok(notes) => notes,
            Err(chars) => {
                self.problems.push(Problem::at(
                    line,
                    format!(
                        "this bullet and the lines under it hold {chars} characters, more than one node keeps ({} notes of {} characters); split it",
                        kg_core::MAX_NOTES,
                        kg_core::MAX_NOTE_CHARS
                    ),
                ));
                return;
            }
        };
        notes.push(provenance);
        // The topic first: a heading and its bullet may make the same id, and the
        // heading's keeps the plain one.
        let topic = self.topic_of_current_heading();
        let base = bullet_id(&link_text(&text), kg_core::MAX_ID_WORDS);
        let id = self.unique_id(base, line);
        self.parsed.nodes.push(NewNode {
            id: id.clone(),
            gist,
            notes,
            line,
            renamed_from: None,
        });
        if let Some(topic) = topic {
            self.parsed.edges.push(NewEdge {
                from: id,
                to: topic,
                rel: PART_OF.into(),
                line,
                outside: Vec::new(),
            });
        }
    }

    /// An id no other node of this file has: `base`, else `base-2`, `base-3`, …;
    /// a text without letters or digits gets one from the file's name and the line.
    fn unique_id(&mut self, base: String, line: usize) -> String {
        let base = if base.is_empty() {
            bullet_id(
                &format!("{} line {line}", self.file_name),
                kg_core::MAX_ID_WORDS,
            )
        } else {
            base
        };
        let mut id = base.clone();
        let mut n = 2;
        while self.used.contains(&id) {
            // The number is a word too: the base gives one up to stay within the id
            // length rule.
            let shorter = bullet_id(&base, kg_core::MAX_ID_WORDS - 1);
            id = format!("{shorter}-{n}");
            n += 1;
        }
        self.used.insert(id.clone());
        id
    }

    /// The topic node of the innermost heading, made on first use (with its edge to
    /// the nearest enclosing heading that has a topic).
    fn topic_of_current_heading(&mut self) -> Option<String> {
        let index = self.headings.len().checked_sub(1)?;
        if let Some(topic) = &self.headings[index].topic {
            return Some(topic.clone());
        }
        let (text, line) = (self.headings[index].text.clone(), self.headings[index].line);
        let key = one_line(&text).to_lowercase();
        if let Some(topic) = self.topics.get(&key) {
            let topic = topic.clone();
            self.headings[index].topic = Some(topic.clone());
            return Some(topic);
        }
        let base = bullet_id(&link_text(&text), kg_core::MAX_ID_WORDS);
        let base = if base.is_empty() {
            bullet_id(
                &format!("{} section {line}", self.file_name),
                kg_core::MAX_ID_WORDS,
            )
        } else {
            base
        };
        let id = self.unique_id(base, line);
        let (gist, _) = headline(&format!("{text} — section of {}", self.file_name));
        self.parsed.nodes.push(NewNode {
            id: id.clone(),
            gist,
            notes: vec![format!(
                "Imported from {} line {line}: the heading its bullets were under.",
                self.file_name
            )],
            line,
            renamed_from: None,
        });
        let parent = self.headings[..index]
            .iter()
            .rev()
            .find_map(|h| h.topic.clone());
        if let Some(parent) = parent {
            self.parsed.edges.push(NewEdge {
                from: id.clone(),
                to: parent,
                rel: PART_OF.into(),
                line,
                outside: Vec::new(),
            });
        }
        self.topics.insert(key, id.clone());
        self.headings[index].topic = Some(id.clone());
        Some(id)
    }

    fn finish(mut self) -> Result<Parsed, Vec<Problem>> {
        self.close_bullet();
        if let Some((_, _, opened)) = self.fence {
            self.skipped_lines.push((
                opened,
                "a code block that is never closed (to the end of the file)",
            ));
        }
        if let Some(opened) = self.in_comment {
            self.skipped_lines.push((
                opened,
                "an HTML comment that is never closed (to the end of the file)",
            ));
        }
        self.skipped_lines.sort_by_key(|(line, _)| *line);
        // Consecutive lines skipped for the same reason read as one range.
        let mut ranges: Vec<(usize, usize, &str)> = Vec::new();
        for (line, why) in self.skipped_lines {
            match ranges.last_mut() {
                Some((_, last, w)) if *w == why && (*last == line || *last + 1 == line) => {
                    *last = line;
                }
                _ => ranges.push((line, line, why)),
            }
        }
        for (first, last, why) in ranges {
            self.parsed.skipped.push(Skip {
                line: first,
                reason: if first == last {
                    why.to_string()
                } else {
                    format!("{why} (lines {first}-{last})")
                },
            });
        }
        self.parsed.skipped.sort_by_key(|s| s.line);
        if self.problems.is_empty() {
            Ok(self.parsed)
        } else {
            Err(self.problems)
        }
    }
}

/// Columns of leading whitespace, a tab counting four.
fn indent_of(raw: &str) -> usize {
    raw.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// `# Title` → (1, "Title"); closing `#`s dropped.
fn heading(trimmed: &str) -> Option<(usize, String)> {
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim();
    Some((level, text.to_string())).filter(|(_, t)| !t.is_empty())
}

/// A code fence: three or more backticks or tildes.
fn is_fence(trimmed: &str) -> Option<(char, usize)> {
    let c = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = trimmed.chars().take_while(|&x| x == c).count();
    (len >= 3).then_some((c, len))
}

/// `---`, `***`, `___` (spaces allowed between).
fn is_thematic_break(trimmed: &str) -> bool {
    let marks: Vec<char> = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
    marks.len() >= 3 && matches!(marks[0], '-' | '*' | '_') && marks.iter().all(|&c| c == marks[0])
}

/// The text of a list item (`- x`, `* x`, `+ x`, `1. x`, `1) x`), without its marker.
fn bullet_text(line: &str) -> Option<&str> {
    let after = if let Some(rest) = line.strip_prefix(['-', '*', '+']) {
        rest
    } else {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        line[digits..].strip_prefix(['.', ')'])?
    };
    if after.is_empty() {
        return Some("");
    }
    after.starts_with([' ', '\t']).then(|| after.trim())
}

/// A task list's `[ ]` / `[x]` is not part of what is remembered.
fn strip_checkbox(text: &str) -> &str {
    for mark in ["[ ] ", "[x] ", "[X] "] {
        if let Some(rest) = text.strip_prefix(mark) {
            return rest.trim_start();
        }
    }
    text
}

/// A line that only imports another file the way CLAUDE.md does (`@path/to/file`).
fn is_import(text: &str) -> bool {
    text.starts_with('@') && text.len() > 1 && !text.contains(char::is_whitespace)
}

/// Markdown links' text without their targets (`[Debugging](debugging.md)` →
/// `Debugging`), for ids.
fn link_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        out.push_str(&rest[..start]);
        match rest[start..].find(')') {
            Some(end) => rest = &rest[start + end + 1..],
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out.replace('[', "")
}

/// The local markdown files a text links to (`[x](debugging.md)`): auto memory's
/// MEMORY.md keeps details in such topic files.
fn linked_files(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        if target.ends_with(".md") && !target.contains("://") {
            out.push(target.to_string());
        }
        rest = &after[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Parsed {
        parse(text, "CLAUDE.md").expect("valid")
    }

    #[test]
    fn bullets_become_nodes_under_their_heading_topics() {
        let p = parsed(
            "# Project\n\nSome prose.\n\n## Code style\n- Use 2-space indentation\n- Prefer `const`\n  - not `let`\n  continued\n\n### Naming\n* Components in PascalCase\n",
        );
        let ids: Vec<_> = p.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "code-style",
                "use-2-space-indentation",
                "prefer-const",
                "naming",
                "components-in-pascalcase"
            ]
        );
        assert_eq!(p.nodes[0].gist, "Code style — section of CLAUDE.md");
        assert_eq!(p.nodes[2].gist, "Prefer `const`");
        assert_eq!(
            p.nodes[2].notes,
            [
                "not `let` continued",
                "Imported from CLAUDE.md line 7, section \"Code style\"."
            ]
        );
        let edges: Vec<_> = p
            .edges
            .iter()
            .map(|e| format!("{}->{}", e.from, e.to))
            .collect();
        assert_eq!(
            edges,
            [
                "use-2-space-indentation->code-style",
                "prefer-const->code-style",
                "naming->code-style",
                "components-in-pascalcase->naming"
            ]
        );
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].line, 3);
    }

    #[test]
    fn code_blocks_imports_front_matter_and_repeats_are_skipped() {
        let p = parsed(
            "---\nname: x\n---\n- One\n```sh\n- not a bullet\n```\n@docs/more.md\n- One\n- @~/.claude/mine.md\n- [Debugging](debugging.md) — how we debug\n-\n",
        );
        let ids: Vec<_> = p.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["one", "debugging-how-we-debug"]);
        let skipped: Vec<_> = p
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.line, s.reason))
            .collect();
        assert_eq!(
            skipped,
            [
                "1: front matter (lines 1-3)",
                "5: a code block (lines 5-7)",
                "8: an @import of another file (import that file on its own)",
                "9: the same text as line 4",
                "10: an @import of another file (import that file on its own)",
                "12: an empty bullet",
            ]
        );
        assert_eq!(p.notices.len(), 1);
        assert!(p.notices[0].reason.contains("debugging.md"));
    }

    #[test]
    fn ids_stay_unique_and_never_empty() {
        let p = parsed("- Use pnpm\n- Use pnpm!\n- 東京\n");
        let ids: Vec<_> = p.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["use-pnpm", "use-pnpm-2", "claude-md-line-3"]);
    }
}
