//! Every sentence KG Memory says to the model in prose, in one place and in our own
//! words. Each keeps the literal markers other parts rely on: transcript recovery
//! scans `session_id: <sid> (pass` and `session_id='<sid>'`; tool-call shapes the model
//! should copy; the recall phrase; the counts and values a sentence carries.

/// The phrase the model announces after its first full read.
pub const RECALL_PHRASE: &str = "I have recalled KG Memories";

/// Header of the session-start preload. Its length is charged to the preload budget,
/// so it stays close to the reference's 631 characters (an 8-hex sid included).
pub fn preload_header(sid: &str) -> String {
    format!(
        "KG MEMORY PRELOADED — compact core only: a PARTIAL view of the top-scored nodes of both \
         graphs, and the '…N more not shown' lines below count what was left out. \
         session_id: {sid} (pass it to every kg_* call). REQUIRED before any substantive work: \
         one kg_read(session_id) call, which renders everything left out here and repeats \
         nothing shown; only AFTER that full read announce \"{RECALL_PHRASE}\". \
         kg_read(session_id, ids=[...]) reads nodes in depth; kg_search looks up anything, archived nodes included. \
         Subagents never receive this preload, so a dispatch prompt must carry the gists or \
         kg_* instructions the subagent needs."
    )
}

/// Header of the session-start preload under our policy: it says whether the preload
/// holds every active node (then no full read is needed) or names what it left out.
/// Charged to the preload budget like the reference's.
/// `left_out` counts the active gists, edges and archived anchors it left out.
pub fn preload_header_ours(sid: &str, left_out: [usize; 3]) -> String {
    let [gists, edges, anchors] = left_out;
    if left_out == [0; 3] {
        return format!(
            "KG MEMORY PRELOADED — complete: every active node of both graphs is below, with \
             its edges and archived anchors, so no full read is needed. session_id: {sid} (pass \
             it to every kg_* call). Announce \"{RECALL_PHRASE}\" now. \
             kg_read(session_id, ids=[...]) reads nodes in depth (notes, touches, edges); \
             kg_search looks up anything, archived nodes included. Subagents never receive \
             this preload, so a dispatch prompt must carry the gists or kg_* instructions the \
             subagent needs."
        );
    }
    let mut parts = Vec::new();
    for (n, what) in [
        (gists, "active gist(s)"),
        (edges, "edge(s)"),
        (anchors, "archived anchor(s)"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    format!(
        "KG MEMORY PRELOADED — PARTIAL: to fit the budget this preload left out {}, which \
         the '…N more' lines below count. session_id: {sid} (pass it to every kg_* call). \
         REQUIRED before any substantive work: one kg_read(session_id) call (follow its parts \
         with more=true if it says it continues), which renders what was left out and repeats \
         nothing shown; only AFTER that full read announce \"{RECALL_PHRASE}\". \
         kg_read(session_id, ids=[...]) reads nodes in depth; kg_search looks up anything, \
         archived nodes included. Subagents never receive this preload, so a dispatch prompt \
         must carry the gists or kg_* instructions the subagent needs.",
        parts.join(", ")
    )
}

/// Ends each part of a split `kg_read` reply but the last.
pub fn part_footer(part: usize, total: usize, sid: &str) -> String {
    format!(
        "[part {part} of {total} — the reply continues. Call kg_read(session_id='{sid}', more=true) \
         for part {}; the read is complete only after part {total}.]",
        part + 1
    )
}

/// `kg_read(more=true)` with no part waiting.
pub const NOTHING_MORE: &str = "there is no further part to read: the last kg_read was \
     complete, or a newer kg_read replaced it. Call kg_read(session_id) for a full read.";

/// The whole answer to a resumed session: nothing is rendered again.
pub fn resume_note(sid: &str) -> String {
    format!(
        "KG memory session resumed — session_id: {sid} (pass it to every kg_* call). Nothing \
         is rendered again: the memory preload from earlier in this conversation is still in \
         context, and gists already injected stay deduplicated. Other sessions may have \
         written since; kg_sync(session_id) brings in their changes."
    )
}

/// Said with every prompt until the session has made its full read.
pub const FULL_READ_NUDGE: &str = "KG preload shows only a PARTIAL view — the full graph is \
     not in context yet. Before substantive work, call kg_read(session_id) once: it renders \
     what the preload left out and repeats nothing already shown.";

/// Closing line of a session's first full read.
pub fn first_read_close() -> String {
    format!("The full graph is now in context — announce \"{RECALL_PHRASE}\".")
}

/// First line of a full read after a preload.
pub fn dedup_prefix(count: usize) -> String {
    format!(
        "{count} gist(s) were already shown by the session-start preload and appear below only \
         as '(preloaded)' id anchors — kg_read(session_id, ids=[...]) reads any of them in full."
    )
}

/// How a note left by a merge conflict begins (the sync's 3-way merge writes it when
/// two different gists were written for one node: the newer is kept, the other goes
/// into such a note with its origin). A node holding such a note has a conflict
/// nobody has resolved yet; removing the note resolves it.
pub const CONFLICT_NOTE_PREFIX: &str = "[merge conflict] ";

/// `kg_sync` for a session that last synced further back than the change log reaches
/// (ours; the reference has no log).
pub fn sync_behind(floor: usize) -> String {
    format!(
        "Note: your last kg_sync is older than what this server still remembers of its changes (at least the last {floor}), so this list goes by write times: it may miss nodes deleted since and changes made within a second of your last sync. kg_read(session_id) shows the whole memory as it is now."
    )
}

/// Appended to `▸ <id>: NOT FOUND`.
pub const NOT_FOUND_HINT: &str = " (kg_search reaches every tier, archived and orphaned too)";

/// After `Error: ` when a first `kg_read` has neither cwd nor a usable session.
pub const READ_NEEDS_CWD: &str =
    "the first kg_read call needs cwd (or a valid session_id returned by an earlier call).";

/// Appended to `No nodes found matching '…'` without a session.
pub const SEARCH_NO_SESSION_MISS: &str = " (no session_id given — project graphs were searched \
     best-effort; pass the session_id from kg_read for an accurate project search)";

/// Appended to the `Found … — top k:` header without a session.
pub const SEARCH_NO_SESSION_HEADER: &str =
    " [no session_id — project results are best-effort across the loaded graphs]";

/// Appended to `Node '…' saved to … graph` when the submitted gist is long.
pub fn oversized_gist_advice(chars: usize) -> String {
    format!(
        " — note: the gist is {chars} chars; gists scan best at ≤300, so keep the headline \
         here and move the detail into notes."
    )
}

/// The marker a refused write starts with, for an agent to recognise.
pub const NOT_WRITTEN: &str = "NOT WRITTEN";

/// Who wrote a node, as a refusal names them.
fn writer(by: Option<&str>) -> String {
    match by {
        Some(sid) => format!("session {sid}"),
        None => "a person (graph view or REST)".to_string(),
    }
}

/// Why a write was refused: someone wrote the node since this session saw it, or
/// (`seen` false) before it ever saw it.
pub fn stale_since_seen(by: Option<&str>, seen: bool) -> String {
    if seen {
        format!(
            "{} changed this node after this session last saw it",
            writer(by)
        )
    } else {
        format!(
            "{} wrote this node, and this session has not seen it yet",
            writer(by)
        )
    }
}

/// Why a write was refused: it would replace a list (`notes`, `touches`) the session
/// has not read since it was last written.
pub fn stale_unread_list(field: &str) -> String {
    format!(
        "the write would replace its {field}, which this session has not read since they were last written"
    )
}

/// Why a write was refused: it leaves out `dropped` of the stored notes.
pub fn stale_drops_notes(dropped: usize) -> String {
    format!("the write leaves out {dropped} of its stored notes (marked below)")
}

/// Why a person's write was refused: someone wrote the node after the edit loaded it.
pub fn stale_since_loaded(by: Option<&str>) -> String {
    format!(
        "{} changed this node after it was loaded for this edit",
        writer(by)
    )
}

/// What a refused writer does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotWrittenNext {
    /// A person's edit overtaken by a newer write: merge, save again.
    MergeEdit,
    /// A write that leaves notes out: send it again if meant.
    ResendIfMeant,
    /// An agent that had not seen the node: the refusal showed it; merge, write again.
    MergeAndRewrite,
}

/// The answer to a write refused as built on a stale view (since-0.9.30.md §4): the
/// marker, the node and level, `reason`, that nothing changed, the node as it stands
/// (`None` when it does not exist; the notes the write would remove marked), and how
/// to proceed.
pub fn not_written(
    id: &str,
    level: impl std::fmt::Display,
    reason: &str,
    stands: Option<(&str, &[String], &[String])>,
    dropped_notes: &[String],
    next: NotWrittenNext,
) -> String {
    use std::fmt::Write;
    let mut text =
        format!("{NOT_WRITTEN}: node '{id}' ({level} graph) — {reason}. Nothing was changed.");
    let Some((gist, notes, touches)) = stands else {
        return text;
    };
    text.push_str("\n\nThe node as it stands now:\n  gist: ");
    text.push_str(gist);
    if !notes.is_empty() {
        text.push_str("\n  notes:");
        for note in notes {
            let _ = write!(text, "\n    - {note}");
            if dropped_notes.contains(note) {
                text.push_str("   ← your write would remove this note");
            }
        }
    }
    if !touches.is_empty() {
        let _ = write!(text, "\n  touches: {}", touches.join(" · "));
    }
    text.push_str("\n\n");
    text.push_str(match next {
        NotWrittenNext::MergeEdit => {
            "Look at what changed, merge your edit into it, and save again."
        }
        NotWrittenNext::ResendIfMeant => {
            "If removing those notes is what you mean, send the same kg_put_node again and it \
             will be written. Otherwise merge them into your notes list and send it in full."
        }
        NotWrittenNext::MergeAndRewrite => {
            "This counts as reading the node: merge your change into what stands above, then \
             call kg_put_node again with the full notes and touches lists."
        }
    });
    text
}

/// Why a new id (or a rename target) of `words` words is refused.
pub fn id_too_long(id: &str, words: usize) -> String {
    format!(
        "Node id '{id}' has {words} words; ids of new nodes may have at most {max}. Name the \
         subject in 3–5 words (a date counts as one) and put the claim in the gist.",
        max = crate::limits::MAX_ID_WORDS
    )
}

/// Appended to a saved write that created an id of the most words allowed.
pub fn id_at_most_words(id: &str) -> String {
    format!(
        "Note: '{id}' is at the {max}-word limit for ids. An id names the subject; the claim \
         belongs in the gist. kg_rename_node can shorten it and keeps its edges and history.",
        max = crate::limits::MAX_ID_WORDS
    )
}

/// Appended to a saved write that created an id holding a date.
pub fn id_with_date(id: &str) -> String {
    format!(
        "Note: '{id}' holds a date. A date says when, not what: a series of dated nodes \
         is better kept as one lasting node that is updated. kg_rename_node can rename it \
         and keeps its edges and history."
    )
}

/// An agent's `op` (rewrite, delete, rename) of a locked node, refused.
pub fn locked_refusal(id: &str, level: impl std::fmt::Display, op: &str) -> String {
    format!(
        "Node '{id}' ({level} graph) is locked: a person locked it, so an agent may not \
         {op} it. Nothing was changed. Reading it, searching it and edges to or from it \
         still work; if it needs to change, ask the person, who can edit or unlock it in \
         the graph view (or over REST)."
    )
}

/// Why an agent cannot set `fields.locked`.
pub const LOCK_IS_A_PERSONS: &str = "a node's lock is set and cleared only by a person (the \
     graph view, or REST); kg_put_node takes no `locked` field. Leave it out and write the node \
     as usual.";

/// A rename done.
pub fn renamed(old: &str, new: &str, level: impl std::fmt::Display, edge_ends: usize) -> String {
    format!(
        "Renamed '{old}' → '{new}' in the {level} graph; {edge_ends} edge reference(s) now \
         name '{new}'. Its history, endorsements and tier came along."
    )
}

/// A project graph a rename of a user node left alone (`reason` as the REST answer
/// names it).
pub fn rename_skipped(slug: &str, reason: &str) -> String {
    let why = match reason {
        "local-node" => "it has its own node of the old id, which its edges name",
        "collision" => "it has its own node of the new id, which that name means there",
        _ => "its file could not be written, so its edges still name the old id",
    };
    format!("- projects/{slug} left alone ({reason}): {why}; check it by hand.")
}

/// A rename onto the id the node already has.
pub fn rename_onto_itself(id: &str) -> String {
    format!("Node '{id}' is already called '{id}': nothing to rename.")
}

/// A rename onto an id another node of the graph has.
pub fn rename_target_exists(old: &str, new: &str, level: impl std::fmt::Display) -> String {
    format!(
        "Cannot rename '{old}' to '{new}': the {level} graph already has a node '{new}'. Pick \
         a free id, or, if the two are one concept, merge them on purpose: fold one node's \
         content into the other with kg_put_node, then delete it."
    )
}

/// A project-node rename that would make the project's edges to a user node reach the
/// renamed node instead.
pub fn rename_captures_user_node(old: &str, new: &str, edges: usize) -> String {
    format!(
        "Cannot rename '{old}' to '{new}': {edges} edge(s) of this project name the user \
         node '{new}', and after the rename they would reach this project node instead. \
         Pick another id."
    )
}

/// A user-node rename that would make projects' edges reach their own node of the new
/// id.
pub fn rename_captured_by_projects(old: &str, new: &str, slugs: &[String]) -> String {
    format!(
        "Cannot rename '{old}' to '{new}': {} project graph(s) ({}) have edges to '{old}' \
         and a node '{new}' of their own, so those edges would reach their own node after \
         the rename. Pick another id, or rename the project node first.",
        slugs.len(),
        slugs.join(", ")
    )
}

/// A user-node rename refused because a project graph file cannot be checked.
pub fn rename_unreadable_project(slug: &str, cause: &str) -> String {
    format!(
        "Cannot rename: the project graph projects/{slug}/graph.json cannot be read ({cause}), \
         so its edges to the node cannot be moved. Repair or move that file, then rename again."
    )
}

/// Ends a full read that had to leave things out.
pub fn degradation_note(anchors: usize, edges: usize) -> String {
    format!(
        "Note: trimmed to fit the inline budget — {anchors} archived anchor(s) and {edges} \
         edge(s) left out. kg_search still reaches everything; a maintenance pass would win \
         back room."
    )
}

/// The DEBT line's burst component, after `<u> unconnected`: new nodes (inside their
/// grace period) that compaction archived to keep a burst of writes within budget.
pub fn debt_burst(archived: usize) -> String {
    format!(", {archived} new node(s) archived in a burst")
}

/// The DEBT line's clause for touches whose file is gone (our policy).
pub fn debt_stale_touches(entries: usize) -> String {
    format!(", {entries} stale touch(es)")
}

/// `kg_fix_touch` given a node without a touch, or a touch without a node.
pub const FIX_TOUCH_NEEDS_BOTH: &str = "kg_fix_touch takes id and touch together (to fix one touch), or neither (to list the stale ones)";

/// `kg_fix_touch` when every path-shaped touch names a file that exists.
pub const NO_STALE_TOUCHES: &str =
    "No stale touches: every touch that names a file path points at a file that exists.";

/// How to act on a listing of stale touches.
pub const FIX_TOUCH_HOW: &str = "Accept git's path with kg_fix_touch(session_id, id, touch); \
     where git knows none, pass the new path as to, or drop the touch by resending the \
     node's touches with kg_put_node.";

/// The heading of one graph's stale touches in a `kg_fix_touch` listing.
pub fn stale_touches_heading(level: &str, count: usize) -> String {
    format!("Stale touches in the {level} graph ({count}): each names a file that is gone.")
}

/// One stale touch of a listing, with where git says its file went.
pub fn stale_touch_line(id: &str, touch: &str, renamed_to: Option<&str>) -> String {
    match renamed_to {
        Some(to) => format!("- {id}: {touch:?} — git says the file became {to}"),
        None => format!("- {id}: {touch:?} — git knows no new name for it"),
    }
}

/// The tail of a listing cut short.
pub fn more_stale_touches(more: usize) -> String {
    format!("… and {more} more")
}

/// `kg_fix_touch` naming a touch no node of the graphs looked in has.
pub fn no_touch_in_graphs(id: &str, touch: &str, level: &str) -> String {
    format!(
        "No node '{id}' with the touch {touch:?} in {level} graph (name the touch exactly as the node stores it)"
    )
}

/// `kg_fix_touch` without `to` for a stale touch git knows nothing about.
pub fn no_rename_known(touch: &str) -> String {
    format!(
        "Git records no rename of the file {touch:?} names; pass its new path as to, or drop the touch with kg_put_node"
    )
}

/// `kg_fix_touch` without `to` for a touch whose file exists.
pub fn touch_not_stale(touch: &str) -> String {
    format!("The touch {touch:?} names a file that exists; to point it elsewhere, pass to")
}

/// A touch pointed at its file's new path.
pub fn touch_fixed(id: &str, from: &str, to: &str, level: &str) -> String {
    format!("Touch {from:?} of node '{id}' now reads {to:?} ({level} graph)")
}

/// A retouch naming a node entry it does not have.
pub fn no_such_touch(id: &str, touch: &str) -> String {
    format!(
        "Node '{id}' has no touch {touch:?} to change (read the node again: its touches may have changed)"
    )
}

/// A retouch whose new path cannot be a touch's path.
pub fn bad_retouch_path(to: &str) -> String {
    format!(
        "{to:?} cannot be a touch's path: give one file path, without spaces, an anchor (#) or a URL"
    )
}

/// Merge conflicts a sync's merge left in node notes for someone to settle, in short
/// (the tray's tooltip and menu).
pub fn merged_with_conflicts(conflicts: usize) -> String {
    format!("merged with conflicts: {conflicts}")
}

/// The DEBT line's merge-conflict component, after the unconnected (and burst) count:
/// [`merged_with_conflicts`] and where the conflicts are, in notes starting
/// `note_prefix`.
pub fn debt_merge_conflicts(conflicts: usize, note_prefix: &str) -> String {
    format!(
        "{} (see the node notes starting \"{}\": settle each, then remove its note)",
        merged_with_conflicts(conflicts),
        note_prefix.trim_end()
    )
}

/// The DEBT line's component for what a sync held back (content that arrived from a
/// remote and broke a write rule), after the merge conflicts.
pub fn debt_held_back(items: usize) -> String {
    format!(
        "held back from sync: {items} (content from a remote that breaks a write rule; `kg-memory sync status` lists them)"
    )
}

/// Appended to a `DEBT: HIGH` line.
pub const DEBT_HIGH_CALL: &str = " — time for a maintenance pass (or a maintenance subagent)";

/// The HIGH line's call under `KG_POLICY=reference`: it names the plugin's
/// `/kg-maintain`, which only plugin users have (our policy names no command; the
/// plugin's kg-maintain skill answers to a HIGH line by its description).
pub const DEBT_HIGH_CALL_REFERENCE: &str =
    " — time for a /kg-maintain pass (or a maintenance subagent)";

/// First line of a file recall: what the memory knows about the files the agent just
/// read or changed. Same line grammar as prompt recall below it.
pub fn file_recall_header(files: &[&str]) -> String {
    format!(
        "KG recall — memory about {} (you just used it; these nodes name it in touches):",
        files.join(", ")
    )
}

/// Why recall spoke or stayed silent, for a person reading the view's Activity:
/// `trigger` is `prompt`, `file` or `push`, `outcome` the decision's fixed word.
pub fn recall_why(trigger: &str, outcome: &str, shown: usize, withheld: usize) -> String {
    let what = match trigger {
        "file" => "the file",
        "push" => "others' writes",
        _ => "the prompt",
    };
    match outcome {
        "injected" if trigger == "push" => {
            let held = if withheld > 0 {
                format!("; {withheld} more left to kg_sync")
            } else {
                String::new()
            };
            format!("Told the session of {shown} node(s) others wrote on its work{held}.")
        }
        "unrelated" => "Other sessions wrote nodes, but none touches what this session has \
                        been working on (the nodes it used, its files, its prompts' words)."
            .to_string(),
        "injected" => {
            let held = if withheld > 0 {
                format!("; {withheld} more held back by the limits")
            } else {
                String::new()
            };
            if trigger == "file" {
                format!("Showed {shown} node(s) whose touches name the file{held}.")
            } else {
                format!("Showed {shown} node(s) the prompt's words point at{held}.")
            }
        }
        "all_seen" => {
            format!("Everything that matched {what} was already in the session's context.")
        }
        "throttled" => format!(
            "Nodes name {what}, but the session already had its share of file recalls in the last ten minutes; they stay unseen for later."
        ),
        "no_nodes" => "No node names this file in its touches.".to_string(),
        "no_hits" => {
            "Nothing in memory held enough of the prompt's words to be worth saying.".to_string()
        }
        "no_terms" | "not_a_prompt" => {
            "Too little typed text to search on (an acknowledgement, a notification, a bare path)."
                .to_string()
        }
        "unresolved_session" => {
            "No KG session is known for this agent session, so nothing was said.".to_string()
        }
        "no_graphs" => "The session's graphs could not be loaded.".to_string(),
        other => format!("Outcome: {other}."),
    }
}

/// `text` cut to its first `max` characters, an ellipsis marking the cut.
pub(crate) fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A gist cut for a nudge that names a node: its first 120 characters.
fn gist_head(gist: &str) -> String {
    cut_chars(gist, 120)
}

/// One line of a push: a node another session wrote, new to this session or an
/// update of one it had seen.
pub fn pushed_line(id: &str, updated: bool, gist: &str) -> String {
    let what = if updated { "updated" } else { "new" };
    format!("- {id} ({what}): {gist}")
}

/// The news of other sessions' writes that bear on this session's work: `lines`
/// ([`pushed_line`]), newest first, and how many more were left out.
pub fn pushed_writes(lines: &[String], more: usize, sid: &str) -> String {
    let mut text =
        String::from("Meanwhile others wrote to this memory, on what you are working on:\n");
    text.push_str(&lines.join("\n"));
    if more > 0 {
        text.push_str(&format!(
            "\n({more} more: kg_sync(session_id='{sid}') lists every change.)"
        ));
    }
    text.push_str(
        "\nIf you meant to record the same lesson, update that node (kg_put_node with its id) \
         rather than writing a second one.",
    );
    text
}

/// After creating `new_id`: the graph already holds `old_id`, which says nearly the
/// same. Saved all the same; this asks the agent to keep one node.
pub fn repeats_node(new_id: &str, old_id: &str, old_gist: &str, sid: &str) -> String {
    format!(
        "Possible duplicate: '{old_id}' already says much of this (\"{}\"). If it is the same \
         lesson, put what is new into it — kg_put_node(session_id='{sid}', id='{old_id}', …) with \
         its full notes list — and remove this one with kg_delete_node(session_id='{sid}', \
         id='{new_id}'). If they differ, keep both and say how in each gist.",
        gist_head(old_gist)
    )
}

/// After creating `new_id`: an existing id differs from it only in case, separators
/// or look-alike characters.
pub fn look_alike_id(new_id: &str, old_id: &str, old_gist: &str, sid: &str) -> String {
    format!(
        "Look-alike id: '{new_id}' differs from the existing '{old_id}' (\"{}\") only in case, \
         separators or look-alike characters, so the two read as one. If they are the same \
         node, write to '{old_id}' and remove this one with kg_delete_node(session_id='{sid}', \
         id='{new_id}'); if not, give this one an id that tells them apart.",
        gist_head(old_gist)
    )
}

/// The capture nudge after a repeated read, fetch or search with no node covering it.
pub fn capture_nudge(needle: &str, evidence: &str, sid: &str, level: &str) -> String {
    format!(
        "KG capture: '{needle}' — {evidence}, and no memory node references it. Repeating it \
         means the same conclusion is being worked out again. If it has lasting value (what the \
         thing is or handles, a gotcha, a decision), keep it with one call: \
         kg_put_node(session_id='{sid}', level='{level}', id='<kebab-id>', gist='<the bottom \
         line>', touches=['{needle}']). A true one-off can be skipped."
    )
}

/// Evidence of a capture nudge for a file read by several Claude sessions.
pub fn read_evidence(sessions: usize) -> String {
    format!("read in {sessions} distinct sessions now")
}

/// Evidence of a capture nudge for a URL fetched again.
pub fn fetch_evidence(count: u64) -> String {
    format!("fetched {count} times now")
}

/// Evidence of a capture nudge for a web query repeated.
pub fn search_evidence(count: u64) -> String {
    format!("searched {count} times now")
}

/// The capture nudge for a web page or query (our policy): its ready call is valid as
/// written, and the choice of the user graph is said beside it.
pub fn cross_project_capture_nudge(needle: &str, evidence: &str, sid: &str) -> String {
    format!(
        "KG capture: '{needle}' — {evidence}, and no memory node references it. Repeating it \
         means the same conclusion is being worked out again. If it has lasting value (what the \
         thing is or handles, a gotcha, a decision), keep it with one call: \
         kg_put_node(session_id='{sid}', level='project', id='<kebab-id>', gist='<the bottom \
         line>', touches=['{needle}']); use level='user' instead if it holds beyond this \
         project. A true one-off can be skipped."
    )
}

/// The level a web or search capture names under `KG_POLICY=reference`, as the
/// reference wrote it (it is no valid level: our policy uses
/// [`cross_project_capture_nudge`]).
pub const CROSS_PROJECT_LEVEL: &str = "project (or user, if the finding is cross-project)";

/// When a reminder applies (our policy; the reference shows any of a pool at random).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReminderFits {
    /// Whenever the prompt is about something the memory knows.
    Always,
    /// Only while the session has not made its full read.
    BeforeFullRead,
    /// Only when the prompt speaks of subagents or delegating work.
    Subagents,
    /// Only when a level's maintenance debt is HIGH.
    DebtHigh,
}

/// A short reminder added to a prompt the memory had nothing to recall for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reminder {
    /// What the model reads.
    pub text: &'static str,
    /// When it applies.
    pub fits: ReminderFits,
}

const fn r(text: &'static str, fits: ReminderFits) -> Reminder {
    Reminder { text, fits }
}

use ReminderFits::{Always, BeforeFullRead, DebtHigh, Subagents};

/// Reminders for prompts the server had nothing to say about, staged by how far the
/// conversation has come.
pub const REMINDERS_EARLY: &[Reminder] = &[
    r(
        "KG reminder: if no memory is loaded yet, call kg_read before starting task work.",
        BeforeFullRead,
    ),
    r(
        "KG reminder: try kg_search before searching files or the web — it may already be known.",
        Always,
    ),
    r(
        "KG reminder: component nodes say what a file handles; check them before opening files.",
        Always,
    ),
    r(
        "KG reminder: scan the ARCHIVED ids for anything related and batch-read them with kg_read(session_id, ids=[...]).",
        Always,
    ),
    r(
        "KG reminder: subagents get no preload — put the relevant gists or kg_* instructions in their prompt.",
        Subagents,
    ),
    r(
        "KG reminder: search memory before assuming how something works here.",
        Always,
    ),
];

pub const REMINDERS_MID: &[Reminder] = &[
    r(
        "KG pulse: did the last exchange teach something durable? One kg_put_node now is cheap.",
        Always,
    ),
    r(
        "KG pulse: a stated preference or constraint of the user belongs in a user-level node.",
        Always,
    ),
    r(
        "KG pulse: when the user corrects you, capture the signal you missed.",
        Always,
    ),
    r(
        "KG pulse: once an approach is agreed, record the method so no one re-derives it.",
        Always,
    ),
    r(
        "KG pulse: after a long debugging stretch, a root-cause node saves the next session hours.",
        Always,
    ),
    r(
        "KG pulse: an explanation that was not obvious is worth a node.",
        Always,
    ),
    r(
        "KG pulse: found how two things relate? Add an edge with kg_put_edge.",
        Always,
    ),
    r("KG pulse: check kg_search before assuming.", Always),
    r(
        "KG pulse: write mid-conversation, while the details are still in view.",
        Always,
    ),
    r(
        "KG pulse: dispatching a subagent? Give it the gists or kg_* instructions it needs.",
        Subagents,
    ),
    r(
        "KG pulse: check memory first — the answer may already be a node.",
        Always,
    ),
];

pub const REMINDERS_DEEP: &[Reminder] = &[
    r(
        "KG pulse: deep in a session is the best moment to capture what you now understand.",
        Always,
    ),
    r(
        "KG pulse: if a DEBT line reads HIGH, run a maintenance pass or hand it to a maintenance subagent.",
        DebtHigh,
    ),
    r(
        "KG pulse: sharpen gists that turned out stale or vague.",
        Always,
    ),
    r(
        "KG pulse: nodes you used together deserve an edge between them.",
        Always,
    ),
    r(
        "KG pulse: record decisions with their rationale, not just the outcome.",
        Always,
    ),
    r(
        "KG pulse: what would future-you want recorded from this session?",
        Always,
    ),
    r(
        "KG pulse: at wrap-up, kg_useful the (at most 5) nodes that actually changed the result.",
        Always,
    ),
    r(
        "KG pulse: one kg_put_node now beats re-deriving it next week.",
        Always,
    ),
];

/// The pool for a conversation whose transcript has `bytes` (None: no transcript).
pub fn reminder_pool(bytes: Option<u64>) -> &'static [Reminder] {
    match bytes {
        None => REMINDERS_MID,
        Some(b) if b < 200_000 => REMINDERS_EARLY,
        Some(b) if b > 2_500_000 => REMINDERS_DEEP,
        Some(_) => REMINDERS_MID,
    }
}

/// Ends a Codex session's first `kg_read(cwd)` when no hook preloaded a session of its
/// project lately: Codex skips hooks the person has not trusted, without a word.
pub const CODEX_NO_HOOKS: &str = "Note for this Codex session: KG Memory's hooks did not run \
     here (no preload reached this project lately). Codex runs a hook only after the person \
     trusts it, so without that there is no preload, no recall at each prompt and no recall \
     when a file is patched or read. If the person wants them, ask them to type /hooks in \
     Codex, trust the three KG Memory hooks and start a new session. The kg_* tools work \
     either way.";

/// Ends the preload of a session whose folder is outside the allowed ones: there is no
/// project memory, and how to have one.
pub fn no_project_memory(folder: &str) -> String {
    format!(
        "No project memory in this session: {folder} is outside your home folder, and KG \
         Memory keeps project graphs only for folders inside it, so only the user graph is \
         loaded. To keep one for this folder, add its parent folder to KG_PROJECT_ROOTS in \
         the memory server's environment and restart the server."
    )
}

/// Why another folder could have been a session's project, as a clause of
/// [`ambiguous_project`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherProject {
    /// An enclosing folder with a project graph of its own.
    EnclosingGraph,
    /// The top of the git repository the chosen folder lies in.
    RepositoryTop,
    /// The main checkout of the repository whose worktree was chosen.
    MainCheckout,
    /// A git repository of its own inside the chosen project.
    NestedRepository,
}

/// Said once at the start of a session whose folder could belong to more than one
/// project: which folder's graph it uses, and the other folders (`(folder, why)`,
/// nearest first) that could have been the project.
pub fn ambiguous_project(root: &str, others: &[(&str, OtherProject)]) -> String {
    format!(
        "Project memory: this session uses the project graph of {root}, the nearest folder \
         that has one, but the choice is not clear-cut: {}. Project nodes written in this \
         session go to the graph of {root}; if the work belongs to the other folder, tell the \
         user.",
        other_projects(others)
    )
}

/// The same for the person, beside the session-start notice.
pub fn ambiguous_project_notice(root: &str, others: &[(&str, OtherProject)]) -> String {
    format!(
        "Project memory from {root} (the nearest folder with a project graph); note that {}.",
        other_projects(others)
    )
}

fn other_projects(others: &[(&str, OtherProject)]) -> String {
    let clauses: Vec<String> = others
        .iter()
        .map(|(folder, why)| match why {
            OtherProject::EnclosingGraph => {
                format!("{folder}, which encloses it, has a project graph too")
            }
            OtherProject::RepositoryTop => format!("{folder} is the top of its git repository"),
            OtherProject::MainCheckout => {
                format!("{folder} is the main checkout of this git worktree")
            }
            OtherProject::NestedRepository => format!(
                "the session's folder lies in {folder}, a git repository of its own inside that project"
            ),
        })
        .collect();
    clauses.join("; ")
}

/// The one-line notice Claude Code shows the user at session start.
pub fn session_start_notice(sid: &str, reused: bool, stats: Option<(u64, u64, u64)>) -> String {
    let verb = if reused {
        "resumed, seen-state preserved"
    } else {
        "preloaded"
    };
    match stats {
        Some((user, project, shown)) if shown >= user + project => format!(
            "KG memory {verb} (session {sid}): {user} user + {project} project active nodes, every gist inline."
        ),
        Some((user, project, shown)) => format!(
            "KG memory {verb} (session {sid}): {user} user + {project} project active nodes, {shown} gists inline; kg_read renders the rest."
        ),
        None => format!("KG memory {verb} (session {sid})."),
    }
}

/// Said at session start when no server answered and one is being started.
pub fn server_warming_up(base_url: &str) -> String {
    format!(
        "KG memory server is starting, so this session's kg_* tools may be offline for a moment. Check {base_url}/health; once it answers, if the kg_* tools are still missing, ask the user to run /mcp, select the KG Memory server (kg, or plugin:knowledge-graph:kg when it came with the plugin) and choose Reconnect."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preload_header_keeps_its_markers_and_length() {
        let header = preload_header("3f9a0c1e");
        let chars = header.chars().count();
        // Goldens are reproduced exactly for header lengths of 631–650 characters.
        assert!((631..=650).contains(&chars), "{chars}");
        assert!(header.starts_with("KG MEMORY PRELOADED"));
        for marker in [
            "PARTIAL view",
            "'…N more not shown' lines",
            "session_id: 3f9a0c1e (pass it to every kg_* call)",
            "REQUIRED before any substantive work",
            "kg_read(session_id)",
            "AFTER that full read announce \"I have recalled KG Memories\"",
            "kg_read(session_id, ids=[...])",
            "kg_search",
            "Subagents never receive this preload",
        ] {
            assert!(header.contains(marker), "{marker}");
        }
        assert!(header.find("3f9a0c1e").is_some_and(|p| p < 400));
        assert!(!header.contains('\n'));
    }

    #[test]
    fn nudges_keep_their_markers() {
        let note = resume_note("cafe0123");
        assert!(note.starts_with("KG memory session resumed"));
        assert!(note.contains("session_id: cafe0123 (pass it to every kg_* call)"));
        assert!(note.contains("kg_sync(session_id)"));
        assert!(FULL_READ_NUDGE.contains("kg_read(session_id)"));
        let nudge = capture_nudge(
            "src/a.rs",
            "read in 2 distinct sessions now",
            "0badf00d",
            "project",
        );
        assert!(nudge.starts_with("KG capture: 'src/a.rs'"));
        for marker in [
            "kg_put_node(",
            "session_id='0badf00d'",
            "level='project'",
            "touches=['src/a.rs']",
        ] {
            assert!(nudge.contains(marker), "{marker}");
        }
        assert!(first_read_close().contains(RECALL_PHRASE));
        assert!(dedup_prefix(60).contains("(preloaded)"));
        assert!(
            oversized_gist_advice(434).contains("434")
                && oversized_gist_advice(434).contains("300")
        );
    }
}
