//! kg-sync's modules import each other without a circle: the merge rules (`merge`) sit
//! on the order of a merged file (`order`); the git merge driver (`driver`) on both.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 3);
    assert!(
        graph["driver"].contains("merge"),
        "the scan sees imports: {graph:?}"
    );
}
