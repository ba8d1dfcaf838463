//! The session's side of FOREIGN KEYs: the checks a statement leaves run at its end, or at COMMIT for a
//! deferred constraint inside a transaction block (`DEFERRABLE INITIALLY DEFERRED`, `SET CONSTRAINTS`);
//! `ADD FOREIGN KEY` checks the rows there; DDL on referenced tables keeps the references whole.

use std::collections::HashMap;

use super::Session;
use crate::error::{QueryError, Result};
use crate::exec::{Executor, FkCheck};
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::quoted as quote;
use crate::schema::{ForeignKey, TableSchema};

/// The open transaction's `SET CONSTRAINTS` modes, and the checks its deferred constraints put off.
#[derive(Default)]
pub(super) struct Deferred {
    all: Option<bool>,
    named: HashMap<String, bool>,
    checks: Vec<FkCheck>,
}

impl Deferred {
    fn deferred(&self, fk: &ForeignKey) -> bool {
        fk.deferrable && self.named.get(&fk.name).copied().or(self.all).unwrap_or(fk.initially_deferred)
    }
}

impl Session {
    /// After a write statement: the checks it left run now, or are kept for COMMIT.
    pub(super) fn settle_foreign_keys(&self, ex: &Executor) -> Result<()> {
        ex.settle_cascades()?;
        let pending = std::mem::take(&mut *ex.pending.borrow_mut());
        let mut deferred = self.deferred.lock();
        for c in pending {
            if self.txn.is_some() && deferred.deferred(c.foreign_key()) {
                deferred.checks.push(c);
            } else {
                ex.verify(&c)?;
            }
        }
        Ok(())
    }

    /// Runs `checks` in the open transaction.
    fn verify_now(&self, checks: &[FkCheck]) -> Result<()> {
        let Some(txn) = &self.txn else { return Ok(()) };
        if checks.is_empty() {
            return Ok(());
        }
        let now_us = self.db.store().clock().now_ms() * 1000;
        let mut ex = Executor::new(txn, self.ctx(&[], now_us), &self.interrupt);
        ex.catalog = Some(self.db.as_ref());
        checks.iter().try_for_each(|c| ex.verify(c))
    }

    /// COMMIT: the deferred checks, before the transaction commits.
    pub(super) fn check_deferred(&self) -> Result<()> {
        let checks = std::mem::take(&mut self.deferred.lock().checks);
        self.verify_now(&checks)
    }

    /// The transaction ended: its modes and checks go.
    pub(super) fn end_deferred(&self) {
        *self.deferred.lock() = Deferred::default();
    }

    /// `SET CONSTRAINTS`: IMMEDIATE runs at once the checks put off for the constraints it names, as in
    /// PostgreSQL. Outside a transaction block it only warns.
    pub(super) fn set_constraints(&mut self, names: Option<&[String]>, deferred: bool) -> Result<Output> {
        let out = Ok(Output::Command { tag: "SET CONSTRAINTS".into() });
        if let Some(names) = names {
            let all: Vec<ForeignKey> = self
                .db
                .table_names()
                .iter()
                .map(|n| self.db.table(n))
                .collect::<Result<Vec<_>>>()?
                .iter()
                .flat_map(|t| t.foreign_keys.clone())
                .collect();
            for n in names {
                match all.iter().find(|fk| fk.name == *n) {
                    None => return Err(QueryError::Engine { sqlstate: "42704", message: format!("constraint \"{n}\" does not exist") }),
                    Some(fk) if !fk.deferrable => {
                        return Err(QueryError::Engine { sqlstate: "42809", message: format!("constraint \"{n}\" is not deferrable") })
                    }
                    Some(_) => {}
                }
            }
        }
        if self.txn.is_none() {
            self.notice("25P01", "SET CONSTRAINTS can only be used in transaction blocks".into(), None);
            return out;
        }
        let due = {
            let mut d = self.deferred.lock();
            match names {
                None => {
                    d.all = Some(deferred);
                    d.named.clear();
                }
                Some(names) => names.iter().for_each(|n| {
                    d.named.insert(n.clone(), deferred);
                }),
            }
            let (later, due): (Vec<FkCheck>, Vec<FkCheck>) =
                std::mem::take(&mut d.checks).into_iter().partition(|c| d.deferred(c.foreign_key()));
            d.checks = later;
            due
        };
        self.verify_now(&due)?;
        out
    }

    /// `ALTER TABLE t ADD FOREIGN KEY`: unless NOT VALID, every row there must find its parent first.
    pub(super) fn add_foreign_key(&mut self, table: &str, fk: &ForeignKey, validate: bool) -> Result<Output> {
        self.need_owner(table)?;
        crate::temp::no_foreign_key(table)?;
        if validate {
            self.verify_foreign_key(table, fk)?;
        }
        let mut altered = (*self.db.table(table)?).clone();
        altered.foreign_keys.push(fk.clone());
        self.store_schema(table, &altered)?;
        Ok(Output::Command { tag: "ALTER TABLE".into() })
    }

    /// Every row of table `table` finds its parent under foreign key `fk` (23503 naming the first that does
    /// not), as a new key, or one whose columns were converted, is checked in PostgreSQL.
    pub(super) fn verify_foreign_key(&mut self, table: &str, fk: &ForeignKey) -> Result<()> {
        if fk.match_full && fk.columns.len() > 1 {
            let nulls: Vec<String> = fk.columns.iter().map(|c| format!("{} IS NULL", quote(c))).collect();
            let sql = format!("SELECT 1 FROM {} WHERE ({}) AND NOT ({}) LIMIT 1", quote(table), nulls.join(" OR "), nulls.join(" AND "));
            let q = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&sql)?.parse_query()?;
            if !self.query_rows(&q, &[])?.is_empty() {
                return Err(QueryError::ForeignKey {
                    table: table.to_string(),
                    constraint: fk.name.clone(),
                    message: format!("insert or update on table \"{table}\" violates foreign key constraint \"{}\"", fk.name),
                }
                .with_message("MATCH FULL does not allow mixing of null and nonnull key values.".into()));
            }
        }
        let child: Vec<String> = fk.columns.iter().map(|c| format!("c.{}", quote(c))).collect();
        let present = child.iter().map(|c| format!("{c} IS NOT NULL")).collect::<Vec<_>>().join(" AND ");
        let matched: Vec<String> = fk.parent_columns.iter().zip(&child).map(|(p, c)| format!("p.{} = {c}", quote(p))).collect();
        let sql = format!(
            "SELECT {} FROM {} c WHERE {present} AND NOT EXISTS (SELECT 1 FROM {} p WHERE {}) LIMIT 1",
            child.join(", "),
            quote(table),
            quote(&fk.parent),
            matched.join(" AND ")
        );
        let q = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&sql)?.parse_query()?;
        if let Some(row) = self.query_rows(&q, &[])?.pop() {
            let t = self.db.table(table)?;
            let vals: Vec<String> = fk
                .columns
                .iter()
                .zip(&row)
                .map(|(c, v)| v.to_pg_text(t.column_type(t.column_index(c).unwrap_or(0))).unwrap_or_default())
                .collect();
            return Err(QueryError::ForeignKey {
                table: table.to_string(),
                constraint: fk.name.clone(),
                message: format!("insert or update on table \"{table}\" violates foreign key constraint \"{}\"", fk.name),
            }
            .with_message(format!(
                "Key ({})=({}) is not present in table \"{}\".",
                fk.columns.join(", "),
                vals.join(", "),
                fk.parent
            )));
        }
        Ok(())
    }

    /// The foreign keys of tables outside `names` that reference a table in `names`.
    pub(super) fn outside_references(&self, names: &[String]) -> Result<Vec<(std::sync::Arc<TableSchema>, usize)>> {
        let mut out = Vec::new();
        for n in names {
            for (child, i) in self.db.referencing(n)? {
                if !names.contains(&child.name) {
                    out.push((child, i));
                }
            }
        }
        Ok(out)
    }

    /// Changes every foreign key that references table `parent` (its name, or one of its column names) in
    /// the tables that hold them, as PostgreSQL's references follow a renamed table or column.
    pub(super) fn rename_references(&mut self, parent: &str, table_to: Option<&str>, column: Option<(&str, &str)>) -> Result<()> {
        let children: Vec<String> = self.db.referencing(parent)?.into_iter().map(|(t, _)| t.name.clone()).collect();
        let mut done: Vec<String> = Vec::new();
        for name in children {
            if done.contains(&name) {
                continue;
            }
            done.push(name.clone());
            let mut altered = (*self.db.table(&name)?).clone();
            for fk in altered.foreign_keys.iter_mut().filter(|fk| fk.parent == parent) {
                if let Some((from, to)) = column {
                    fk.parent_columns.iter_mut().filter(|c| *c == from).for_each(|c| *c = to.to_string());
                }
                if let Some(t) = table_to {
                    fk.parent = t.to_string();
                }
            }
            self.store_schema(&name, &altered)?;
        }
        self.rename_sequence_owners(parent, table_to, column)
    }
}
