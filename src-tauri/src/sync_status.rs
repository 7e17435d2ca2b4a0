//! The git sync of the storage root as the tray shows it: one line in the tooltip,
//! the last sync in the menu, the outcome of "Sync now", and the notice when sync has
//! failed for a day. Everything here is text made from what `GET /api/sync` and
//! `POST /api/sync/now` answer; nothing here talks to the server.

use kg_server::payload::{SyncAnswer, SyncRepo};
use serde_json::Value;

/// How long sync may keep failing before the tray says so in a notification.
pub const STALE_AFTER_SECS: f64 = 86_400.0;

/// A moment as `YYYY-MM-DD HH:MM` in local time (`kg_server::clock::local_minute`;
/// tests pass a UTC one).
pub type Minute = fn(f64) -> String;

/// One repository that syncs: the storage root, or a project with a remote of its own,
/// in the server's own type for `GET /api/sync` (one shape for the server, the tray
/// and the view).
pub type Repo = SyncRepo;

/// "" for the storage root, " of project shop" for a project's own repository.
fn of_what(repo: &Repo) -> String {
    repo.project
        .as_deref()
        .map(|p| format!(" of project {p}"))
        .unwrap_or_default()
}

/// The sync state of everything in the storage root, as `GET /api/sync` answers it:
/// the root first, then each project that is a repository of its own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SyncInfo {
    pub repos: Vec<Repo>,
}

/// Where sync stands overall: the worst of the repositories that sync.
#[derive(Debug, Clone, PartialEq)]
pub enum Overall<'a> {
    /// Nothing syncs: the tray shows nothing about sync.
    Off,
    /// On, and no sync has finished yet.
    NotYet,
    /// Every repository synced; `at` is the oldest of their last syncs.
    Synced { at: f64 },
    /// A remote cannot be reached (the server retries on its own).
    Offline { since: f64, repo: &'a Repo },
    /// The last attempt failed for another reason (a refused push, an unreadable
    /// remote graph): it needs a person.
    Failed { at: Option<f64>, repo: &'a Repo },
}

impl SyncInfo {
    /// Read `GET /api/sync`'s answer; a key it lacks reads as its default (sync off).
    pub fn from_json(v: &Value) -> Result<SyncInfo, serde_json::Error> {
        let answer: SyncAnswer = serde_json::from_value(v.clone())?;
        let mut repos = vec![answer.root];
        repos.extend(answer.projects);
        for repo in &mut repos {
            // A blank error is no error.
            repo.last_error = repo.last_error.take().filter(|e| !e.trim().is_empty());
        }
        Ok(SyncInfo { repos })
    }

    fn synced(&self) -> impl Iterator<Item = &Repo> {
        self.repos.iter().filter(|r| r.on)
    }

    pub fn is_on(&self) -> bool {
        self.synced().next().is_some()
    }

    /// Merge conflicts waiting in node notes, across the repositories.
    pub fn conflicts(&self) -> usize {
        self.repos.iter().map(|r| r.conflicts).sum()
    }

    /// The oldest last sync of the repositories that sync (`None` if one never did).
    pub fn last_success(&self) -> Option<f64> {
        self.synced()
            .map(|r| r.last_success)
            .try_fold(f64::INFINITY, |oldest, ts| ts.map(|ts| oldest.min(ts)))
            .filter(|ts| ts.is_finite())
    }

    /// A failure that needs a person comes first; then an unreachable remote (the
    /// earliest); then the last sync.
    pub fn overall(&self) -> Overall<'_> {
        if !self.is_on() {
            return Overall::Off;
        }
        if let Some(repo) = self
            .synced()
            .find(|r| r.last_error.is_some() && r.offline_since.is_none())
        {
            return Overall::Failed {
                at: repo.last_attempt,
                repo,
            };
        }
        let offline = self
            .synced()
            .filter_map(|r| r.offline_since.map(|since| (since, r)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((since, repo)) = offline {
            return Overall::Offline { since, repo };
        }
        match self.last_success() {
            Some(at) => Overall::Synced { at },
            None => Overall::NotYet,
        }
    }
}

/// `10:42` today, `yesterday 10:42`, else `2026-12-01 10:42`.
pub fn short_time(ts: f64, now: f64, minute: Minute) -> String {
    let stamp = minute(ts);
    let (date, time) = stamp.split_once(' ').unwrap_or((stamp.as_str(), ""));
    let today = minute(now);
    let yesterday = minute(now - 86_400.0);
    if today.starts_with(date) && !time.is_empty() {
        time.to_string()
    } else if yesterday.starts_with(date) && !time.is_empty() {
        format!("yesterday {time}")
    } else {
        stamp.clone()
    }
}

/// The gist of a server error sentence, short enough for a tooltip line: its first
/// clause, without the parenthesised details (the remote's URL, git's own words).
pub fn short_cause(error: &str) -> String {
    const LONGEST: usize = 80;
    let mut out = String::new();
    let mut depth = 0usize;
    let mut chars = error.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            '.' | ';' if chars.peek().is_none_or(|n| n.is_whitespace()) => break,
            _ => out.push(c),
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let mut short = words.join(" ");
    if short.chars().count() > LONGEST {
        short = short.chars().take(LONGEST - 1).collect::<String>();
        short = format!("{}…", short.trim_end());
    }
    if short.is_empty() {
        "no reason given".to_string()
    } else {
        short
    }
}

/// " · 2 merge conflicts", or nothing.
fn conflicts_clause(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => " · 1 merge conflict".to_string(),
        n => format!(" · {n} merge conflicts"),
    }
}

/// The tooltip's sync line; `None` when nothing syncs.
pub fn tooltip_line(info: &SyncInfo, now: f64, minute: Minute) -> Option<String> {
    let when = |ts: f64| short_time(ts, now, minute);
    let state = match info.overall() {
        Overall::Off => return None,
        Overall::NotYet => "Sync: waiting for the first sync".to_string(),
        Overall::Synced { at } => format!("Sync: {}, up to date", when(at)),
        Overall::Offline { since, repo } => format!(
            "Sync{}: offline since {} (retrying)",
            of_what(repo),
            when(since)
        ),
        Overall::Failed { at, repo } => format!(
            "Sync{}: failed{} — {}",
            of_what(repo),
            at.map(|at| format!(" at {}", when(at))).unwrap_or_default(),
            short_cause(repo.last_error.as_deref().unwrap_or_default())
        ),
    };
    Some(format!("{state}{}", conflicts_clause(info.conflicts())))
}

/// The menu's disabled lines under "Sync now": the last sync, then what is wrong, if
/// anything. Empty when nothing syncs.
pub fn menu_lines(info: &SyncInfo, now: f64, minute: Minute) -> Vec<String> {
    let when = |ts: f64| short_time(ts, now, minute);
    let mut lines = Vec::new();
    match info.overall() {
        Overall::Off => return lines,
        _ => lines.push(match info.last_success() {
            Some(at) => format!("Last sync: {}", when(at)),
            None => "Last sync: never".to_string(),
        }),
    }
    match info.overall() {
        Overall::Offline { since, repo } => lines.push(format!(
            "Remote{} unreachable since {}; retrying",
            of_what(repo),
            when(since)
        )),
        Overall::Failed { repo, .. } => lines.push(format!(
            "Failed{}: {}",
            of_what(repo),
            short_cause(repo.last_error.as_deref().unwrap_or_default())
        )),
        _ => {}
    }
    lines
}

/// A notification: its title and its sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub summary: String,
    pub body: String,
}

/// What to say after "Sync now": `answer` is the server's status and body.
pub fn sync_now_notice(answer: Result<(u16, &str), String>) -> Notice {
    let failed = |body: String| Notice {
        summary: "KG Memory could not sync".to_string(),
        body,
    };
    let (status, body) = match answer {
        Ok(answer) => answer,
        Err(e) => {
            return failed(format!(
                "The memory server did not answer ({e}). Nothing was lost; try again in a moment."
            ));
        }
    };
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let detail = value["detail"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("the server answered {status}"));
        return failed(sentence(&detail));
    }
    let count = |key: &str| value[key].as_u64().unwrap_or(0);
    let (received, sent, conflicts) = (count("received"), count("sent"), count("conflicts"));
    let mut text = if received + sent == 0 {
        "Already in step with the remote: nothing to receive or send.".to_string()
    } else {
        format!(
            "Received {} from the remote and sent {}.",
            updates(received),
            updates(sent)
        )
    };
    if conflicts > 0 {
        text.push_str(&format!(
            " {conflicts} merge conflict(s) wait in node notes starting \"[merge conflict]\": read each, then edit the node or remove the note."
        ));
    }
    Notice {
        summary: "KG Memory synced".to_string(),
        body: text,
    }
}

fn updates(n: u64) -> String {
    match n {
        0 => "nothing".to_string(),
        1 => "1 update".to_string(),
        n => format!("{n} updates"),
    }
}

/// Capitalised and ended with a full stop.
fn sentence(text: &str) -> String {
    let text = text.trim();
    let mut chars = text.chars();
    let mut out = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
        None => return String::new(),
    };
    if !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}

/// The notice that sync has failed for a day, once per failing streak: `key` names
/// the streak (the repository and the moment it began), for the tray to remember it
/// was told. `first_seen_failing` stands in for the streak's start when a repository
/// never synced and its remote was reachable (nothing else dates it).
pub fn stale_notice(
    info: &SyncInfo,
    now: f64,
    minute: Minute,
    first_seen_failing: Option<f64>,
) -> Option<(String, Notice)> {
    info.synced()
        .filter(|r| r.last_error.is_some())
        .find_map(|repo| {
            let start = repo
                .last_success
                .or(repo.offline_since)
                .or(first_seen_failing)?;
            if now - start < STALE_AFTER_SECS {
                return None;
            }
            let cause = short_cause(repo.last_error.as_deref().unwrap_or_default());
            let last = repo
                .last_success
                .map(|ts| format!("The last sync was {}.", short_time(ts, now, minute)))
                .unwrap_or_else(|| "It has not synced yet.".to_string());
            let key = format!(
                "sync-failing:{}:{}",
                repo.project.as_deref().unwrap_or("storage root"),
                start.floor()
            );
            Some((
                key,
                Notice {
                    summary: format!("KG Memory could not sync{} for a day", of_what(repo)),
                    body: format!(
                        "KG Memory could not sync{} for a day: {cause}. Nothing is lost; this machine's changes are kept and go out with the next sync that works. {last} Open the tray menu to try \"Sync now\".",
                        of_what(repo)
                    ),
                },
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 2026-12-03 10:42 UTC.
    const NOW: f64 = 1_796_294_520.0;

    fn utc(ts: f64) -> String {
        let iso = kg_server::clock::iso_utc(ts);
        format!("{} {}", &iso[..10], &iso[11..16])
    }

    fn info(root: Value) -> SyncInfo {
        SyncInfo::from_json(&root).expect("a sync answer")
    }

    fn on(extra: Value) -> Value {
        let mut v = json!({
            "on": true, "remote": "origin (/r.git)", "branch": "main",
            "last_success": NOW - 60.0, "last_attempt": NOW - 60.0, "last_error": null,
            "offline_since": null, "ahead": 0, "behind": 0, "uncommitted": 0,
            "conflicts": 0, "summary": "Sync: on …", "projects": []
        });
        if let (Some(base), Some(more)) = (v.as_object_mut(), extra.as_object()) {
            for (k, val) in more {
                base.insert(k.clone(), val.clone());
            }
        }
        v
    }

    const UNREACHABLE: &str = "cannot reach the remote origin (/r.git) (fatal: '/r.git' does not appear to be a git repository. Please make sure you have the correct access rights). Nothing was lost: this machine's changes are committed locally and go out with the next sync";

    #[test]
    fn nothing_is_shown_when_sync_is_off() {
        let off = info(json!({"on": false, "conflicts": 0, "projects": []}));
        assert_eq!(off.overall(), Overall::Off);
        assert_eq!(tooltip_line(&off, NOW, utc), None);
        assert!(menu_lines(&off, NOW, utc).is_empty());
        assert_eq!(stale_notice(&off, NOW, utc, Some(0.0)), None);
        // An old server without the field: off as well.
        assert_eq!(tooltip_line(&info(json!({})), NOW, utc), None);
    }

    #[test]
    fn a_recent_sync_reads_as_up_to_date_with_its_time() {
        let synced = info(on(json!({})));
        assert_eq!(
            tooltip_line(&synced, NOW, utc).as_deref(),
            Some("Sync: 10:41, up to date")
        );
        assert_eq!(menu_lines(&synced, NOW, utc), vec!["Last sync: 10:41"]);
        let two = info(on(json!({"conflicts": 2})));
        assert_eq!(
            tooltip_line(&two, NOW, utc).as_deref(),
            Some("Sync: 10:41, up to date · 2 merge conflicts")
        );
        let never = info(on(json!({"last_success": null, "last_attempt": null})));
        assert_eq!(
            tooltip_line(&never, NOW, utc).as_deref(),
            Some("Sync: waiting for the first sync")
        );
        assert_eq!(menu_lines(&never, NOW, utc), vec!["Last sync: never"]);
    }

    #[test]
    fn times_say_today_yesterday_or_the_date() {
        assert_eq!(short_time(NOW - 3600.0, NOW, utc), "09:42");
        assert_eq!(short_time(NOW - 86_400.0, NOW, utc), "yesterday 10:42");
        assert_eq!(
            short_time(NOW - 3.0 * 86_400.0, NOW, utc),
            "2026-11-30 10:42"
        );
    }

    #[test]
    fn an_unreachable_remote_says_since_when_and_that_it_retries() {
        let offline = info(on(json!({
            "last_success": NOW - 2.0 * 3600.0,
            "last_attempt": NOW - 60.0,
            "offline_since": NOW - 5520.0,
            "last_error": UNREACHABLE,
        })));
        assert_eq!(
            tooltip_line(&offline, NOW, utc).as_deref(),
            Some("Sync: offline since 09:10 (retrying)")
        );
        assert_eq!(
            menu_lines(&offline, NOW, utc),
            vec![
                "Last sync: 08:42",
                "Remote unreachable since 09:10; retrying"
            ]
        );
    }

    #[test]
    fn a_failure_gives_its_short_cause_and_comes_before_an_offline_project() {
        let failed = info(on(json!({
            "last_error": "cannot push to the remote origin (/r.git) (remote: hook declined); nothing was lost, the changes stay committed here",
            "last_attempt": NOW,
            "last_success": NOW - 600.0,
            "conflicts": 1,
            "projects": [{
                "project": "shop", "on": true, "last_success": NOW - 600.0,
                "offline_since": NOW - 300.0, "last_error": UNREACHABLE, "conflicts": 1
            }],
        })));
        assert_eq!(
            tooltip_line(&failed, NOW, utc).as_deref(),
            Some("Sync: failed at 10:42 — cannot push to the remote origin · 2 merge conflicts")
        );
        assert_eq!(
            menu_lines(&failed, NOW, utc),
            vec![
                "Last sync: 10:32",
                "Failed: cannot push to the remote origin"
            ]
        );
        // The root fine, the project offline: the project is named.
        let project_offline = info(on(json!({"projects": [{
            "project": "shop", "on": true, "last_success": NOW - 600.0,
            "offline_since": NOW - 300.0, "last_error": UNREACHABLE
        }]})));
        assert_eq!(
            tooltip_line(&project_offline, NOW, utc).as_deref(),
            Some("Sync of project shop: offline since 10:37 (retrying)")
        );
        // The oldest last sync is the one shown.
        assert_eq!(project_offline.last_success(), Some(NOW - 600.0));
    }

    #[test]
    fn short_causes_keep_the_first_clause_without_details() {
        assert_eq!(short_cause(UNREACHABLE), "cannot reach the remote origin");
        assert_eq!(
            short_cause(
                "the remote's projects/shop/graph.json is not a readable memory graph (expected value at line 1); nothing was merged"
            ),
            "the remote's projects/shop/graph.json is not a readable memory graph"
        );
        assert_eq!(short_cause("  "), "no reason given");
        let long = "word ".repeat(40);
        let cut = short_cause(&long);
        assert!(cut.ends_with('…') && cut.chars().count() <= 80, "{cut}");
    }

    #[test]
    fn sync_now_says_what_happened_in_a_sentence() {
        let ok = sync_now_notice(Ok((
            200,
            r#"{"synced": true, "received": 2, "sent": 1, "conflicts": 0, "message": "Synced"}"#,
        )));
        assert_eq!(ok.summary, "KG Memory synced");
        assert_eq!(
            ok.body,
            "Received 2 updates from the remote and sent 1 update."
        );
        let quiet = sync_now_notice(Ok((
            200,
            r#"{"synced": true, "received": 0, "sent": 0, "conflicts": 1}"#,
        )));
        assert!(
            quiet.body.starts_with("Already in step with the remote")
                && quiet
                    .body
                    .contains("1 merge conflict(s) wait in node notes"),
            "{}",
            quiet.body
        );
        let refused = sync_now_notice(Ok((502, &json!({"detail": UNREACHABLE}).to_string())));
        assert_eq!(refused.summary, "KG Memory could not sync");
        assert!(
            refused.body.starts_with("Cannot reach the remote origin")
                && refused.body.ends_with("next sync."),
            "{}",
            refused.body
        );
        let down = sync_now_notice(Err("connection refused".into()));
        assert!(down.body.contains("did not answer (connection refused)"));
    }

    #[test]
    fn a_day_of_failures_is_told_once_per_streak() {
        let day_old = info(on(json!({
            "last_success": NOW - 25.0 * 3600.0,
            "offline_since": NOW - 24.5 * 3600.0,
            "last_error": UNREACHABLE,
        })));
        let (key, notice) = stale_notice(&day_old, NOW, utc, None).expect("a day old");
        assert_eq!(
            notice.body,
            "KG Memory could not sync for a day: cannot reach the remote origin. Nothing is lost; this machine's changes are kept and go out with the next sync that works. The last sync was yesterday 09:42. Open the tray menu to try \"Sync now\"."
        );
        // The same streak an hour later has the same key; the tray tells it once.
        let later = info(on(json!({
            "last_success": NOW - 25.0 * 3600.0,
            "offline_since": NOW - 24.5 * 3600.0,
            "last_error": UNREACHABLE,
        })));
        assert_eq!(
            stale_notice(&later, NOW + 3600.0, utc, None).map(|(k, _)| k),
            Some(key.clone())
        );
        // A new streak after a success is another key.
        let next = info(on(json!({
            "last_success": NOW + 3.0 * 3600.0,
            "last_error": "cannot push to the remote origin (x); nothing was lost",
        })));
        let (next_key, _) = stale_notice(&next, NOW + 28.0 * 3600.0, utc, None).expect("stale");
        assert_ne!(next_key, key);
        // Failing for less than a day, or not failing: nothing.
        let fresh = info(on(
            json!({"last_success": NOW - 3600.0, "last_error": UNREACHABLE}),
        ));
        assert_eq!(stale_notice(&fresh, NOW, utc, None), None);
        let fine = info(on(json!({"last_success": NOW - 3.0 * 86_400.0})));
        assert_eq!(stale_notice(&fine, NOW, utc, None), None);
        // Never synced: dated by when the tray first saw it fail.
        let never = info(on(
            json!({"last_success": null, "last_error": "cannot push to the remote origin (x)"}),
        ));
        assert_eq!(stale_notice(&never, NOW, utc, None), None);
        let (_, told) =
            stale_notice(&never, NOW, utc, Some(NOW - 90_000.0)).expect("seen failing for a day");
        assert!(
            told.body.contains("It has not synced yet."),
            "{}",
            told.body
        );
    }
}
