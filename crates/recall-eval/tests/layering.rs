//! recall-eval's modules import each other without a circle: the data set (`data`)
//! and its world (`world`) at the bottom, the runs (`run`, `push`) on them, the
//! metrics and the report on the runs.

#[test]
fn no_module_imports_itself_through_others() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = kg_test_support::layering::assert_no_circle(&src, 6);
    assert!(
        graph["run"].contains("world"),
        "the scan sees imports: {graph:?}"
    );
}
