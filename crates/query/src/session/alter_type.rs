//! `ALTER TABLE ... ALTER COLUMN c TYPE t [USING expr]` between types stored differently: the table is
//! rebuilt with each version of the column's cells converted (`Store::rebuild_converting`), its indexes
//! built again; in a transaction, undone with it. The first value that does not convert fails the
//! statement with its own error (22P02, 22001, 22003, ...), and the table is left as it was.

use super::Session;
use crate::error::{QueryError, Result};
use crate::expr::Expr;
use crate::output::Output;
use crate::planner::Catalog;
use crate::schema::ColumnDef;
use crate::types::{Datum, SqlType};
use tabula_store::{Convert, RebuildError};

impl Session {
    pub(super) fn convert_column(
        &mut self,
        table: &str,
        column: &str,
        ty: SqlType,
        max_chars: Option<u32>,
        numeric: Option<(u32, u32)>,
        using: Option<&Expr>,
    ) -> Result<Output> {
        self.not_under_a_view(table, "ALTER COLUMN TYPE")?;
        let schema = self.db.table(table)?;
        let i = schema.column_index(column).ok_or_else(|| QueryError::UndefinedColumn(column.to_string()))?;
        let old = schema.columns[i].ty;
        let new = ColumnDef { ty, max_chars, numeric, ..schema.columns[i].clone() };
        let mut altered = (*schema).clone();
        altered.columns[i] = new.clone();
        let mut def = self.db.store().table(table)?;
        def.user_meta = altered.encode();
        // A key column's values become keys of the new type.
        for k in def.primary_key.iter_mut().filter(|k| k.name == column) {
            k.ty = ty.pk_type().ok_or_else(|| QueryError::Internal(format!("key column \"{column}\" of type {ty}")))?;
        }
        let now_us = self.db.store().clock().now_ms() * 1000;
        let width = schema.columns.len() + 1;
        // The context owns its strings, so the session stays free for the rebuild; a USING that draws from
        // a sequence is refused there (0A000).
        let (user, session_user, database) = (self.current_user().to_string(), self.user.clone(), self.database.clone());
        let result = {
            let ctx = crate::expr::EvalCtx {
                params: &[],
                now_us,
                user: &user,
                session_user: &session_user,
                database: &database,
                zone: self.zone(),
                sequences: None,
            };
            let convert = |v: &tabula_store::value::Value| -> std::result::Result<_, Box<dyn std::error::Error + Send + Sync>> {
                let d = Datum::from_value(v, old)?;
                let d = match using {
                    Some(e) => {
                        let mut row = vec![Datum::Null; width];
                        row[i] = d;
                        e.eval(&row, &ctx)?
                    }
                    None => d,
                };
                Ok(new.fit(d)?.to_value())
            };
            let convert = Convert { column, f: &convert };
            self.ddl().rebuild_converting(def, &convert)
        };
        self.db.invalidate();
        match result {
            Ok(()) => Ok(Output::Command { tag: "ALTER TABLE".into() }),
            Err(RebuildError::Convert(e)) => match e.downcast::<QueryError>() {
                Ok(q) => Err(*q),
                Err(e) => Err(QueryError::Internal(e.to_string())),
            },
            Err(RebuildError::Store(e)) => Err(e.into()),
            // A key column's values that collide, or went NULL, once converted: PostgreSQL's errors.
            Err(RebuildError::Null(c)) => Err(QueryError::Engine {
                sqlstate: "23502",
                message: format!("column \"{c}\" of relation \"{table}\" contains null values"),
            }),
            Err(RebuildError::Duplicate(key)) => {
                let names: Vec<&str> = schema.pk.iter().map(|&c| altered.columns[c].name.as_str()).collect();
                let values: Vec<String> = key
                    .iter()
                    .zip(&schema.pk)
                    .map(|(v, &c)| Datum::from_pk(v).to_pg_text(altered.columns[c].ty).unwrap_or_default())
                    .collect();
                Err(QueryError::Engine { sqlstate: "23505", message: format!("could not create unique index \"{table}_pkey\"") }
                    .with_message(format!("Key ({})=({}) is duplicated.", names.join(", "), values.join(", "))))
            }
        }
    }
}
