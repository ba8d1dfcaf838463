//! Tabula's SQL layer: PostgreSQL-dialect SQL planned into key-value access paths on the engine.
//!
//! # The life of a statement
//! 1. [`Session::execute_sql`] (simple protocol) or [`Session::prepare`] (extended) parses the text once
//!    with sqlparser's PostgreSQL dialect ([`parse::parse`]), after [`depth::check`] has bounded how deeply
//!    its tokens can nest (54001), so that no later recursion can overflow a stack. The workspace's
//!    sqlparser is DataFusion's own, so the same statement serves both routes below.
//! 2. The [`planner`] binds names against the catalog (the SQL schema kept in each engine table's
//!    metadata, cached by the [`database`]), types expressions and parameters, and chooses each table
//!    read's access path from the WHERE clause: PointGet, BatchGet, RangeScan or FullScan, with the rest as
//!    a filter inside the scan. It also decides how the plan runs (`planner::routes`): whether a read's
//!    rows stream ([`plan::SelectPlan::stream`]), and how an auto-commit write reaches the engine
//!    ([`plan::WriteCall`]: one write, one upsert, one conditional update, or read-modify-write).
//! 3. A query the planner defers or cannot plan takes the analytic route ([`session::Route`]): the session's
//!    `prepare_analytic` hands the parsed statement to [`analytic::Analytics::plan`], which refuses what
//!    DataFusion would answer otherwise than PostgreSQL (`INTERSECT ALL`), rewrites PostgreSQL forms
//!    DataFusion lacks (`analytic::rewrite`), plans it over the same store, its table reads again key-value
//!    scans, and rounds floats where PostgreSQL rounds them (`analytic::numbers`). EXPLAIN prints every one
//!    of these decisions.
//!    An UPDATE ... FROM or DELETE ... USING is split in two ([`joined`]): a query of the join, on
//!    whichever route takes it, and a keyed write planned once and run for each row it finds.
//! 4. A prepared statement keeps its route and plan; it is planned again only when DDL changed the catalog.
//! 5. [`Session::execute`] binds parameters and runs the plan: transaction control in the session itself,
//!    each other kind of statement in a module of its own under [`session`] (DML, DDL, COPY, settings,
//!    prepared statements and cursors, EXPLAIN, the analytic route). What reads see is chosen once
//!    (`Session::read_from`: the store, the transaction's snapshot, or the transaction). DML runs inside the
//!    session's transaction, or, in auto-commit, as the plan's [`plan::WriteCall`] says
//!    ([`exec::upsert`], [`exec::key_update`], one atomic engine call, or a fresh transaction retried on
//!    write conflicts).
//! 6. The [`exec`] module turns plans into engine calls — `get_row`, `batch_get`, and range pages through
//!    the one scan engine ([`exec::Pages`], and [`exec::FanOut`] over a split table's partitions) — and
//!    engine rows into SQL rows; writes become conditional `put_row`/`update_row`/`delete_row` calls.
//! 7. Results come back as [`Output`]: rows with typed columns, a stream of them read as the client takes
//!    them ([`cursor::Cursor`] over the same scan engine, in [`output::RowStream`]), or a command tag. A
//!    query under `DECLARE ... CURSOR` keeps its stream in the session's [`cursors`], which FETCH reads from.
//!
//! Modules below the session never import from it: the shared state is [`database::Database`], the
//! settings are [`settings`], the results [`output`]; the analytic engine reads the database through
//! [`analytic::Source`]. Every walk over a syntax tree (the rewrites, the name and subquery checks) goes
//! through [`walk`], whose one visitor type keeps sqlparser's generic traversal compiled once.

pub mod access;
pub mod activity;
pub mod advisory;
pub mod analytic;
pub mod copy;
pub mod copy_binary;
pub mod cursor;
pub mod cursors;
pub mod database;
pub mod depth;
pub mod error;
pub mod exec;
pub mod expr;
pub mod foreign_key;
pub mod joined;
pub mod json;
pub mod maintenance;
pub mod memory;
pub mod names;
pub mod options;
pub mod output;
pub mod parse;
pub mod plan;
pub mod planner;
pub mod roles;
pub mod schema;
pub mod sequences;
pub mod session;
pub mod settings;
pub mod subqueries;
pub mod system;
pub mod temp;
pub mod types;
pub mod view_writes;
pub mod views;
pub mod walk;

pub use database::Database;
pub use error::{QueryError, Result};
pub use output::{Notice, Output, TxnStatus};
pub use plan::{OutputColumn, Plan};
pub use session::{Prepared, Session};
pub use types::{Datum, SqlType};

#[cfg(test)]
mod planner_tests;
