//! Our MCP server entry among a client's `mcpServers`: added, brought up to date when it
//! is ours, refused when the name is someone else's, and removed only when its shape
//! says it is ours.

use crate::InstallError;
use crate::dry_run::redact;
use crate::files::object;
use serde_json::{Map, Value};

/// The port of `http://<loopback>:<port>/`, the only kind of URL this installer writes.
pub(crate) fn loopback_port(url: &str) -> Option<u16> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
        .then(|| port.parse().ok())
        .flatten()
}

/// An entry in words for a message: its URL, else its JSON with secrets redacted.
fn describe_entry(entry: &Value) -> String {
    match entry["url"].as_str() {
        Some(url) => redact(Value::String(url.to_string()))
            .as_str()
            .unwrap_or_default()
            .to_string(),
        None => redact(entry.clone()).to_string(),
    }
}

/// Add our MCP server entry; an older one of ours is brought up to date, anyone
/// else's is left alone and the install refused.
pub(crate) fn add_server(
    map: &mut Map<String, Value>,
    name: &str,
    entry: Value,
    ours: fn(&Value) -> bool,
    remove_hint: &str,
    summary: &mut Vec<String>,
) -> Result<(), InstallError> {
    let servers = object(map, "mcpServers")?;
    match servers.get(name) {
        Some(existing) if *existing == entry => {}
        Some(existing) if ours(existing) => {
            summary.push(format!(
                "point MCP server \"{name}\" at {} (was {})",
                describe_entry(&entry),
                describe_entry(existing)
            ));
            servers.insert(name.to_string(), entry);
        }
        Some(existing) => {
            return Err(InstallError::NotOurs(format!(
                "an MCP server named \"{name}\" is already configured, and not by KG Memory ({}). Nothing was changed. Remove it ({remove_hint}), then run this again.",
                describe_entry(existing)
            )));
        }
        None => {
            servers.insert(name.to_string(), entry);
            summary.push(format!("add MCP server \"{name}\""));
        }
    }
    Ok(())
}

pub(crate) fn remove_server(
    map: &mut Map<String, Value>,
    name: &str,
    ours: fn(&Value) -> bool,
    summary: &mut Vec<String>,
) {
    let Some(Value::Object(servers)) = map.get_mut("mcpServers") else {
        return;
    };
    if servers.get(name).is_some_and(ours) {
        servers.shift_remove(name);
        summary.push(format!("remove MCP server \"{name}\""));
        if servers.is_empty() {
            map.shift_remove("mcpServers");
        }
    }
}
