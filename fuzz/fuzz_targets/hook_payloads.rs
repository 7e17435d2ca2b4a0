//! Hook payloads from anywhere (prompt context, tool events, session bootstrap) on a
//! real store: never a panic, and an answer is either silence or hook text.
#![no_main]
use kg_core::ambient::{BootstrapRequest, prompt_context, session_bootstrap, tool_event};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn store() -> &'static (kg_core::Store, std::path::PathBuf) {
    static STORE: OnceLock<(kg_core::Store, std::path::PathBuf)> = OnceLock::new();
    STORE.get_or_init(|| {
        let root = std::path::Path::new("/dev/shm").join(format!("kg-fuzz-hooks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let home = root.join("home");
        std::fs::create_dir_all(home.join("proj")).expect("scratch");
        let store = kg_core::Store::open(kg_core::StoreConfig::new(root.join("storage"), &home), 1_795_176_000.0).expect("store");
        (store, home)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(mut payload) = serde_json::from_slice::<serde_json::Value>(rest) else { return };
    let (store, home) = store();
    if let (Some(obj), true) = (payload.as_object_mut(), pick & 0x80 != 0) {
        obj.insert("cwd".into(), serde_json::Value::String(home.join("proj").to_string_lossy().into_owned()));
    }
    let now = 1_795_176_000.0 + f64::from(pick) * 60.0;
    match pick % 3 {
        0 => {
            if let Some(text) = prompt_context(store, &payload, now) {
                assert!(!text.is_empty());
            }
        }
        1 => {
            if let Some(text) = tool_event(store, &payload, now) {
                assert!(text.starts_with("KG capture: '"));
            }
        }
        _ => {
            let s = |k: &str| payload.get(k).and_then(|v| v.as_str()).map(str::to_string);
            let request = BootstrapRequest {
                project_path: s("cwd").unwrap_or_default(),
                claude_session_id: s("session_id"),
                source: s("source"),
                transcript_path: None, // reading arbitrary files is the caller's trust, not fuzzed
            };
            if let Ok(b) = session_bootstrap(store, &request, &kg_core::wording::preload_header, now) {
                assert!(kg_core::session::is_session_id(&b.session_id));
            }
        }
    }
});
