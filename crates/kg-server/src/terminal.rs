//! Text from files and from the memory, made safe to print to a terminal.
//!
//! A gist, an id, a file name or a remote's message may carry escape sequences: one can
//! move the cursor and erase the line above (so an import preview shows something
//! other than what will be written), set the clipboard (OSC 52) or the window title,
//! or reorder what is shown (right-to-left overrides). Every command-line output that
//! shows such text passes it through [`safe`] (or [`safe_line`] for one line), which
//! writes each control character as a visible escape: `\u{1b}`.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is: C0 controls but line feed and tab,
/// DEL, C1 controls (an 8-bit CSI is one), and the characters that reorder or hide
/// text (bidirectional overrides and isolates, the line and paragraph separators).
fn unsafe_char(c: char, one_line: bool) -> bool {
    match c {
        '\n' | '\t' => one_line,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn neutralised(text: &str, one_line: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| unsafe_char(c, one_line)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c, one_line) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character but line feed and tab written as a visible
/// escape (`\u{1b}`).
pub fn safe(text: &str) -> Cow<'_, str> {
    neutralised(text, false)
}

/// [`safe`], for text that must stay on one line: line feeds and tabs are escaped too.
pub fn safe_line(text: &str) -> Cow<'_, str> {
    neutralised(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_become_visible_and_plain_text_is_untouched() {
        assert!(matches!(safe("plain text, ünïcode"), Cow::Borrowed(_)));
        assert_eq!(safe("a\u{1b}[2K\u{1b}[1Ab"), "a\\u{1b}[2K\\u{1b}[1Ab");
        assert_eq!(
            safe("\u{1b}]52;c;aGVsbG8=\u{7}"),
            "\\u{1b}]52;c;aGVsbG8=\\u{7}"
        );
        assert_eq!(safe("x\u{9b}31m"), "x\\u{9b}31m");
        assert_eq!(safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(safe("over\rwrite"), "over\\u{d}write");
        assert_eq!(safe("two\nlines"), "two\nlines");
        assert_eq!(safe_line("two\nlines"), "two\\u{a}lines");
    }
}
