//! UPDATE and DELETE outside a transaction block, in batches. A transaction holds its writes in memory
//! until it commits, so one transaction for a statement over millions of rows would hold them all: such a
//! statement commits a batch of rows at a time instead, each batch a transaction of its own (retried on
//! conflicts), and goes on from where the batch before stopped (`exec::Resume`). Memory then follows a
//! batch, not the statement. The statement as a whole is not atomic: an error in a later batch leaves the
//! batches before it committed, and says so in its DETAIL. A statement whose rows must all be gathered
//! first (see `exec/modify.rs`) runs as one batch, under the transaction size limit. Inside a transaction
//! block a statement is never split: the block's limit applies (54000).

use tabula_store::retry;

use super::Session;
use crate::error::{QueryError, Result};
use crate::exec::{Executor, Modified, Resume, ScanStats};
use crate::output::Output;
use crate::plan::Plan;
use crate::types::Datum;

/// Rows one batch changes at most (it stops at the end of the page that reaches them). With a one-row
/// page cost of about a tenth of a millisecond, a commit every 10,000 rows is a small share of a batch,
/// and 10,000 rows of a few hundred bytes stay far under the transaction size limit.
pub const BATCH_ROWS: u64 = 10_000;

impl Session {
    /// Runs an UPDATE or DELETE outside a transaction block, a batch at a time (see the module's comment).
    pub(super) fn run_batched(&mut self, plan: &Plan, params: &[Datum], now_us: i64) -> Result<(Output, Option<ScanStats>)> {
        let mut from: Option<Resume> = None;
        let (mut count, mut returned, mut stats) = (0, Vec::new(), ScanStats::default());
        loop {
            let batch = retry::on_conflict(
                || self.run_batch(plan, params, now_us, from.as_ref()),
                |e| matches!(e, QueryError::SerializationFailure),
            );
            let (m, s) = match batch {
                Ok(done) => done,
                Err(e) if stats.batches > 0 => {
                    return Err(e.with_message(format!(
                        "{count} rows of the statement were committed before, in {} transactions of at most {BATCH_ROWS} rows: outside a \
                         transaction block, UPDATE and DELETE commit in batches",
                        stats.batches
                    )))
                }
                Err(e) => return Err(e),
            };
            count += m.count;
            returned.extend(m.returned);
            stats.examined += s.examined;
            stats.returned += s.returned;
            stats.engine_calls += s.engine_calls;
            stats.micros += s.micros;
            stats.batches += 1;
            match m.resume {
                Some(r) => from = Some(r),
                None => break,
            }
        }
        let out = match plan {
            Plan::Update(u) => super::dml::dml_output(format!("UPDATE {count}"), &u.returning, returned),
            Plan::Delete(d) => super::dml::dml_output(format!("DELETE {count}"), &d.returning, returned),
            _ => return Err(QueryError::Internal("only UPDATE and DELETE run in batches".into())),
        };
        Ok((out, Some(stats)))
    }

    /// One batch: a transaction that runs the statement from `from` until it has written enough, and
    /// commits.
    fn run_batch(&self, plan: &Plan, params: &[Datum], now_us: i64, from: Option<&Resume>) -> Result<(Modified, ScanStats)> {
        let txn = self.db.store().begin();
        txn.limit_size();
        // A quarter of the limit: a batch stops at the end of a page, which may write more.
        let room = txn.size_limit().map_or(u64::MAX, |l| l / 4);
        let enough = |rows: u64| rows >= BATCH_ROWS || txn.written_bytes() >= room;
        let mut ex = Executor::new(&txn, self.ctx(params, now_us), &self.interrupt);
        ex.system = Some(self.db.store().as_ref());
        ex.catalog = Some(self.db.as_ref());
        let m = match plan {
            Plan::Update(u) => ex.update(u, from, Some(&enough))?,
            Plan::Delete(d) => ex.delete(d, from, Some(&enough))?,
            _ => return Err(QueryError::Internal("only UPDATE and DELETE run in batches".into())),
        };
        self.settle_foreign_keys(&ex)?;
        let stats = ex.stats.get();
        drop(ex);
        txn.commit()?;
        Ok((m, stats))
    }
}
