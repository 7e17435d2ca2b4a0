//! Comparing our outputs with the reference's golden outputs.
//!
//! Byte-exact everywhere except the reference's own prose, which each case marks as a
//! span: there our wording stands, and it must contain the span's markers (and begin
//! with its `starts_with`). See tests/fixtures/reference/README.md, "Prose and wording".
//! Shared by the kg-core replay and the server's over-the-wire replay.

#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

/// The fixture folder copied into the repository.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reference")
}

/// A prose span of one output.
#[derive(Debug, Clone)]
pub struct Span {
    pub kind: String,
    pub span: String,
    pub where_: String,
    pub markers: Vec<String>,
    pub starts_with: Option<String>,
}

impl Span {
    pub fn list(value: Option<&Value>) -> Vec<Span> {
        let Some(Value::Array(items)) = value else {
            return Vec::new();
        };
        items
            .iter()
            .map(|s| Span {
                kind: s["kind"].as_str().unwrap_or_default().to_string(),
                span: s["span"].as_str().unwrap_or_default().to_string(),
                where_: s["where"].as_str().unwrap_or("text").to_string(),
                markers: s["markers"]
                    .as_array()
                    .map(|m| {
                        m.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                starts_with: s
                    .get("starts_with")
                    .and_then(|v| v.as_str())
                    .map(String::from),
            })
            .collect()
    }
}

/// The escaped form a span takes inside compact JSON (`ensure_ascii=False`).
pub fn json_escaped(text: &str) -> String {
    let quoted = kg_core::pyfmt::to_json(
        &Value::String(text.to_string()),
        kg_core::pyfmt::JsonStyle::WIRE,
    );
    quoted[1..quoted.len() - 1].to_string()
}

/// Does `actual` equal `expected` with each span replaced by an acceptable wording?
/// `raw`: the texts are compact JSON and spans appear escaped; replacements must be
/// valid JSON string fragments, checked in decoded form.
pub fn matches_with_prose(
    expected: &str,
    actual: &str,
    spans: &[Span],
    raw: bool,
) -> Result<(), String> {
    if spans.is_empty() {
        return if expected == actual {
            Ok(())
        } else {
            Err(first_difference(expected, actual))
        };
    }
    // Split the expected text into exact pieces around the spans, in text order.
    let mut located: Vec<(usize, &Span, String)> = Vec::new();
    for span in spans {
        let needle = if raw {
            json_escaped(&span.span)
        } else {
            span.span.clone()
        };
        let Some(pos) = expected.find(&needle) else {
            return Err(format!(
                "span {} not found in the expected output",
                span.kind
            ));
        };
        located.push((pos, span, needle));
    }
    located.sort_by_key(|(pos, _, _)| *pos);
    let mut pieces = Vec::new();
    let mut cursor = 0;
    for (pos, _, needle) in &located {
        pieces.push(&expected[cursor..*pos]);
        cursor = pos + needle.len();
    }
    pieces.push(&expected[cursor..]);
    let spans_in_order: Vec<&Span> = located.iter().map(|(_, s, _)| *s).collect();
    if match_from(actual, &pieces, &spans_in_order, raw) {
        Ok(())
    } else {
        Err(format!(
            "output differs outside the prose spans ({}), or a replacement lacks its markers\n{}",
            spans_in_order
                .iter()
                .map(|s| s.kind.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            first_difference(expected, actual)
        ))
    }
}

fn match_from(actual: &str, pieces: &[&str], spans: &[&Span], raw: bool) -> bool {
    let Some(rest) = actual.strip_prefix(pieces[0]) else {
        return false;
    };
    if spans.is_empty() {
        return rest.is_empty();
    }
    let next = pieces[1];
    // Backtrack over every occurrence of the next exact piece.
    let mut search_from = 1; // the replacement is non-empty
    while search_from <= rest.len() {
        let candidate = if next.is_empty() {
            // The last piece may be empty: the replacement runs to the end.
            if pieces.len() == 2 {
                Some(rest.len())
            } else {
                Some(search_from)
            }
        } else {
            rest.get(search_from..)
                .and_then(|s| s.find(next))
                .map(|p| p + search_from)
        };
        let Some(end) = candidate else { return false };
        if !rest.is_char_boundary(end) {
            search_from = end + 1;
            continue;
        }
        let replacement = &rest[..end];
        if acceptable(replacement, spans[0], raw)
            && match_from(&rest[end..], &pieces[1..], &spans[1..], raw)
        {
            return true;
        }
        if next.is_empty() && pieces.len() == 2 {
            return false;
        }
        search_from = end + 1;
    }
    false
}

fn acceptable(replacement: &str, span: &Span, raw: bool) -> bool {
    let decoded = if raw {
        match serde_json::from_str::<String>(&format!("\"{replacement}\"")) {
            Ok(s) => s,
            Err(_) => return false,
        }
    } else {
        replacement.to_string()
    };
    !decoded.is_empty()
        && span.markers.iter().all(|m| decoded.contains(m.as_str()))
        && span
            .starts_with
            .as_ref()
            .is_none_or(|s| decoded.starts_with(s.as_str()))
}

/// A short description of where two texts first differ.
pub fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<char> = expected.chars().collect();
    let a: Vec<char> = actual.chars().collect();
    let i = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let window = |v: &[char]| -> String {
        let start = i.saturating_sub(80);
        let end = (i + 120).min(v.len());
        v[start..end].iter().collect()
    };
    format!(
        "first difference at char {i} (expected {} chars, got {}):\n--- expected ---\n{}\n--- actual ---\n{}",
        e.len(),
        a.len(),
        window(&e),
        window(&a)
    )
}

/// Replace real values by the placeholders the goldens use.
#[derive(Debug, Default, Clone)]
pub struct Placeholders {
    pub home: String,
    /// Real session ids in order of first appearance.
    pub sids: Vec<String>,
    /// Whether outputs write `<SID>` (one session) or `<SID:a>`, `<SID:b>`, ….
    pub single: bool,
}

impl Placeholders {
    pub fn label(&self, i: usize) -> String {
        if self.single {
            "<SID>".to_string()
        } else {
            format!("<SID:{}>", (b'a' + i as u8) as char)
        }
    }

    /// Substitute placeholders in arguments (`<SID:x>` always names the x-th session).
    pub fn fill(&self, text: &str) -> String {
        let mut out = text.replace("<HOME>", &self.home);
        for (i, sid) in self.sids.iter().enumerate() {
            out = out.replace(&format!("<SID:{}>", (b'a' + i as u8) as char), sid);
            if i == 0 {
                out = out.replace("<SID>", sid);
            }
        }
        out
    }

    pub fn fill_value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.fill(s)),
            Value::Array(a) => Value::Array(a.iter().map(|v| self.fill_value(v)).collect()),
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), self.fill_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// Learn session ids that appear in an output, in order.
    pub fn learn(&mut self, output: &str, known: &dyn Fn(&str) -> bool) {
        let bytes = output.as_bytes();
        let is_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        let mut i = 0;
        while i + 8 <= bytes.len() {
            let run = &bytes[i..i + 8];
            if run.iter().all(|&b| is_hex(b))
                && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
                && bytes.get(i + 8).is_none_or(|b| !b.is_ascii_alphanumeric())
            {
                // All ASCII, so these byte offsets are char boundaries.
                let candidate = &output[i..i + 8];
                if known(candidate) && !self.sids.iter().any(|s| s == candidate) {
                    self.sids.push(candidate.to_string());
                }
                i += 8;
                continue;
            }
            i += 1;
        }
    }

    /// Replace real values in an output by placeholders.
    pub fn normalise(&self, text: &str) -> String {
        let mut out = text.replace(&self.home, "<HOME>");
        for (i, sid) in self.sids.iter().enumerate() {
            out = out.replace(sid.as_str(), &self.label(i));
        }
        out
    }
}

#[test]
fn comparator_accepts_rewording_with_markers_and_rejects_damage() {
    let span = Span {
        kind: "k".into(),
        span: "Say hello to Bob.".into(),
        where_: "text".into(),
        markers: vec!["Bob".into()],
        starts_with: Some("Say".into()),
    };
    let expected = "A\nSay hello to Bob.\nZ";
    let spans = [span];
    assert!(matches_with_prose(expected, "A\nSay hi, Bob!\nZ", &spans, false).is_ok());
    assert!(
        matches_with_prose(expected, "A\nSay hi!\nZ", &spans, false).is_err(),
        "marker missing"
    );
    assert!(
        matches_with_prose(expected, "A\nHi Bob\nZ", &spans, false).is_err(),
        "starts_with"
    );
    assert!(
        matches_with_prose(expected, "B\nSay hi, Bob!\nZ", &spans, false).is_err(),
        "outside"
    );
    assert!(
        matches_with_prose(expected, "A\nSay Z Bob\nZ", &spans, false).is_ok(),
        "backtracks"
    );
    let raw_expected = "{\"t\":\"x \\\"q\\\" Say hello to Bob.\"}";
    assert!(
        matches_with_prose(
            raw_expected,
            "{\"t\":\"x \\\"q\\\" Say \\\"yo\\\" Bob\"}",
            &spans,
            true
        )
        .is_ok()
    );
}
