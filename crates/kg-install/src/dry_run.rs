//! What a plan changes, in words; with `--dry-run`, a unified diff of each file too, with
//! values that look secret redacted (for display only: files are written as they are).

use crate::FileChange;
use crate::files::pretty_value;
use serde_json::Value;

/// A human-readable account of the planned changes; a dry run adds a diff of each
/// file, secret-looking values redacted.
pub fn describe(changes: &[FileChange], dry_run: bool) -> String {
    let mut out = describe_changes(changes, dry_run);
    if dry_run {
        out.push_str(DRY_RUN_FOOTER);
    }
    out
}

/// What a dry run adds once, after every file's diff.
pub const DRY_RUN_FOOTER: &str =
    "(dry run: nothing was written; values that look secret are shown as <redacted>)\n";

/// Each file's change in words, and its diff (secrets redacted) with `diffs`; no footer
/// (`kg-memory setup` says it once for every agent).
pub fn describe_changes(changes: &[FileChange], diffs: bool) -> String {
    let mut out = String::new();
    for c in changes {
        if c.summary.is_empty() {
            out.push_str(&format!("{}: already up to date\n", c.path.display()));
            continue;
        }
        out.push_str(&format!("{}: {}\n", c.path.display(), c.summary.join(", ")));
        if diffs {
            out.push_str(&diff(c));
        }
    }
    out
}

/// A file's JSON as the diff shows it: one layout whatever the file's own, secret-looking
/// values redacted.
fn shown(text: Option<&str>) -> String {
    match text.map(serde_json::from_str::<Value>) {
        Some(Ok(value)) => pretty_value(&redact(value)),
        _ => String::new(),
    }
}

/// A file as the diff shows it, by its kind: JSON re-laid and redacted, TOML (Codex's
/// config) in its own layout with secret-looking values redacted, other text with its
/// secret-looking words hidden.
fn shown_file(path: &std::path::Path, text: Option<&str>) -> String {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => shown(text),
        Some("toml") => match text.map(str::parse::<toml_edit::DocumentMut>) {
            Some(Ok(mut doc)) => {
                redact_toml(doc.as_table_mut(), false);
                // Comments keep their text in the document (a commented-out token is
                // still a token): they get the plain-text rule too.
                hide_secret_words(&doc.to_string())
            }
            _ => String::new(),
        },
        _ => hide_secret_words(text.unwrap_or_default()),
    }
}

/// Text with each secret-looking word (split at spaces, judged without the quotes or
/// punctuation around it, which stay) replaced by [`REDACTED`].
fn hide_secret_words(text: &str) -> String {
    let hide = |word: &str| -> String {
        let bare = word.trim_matches(|c: char| "\"'`,;:()[]{}".contains(c));
        if bare.is_empty() || !secret_value(bare) {
            return word.to_string();
        }
        let start = word.find(bare).unwrap_or(0);
        format!(
            "{}{REDACTED}{}",
            &word[..start],
            &word[start + bare.len()..]
        )
    };
    text.split_inclusive('\n')
        .map(|line| {
            let body = line.trim_end_matches(['\n', '\r']);
            let words: Vec<String> = body.split(' ').map(hide).collect();
            format!("{}{}", words.join(" "), &line[body.len()..])
        })
        .collect()
}

/// Codex's `config.toml` with the same rules as [`redact`]: values under secret-looking
/// keys or in an `env`/`*headers` table, credential-like strings, URLs' secrets.
fn redact_toml(table: &mut dyn toml_edit::TableLike, hidden: bool) {
    fn value(v: &mut toml_edit::Value, hidden: bool) {
        match v {
            toml_edit::Value::String(s) => {
                let text = s.value().clone();
                let shown = if hidden || secret_value(&text) {
                    Some(REDACTED.to_string())
                } else {
                    redact_url(&text)
                };
                if let Some(shown) = shown {
                    let decor = s.decor().clone();
                    *s = toml_edit::Formatted::new(shown);
                    *s.decor_mut() = decor;
                }
            }
            toml_edit::Value::Array(items) => items.iter_mut().for_each(|i| value(i, hidden)),
            toml_edit::Value::InlineTable(t) => redact_toml(t, hidden),
            _ => {}
        }
    }
    for (key, item) in table.iter_mut() {
        let hide = hidden
            || secret_key(key.get())
            || matches!(key.get(), "env" | "http_headers" | "env_http_headers");
        match item {
            toml_edit::Item::Value(v) => value(v, hide),
            toml_edit::Item::Table(t) => redact_toml(t, hide),
            toml_edit::Item::ArrayOfTables(ts) => ts.iter_mut().for_each(|t| redact_toml(t, hide)),
            toml_edit::Item::None => {}
        }
    }
}

fn diff(c: &FileChange) -> String {
    let (before, after) = (
        shown_file(&c.path, c.before.as_deref()),
        shown_file(&c.path, c.after.as_deref()),
    );
    let path = c.path.display().to_string();
    let old = if c.before.is_some() {
        format!("{path} (now)")
    } else {
        "/dev/null (a new file)".to_string()
    };
    let new = if c.after.is_some() {
        format!("{path} (after)")
    } else {
        "/dev/null (the file is removed: it only held our entries)".to_string()
    };
    let mut out = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    let relaid =
        |t: &str| serde_json::from_str::<Value>(t).is_ok_and(|v| pretty_value(&v).as_str() != t);
    if c.before.as_deref().is_some_and(relaid) && c.after.as_deref().is_some_and(|t| !relaid(t)) {
        out.push_str("(the file is rewritten with JSON's standard indentation; only the lines above change what it says)\n");
    }
    out
}

const REDACTED: &str = "<redacted>";

/// Parts of a key that mark its value as secret.
const SECRET_KEYS: [&str; 15] = [
    "token",
    "secret",
    "password",
    "passwd",
    "apikey",
    "api_key",
    "api-key",
    "authorization",
    "credential",
    "cookie",
    "privatekey",
    "private_key",
    "accesskey",
    "access_key",
    "oauth",
];

fn secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key == "auth" || key == "key" || SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// Our own variables: not secret, and the point of an entry's `env`.
fn our_variable(key: &str) -> bool {
    matches!(key, "KG_HTTP_HOST" | "KG_HTTP_PORT" | "KG_STORAGE_ROOT")
}

/// A value that looks like a credential whatever its key: a known token prefix, an
/// `Authorization` scheme, or a long run of token characters with letters and digits.
fn secret_value(value: &str) -> bool {
    const PREFIXES: [&str; 16] = [
        "sk-",
        "sk_",
        "pk_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "AIza",
        "npm_",
        "eyJ",
        "hf_",
    ];
    let v = value.trim();
    if v.starts_with("Bearer ") || v.starts_with("Basic ") || v.starts_with("Token ") {
        return true;
    }
    if v.len() >= 16 && PREFIXES.iter().any(|p| v.starts_with(p)) && !v.contains(' ') {
        return true;
    }
    v.len() >= 32
        && !v.starts_with('/')
        && !v.contains("://")
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c))
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// A URL's password and secret-looking query values hidden.
fn redact_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let mut out = format!("{scheme}://");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut changed = false;
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            changed = true;
            let user = user.split(':').next().unwrap_or_default();
            out.push_str(&format!("{user}:{REDACTED}@{host}"));
        }
        None => out.push_str(authority),
    }
    match path.split_once('?') {
        Some((p, query)) => {
            out.push_str(p);
            out.push('?');
            let parts: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) if secret_key(k) || secret_value(v) => {
                        changed = true;
                        format!("{k}={REDACTED}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            out.push_str(&parts.join("&"));
        }
        None => out.push_str(path),
    }
    changed.then_some(out)
}

/// A copy of `value` with everything that looks secret replaced by `<redacted>`: values
/// under secret-looking keys, every value of an `env` or `headers` object (an MCP
/// entry's), credential-like strings, and URLs' passwords and tokens.
pub fn redact(value: Value) -> Value {
    fn string(s: String, hidden: bool) -> Value {
        if hidden || secret_value(&s) {
            Value::String(REDACTED.into())
        } else {
            Value::String(redact_url(&s).unwrap_or(s))
        }
    }
    fn walk(value: Value, hidden: bool, env_like: bool) -> Value {
        match value {
            Value::String(s) => string(s, hidden),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| {
                        let hide = hidden || secret_key(&k) || (env_like && !our_variable(&k));
                        let env = matches!(k.as_str(), "env" | "headers");
                        (k, walk(v, hide, env))
                    })
                    .collect(),
            ),
            Value::Array(items) => {
                // `["--api-key", "…"]`: the word after a secret-looking flag.
                let mut after_flag = false;
                Value::Array(
                    items
                        .into_iter()
                        .map(|item| {
                            let hide = hidden || after_flag;
                            after_flag = item.as_str().is_some_and(|s| {
                                s.starts_with('-') && !s.contains('=') && secret_key(s)
                            });
                            match item {
                                Value::String(s) if s.starts_with('-') && s.contains('=') => {
                                    match s.split_once('=') {
                                        Some((flag, _)) if secret_key(flag) => {
                                            Value::String(format!("{flag}={REDACTED}"))
                                        }
                                        _ => string(s, hide),
                                    }
                                }
                                other => walk(other, hide, false),
                            }
                        })
                        .collect(),
                )
            }
            other if hidden => match other {
                Value::Null => Value::Null,
                _ => Value::String(REDACTED.into()),
            },
            other => other,
        }
    }
    walk(value, false, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::setup;
    use crate::{Client, plan_install};
    use serde_json::json;
    use std::fs;

    #[test]
    fn dry_run_shows_a_diff_with_secrets_redacted() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let claude_json = json!({
            "numStartups": 3,
            "primaryApiKey": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
            "oauthAccount": {"emailAddress": "a@b.c", "accountUuid": "1234"},
            "mcpServers": {
                "github": {"type": "http", "url": "https://api.example.com/mcp?token=abc123def456",
                           "headers": {"Authorization": "Bearer ghp_0123456789abcdefghijklmnopqrstuvwxyz"}},
                "db": {"command": "db-mcp", "args": ["--password", "hunter2", "--api-key=xyz"],
                       "env": {"DB_URL": "postgres://me:pa55@localhost/db", "LOG": "1"}}
            },
            "userID": "4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f"
        });
        fs::write(home.path().join(".claude.json"), claude_json.to_string()).expect("write");
        let plan = plan_install(Client::ClaudeCode, &s).expect("plan");
        let out = describe(&plan, true);
        for secret in [
            "sk-ant-api03",
            "ghp_0123",
            "abc123def456",
            "hunter2",
            "xyz",
            "pa55",
            "4f2a9c1e8b7d",
            "a@b.c",
        ] {
            assert!(!out.contains(secret), "{secret} shown:\n{out}");
        }
        assert!(out.contains("+    \"kg\": {"), "{out}");
        assert!(
            out.contains("+      \"url\": \"http://127.0.0.1:8765/\""),
            "{out}"
        );
        assert!(out.contains("hook session-start"), "{out}");
        assert!(out.contains("/dev/null (a new file)"), "{out}");
        assert!(
            out.contains("rewritten with JSON's standard indentation"),
            "{out}"
        );
        assert!(!out.contains("numStartups"), "far from any change:\n{out}");
        assert!(out.contains("dry run: nothing was written"), "{out}");
        // The redaction is for display only.
        let written: Value =
            serde_json::from_str(plan[0].after.as_deref().unwrap_or("")).expect("json");
        assert_eq!(
            written["mcpServers"]["db"]["args"],
            json!(["--password", "hunter2", "--api-key=xyz"])
        );
    }

    #[test]
    fn a_toml_diff_keeps_its_layout_and_hides_secrets() {
        let before = "# mine\n[mcp_servers.gh]\nurl = \"https://api.example.com/mcp\"\nbearer_token = \"ghp_0123456789abcdefghij\"\nenv = { GH_TOKEN = \"plain\" }\n# old: bearer_token = \"ghp_9876543210abcdefghij\"\n";
        let after = format!("{before}\n[mcp_servers.kg]\nurl = \"http://127.0.0.1:8765/\"\n");
        let change = FileChange {
            path: "/h/.codex/config.toml".into(),
            before: Some(before.into()),
            after: Some(after),
            summary: vec!["add MCP server \"kg\"".into()],
            ours: false,
        };
        let shown = describe(&[change], true);
        assert!(shown.contains("+[mcp_servers.kg]"), "{shown}");
        assert!(shown.contains(" bearer_token = \"<redacted>\""), "{shown}");
        assert!(
            !shown.contains("ghp_") && !shown.contains("plain"),
            "{shown}"
        );
    }

    #[test]
    fn redaction_keeps_ordinary_values() {
        let v = redact(json!({
            "theme": "dark",
            "command": "/home/me/.local/bin/kg-memory",
            "url": "http://127.0.0.1:8765/",
            "env": {"KG_HTTP_PORT": "9123", "OTHER": "x"},
            "author": "me",
        }));
        assert_eq!(
            v,
            json!({
                "theme": "dark",
                "command": "/home/me/.local/bin/kg-memory",
                "url": "http://127.0.0.1:8765/",
                "env": {"KG_HTTP_PORT": "9123", "OTHER": REDACTED},
                "author": "me",
            })
        );
    }
}
