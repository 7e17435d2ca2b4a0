//! Turning another tool's names and sentences into what a node holds: ids that follow
//! the identifier rules, a one-line gist within the scan limit, and notes within the
//! store's bounds.

use kg_core::{GIST_SCAN_LIMIT, MAX_NOTE_CHARS, MAX_NOTES};
use unicode_normalization::UnicodeNormalization;

/// Longest id made from a bullet's words: long enough to say what it is about, short
/// enough to read in a render line.
pub const BULLET_ID_CHARS: usize = 48;
/// Words that do not end an id cut short ("…-computed-in" reads as a fragment).
const DANGLING_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "of", "on", "or",
    "the", "to", "with",
];

/// The id a bullet or heading gets: its words as a [`slug`] of at most
/// [`BULLET_ID_CHARS`] characters and `words` words (the id length rule allows
/// `kg_core::MAX_ID_WORDS` for a new node), without a function word left dangling
/// where it was cut.
pub fn bullet_id(text: &str, words: usize) -> String {
    let slug = slug(text, BULLET_ID_CHARS);
    let Some((cut, _)) = slug.match_indices('-').nth(words.saturating_sub(1)) else {
        return slug;
    };
    let mut kept: Vec<&str> = slug[..cut].split('-').collect();
    while kept.len() > 1 && kept.last().is_some_and(|w| DANGLING_WORDS.contains(w)) {
        kept.pop();
    }
    kept.join("-")
}

/// Longest node id the identifier rules allow.
pub const NODE_ID_CHARS: usize = 128;
/// Longest edge label the identifier rules allow.
pub const REL_CHARS: usize = 64;
/// What joins texts packed into one note when a node would otherwise hold too many.
const PACK_SEPARATOR: &str = " · ";

/// `text` as a kebab-case identifier of at most `max` characters: ASCII letters and
/// digits lowercased, accents folded away ("Zürich" → "zurich"), every other run of
/// characters one `-`. Empty when `text` holds no letter or digit that folds to ASCII.
/// The result always passes the node id and edge label rules.
pub fn slug(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in text.nfd() {
        let folded: &str = match c {
            'ß' => "ss",
            'æ' | 'Æ' => "ae",
            'œ' | 'Œ' => "oe",
            'ø' | 'Ø' => "o",
            'ł' | 'Ł' => "l",
            'đ' | 'Đ' | 'ð' | 'Ð' => "d",
            'þ' | 'Þ' => "th",
            _ if c.is_ascii_alphanumeric() => {
                if gap && !out.is_empty() {
                    out.push('-');
                }
                gap = false;
                out.push(c.to_ascii_lowercase());
                continue;
            }
            // Combining marks left by the decomposition belong to the letter before;
            // an apostrophe joins a word ("pnpm's" → "pnpms"), it does not split it.
            _ if is_combining_mark(c) || matches!(c, '\'' | '’') => continue,
            _ => {
                gap = true;
                continue;
            }
        };
        if gap && !out.is_empty() {
            out.push('-');
        }
        gap = false;
        out.push_str(folded);
    }
    cut_at_dash(out, max)
}

/// The combining diacritical marks NFD splits off Latin, Greek and Cyrillic letters.
fn is_combining_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// At most `max` characters of a slug, cut after a whole word when one fits.
fn cut_at_dash(slug: String, max: usize) -> String {
    if slug.len() <= max {
        return slug;
    }
    // A slug is ASCII, so byte positions are character positions.
    let head = &slug[..max];
    let cut = match head.rfind('-') {
        Some(i) if i > 0 => &head[..i],
        _ => head,
    };
    cut.trim_end_matches('-').to_string()
}

/// Runs of whitespace (line breaks included) as single spaces, trimmed: gists and notes
/// are one line each.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A gist from `text`: one line, at most [`GIST_SCAN_LIMIT`] characters, cut after a
/// whole word with `…` when longer. The second value says whether it was cut (the
/// whole text then belongs in the notes).
pub fn headline(text: &str) -> (String, bool) {
    let flat = one_line(text);
    if flat.chars().count() <= GIST_SCAN_LIMIT {
        return (flat, false);
    }
    let room = GIST_SCAN_LIMIT - 1;
    let head: String = flat.chars().take(room).collect();
    let cut = match head.rfind(' ') {
        // Keep most of the room: a cut far back would throw a good half away.
        Some(i) if head[..i].chars().count() > room / 2 => &head[..i],
        _ => head.as_str(),
    };
    (format!("{}…", cut.trim_end()), true)
}

/// `texts` as a node's notes with room for `reserved` more: each one line; a text
/// longer than a note may be is split into note-sized pieces; when there are more than
/// fit, neighbours are packed into shared notes (joined by ` · `). `Err` carries the
/// characters that could not be made to fit.
pub fn fit_notes(texts: &[String], reserved: usize) -> Result<Vec<String>, usize> {
    let room = MAX_NOTES.saturating_sub(reserved);
    let mut pieces = Vec::new();
    for text in texts {
        let flat = one_line(text);
        if flat.is_empty() {
            continue;
        }
        let chars: Vec<char> = flat.chars().collect();
        pieces.extend(
            chars
                .chunks(MAX_NOTE_CHARS)
                .map(|chunk| chunk.iter().collect::<String>()),
        );
    }
    if pieces.len() <= room {
        return Ok(pieces);
    }
    let mut packed: Vec<String> = Vec::new();
    for piece in pieces {
        match packed.last_mut() {
            Some(last)
                if last.chars().count()
                    + PACK_SEPARATOR.chars().count()
                    + piece.chars().count()
                    <= MAX_NOTE_CHARS =>
            {
                last.push_str(PACK_SEPARATOR);
                last.push_str(&piece);
            }
            _ => packed.push(piece),
        }
    }
    if packed.len() <= room {
        Ok(packed)
    } else {
        Err(packed.iter().map(|n| n.chars().count()).sum())
    }
}

/// `text` quoted for a message, cut to a readable length.
pub fn quoted(text: &str) -> String {
    const SHOWN: usize = 60;
    let flat = one_line(text);
    if flat.chars().count() <= SHOWN {
        format!("\"{flat}\"")
    } else {
        let head: String = flat.chars().take(SHOWN - 1).collect();
        format!("\"{head}…\"")
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn bullet_ids_keep_within_the_id_length_rule() {
        let max = kg_core::MAX_ID_WORDS;
        assert_eq!(
            bullet_id(
                "pnpm test runs the unit tests; pnpm test:e2e the browser ones",
                max
            ),
            "pnpm-test-runs-the-unit-tests"
        );
        assert_eq!(
            bullet_id("Invoice totals are computed in cents (integers)", 5),
            "invoice-totals-are-computed"
        );
        assert_eq!(bullet_id("Short one", max), "short-one");
        assert_eq!(
            kg_core::IdShape::of(&bullet_id("a b c d e f g h", max)).words,
            max
        );
    }

    use super::*;
    use kg_core::{IdentKind, validate_ident};

    #[test]
    fn slugs_are_kebab_case_ascii_and_pass_the_identifier_rules() {
        for (name, want) in [
            ("John_Smith", "john-smith"),
            ("Zürich Office", "zurich-office"),
            ("  Straße & Café ", "strasse-cafe"),
            ("Node.js", "node-js"),
            ("v2 API (beta)", "v2-api-beta"),
            ("the lockfile is pnpm's", "the-lockfile-is-pnpms"),
            ("东京", ""),
            ("🎉", ""),
        ] {
            let got = slug(name, NODE_ID_CHARS);
            assert_eq!(got, want, "{name}");
            if !got.is_empty() {
                validate_ident(IdentKind::NodeId, &got).expect("a valid id");
                validate_ident(IdentKind::Rel, &got).expect("a valid rel");
            }
        }
    }

    #[test]
    fn long_slugs_are_cut_after_a_whole_word() {
        let long = "use pnpm not npm in this repository because the lockfile is pnpm";
        let got = slug(long, BULLET_ID_CHARS);
        assert!(got.len() <= BULLET_ID_CHARS, "{got}");
        assert_eq!(got, "use-pnpm-not-npm-in-this-repository-because-the");
        assert_eq!(slug(&"a".repeat(200), NODE_ID_CHARS).len(), NODE_ID_CHARS);
    }

    #[test]
    fn headlines_stay_within_the_scan_limit() {
        assert_eq!(
            headline("Speaks\n fluent   Spanish"),
            ("Speaks fluent Spanish".into(), false)
        );
        let long = "word ".repeat(100);
        let (gist, cut) = headline(&long);
        assert!(cut);
        assert!(gist.chars().count() <= GIST_SCAN_LIMIT, "{}", gist.len());
        assert!(gist.ends_with("word…"), "{gist}");
    }

    #[test]
    fn notes_are_split_and_packed_to_fit_the_store() {
        let long = "x".repeat(MAX_NOTE_CHARS + 10);
        let notes = fit_notes(&[long], 1).expect("fits");
        assert_eq!(
            notes.iter().map(|n| n.chars().count()).collect::<Vec<_>>(),
            [MAX_NOTE_CHARS, 10]
        );
        let many: Vec<String> = (0..120).map(|i| format!("fact {i}")).collect();
        let notes = fit_notes(&many, 1).expect("packed");
        assert!(notes.len() < MAX_NOTES);
        assert!(notes[0].starts_with("fact 0 · fact 1 · "), "{}", notes[0]);
        let huge: Vec<String> = (0..MAX_NOTES).map(|_| "y".repeat(MAX_NOTE_CHARS)).collect();
        assert_eq!(
            fit_notes(&huge, 1),
            Err(MAX_NOTES * MAX_NOTE_CHARS),
            "more than a node can hold"
        );
    }
}
