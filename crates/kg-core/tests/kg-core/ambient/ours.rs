//! Our recall (the default policy): short technical words, neighbours, pasted files,
//! other languages, nothing twice; Codex sessions.

use super::*;

/// A small memory in several topics, so rarity means something.
fn our_memory(w: &World, sid: &str) {
    for (id, gist, touches) in [
        (
            "auth-jwt-access-ttl",
            "Access JWT lives 15 minutes; pods cache the JWKS for 10 minutes",
            &[][..],
        ),
        (
            "auth-jwks-rotation-overlap",
            "JWKS rotation keeps the old key published 25 minutes, or everyone is logged out",
            &[][..],
        ),
        (
            "billing-webhook-raw-body",
            "The Stripe webhook handler takes the raw body as Bytes: signatures break on re-serialised JSON",
            &["crates/api/src/billing/webhook.rs:20-75 (async fn stripe_webhook)"][..],
        ),
        (
            "billing-stripe-429",
            "Stripe answers 429 during the nightly sync; the client backs off with jitter",
            &[][..],
        ),
        (
            "radio-duty-cycle",
            "Uplink batch sizes were derived from the radio duty cycle limit",
            &[][..],
        ),
        (
            "deploy-rollback",
            "Rollback redeploys the previous image tag; migrations only move forward",
            &[][..],
        ),
        (
            "queue-lease-timeout",
            "A job lease lasts 5 minutes; longer jobs must heartbeat or run twice",
            &[][..],
        ),
        (
            "tenant-gdpr-export",
            "GDPR export of a tenant runs as a long job in the bulk lane",
            &[][..],
        ),
    ] {
        w.node(sid, id, gist, touches);
    }
    w.edge(
        sid,
        "tenant-gdpr-export",
        "queue-lease-timeout",
        "depends-on",
    );
    w.edge(
        sid,
        "auth-jwks-rotation-overlap",
        "auth-jwt-access-ttl",
        "explains",
    );
}

/// A world under our policy holding [`our_memory`], with session `cc-1` past its full
/// read.
fn our_world() -> World {
    let w = World::new();
    let sid = w.session("cc-1", true);
    our_memory(&w, &sid);
    w
}

fn hit_ids(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("- [project] "))
        .filter_map(|rest| rest.split(':').next())
        .collect()
}

#[test]
fn our_recall_counts_short_technical_words() {
    let w = our_world();
    let text = w
        .prompt("cc-1", "JWT ttl")
        .expect("a two-word prompt in the memory's words injects");
    assert_eq!(hit_ids(&text)[0], "auth-jwt-access-ttl", "{text}");
    let text = w.prompt("cc-1", "429s").expect("a status code is a word");
    assert_eq!(hit_ids(&text), ["billing-stripe-429"], "{text}");
}

#[test]
fn our_recall_stays_silent_when_the_prompt_shares_one_ordinary_word() {
    let w = our_world();
    // "derivative" and "derived" share a stem, and nothing else is shared.
    assert_eq!(
        w.prompt("cc-1", "what's the derivative of x^3 * sin(x)?"),
        None
    );
    // Words the memory has never seen outweigh the one it has.
    assert_eq!(
        w.prompt("cc-1", "write a haiku about autumn rain and a job"),
        None
    );
    assert_eq!(w.prompt("cc-1", "ok go ahead"), None);
}

#[test]
fn our_recall_pulls_in_the_neighbour_the_prompt_also_names() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "the GDPR export job of one tenant runs twice, what about the lease?",
        )
        .expect("injects");
    let ids = hit_ids(&text);
    assert!(ids.contains(&"tenant-gdpr-export"), "{text}");
    let lease_named = text.contains("queue-lease-timeout");
    assert!(
        lease_named,
        "the neighbour joins as a hit or a connection: {text}"
    );
    assert!(!text.contains("auth-"), "nothing of another topic: {text}");
}

#[test]
fn our_recall_finds_the_node_touching_a_pasted_file() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "crates/api/src/billing/webhook.rs why do we take Bytes here instead of Json?",
        )
        .expect("injects");
    assert_eq!(hit_ids(&text), ["billing-webhook-raw-body"], "{text}");
}

#[test]
fn our_recall_judges_a_prompt_in_another_language_by_its_technical_words() {
    let w = our_world();
    let text = w
        .prompt(
            "cc-1",
            "warum bekommen wir 429 von Stripe beim nächtlichen Sync?",
        )
        .expect("injects");
    assert_eq!(hit_ids(&text), ["billing-stripe-429"], "{text}");
}

#[test]
fn our_recall_says_nothing_twice() {
    let w = our_world();
    assert!(w.prompt("cc-1", "rollback of a deploy").is_some());
    assert_eq!(w.prompt("cc-1", "rollback of a deploy again"), None);
}

#[test]
fn a_codex_session_gets_a_preload_sized_in_bytes_for_codex() {
    let w = World::new();
    let writer = w.store.register_session(None, None, T).expect("session");
    // Cyrillic gists: two bytes per character, one UTF-16 unit, so the units differ.
    for i in 0..70 {
        let gist = format!("Заметка номер {i}: {}", "память агента ".repeat(18));
        let answer = tools::kg_put_node(
            &w.store,
            &PutNodeArgs {
                session_id: writer.clone(),
                level: Level::User,
                id: format!("note-{i}"),
                gist,
                notes: None,
                touches: None,
            },
            T,
        );
        assert!(!answer.is_error, "{}", answer.text);
    }
    let home = w.store.config().home.clone();
    let boot = |id: &str, transcript: &str| {
        kg_core::session_bootstrap(
            &w.store,
            &kg_core::BootstrapRequest {
                project_path: home.to_string_lossy().into_owned(),
                claude_session_id: Some(id.into()),
                source: Some("startup".into()),
                transcript_path: Some(transcript.into()),
            },
            kg_core::PreloadHeader::Standard,
            T,
        )
        .expect("a preload")
        .context
    };
    let codex = boot(
        "019a0000-0000-7000-8000-00000000c0de",
        &format!(
            "{}/.codex/sessions/2026/12/05/rollout-2026-12-05T18-00-00-019a.jsonl",
            home.display()
        ),
    );
    let claude = boot(
        "0b1e0000-0000-4000-8000-00000000c1a0",
        &format!("{}/.claude/projects/-p/0b1e.jsonl", home.display()),
    );
    let utf16 = |t: &str| t.chars().map(char::len_utf16).sum::<usize>();
    assert!(codex.len() <= 9_000, "{} bytes", codex.len());
    assert!(
        codex.len() > 8_000,
        "the budget is used: {} bytes",
        codex.len()
    );
    assert!(utf16(&claude) <= 10_000, "{} units", utf16(&claude));
    assert!(claude.len() > 9_000, "Claude Code counts units, not bytes");
}

#[test]
fn a_codex_session_without_hooks_is_told_how_to_get_them_once() {
    use kg_core::tools::ReadArgs;
    let w = World::new();
    let read = |client: kg_core::Client| {
        kg_core::kg_read(
            &w.store,
            &ReadArgs {
                cwd: Some(w.project.clone()),
                client,
                ..ReadArgs::default()
            },
            T,
        )
    };
    let hint = kg_core::wording::CODEX_NO_HOOKS;
    let claude = read(kg_core::Client::ClaudeCode);
    assert!(
        !claude.is_error && !claude.text.contains(hint),
        "{}",
        claude.text
    );
    let codex = read(kg_core::Client::Codex);
    assert!(codex.text.ends_with(hint), "{}", codex.text);
    // Once its hooks preload a session here, a Codex read starts without the note.
    kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: w.project.clone(),
            claude_session_id: Some("019a0000-0000-7000-8000-0000000000c1".into()),
            source: Some("startup".into()),
            transcript_path: None,
        },
        kg_core::PreloadHeader::Standard,
        T,
    )
    .expect("a preload");
    let text = kg_core::kg_read(
        &w.store,
        &ReadArgs {
            cwd: Some(w.project.clone()),
            client: kg_core::Client::Codex,
            ..ReadArgs::default()
        },
        T + 1.0,
    );
    assert!(!text.text.contains(hint), "{}", text.text);
}
