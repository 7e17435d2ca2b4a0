//! kg-install's modules import each other without a circle: each agent's files
//! (`claude_code`, `codex`, `gemini`, `desktop`) sit on the shared pieces (`files`,
//! `servers`, `courier`, `error`), and the crate root plans over all of them.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 10);
    assert!(graph["codex"].contains("courier"), "the scan sees imports");
}
