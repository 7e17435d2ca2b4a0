//! The reference cases replayed under our own policy (`Policy::Ours`, the default):
//! issue 21, item 5. `golden` proves `KG_POLICY=reference` answers as the reference
//! did; here every case kg-core answers alone is replayed again with our improvements
//! on. A step that still answers as the reference did is compared with the reference's
//! output, exactly as strictly; a step that answers differently must equal our own
//! golden, an insta snapshot `snapshots/kg_core__ours_golden__<case>.snap`. The cases
//! allowed to differ are listed in `DIVERGING`, each with its reason, and in the table
//! "Golden cases whose output differs under our policy" of COMPATIBILITY.md, so a new
//! divergence fails until someone pins it and says why.
//!
//! After a deliberate change of our policy: `INSTA_UPDATE=always cargo test -p kg-core
//! --test kg-core ours_golden`, then read every changed snapshot before committing.

use crate::golden::{Answer, Replayed, SERVER_ONLY, replay_steps};
use kg_core::Policy;
use kg_test_support::golden::{case_files, read_case};
use serde_json::Value;

/// The cases whose output differs under our policy, with the reason.
const DIVERGING: &[(&str, &str)] = &[
    (
        "013-kg-search-common-term.json",
        "our ranking: BM25 over stemmed words, the id's words weigh most, so the `*-retry-policy` nodes lead",
    ),
    (
        "014-kg-search-multi-term.json",
        "our ranking: stemmed words (`idempotent` finds `idempotency`), nodes holding more of the query's words lead",
    ),
    (
        "017-kg-search-file-path.json",
        "our ranking: the path is split into words, so more nodes match; the posting engine's nodes lead",
    ),
    (
        "033-delete-node-missing.json",
        "our wording: `not found in either graph`",
    ),
    (
        "050-prompt-rare-term-inject.json",
        "our recall: the one node the prompt names, without the reference's unrelated connectors",
    ),
    (
        "051-prompt-repeat-silent.json",
        "our recall of the first prompt (setup) is the one node it names; the repeat stays silent as before",
    ),
    (
        "052-prompt-file-path-inject.json",
        "our recall: the node of the file, without connectors that share no word with the prompt",
    ),
    (
        "053-prompt-multi-term-connections.json",
        "our recall: hits within 80 % of the best, and the best hit's neighbour that answers `idempotency`",
    ),
    (
        "054-prompt-new-node-other-session.json",
        "our recall: the new node only; the reference added reconciler nodes the prompt does not name",
    ),
];

fn check(file: &str) {
    if SERVER_ONLY.contains(&file) {
        // Answered only over the wire; `golden` checks they are left to the server.
        return;
    }
    let answers = match replay_steps(&read_case(file), Policy::Ours, false) {
        Replayed::Ran(answers) => answers,
        Replayed::Skipped(why) => panic!("{file} was not replayed under our policy: {why}"),
    };
    let differing: Vec<&Answer> = answers.iter().filter(|a| a.result.is_err()).collect();
    let declared = DIVERGING.iter().find(|(case, _)| *case == file);
    match (declared, differing.as_slice()) {
        (None, []) => {}
        (None, [first, ..]) => panic!(
            "{file} answers differently under our policy ({}: {}).\n\
             If that is intended: add it to DIVERGING in crates/kg-core/tests/kg-core/\
             ours_golden.rs with its reason and a row in COMPATIBILITY.md, pin it with \
             INSTA_UPDATE=always cargo test -p kg-core --test kg-core ours_golden, and \
             read the snapshot.",
            first.step,
            first.result.as_ref().err().map_or("", String::as_str),
        ),
        (Some(_), []) => panic!(
            "{file} answers as the reference did under our policy too: take it off \
             DIVERGING and COMPATIBILITY.md, and delete its snapshot"
        ),
        (Some((_, reason)), _) => {
            let stem = file.trim_end_matches(".json");
            insta::with_settings!({ description => *reason }, {
                insta::assert_snapshot!(stem, pinned(&differing));
            });
        }
    }
}

/// The steps that differ from the reference, each under its name. Hook answers are
/// compact JSON; their multi-line texts are shown decoded after them, for the reader.
fn pinned(differing: &[&Answer]) -> String {
    let mut out = String::new();
    for answer in differing {
        out.push_str(&format!("--- {} ---\n{}\n", answer.step, answer.actual));
        if let Ok(json) = serde_json::from_str::<Value>(&answer.actual) {
            let mut texts = Vec::new();
            multi_line_strings(&json, String::new(), &mut texts);
            for (pointer, text) in texts {
                out.push_str(&format!(
                    "--- {} {pointer}, decoded ---\n{text}\n",
                    answer.step
                ));
            }
        }
    }
    out
}

/// Every string inside `value` that spans lines, with its JSON pointer.
fn multi_line_strings(value: &Value, pointer: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) if s.contains('\n') => out.push((pointer, s.clone())),
        Value::Object(map) => {
            for (key, v) in map {
                multi_line_strings(v, format!("{pointer}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                multi_line_strings(v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

kg_test_support::reference_cases!(check);

/// `DIVERGING` names real cases kg-core answers, once each, with a reason, and each
/// has its row in COMPATIBILITY.md.
#[test]
fn diverging_cases_are_declared_and_explained() {
    let cases = case_files();
    let compatibility = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../COMPATIBILITY.md"),
    )
    .expect("COMPATIBILITY.md at the repository root");
    for (i, (case, reason)) in DIVERGING.iter().enumerate() {
        assert!(
            cases.iter().any(|c| c == case),
            "{case}: no such reference case"
        );
        assert!(
            !SERVER_ONLY.contains(case),
            "{case} is not replayed by kg-core"
        );
        assert!(!reason.trim().is_empty(), "{case}: say why it differs");
        assert!(
            DIVERGING[..i].iter().all(|(c, _)| c != case),
            "{case} is listed twice"
        );
        assert!(
            compatibility.contains(&format!("`{case}`")),
            "{case}: add its row to COMPATIBILITY.md, \"Golden cases whose output differs \
             under our policy\""
        );
    }
}
