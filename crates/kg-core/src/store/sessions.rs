//! The session registry as the store exposes it, and `kg_sync`.

use super::*;

impl Store {
    pub(crate) fn lock_sessions(&self) -> MutexGuard<'_, SessionRegistry> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Read the session registry in `f` (a leaf lock: `f` must not call the store).
    /// Sessions change only through the store's own operations.
    pub fn with_sessions<R>(&self, f: impl FnOnce(&SessionRegistry) -> R) -> R {
        f(&self.lock_sessions())
    }

    /// Change the session registry in `f` (a leaf lock: `f` must not call the store).
    pub(crate) fn with_sessions_mut<R>(&self, f: impl FnOnce(&mut SessionRegistry) -> R) -> R {
        f(&mut self.lock_sessions())
    }

    /// A copy of one session record, without creating it.
    pub fn session(&self, sid: &str) -> Option<SessionRecord> {
        self.lock_sessions().lookup(sid).cloned()
    }

    /// Sessions in the registry: the live ones, plus any idle past 24 hours that the next
    /// maintenance tick has not yet expired. `/health` reports it as `active_sessions`.
    pub fn session_count(&self) -> usize {
        self.lock_sessions().len()
    }

    /// Register a session for an optional project folder (the project it belongs to:
    /// see [`Store::project_of`]); saved at once.
    pub fn register_session(
        &self,
        project_path: Option<&str>,
        claude_sid: Option<&str>,
        now: f64,
    ) -> Result<String, StoreError> {
        let choice = project_path.map(|p| self.project_of(p)).transpose()?;
        Ok(self.register_in(choice.map(|c| c.root), claude_sid, now))
    }

    /// Register a session for a project root already chosen; saved at once.
    pub(crate) fn register_in(
        &self,
        root: Option<String>,
        claude_sid: Option<&str>,
        now: f64,
    ) -> String {
        let sid = self.register_unsaved(root, claude_sid, now);
        self.save_sessions();
        sid
    }

    /// Register a session for a project root already chosen, in memory only: the
    /// next save of the registry writes it. For a harness that runs hundreds of
    /// short sessions (recall-eval), where a rewrite of the whole registry file for
    /// each would cost more than the sessions themselves.
    pub fn register_unsaved(
        &self,
        root: Option<String>,
        claude_sid: Option<&str>,
        now: f64,
    ) -> String {
        let head = self.change_head();
        self.lock_sessions().register(root, claude_sid, now, head)
    }

    /// Count session `sid` as having made its full read at `now` without showing it
    /// anything (no-op for an unknown session): the full-read nudge no longer stands
    /// in for recall. For tests and evaluations that start from a session past its
    /// full read; a real one comes from `kg_read`.
    pub fn mark_full_read(&self, sid: &str, now: f64) {
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.full_read_ts = Some(now);
        }
    }

    /// An id in the shape of a session id that no session holds, for a connection
    /// that needs to tag its writes without being a session (the graph view's
    /// WebSocket). Nothing is registered.
    pub fn connection_id(&self) -> String {
        self.lock_sessions().mint_id()
    }

    /// Count one tool operation for a session; an id that is malformed or unknown is
    /// refused, with a message saying how to get a session.
    pub fn count_op(&self, sid: &str, now: f64) -> Result<(), StoreError> {
        if sid.is_empty() {
            return Ok(()); // clients send "" for "no session"
        }
        known_session(&mut self.lock_sessions(), sid, now)?.op_count += 1;
        Ok(())
    }

    /// Refresh a session's activity and return a copy of its record, without
    /// creating one (session stats).
    pub fn touch_session(&self, sid: &str, now: f64) -> Result<SessionRecord, StoreError> {
        Ok(known_session(&mut self.lock_sessions(), sid, now)?.clone())
    }

    /// Bind a Claude session id to a KG session and save the registry.
    pub fn bind_claude(&self, sid: &str, claude_sid: &str) {
        self.lock_sessions().bind_claude(sid, claude_sid);
        self.save_sessions();
    }

    /// Mark node ids as shown to a session (no-op for an unknown session).
    pub fn mark_seen<'a>(&self, sid: &str, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.mark_seen(ids);
        }
    }

    /// Remember what session `sid` just worked on (no-op for an unknown session): the
    /// words of a prompt or search, nodes recall or a search showed it on purpose, and
    /// touch keys of files it read or changed. Another session's write that bears on
    /// these is news for it ([`crate::session_news`]).
    pub(crate) fn note_focus<'a>(
        &self,
        sid: &str,
        words: impl IntoIterator<Item = &'a str>,
        nodes: impl IntoIterator<Item = &'a str>,
        files: impl IntoIterator<Item = &'a str>,
    ) {
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.note_focus(words, nodes, files);
        }
    }

    /// Record that session `sid` was shown nodes at `at`, a view time from
    /// [`Store::event_ts`] taken while their graphs were locked (no-op for an unknown
    /// session). `View::Seen` for a gist, `View::Read` for the whole node.
    pub fn record_views<'a>(
        &self,
        sid: &str,
        ids: impl IntoIterator<Item = &'a str>,
        view: View,
        at: f64,
    ) {
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.record_view(ids, view, at);
        }
    }

    /// Nodes of the user graph and of the session's project graph (when loaded) whose
    /// content was written after `since` by someone other than session `sid`, and which
    /// the session has not been shown since that write; newest write first. What
    /// cross-session push tells a session (since-0.9.30.md §2), before its own gates
    /// (tier, who the writer was). Empty for an unknown session.
    pub fn writes_unseen_by(&self, sid: &str, since: f64) -> Vec<UnseenWrite> {
        let Some(record) = self.session(sid) else {
            return Vec::new();
        };
        let slots = self.session_graphs_loaded(&record);
        self.with_graphs(&slots, |graphs| {
            unseen_writes(graphs, &record, sid, since, f64::INFINITY)
        })
    }

    /// The user graph, and the project graph of a session when it is loaded (a
    /// session's news never loads a graph from disk).
    pub(crate) fn session_graphs_loaded(&self, record: &SessionRecord) -> Vec<Arc<GraphSlot>> {
        let mut slots = vec![self.user.clone()];
        slots.extend(
            record
                .project_path
                .as_deref()
                .and_then(|root| self.loaded_project(root)),
        );
        slots
    }

    /// The newest session for a client path; `None` when none or outside home.
    /// The KG session a hook speaks for: the one bound to the harness's session id
    /// (Claude Code's), else the newest session of the cwd's project.
    pub fn hook_session(&self, harness_sid: Option<&str>, cwd: Option<&str>) -> Option<String> {
        if let Some(claude) = harness_sid.filter(|c| crate::limits::is_claude_session_id(c))
            && let Some(sid) =
                self.with_sessions(|s| s.find_by_claude_sid(claude).map(str::to_string))
        {
            return Some(sid);
        }
        cwd.filter(|c| !c.is_empty())
            .and_then(|cwd| self.find_by_project_path(cwd))
    }

    /// The newest session for a client's folder: of the project it belongs to, else
    /// (a session registered before projects were found from subfolders) of the
    /// folder itself; `None` when none or outside home.
    pub fn find_by_project_path(&self, path: &str) -> Option<String> {
        let choice = self.project_of(path).ok()?;
        let sessions = self.lock_sessions();
        sessions
            .find_by_project_path(&choice.root)
            .or_else(|| sessions.find_by_project_path(&choice.folder))
            .map(str::to_string)
    }

    /// Persist the session registry.
    ///
    /// Saves are committed in groups: a caller whose change an already finished
    /// snapshot covers returns at once, so a flood of registrations costs a few
    /// file writes, not one fsync'd rewrite of the whole registry each.
    pub fn save_sessions(&self) {
        // Taken after the caller's change, so any snapshot begun after this number was
        // handed out contains that change.
        let request = self.session_save_requests.fetch_add(1, Ordering::SeqCst) + 1;
        // Two saves that overlap must not land out of order: a registration
        // acknowledged after the later snapshot would vanish from disk.
        let mut saved = self.sessions_file.lock().unwrap_or_else(|e| e.into_inner());
        if *saved >= request {
            return;
        }
        let covers = self.session_save_requests.load(Ordering::SeqCst);
        let obj = self.lock_sessions().to_object();
        match write_json_object(&self.layout.sessions(), &obj, 2, WriteMode::DURABLE) {
            Ok(()) => *saved = covers,
            Err(e) => log::error!("cannot save sessions: {e}"),
        }
    }

    /// What other sessions changed since this session last synced (core.md §3.7).
    ///
    /// A session registered in this process reads the change log from its cursor, so
    /// every change by someone else is reported however close in time to its own
    /// writes; a session from before a restart falls back to the version timestamps,
    /// and so does one whose cursor the bounded log no longer reaches, which (our
    /// policy) is told so.
    pub fn sync(&self, sid: &str, now: f64) -> Result<SyncReport, StoreError> {
        let head = self.change_head();
        let (cursor, watermark, project_root) = {
            let mut sessions = self.lock_sessions();
            let record = known_session(&mut sessions, sid, now)?;
            (
                record.sync_seq,
                record.sync_watermark(),
                record.project_path.clone(),
            )
        };
        // Others' changes since the cursor: the version keys they bumped, and (our
        // policy) the nodes they deleted, with where each happened.
        type VersionKeys = HashSet<(Option<String>, String)>;
        type Deleted = Vec<(Level, Option<String>, String)>;
        let (from_log, deleted, behind): (Option<VersionKeys>, Deleted, bool) = {
            let log = self.changes.lock().unwrap_or_else(|e| e.into_inner());
            let behind = self.config.policy == Policy::Ours
                && cursor.is_some_and(|c| log.since(c).is_none());
            let others = || {
                cursor
                    .and_then(|c| log.since(c))
                    .map(|it| it.filter(|ch| ch.source_session.as_deref() != Some(sid)))
            };
            let keys = others().map(|it| {
                it.filter_map(|ch| ch.version_key().map(|k| (ch.project_path.clone(), k)))
                    .collect()
            });
            let deleted = match (self.config.policy, others()) {
                (Policy::Ours, Some(it)) => it
                    .filter_map(|ch| match &ch.kind {
                        ChangeKind::NodeDeleted { id } => {
                            Some((ch.level, ch.project_path.clone(), id.clone()))
                        }
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            };
            (keys, deleted, behind)
        };
        let select = |slot: &GraphSlot| -> Vec<SyncItem> {
            let state = slot.lock();
            let g = &state.graph;
            let wanted = |key: &str, v: &Version| -> bool {
                if v.session() == Some(sid) {
                    return false;
                }
                match &from_log {
                    Some(set) => {
                        set.contains(&(slot.project_root().map(str::to_string), key.to_string()))
                    }
                    None => v.ts() > watermark,
                }
            };
            let mut nodes = Vec::new();
            let mut edges = Vec::new();
            let edge_text: IndexMap<String, &EdgeKey> =
                g.edges.keys().map(|k| (edge_version_key(k), k)).collect();
            for (key, v) in &g.versions {
                if !wanted(key, v) {
                    continue;
                }
                if let Some(id) = key.strip_prefix("node:") {
                    if let Some(n) = g.nodes.get(id) {
                        nodes.push(SyncItem::Node {
                            id: id.to_string(),
                            archived: n.is_archived_flag(),
                            gist: n.gist().chars().take(100).collect(),
                        });
                    }
                } else if let Some(k) = edge_text.get(key) {
                    edges.push(SyncItem::Edge((*k).clone()));
                }
            }
            nodes.extend(edges);
            // Gone still: a node written again since is reported above instead.
            let mut gone: Vec<&str> = Vec::new();
            for (level, root, id) in &deleted {
                if *level == slot.level
                    && root.as_deref() == slot.project_root()
                    && !g.nodes.contains_key(id)
                    && !gone.contains(&id.as_str())
                {
                    gone.push(id);
                }
            }
            nodes.extend(gone.into_iter().map(|id| SyncItem::Deleted(id.to_string())));
            nodes
        };
        let mut report = SyncReport {
            user: select(&self.user),
            project: Vec::new(),
            behind,
        };
        // Loaded again if it was unloaded while idle; a project whose folder and
        // graph are both gone has nothing to report.
        if let Some(root) = project_root
            && let Ok(slot) = self.existing_project_slot(&root, now)
        {
            report.project = select(&slot);
        }
        if let Some(r) = self.lock_sessions().lookup_mut(sid) {
            r.last_synced_ts = Some(now);
            r.sync_seq = Some(head);
        }
        Ok(report)
    }

    // ----- snapshots -------------------------------------------------------------------
}

/// The record of a client-supplied session id, its activity refreshed. Unknown and
/// malformed ids are refused rather than created: a made-up id (of any length) must
/// neither grow the registry nor evict a real session.
pub(super) fn known_session<'r>(
    sessions: &'r mut SessionRegistry,
    sid: &str,
    now: f64,
) -> Result<&'r mut SessionRecord, StoreError> {
    if !crate::session::is_session_id(sid) {
        return Err(StoreError::MalformedSession(
            limits::for_log(sid).into_owned(),
        ));
    }
    let record = sessions
        .lookup_mut(sid)
        .ok_or_else(|| StoreError::UnknownSession(sid.to_string()))?;
    record.last_activity = now;
    Ok(record)
}

/// The nodes of `graphs` written in `(since, until]` by someone other than `sid`,
/// which `record` (that session) has not been shown since; newest write first.
pub(crate) fn unseen_writes(
    graphs: &[SearchGraph<'_>],
    record: &SessionRecord,
    sid: &str,
    since: f64,
    until: f64,
) -> Vec<UnseenWrite> {
    let mut found = Vec::new();
    for g in graphs {
        for (id, node) in &g.graph.nodes {
            let Some(written) = node.written() else {
                continue;
            };
            if written.ts <= since
                || written.ts > until
                || !written.by_other_than(sid)
                || record.has_seen_since(id, written.ts)
            {
                continue;
            }
            found.push(UnseenWrite {
                level: g.level,
                id: id.clone(),
                gist: node.gist().to_string(),
                known: record.seen_at(id).is_some(),
                tier: node.tier(),
                written,
            });
        }
    }
    found.sort_by(|a, b| b.written.ts.total_cmp(&a.written.ts));
    found
}
