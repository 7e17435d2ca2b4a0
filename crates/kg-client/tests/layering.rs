//! kg-client's modules import each other without a circle. It is one file today (no
//! module to scan); the check stands so the first split cannot bring a circle in.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 0);
    assert!(
        !graph.contains_key("lib"),
        "the crate root is no module: {graph:?}"
    );
}
