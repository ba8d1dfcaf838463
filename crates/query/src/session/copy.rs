//! COPY FROM STDIN (data fed as it arrives, in batches or one bulk load) and COPY TO STDOUT.

use std::sync::Arc;

use tabula_store::{Access, StoreError, Txn};

use super::Session;
use crate::error::{QueryError, Result};
use crate::expr::{EvalCtx, Expr};
use crate::output::Output;
use crate::plan::{Plan, SelectPlan};
use crate::schema::TableSchema;
use crate::types::{Datum, SqlType, Zone};

/// Rows inserted per engine call during COPY FROM.
const COPY_BATCH: usize = 2000;

/// A field of COPY data: text (a `timestamptz` without an offset read in the session's `zone`), or a
/// value's binary form.
trait CopyField {
    fn value(&self, ty: SqlType, zone: &Zone) -> Result<Datum>;
}

impl CopyField for String {
    fn value(&self, ty: SqlType, zone: &Zone) -> Result<Datum> {
        Datum::parse_in(ty, self, zone)
    }
}

impl CopyField for Vec<u8> {
    fn value(&self, ty: SqlType, _: &Zone) -> Result<Datum> {
        crate::types::decode_binary(self, ty)
    }
}

/// A COPY FROM in progress.
pub(super) struct CopyIn {
    table: Arc<TableSchema>,
    /// The columns of the data (`given` of them), then those the data leaves out that have `defaults`.
    targets: Vec<usize>,
    given: usize,
    defaults: Vec<Expr>,
    /// The table's CHECK constraints, which every row must meet.
    checks: Vec<crate::plan::BoundCheck>,
    /// The foreign-key checks of the rows written, run at the end (or at COMMIT when deferred).
    fk_checks: Vec<crate::exec::FkCheck>,
    format: crate::copy::CopyFormat,
    buf: Vec<u8>,
    /// The statement's own transaction when the session has none open and rows need generated keys.
    txn: Option<Txn>,
    /// Outside a transaction, or in one into a table it made (`Ddl::bulk_load`), rows with complete keys
    /// load as one atomic write batch instead.
    bulk: Option<tabula_store::BulkLoad>,
    /// Lines before the first row (a header).
    skipped_lines: u64,
    rows: u64,
    line: u64,
    header_pending: bool,
    finished: bool,
    error: Option<QueryError>,
}

impl Session {
    /// COPY data from the client.
    pub fn copy_data(&mut self, data: &[u8]) {
        self.copy_feed(data, false);
        let Some(rows) = self.copy.as_ref().map(|c| c.rows) else { return };
        self.activity.update(|b| {
            if let Some(p) = &mut b.copy {
                p.bytes += data.len() as u64;
                p.tuples = rows;
            }
        });
    }

    /// The end of COPY data: the remaining rows are written and the statement commits. Returns the count.
    pub fn copy_done(&mut self) -> Result<u64> {
        let done = self.copy_finish().map_err(|e| self.typed_values(e));
        self.activity.update(|b| b.copy = None);
        done
    }

    fn copy_finish(&mut self) -> Result<u64> {
        self.copy_feed(&[], true);
        let Some(copy) = self.copy.take() else { return Err(QueryError::Internal("no COPY in progress".into())) };
        if let Some(e) = copy.error {
            if let Some(t) = copy.txn {
                let _ = t.rollback();
            }
            self.note_error();
            return Err(e);
        }
        if !copy.fk_checks.is_empty() {
            let settled = match copy.txn.as_ref().or(self.txn.as_ref()) {
                Some(access) => {
                    let now_us = self.db.store().clock().now_ms() * 1000;
                    let mut ex = crate::exec::Executor::new(access, self.ctx(&[], now_us), &self.interrupt);
                    ex.catalog = Some(self.db.as_ref());
                    *ex.pending.borrow_mut() = copy.fk_checks;
                    self.settle_foreign_keys(&ex)
                }
                None => Err(QueryError::Internal("COPY into a table with foreign keys outside a transaction".into())),
            };
            if let Err(e) = settled {
                if let Some(t) = copy.txn {
                    let _ = t.rollback();
                }
                self.note_error();
                return Err(e);
            }
        }
        if let Some(t) = copy.txn {
            if let Err(e) = t.commit() {
                return Err(e.into());
            }
        }
        if let Some(b) = copy.bulk {
            match self.ddl().commit_bulk(b) {
                Ok(()) => {}
                Err(tabula_store::BulkError::Duplicate(i)) => {
                    self.note_error();
                    let line = copy.skipped_lines + i as u64 + 1;
                    return Err(
                        QueryError::UniqueViolation(copy.table.name.clone()).with_message(format!("COPY {}, line {line}", copy.table.name))
                    );
                }
                Err(tabula_store::BulkError::Store(e)) => {
                    self.note_error();
                    return Err(e.into());
                }
            }
        }
        // Inside a transaction block the rows commit with it (and COMMIT waits for them).
        if self.txn.is_none() {
            self.commit_durably()?;
        }
        Ok(copy.rows)
    }

    /// The client gave up the COPY: nothing of it is written.
    pub fn copy_fail(&mut self, message: &str) -> QueryError {
        self.activity.update(|b| b.copy = None);
        if let Some(copy) = self.copy.take() {
            if let Some(t) = copy.txn {
                let _ = t.rollback();
            }
        }
        self.note_error();
        QueryError::Cancelled.with_message(format!("COPY from stdin failed: {message}"))
    }

    pub(super) fn copy_feed(&mut self, data: &[u8], at_end: bool) {
        let Some(copy) = self.copy.as_mut() else { return };
        if copy.error.is_some() || copy.finished {
            return;
        }
        copy.buf.extend_from_slice(data);
        if copy.format.binary {
            let mut records = Vec::new();
            match crate::copy_binary::take_records(&mut copy.buf, at_end, &mut copy.header_pending, &mut records) {
                Ok(done) => copy.finished = done,
                Err(e) => {
                    copy.error = Some(e);
                    return;
                }
            }
            return self.copy_rows(&records);
        }
        let mut records = Vec::new();
        match copy.format.take_records(&mut copy.buf, at_end, &mut records) {
            Ok(done) => copy.finished = done,
            Err(e) => {
                copy.error = Some(e);
                return;
            }
        }
        if copy.header_pending && !records.is_empty() {
            records.remove(0);
            copy.header_pending = false;
            copy.line += 1;
            copy.skipped_lines += 1;
        }
        self.copy_rows(&records)
    }

    /// Writes rows of COPY data, their fields in text or binary form.
    fn copy_rows<F: CopyField>(&mut self, records: &[Vec<Option<F>>]) {
        let zone = self.zone();
        let session_txn = self.txn.as_ref();
        let copy = self.copy.as_mut().unwrap();
        let access: &dyn Access = match (&copy.txn, session_txn) {
            (Some(t), _) => t,
            (None, Some(t)) => t,
            (None, None) if copy.bulk.is_some() => self.db.store().as_ref(),
            (None, None) => {
                copy.error = Some(QueryError::Internal("COPY without a transaction".into()));
                return;
            }
        };
        let defaults_ctx = EvalCtx {
            params: &[],
            now_us: self.db.store().clock().now_ms() * 1000,
            user: self.role.as_deref().unwrap_or(&self.user),
            session_user: &self.user,
            database: &self.database,
            zone,
            sequences: Some((self.db.as_ref(), &*self.sequences)),
        };
        for chunk in records.chunks(COPY_BATCH) {
            let mut batch = Vec::with_capacity(chunk.len());
            for fields in chunk {
                copy.line += 1;
                let r = (|| {
                    if fields.len() != copy.given {
                        return Err(QueryError::InvalidText(format!(
                            "{} data for table \"{}\": expected {} columns, got {}",
                            if fields.len() < copy.given { "missing" } else { "extra" },
                            copy.table.name,
                            copy.given,
                            fields.len()
                        )));
                    }
                    let mut values = fields
                        .iter()
                        .zip(&copy.targets)
                        .map(|(f, &t)| match f {
                            None => Ok(Datum::Null),
                            Some(field) => {
                                field.value(if t == copy.table.columns.len() { SqlType::Int8 } else { copy.table.column_type(t) }, &zone)
                            }
                        })
                        .collect::<Result<Vec<_>>>()?;
                    for e in &copy.defaults {
                        values.push(e.eval(&[], &defaults_ctx)?);
                    }
                    let row = crate::exec::prepare_row(&copy.table, &copy.targets, values)?;
                    crate::exec::check_row(&copy.table, &copy.checks, &row.row, &defaults_ctx)?;
                    Ok(row)
                })();
                match r {
                    Ok(p) => batch.push((p.pk, p.cells)),
                    Err(e) => {
                        copy.error = Some(e.with_message(format!("COPY {}, line {}", copy.table.name, copy.line)));
                        return;
                    }
                }
            }
            if let Some(bulk) = copy.bulk.as_mut() {
                match bulk.add_drawing(&batch) {
                    Ok(()) => copy.rows += batch.len() as u64,
                    Err(e) => {
                        copy.error = Some(QueryError::from(e).with_message(format!("COPY {}, line {}", copy.table.name, copy.line)));
                        return;
                    }
                }
                continue;
            }
            match access.insert_rows(&copy.table.name, &batch) {
                Ok(pks) => {
                    copy.rows += batch.len() as u64;
                    for pk in pks {
                        for fk in 0..copy.table.foreign_keys.len() {
                            copy.fk_checks.push(crate::exec::FkCheck::Child { table: copy.table.clone(), fk, pk: pk.clone() });
                        }
                    }
                }
                Err(StoreError::RowExists) => {
                    copy.error = Some(QueryError::UniqueViolation(copy.table.name.clone()));
                    return;
                }
                Err(e) => {
                    copy.error = Some(e.into());
                    return;
                }
            }
        }
    }

    /// `COPY ... FROM STDIN` starts: the data comes next, through [`Session::copy_data`].
    pub(super) fn copy_from(
        &mut self,
        table: &Arc<TableSchema>,
        targets: &[usize],
        defaults: &[(usize, Expr)],
        format: &crate::copy::CopyFormat,
        checks: &[crate::plan::BoundCheck],
    ) -> Result<Output> {
        // A generated column after the partition key counts per partition-key value, inside a transaction;
        // a generated partition key draws from its sequence, which a bulk load does too.
        // So does one with foreign keys, whose checks read the parents in the load's transaction. (A bulk
        // load makes a table's index entries with its rows.)
        let generated = table.pk.iter().skip(table.partition_key_len).any(|&c| table.columns[c].identity) || !table.foreign_keys.is_empty();
        let (txn, bulk) = match (&self.txn, generated) {
            (Some(_), true) => (None, None),
            // A table this transaction made may take the rows as a bulk load too (`Ddl::bulk_load`).
            (Some(_), false) => (None, self.ddl().bulk_load(&table.name)?),
            (None, true) => (Some(self.db.store().begin()), None),
            (None, false) => (None, Some(self.db.store().bulk_load(&table.name)?)),
        };
        self.copy = Some(CopyIn {
            table: table.clone(),
            targets: targets.iter().chain(defaults.iter().map(|(c, _)| c)).copied().collect(),
            given: targets.len(),
            defaults: defaults.iter().map(|(_, e)| e.clone()).collect(),
            checks: checks.to_vec(),
            fk_checks: Vec::new(),
            format: format.clone(),
            buf: Vec::new(),
            txn,
            bulk,
            skipped_lines: 0,
            rows: 0,
            line: 0,
            // The binary format's header is always there; a text one only with HEADER.
            header_pending: format.header || format.binary,
            finished: false,
            error: None,
        });
        let progress = crate::activity::CopyProgress { table: table.name.clone(), bytes: 0, tuples: 0 };
        self.activity.update(|b| b.copy = Some(progress));
        Ok(Output::CopyIn { columns: targets.len(), binary: format.binary })
    }

    /// `COPY ... TO STDOUT`: the query's rows in the chosen format.
    pub(super) fn copy_to(&mut self, select: &SelectPlan, format: &crate::copy::CopyFormat, params: &[Datum]) -> Result<Output> {
        let (out, _) = self.run_dml(&Plan::Select(select.clone()), params, false)?;
        let Output::Rows { rows, columns, .. } = out else { return Err(QueryError::Internal("COPY TO without rows".into())) };
        let types: Vec<SqlType> = columns.iter().map(|c| c.ty).collect();
        let zone = self.zone();
        let mut chunks = Vec::with_capacity(rows.len());
        let (mut prefix, mut suffix) = (Vec::new(), Vec::new());
        if format.binary {
            prefix = crate::copy_binary::header();
            suffix = crate::copy_binary::trailer();
        } else if format.header {
            let header: Vec<Datum> = columns.iter().map(|c| Datum::Text(c.name.clone())).collect();
            format.format_row(&header, &vec![SqlType::Text; header.len()], &zone, &mut prefix);
        }
        for r in &rows {
            let mut chunk = Vec::with_capacity(64);
            if format.binary {
                crate::copy_binary::format_row(r, &types, &mut chunk)?;
            } else {
                format.format_row(r, &types, &zone, &mut chunk);
            }
            chunks.push(chunk);
        }
        Ok(Output::CopyOut { columns: columns.len(), binary: format.binary, prefix, rows: chunks, suffix })
    }
}
