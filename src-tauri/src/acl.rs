//! What a page in the app's webview may ask of the app: nothing. The graph window
//! shows the server's own page from its URL (a remote origin to Tauri), and no
//! capability grants any origin a command, so a script injected into that page, or any
//! page the webview is steered to, cannot reach the clipboard, dialogs, the opener,
//! or the window and app controls. The page needs none of them: it talks
//! to the server over HTTP and its WebSocket only. Adding a capability makes this test
//! fail, on purpose: say in it which command a page needs and why.

use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{INVOKE_KEY, get_ipc_response, mock_builder};
use tauri::webview::InvokeRequest;
use tauri::{WebviewUrl, WebviewWindowBuilder};

/// Every command the app's plugins (the core ones included) define, as a page would
/// invoke it: `plugin:<plugin>|<command>`.
fn every_plugin_command() -> Vec<String> {
    let manifests: serde_json::Value =
        serde_json::from_str(include_str!("../gen/schemas/acl-manifests.json"))
            .expect("the ACL manifests tauri-build writes");
    let mut commands = std::collections::BTreeSet::new();
    for (key, manifest) in manifests.as_object().into_iter().flatten() {
        let plugin = key.strip_prefix("core:").unwrap_or(key);
        let permissions = manifest["permissions"].as_object().into_iter().flatten();
        for (_, permission) in permissions {
            let allow = permission["commands"]["allow"]
                .as_array()
                .into_iter()
                .flatten();
            for command in allow.filter_map(|c| c.as_str()) {
                commands.insert(format!("plugin:{plugin}|{command}"));
            }
        }
    }
    commands.into_iter().collect()
}

#[test]
fn no_page_in_the_webview_can_invoke_any_app_command() {
    let app = mock_builder()
        .build(tauri::generate_context!())
        .expect("the app builds on the mock runtime");
    let page = "http://127.0.0.1:8765/ui".parse().expect("url");
    let window = WebviewWindowBuilder::new(&app, "graph", WebviewUrl::External(page))
        .build()
        .expect("the graph window");
    let mut commands = every_plugin_command();
    for must in [
        "plugin:clipboard-manager|read_text",
        "plugin:dialog|open",
        "plugin:opener|open_url",
        "plugin:window|close",
        "plugin:app|exit",
    ] {
        assert!(commands.iter().any(|c| c == must), "{must} is not listed");
    }
    // And commands of the app itself (it defines none).
    commands.extend(["open_data_folder", "quit"].map(String::from));
    for url in [
        "http://127.0.0.1:8765/ui",
        "http://localhost:8765/ui#project=x",
        "https://evil.example/",
        // The error page shown when there is no server (window.rs).
        "kg-memory://localhost/",
    ] {
        for cmd in &commands {
            let request = InvokeRequest {
                cmd: cmd.clone(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: url.parse().expect("url"),
                body: InvokeBody::default(),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            };
            let refused = get_ipc_response(&window, request)
                .expect_err(&format!("a page at {url} invoked {cmd}"));
            assert!(
                refused.to_string().contains("not allowed"),
                "{cmd} from {url}: {refused}"
            );
        }
    }
}
