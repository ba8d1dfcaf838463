//! What each session is doing, as `pg_stat_activity` shows it: one entry per session, made when it starts,
//! changed as each statement starts and ends (two short locks per statement), gone when it ends.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Every session's entry, by session.
#[derive(Debug, Default)]
pub struct Activity {
    backends: Mutex<BTreeMap<u64, Backend>>,
    next: AtomicU64,
}

/// One session, as pg_stat_activity has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    /// The backend pid the client was given (0 until the wire layer gives it).
    pub pid: i32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub client: Option<SocketAddr>,
    /// The address the client connected to (`inet_server_addr()`; not in pg_stat_activity).
    pub server: Option<SocketAddr>,
    /// Microseconds since the epoch.
    pub backend_start_us: i64,
    pub xact_start_us: Option<i64>,
    pub query_start_us: Option<i64>,
    pub state_change_us: i64,
    /// `active`, `idle`, `idle in transaction`, `idle in transaction (aborted)`.
    pub state: &'static str,
    /// The running statement's text, or the last one's.
    pub query: String,
    /// The COPY FROM STDIN under way (`pg_stat_progress_copy`).
    pub copy: Option<CopyProgress>,
    /// The CREATE INDEX under way (`pg_stat_progress_create_index`).
    pub index_build: Option<IndexBuildProgress>,
}

/// How far a CREATE INDEX (or ADD UNIQUE) has come.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBuildProgress {
    pub table: String,
    pub index: String,
    /// PostgreSQL's name of the step (`building index: scanning table`).
    pub phase: &'static str,
    /// Rows whose entries are written, of about `total` (the table's statistics when the build began).
    pub done: u64,
    pub total: u64,
}

/// How far a COPY FROM STDIN has come.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyProgress {
    pub table: String,
    /// Bytes of data received.
    pub bytes: u64,
    /// Rows written.
    pub tuples: u64,
}

impl Activity {
    /// Adds a session's entry, removed when the returned [`Entry`] is dropped.
    pub fn register(self: &Arc<Self>, backend: Backend) -> Entry {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.backends.lock().insert(id, backend);
        Entry(Handle { activity: self.clone(), id })
    }

    /// Every session's entry, in the order they started.
    pub fn backends(&self) -> Vec<Backend> {
        self.backends.lock().values().cloned().collect()
    }
}

/// A session's entry in [`Activity`], removed when dropped.
#[derive(Debug)]
pub struct Entry(Handle);

/// A way to change a session's entry that does not own it (a result stream that ends after its
/// statement returned).
#[derive(Debug, Clone)]
pub struct Handle {
    activity: Arc<Activity>,
    id: u64,
}

impl Handle {
    pub fn update(&self, f: impl FnOnce(&mut Backend)) {
        if let Some(b) = self.activity.backends.lock().get_mut(&self.id) {
            f(b);
        }
    }
}

impl Entry {
    pub fn update(&self, f: impl FnOnce(&mut Backend)) {
        self.0.update(f)
    }

    pub fn handle(&self) -> Handle {
        self.0.clone()
    }

    /// What `f` reads of the session's entry.
    pub fn read<T: Default>(&self, f: impl FnOnce(&Backend) -> T) -> T {
        self.0.activity.backends.lock().get(&self.0.id).map(f).unwrap_or_default()
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.0.activity.backends.lock().remove(&self.0.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_live_as_long_as_their_sessions() {
        let a = Arc::new(Activity::default());
        let b = Backend {
            pid: 0,
            user: "u".into(),
            database: "d".into(),
            application_name: String::new(),
            client: None,
            server: None,
            backend_start_us: 1,
            xact_start_us: None,
            query_start_us: None,
            state_change_us: 1,
            state: "idle",
            query: String::new(),
            copy: None,
            index_build: None,
        };
        let first = a.register(b.clone());
        let second = a.register(Backend { user: "v".into(), ..b });
        first.update(|b| b.pid = 42);
        assert_eq!(first.read(|b| b.pid), 42);
        assert_eq!(a.backends().iter().map(|b| b.user.as_str()).collect::<Vec<_>>(), ["u", "v"]);
        drop(first);
        assert_eq!(a.backends().len(), 1);
        drop(second);
        assert!(a.backends().is_empty());
    }
}
