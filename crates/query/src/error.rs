//! SQL errors, each with its PostgreSQL SQLSTATE.

use tabula_store::StoreError;
use thiserror::Error;

pub type Result<T, E = QueryError> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum QueryError {
    #[error("{0}")]
    Syntax(String),
    /// A statement that does not parse, as PostgreSQL words it (`syntax error at or near "x"`), with what
    /// the parser expected and where it stopped: a 1-based character position in the query text, which
    /// psql and other tools point at.
    #[error("{message}")]
    SyntaxAt { message: String, expected: Option<String>, position: usize },
    #[error("relation \"{0}\" does not exist")]
    UndefinedTable(String),
    /// A table named where only the statement's FROM tables may be (`FOR UPDATE OF x`).
    #[error("{0}")]
    UndefinedTableReference(String),
    #[error("column \"{0}\" does not exist")]
    UndefinedColumn(String),
    /// A qualified column no table of that name has: PostgreSQL writes the reference as it was given.
    #[error("column {qualifier}.{column} does not exist")]
    UndefinedColumnOf { qualifier: String, column: String },
    #[error("column reference \"{0}\" is ambiguous")]
    AmbiguousColumn(String),
    #[error("function {0} does not exist")]
    UndefinedFunction(String),
    /// The operator and its operand types, e.g. `date * integer`.
    #[error("operator does not exist: {0}")]
    UndefinedOperator(String),
    #[error("date out of range")]
    DateOutOfRange,
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    #[error("{0}")]
    InvalidTableDefinition(String),
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    InvalidParameterValue(String),
    #[error("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint")]
    NotNull { table: String, column: String },
    #[error("duplicate key value violates unique constraint \"{0}_pkey\"")]
    UniqueViolation(String),
    /// Of a unique secondary index: its columns and the values that collided, printed in DETAIL as their
    /// column types print them once `types` is known (`Session` fills it in from the catalog).
    #[error("duplicate key value violates unique constraint \"{index}\"")]
    UniqueIndex {
        table: String,
        index: String,
        columns: Vec<String>,
        values: Vec<Option<tabula_store::Value>>,
        types: Option<Vec<crate::types::SqlType>>,
    },
    #[error("new row for relation \"{table}\" violates check constraint \"{constraint}\"")]
    CheckViolation { table: String, constraint: String },
    /// 23503, on the table named (the referencing one, or the referenced one for a reference left behind).
    #[error("{message}")]
    ForeignKey { table: String, constraint: String, message: String },
    #[error("{0}")]
    StringTooLong(String),
    #[error("{0}")]
    InvalidText(String),
    /// A date or time's text that is none (22007, invalid_datetime_format).
    #[error("{0}")]
    InvalidDatetime(String),
    #[error("{0}")]
    DatatypeMismatch(String),
    #[error("{0}")]
    NumericOutOfRange(String),
    #[error("division by zero")]
    DivisionByZero,
    #[error("{0}")]
    CardinalityViolation(String),
    #[error("{message}")]
    VersionOutOfWindow { message: String, detail: String },
    #[error("{0}")]
    NotSupported(String),
    /// What PostgreSQL itself refuses as not supported (`unit "hour" not supported for type date`), as
    /// opposed to what Tabula has not built: the analytic engine's answer stands over the key-value
    /// planner's refusal.
    #[error("{0}")]
    FeatureNotSupported(String),
    /// The key-value planner leaves this statement to the analytic engine (never reaches a client).
    #[error("{0} needs the analytic engine")]
    Analytic(String),
    /// An error the analytic engine reported, with the SQLSTATE it maps to.
    #[error("{message}")]
    Engine { sqlstate: &'static str, message: String },
    #[error("could not serialize access due to concurrent update")]
    SerializationFailure,
    #[error("canceling statement due to user request")]
    Cancelled,
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    /// A statement that must run outside a transaction block, run inside one (25001).
    #[error("{0} cannot run inside a transaction block")]
    ActiveTransaction(&'static str),
    #[error("unrecognized configuration parameter \"{0}\"")]
    UndefinedParameter(String),
    /// `SET` of a setting fixed for the server's life, or for good (`server_version`).
    #[error("{0}")]
    CantChangeParameter(String),
    #[error("{0}")]
    Store(StoreError),
    #[error("{0}")]
    ProgramLimitExceeded(String),
    /// A statement nested deeper than the server recurses (PostgreSQL's `max_stack_depth`).
    #[error("{0}")]
    TooComplex(String),
    #[error("savepoint \"{0}\" does not exist")]
    UndefinedSavepoint(String),
    #[error("cursor \"{0}\" does not exist")]
    UndefinedCursor(String),
    #[error("prepared statement \"{0}\" does not exist")]
    UndefinedPreparedStatement(String),
    #[error("prepared statement \"{0}\" already exists")]
    DuplicatePreparedStatement(String),
    #[error("cursor \"{0}\" already exists")]
    DuplicateCursor(String),
    /// A backward move of a cursor, which only reads forward (PostgreSQL's NO SCROLL cursors).
    #[error("cursor can only scan forward")]
    ForwardOnly,
    #[error("{0} can only be used in transaction blocks")]
    NoTransaction(&'static str),
    /// `permission denied for table t`, `must be owner of table t`, ...
    #[error("{0}")]
    InsufficientPrivilege(String),
    #[error("role \"{0}\" does not exist")]
    UndefinedRole(String),
    #[error("role \"{0}\" already exists")]
    DuplicateRole(String),
    /// A role that still owns tables or holds privileges cannot be dropped.
    #[error("{0}")]
    DependentObjects(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{inner}")]
    WithContext { inner: Box<QueryError>, context: String },
    /// An error with PostgreSQL's HINT for it (`Use DROP SEQUENCE to remove a sequence.`).
    #[error("{inner}")]
    WithHint { inner: Box<QueryError>, hint: String },
    /// An error about a name, with where the statement's text writes it (sqlparser's 1-based line and
    /// column, and the name as written); its character position once the text is known
    /// ([`QueryError::located`]), for the caret psql draws under it.
    #[error("{inner}")]
    At { inner: Box<QueryError>, line: u64, column: u64, written: String, position: Option<usize> },
}

impl QueryError {
    pub fn sqlstate(&self) -> &'static str {
        use QueryError::*;
        match self {
            Syntax(_) | SyntaxAt { .. } => "42601",
            UndefinedTable(_) | UndefinedTableReference(_) => "42P01",
            UndefinedColumn(_) | UndefinedColumnOf { .. } => "42703",
            AmbiguousColumn(_) => "42702",
            UndefinedFunction(_) | UndefinedOperator(_) => "42883",
            DateOutOfRange => "22008",
            DuplicateTable(_) => "42P07",
            InvalidTableDefinition(_) => "42P16",
            InvalidName(_) => "42602",
            InvalidParameterValue(_) => "22023",
            NotNull { .. } => "23502",
            UniqueViolation(_) | UniqueIndex { .. } => "23505",
            CheckViolation { .. } => "23514",
            ForeignKey { .. } => "23503",
            StringTooLong(_) => "22001",
            InvalidText(_) => "22P02",
            InvalidDatetime(_) => "22007",
            DatatypeMismatch(_) => "42804",
            NumericOutOfRange(_) => "22003",
            DivisionByZero => "22012",
            CardinalityViolation(_) => "21000",
            VersionOutOfWindow { .. } => "22008",
            NotSupported(_) | FeatureNotSupported(_) | Analytic(_) => "0A000",
            Engine { sqlstate, .. } => sqlstate,
            SerializationFailure => "40001",
            Cancelled | StatementTimeout => "57014",
            InFailedTransaction => "25P02",
            ActiveTransaction(_) => "25001",
            UndefinedParameter(_) => "42704",
            CantChangeParameter(_) => "55P02",
            Store(e) => e.sqlstate(),
            WithContext { inner, .. } | WithHint { inner, .. } | At { inner, .. } => inner.sqlstate(),
            ProgramLimitExceeded(_) => "54000",
            TooComplex(_) => "54001",
            UndefinedSavepoint(_) => "3B001",
            UndefinedCursor(_) => "34000",
            UndefinedPreparedStatement(_) => "26000",
            DuplicatePreparedStatement(_) => "42P05",
            DuplicateCursor(_) => "42P03",
            ForwardOnly => "55000",
            NoTransaction(_) => "25P01",
            InsufficientPrivilege(_) => "42501",
            UndefinedRole(_) => "42704",
            DuplicateRole(_) => "42710",
            DependentObjects(_) => "2BP01",
            Internal(_) => "XX000",
        }
    }

    pub fn detail(&self) -> Option<String> {
        match self {
            QueryError::VersionOutOfWindow { detail, .. } => Some(detail.clone()),
            QueryError::UniqueIndex { columns, values, types, .. } => {
                let text = match types {
                    Some(types) => typed_key_values(values, types),
                    None => key_values(values),
                };
                Some(format!("Key ({})=({text}) already exists.", columns.join(", ")))
            }
            QueryError::SyntaxAt { expected, .. } => expected.clone(),
            QueryError::WithContext { inner, context } => Some(match inner.detail() {
                Some(d) => format!("{d} ({context})"),
                None => context.clone(),
            }),
            QueryError::WithHint { inner, .. } | QueryError::At { inner, .. } => inner.detail(),
            _ => None,
        }
    }

    /// What PostgreSQL's HINT field would suggest.
    pub fn hint(&self) -> Option<String> {
        match self {
            QueryError::WithHint { hint, .. } => return Some(hint.clone()),
            QueryError::WithContext { inner, .. } | QueryError::At { inner, .. } => return inner.hint(),
            _ => {}
        }
        match self.root() {
            QueryError::Store(StoreError::TransactionTooLarge { .. }) => {
                Some("Split the work over several transactions, or raise the server's --max-transaction-mb.".into())
            }
            // PostgreSQL's hints for a call or an operator that no function matches.
            QueryError::UndefinedFunction(_) => {
                Some("No function matches the given name and argument types. You might need to add explicit type casts.".into())
            }
            QueryError::UndefinedOperator(_) => {
                Some("No operator matches the given name and argument types. You might need to add explicit type casts.".into())
            }
            _ => None,
        }
    }

    /// The table, column and constraint an integrity error is about, as PostgreSQL names them in its error
    /// fields (drivers read them: psycopg's `diag.constraint_name`, what Django and Rails report).
    pub fn object(&self) -> (Option<String>, Option<String>, Option<String>) {
        match self {
            QueryError::UniqueViolation(t) => (Some(t.clone()), None, Some(format!("{t}_pkey"))),
            QueryError::UniqueIndex { table, index, .. } => (Some(table.clone()), None, Some(index.clone())),
            QueryError::NotNull { table, column } => (Some(table.clone()), Some(column.clone()), None),
            QueryError::CheckViolation { table, constraint } | QueryError::ForeignKey { table, constraint, .. } => {
                (Some(table.clone()), None, Some(constraint.clone()))
            }
            QueryError::WithContext { inner, .. } | QueryError::WithHint { inner, .. } | QueryError::At { inner, .. } => inner.object(),
            _ => (None, None, None),
        }
    }

    /// Where in the query text the error is (a 1-based character position), when that is known.
    pub fn position(&self) -> Option<usize> {
        match self {
            QueryError::SyntaxAt { position, .. } => Some(*position),
            QueryError::At { position: Some(p), .. } => Some(*p),
            QueryError::WithContext { inner, .. } | QueryError::WithHint { inner, .. } | QueryError::At { inner, .. } => inner.position(),
            _ => None,
        }
    }

    /// The error, with where `ident` is written in the statement's text (see [`QueryError::At`]).
    pub fn at(self, ident: &sqlparser::ast::Ident) -> QueryError {
        let start = ident.span.start;
        self.at_location(start.line, start.column, &ident.value)
    }

    /// The error, with where the name `written` stands in the statement's text (line and column, 1-based;
    /// line 0: not known).
    pub fn at_location(self, line: u64, column: u64, written: &str) -> QueryError {
        if line == 0 || matches!(self, QueryError::At { .. }) {
            return self;
        }
        QueryError::At { inner: Box::new(self), line, column, written: written.to_string(), position: None }
    }

    /// The error with its name's character position in `sql`, the text the statement came from: where
    /// the name stands there as written (a statement planned from another text, a view's query say, gets
    /// none rather than a wrong one).
    pub fn located(self, sql: &str) -> QueryError {
        match self {
            QueryError::At { inner, line, column, written, position: None } => {
                let before: usize = sql.split('\n').take(line.saturating_sub(1) as usize).map(|l| l.chars().count() + 1).sum();
                let at = before + column as usize;
                // A quoted name's position is its opening quote's.
                let mut rest = sql.chars().skip(at.saturating_sub(1)).peekable();
                rest.next_if_eq(&'"');
                let here: String = rest.take(written.chars().count()).collect();
                let position = (at > 0 && here.to_lowercase() == written.to_lowercase()).then_some(at);
                QueryError::At { inner, line, column, written, position }
            }
            QueryError::WithContext { inner, context } => QueryError::WithContext { inner: Box::new(inner.located(sql)), context },
            QueryError::WithHint { inner, hint } => QueryError::WithHint { inner: Box::new(inner.located(sql)), hint },
            other => other,
        }
    }

    /// sqlparser's error for `sql`, as PostgreSQL reports one: `syntax error at or near "SELEC"` (or `at end
    /// of input`) at a position, what was expected in DETAIL. A message without a location stays as it is.
    pub fn syntax(sql: &str, e: sqlparser::parser::ParserError) -> QueryError {
        let m = match QueryError::from(e) {
            QueryError::Syntax(m) => m,
            other => return other,
        };
        let located = m.rsplit_once(" at Line: ").and_then(|(what, at)| {
            let (line, column) = at.split_once(", Column: ")?;
            Some((what, line.trim().parse::<usize>().ok()?, column.trim().parse::<usize>().ok()?))
        });
        let end = sql.chars().count() + 1;
        let Some((what, line, column)) = located else {
            // The end of the text has no location.
            return match m.strip_suffix(", found: EOF") {
                Some(expected) => {
                    QueryError::SyntaxAt { message: "syntax error at end of input".into(), expected: Some(expected.into()), position: end }
                }
                None => QueryError::Syntax(m),
            };
        };
        let before: usize = sql.split('\n').take(line.saturating_sub(1)).map(|l| l.chars().count() + 1).sum();
        let at = before + column;
        let (message, expected, position) = match what.rsplit_once(", found: ") {
            Some((expected, "EOF")) => ("syntax error at end of input".to_string(), Some(expected.to_string()), end),
            Some((expected, found)) => (format!("syntax error at or near \"{}\"", found.trim()), Some(expected.to_string()), at),
            // The tokenizer's own words: `Unterminated string literal`.
            None => (what.to_string(), None, at),
        };
        QueryError::SyntaxAt { message, expected, position }
    }

    /// The same error (and SQLSTATE) with where it happened in its DETAIL.
    pub fn with_message(self, context: String) -> QueryError {
        QueryError::WithContext { inner: Box::new(self), context }
    }

    pub fn with_hint(self, hint: &str) -> QueryError {
        QueryError::WithHint { inner: Box::new(self), hint: hint.into() }
    }

    /// The error under any added context.
    pub fn root(&self) -> &QueryError {
        match self {
            QueryError::WithContext { inner, .. } | QueryError::WithHint { inner, .. } | QueryError::At { inner, .. } => inner.root(),
            other => other,
        }
    }

    /// The key-value planner does not know something DataFusion may: the statement is tried there.
    pub fn is_analytic_retry(&self) -> bool {
        matches!(
            self.root(),
            QueryError::UndefinedFunction(_)
                | QueryError::UndefinedOperator(_)
                | QueryError::UndefinedTable(_)
                | QueryError::NotSupported(_)
        )
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, QueryError::SerializationFailure)
    }
}

impl From<StoreError> for QueryError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownTable(t) => QueryError::UndefinedTable(t),
            StoreError::TableExists(t) => QueryError::DuplicateTable(t),
            StoreError::Conflict => QueryError::SerializationFailure,
            StoreError::VersionOutOfWindow { column, version, start, end } => QueryError::VersionOutOfWindow {
                message: format!("version {version} of column \"{column}\" is outside the table's version window"),
                detail: format!("Allowed versions are [{start}, {end}) ms: within max_version_offset of the server's clock and not expired under the TTL."),
            },
            StoreError::InvalidName { name, reason } => QueryError::InvalidName(format!("invalid name \"{name}\": {reason}")),
            // PostgreSQL's DETAIL: Key (a, b)=(x, 1) already exists.
            StoreError::UniqueViolation { table, index, columns, values } => QueryError::UniqueIndex { table, index, columns, values, types: None },
            other => QueryError::Store(other),
        }
    }
}

/// Values of an index's columns as PostgreSQL's key DETAILs print them, by their columns' types.
pub(crate) fn typed_key_values(values: &[Option<tabula_store::Value>], types: &[crate::types::SqlType]) -> String {
    let text = |(v, ty): (&Option<tabula_store::Value>, &crate::types::SqlType)| {
        v.as_ref()
            .and_then(|v| crate::types::Datum::from_value(v, *ty).ok())
            .and_then(|d| d.to_pg_text(*ty))
            .unwrap_or_else(|| "null".into())
    };
    values.iter().zip(types).map(text).collect::<Vec<_>>().join(", ")
}

/// Values of an index's columns as the engine stores them (a date as its day number), where the columns'
/// types are not known.
pub(crate) fn key_values(values: &[Option<tabula_store::Value>]) -> String {
    use tabula_store::Value;
    let text = |v: &Option<Value>| match v {
        None => "null".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Integer(i)) => i.to_string(),
        Some(Value::Double(d)) => d.to_string(),
        Some(Value::Boolean(b)) => if *b { "t" } else { "f" }.to_string(),
        Some(Value::Binary(b)) => format!("\\x{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    };
    values.iter().map(text).collect::<Vec<_>>().join(", ")
}

impl From<sqlparser::parser::ParserError> for QueryError {
    fn from(e: sqlparser::parser::ParserError) -> Self {
        match e {
            sqlparser::parser::ParserError::ParserError(m) | sqlparser::parser::ParserError::TokenizerError(m) => QueryError::Syntax(m),
            sqlparser::parser::ParserError::RecursionLimitExceeded => {
                QueryError::TooComplex("statement too complex: it nests more than 50 levels of parentheses or subqueries".into())
            }
        }
    }
}
