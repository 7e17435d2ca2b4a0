//! `kg_fix_touch` (our tool): the agent's side of stale touches. Without a node it
//! lists the session's stale touches with the path git says each file went to; with a
//! node and one of its touches it points that touch at git's path (or the one given),
//! in one step.

use super::{ToolText, admit, session_slots};
use crate::model::Level;
use crate::stale_touches::{Renames, renamed_path};
use crate::store::{GraphSlot, StaleTouch, Store, StoreError, Target};
use crate::wording;
use std::path::Path;
use std::sync::Arc;

/// Stale touches a listing names at most; the rest are counted.
pub const LIST_AT_MOST: usize = 30;

/// Arguments of `kg_fix_touch`.
#[derive(Debug, Clone, Default)]
pub struct FixTouchArgs {
    /// The calling session: its graphs are the ones looked at.
    pub session_id: String,
    /// The node whose touch to fix; without it, the stale touches are listed.
    pub id: Option<String>,
    /// The entry to fix, exactly as the node stores it.
    pub touch: Option<String>,
    /// The new path; without it, the one git recorded.
    pub to: Option<String>,
    /// Only this graph; without it, the user graph, then the project graph.
    pub level: Option<Level>,
}

/// Where git says files went: the renames of the repository a project root lies in,
/// `None` when it lies in none or git could not say in time. The server runs git.
pub type RenameLookup<'a> = &'a dyn Fn(&Path) -> Option<Arc<Renames>>;

/// `kg_fix_touch`.
pub fn kg_fix_touch(
    store: &Store,
    args: &FixTouchArgs,
    renames: RenameLookup<'_>,
    now: f64,
) -> ToolText {
    if let Err(e) = admit(store, &args.session_id, &[], now) {
        return ToolText::error(&e);
    }
    let (user, project) = session_slots(store, &args.session_id, now);
    let slots: Vec<Arc<GraphSlot>> = std::iter::once(user)
        .chain(project)
        .filter(|slot| args.level.is_none_or(|level| slot.level == level))
        .collect();
    match (&args.id, &args.touch) {
        (Some(id), Some(touch)) => fix(store, args, &slots, id, touch, renames, now),
        (None, None) => list(store, &slots, renames),
        _ => ToolText {
            text: format!("Error: {}", wording::FIX_TOUCH_NEEDS_BOTH),
            is_error: true,
        },
    }
}

/// A graph's stale touches, each with git's new path when it knows one.
fn offers(
    store: &Store,
    slot: &GraphSlot,
    renames: RenameLookup<'_>,
) -> Vec<(StaleTouch, Option<String>)> {
    let root = slot.project_root().map(Path::new);
    with_renames(store.stale_touches(slot), root, store.home(), renames)
}

/// Stale touches of a graph whose project lies at `root` (none for the user graph),
/// each with the path git says its file went to, when git knows one (see
/// [`renamed_path`]). Git is asked only when there is something stale.
pub fn with_renames(
    stale: Vec<StaleTouch>,
    root: Option<&Path>,
    home: &Path,
    renames: RenameLookup<'_>,
) -> Vec<(StaleTouch, Option<String>)> {
    let known = match root {
        Some(root) if !stale.is_empty() => renames(root),
        _ => None,
    };
    stale
        .into_iter()
        .map(|s| {
            let to = known
                .as_deref()
                .and_then(|r| renamed_path(&s, r, home, root));
            (s, to)
        })
        .collect()
}

fn list(store: &Store, slots: &[Arc<GraphSlot>], renames: RenameLookup<'_>) -> ToolText {
    let mut lines = Vec::new();
    let (mut shown, mut total) = (0, 0);
    for slot in slots {
        let found = offers(store, slot, renames);
        total += found.len();
        if found.is_empty() || shown >= LIST_AT_MOST {
            continue;
        }
        lines.push(wording::stale_touches_heading(
            slot.level.as_str(),
            found.len(),
        ));
        for (stale, to) in found.iter().take(LIST_AT_MOST - shown) {
            lines.push(wording::stale_touch_line(
                &stale.id,
                &stale.touch,
                to.as_deref(),
            ));
            shown += 1;
        }
    }
    if total == 0 {
        return ToolText::ok(wording::NO_STALE_TOUCHES.to_string());
    }
    if total > shown {
        lines.push(wording::more_stale_touches(total - shown));
    }
    lines.push(wording::FIX_TOUCH_HOW.to_string());
    ToolText::ok(lines.join("\n"))
}

fn fix(
    store: &Store,
    args: &FixTouchArgs,
    slots: &[Arc<GraphSlot>],
    id: &str,
    touch: &str,
    renames: RenameLookup<'_>,
    now: f64,
) -> ToolText {
    let holder = slots.iter().find(|slot| {
        store.with_graph(slot, |g| {
            g.nodes
                .get(id)
                .is_some_and(|n| n.touches().iter().any(|t| t == touch))
        })
    });
    let Some(slot) = holder else {
        let where_ = args.level.map_or("either", Level::as_str);
        return ToolText::error(&StoreError::Invalid(wording::no_touch_in_graphs(
            id, touch, where_,
        )));
    };
    let to = match args.to.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(to) => to.to_string(),
        None => {
            let offered = offers(store, slot, renames)
                .into_iter()
                .find(|(s, _)| s.id == id && s.touch == touch);
            match offered {
                Some((_, Some(to))) => to,
                Some((_, None)) => {
                    return ToolText::error(&StoreError::Invalid(wording::no_rename_known(touch)));
                }
                None => {
                    return ToolText::error(&StoreError::Invalid(wording::touch_not_stale(touch)));
                }
            }
        }
    };
    let target = Target {
        level: slot.level,
        session: Some(&args.session_id),
        project_path: slot.project_root(),
    };
    match store.retouch(target, id, touch, &to, now) {
        Ok(entry) => ToolText::ok(wording::touch_fixed(id, touch, &entry, slot.level.as_str())),
        Err(e) => ToolText::error(&e),
    }
}
