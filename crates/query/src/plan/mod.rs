//! Plans: what a statement does, with the key-value access path chosen for each table read.
//! A plan prints as a tree; that is EXPLAIN's output.

use std::sync::Arc;

use tabula_store::{Direction, TableOptions};

use crate::expr::{BinOp, Expr};
use crate::schema::{ColumnDef, TableSchema};
use crate::types::SqlType;

/// One end of a key range: a value per key column, then optionally an infinity.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyBound {
    Value(Expr),
    InfMin,
    InfMax,
}

/// How rows are found in the engine: the heart of the planner.
#[derive(Debug, Clone, PartialEq)]
pub enum AccessPath {
    /// Equality on every primary-key column: one lookup.
    PointGet { key: Vec<Expr> },
    /// Several full keys (IN lists, ORs of key equalities): one multi-get.
    BatchGet { keys: Vec<Vec<Expr>> },
    /// Equality on a key prefix plus a range on the next column (or a keyset bound).
    RangeScan { start: Vec<KeyBound>, end: Vec<KeyBound>, direction: Direction },
    /// Equality (or IN lists: one lookup per combination) on the first columns of a secondary index, then
    /// maybe a range on the next: its entries name the rows, which are read by key and checked against the
    /// whole condition (an entry may be older than its row). A bound is (inclusive, value). With `order`,
    /// the one lookup is read in the index's order (forward) or its reverse, and the rows come so. When
    /// `covering`, the rows are made of the entries alone (an index-only scan: `planner::index_path::cover`).
    IndexScan {
        index: String,
        lookups: Vec<Vec<Expr>>,
        lower: Option<(bool, Expr)>,
        upper: Option<(bool, Expr)>,
        order: Option<Direction>,
        covering: bool,
    },
    /// Everything else: every partition is scanned.
    FullScan { direction: Direction },
    /// One of Tabula's own views, generated from the live catalog.
    System(crate::system::SystemView),
}

/// Which versions a read returns.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Versions {
    /// The newest version of each cell: one row per row.
    #[default]
    Latest,
    /// One output row per version: `t(latest_n => .., after_or_equal => .., before => ..)`.
    History { latest_n: Option<Expr>, after_or_equal: Option<Expr>, before: Option<Expr> },
    /// The table as it was at a time: `t(as_of => ms)`.
    AsOf(Expr),
}

/// A read of one table.
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    pub table: Arc<TableSchema>,
    pub access: AccessPath,
    /// Evaluated on each row inside the scan.
    pub filter: Option<Expr>,
    /// Rows to stop after, when nothing above the scan drops or reorders rows.
    pub limit: Option<Expr>,
    pub versions: Versions,
    /// Attribute columns the statement reads (`None`: all).
    pub columns: Option<Vec<usize>>,
    /// The paths the planner weighed, best (the one taken) first; empty when it had no choice.
    pub ranks: Vec<PathRank>,
}

impl Scan {
    /// The condition an index scan reads by (its lookups' equalities and its range), as an expression:
    /// what a scan of the whole table in its place checks besides `filter`, which leaves out what the
    /// index answers exactly. `None` for other paths.
    pub fn index_condition(&self) -> Option<Expr> {
        let AccessPath::IndexScan { index, lookups, lower, upper, .. } = &self.access else { return None };
        let t = &self.table;
        let ix = t.indexes.iter().find(|i| &i.name == index)?;
        let column = |c: usize| Expr::Column { index: c, ty: t.column_type(c), name: t.column_name(c).to_string() };
        let cmp = |op: BinOp, c: usize, v: &Expr| Expr::Binary { op, left: Box::new(column(c)), right: Box::new(v.clone()) };
        let mut branches = lookups.iter().map(|l| Expr::and_all(l.iter().zip(&ix.columns).map(|(v, &c)| cmp(BinOp::Eq, c, v)).collect()));
        let first = branches.next().flatten();
        let mut parts: Vec<Expr> = branches
            .fold(first, |acc, b| match (acc, b) {
                (Some(a), Some(b)) => Some(Expr::Binary { op: BinOp::Or, left: Box::new(a), right: Box::new(b) }),
                _ => None,
            })
            .into_iter()
            .collect();
        if let Some(&next) = ix.columns.get(lookups.first().map_or(0, Vec::len)) {
            if let Some((incl, v)) = lower {
                parts.push(cmp(if *incl { BinOp::GtEq } else { BinOp::Gt }, next, v));
            }
            if let Some((incl, v)) = upper {
                parts.push(cmp(if *incl { BinOp::LtEq } else { BinOp::Lt }, next, v));
            }
        }
        Expr::and_all(parts)
    }
}

/// A way to read a table the planner weighed, and its rank under the rule of `planner::access_path`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathRank {
    /// The index read; `None`: a range of the primary key.
    pub index: Option<String>,
    pub rank: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutputColumn {
    pub name: String,
    pub ty: SqlType,
    /// The table column it comes from, for RowDescription (table OID and attribute number).
    pub source: Option<(String, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SelectPlan {
    /// `None` for a SELECT without FROM: one empty row.
    pub scan: Option<Scan>,
    pub projection: Vec<Expr>,
    pub columns: Vec<OutputColumn>,
    /// Sorting done in memory, for an ORDER BY the scan order does not give.
    pub sort: Vec<(Expr, bool)>,
    pub offset: Option<Expr>,
    pub limit: Option<Expr>,
    /// `FOR UPDATE` / `FOR SHARE`: in a transaction, each row returned is one its commit depends on
    /// ([`tabula_store::Access::lock_row`]).
    pub lock: bool,
    /// The rows can stream: a range or full scan of latest values in the order the scan gives, read a page
    /// at a time as the client takes them ([`crate::cursor::Cursor`]). They do, unless the statement runs in
    /// a transaction that has written (whose own writes only it can read) or locks rows in one.
    pub stream: bool,
}

/// How an auto-commit write reaches the engine. Inside a transaction every write goes through it, read and
/// written there; outside, the planner picks the cheapest way that is still atomic on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteCall {
    /// One engine write, atomic on its own: a plain INSERT (all its rows), or a one-row INSERT ... DO
    /// NOTHING (a write on the condition that the row does not exist).
    Single,
    /// A one-row `INSERT ... ON CONFLICT (key) DO UPDATE` whose assignments take EXCLUDED's values or add a
    /// constant to a bigint: one engine upsert, no read.
    Upsert,
    /// An UPDATE of one row by its full key, assigning constants or adding to bigints, whose WHERE on stored
    /// columns is the engine's column condition: one conditional engine write, no read.
    KeyUpdate,
    /// Read, then write, in a transaction of its own, retried on conflicts
    /// ([`tabula_store::retry::on_conflict`]).
    ReadModifyWrite,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OnConflict {
    Error,
    /// `arbiters`: the constraints named (`ON CONFLICT (k)`), whose rows are read; without, a conflict
    /// with any unique constraint skips the row.
    DoNothing {
        arbiters: Option<Arbiters>,
    },
    /// `version`: `SET _version = v`, the version the updated cells are written at.
    DoUpdate {
        arbiters: Arbiters,
        assignments: Vec<(usize, Expr)>,
        filter: Option<Expr>,
        version: Option<Expr>,
    },
}

/// The unique constraints whose conflicts ON CONFLICT takes over (PostgreSQL's arbiter indexes); a
/// conflict with another is 23505 as without ON CONFLICT.
#[derive(Debug, Clone, PartialEq)]
pub struct Arbiters {
    /// The primary key.
    pub key: bool,
    /// Unique indexes, by position in the table's `indexes`.
    pub indexes: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Returning {
    pub exprs: Vec<Expr>,
    pub columns: Vec<OutputColumn>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InsertPlan {
    pub table: Arc<TableSchema>,
    /// Target column of each value (`columns.len()` of the schema is `_version`).
    pub targets: Vec<usize>,
    pub rows: Vec<Vec<Expr>>,
    pub on_conflict: OnConflict,
    pub returning: Option<Returning>,
    pub call: WriteCall,
    /// The table's CHECK constraints, which every row written must meet.
    pub checks: Vec<BoundCheck>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpdatePlan {
    pub scan: Scan,
    pub assignments: Vec<(usize, Expr)>,
    /// `SET _version = v`: the version every assigned cell is written at.
    pub version: Option<Expr>,
    pub returning: Option<Returning>,
    pub call: WriteCall,
    pub checks: Vec<BoundCheck>,
}

/// A CHECK constraint bound over its table's row (the columns, then `_version`): a row meets it unless
/// the expression is false (NULL passes, as in PostgreSQL).
#[derive(Debug, Clone, PartialEq)]
pub struct BoundCheck {
    /// The constraint's name, or the view's.
    pub name: String,
    pub expr: Expr,
    /// A view's CHECK OPTION (44000 unless true), not a CHECK constraint (23514 when false).
    pub of_view: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeletePlan {
    pub scan: Scan,
    /// `AND _version = v` with a full key: delete that version of every cell instead of the row.
    pub version: Option<Expr>,
    pub returning: Option<Returning>,
}

/// What `ALTER TABLE ... ALTER COLUMN` changes in the catalog.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnChange {
    /// The DEFAULT's SQL text, or none.
    Default(Option<String>),
    /// DROP NOT NULL.
    Nullable,
    /// SET NOT NULL, once no row holds a NULL there.
    NotNull,
    /// `TYPE`, between types whose values are stored alike (text to text, integer to integer): the rows
    /// stay as they are, once checked to fit a shorter length or a narrower integer.
    Type { ty: SqlType, max_chars: Option<u32>, numeric: Option<(u32, u32)> },
    /// `TYPE ... [USING expr]` that rewrites every row: each value becomes `using`'s (an expression of the
    /// row, which names only this column) or its own, cast to the new type and fitted to its length or
    /// precision and scale.
    Convert { ty: SqlType, max_chars: Option<u32>, numeric: Option<(u32, u32)>, using: Option<Expr> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTablePlan {
    pub name: String,
    pub if_not_exists: bool,
    pub columns: Vec<ColumnDef>,
    pub pk: Vec<usize>,
    pub partition_key_len: usize,
    pub options: TableOptions,
    /// The generated partition-key column for which the planner chose a hash prefix (a NOTICE says so).
    pub generated_hash_prefix: Option<String>,
    /// UNIQUE constraints: their names, if given, columns, and whether NULLS NOT DISTINCT. Each is a
    /// unique index.
    pub unique: Vec<(Option<String>, Vec<String>, bool)>,
    pub checks: Vec<crate::schema::CheckDef>,
    pub foreign_keys: Vec<crate::schema::ForeignKey>,
    /// A temporary table's `ON COMMIT DELETE ROWS | DROP`.
    pub on_commit: Option<crate::temp::OnCommit>,
}

/// An UPDATE ... FROM or DELETE ... USING: `query` finds the target rows' keys and new values, then
/// `write` writes each row, with the statement's `params` parameters, the values and the key after them.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedWrite {
    pub query: sqlparser::ast::Query,
    pub write: Plan,
    /// The write's parameters' types, the statement's own first.
    pub write_types: Vec<SqlType>,
    pub keys: usize,
    pub params: usize,
    /// The query's last columns, RETURNING's values from the other tables (the write's last parameters).
    pub returned: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    Select(SelectPlan),
    Insert(InsertPlan),
    /// `INSERT ... SELECT`: the query runs first (on either engine), its rows are then inserted as `insert`
    /// inserts VALUES rows.
    InsertSelect {
        insert: InsertPlan,
        query: Box<sqlparser::ast::Query>,
        /// The DEFAULTs of the columns left out, appended to each row: `insert.targets` ends with them.
        defaults: Vec<Expr>,
    },
    Update(UpdatePlan),
    Delete(DeletePlan),
    CreateTable(CreateTablePlan),
    /// `DROP TABLE`; with CASCADE, the foreign keys of other tables that reference them go too.
    DropTable {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    /// `TRUNCATE`; with CASCADE, the tables whose foreign keys reference them are emptied too; with
    /// RESTART IDENTITY, their generated keys' and owned sequences start again.
    Truncate {
        names: Vec<String>,
        cascade: bool,
        restart_identity: bool,
    },
    /// `ALTER TABLE ... SET (name = value, ...)` (values as written, already checked) or `RESET (name, ...)`.
    SetOptions {
        table: String,
        set: Vec<(String, String)>,
        reset: Vec<String>,
    },
    AddColumn {
        table: String,
        column: ColumnDef,
        if_not_exists: bool,
    },
    DropColumn {
        table: String,
        column: String,
        if_exists: bool,
    },
    /// `ALTER TABLE t ADD PRIMARY KEY (...)` on a table created without one: its rows move under the key.
    AddPrimaryKey {
        table: String,
        columns: Vec<String>,
        partition_key_len: usize,
    },
    RenameTable {
        table: String,
        to: String,
    },
    RenameColumn {
        table: String,
        from: String,
        to: String,
    },
    AlterColumn {
        table: String,
        column: String,
        change: ColumnChange,
    },
    /// `CREATE INDEX [name] ON table (columns)`: a secondary index, global or local.
    CreateIndex {
        table: String,
        /// `None`: PostgreSQL's generated name, `<table>_<columns>_idx`.
        name: Option<String>,
        columns: Vec<String>,
        unique: bool,
        /// `ALTER TABLE ... ADD [CONSTRAINT name] UNIQUE (...)`: the index is the constraint's.
        constraint: bool,
        if_not_exists: bool,
        /// The columns in descending order.
        descending: Vec<bool>,
        /// `NULLS NOT DISTINCT`.
        nulls_not_distinct: bool,
        /// `WITH (local = true)`: a local index.
        local: bool,
        /// `INCLUDE (columns)`.
        include: Vec<String>,
    },
    /// `ALTER TABLE t ADD [CONSTRAINT name] CHECK (...) [NOT VALID]`: the rows there are checked first
    /// unless NOT VALID (`check.name` empty: PostgreSQL's name for it is chosen then).
    AddCheck {
        table: String,
        check: crate::schema::CheckDef,
        validate: bool,
    },
    /// `ALTER TABLE t ADD [CONSTRAINT name] FOREIGN KEY ... [NOT VALID]`: the rows there are checked first
    /// unless NOT VALID.
    AddForeignKey {
        table: String,
        fk: crate::schema::ForeignKey,
        validate: bool,
    },
    /// `VACUUM` or `ANALYZE`.
    Maintenance(crate::maintenance::Maintenance),
    /// CREATE SEQUENCE, ALTER SEQUENCE, `ALTER TABLE ... ADD GENERATED ... AS IDENTITY`.
    Sequence(crate::sequences::parse::SequenceStatement),
    DropSequence {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    /// `CREATE [OR REPLACE] VIEW name [(columns)] AS query`.
    CreateView {
        name: String,
        columns: Vec<String>,
        query: Box<sqlparser::ast::Query>,
        or_replace: bool,
        check: Option<crate::views::CheckOption>,
    },
    DropView {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    /// `SET CONSTRAINTS {ALL | name, ...} {IMMEDIATE | DEFERRED}` (`None`: ALL).
    SetConstraints {
        names: Option<Vec<String>>,
        deferred: bool,
    },
    /// `ALTER TABLE t DROP CONSTRAINT name` of a UNIQUE, CHECK or FOREIGN KEY constraint.
    DropConstraint {
        table: String,
        name: String,
        if_exists: bool,
    },
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    RenameIndex {
        name: String,
        to: String,
    },
    /// `ALTER TABLE t OWNER TO role`.
    AlterOwner {
        table: String,
        owner: sqlparser::ast::Owner,
    },
    /// `ALTER SCHEMA public OWNER TO role` (pg_dump's): the bootstrap superuser owns it and keeps it.
    AlterSchemaOwner {
        schema: String,
        owner: sqlparser::ast::Owner,
    },
    Begin,
    Commit,
    /// `LOCK TABLE ... IN ACCESS SHARE MODE` (pg_dump's): Tabula's reads take no locks and are never
    /// blocked, so the table's existence (and SELECT privilege) is all there is to check.
    LockShared {
        names: Vec<String>,
    },
    /// `DEALLOCATE name | ALL`: the named statements live in the protocol layer, which drops them.
    Deallocate(Option<String>),
    /// `DECLARE name [NO SCROLL] CURSOR [WITH[OUT] HOLD] FOR query`: the query runs when it is declared.
    DeclareCursor {
        name: String,
        hold: bool,
        query: Box<sqlparser::ast::Query>,
    },
    /// `FETCH` (or `MOVE`, which returns no rows) from a declared cursor.
    Fetch {
        name: String,
        direction: FetchDirection,
        move_only: bool,
        /// The cursor's columns when the statement was prepared.
        columns: Vec<OutputColumn>,
    },
    /// `CLOSE name | ALL`.
    CloseCursor(Option<String>),
    /// UPDATE ... FROM or DELETE ... USING ([`crate::joined`]).
    Joined(Box<JoinedWrite>),
    /// An UPDATE or DELETE with subqueries: they run first, at each execution, and the statement is planned
    /// with their results in place ([`crate::subqueries`]).
    WithSubqueries {
        statement: Box<sqlparser::ast::Statement>,
        param_types: Vec<SqlType>,
        /// What the statement returns (RETURNING), typed when it was prepared.
        columns: Vec<OutputColumn>,
        /// The CHECK OPTIONs of the views it writes through, whose subqueries run first too.
        view_checks: Vec<crate::view_writes::ViewCheck>,
    },
    /// `SELECT set_config(name, value, false)`: SET, answering the new value. With `if_exists`, a setting
    /// that does not exist is no error and no row (pg_dump's form over pg_settings).
    SetConfig {
        name: String,
        value: String,
        if_exists: bool,
    },
    /// `PREPARE name [(types)] AS statement`: kept in the session under its name.
    PrepareStatement {
        name: String,
        param_types: Vec<SqlType>,
        statement: Box<sqlparser::ast::Statement>,
    },
    /// `EXECUTE name [(args)]`: the arguments are constants (or the outer statement's parameters).
    ExecutePrepared {
        name: String,
        args: Vec<Expr>,
        /// The prepared statement's columns when this one was prepared.
        columns: Vec<OutputColumn>,
    },
    Rollback,
    Savepoint(String),
    ReleaseSavepoint(String),
    RollbackToSavepoint(String),
    SetVariable {
        name: String,
        value: Option<String>,
    },
    ShowVariable {
        name: String,
    },
    /// `RESET name`, or `RESET ALL` (`None`): settings back to their defaults, nothing else.
    Reset {
        name: Option<String>,
    },
    /// `DISCARD ALL` ends every piece of session state; `DISCARD PLANS | SEQUENCES | TEMP` (the words
    /// kept for the tag) have nothing to discard here: plans are made again whenever the catalog changed,
    /// and there are no sequences or temporary tables.
    Discard {
        what: String,
    },
    /// Roles and privileges: CREATE/ALTER/DROP ROLE, GRANT, REVOKE, SET ROLE.
    Access(crate::roles::AccessStatement),
    Explain {
        plan: Box<Plan>,
        analyze: bool,
    },
    /// `COPY t [(cols)] FROM STDIN`: rows arrive afterwards as COPY data.
    CopyFrom {
        table: Arc<TableSchema>,
        targets: Vec<usize>,
        /// The DEFAULTs of the columns the data leaves out.
        defaults: Vec<(usize, Expr)>,
        format: crate::copy::CopyFormat,
        checks: Vec<BoundCheck>,
    },
    /// `COPY t | (query) TO STDOUT`.
    CopyTo {
        select: SelectPlan,
        format: crate::copy::CopyFormat,
    },
}

/// Where FETCH and MOVE go; cursors only move forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchDirection {
    /// The next `n` rows, or all that are left (`None`).
    Forward(Option<u64>),
    /// The one row at this position from the start (`ABSOLUTE n`, `FIRST`).
    Absolute(i64),
    /// The one row this far ahead (`RELATIVE n`).
    Relative(i64),
    /// `BACKWARD`, `PRIOR`, `LAST`, a negative count: refused (55000).
    Backward,
}

impl Plan {
    /// Whether a statement only reads.
    pub fn is_read_only(&self) -> bool {
        matches!(self, Plan::Select(_) | Plan::ShowVariable { .. } | Plan::Explain { analyze: false, .. })
    }
}

mod display;

impl Plan {
    /// The columns its rows have, as RowDescription describes them (none for a command).
    pub fn output_columns(&self) -> Vec<OutputColumn> {
        let text = |n: &str| vec![OutputColumn { name: n.into(), ty: SqlType::Text, source: None }];
        match self {
            Plan::Select(s) => s.columns.clone(),
            Plan::Insert(InsertPlan { returning: Some(r), .. })
            | Plan::InsertSelect { insert: InsertPlan { returning: Some(r), .. }, .. }
            | Plan::Update(UpdatePlan { returning: Some(r), .. })
            | Plan::Delete(DeletePlan { returning: Some(r), .. }) => r.columns.clone(),
            Plan::Explain { .. } => text("QUERY PLAN"),
            Plan::SetConfig { .. } => text("set_config"),
            Plan::Fetch { columns, .. } | Plan::ExecutePrepared { columns, .. } | Plan::WithSubqueries { columns, .. } => columns.clone(),
            Plan::Joined(j) => j.write.output_columns(),
            Plan::ShowVariable { name } if name == "all" => crate::settings::SHOW_ALL_COLUMNS.iter().flat_map(|n| text(n)).collect(),
            // Named as PostgreSQL names it (`SHOW timezone` answers a column `TimeZone`).
            Plan::ShowVariable { name } => text(crate::settings::display_setting_name(name)),
            _ => vec![],
        }
    }
}
