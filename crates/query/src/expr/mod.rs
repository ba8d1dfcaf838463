//! Scalar expressions: bound from sqlparser's AST against a scope, typed, and evaluated over a row.

use std::fmt;

use rust_decimal::Decimal;
use sqlparser::ast;

use crate::error::{QueryError, Result};
use crate::schema::{ident_name, TableSchema};
use crate::types::{out_of_range, Datum, SqlType};

mod bind;
mod engine;
mod eval;
mod functions;
mod math;
mod ops;
mod tuple_cmp;
pub mod udf;

pub use bind::{column_type, sql_type, varchar_length, Binder, Scope};
pub use engine::{column_condition, fits_column_condition, increment_of};
pub(crate) use functions::random_uuid;
use functions::*;
pub use ops::truth;
use ops::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Concat,
    /// jsonb `->`, `->>`, `@>`, `<@`.
    JsonGet,
    JsonGetText,
    JsonContains,
    JsonContainedBy,
    /// `&`, `|`, `#` of integers, and the shifts `<<`, `>>`.
    BitAnd,
    BitOr,
    BitXor,
    ShiftLeft,
    ShiftRight,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            Eq => "=",
            NotEq => "<>",
            Lt => "<",
            LtEq => "<=",
            Gt => ">",
            GtEq => ">=",
            And => "AND",
            Or => "OR",
            Concat => "||",
            JsonGet => "->",
            JsonGetText => "->>",
            JsonContains => "@>",
            JsonContainedBy => "<@",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "#",
            ShiftLeft => "<<",
            ShiftRight => ">>",
        }
    }

    /// `&`, `|`, `#`, `<<`, `>>`: of integers only.
    pub fn is_bitwise(self) -> bool {
        matches!(self, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::ShiftLeft | BinOp::ShiftRight)
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Eq | BinOp::NotEq | BinOp::Lt | BinOp::LtEq | BinOp::Gt | BinOp::GtEq)
    }

    /// The comparison that holds with the operands swapped (`a < b` is `b > a`).
    pub fn flip(self) -> BinOp {
        match self {
            BinOp::Lt => BinOp::Gt,
            BinOp::LtEq => BinOp::GtEq,
            BinOp::Gt => BinOp::Lt,
            BinOp::GtEq => BinOp::LtEq,
            o => o,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lower,
    Upper,
    Length,
    Abs,
    Coalesce,
    NullIf,
    Now,
    /// The date of `now()` in the session's zone.
    CurrentDate,
    /// `localtimestamp`: `now()` as a `timestamp`, the local time in the session's zone.
    LocalTimestamp,
    Version,
    CurrentSchema,
    CurrentDatabase,
    CurrentUser,
    SessionUser,
    Concat,
    Substr,
    Round,
    Trunc,
    Sign,
    Floor,
    Ceil,
    Greatest,
    Least,
    Md5,
    GenRandomUuid,
    /// `nextval`, `currval`, `setval`, `lastval` (`crate::sequences`): the first argument is the sequence's
    /// name as text (`'s'::regclass` is bound as `'s'`).
    Sequence(crate::sequences::Call),
    /// Where a scalar subquery of an UPDATE or DELETE found more than one row (`crate::subqueries`): 21000
    /// once evaluated, as PostgreSQL raises it only when a row needs the value. Its argument types it.
    MoreThanOneRow,
    /// A cast to `numeric(p, s)`: its argument, a numeric, rounded to `s` places and checked against `p`
    /// digits (`types::fit_numeric`). Not callable by name.
    NumericFit(u32, u32),
    /// `sqrt`, `exp`, `ln`, `log`, `power` of numerics (`math`): chosen by the arguments' types.
    NumericMath(crate::types::numeric_math::MathFn),
}

/// [`Func::MoreThanOneRow`]'s name.
pub const MORE_THAN_ONE_ROW: &str = "tabula_more_than_one_row";

impl Func {
    fn lookup(name: &str) -> Option<Func> {
        use Func::*;
        Some(match name {
            "lower" => Lower,
            "upper" => Upper,
            "length" | "char_length" | "character_length" => Length,
            "abs" => Abs,
            "coalesce" => Coalesce,
            "nullif" => NullIf,
            "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" => Now,
            "localtimestamp" => LocalTimestamp,
            "current_date" => CurrentDate,
            "version" => Version,
            "current_schema" => CurrentSchema,
            "current_database" | "current_catalog" => CurrentDatabase,
            "current_user" | "user" | "current_role" => CurrentUser,
            "session_user" => SessionUser,
            "concat" => Concat,
            "substr" | "substring" => Substr,
            "round" => Round,
            "trunc" => Trunc,
            "sign" => Sign,
            "floor" => Floor,
            "ceil" | "ceiling" => Ceil,
            "greatest" => Greatest,
            "least" => Least,
            "md5" => Md5,
            "gen_random_uuid" => GenRandomUuid,
            "nextval" => Sequence(crate::sequences::Call::Nextval),
            "currval" => Sequence(crate::sequences::Call::Currval),
            "setval" => Sequence(crate::sequences::Call::Setval),
            "lastval" => Sequence(crate::sequences::Call::Lastval),
            MORE_THAN_ONE_ROW => MoreThanOneRow,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        use Func::*;
        match self {
            Lower => "lower",
            Upper => "upper",
            Length => "length",
            Abs => "abs",
            Coalesce => "coalesce",
            NullIf => "nullif",
            Now => "now",
            CurrentDate => "current_date",
            LocalTimestamp => "localtimestamp",
            Version => "version",
            CurrentSchema => "current_schema",
            CurrentDatabase => "current_database",
            CurrentUser => "current_user",
            SessionUser => "session_user",
            Concat => "concat",
            Substr => "substr",
            Round => "round",
            Trunc => "trunc",
            Sign => "sign",
            Floor => "floor",
            Ceil => "ceil",
            Greatest => "greatest",
            Least => "least",
            Md5 => "md5",
            GenRandomUuid => "gen_random_uuid",
            Sequence(c) => c.name(),
            MoreThanOneRow => MORE_THAN_ONE_ROW,
            NumericFit(..) => "numeric",
            NumericMath(f) => f.name(),
        }
    }
}

/// A bound expression: columns are indices into the row being evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Datum, SqlType),
    Column {
        index: usize,
        ty: SqlType,
        name: String,
    },
    Param {
        index: usize,
        ty: SqlType,
    },
    Binary {
        op: BinOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull {
        expr: Box<Expr>,
        negated: bool,
    },
    IsBool {
        expr: Box<Expr>,
        value: bool,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    Between {
        expr: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
    },
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        negated: bool,
        case_insensitive: bool,
    },
    Cast {
        expr: Box<Expr>,
        ty: SqlType,
    },
    Func {
        func: Func,
        args: Vec<Expr>,
    },
    /// A function of the analytic engine's (`udf`).
    Udf {
        call: Box<udf::Udf>,
        args: Vec<Expr>,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
    },
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::depth::with_stack(|| self.fmt_here(f))
    }
}

impl Expr {
    fn fmt_here(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Literal(d, ty) => match d.to_pg_text(*ty) {
                None => write!(f, "NULL"),
                Some(s) if matches!(d, Datum::Text(_)) => write!(f, "'{}'", s.replace('\'', "''")),
                Some(s) => write!(f, "{s}"),
            },
            Expr::Column { name, .. } => write!(f, "{name}"),
            Expr::Param { index, .. } => write!(f, "${}", index + 1),
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(e) => write!(f, "(NOT {e})"),
            Expr::Neg(e) => write!(f, "(-{e})"),
            Expr::IsNull { expr, negated } => write!(f, "({expr} IS {}NULL)", if *negated { "NOT " } else { "" }),
            Expr::IsBool { expr, value, negated } => {
                write!(f, "({expr} IS {}{})", if *negated { "NOT " } else { "" }, if *value { "TRUE" } else { "FALSE" })
            }
            Expr::InList { expr, list, negated } => {
                write!(f, "({expr} {}IN (", if *negated { "NOT " } else { "" })?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{e}")?;
                }
                write!(f, "))")
            }
            Expr::Between { expr, low, high, negated } => {
                write!(f, "({expr} {}BETWEEN {low} AND {high})", if *negated { "NOT " } else { "" })
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => {
                write!(f, "({expr} {}{} {pattern})", if *negated { "NOT " } else { "" }, if *case_insensitive { "ILIKE" } else { "LIKE" })
            }
            Expr::Cast { expr, ty } => write!(f, "{expr}::{ty}"),
            Expr::Func { func, args } => write_call(f, func.name(), args),
            Expr::Udf { call, args } => write_call(f, call.name(), args),
            Expr::Case { .. } => write!(f, "CASE ... END"),
        }
    }
}

/// `name(a, b, ...)`.
fn write_call(f: &mut fmt::Formatter<'_>, name: &str, args: &[Expr]) -> fmt::Result {
    write!(f, "{name}(")?;
    for (i, e) in args.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{e}")?;
    }
    write!(f, ")")
}

/// What evaluation may read besides the row.
pub struct EvalCtx<'a> {
    pub params: &'a [Datum],
    /// Statement start, µs since the epoch.
    pub now_us: i64,
    /// `current_user`: the role whose privileges the statement has (SET ROLE).
    pub user: &'a str,
    /// `session_user`: who logged in.
    pub session_user: &'a str,
    pub database: &'a str,
    /// The session's `TimeZone`: how a `timestamptz` converts to text, `timestamp` and `date` and back.
    pub zone: crate::types::Zone,
    /// Where the sequence functions draw, and the session's memory of what they drew; `None` where a
    /// statement cannot call them (0A000).
    pub sequences: Option<(&'a dyn crate::sequences::SequenceSource, &'a parking_lot::Mutex<crate::sequences::Sequences>)>,
}

pub const SERVER_VERSION: &str = "15.0";

pub fn version_string() -> String {
    format!("PostgreSQL {SERVER_VERSION} (Tabula {}) on x86_64-pc-linux-gnu, wide-column engine on RocksDB", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests;
