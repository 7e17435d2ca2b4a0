//! "Start at login" names the app's stable path: an installed app (the package's
//! `/usr/bin/kg-memory-app`, an AppImage) as it is; an app running from a cargo build
//! folder through a copy in `~/.local/bin`, with the `kg-memory` beside it, which the
//! login item owns like `kg-memory install` owns its copies. Never the build folder,
//! which `cargo clean` or a moved clone would leave the login item pointing into.

use anyhow::Context;
use auto_launch::{AutoLaunch, AutoLaunchBuilder};
use kg_install::{ProgramUser, Setup, place_program, release_program};
use kg_server::Settings;
use std::path::{Path, PathBuf};

/// The login item's name (the desktop entry in `~/.config/autostart/`, the macOS
/// launch agent, the Windows registry value): the app's product name, as the Tauri
/// autostart plugin named it before, so an item it made is found and replaced.
const NAME: &str = "KG Memory";

/// The program the login item starts, and where it comes from when it must be copied
/// there first.
fn setups(settings: &Settings) -> anyhow::Result<Vec<Setup>> {
    let app = running_app()?;
    let mut setups = vec![Setup::for_program(settings, &app)];
    // An app copied out of a build folder finds its `kg-memory` beside it.
    if setups[0].copy_from.is_some() {
        let cli = app.with_file_name(if cfg!(windows) {
            "kg-memory.exe"
        } else {
            "kg-memory"
        });
        if cli.is_file() {
            setups.push(Setup::for_program(settings, &cli));
        }
    }
    Ok(setups)
}

/// This app: the AppImage it runs from, if any (its own executable is inside a mount
/// that goes away), else its executable.
fn running_app() -> anyhow::Result<PathBuf> {
    if let Some(appimage) = std::env::var_os("APPIMAGE").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(appimage));
    }
    std::env::current_exe().context("cannot find this app's own path")
}

fn launcher(program: &Path) -> anyhow::Result<AutoLaunch> {
    let path = program.to_string_lossy();
    AutoLaunchBuilder::new()
        .set_app_name(NAME)
        .set_app_path(&path)
        .set_macos_launch_mode(auto_launch::MacOSLaunchMode::LaunchAgent)
        .build()
        .context("cannot prepare the login item")
}

/// Whether the app starts at login.
pub fn is_enabled(settings: &Settings) -> bool {
    setups(settings)
        .and_then(|s| launcher(&s[0].exe))
        .and_then(|l| l.is_enabled().context("cannot read the login item"))
        .unwrap_or(false)
}

/// Turn starting at login on; the path the login item names.
pub fn enable(settings: &Settings) -> anyhow::Result<PathBuf> {
    let setups = setups(settings)?;
    for setup in &setups {
        place_program(setup, ProgramUser::LoginItem, false)?;
    }
    let app = &setups[0].exe;
    launcher(app)?
        .enable()
        .with_context(|| format!("cannot make {} start at login", app.display()))?;
    Ok(app.clone())
}

/// Turn starting at login off, and remove the copies only it still used.
pub fn disable(settings: &Settings) -> anyhow::Result<()> {
    let setups = setups(settings)?;
    launcher(&setups[0].exe)?
        .disable()
        .context("cannot remove the login item")?;
    for setup in &setups {
        release_program(setup, ProgramUser::LoginItem, false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs itself again with `HOME` in a temporary folder (the login item is written
    /// under `HOME`, which one test must not change for the others running beside it).
    #[test]
    fn start_at_login_names_a_copy_outside_the_build_folder_and_off_removes_both() {
        const CHILD: &str = "KG_LOGIN_TEST_HOME";
        let Some(home) = std::env::var_os(CHILD).map(PathBuf::from) else {
            let home = tempfile::tempdir().expect("home");
            let status = std::process::Command::new(std::env::current_exe().expect("test binary"))
                .args([
                    "--exact",
                    "login::tests::start_at_login_names_a_copy_outside_the_build_folder_and_off_removes_both",
                    "--nocapture",
                ])
                .env(CHILD, home.path())
                .env("HOME", home.path())
                .env_remove("XDG_STATE_HOME")
                .env_remove("XDG_CONFIG_HOME")
                .status()
                .expect("run the test in a child");
            assert!(status.success());
            return;
        };
        let mut settings = Settings::from_env().expect("settings");
        settings.home = home.clone();
        assert!(!is_enabled(&settings));
        // The test binary runs from target/debug/deps: a build folder.
        let app = enable(&settings).expect("enable");
        assert!(
            app.starts_with(home.join(".local/bin")),
            "{}",
            app.display()
        );
        assert!(app.is_file(), "the copy is made");
        assert!(is_enabled(&settings));
        let entry = std::fs::read_to_string(home.join(".config/autostart/KG Memory.desktop"))
            .expect("the login item");
        assert!(entry.contains(&app.display().to_string()), "{entry}");
        assert!(!entry.contains("/target/"), "{entry}");

        disable(&settings).expect("disable");
        assert!(!is_enabled(&settings));
        assert!(
            !app.exists(),
            "the copy only the login item used is removed"
        );
    }
}
