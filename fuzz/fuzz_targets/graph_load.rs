//! Graph files from anywhere: parsing never panics, a parsed graph round-trips through
//! our writer, heals idempotently, and renders and compacts without panicking.
#![no_main]
use kg_core::model::{Level, field};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = kg_core::persist::parse_graph(data) else { return };
    let text = kg_core::persist::serialize_graph(&file.graph, Level::Project, file.project_path.as_deref());
    let again = kg_core::persist::parse_graph(text.as_bytes()).expect("our own output parses");
    assert_eq!(again.graph.nodes.len(), file.graph.nodes.len());
    assert_eq!(kg_core::persist::serialize_graph(&again.graph, Level::Project, again.project_path.as_deref()), text);
    for node in file.graph.nodes.values() {
        let gist = node.gist();
        let once = kg_core::heal::heal(gist, None, None);
        let twice = kg_core::heal::heal(&once.gist, once.notes.as_deref(), once.touches.as_deref());
        assert_eq!(once.gist, twice.gist, "healing is idempotent");
        let _ = node.get(field::NOTES);
    }
    let mut graph = file.graph;
    let mut stall = false;
    kg_core::compact::compact_graph(&mut graph, &mut stall, "fuzz", 5.0, 1_795_176_000.0, None);
    let _ = kg_core::render::level_chars(&graph);
});
