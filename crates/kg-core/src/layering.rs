//! The modules of this crate import each other without a circle (the shared check in
//! `kg_test_support::layering`). ARCHITECTURE.md draws the layers. And no Rust file
//! of the workspace is over 800 lines of code (`kg_test_support::structure`), checked
//! here once for every crate.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 20);
    assert!(graph["store"].contains("graph"), "the scan sees imports");
}

#[test]
fn no_rust_file_of_the_workspace_is_over_800_lines_of_code() {
    use kg_test_support::structure::{MAX_CODE_LINES, assert_files_within};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let read = assert_files_within(&root, MAX_CODE_LINES);
    assert!(
        read > 200,
        "only {read} Rust files found under {}",
        root.display()
    );
}
