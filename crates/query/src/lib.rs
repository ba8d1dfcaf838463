//! Tabula's SQL layer: PostgreSQL-dialect SQL planned into key-value access paths on the engine.
//!
//! # The life of a statement
//! 1. [`Session::execute_sql`] (simple protocol) or [`Session::prepare`] (extended) parses the text with
//!    sqlparser's PostgreSQL dialect ([`session::parse`]), after [`depth::check`] has bounded how deeply its
//!    tokens can nest (54001), so that no later recursion can overflow a stack.
//! 2. The [`planner`] binds names against the catalog (the SQL schema kept in each engine table's
//!    metadata), types expressions and parameters, and chooses each table read's access path from the
//!    WHERE clause: PointGet, BatchGet, RangeScan or FullScan, with the rest as a filter inside the scan.
//! 3. A prepared statement keeps its plan; it is planned again only when DDL changed the catalog.
//! 4. [`Session::execute`] binds parameters and runs the plan: inside the session's transaction, directly
//!    on the store when one engine call is atomic on its own (a point get, a single-row insert, an update by
//!    full key of constants and increments), or in a fresh transaction retried on write conflicts.
//! 5. The [`exec`] module turns plans into engine calls — `get_row`, `batch_get`, `get_range` pages — and
//!    engine rows into SQL rows; writes become conditional `put_row`/`update_row`/`delete_row` calls.
//! 6. Results come back as [`Output`]: rows with typed columns, or a command tag. A query under
//!    `DECLARE ... CURSOR` keeps its stream in the session's [`cursors`], which FETCH reads from.

pub mod analytic;
pub mod copy;
pub mod cursor;
pub mod cursors;
pub mod depth;
pub mod error;
pub mod exec;
pub mod expr;
pub mod json;
pub mod plan;
pub mod planner;
pub mod roles;
pub mod schema;
pub mod session;
pub mod subqueries;
pub mod system;
pub mod types;

pub use error::{QueryError, Result};
pub use plan::{OutputColumn, Plan};
pub use session::{Database, Output, Prepared, Session, TxnStatus};
pub use types::{Datum, SqlType};

#[cfg(test)]
mod planner_tests;
