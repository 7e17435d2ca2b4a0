//! A menu item is one line, and a tray menu is as wide as its widest item: a long
//! message (why the server did not start and what to do) is split over several items.

/// The widest a menu line may be, in characters.
pub const MENU_WIDTH: usize = 60;

/// `text` in lines of at most `width` characters, broken between words. A word longer
/// than a line (a path) is broken after a `/` or `\` where one falls in the second half
/// of the line, else at the width.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let used = line.chars().count();
        if used > 0 && used + 1 + word.chars().count() <= width {
            line.push(' ');
            line.push_str(word);
            continue;
        }
        if used > 0 {
            lines.push(std::mem::take(&mut line));
        }
        let mut rest = word;
        while rest.chars().count() > width {
            let cut = break_in(rest, width);
            lines.push(rest[..cut].to_string());
            rest = &rest[cut..];
        }
        line = rest.to_string();
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Where to break a word longer than `width` characters (a byte index, after at least
/// one character).
fn break_in(word: &str, width: usize) -> usize {
    let end = word
        .char_indices()
        .nth(width)
        .map_or(word.len(), |(i, _)| i);
    match word[..end].rfind(['/', '\\']) {
        Some(i) if i + 1 > end / 2 => i + 1,
        _ => end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_line() {
        assert_eq!(
            wrap("KG Memory serving on http://127.0.0.1:8765", 60),
            ["KG Memory serving on http://127.0.0.1:8765"]
        );
        assert!(wrap("", 60).is_empty());
        assert!(wrap("   ", 60).is_empty());
    }

    #[test]
    fn long_text_breaks_between_words_within_the_width() {
        let text = "KG Memory server not running: port 8765 on 127.0.0.1 is used by another \
                    program, not a KG Memory server. Stop that program, or set KG_HTTP_PORT \
                    to a free port, then start KG Memory again.";
        let lines = wrap(text, 60);
        assert_eq!(
            lines,
            [
                "KG Memory server not running: port 8765 on 127.0.0.1 is used",
                "by another program, not a KG Memory server. Stop that",
                "program, or set KG_HTTP_PORT to a free port, then start KG",
                "Memory again.",
            ]
        );
        for line in &lines {
            assert!(line.chars().count() <= 60, "{line:?}");
            assert_eq!(line.trim(), line);
        }
        // Nothing is lost or reordered.
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(lines.join(" ").split(' ').collect::<Vec<_>>(), words);
    }

    #[test]
    fn a_word_longer_than_a_line_breaks_after_a_slash_or_at_the_width() {
        let path = "/home/someone/projects/a-rather-long-project-name/storage/graph.json";
        let lines = wrap(&format!("cannot read {path}: denied"), 30);
        assert_eq!(
            lines,
            [
                "cannot read",
                "/home/someone/projects/",
                "a-rather-long-project-name/",
                "storage/graph.json: denied",
            ]
        );
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }

    #[test]
    fn width_counts_characters_not_bytes() {
        let lines = wrap("ééééé ééééé ééééé", 11);
        assert_eq!(lines, ["ééééé ééééé", "ééééé"]);
        assert_eq!(wrap("éééé", 3), ["ééé", "é"]);
        // A width of zero still makes progress.
        assert_eq!(wrap("ab", 0), ["a", "b"]);
    }
}
