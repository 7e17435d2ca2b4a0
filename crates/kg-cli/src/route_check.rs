//! Who answers where a route points: this storage root's server, another root's, a
//! program that is not KG Memory, or nothing. `kg-memory status` (and the hooks'
//! notices) use it to say what a session will really reach: a hook that finds another
//! root's server says "offline", but an MCP entry to the same port keeps its tools
//! connected to that other memory.

use kg_install::Wiring;
use kg_server::config::Settings;
use kg_server::root_lock::{NotOurs, serves_another_root};
use std::time::Duration;

/// What listens at a base URL, seen from `settings`' storage root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answerer {
    /// The server of this storage root (its version).
    Ours(String),
    /// A KG Memory server, of another storage root or unproven.
    Stranger(NotOurs),
    /// Something listens but does not answer like KG Memory.
    OtherProgram,
    /// Nothing listens.
    Nobody,
}

/// `http://host:port` of a loopback MCP URL (`http://127.0.0.1:8765/` → base).
pub fn base_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    matches!(host, "127.0.0.1" | "localhost" | "[::1]").then(|| format!("http://{authority}"))
}

/// Whether a TCP connection to `base`'s address is accepted.
async fn listens(base: &str) -> bool {
    let Some(authority) = base.strip_prefix("http://") else {
        return false;
    };
    let authority = authority.replace("localhost", "127.0.0.1");
    matches!(
        tokio::time::timeout(
            Duration::from_secs(2),
            tokio::net::TcpStream::connect(authority.trim_matches(['[', ']']))
        )
        .await,
        Ok(Ok(_))
    )
}

/// Who answers at `base`, for `settings`' storage root.
pub async fn who_answers(base: &str, settings: &Settings) -> Answerer {
    if !listens(base).await {
        return Answerer::Nobody;
    }
    match kg_client::probe_health(base).await {
        None => Answerer::OtherProgram,
        Some(version) => match serves_another_root(base, settings).await {
            Some(stranger) => Answerer::Stranger(stranger),
            None => Answerer::Ours(version),
        },
    }
}

/// Why no KG Memory server answers on `port`: another program holds it; and the way on.
pub fn port_taken_words(port: u16) -> String {
    format!(
        "Port {port} is taken by another program that does not answer like KG Memory, so no KG Memory server can start there and sessions start without memory. Stop that program, or move KG Memory to a free port: `kg-memory --port N install <agent>` (with your --storage, if any) for each agent you use (claude-code, codex, gemini), then restart them."
    )
}

/// Warnings for MCP entries whose tools reach something other than this root's server.
pub async fn mcp_warnings(w: &Wiring, settings: &Settings) -> Vec<String> {
    let mut warnings = Vec::new();
    for server in &w.servers {
        let Some(url) = server.url.as_deref() else {
            continue;
        };
        let Some(base) = base_of(url) else { continue };
        let entry = format!("MCP server \"{}\" ({})", server.name, server.place);
        match who_answers(&base, settings).await {
            Answerer::Ours(_) => {}
            Answerer::Stranger(why) => warnings.push(format!(
                "{entry} reaches {url}, where the KG Memory server {}: its tools read and write that memory, not this one, while the hooks say the memory is offline. Point the entry at this root's server (`kg-memory{} install claude-code`), or stop the other server.",
                why.why(&settings.storage_root),
                install_flags(settings)
            )),
            Answerer::OtherProgram => warnings.push(format!(
                "{entry} reaches {url}, where another program (not KG Memory) listens: the tools cannot connect."
            )),
            // No server at all is said once, above the wiring.
            Answerer::Nobody => {}
        }
    }
    warnings
}

fn install_flags(settings: &Settings) -> String {
    let flags = kg_server::launch::server_flags(settings);
    if flags.is_empty() {
        String::new()
    } else {
        format!(" {}", kg_server::launch::shell_line(flags))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_taken_from_loopback_urls_only() {
        assert_eq!(
            base_of("http://127.0.0.1:9123/").as_deref(),
            Some("http://127.0.0.1:9123")
        );
        assert_eq!(
            base_of("http://localhost:1/mcp").as_deref(),
            Some("http://localhost:1")
        );
        assert_eq!(base_of("https://example.com:443/"), None);
        assert_eq!(base_of("http://127.0.0.1/"), None);
    }
}
