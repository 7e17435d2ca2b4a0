//! The human-text gate, term extraction, search tokenising, transcript recovery and
//! the healer on arbitrary text: no panics, and their outputs keep their promises.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(kept) = kg_core::ambient::human_text(&text) {
        let terms = kg_core::ambient::prompt_terms(&kept);
        assert!(terms.len() <= 24);
        for t in &terms {
            assert!(t.chars().count() >= 4, "terms are at least 4 characters");
        }
    }
    let q = kg_core::search::query_terms(&text);
    let mut seen = std::collections::HashSet::new();
    assert!(q.iter().all(|t| seen.insert(t.clone())), "query terms are unique");
    if let Some(sid) = kg_core::session::recover_from_transcript(&text) {
        assert!(kg_core::session::is_session_id(&sid));
    }
    let healed = kg_core::heal::heal(&text, None, None);
    assert!(!kg_core::heal::is_malformed(&healed.gist));
    let _ = kg_core::model::validate_ident(kg_core::model::IdentKind::EdgeRef, &text);
    let _ = kg_core::pyfmt::repr_str(&text);
});
