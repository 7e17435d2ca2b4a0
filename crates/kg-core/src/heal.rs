//! The gist healer (spec §2.7b), applied on every `put_node` and to every malformed gist at load.
//!
//! Agents sometimes leak tool-call markup into a gist: the gist ends with `</gist>` or
//! `</invoke>`, and the notes/touches meant for separate arguments follow it inline. The
//! healer cuts the gist at the first markup marker and, when the caller sent no notes or
//! touches, recovers them from the leaked JSON arrays.
//!
//! Every scan here is a single forward pass (no per-occurrence rescans, no regex), so
//! adversarial input such as hundreds of thousands of `<notes ` repetitions heals in
//! linear time. All markers are ASCII, so byte offsets found for them are char boundaries.

use serde_json::Value;

/// Result of healing one write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Healed {
    pub gist: String,
    pub notes: Option<Vec<String>>,
    pub touches: Option<Vec<String>>,
    pub changed: bool,
}

/// Markers whose earliest occurrence ends the real gist.
const CUT_MARKERS: [&str; 5] = ["</gist>", "<notes", "<parameter", "<invoke", "</invoke>"];

/// Parameter names whose leaked `<parameter name="...">` marks a gist as malformed.
const LEAKED_PARAMS: [&str; 3] = ["notes", "touches", "session_id"];

/// Longest run of non-`>` characters allowed between an opener's name and its `>`.
const MAX_OPENER_ATTRS: usize = 256;

/// Whether the gist carries leaked tool-call markup (as opposed to merely mentioning tags).
pub fn is_malformed(gist: &str) -> bool {
    if gist.contains("</gist>") || gist.contains("</invoke>") {
        return true;
    }
    // Each check skips a whitespace run that ends before the next `<`, so the runs after
    // distinct occurrences never overlap and every check stays linear overall.
    let invoke = gist.match_indices("<invoke").any(|(i, m)| {
        let rest = &gist[i + m.len()..];
        let ws = leading_ws_len(rest);
        ws > 0 && rest[ws..].starts_with("name=")
    });
    if invoke {
        return true;
    }
    let param = gist.match_indices("<parameter").any(|(i, m)| {
        let rest = &gist[i + m.len()..];
        let ws = leading_ws_len(rest);
        ws > 0
            && LEAKED_PARAMS
                .iter()
                .any(|p| quoted_name(&rest[ws..], p).is_some())
    });
    if param {
        return true;
    }
    gist.match_indices("<notes>").any(|(i, m)| {
        let rest = &gist[i + m.len()..];
        rest[leading_ws_len(rest)..].starts_with('[')
    })
}

/// Apply the healer to (gist, notes, touches) as a put_node receives them (None = argument absent).
pub fn heal(gist: &str, notes: Option<&[String]>, touches: Option<&[String]>) -> Healed {
    let unchanged = |gist: &str| Healed {
        gist: gist.to_owned(),
        notes: notes.map(<[String]>::to_vec),
        touches: touches.map(<[String]>::to_vec),
        changed: false,
    };
    if !is_malformed(gist) {
        return unchanged(gist);
    }
    // A malformed gist always contains a cut marker (each malformed pattern starts with one).
    let Some(cut) = CUT_MARKERS.iter().filter_map(|m| gist.find(m)).min() else {
        return unchanged(gist);
    };
    let (head, tail) = gist.split_at(cut);
    let new_gist = head.trim().to_owned();

    let new_notes = recover(notes, tail, "notes");
    let new_touches = recover(touches, tail, "touches");
    let changed =
        new_gist != gist || new_notes.as_deref() != notes || new_touches.as_deref() != touches;
    Healed {
        gist: new_gist,
        notes: new_notes,
        touches: new_touches,
        changed,
    }
}

/// The caller's list if non-empty; otherwise the list recovered from `tail`, if any;
/// otherwise the caller's (absent or empty) argument unchanged.
fn recover(given: Option<&[String]>, tail: &str, field: &str) -> Option<Vec<String>> {
    match given {
        Some(list) if !list.is_empty() => Some(list.to_vec()),
        _ => recover_list(tail, field).or_else(|| given.map(<[String]>::to_vec)),
    }
}

/// Find the first `field` opener in `tail` and parse the JSON array that follows it.
/// Only the first opener is tried: if its array is missing or invalid, nothing is recovered.
fn recover_list(tail: &str, field: &str) -> Option<Vec<String>> {
    let body_start = find_opener(tail, field)?;
    let after = &tail[body_start..];
    let open = after.find('[')?;
    let slice = bracketed_prefix(&after[open..])?;
    let Value::Array(items) = serde_json::from_str::<Value>(slice).ok()? else {
        return None;
    };
    let list: Vec<String> = items
        .into_iter()
        .map(|v| match v {
            Value::String(s) => s,
            // JSON text rather than Python repr: the spec's Note asks for it and no test pins it.
            other => other.to_string(),
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// Byte offset just past the `>` of the first opener for `field` in `s`: `<field` or
/// `<parameter` + whitespace + `name="field"`, immediately followed by whitespace or `>`,
/// then at most [`MAX_OPENER_ATTRS`] non-`>` characters, then `>`.
fn find_opener(s: &str, field: &str) -> Option<usize> {
    let tag = format!("<{field}");
    // The first `>` at or after the current candidate's name end, cached: candidates never
    // overlap (none contains a second `<`), so name ends only grow and the `>` search and
    // both char counters below only move forward.
    let mut next_gt: Option<usize> = None;
    let mut name_chars = CharCursor::new(s);
    let mut gt_chars = CharCursor::new(s);
    let mut from = 0;
    while let Some(off) = s[from..].find('<') {
        let start = from + off;
        from = start + 1;
        let rest = &s[start..];
        let name_end = if rest.starts_with(&tag) {
            start + tag.len()
        } else if let Some(after) = rest.strip_prefix("<parameter") {
            let ws = leading_ws_len(after);
            match quoted_name(&after[ws..], field) {
                Some(len) if ws > 0 => start + "<parameter".len() + ws + len,
                _ => continue,
            }
        } else {
            continue;
        };
        match s[name_end..].chars().next() {
            Some(c) if c == '>' || c.is_whitespace() => {}
            _ => continue,
        }
        let gt = match next_gt {
            Some(gt) if gt >= name_end => gt,
            // No `>` anywhere further on: no later candidate can close either.
            _ => name_end + s[name_end..].find('>')?,
        };
        next_gt = Some(gt);
        if gt_chars.chars_at(gt) - name_chars.chars_at(name_end) <= MAX_OPENER_ATTRS {
            return Some(gt + 1);
        }
    }
    None
}

/// Length of `name="field"` if `s` starts with it.
fn quoted_name(s: &str, field: &str) -> Option<usize> {
    let rest = s.strip_prefix("name=\"")?.strip_prefix(field)?;
    rest.starts_with('"')
        .then_some("name=\"".len() + field.len() + 1)
}

/// The prefix of `s` (which starts with `[`) up to its matching `]`, skipping JSON strings.
/// `None` if the brackets never balance.
fn bracketed_prefix(s: &str) -> Option<&str> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in s.as_bytes().iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' => depth += 1,
            b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(&s[..=i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Byte length of the leading (Unicode) whitespace of `s`.
fn leading_ws_len(s: &str) -> usize {
    s.len() - s.trim_start().len()
}

/// Converts byte offsets to char counts for monotonically increasing queries in one pass.
#[derive(Debug)]
struct CharCursor<'a> {
    s: &'a str,
    byte: usize,
    chars: usize,
}

impl<'a> CharCursor<'a> {
    fn new(s: &'a str) -> Self {
        CharCursor {
            s,
            byte: 0,
            chars: 0,
        }
    }

    /// Number of chars before byte offset `byte` (a char boundary, not below the last query).
    fn chars_at(&mut self, byte: usize) -> usize {
        debug_assert!(byte >= self.byte);
        self.chars += self.s[self.byte..byte].chars().count();
        self.byte = byte;
        self.chars
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Heal with no caller notes/touches, and check idempotence on the way.
    fn heal_bare(gist: &str) -> Healed {
        let h = heal(gist, None, None);
        assert_reheal_unchanged(&h);
        h
    }

    fn assert_reheal_unchanged(h: &Healed) {
        let again = heal(&h.gist, h.notes.as_deref(), h.touches.as_deref());
        assert!(!again.changed, "re-heal changed {h:?} into {again:?}");
        assert_eq!(again.gist, h.gist);
        assert_eq!(again.notes, h.notes);
        assert_eq!(again.touches, h.touches);
    }

    // §12.1 item 1
    #[test]
    fn clean_gist_passes_unchanged() {
        let notes = strings(&["n1"]);
        let touches = strings(&["src/a.rs"]);
        let gist = "A perfectly ordinary gist.";
        assert!(!is_malformed(gist));
        let h = heal(gist, Some(&notes), Some(&touches));
        assert_eq!(
            h,
            Healed {
                gist: gist.to_owned(),
                notes: Some(notes),
                touches: Some(touches),
                changed: false,
            }
        );
    }

    // §12.1 item 1
    #[test]
    fn mentions_are_not_malformed() {
        let notes = strings(&["keep me"]);
        for gist in [
            "The parser handles <invoke blocks",
            "Use <parameter name=...> for each argument",
            "We strip <notes tags on load",
            "Ordering: a < b and c > d",
            "Both <invoke and <parameter name=x> and <notes> without a list",
        ] {
            assert!(!is_malformed(gist), "{gist:?} flagged");
            let h = heal(gist, Some(&notes), None);
            assert_eq!(h.gist, gist);
            assert_eq!(h.notes, Some(notes.clone()));
            assert_eq!(h.touches, None);
            assert!(!h.changed);
        }
    }

    #[test]
    fn malformed_patterns() {
        for gist in [
            "x</gist>",
            "x</invoke>",
            "x<invoke name=\"kg\">",
            "x<invoke\n\tname=",
            "x<parameter name=\"notes\">",
            "x<parameter  name=\"touches\">",
            "x<parameter\nname=\"session_id\">",
            "x<notes>[",
            "x<notes> \n [",
        ] {
            assert!(is_malformed(gist), "{gist:?} not flagged");
        }
        for gist in [
            "x<invokename=",
            "x<parameter name=\"other\">",
            "x<parameter name=\"notesx\">",
            "x<parametername=\"notes\">",
            "x<notes >[",
            "x<notes>x[",
        ] {
            assert!(!is_malformed(gist), "{gist:?} flagged");
        }
    }

    // §12.1 item 2
    #[test]
    fn leaked_notes_and_touches_are_recovered() {
        let gist = "Real gist.</gist>\n<parameter name=\"notes\">[\"first\", \"second\"]</parameter>\n\
                    <parameter name=\"touches\">[\"a.py\"]</parameter>";
        let h = heal_bare(gist);
        assert_eq!(h.gist, "Real gist.");
        assert_eq!(h.notes, Some(strings(&["first", "second"])));
        assert_eq!(h.touches, Some(strings(&["a.py"])));
        assert!(h.changed);
    }

    // §12.1 item 3
    #[test]
    fn caller_notes_are_never_replaced() {
        let notes = strings(&["mine"]);
        let gist = "Real gist.</gist><parameter name=\"notes\">[\"leaked\"]</parameter>\
                    <parameter name=\"touches\">[\"b.py\"]</parameter>";
        let h = heal(gist, Some(&notes), None);
        assert_eq!(h.gist, "Real gist.");
        assert_eq!(h.notes, Some(notes));
        assert_eq!(h.touches, Some(strings(&["b.py"])));
        assert!(h.changed);
        assert_reheal_unchanged(&h);

        // Empty caller lists count as absent.
        let h = heal(gist, Some(&[]), Some(&[]));
        assert_eq!(h.notes, Some(strings(&["leaked"])));
        assert_eq!(h.touches, Some(strings(&["b.py"])));
    }

    // §12.1 item 4
    #[test]
    fn junk_after_notes_is_discarded() {
        let gist = "Gist.</gist><notes>[\"x\"]</notes></invoke>\n<invoke name=\"kg_put_node\">\
                    <parameter name=\"notes\">[\"y\"]</parameter></invoke>";
        let h = heal_bare(gist);
        assert_eq!(h.gist, "Gist.");
        assert_eq!(h.notes, Some(strings(&["x"])));
        assert_eq!(h.touches, None);
    }

    // §12.1 item 4
    #[test]
    fn nested_brackets_and_escaped_quotes_survive() {
        let gist = r#"Gist.</gist><notes>["has [nested [deep]] brackets", "say \"hi]\" \\", "]["]</notes>"#;
        let h = heal_bare(gist);
        assert_eq!(h.gist, "Gist.");
        assert_eq!(
            h.notes,
            Some(strings(&[
                "has [nested [deep]] brackets",
                "say \"hi]\" \\",
                "]["
            ]))
        );
    }

    #[test]
    fn non_string_elements_become_json_text() {
        let gist = r#"G</gist><notes>["s", 1, true, null, {"b": 1, "a": [2]}, ["x"]]</notes>"#;
        let h = heal_bare(gist);
        assert_eq!(
            h.notes,
            Some(strings(&[
                "s",
                "1",
                "true",
                "null",
                r#"{"b":1,"a":[2]}"#,
                r#"["x"]"#
            ]))
        );
    }

    // §12.1 item 5
    #[test]
    fn bare_invoke_tail_cuts_without_notes() {
        let h = heal_bare("Gist text.\n</invoke>");
        assert_eq!(h.gist, "Gist text.");
        assert_eq!(h.notes, None);
        assert_eq!(h.touches, None);
        assert!(h.changed);

        // An empty caller list stays as given.
        let h = heal("Gist text.</invoke>", Some(&[]), None);
        assert_eq!(h.notes, Some(Vec::new()));
    }

    // §12.1 item 5
    #[test]
    fn openers_with_extra_attributes_recover() {
        let h = heal_bare(
            "G.</gist><parameter name=\"notes\" extra=\"x\">[\"a\"]</parameter>\
             <touches class=\"x\">[\"t.rs\"]</touches>",
        );
        assert_eq!(h.gist, "G.");
        assert_eq!(h.notes, Some(strings(&["a"])));
        assert_eq!(h.touches, Some(strings(&["t.rs"])));

        let h = heal_bare("G.</gist><notes class=\"x\">[\"b\"]</notes>");
        assert_eq!(h.notes, Some(strings(&["b"])));
    }

    #[test]
    fn opener_limits() {
        // 256 attribute chars (multi-byte ones count once) still open; 257 do not.
        let ok = format!("G</gist><notes {}>[\"a\"]", "é".repeat(255));
        assert_eq!(heal_bare(&ok).notes, Some(strings(&["a"])));
        let too_long = format!("G</gist><notes {}>[\"a\"]", "é".repeat(256));
        assert_eq!(heal_bare(&too_long).notes, None);

        // Only the first opener is tried: a broken first list means no recovery.
        let h = heal_bare("G</gist><notes>[\"a\", oops]</notes><notes>[\"b\"]</notes>");
        assert_eq!(h.notes, None);
        // The list is simply the next `[` after the opener, wherever it sits.
        assert_eq!(
            heal_bare("G</gist><notes>{\"a\": [1]}").notes,
            Some(strings(&["1"]))
        );
        // No list at all, or an empty one, recovers nothing.
        assert_eq!(heal_bare("G</gist><notes>\"a\"</notes>").notes, None);
        assert_eq!(heal_bare("G</gist><notes>[]</notes>").notes, None);
        // Unbalanced brackets.
        assert_eq!(heal_bare("G</gist><notes>[\"a\"").notes, None);
        // `<notesx>` is not an opener.
        assert_eq!(heal_bare("G</gist><notesx>[\"a\"]").notes, None);
    }

    #[test]
    fn gist_is_trimmed_and_unicode_safe() {
        let h = heal_bare("\u{3000} Ünïcødé gist — ok\u{a0}\n</gist><notes>[\"ß\"]</notes>");
        assert_eq!(h.gist, "Ünïcødé gist — ok");
        assert_eq!(h.notes, Some(strings(&["ß"])));
    }

    #[test]
    fn cut_is_earliest_marker() {
        // A plain `<notes` mention before the real leak still cuts there.
        let h = heal_bare("Gist about <notes handling.</gist><notes>[\"n\"]</notes>");
        assert_eq!(h.gist, "Gist about");
        assert_eq!(h.notes, Some(strings(&["n"])));
    }

    // §12.1 item 6. 500,000 repetitions (~3.5 MB) is far past what a quadratic scan could
    // finish in test time, so completing at all demonstrates linearity.
    #[test]
    fn adversarial_repetitions_heal_linearly() {
        const REPS: usize = 500_000;
        for unit in ["<notes", "<notes "] {
            let gist = format!("Real gist.</gist>{}", unit.repeat(REPS));
            assert!(is_malformed(&gist));
            let h = heal_bare(&gist);
            assert_eq!(h.gist, "Real gist.");
            assert_eq!(h.notes, None);
            assert!(h.changed);

            // Without the leak marker the repetitions are mere mentions.
            let mention = format!("Gist{}", unit.repeat(REPS));
            assert!(!is_malformed(&mention));

            // A list at the very end: only the last opener or few are close enough to its `>`.
            let closing = format!("Real gist.</gist>{}>[\"end\"]", unit.repeat(REPS));
            assert_eq!(heal_bare(&closing).notes, Some(strings(&["end"])));
        }
        let params = format!("G</gist>{}", "<parameter name=\"notes\" ".repeat(REPS / 4));
        assert_eq!(heal_bare(&params).notes, None);
    }
}
