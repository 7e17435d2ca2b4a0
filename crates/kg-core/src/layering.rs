//! The modules of this crate import each other without a circle (the shared check in
//! `kg_test_support::layering`). ARCHITECTURE.md draws the layers.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 20);
    assert!(graph["store"].contains("graph"), "the scan sees imports");
}
