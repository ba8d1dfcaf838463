//! The session's entry in `pg_stat_activity` ([`crate::activity`]): its backend pid and client, and what
//! it runs.

use std::net::SocketAddr;

use super::Session;
use crate::activity::{Backend, Entry};
use crate::database::Database;
use crate::error::Result;
use crate::output::{Output, TxnStatus};

/// A new session's entry: idle, its pid not given yet.
pub(super) fn register(db: &Database, user: &str, database: &str) -> Entry {
    let now = db.store().clock().now_ms() * 1000;
    db.activity().register(Backend {
        pid: 0,
        user: user.into(),
        database: database.into(),
        application_name: String::new(),
        client: None,
        server: None,
        backend_start_us: now,
        xact_start_us: None,
        query_start_us: None,
        state_change_us: now,
        state: "idle",
        query: String::new(),
        copy: None,
        index_build: None,
    })
}

impl Session {
    /// The backend pid the client was given (`pg_backend_pid()`), where it connected from and to.
    pub fn set_backend(&mut self, pid: i32, client: Option<SocketAddr>, server: Option<SocketAddr>) {
        let application_name = self.setting("application_name").unwrap_or_default().to_string();
        self.activity.update(|b| {
            b.pid = pid;
            b.client = client;
            b.server = server;
            b.application_name = application_name;
        });
    }

    pub fn backend_pid(&self) -> i32 {
        self.activity.read(|b| b.pid)
    }

    /// A statement starts: the session is active, running `sql` (and in a transaction, its own if no
    /// block is open).
    pub(super) fn statement_started(&self, sql: &str) {
        let now = self.db.store().clock().now_ms() * 1000;
        let in_block = self.txn.is_some();
        self.activity.update(|b| {
            b.state = "active";
            b.query.clear();
            b.query.push_str(sql);
            b.query_start_us = Some(now);
            b.state_change_us = now;
            if !in_block {
                b.xact_start_us = Some(now);
            }
        });
    }

    /// The statement ended: the session is idle, in its transaction block if one is open. A streamed
    /// result is still being read: the session goes idle when its stream ends.
    pub(super) fn statement_ended(&self, out: Result<Output>) -> Result<Output> {
        let state = match self.txn_status() {
            TxnStatus::Idle => "idle",
            TxnStatus::InTransaction => "idle in transaction",
            TxnStatus::Failed => "idle in transaction (aborted)",
        };
        let application_name = self.setting("application_name").unwrap_or_default().to_string();
        let (handle, clock) = (self.activity.handle(), self.db.store().clock().clone());
        let idle = move || {
            let now = clock.now_ms() * 1000;
            handle.update(|b| {
                b.state = state;
                b.state_change_us = now;
                if state == "idle" {
                    b.xact_start_us = None;
                }
                b.application_name = application_name;
            });
        };
        match out {
            Ok(Output::Stream { columns, cursor }) => Ok(Output::Stream { columns, cursor: cursor.on_drop(idle) }),
            out => {
                idle();
                out
            }
        }
    }
}
