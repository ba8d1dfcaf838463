//! The end of a transaction block: COMMIT (a ROLLBACK for a failed transaction) and ROLLBACK.

use super::*;

impl Session {
    /// COMMIT: deferred foreign keys are checked first, in the transaction; a failed transaction rolls
    /// back instead, as PostgreSQL's.
    pub(super) fn commit(&mut self) -> Result<Output> {
        let failed = std::mem::take(&mut self.failed);
        self.savepoints.clear();
        self.cursors.end_transaction(!failed);
        let ddl = self.txn.as_ref().is_some_and(|t| t.did_ddl());
        // Deferred foreign keys are checked last, in the transaction: a failure rolls it back.
        let deferred = if failed { Ok(()) } else { self.check_deferred() };
        self.end_deferred();
        let r = match self.txn.take() {
            Some(t) if failed => t.rollback().map(|()| ("ROLLBACK", false)).map_err(QueryError::from),
            Some(t) => match deferred {
                Ok(()) => {
                    let wrote = t.wrote();
                    t.commit().map(|()| ("COMMIT", wrote)).map_err(QueryError::from)
                }
                Err(e) => {
                    let _ = t.rollback();
                    Err(e)
                }
            },
            None => Ok(("COMMIT", false)),
        };
        if ddl {
            // Undone, or set-aside tables dropped: schemas and plans are made again.
            self.db.invalidate();
        }
        let (tag, wrote) = r?;
        if wrote {
            self.commit_durably()?;
        }
        Ok(Output::Command { tag: tag.into() })
    }

    pub(super) fn rollback(&mut self) -> Result<Output> {
        self.failed = false;
        self.end_deferred();
        self.savepoints.clear();
        self.cursors.end_transaction(false);
        if let Some(t) = self.txn.take() {
            let ddl = t.did_ddl();
            let r = t.rollback();
            if ddl {
                self.db.invalidate();
            }
            r?;
        }
        Ok(Output::Command { tag: "ROLLBACK".into() })
    }
}
