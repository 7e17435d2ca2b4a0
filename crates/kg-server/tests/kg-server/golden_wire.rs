//! Golden parity over the wire: every reference case is replayed against the real
//! server (started on a copy of the fixture storage with the case's frozen clock) and
//! compared byte for byte outside the marked prose spans, one test per case
//! (`cargo test -p kg-server --test kg-server golden_wire::reference_042`).

use crate::server::{Server, query};
use kg_test_support::golden::{Placeholders, Span, matches_with_prose, read_case};
use kg_test_support::{T, TempHome};
use serde_json::Value;
use std::fs;
use std::path::Path;

/// Known, documented divergences (COMPATIBILITY.md), applied to the expected output.
fn expected_with_divergences(name: &str, raw: &str) -> String {
    if name.starts_with("001-") {
        // /health reports our own version, not the reference's.
        return raw.replace(
            "\"version\":\"0.9.30\"",
            &format!("\"version\":\"{}\"", kg_server::VERSION),
        );
    }
    raw.to_string()
}

fn step_now(step: &Value, case: &Value) -> f64 {
    step.get("now")
        .or_else(|| case.get("now"))
        .and_then(Value::as_f64)
        .unwrap_or(T)
}

struct Wire {
    server: Server,
    ph: Placeholders,
}

impl Wire {
    /// Learn session ids from the places our outputs carry them.
    fn learn(&mut self, text: &str) {
        for marker in [
            "Session: ",
            "session_id: ",
            "session_id='",
            "\"session_id\":\"",
        ] {
            let mut rest = text;
            while let Some(pos) = rest.find(marker) {
                rest = &rest[pos + marker.len()..];
                let Some(candidate) = rest.get(..8) else {
                    break;
                };
                let hex = candidate
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                let bounded = rest
                    .as_bytes()
                    .get(8)
                    .is_none_or(|b| !b.is_ascii_alphanumeric());
                if hex && bounded && !self.ph.sids.iter().any(|s| s == candidate) {
                    self.ph.sids.push(candidate.to_string());
                }
            }
        }
    }

    /// Run a step; `Err` describes a mismatch.
    fn run(
        &mut self,
        name: &str,
        step: &Value,
        case: &Value,
        spans: &[Span],
    ) -> Result<(), String> {
        self.server.set_now(step_now(step, case));
        let expected = step.get("output");
        match step["kind"].as_str() {
            Some("write_file") => {
                let path = self.ph.fill(step["path"].as_str().unwrap_or_default());
                let content = self.ph.fill(step["content"].as_str().unwrap_or_default());
                if let Some(parent) = Path::new(&path).parent() {
                    fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                fs::write(&path, content).map_err(|e| e.to_string())
            }
            Some("mcp") => {
                let args = self.ph.fill_value(&step["args"]);
                let (text, is_error) = self
                    .server
                    .call(step["tool"].as_str().unwrap_or_default(), &args);
                self.learn(&text);
                let Some(expected) = expected else {
                    return Ok(());
                };
                let want = expected["text"].as_str().unwrap_or_default();
                matches_with_prose(want, &self.ph.normalise(&text), spans, false)?;
                let error_text = ["Error:", "Internal error:", "Input validation error:"]
                    .iter()
                    .any(|p| want.starts_with(p));
                // Divergence (COMPATIBILITY.md): every error sets isError.
                let want_error = expected["isError"].as_bool().unwrap_or(false) || error_text;
                if is_error != want_error {
                    return Err(format!("isError {is_error} for {want:?}"));
                }
                Ok(())
            }
            Some("rest") => {
                let params = self
                    .ph
                    .fill_value(step.get("params").unwrap_or(&Value::Null));
                let path = format!(
                    "{}{}",
                    self.ph.fill(step["path"].as_str().unwrap_or_default()),
                    params.as_object().map(query).unwrap_or_default()
                );
                let body = step.get("body").map(|b| self.ph.fill_value(b).to_string());
                let headers: &[(&str, &str)] = if body.is_some() {
                    &[("Content-Type", "application/json")]
                } else {
                    &[]
                };
                let method = step["method"].as_str().unwrap_or("GET");
                let (status, content_type, raw) = self
                    .server
                    .http(method, &path, body.as_deref(), headers)
                    .map_err(|e| e.to_string())?;
                self.learn(&raw);
                let Some(expected) = expected else {
                    return Ok(());
                };
                let want_status = expected["status"].as_u64().unwrap_or(200) as u16;
                if status != want_status {
                    return Err(format!("status {status}, expected {want_status}: {raw}"));
                }
                if let Some(ct) = expected["content_type"].as_str()
                    && !content_type.starts_with(ct)
                {
                    return Err(format!("content type {content_type}, expected {ct}"));
                }
                let want =
                    expected_with_divergences(name, expected["raw"].as_str().unwrap_or_default());
                matches_with_prose(&want, &self.ph.normalise(&raw), spans, true)
            }
            other => Err(format!("unknown step kind {other:?}")),
        }
    }
}

fn replay(name: &str, case: &Value) -> Result<(), String> {
    let home = TempHome::named("kg-server-test-").with_fixture_storage("storage");
    let home_text = home.path.to_string_lossy().into_owned();
    // The reference's behaviour, exactly: our improvements change pinned outputs.
    let server = Server::start_in(
        &home.path,
        &home.storage(),
        Some(step_now(case, case)),
        &[("KG_POLICY", "reference")],
    );
    let single = case["sid_placeholders"]
        .as_array()
        .is_some_and(|a| a.len() <= 1);
    let mut wire = Wire {
        server,
        ph: Placeholders {
            home: home_text,
            sids: Vec::new(),
            single,
        },
    };
    for (i, step) in case["setup"].as_array().into_iter().flatten().enumerate() {
        let spans = Span::list(case["setup_prose"].get(i.to_string()));
        wire.run(name, step, case, &spans)
            .map_err(|e| format!("{name} setup[{i}]: {e}"))?;
    }
    let mut call = case["call"].clone();
    call["output"] = case["output"].clone();
    let spans = Span::list(case.get("prose"));
    wire.run(name, &call, case, &spans)
        .map_err(|e| format!("{name}: {e}"))
}

fn check(file: &str) {
    if let Err(e) = replay(file, &read_case(file)) {
        panic!("{e}");
    }
}

kg_test_support::reference_cases!(check);
