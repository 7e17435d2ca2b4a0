//! MCP tool arguments from anywhere: schema validation and the tools themselves (on a
//! real store in a scratch folder) answer every input without panicking, a call that
//! passes validation never answers `Input validation error`, and every saved graph file
//! is exactly what serialising its graph afresh gives (saves reuse their last text).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const TOOLS: [&str; 10] = [
    "kg_read", "kg_search", "kg_put_node", "kg_put_edge", "kg_delete_node", "kg_delete_edge", "kg_useful", "kg_sync", "kg_progress", "kg_nope",
];

fn state() -> &'static std::sync::Arc<kg_server::AppState> {
    static STATE: OnceLock<std::sync::Arc<kg_server::AppState>> = OnceLock::new();
    STATE.get_or_init(|| {
        let root = std::env::temp_dir().join(format!("kg-fuzz-tools-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("home/proj")).expect("scratch");
        let mut settings = kg_server::Settings::from_env().expect("settings");
        settings.home = root.join("home");
        settings.storage_root = root.join("storage");
        settings.clock_file = None;
        kg_server::AppState::open(settings, Default::default()).expect("state")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(serde_json::Value::Object(mut args)) = serde_json::from_slice::<serde_json::Value>(rest) else { return };
    let state = state();
    // Keep project paths inside the scratch home most of the time, so the tools go deep.
    if pick & 0x80 != 0 {
        args.insert("cwd".into(), serde_json::Value::String(state.settings.home.join("proj").to_string_lossy().into_owned()));
    }
    let tool = TOOLS[usize::from(pick) % TOOLS.len()];
    let answer = kg_server::mcp::call(state, tool, &args, 1_795_176_000.0);
    if answer.text.starts_with("Input validation error") {
        assert!(answer.is_error);
    }
    let store = &state.store;
    let project = state.settings.home.join("proj").to_string_lossy().into_owned();
    let project = store.resolve_root(&project).ok().and_then(|root| store.project_slot(&root, 1_795_176_000.0).ok());
    for slot in std::iter::once(store.user_slot().clone()).chain(project) {
        if store.is_dirty(&slot) {
            continue; // not saved yet (read stamps wait for the save interval)
        }
        if let Ok(on_disk) = std::fs::read_to_string(&slot.path) {
            let fresh = store.with_graph(&slot, |g| kg_core::persist::serialize_graph(g, slot.level, slot.project_root()));
            assert!(on_disk == fresh, "the saved file differs from a fresh serialisation");
        }
    }
});
