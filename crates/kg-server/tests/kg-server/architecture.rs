//! ARCHITECTURE.md's "Where a change goes" names the files a newcomer touches for each
//! kind of change; these tests fail when a named path no longer exists.

use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository paths quoted (in backticks) in `text`: spans that start with a
/// top folder of the repository and hold no spaces.
fn quoted_paths(text: &str) -> Vec<String> {
    const TOPS: [&str; 6] = [
        "crates/",
        "ui/",
        "hooks/",
        "tests/",
        "src-tauri/",
        "scripts/",
    ];
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| !span.contains(' ') && TOPS.iter().any(|top| span.starts_with(top)))
        .map(str::to_string)
        .collect()
}

/// The quoted paths of `text` that do not exist under `root`.
fn missing(text: &str, root: &Path) -> Vec<String> {
    quoted_paths(text)
        .into_iter()
        .filter(|path| !root.join(path).exists())
        .collect()
}

fn recipes() -> String {
    let text =
        std::fs::read_to_string(repository().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let (_, recipes) = text
        .split_once("## Where a change goes")
        .expect("ARCHITECTURE.md has a \"Where a change goes\" section");
    recipes.split("\n## ").next().unwrap_or("").to_string()
}

#[test]
fn every_path_a_recipe_names_exists() {
    let recipes = recipes();
    for recipe in [
        "**A new MCP tool.**",
        "**A new REST route.**",
        "**A new hook event.**",
        "**A new agent route**",
        "**A new view panel.**",
    ] {
        assert!(recipes.contains(recipe), "no recipe {recipe}");
    }
    assert!(
        quoted_paths(&recipes).len() >= 30,
        "{:?}",
        quoted_paths(&recipes)
    );
    assert_eq!(missing(&recipes, &repository()), Vec::<String>::new());
}

#[test]
fn a_path_that_disappeared_is_reported() {
    let text = "Touch `crates/kg-server/src/tools.rs` and `crates/kg-server/src/gone.rs`, \
                not `a phrase with/slashes`.";
    assert_eq!(
        missing(text, &repository()),
        ["crates/kg-server/src/gone.rs"]
    );
}
