//! The WebSocket connections of the server, by session: who holds each session id,
//! and which ids were minted for connections that came without one. Kept in the
//! shared state, apart from the `/ws` route that fills it.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Which connection currently holds each session id (a newer connection with the
/// same id replaces the older one).
#[derive(Debug, Default)]
pub struct Registry {
    holders: Mutex<HashMap<String, u64>>,
    next: AtomicU64,
    /// Ids minted for connections that came without a session (graph views, the tray),
    /// newest last: the activity log tells a view's changes from an agent's by them.
    minted: Mutex<VecDeque<String>>,
}

/// How many minted connection ids are remembered.
const MINTED_KEPT: usize = 1_000;

impl Registry {
    pub(crate) fn mint(&self, store: &kg_core::Store) -> String {
        let sid = store.connection_id();
        let mut minted = self.minted.lock().unwrap_or_else(|e| e.into_inner());
        if minted.len() == MINTED_KEPT {
            minted.pop_front();
        }
        minted.push_back(sid.clone());
        sid
    }

    /// Whether `sid` was minted for a connection without a session (a graph view).
    pub fn minted_for_connection(&self, sid: &str) -> bool {
        self.minted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|m| m == sid)
    }

    pub(crate) fn claim(&self, sid: &str) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(sid.to_string(), id);
        id
    }

    pub(crate) fn holds(&self, sid: &str, id: u64) -> bool {
        self.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(sid)
            == Some(&id)
    }

    pub(crate) fn release(&self, sid: &str, id: u64) {
        let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        if holders.get(sid) == Some(&id) {
            holders.remove(sid);
        }
    }

    /// Connections currently open.
    pub fn len(&self) -> usize {
        self.holders.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
