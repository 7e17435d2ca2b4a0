//! `kg-memory setup`: find the coding agents installed here, show what connecting each
//! one to KG Memory would change, ask, and connect the chosen ones — through the very
//! plans `kg-memory install <agent>` makes, so each edited file is backed up first and
//! `kg-memory uninstall <agent>` takes it back out.
//!
//! One agent's refusal (a damaged file, the plugin already wired) is said and the others
//! go on; an agent's files are planned again after the answer, and a file changed while
//! the person was deciding is left alone.

use kg_install::{
    Client, FileChange, Setup, apply, describe, describe_changes, desktop_config_path,
    place_program, plan_install, program_in_place,
};
use std::path::{Path, PathBuf};

/// What `kg-memory setup` was asked.
#[derive(Debug, Clone, Default)]
pub struct SetupRequest {
    /// Connect without asking.
    pub yes: bool,
    /// Only these agents (set up even when not found here: the person named them).
    pub only: Vec<Client>,
    /// Show the changes (with diffs) and change nothing.
    pub dry_run: bool,
}

/// A program found on `PATH`.
pub fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Why `client` counts as installed here, or `None`.
pub fn presence(client: Client, setup: &Setup) -> Option<String> {
    let dir = |path: &Path, what: &str| {
        path.is_dir()
            .then(|| format!("{what} {} exists", path.display()))
    };
    match client {
        Client::ClaudeCode => on_path("claude")
            .map(|p| format!("claude at {}", p.display()))
            .or_else(|| dir(&setup.claude.dir, "its folder")),
        Client::Codex => on_path("codex")
            .map(|p| format!("codex at {}", p.display()))
            .or_else(|| dir(&setup.codex.dir, "its folder")),
        Client::Gemini => on_path("gemini")
            .map(|p| format!("gemini at {}", p.display()))
            .or_else(|| {
                setup
                    .gemini_settings
                    .parent()
                    .and_then(|d| dir(d, "its folder"))
            }),
        // Its installer needs the folder Claude Desktop makes on its first start.
        Client::ClaudeDesktop => desktop_config_path(&setup.settings.home)
            .parent()
            .and_then(|d| dir(d, "its folder")),
    }
}

/// Why `kg-memory setup` did not connect everything it was to.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// Neither `--yes` nor a terminal to ask on: nothing was changed.
    #[error(
        "nothing was changed: there is no terminal to ask on. Run `kg-memory setup --yes` to make the changes above, or `kg-memory setup --yes --only {agents}` (some of them) to choose"
    )]
    NoTerminal { agents: String },
    /// The answer to a question could not be read.
    #[error("cannot read the answer")]
    Answer(#[source] std::io::Error),
    /// This many agents were refused (each said above); the others were connected.
    #[error("{}", not_connected(*.0))]
    NotConnected(usize),
}

fn not_connected(refused: usize) -> String {
    match refused {
        1 => "one agent was not connected (see above)".to_string(),
        n => format!("{n} agents were not connected (see above)"),
    }
}

/// One agent's part of the run.
struct Step {
    client: Client,
    plan: Vec<FileChange>,
    /// What placing the program would do (empty: it is in place).
    program: Vec<String>,
}

impl Step {
    fn changes_anything(&self) -> bool {
        !self.program.is_empty() || self.plan.iter().any(|c| !c.summary.is_empty())
    }
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// Run `kg-memory setup`. `ask` puts a yes/no question to the person.
pub fn run(
    request: &SetupRequest,
    setup: &Setup,
    now: f64,
    say: fn(&str),
    ask: &mut dyn FnMut(&str) -> std::io::Result<bool>,
    can_ask: bool,
) -> Result<(), SetupError> {
    let chosen: Vec<(Client, String)> = if request.only.is_empty() {
        Client::ALL
            .into_iter()
            .filter_map(|c| presence(c, setup).map(|why| (c, why)))
            .collect()
    } else {
        request
            .only
            .iter()
            .map(|&c| {
                let why = presence(c, setup).unwrap_or_else(|| "named with --only".to_string());
                (c, why)
            })
            .collect()
    };
    if chosen.is_empty() {
        say(&format!(
            "No agent found here (looked for {}). Install one, or name one: `kg-memory setup --only {}`.\n",
            Client::ALL.map(Client::title).join(", "),
            Client::ALL.map(Client::name).join(",")
        ));
        return Ok(());
    }
    let mut steps = Vec::new();
    let mut refused = 0;
    for (client, why) in &chosen {
        say(&format!("{} ({why}):\n", client.title()));
        // A copy already in place is no change to show (install refreshes it anyway).
        let placing = |c: Client| match program_in_place(setup, c) {
            true => Ok(None),
            false => place_program(setup, c, true),
        };
        let planned = plan_install(*client, setup).and_then(|plan| Ok((plan, placing(*client)?)));
        match planned {
            Ok((plan, program)) => {
                let step = Step {
                    client: *client,
                    plan,
                    program: program.into_iter().collect(),
                };
                if step.changes_anything() {
                    say(&indent(&describe_changes(&step.plan, request.dry_run)));
                    for line in &step.program {
                        say(&format!("  {line}\n"));
                    }
                    steps.push(step);
                } else {
                    say("  already connected; nothing to change\n");
                }
            }
            Err(e) => {
                refused += 1;
                say(&format!("  cannot connect it: {e}\n"));
            }
        }
    }
    if request.dry_run {
        say(kg_install::DRY_RUN_FOOTER);
        return Ok(());
    }
    if steps.is_empty() {
        say("Nothing to change.\n");
        return finish(refused);
    }
    if !request.yes && !can_ask {
        return Err(SetupError::NoTerminal {
            agents: steps
                .iter()
                .map(|s| s.client.name())
                .collect::<Vec<_>>()
                .join(","),
        });
    }
    let mut done = Vec::new();
    for step in steps {
        let title = step.client.title();
        if !request.yes && !ask(&format!("Connect {title}? [y/N] ")).map_err(SetupError::Answer)? {
            say(&format!("{title}: left as it is.\n"));
            continue;
        }
        // The files as they are now: the person may have taken a while to answer.
        let now_plan = match plan_install(step.client, setup) {
            Ok(plan) if plan == step.plan => plan,
            Ok(_) => {
                refused += 1;
                say(&format!(
                    "{title}: its files changed since they were shown; nothing was changed. Run `kg-memory setup` again.\n"
                ));
                continue;
            }
            Err(e) => {
                refused += 1;
                say(&format!("{title}: cannot connect it: {e}\n"));
                continue;
            }
        };
        let placed = match step.program.is_empty() {
            true => Ok(None),
            false => place_program(setup, step.client, false),
        };
        let result = placed.and_then(|placed| apply(&now_plan, now, true).map(|()| placed));
        match result {
            Ok(placed) => {
                say(&format!("{title}: connected.\n"));
                say(&indent(&describe(&now_plan, false)));
                if let Some(line) = placed {
                    say(&format!("  {line}\n"));
                }
                done.push(step.client);
            }
            Err(e) => {
                refused += 1;
                say(&format!("{title}: {e}\n"));
            }
        }
    }
    if !done.is_empty() {
        let serve = kg_server::launch::serve_command(&setup.settings);
        say(&crate::session_notice::setup_closing_words(&serve, &done));
    }
    finish(refused)
}

fn finish(refused: usize) -> Result<(), SetupError> {
    match refused {
        0 => Ok(()),
        n => Err(SetupError::NotConnected(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kg_server::Settings;
    use kg_server::config::{DEFAULT_HOST, DEFAULT_PORT, default_storage_root};
    use std::fs;

    /// A setup whose every file is inside `home`.
    fn setup(home: &Path) -> Setup {
        let mut settings = Settings::from_env().expect("settings");
        settings.home = home.to_path_buf();
        settings.host = DEFAULT_HOST.into();
        settings.port = DEFAULT_PORT;
        settings.storage_root = default_storage_root(home);
        Setup::new(&settings, "/opt/kg/bin/kg-memory".into()).inside(home)
    }

    fn quiet(_: &str) {}

    #[test]
    fn only_the_agents_the_person_accepts_are_connected() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let request = SetupRequest {
            only: vec![Client::ClaudeCode, Client::Codex],
            ..SetupRequest::default()
        };
        let mut asked = Vec::new();
        let mut ask = |q: &str| {
            asked.push(q.to_string());
            Ok(q.contains("Codex"))
        };
        run(&request, &s, 1.0, quiet, &mut ask, true).expect("setup");
        assert_eq!(
            asked,
            ["Connect Claude Code? [y/N] ", "Connect Codex CLI? [y/N] "]
        );
        assert!(home.path().join(".codex/hooks.json").exists());
        assert!(!home.path().join(".claude.json").exists(), "declined");

        // Nothing left to do for Codex: only Claude Code is asked about again.
        let mut asked = Vec::new();
        let mut ask = |q: &str| {
            asked.push(q.to_string());
            Ok(false)
        };
        run(&request, &s, 2.0, quiet, &mut ask, true).expect("setup");
        assert_eq!(asked, ["Connect Claude Code? [y/N] "]);
    }

    #[test]
    fn without_a_terminal_or_yes_nothing_changes_and_a_refusal_leaves_the_others() {
        let home = tempfile::tempdir().expect("home");
        let s = setup(home.path());
        let request = SetupRequest {
            only: vec![Client::ClaudeCode, Client::Codex],
            ..SetupRequest::default()
        };
        let mut never = |_: &str| -> std::io::Result<bool> { panic!("no terminal to ask on") };
        let err = run(&request, &s, 1.0, quiet, &mut never, false).expect_err("no terminal");
        assert!(err.to_string().contains("--yes"), "{err}");
        assert!(
            fs::read_dir(home.path()).expect("ls").next().is_none(),
            "nothing written"
        );

        // Claude Code's file is damaged: it is left as it is, Codex is connected.
        fs::write(home.path().join(".claude.json"), "{oops").expect("write");
        let request = SetupRequest {
            yes: true,
            ..request
        };
        let err = run(&request, &s, 1.0, quiet, &mut never, false).expect_err("one refused");
        assert!(err.to_string().contains("one agent"), "{err}");
        assert_eq!(
            fs::read_to_string(home.path().join(".claude.json")).expect("read"),
            "{oops"
        );
        assert!(home.path().join(".codex/config.toml").exists());
    }
}
