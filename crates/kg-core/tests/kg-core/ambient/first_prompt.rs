//! Our policy on the first prompts: recall with the full-read nudge, reminders that
//! fit, a session outside home.

use super::*;

impl World {
    fn reply(&self, claude: &str, prompt: &str, now: f64) -> kg_core::PromptReply {
        let payload = json!({
            "session_id": claude,
            "transcript_path": "",
            "cwd": self.project,
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        });
        kg_core::prompt_reply(&self.store, &prompt_event(&payload), now)
    }
}

#[test]
fn the_first_prompt_gets_its_recall_with_the_full_read_nudge() {
    let w = World::new();
    let writer = w.session("cc-writer", true);
    w.node(
        &writer,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed before verifying",
        &[],
    );
    let sid = w.session("cc-first", false);
    let kg_core::PromptReply::Say(text) = w.reply(
        "cc-first",
        "why does the stripe webhook signature check fail?",
        T,
    ) else {
        panic!("the first prompt is answered");
    };
    let (nudge, recall) = text.split_once("\n\n").expect("nudge, then recall");
    assert_eq!(nudge, kg_core::wording::FULL_READ_NUDGE);
    assert!(recall.starts_with(RECALL_HEADER), "{recall}");
    assert!(recall.contains("billing-webhook-signature"), "{recall}");
    assert!(
        w.seen(&sid)
            .contains(&"billing-webhook-signature".to_string())
    );
    // Seen now: the same question brings only the nudge.
    assert_eq!(
        w.reply(
            "cc-first",
            "why does the stripe webhook signature check fail?",
            T + 5.0
        ),
        kg_core::PromptReply::Say(kg_core::wording::FULL_READ_NUDGE.to_string())
    );
}

#[test]
fn the_reference_policy_gives_the_first_prompt_the_nudge_alone() {
    let home = TempHome::new();
    let project = home.path.join("proj");
    fs::create_dir_all(&project).expect("project folder");
    let mut config = kg_core::StoreConfig::new(home.storage(), &home.path);
    config.policy = kg_core::Policy::Reference;
    let w = World {
        project: project.to_string_lossy().into_owned(),
        store: Store::open(config, T).expect("store"),
        home,
    };
    let writer = w.session("cc-writer", true);
    w.node(
        &writer,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed first",
        &[],
    );
    w.session("cc-first", false);
    assert_eq!(
        w.reply(
            "cc-first",
            "why does the stripe webhook signature check fail?",
            T
        ),
        kg_core::PromptReply::Say(kg_core::wording::FULL_READ_NUDGE.to_string())
    );
    // After the full read, nothing new: the hook picks a reminder itself.
    let done = w.session("cc-done", true);
    w.store.mark_seen(&done, ["billing-webhook-signature"]);
    assert_eq!(
        w.reply(
            "cc-done",
            "why does the stripe webhook signature check fail?",
            T
        ),
        kg_core::PromptReply::Nothing
    );
}

#[test]
fn reminders_fit_the_topic_and_the_state_and_do_not_repeat_at_once() {
    let w = World::new();
    let sid = w.session("cc-remind", true);
    w.node(
        &sid,
        "billing-webhook-signature",
        "Stripe webhook signatures fail when the body is parsed first",
        &[],
    );
    w.store.mark_seen(&sid, ["billing-webhook-signature"]);
    // Nothing the memory knows: silence, not a tip.
    assert_eq!(
        w.reply("cc-remind", "write a haiku about autumn leaves", T),
        kg_core::PromptReply::Quiet
    );
    // Known topic, already in context: a pointer to the node that fits, once.
    assert_eq!(
        w.reply("cc-remind", "the stripe webhook signature", T),
        kg_core::PromptReply::Say(format!(
            "{RECALL_HEADER}\n- [project] billing-webhook-signature (in context)"
        ))
    );
    // Pointed at already, nothing new: a reminder, never "if no memory is loaded
    // yet" after the full read, and about subagents only when the prompt speaks of
    // them.
    let kg_core::PromptReply::Say(reminder) =
        w.reply("cc-remind", "the stripe webhook signature again", T)
    else {
        panic!("a reminder");
    };
    let fits = kg_core::wording::REMINDERS_MID
        .iter()
        .chain(kg_core::wording::REMINDERS_EARLY)
        .chain(kg_core::wording::REMINDERS_DEEP)
        .find(|r| r.text == reminder)
        .map(|r| r.fits);
    assert_eq!(fits, Some(kg_core::ReminderFits::Always), "{reminder}");
    // Within ten minutes of it: nothing more.
    assert_eq!(
        w.reply(
            "cc-remind",
            "the stripe webhook signature once more",
            T + 60.0
        ),
        kg_core::PromptReply::Quiet
    );
    let later = T + kg_core::ambient::REMINDER_GAP_SECS + 1.0;
    assert!(matches!(
        w.reply(
            "cc-remind",
            "the stripe webhook signature, third time",
            later
        ),
        kg_core::PromptReply::Say(_)
    ));
    // No reminder ever says to load memory once it is loaded.
    for (i, prompt) in [
        "stripe webhook retries",
        "the webhook signature header",
        "stripe signature secrets",
    ]
    .iter()
    .enumerate()
    {
        let at = later + (i as f64 + 1.0) * (kg_core::ambient::REMINDER_GAP_SECS + 1.0);
        if let kg_core::PromptReply::Say(text) = w.reply("cc-remind", prompt, at) {
            assert!(!text.contains("no memory is loaded"), "{text}");
            assert!(!text.contains("subagent"), "{text}");
        }
    }
}

#[test]
fn a_session_outside_home_gets_the_user_graph_and_the_reason_there_is_no_project_memory() {
    let w = World::new();
    let writer = w.store.register_session(None, None, T).expect("session");
    let answer = tools::kg_put_node(
        &w.store,
        &PutNodeArgs {
            session_id: writer,
            level: Level::User,
            id: "style-tabs".into(),
            gist: "The user indents with tabs in every language".into(),
            notes: None,
            touches: None,
        },
        T,
    );
    assert!(!answer.is_error, "{}", answer.text);
    let outside = tempfile::tempdir().expect("a folder outside home");
    let folder = outside.path().to_string_lossy().into_owned();
    let boot = kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: folder.clone(),
            claude_session_id: Some("cc-outside".into()),
            source: Some("startup".into()),
            transcript_path: None,
        },
        kg_core::PreloadHeader::Standard,
        T,
    )
    .expect("a preload, not an error");
    assert!(boot.context.contains("style-tabs"), "{}", boot.context);
    assert!(
        boot.context
            .ends_with(&kg_core::wording::no_project_memory(&folder)),
        "{}",
        boot.context
    );
    assert!(boot.context.contains("KG_PROJECT_ROOTS"));
    assert_eq!(
        w.store
            .session(&boot.session_id)
            .and_then(|r| r.project_path),
        None
    );
    // A relative folder is refused: the server cannot know what it is relative to.
    let relative = kg_core::session_bootstrap(
        &w.store,
        &kg_core::BootstrapRequest {
            project_path: "src/shop".into(),
            ..Default::default()
        },
        kg_core::PreloadHeader::Standard,
        T,
    );
    assert!(relative.is_err_and(|e| e.to_string().starts_with("Project path must be absolute")),);
}
