//! The checks of each invariant, over a graph, a tick and a rendered read.

use super::*;

/// The tier core.md §1.1 derives from the raw fields.
pub(super) fn spec_tier(node: &Node) -> Tier {
    if node.get(field::ORPHANED_TS).is_some() {
        Tier::Orphaned
    } else if node.get(field::ARCHIVED).is_some_and(truthy) {
        Tier::Archived
    } else {
        Tier::Active
    }
}

/// (a) Exactly one tier per node, the one its flags give; the tier lists partition
/// the nodes; ids are unique and match the stored `id` field.
pub(super) fn check_tiers(g: &Graph) -> Check {
    let mut seen = HashSet::new();
    for (id, node) in &g.nodes {
        prop_assert!(seen.insert(id.as_str()), "duplicate id {id}");
        prop_assert_eq!(node.id_field(), Some(id.as_str()), "id field of {}", id);
        prop_assert_eq!(node.tier(), spec_tier(node), "tier of {}", id);
    }
    let lists = [Tier::Active, Tier::Archived, Tier::Orphaned].map(|t| g.ids_in_tier(t));
    let mut all: Vec<&str> = lists.iter().flatten().copied().collect();
    prop_assert_eq!(all.len(), g.nodes.len(), "tier lists cover each node once");
    all.sort_unstable();
    all.dedup();
    prop_assert_eq!(all.len(), g.nodes.len(), "tier lists are disjoint");
    Ok(())
}

pub(super) fn in_grace(node: &Node, now: f64) -> bool {
    now - node.created_ts() < GRACE_DAYS * DAY
}

/// Read in full or liked within the week before `now` (stamps from beyond tomorrow
/// are not believed).
pub(super) fn in_use(node: &Node, now: f64) -> bool {
    let recent = |ts: f64| ts >= now - IN_USE_SECS && ts <= now + DAY;
    node.last_read_ts().is_some_and(recent) || node.useful_ts().iter().any(|&ts| recent(ts))
}

/// (b) Within budget, or stalled with every active node inside its grace period.
pub(super) fn check_budget(g: &Graph, now: f64, what: &str) -> Check {
    let size = level_chars(g);
    if size > LEVEL_BUDGET {
        let ripe: Vec<&str> = g
            .nodes
            .iter()
            .filter(|(_, n)| n.tier() == Tier::Active && !in_grace(n, now))
            .map(|(id, _)| id.as_str())
            .collect();
        prop_assert!(
            ripe.is_empty(),
            "{}: level is {} chars > {} with active nodes past grace: {:?}",
            what,
            size,
            LEVEL_BUDGET,
            ripe
        );
    }
    Ok(())
}

pub(super) fn tiers(g: &Graph) -> HashMap<String, Tier> {
    g.nodes
        .iter()
        .map(|(id, n)| (id.clone(), n.tier()))
        .collect()
}

pub(super) fn orphan_stamps(g: &Graph) -> HashMap<String, f64> {
    g.nodes
        .iter()
        .filter_map(|(id, n)| n.orphaned_ts().map(|ts| (id.clone(), ts)))
        .collect()
}

/// (d) Deletions between two states of a graph at `now`: a node may only vanish as an
/// orphan past the orphan grace (strictly), unless `explicit` says a client deleted it.
pub(super) fn check_deletions(
    before: &HashMap<String, f64>,
    before_ids: &HashSet<String>,
    after: &Graph,
    explicit: &HashSet<String>,
    now: f64,
) -> Check {
    let limit = ORPHAN_GRACE_DAYS * DAY;
    for id in before_ids {
        if after.nodes.contains_key(id) || explicit.contains(id) {
            continue;
        }
        let ts = before.get(id);
        prop_assert!(
            ts.is_some_and(|&ts| now - ts > limit),
            "{} was deleted at {} but was {}",
            id,
            now,
            match ts {
                Some(ts) => format!("orphaned only {:.3} days before", (now - ts) / DAY),
                None => "no orphan".to_string(),
            }
        );
    }
    Ok(())
}

pub(super) fn check_no_expired_orphans(g: &Graph, now: f64) -> Check {
    for (id, n) in &g.nodes {
        if let Some(ts) = n.orphaned_ts() {
            prop_assert!(
                now - ts <= ORPHAN_GRACE_DAYS * DAY,
                "orphan {} survived a tick {:.3} days after it was orphaned",
                id,
                (now - ts) / DAY
            );
        }
    }
    Ok(())
}

/// Every check of one maintenance tick (§2.8: compaction, then pruning), from the
/// graph before and after it and the moves it reported (`deleted` = pruned).
pub(super) fn check_tick(before: &Graph, after: &Graph, moves: &TierMoves, now: f64) -> Check {
    let tiers_before = tiers(before);
    let stamps_before = orphan_stamps(before);
    let ids_before: HashSet<String> = before.nodes.keys().cloned().collect();
    let size_before = level_chars(before);
    // Tiers right after compaction: pruned nodes were orphans.
    let tier_after = |id: &str| after.nodes.get(id).map_or(Tier::Orphaned, Node::tier);
    let size_after = level_chars(after);

    // (a)
    check_tiers(after)?;
    // The moves report is the tier diff of the compaction.
    let moved = |from: &dyn Fn(Tier) -> bool, to: Tier| -> Vec<String> {
        let mut ids: Vec<String> = tiers_before
            .iter()
            .filter(|(id, t)| from(**t) && tier_after(id) == to)
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    };
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    prop_assert_eq!(
        sorted(&moves.archived),
        moved(&|t| t == Tier::Active, Tier::Archived)
    );
    prop_assert_eq!(
        sorted(&moves.restored),
        moved(&|t| t != Tier::Active, Tier::Active)
    );
    prop_assert_eq!(
        sorted(&moves.orphaned),
        moved(&|t| t != Tier::Orphaned, Tier::Orphaned)
    );
    // Compaction never revives an orphan, and what it orphans stays archived (§6.5).
    for (id, t) in &tiers_before {
        if *t == Tier::Orphaned {
            prop_assert_eq!(tier_after(id), Tier::Orphaned, "{} left the orphans", id);
        } else if tier_after(id) == Tier::Orphaned {
            let archived = after.nodes.get(id).and_then(|n| n.get(field::ARCHIVED));
            prop_assert!(
                archived.is_some_and(truthy),
                "new orphan {} not archived",
                id
            );
        }
    }
    // (b) Under our grace rule (the default), a node inside its grace period is
    // archived only by a tick that starts over budget, and only when the new nodes'
    // lines exceed their share, or, for a new node nobody has read, to keep nodes in
    // use active. The level ends within budget.
    let left_active: Vec<&String> = tiers_before
        .iter()
        .filter(|(id, t)| **t == Tier::Active && tier_after(id) != Tier::Active)
        .map(|(id, _)| id)
        .collect();
    let active_before = || {
        before
            .nodes
            .iter()
            .filter(|(_, n)| n.tier() == Tier::Active)
    };
    let grace_lines: usize = active_before()
        .filter(|(_, n)| in_grace(n, now))
        .map(|(id, n)| 2 + chars(id) + 2 + chars(n.gist()) + 1)
        .sum();
    let some_in_use = active_before().any(|(_, n)| in_use(n, now));
    for id in &left_active {
        let node = after.nodes.get(*id);
        prop_assert!(node.is_some(), "active {} deleted by a tick", id);
        if let Some(n) = node.filter(|n| in_grace(n, now)) {
            let unread = n.last_read_ts().is_none_or(|r| r < n.created_ts()) && !in_use(n, now);
            prop_assert!(
                size_before > LEVEL_BUDGET
                    && (grace_lines > GRACE_SHARE || (unread && some_in_use)),
                "{} archived inside its grace (new nodes' lines {}, level {})",
                id,
                grace_lines,
                size_before
            );
        }
    }
    check_budget(after, now, "after a tick")?;
    // (d) Only orphans past their grace are deleted, all of them, and reported.
    check_deletions(&stamps_before, &ids_before, after, &HashSet::new(), now)?;
    let mut gone: Vec<String> = ids_before
        .iter()
        .filter(|id| !after.nodes.contains_key(*id))
        .cloned()
        .collect();
    gone.sort();
    prop_assert_eq!(
        sorted(&moves.deleted),
        gone,
        "pruning reports what it deleted"
    );
    // At most MAX_DELETES_PER_PASS go in one tick (longest orphaned first); the rest
    // in the ticks after.
    if moves.deleted.len() < kg_core::compact::MAX_DELETES_PER_PASS {
        check_no_expired_orphans(after, now)?;
    }
    for (id, ts) in orphan_stamps(after) {
        match stamps_before.get(&id) {
            Some(&old) => prop_assert_eq!(ts, old, "orphan stamp of {} moved", id),
            None => prop_assert_eq!(ts, now, "new orphan {} stamped", id),
        }
    }
    // Anchors above their share are orphaned down to it (§6.5).
    let index = LevelIndex::of(after);
    let anchors: usize = (0..index.tiers.len())
        .filter(|&i| index.tiers[i] == Tier::Archived)
        .map(|i| index.anchor_cost(i))
        .sum();
    prop_assert!(anchors <= ANCHOR_BUDGET, "anchors take {} chars", anchors);
    // (e) An archiving tick only archives over budget and never refills: whatever it
    // restored is resurrection, one for one with what it archived. A refill happens
    // only under the fill ceiling and stays under it.
    if !left_active.is_empty() {
        prop_assert!(
            size_before > LEVEL_BUDGET,
            "archived at {} chars, within budget",
            size_before
        );
        prop_assert!(
            moves.restored.len() <= left_active.len(),
            "archived {:?} but restored more: {:?}",
            left_active,
            moves.restored
        );
    } else if !moves.restored.is_empty() {
        prop_assert!(
            size_before < FILL_CEILING,
            "refilled from {} chars",
            size_before
        );
        prop_assert!(
            size_after <= FILL_CEILING,
            "refill ended at {} chars",
            size_after
        );
    }
    Ok(())
}

/// One maintenance tick on a bare graph, checked. Returns whether anything moved.
pub(super) fn tick(g: &mut Graph, stall: &mut bool, now: f64) -> Result<bool, TestCaseError> {
    let before = g.clone();
    let mut moves = compact_graph(g, stall, "project:prop", GRACE_DAYS, now, None);
    moves.deleted = prune_orphans(g, config().orphan_grace_days, now);
    check_tick(&before, g, &moves, now)?;
    Ok(!moves.is_empty())
}

/// (e) Tick at one instant until nothing moves (within [`MAX_TICKS`]); a further tick
/// then leaves the graph exactly as it is.
pub(super) fn settle(g: &mut Graph, stall: &mut bool, now: f64) -> Result<usize, TestCaseError> {
    // Permanent deletes are capped per pass: a graph with many expired orphans takes
    // a tick per batch of them.
    let ticks = MAX_TICKS + g.nodes.len() / kg_core::compact::MAX_DELETES_PER_PASS;
    for n in 1..=ticks {
        if !tick(g, stall, now)? {
            let before = g.clone();
            prop_assert!(!tick(g, stall, now)?, "a stable graph moved");
            prop_assert!(*g == before, "a stable graph changed");
            return Ok(n);
        }
    }
    Err(TestCaseError::fail(format!(
        "no fixed point within {ticks} ticks at {now}"
    )))
}

// ----- render equals charge ------------------------------------------------------------------

pub(super) fn head(level: Level, plan: &Plan) -> String {
    let name = match level {
        Level::User => "USER",
        Level::Project => "PROJECT",
    };
    format!(
        "=== {name} GRAPH — {} active, {} archived ===",
        plan.order.len(),
        plan.anchors.len()
    )
}

/// One level's body as printed: the text between its `===` line and its `HEALTH`
/// line, with the HEALTH line. `rest` starts at the level's `===` line; `after` is the
/// exact text that follows the HEALTH line.
pub(super) fn cut_level<'t>(
    rest: &'t str,
    head: &str,
    after: &str,
) -> Result<(&'t str, &'t str), String> {
    let rest = rest
        .strip_prefix(head)
        .and_then(|r| r.strip_prefix('\n'))
        .ok_or_else(|| format!("level does not start with {head:?}"))?;
    let at = rest
        .find(after)
        .ok_or_else(|| format!("{after:?} not found"))?;
    let before = &rest[..at];
    // The HEALTH line holds no newline; a gist may.
    let (body, health) = match before.rfind('\n') {
        Some(p) => (&before[..=p], &before[p + 1..]),
        None => ("", before),
    };
    if !health.starts_with("HEALTH: ") {
        return Err(format!("no HEALTH line before {after:?}: {health:?}"));
    }
    Ok((body, health))
}

/// (c) A full read of two levels (no preload, no degradation): each level body has
/// exactly the plan's `body_chars`, HEALTH counts the plan, and the text is the sum of
/// its parts. When both levels are within budget, the real 40,000-char read is the
/// same text (2 × 17,500 + wrapper fits by construction, §7.3).
pub(super) fn check_render(levels: [(&Graph, Option<&str>); 2], now: f64) -> Check {
    let sid = "5e55a0c1";
    let read = |budget: usize| {
        render_read(
            [
                LevelSource {
                    level: Level::User,
                    graph: levels[0].0,
                    debt_line: levels[0].1,
                },
                LevelSource {
                    level: Level::Project,
                    graph: levels[1].0,
                    debt_line: levels[1].1,
                },
            ],
            &ReadOptions {
                kind: ReadKind::FullRead,
                budget,
                preloaded: None,
                header: None,
                session_id: Some(sid),
                now,
                grace_days: GRACE_DAYS,
            },
        )
    };
    let whole = read(usize::MAX);
    let text = whole.text.as_str();
    prop_assert_eq!(whole.body(), &whole.text, "no prefix without a preload");
    let mut rest = text;
    let mut total = 0;
    for (k, level) in [Level::User, Level::Project].into_iter().enumerate() {
        let (g, debt) = levels[k];
        let index = LevelIndex::of(g);
        let plan = Plan::build(&index, &index.tiers, Mode::Active);
        let charged = plan.body_chars(&index);
        prop_assert_eq!(charged, level_chars(g));
        let h = head(level, &plan);
        let mut after = String::new();
        if let Some(d) = debt {
            after.push('\n');
            after.push_str(d);
        }
        after.push_str(match level {
            Level::User => "\n=== PROJECT GRAPH — ",
            Level::Project => "\n\nSession: ",
        });
        let (body, health) = cut_level(rest, &h, &after).map_err(TestCaseError::fail)?;
        prop_assert_eq!(chars(body), charged, "{} body: render ≠ charge", level);
        let counts = format!(
            "HEALTH: {} nodes, {} edges, {} orphans (",
            plan.order.len(),
            plan.cited_edges(),
            plan.unlinked_nodes(&index)
        );
        prop_assert!(health.starts_with(&counts), "{} ≠ {}", health, counts);
        prop_assert_eq!(
            body.starts_with("ACTIVE:\n"),
            !plan.order.is_empty(),
            "ACTIVE head"
        );
        prop_assert_eq!(
            body.contains("\nARCHIVED (use kg_read with id to view full content):\n")
                || body.starts_with("ARCHIVED ("),
            !plan.anchors.is_empty(),
            "ARCHIVED head"
        );
        total += chars(&h) + 1 + charged + chars(health) + debt.map_or(0, |d| 1 + chars(d));
        let skip = h.len() + 1 + body.len() + health.len() + debt.map_or(0, |d| 1 + d.len()) + 1;
        rest = rest.get(skip..).unwrap_or("");
    }
    prop_assert_eq!(rest, format!("\nSession: {sid}"), "footer");
    // The newline between the levels, then the footer.
    total += 1 + chars("\n\nSession: ") + chars(sid);
    prop_assert_eq!(chars(text), total, "the read is the sum of its parts");
    if levels.iter().all(|(g, _)| level_chars(g) <= LEVEL_BUDGET) {
        let budgeted = read(READ_BUDGET);
        prop_assert!(chars(&budgeted.text) <= READ_BUDGET);
        prop_assert!(
            budgeted.text == whole.text,
            "a maintained graph read degraded"
        );
    }
    Ok(())
}

/// A DEBT line of the usual shape, to be carried through as wrapper text.
pub(super) const DEBT_LINE: &str =
    "DEBT: LOW (0.14) — 0 oversized gist(s), 0 unconnected, never maintained, active 1/7d";
