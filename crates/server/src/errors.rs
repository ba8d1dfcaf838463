//! Errors as PostgreSQL ErrorResponses: the SQLSTATE each error knows, its message and DETAIL.

use pgwire::error::{ErrorInfo, PgWireError};
use tabula_query::QueryError;

pub fn error_info(e: &QueryError) -> ErrorInfo {
    // Errors of the machine rather than of the statement (disk full, I/O, corruption, internal) are for the
    // operator too: PostgreSQL logs every error, Tabula these.
    if matches!(&e.sqlstate()[..2], "53" | "58" | "XX") {
        tracing::error!(sqlstate = e.sqlstate(), "{e}");
    }
    let mut info = ErrorInfo::new("ERROR".to_string(), e.sqlstate().to_string(), e.to_string());
    info.detail = e.detail();
    info.hint = e.hint();
    info.position = e.position().map(|p| p.to_string());
    let (table, column, constraint) = e.object();
    // Tabula's tables are all in `public`.
    info.schema = table.as_ref().map(|_| "public".to_string());
    (info.table, info.column, info.constraint) = (table, column, constraint);
    info
}

pub fn to_pgwire(e: QueryError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(&e)))
}
