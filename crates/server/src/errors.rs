//! Errors as PostgreSQL ErrorResponses: the SQLSTATE each error knows, its message and DETAIL.

use pgwire::error::{ErrorInfo, PgWireError};
use tabula_query::QueryError;

pub fn error_info(e: &QueryError) -> ErrorInfo {
    // Errors of the machine rather than of the statement (disk full, I/O, corruption, internal) are for the
    // operator too: PostgreSQL logs every error, Tabula these.
    if matches!(&e.sqlstate()[..2], "53" | "58" | "XX") {
        tracing::error!(sqlstate = e.sqlstate(), "{e}");
    }
    // A temporary table's private name is shown as its session wrote it (`tabula_query::temp`).
    let visible = |s: String| tabula_query::temp::visible(&s);
    let mut info = ErrorInfo::new("ERROR".to_string(), e.sqlstate().to_string(), visible(e.to_string()));
    info.detail = e.detail().map(visible);
    info.hint = e.hint().map(visible);
    info.position = e.position().map(|p| p.to_string());
    let (table, column, constraint) = e.object();
    // Tabula's tables are in `public`, its temporary tables in the session's `pg_temp`.
    info.schema = table.as_ref().map(|t| if tabula_query::temp::is_temporary(t) { "pg_temp" } else { "public" }.to_string());
    (info.table, info.column, info.constraint) = (table.map(visible), column, constraint.map(visible));
    info
}

pub fn to_pgwire(e: QueryError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(&e)))
}
