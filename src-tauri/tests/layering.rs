//! The tray app's modules import each other without a circle: the server host
//! (`host`), the status and sync texts, the window and the notifications, assembled
//! by `main.rs`.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 8);
    assert!(
        graph["window"].contains("host"),
        "the scan sees imports: {graph:?}"
    );
}
