//! The reference fixtures (`tests/fixtures/reference`) and the comparison of our
//! outputs with the reference's golden outputs, shared by kg-core's replay and the
//! server's over-the-wire replay.
//!
//! Byte-exact everywhere except the reference's own prose, which each case marks as a
//! span: there our wording stands, and it must contain the span's markers (and begin
//! with its `starts_with`). See tests/fixtures/reference/README.md, "Prose and wording".
//!
//! [`reference_cases!`](crate::reference_cases) makes one test per case.

use serde_json::Value;
use std::path::PathBuf;

/// The fixture folder copied into the repository.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/reference")
}

/// The file names of the reference cases (`NNN-what.json`), sorted.
pub fn case_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("cases"))
        .expect("the reference cases folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// One reference case, parsed.
pub fn read_case(file: &str) -> Value {
    let path = fixtures().join("cases").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The test named for a case file: `042-bootstrap-x.json` → `reference_042_bootstrap_x`.
pub fn test_name(file: &str) -> String {
    format!(
        "reference_{}",
        file.trim_end_matches(".json").replace('-', "_")
    )
}

/// The case file a test of [`reference_cases!`](crate::reference_cases) replays.
pub fn case_file(test_name: &str) -> String {
    let slug = test_name.strip_prefix("reference_").unwrap_or(test_name);
    format!("{}.json", slug.replace('_', "-"))
}

/// The tests [`reference_cases!`](crate::reference_cases) makes are exactly the cases
/// in the fixture folder: a new case fails here until it is listed.
pub fn assert_every_case_listed(listed: &[&str]) {
    let wanted: Vec<String> = case_files().iter().map(|f| test_name(f)).collect();
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|w| !listed.contains(&w.as_str()))
        .collect();
    let stale: Vec<&&str> = listed
        .iter()
        .filter(|l| !wanted.iter().any(|w| w == *l))
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "the list of reference_cases! in crates/kg-test-support/src/golden.rs differs from \
         the files in tests/fixtures/reference/cases:\n\
         add (one test per case): {missing:?}\nremove (no such case): {stale:?}"
    );
    assert_eq!(listed.len(), wanted.len(), "a case is listed twice");
}

/// One `#[test]` per reference case, named `reference_NNN_what` after its file, each
/// calling `$check(file_name)`; and `every_reference_case_has_a_test`, which fails
/// when the fixture folder holds a case this list lacks (or the list one it lacks).
///
/// ```text
/// fn check(file: &str) { /* replay kg_test_support::golden::read_case(file) */ }
/// kg_test_support::reference_cases!(check);
/// ```
/// Run one: `cargo test -p kg-core --test kg-core golden::reference_042`. A new case in
/// the fixture folder: add its `reference_NNN_what` line below.
#[macro_export]
macro_rules! reference_cases {
    ($check:path) => {
        $crate::reference_cases!(@tests $check;
            reference_001_health_fresh,
            reference_002_kg_read_full_alpha_first,
            reference_003_kg_read_full_alpha_second,
            reference_004_kg_read_full_beta_first,
            reference_005_kg_read_full_after_preload,
            reference_006_kg_read_ids_active,
            reference_007_kg_read_id_archived_chain_rescue,
            reference_008_kg_read_full_after_promotion,
            reference_009_kg_read_id_orphaned,
            reference_010_kg_read_ids_missing_and_user_level,
            reference_011_kg_read_no_cwd_no_session,
            reference_012_kg_search_rare_term,
            reference_013_kg_search_common_term,
            reference_014_kg_search_multi_term,
            reference_015_kg_search_no_hit_with_session,
            reference_016_kg_search_no_hit_no_session,
            reference_017_kg_search_file_path,
            reference_018_kg_search_zephyr_no_session_fresh,
            reference_019_kg_search_zephyr_no_session_loaded,
            reference_020_kg_search_zephyr_fresh_session,
            reference_021_put_node_new_project,
            reference_022_put_node_new_then_full_read,
            reference_023_put_node_update_archived,
            reference_024_put_node_oversized_gist,
            reference_025_put_node_invalid_id,
            reference_026_put_node_missing_required_arg,
            reference_027_put_node_project_pathless_session,
            reference_028_put_edge_to_file_path,
            reference_029_put_edge_invalid_rel,
            reference_030_delete_edge_existing,
            reference_031_delete_edge_missing,
            reference_032_delete_node_existing,
            reference_033_delete_node_missing,
            reference_034_kg_sync_after_other_session,
            reference_035_kg_sync_nothing_new,
            reference_036_kg_useful_mixed,
            reference_037_kg_progress_get_existing_project,
            reference_038_kg_progress_set_then_get,
            reference_039_kg_progress_get_missing,
            reference_040_bootstrap_fresh_alpha,
            reference_041_bootstrap_fresh_beta,
            reference_042_bootstrap_resume_same_claude_sid,
            reference_043_bootstrap_compact_same_claude_sid,
            reference_044_bootstrap_resume_via_transcript,
            reference_045_bootstrap_clear_starts_fresh,
            reference_046_prompt_before_full_read_nudge,
            reference_047_prompt_generic_silent,
            reference_048_prompt_notification_silent,
            reference_049_prompt_image_path_silent,
            reference_050_prompt_rare_term_inject,
            reference_051_prompt_repeat_silent,
            reference_052_prompt_file_path_inject,
            reference_053_prompt_multi_term_connections,
            reference_054_prompt_new_node_other_session,
            reference_055_prompt_no_session_silent,
            reference_056_tool_event_first_read_silent,
            reference_057_tool_event_second_session_nudge,
            reference_058_tool_event_noise_path_silent,
            reference_059_tool_event_covered_by_touches_silent,
            reference_060_tool_event_webfetch_twice_nudge,
            reference_061_tool_event_throttled_within_600s,
            reference_062_tool_event_after_600s_nudge,
            reference_063_tool_event_snapshot_target_renudge,
            reference_064_maintenance_debt_survey,
            reference_065_session_state_after_bootstrap,
            reference_066_rest_node_read_archived_promotes,
            reference_067_rest_create_node_invalid_id,
            reference_068_rest_graph_read_beta,
        );
    };
    (@tests $check:path; $($name:ident,)*) => {
        $(
            #[test]
            fn $name() {
                $check(&$crate::golden::case_file(stringify!($name)));
            }
        )*

        #[test]
        fn every_reference_case_has_a_test() {
            $crate::golden::assert_every_case_listed(&[$(stringify!($name)),*]);
        }
    };
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
    let quoted = kg_core::to_json(&Value::String(text.to_string()), kg_core::JsonStyle::WIRE);
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn test_names_and_case_files_correspond() {
        let file = "042-bootstrap-resume-same-claude-sid.json";
        assert_eq!(
            test_name(file),
            "reference_042_bootstrap_resume_same_claude_sid"
        );
        assert_eq!(case_file(&test_name(file)), file);
    }
}
