//! kg-cli's modules import each other without a circle: the checks behind `status`
//! and `doctor` (`route_check`) and the closing words (`session_notice`) at the bottom,
//! the subcommands (`hook`, `setup_cli`, `doctor`, …) on them; kg-server and kg-client
//! are below it all, outside the scan.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 8);
    assert!(
        graph["doctor"].contains("route_check"),
        "the scan sees imports: {graph:?}"
    );
    assert!(
        !graph.contains_key("main"),
        "the binary's root is no module: {graph:?}"
    );
}
