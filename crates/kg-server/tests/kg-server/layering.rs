//! kg-server's modules import each other without a circle: the routers sit on the
//! shared state (`state`), which sits on the store, settings and clock; nothing below
//! the router assembly (`app`) reaches back up to it.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 20);
    assert!(graph["rest"].contains("state"), "the scan sees imports");
    assert!(
        graph.iter().all(|(_, named)| !named.contains("app")),
        "only the crate root may use the router assembly: {graph:?}"
    );
}
