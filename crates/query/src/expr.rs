//! Scalar expressions: bound from sqlparser's AST against a scope, typed, and evaluated over a row.

use std::fmt;

use rust_decimal::Decimal;
use sqlparser::ast;

use crate::error::{QueryError, Result};
use crate::schema::{ident_name, TableSchema};
use crate::types::{out_of_range, Datum, SqlType};

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
        }
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
    /// The date of `now()` (UTC, the only time zone sessions have).
    CurrentDate,
    Version,
    CurrentSchema,
    CurrentDatabase,
    CurrentUser,
    SessionUser,
    Concat,
    Substr,
    Round,
    Floor,
    Ceil,
    Greatest,
    Least,
    Md5,
    GenRandomUuid,
}

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
            "now" | "current_timestamp" | "localtimestamp" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" => Now,
            "current_date" => CurrentDate,
            "version" => Version,
            "current_schema" => CurrentSchema,
            "current_database" | "current_catalog" => CurrentDatabase,
            "current_user" | "user" | "current_role" => CurrentUser,
            "session_user" => SessionUser,
            "concat" => Concat,
            "substr" | "substring" => Substr,
            "round" => Round,
            "floor" => Floor,
            "ceil" | "ceiling" => Ceil,
            "greatest" => Greatest,
            "least" => Least,
            "md5" => Md5,
            "gen_random_uuid" => GenRandomUuid,
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
            Version => "version",
            CurrentSchema => "current_schema",
            CurrentDatabase => "current_database",
            CurrentUser => "current_user",
            SessionUser => "session_user",
            Concat => "concat",
            Substr => "substr",
            Round => "round",
            Floor => "floor",
            Ceil => "ceil",
            Greatest => "greatest",
            Least => "least",
            Md5 => "md5",
            GenRandomUuid => "gen_random_uuid",
        }
    }
}

/// A bound expression: columns are indices into the row being evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Datum, SqlType),
    Column { index: usize, ty: SqlType, name: String },
    Param { index: usize, ty: SqlType },
    Binary { op: BinOp, left: Box<Expr>, right: Box<Expr> },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    IsNull { expr: Box<Expr>, negated: bool },
    IsBool { expr: Box<Expr>, value: bool, negated: bool },
    InList { expr: Box<Expr>, list: Vec<Expr>, negated: bool },
    Between { expr: Box<Expr>, low: Box<Expr>, high: Box<Expr>, negated: bool },
    Like { expr: Box<Expr>, pattern: Box<Expr>, negated: bool, case_insensitive: bool },
    Cast { expr: Box<Expr>, ty: SqlType },
    Func { func: Func, args: Vec<Expr> },
    Case { operand: Option<Box<Expr>>, whens: Vec<(Expr, Expr)>, otherwise: Option<Box<Expr>> },
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
            Expr::Func { func, args } => {
                write!(f, "{}(", func.name())?;
                for (i, e) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{e}")?;
                }
                write!(f, ")")
            }
            Expr::Case { .. } => write!(f, "CASE ... END"),
        }
    }
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
}

pub const SERVER_VERSION: &str = "15.0";

pub fn version_string() -> String {
    format!("PostgreSQL {SERVER_VERSION} (Tabula {}) on x86_64-pc-linux-gnu, wide-column engine on RocksDB", env!("CARGO_PKG_VERSION"))
}

impl Expr {
    pub fn literal(d: Datum) -> Expr {
        let ty = d.natural_type();
        Expr::Literal(d, ty)
    }

    pub fn ty(&self) -> SqlType {
        crate::depth::with_stack(|| self.ty_here())
    }

    fn ty_here(&self) -> SqlType {
        use SqlType::*;
        match self {
            Expr::Literal(_, t) | Expr::Column { ty: t, .. } | Expr::Param { ty: t, .. } | Expr::Cast { ty: t, .. } => *t,
            Expr::Binary { op, left, right } => {
                if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) {
                    Bool
                } else if matches!(op, BinOp::Concat | BinOp::JsonGetText) {
                    Text
                } else if *op == BinOp::JsonGet {
                    Jsonb
                } else if matches!(op, BinOp::JsonContains | BinOp::JsonContainedBy) {
                    Bool
                } else if *op == BinOp::Sub && left.ty() == Date && right.ty() == Date {
                    Int4
                } else {
                    numeric_result(left.ty(), right.ty())
                }
            }
            Expr::Not(_) | Expr::IsNull { .. } | Expr::IsBool { .. } | Expr::InList { .. } | Expr::Between { .. } | Expr::Like { .. } => {
                Bool
            }
            Expr::Neg(e) => e.ty(),
            Expr::Func { func, args } => match func {
                Func::Lower
                | Func::Upper
                | Func::Concat
                | Func::Substr
                | Func::Version
                | Func::CurrentSchema
                | Func::CurrentDatabase
                | Func::CurrentUser
                | Func::SessionUser
                | Func::Md5 => Text,
                Func::Length => Int4,
                Func::Now => Timestamptz,
                Func::CurrentDate => Date,
                Func::GenRandomUuid => Uuid,
                Func::Abs | Func::Floor | Func::Ceil | Func::Round => args.first().map(|a| a.ty()).unwrap_or(Float8),
                Func::Coalesce | Func::NullIf | Func::Greatest | Func::Least => {
                    args.iter().map(|a| a.ty()).find(|t| *t != Unknown).unwrap_or(Text)
                }
            },
            Expr::Case { whens, otherwise, .. } => {
                whens.iter().map(|(_, e)| e.ty()).chain(otherwise.iter().map(|e| e.ty())).find(|t| *t != Unknown).unwrap_or(Text)
            }
        }
    }

    /// True when the expression reads no column (its value is known before the row).
    pub fn is_constant(&self) -> bool {
        crate::depth::with_stack(|| self.is_constant_here())
    }

    fn is_constant_here(&self) -> bool {
        match self {
            Expr::Column { .. } => false,
            Expr::Literal(..) | Expr::Param { .. } => true,
            Expr::Binary { left, right, .. } => left.is_constant() && right.is_constant(),
            Expr::Not(e) | Expr::Neg(e) | Expr::Cast { expr: e, .. } => e.is_constant(),
            // Volatile functions take a new value each time: never folded once for all rows.
            Expr::Func { func, args } => {
                !matches!(func, Func::Now | Func::CurrentDate | Func::GenRandomUuid) && args.iter().all(|a| a.is_constant())
            }
            _ => false,
        }
    }

    pub fn eval(&self, row: &[Datum], ctx: &EvalCtx) -> Result<Datum> {
        crate::depth::with_stack(|| self.eval_here(row, ctx))
    }

    fn eval_here(&self, row: &[Datum], ctx: &EvalCtx) -> Result<Datum> {
        Ok(match self {
            Expr::Literal(d, _) => d.clone(),
            Expr::Column { index, .. } => row.get(*index).cloned().unwrap_or(Datum::Null),
            Expr::Param { index, ty } => ctx
                .params
                .get(*index)
                .cloned()
                .ok_or_else(|| QueryError::Syntax(format!("there is no parameter ${}", index + 1)))?
                .cast(*ty)?,
            Expr::Binary { op: BinOp::And, left, right } => {
                let l = truth(&left.eval(row, ctx)?)?;
                if l == Some(false) {
                    return Ok(Datum::Bool(false));
                }
                let r = truth(&right.eval(row, ctx)?)?;
                match (l, r) {
                    (_, Some(false)) => Datum::Bool(false),
                    (Some(true), Some(true)) => Datum::Bool(true),
                    _ => Datum::Null,
                }
            }
            Expr::Binary { op: BinOp::Or, left, right } => {
                let l = truth(&left.eval(row, ctx)?)?;
                if l == Some(true) {
                    return Ok(Datum::Bool(true));
                }
                let r = truth(&right.eval(row, ctx)?)?;
                match (l, r) {
                    (_, Some(true)) => Datum::Bool(true),
                    (Some(false), Some(false)) => Datum::Bool(false),
                    _ => Datum::Null,
                }
            }
            Expr::Binary { op, left, right } => binary(*op, left.eval(row, ctx)?, right.eval(row, ctx)?, self.ty())?,
            Expr::Not(e) => match truth(&e.eval(row, ctx)?)? {
                None => Datum::Null,
                Some(b) => Datum::Bool(!b),
            },
            Expr::Neg(e) => match e.eval(row, ctx)? {
                Datum::Null => Datum::Null,
                Datum::Int(i) => Datum::Int(i.checked_neg().ok_or_else(|| out_of_range(e.ty()))?),
                Datum::Float(f) => Datum::Float(-f),
                Datum::Numeric(d) => Datum::Numeric(-d),
                d => return Err(QueryError::UndefinedOperator(format!("- {}", d.natural_type()))),
            },
            Expr::IsNull { expr, negated } => Datum::Bool(expr.eval(row, ctx)?.is_null() != *negated),
            Expr::IsBool { expr, value, negated } => {
                let t = truth(&expr.eval(row, ctx)?)?;
                Datum::Bool((t == Some(*value)) != *negated)
            }
            Expr::InList { expr, list, negated } => {
                let v = expr.eval(row, ctx)?;
                if v.is_null() {
                    return Ok(Datum::Null);
                }
                let mut saw_null = false;
                for e in list {
                    let item = e.eval(row, ctx)?;
                    match v.sql_cmp(&item) {
                        Some(std::cmp::Ordering::Equal) => return Ok(Datum::Bool(!negated)),
                        None if item.is_null() => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Datum::Null
                } else {
                    Datum::Bool(*negated)
                }
            }
            Expr::Between { expr, low, high, negated } => {
                let v = expr.eval(row, ctx)?;
                let (lo, hi) = (low.eval(row, ctx)?, high.eval(row, ctx)?);
                match (v.sql_cmp(&lo), v.sql_cmp(&hi)) {
                    (Some(a), Some(b)) => Datum::Bool((a.is_ge() && b.is_le()) != *negated),
                    _ => Datum::Null,
                }
            }
            Expr::Like { expr, pattern, negated, case_insensitive } => match (expr.eval(row, ctx)?, pattern.eval(row, ctx)?) {
                (Datum::Null, _) | (_, Datum::Null) => Datum::Null,
                (v, p) => {
                    let v = v.to_pg_text(expr.ty()).unwrap_or_default();
                    let p = p.to_pg_text(SqlType::Text).unwrap_or_default();
                    let m = if *case_insensitive { like(&v.to_lowercase(), &p.to_lowercase()) } else { like(&v, &p) };
                    Datum::Bool(m != *negated)
                }
            },
            // A real's text has a real's digits (the value travels as an f64).
            Expr::Cast { expr, ty } if ty.is_text() && expr.ty() == SqlType::Float4 => match expr.eval(row, ctx)? {
                d @ Datum::Float(_) => d.to_pg_text(SqlType::Float4).map_or(Datum::Null, Datum::Text),
                d => d.cast(*ty)?,
            },
            Expr::Cast { expr, ty } => expr.eval(row, ctx)?.cast(*ty)?,
            // As in PostgreSQL, the arguments after the first that is not NULL are not evaluated, so they
            // cannot fail (`coalesce(a, 1 / b)` with `a` set and `b` zero is `a`).
            Expr::Func { func: Func::Coalesce, args } => {
                for a in args {
                    let v = a.eval(row, ctx)?;
                    if !v.is_null() {
                        return Ok(v);
                    }
                }
                Datum::Null
            }
            Expr::Func { func, args } => {
                let vals = args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
                call(*func, vals, args, ctx)?
            }
            Expr::Case { operand, whens, otherwise } => {
                let op = operand.as_ref().map(|o| o.eval(row, ctx)).transpose()?;
                for (cond, then) in whens {
                    let c = cond.eval(row, ctx)?;
                    let hit = match &op {
                        Some(o) => o.sql_cmp(&c) == Some(std::cmp::Ordering::Equal),
                        None => truth(&c)? == Some(true),
                    };
                    if hit {
                        return then.eval(row, ctx)?.cast(self.ty());
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, ctx)?.cast(self.ty())?,
                    None => Datum::Null,
                }
            }
        })
    }

    /// Evaluates a WHERE clause: only TRUE passes.
    pub fn eval_predicate(&self, row: &[Datum], ctx: &EvalCtx) -> Result<bool> {
        Ok(truth(&self.eval(row, ctx)?)? == Some(true))
    }

    /// Splits an expression into its AND-ed parts.
    pub fn conjuncts(self) -> Vec<Expr> {
        match self {
            Expr::Binary { op: BinOp::And, left, right } => {
                let mut v = left.conjuncts();
                v.extend(right.conjuncts());
                v
            }
            e => vec![e],
        }
    }

    pub fn and_all(mut parts: Vec<Expr>) -> Option<Expr> {
        let first = if parts.is_empty() { return None } else { parts.remove(0) };
        Some(parts.into_iter().fold(first, |acc, e| Expr::Binary { op: BinOp::And, left: Box::new(acc), right: Box::new(e) }))
    }

    /// Column indices the expression reads.
    pub fn columns(&self, out: &mut Vec<usize>) {
        crate::depth::with_stack(|| self.columns_here(out))
    }

    fn columns_here(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Column { index, .. } => out.push(*index),
            Expr::Literal(..) | Expr::Param { .. } => {}
            Expr::Binary { left, right, .. } => {
                left.columns(out);
                right.columns(out);
            }
            Expr::Not(e) | Expr::Neg(e) | Expr::Cast { expr: e, .. } | Expr::IsNull { expr: e, .. } | Expr::IsBool { expr: e, .. } => {
                e.columns(out)
            }
            Expr::InList { expr, list, .. } => {
                expr.columns(out);
                list.iter().for_each(|e| e.columns(out));
            }
            Expr::Between { expr, low, high, .. } => {
                expr.columns(out);
                low.columns(out);
                high.columns(out);
            }
            Expr::Like { expr, pattern, .. } => {
                expr.columns(out);
                pattern.columns(out);
            }
            Expr::Func { args, .. } => args.iter().for_each(|e| e.columns(out)),
            Expr::Case { operand, whens, otherwise } => {
                operand.iter().for_each(|e| e.columns(out));
                whens.iter().for_each(|(a, b)| {
                    a.columns(out);
                    b.columns(out);
                });
                otherwise.iter().for_each(|e| e.columns(out));
            }
        }
    }
}

fn numeric_result(l: SqlType, r: SqlType) -> SqlType {
    use SqlType::*;
    let rank = |t: SqlType| match t {
        Int2 => 1,
        Int4 | Unknown => 2,
        Int8 => 3,
        Numeric => 4,
        Float4 => 5,
        Float8 => 6,
        Timestamp | Timestamptz | Date => 7,
        _ => 0,
    };
    let t = if rank(l) >= rank(r) { l } else { r };
    match t {
        Unknown => Int4,
        Int2 => Int4,
        t => t,
    }
}

/// The type the right operand of a jsonb operator takes (`None`: not one): `->` and `->>` take a key
/// (text) or an index (integer), `@>` and `<@` a jsonb.
fn json_operand(op: BinOp, rt: SqlType) -> Option<SqlType> {
    match op {
        BinOp::JsonGet | BinOp::JsonGetText if rt.is_integer() => Some(rt),
        BinOp::JsonGet | BinOp::JsonGetText => Some(SqlType::Text),
        BinOp::JsonContains | BinOp::JsonContainedBy => Some(SqlType::Jsonb),
        _ => None,
    }
}

/// A jsonb operator's value (`None`: `op` is not one).
fn json_binary(op: BinOp, l: &Datum, r: &Datum) -> Result<Option<Datum>> {
    use crate::json::{self, Step};
    let (Datum::Text(doc), true) = (l, json_operand(op, SqlType::Unknown).is_some()) else { return Ok(None) };
    let step = match r {
        Datum::Int(i) => Step::Index(*i),
        Datum::Text(k) => Step::Key(k),
        _ => Step::Key(""),
    };
    let text = |t: Option<String>| t.map(Datum::Text).unwrap_or(Datum::Null);
    Ok(Some(match (op, r) {
        (BinOp::JsonGet, _) => text(json::get(doc, step)?),
        (BinOp::JsonGetText, _) => text(json::get_text(doc, step)?),
        (BinOp::JsonContains, Datum::Text(b)) => Datum::Bool(json::contains(doc, b)?),
        (BinOp::JsonContainedBy, Datum::Text(b)) => Datum::Bool(json::contains(b, doc)?),
        _ => return Ok(None),
    }))
}

/// PostgreSQL's dates run from 4714-11-24 BC to 5874897-12-31 AD: days from 1970-01-01.
fn date_in_range(days: i64) -> bool {
    (-2_440_588..=2_145_042_906).contains(&days)
}

pub fn truth(d: &Datum) -> Result<Option<bool>> {
    match d {
        Datum::Null => Ok(None),
        Datum::Bool(b) => Ok(Some(*b)),
        Datum::Text(s) => Datum::parse(SqlType::Bool, s).map(|d| Some(d == Datum::Bool(true))),
        other => Err(QueryError::DatatypeMismatch(format!("argument of WHERE must be type boolean, not type {}", other.natural_type()))),
    }
}

fn to_decimal(d: &Datum) -> Option<Decimal> {
    match d {
        Datum::Int(i) => Some(Decimal::from(*i)),
        Datum::Numeric(n) => Some(*n),
        Datum::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn to_f64(d: &Datum) -> Option<f64> {
    match d {
        Datum::Int(i) => Some(*i as f64),
        Datum::Float(f) => Some(*f),
        Datum::Numeric(n) => n.to_string().parse().ok(),
        Datum::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn binary(op: BinOp, l: Datum, r: Datum, result_ty: SqlType) -> Result<Datum> {
    use BinOp::*;
    if l.is_null() || r.is_null() {
        return Ok(Datum::Null);
    }
    if op.is_comparison() {
        let ord = l
            .sql_cmp(&r)
            .ok_or_else(|| QueryError::UndefinedOperator(format!("{} {} {}", l.natural_type(), op.symbol(), r.natural_type())))?;
        return Ok(Datum::Bool(match op {
            Eq => ord.is_eq(),
            NotEq => ord.is_ne(),
            Lt => ord.is_lt(),
            LtEq => ord.is_le(),
            Gt => ord.is_gt(),
            GtEq => ord.is_ge(),
            _ => unreachable!(),
        }));
    }
    if op == Concat {
        // `||` casts a non-text operand to text (`true || 'x'` is `truex`), where concat() takes its output form.
        let text = |d: Datum| -> Result<String> {
            Ok(match d.cast(SqlType::Text)? {
                Datum::Text(s) => s,
                other => other.to_pg_text(SqlType::Text).unwrap_or_default(),
            })
        };
        return Ok(Datum::Text(text(l)? + &text(r)?));
    }
    if let Some(d) = json_binary(op, &l, &r)? {
        return Ok(d);
    }
    // date ± integer is a date, date - date the days between (PostgreSQL's date operators).
    match (op, &l, &r) {
        (Add | Sub, Datum::Date(d), Datum::Int(n)) | (Add, Datum::Int(n), Datum::Date(d)) => {
            let n = if op == Sub { n.checked_neg() } else { Some(*n) };
            return n
                .and_then(|n| i64::from(*d).checked_add(n))
                .filter(|d| date_in_range(*d))
                .map(|d| Datum::Date(d as i32))
                .ok_or(QueryError::DateOutOfRange);
        }
        (Sub, Datum::Date(a), Datum::Date(b)) => return Ok(Datum::Int(i64::from(*a) - i64::from(*b))),
        _ => {}
    }
    let mismatch = || QueryError::UndefinedOperator(format!("{} {} {}", l.natural_type(), op.symbol(), r.natural_type()));
    match result_ty {
        t if t.is_integer() => {
            let (Datum::Int(a), Datum::Int(b)) = (&l, &r) else {
                // An untyped text operand: parse it as an integer.
                let a = Datum::Int(match &l {
                    Datum::Int(a) => *a,
                    other => other.clone().cast(SqlType::Int8)?.as_int().ok_or_else(mismatch)?,
                });
                let b = Datum::Int(match &r {
                    Datum::Int(b) => *b,
                    other => other.clone().cast(SqlType::Int8)?.as_int().ok_or_else(mismatch)?,
                });
                return binary(op, a, b, result_ty);
            };
            let (a, b) = (*a, *b);
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                Div if b == 0 => return Err(QueryError::DivisionByZero),
                Div => a.checked_div(b),
                Mod if b == 0 => return Err(QueryError::DivisionByZero),
                Mod => a.checked_rem(b),
                _ => unreachable!(),
            };
            let v = v.ok_or_else(|| out_of_range(t))?;
            Datum::Int(v).cast(t)
        }
        SqlType::Numeric => {
            let (a, b) = (to_decimal(&l).ok_or_else(mismatch)?, to_decimal(&r).ok_or_else(mismatch)?);
            let v = match op {
                Add => a.checked_add(b),
                Sub => a.checked_sub(b),
                Mul => a.checked_mul(b),
                Div if b.is_zero() => return Err(QueryError::DivisionByZero),
                Div => a.checked_div(b),
                Mod if b.is_zero() => return Err(QueryError::DivisionByZero),
                Mod => a.checked_rem(b),
                _ => unreachable!(),
            };
            Ok(Datum::Numeric(v.ok_or_else(|| out_of_range(SqlType::Numeric))?.normalize()))
        }
        SqlType::Float4 | SqlType::Float8 => {
            let (a, b) = (to_f64(&l).ok_or_else(mismatch)?, to_f64(&r).ok_or_else(mismatch)?);
            let v = match op {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div if b == 0.0 => return Err(QueryError::DivisionByZero),
                Div => a / b,
                Mod => a % b,
                _ => unreachable!(),
            };
            if v.is_infinite() && a.is_finite() && b.is_finite() {
                return Err(out_of_range(result_ty));
            }
            Ok(Datum::Float(v))
        }
        _ => Err(mismatch()),
    }
}

impl Datum {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Datum::Int(i) => Some(*i),
            _ => None,
        }
    }
}

fn call(func: Func, vals: Vec<Datum>, args: &[Expr], ctx: &EvalCtx) -> Result<Datum> {
    use Func::*;
    let text = |i: usize| -> Option<String> { vals.get(i).and_then(|v| v.to_pg_text(args[i].ty())) };
    let null_in = vals.iter().any(|v| v.is_null());
    Ok(match func {
        Coalesce => vals.into_iter().find(|v| !v.is_null()).unwrap_or(Datum::Null),
        NullIf => {
            if vals[0].sql_cmp(&vals[1]) == Some(std::cmp::Ordering::Equal) {
                Datum::Null
            } else {
                vals[0].clone()
            }
        }
        Greatest | Least => {
            let mut best: Option<Datum> = None;
            for v in vals.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = v.sort_cmp(&b);
                        if (func == Greatest && o.is_gt()) || (func == Least && o.is_lt()) {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Datum::Null)
        }
        Now => Datum::Timestamp(ctx.now_us),
        CurrentDate => Datum::Date(ctx.now_us.div_euclid(86_400_000_000) as i32),
        GenRandomUuid => Datum::Uuid(random_uuid()?),
        Version => Datum::Text(version_string()),
        CurrentSchema => Datum::Text("public".into()),
        CurrentDatabase => Datum::Text(ctx.database.into()),
        CurrentUser => Datum::Text(ctx.user.into()),
        SessionUser => Datum::Text(ctx.session_user.into()),
        Concat => Datum::Text(vals.iter().zip(args).filter_map(|(v, a)| v.to_pg_text(a.ty())).collect()),
        _ if null_in => Datum::Null,
        Lower => Datum::Text(text(0).unwrap_or_default().to_lowercase()),
        Upper => Datum::Text(text(0).unwrap_or_default().to_uppercase()),
        Md5 => Datum::Text(format!("{:x}", md5_digest(text(0).unwrap_or_default().as_bytes()))),
        Length => Datum::Int(match &vals[0] {
            Datum::Bytes(b) => b.len() as i64,
            _ => text(0).unwrap_or_default().chars().count() as i64,
        }),
        Substr => {
            let s: Vec<char> = text(0).unwrap_or_default().chars().collect();
            let start = vals.get(1).and_then(|v| v.clone().cast(SqlType::Int8).ok()).and_then(|v| v.as_int()).unwrap_or(1);
            let len = vals.get(2).map(|v| v.clone().cast(SqlType::Int8)).transpose()?.and_then(|v| v.as_int());
            let from = (start - 1).max(0) as usize;
            let to = match len {
                Some(l) if l < 0 => return Err(QueryError::InvalidParameterValue("negative substring length not allowed".into())),
                Some(l) => ((start - 1 + l).max(0) as usize).min(s.len()),
                None => s.len(),
            };
            Datum::Text(if from < to { s[from..to].iter().collect() } else { String::new() })
        }
        Abs => match &vals[0] {
            Datum::Int(i) => Datum::Int(i.checked_abs().ok_or_else(|| out_of_range(args[0].ty()))?),
            Datum::Float(f) => Datum::Float(f.abs()),
            Datum::Numeric(d) => Datum::Numeric(d.abs()),
            d => return Err(QueryError::UndefinedFunction(format!("abs({})", d.natural_type()))),
        },
        Round | Floor | Ceil => {
            // The digits argument may come typed as the value is (numeric): read it as an integer.
            let digits = vals.get(1).map(|v| v.clone().cast(SqlType::Int8)).transpose()?.and_then(|v| v.as_int()).unwrap_or(0);
            match &vals[0] {
                Datum::Int(i) => Datum::Int(*i),
                Datum::Float(f) => {
                    let m = 10f64.powi(digits as i32);
                    Datum::Float(match func {
                        Round => (f * m).round() / m,
                        Floor => f.floor(),
                        _ => f.ceil(),
                    })
                }
                Datum::Numeric(d) => Datum::Numeric(match func {
                    // Negative digits round left of the point, as PostgreSQL's round(1234.5, -2) is 1200.
                    Round if digits < 0 => {
                        let m =
                            rust_decimal::Decimal::from(10i64.checked_pow((-digits) as u32).ok_or_else(|| out_of_range(SqlType::Numeric))?);
                        (d / m).round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero) * m
                    }
                    // The result has exactly `digits` decimals, as PostgreSQL's round(4.5, 2) is 4.50.
                    Round => {
                        let mut r = d.round_dp_with_strategy(digits as u32, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
                        r.rescale(digits as u32);
                        r
                    }
                    Floor => d.floor(),
                    _ => d.ceil(),
                }),
                d => return Err(QueryError::UndefinedFunction(format!("{}({})", func.name(), d.natural_type()))),
            }
        }
    })
}

/// A version 4 (random) UUID from the operating system's random source, as PostgreSQL's gen_random_uuid().
pub(crate) fn random_uuid() -> Result<u128> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| QueryError::Internal(format!("no random bytes: {e}")))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Ok(u128::from_be_bytes(b))
}

fn md5_digest(b: &[u8]) -> u128 {
    // Small and dependency-free is not worth it: md5 is used by the engine already.
    u128::from_be_bytes(tabula_store::keys::md5_bytes(b))
}

/// SQL LIKE with `%` and `_` and backslash escapes.
fn like(s: &str, p: &str) -> bool {
    fn go(s: &[char], p: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('%') => (0..=s.len()).any(|i| go(&s[i..], &p[1..])),
            Some('_') => !s.is_empty() && go(&s[1..], &p[1..]),
            Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && go(&s[1..], &p[2..]),
            Some(c) => s.first() == Some(c) && go(&s[1..], &p[1..]),
        }
    }
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = p.chars().collect();
    go(&s, &p)
}

/// The names an expression can refer to.
pub struct Scope<'a> {
    /// (table, name it is referred by, index of its first column in the row)
    pub tables: Vec<(&'a TableSchema, String, usize)>,
}

impl<'a> Scope<'a> {
    pub fn empty() -> Self {
        Scope { tables: Vec::new() }
    }

    pub fn table(t: &'a TableSchema, alias: Option<&str>) -> Self {
        Scope { tables: vec![(t, alias.unwrap_or(&t.name).to_string(), 0)] }
    }

    fn resolve(&self, qualifier: Option<&str>, name: &str) -> Result<Expr> {
        let mut found = None;
        for (t, tname, offset) in &self.tables {
            if let Some(q) = qualifier {
                if q != tname {
                    continue;
                }
            } else if tname == "excluded" {
                continue;
            }
            if let Some(i) = t.column_index(name) {
                if found.is_some() {
                    return Err(QueryError::AmbiguousColumn(name.to_string()));
                }
                found = Some(Expr::Column { index: offset + i, ty: t.column_type(i), name: name.to_string() });
            }
        }
        if let (Some(q), None) = (qualifier, &found) {
            if !self.tables.iter().any(|(_, n, _)| n == q) {
                return Err(QueryError::UndefinedTable(format!("missing FROM-clause entry for table \"{q}\"")));
            }
        }
        found.ok_or_else(|| {
            QueryError::UndefinedColumn(match qualifier {
                Some(q) => format!("{q}.{name}"),
                None => name.to_string(),
            })
        })
    }
}

/// Binds sqlparser expressions; collects the types parameters must have.
pub struct Binder<'a, 's> {
    pub scope: &'a Scope<'s>,
    pub params: &'a mut Vec<SqlType>,
}

impl Binder<'_, '_> {
    fn param(&mut self, s: &str) -> Result<Expr> {
        let n: usize = s.trim_start_matches('$').parse().map_err(|_| QueryError::Syntax(format!("bad parameter {s}")))?;
        if n == 0 || n > 65535 {
            return Err(QueryError::Syntax(format!("there is no parameter ${n}")));
        }
        if self.params.len() < n {
            self.params.resize(n, SqlType::Unknown);
        }
        Ok(Expr::Param { index: n - 1, ty: self.params[n - 1] })
    }

    /// Gives an untyped operand (a quoted literal or parameter) the type the other side expects.
    pub fn coerce(&mut self, e: Expr, ty: SqlType) -> Result<Expr> {
        if ty == SqlType::Unknown {
            return Ok(e);
        }
        Ok(match e {
            Expr::Param { index, ty: SqlType::Unknown } => {
                self.params[index] = ty;
                Expr::Param { index, ty }
            }
            Expr::Literal(d @ Datum::Text(_), SqlType::Unknown) => Expr::Literal(d.cast(ty)?, ty),
            Expr::Literal(Datum::Null, _) => Expr::Literal(Datum::Null, ty),
            // An integer literal against a float or numeric column: convert now.
            Expr::Literal(d @ Datum::Int(_), t) if t.is_integer() && matches!(ty, SqlType::Float4 | SqlType::Float8 | SqlType::Numeric) => {
                Expr::Literal(d.cast(ty)?, ty)
            }
            e => e,
        })
    }

    pub fn bind(&mut self, e: &ast::Expr) -> Result<Expr> {
        crate::depth::with_stack(|| self.bind_here(e))
    }

    fn bind_here(&mut self, e: &ast::Expr) -> Result<Expr> {
        use ast::Expr as E;
        Ok(match e {
            // Keywords in PostgreSQL, never columns when unquoted; sqlparser reads them as names.
            E::Identifier(id) if id.quote_style.is_none() && ["current_role", "user"].iter().any(|k| id.value.eq_ignore_ascii_case(k)) => {
                Expr::Func { func: Func::CurrentUser, args: vec![] }
            }
            E::Identifier(id) => self.scope.resolve(None, &ident_name(id))?,
            E::CompoundIdentifier(ids) => {
                let names: Vec<String> = ids.iter().map(ident_name).collect();
                match names.as_slice() {
                    [q, c] => self.scope.resolve(Some(q), c)?,
                    [_, q, c] => self.scope.resolve(Some(q), c)?,
                    _ => return Err(QueryError::UndefinedColumn(names.join("."))),
                }
            }
            E::Value(v) => self.value(&v.value)?,
            E::Nested(e) => self.bind(e)?,
            E::BinaryOp { left, op, right } => {
                let op = match op {
                    ast::BinaryOperator::Plus => BinOp::Add,
                    ast::BinaryOperator::Minus => BinOp::Sub,
                    ast::BinaryOperator::Multiply => BinOp::Mul,
                    ast::BinaryOperator::Divide => BinOp::Div,
                    ast::BinaryOperator::Modulo => BinOp::Mod,
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::NotEq => BinOp::NotEq,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::LtEq,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::GtEq,
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    ast::BinaryOperator::StringConcat => BinOp::Concat,
                    ast::BinaryOperator::Arrow => BinOp::JsonGet,
                    ast::BinaryOperator::LongArrow => BinOp::JsonGetText,
                    ast::BinaryOperator::AtArrow => BinOp::JsonContains,
                    ast::BinaryOperator::ArrowAt => BinOp::JsonContainedBy,
                    other => return Err(QueryError::NotSupported(format!("operator {other} is not supported"))),
                };
                // Row comparisons `(a, b) > (x, y)` expand to their lexicographic meaning.
                if let (E::Tuple(ls), E::Tuple(rs)) = (strip(left), strip(right)) {
                    return self.bind_tuple_cmp(op, ls, rs);
                }
                let l = self.bind(left)?;
                let r = self.bind(right)?;
                self.binary(op, l, r)?
            }
            E::UnaryOp { op, expr } => {
                let inner = self.bind(expr)?;
                match op {
                    ast::UnaryOperator::Not => Expr::Not(Box::new(self.coerce(inner, SqlType::Bool)?)),
                    ast::UnaryOperator::Minus => match inner {
                        Expr::Literal(Datum::Int(i), t) => Expr::Literal(Datum::Int(-i), t),
                        Expr::Literal(Datum::Float(f), t) => Expr::Literal(Datum::Float(-f), t),
                        Expr::Literal(Datum::Numeric(d), t) => Expr::Literal(Datum::Numeric(-d), t),
                        e => Expr::Neg(Box::new(e)),
                    },
                    ast::UnaryOperator::Plus => inner,
                    other => return Err(QueryError::NotSupported(format!("operator {other} is not supported"))),
                }
            }
            E::IsNull(e) => Expr::IsNull { expr: Box::new(self.bind(e)?), negated: false },
            E::IsNotNull(e) => Expr::IsNull { expr: Box::new(self.bind(e)?), negated: true },
            E::IsTrue(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: true, negated: false },
            E::IsNotTrue(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: true, negated: true },
            E::IsFalse(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: false, negated: false },
            E::IsNotFalse(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: false, negated: true },
            E::InList { expr, list, negated } => {
                let inner = self.bind(expr)?;
                let ty = inner.ty();
                let list = list
                    .iter()
                    .map(|e| {
                        let b = self.bind(e)?;
                        self.coerce(b, ty)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let ty =
                    if ty == SqlType::Unknown { list.iter().map(|e| e.ty()).find(|t| *t != SqlType::Unknown).unwrap_or(ty) } else { ty };
                Expr::InList { expr: Box::new(self.coerce(inner, ty)?), list, negated: *negated }
            }
            E::Between { expr, negated, low, high } => {
                let inner = self.bind(expr)?;
                let ty = inner.ty();
                let low = self.bind(low)?;
                let low = self.coerce(low, ty)?;
                let high = self.bind(high)?;
                let high = self.coerce(high, ty)?;
                Expr::Between { expr: Box::new(inner), low: Box::new(low), high: Box::new(high), negated: *negated }
            }
            E::Like { negated, expr, pattern, .. } | E::ILike { negated, expr, pattern, .. } => {
                let ci = matches!(e, E::ILike { .. });
                let p = self.bind(pattern)?;
                Expr::Like {
                    expr: Box::new(self.bind(expr)?),
                    pattern: Box::new(self.coerce(p, SqlType::Text)?),
                    negated: *negated,
                    case_insensitive: ci,
                }
            }
            E::Cast { expr, data_type, .. } => {
                let ty = sql_type(data_type)?;
                let inner = self.bind(expr)?;
                match inner {
                    Expr::Param { index, ty: SqlType::Unknown } => self.coerce(Expr::Param { index, ty: SqlType::Unknown }, ty)?,
                    Expr::Literal(d, _) => Expr::Literal(d.cast(ty)?, ty),
                    e => Expr::Cast { expr: Box::new(e), ty },
                }
            }
            E::TypedString(ts) => {
                let ty = sql_type(&ts.data_type)?;
                let s = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                Expr::Literal(Datum::parse(ty, &s)?, ty)
            }
            E::Function(f) => self.function(f)?,
            E::Case { operand, conditions, else_result, .. } => {
                let operand = operand.as_ref().map(|o| self.bind(o)).transpose()?;
                let whens = conditions.iter().map(|w| Ok((self.bind(&w.condition)?, self.bind(&w.result)?))).collect::<Result<Vec<_>>>()?;
                let otherwise = else_result.as_ref().map(|e| self.bind(e)).transpose()?;
                Expr::Case { operand: operand.map(Box::new), whens, otherwise: otherwise.map(Box::new) }
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind(expr)?];
                args.push(match substring_from {
                    Some(f) => self.bind(f)?,
                    None => Expr::literal(Datum::Int(1)),
                });
                if let Some(n) = substring_for {
                    args.push(self.bind(n)?);
                }
                Expr::Func { func: Func::Substr, args }
            }
            E::Floor { expr, .. } => Expr::Func { func: Func::Floor, args: vec![self.bind(expr)?] },
            E::Ceil { expr, .. } => Expr::Func { func: Func::Ceil, args: vec![self.bind(expr)?] },
            E::Tuple(_) => return Err(QueryError::NotSupported("row values are only supported in comparisons".into())),
            E::Subquery(_) | E::InSubquery { .. } | E::Exists { .. } => {
                return Err(QueryError::NotSupported("subqueries are not supported yet".into()))
            }
            other => return Err(QueryError::NotSupported(format!("expression {other} is not supported"))),
        })
    }

    /// A binary operation, with untyped operands given the other side's type.
    pub fn binary(&mut self, op: BinOp, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        let (l, r) = if matches!(op, BinOp::And | BinOp::Or) {
            (self.coerce(l, SqlType::Bool)?, self.coerce(r, SqlType::Bool)?)
        } else if op == BinOp::Concat {
            (self.coerce(l, SqlType::Text)?, self.coerce(r, SqlType::Text)?)
        } else if let Some(r_ty) = json_operand(op, rt) {
            // jsonb operators: `json` (kept as written) has no field access here, as its text is not normalized.
            if lt == SqlType::Json {
                return Err(QueryError::NotSupported(format!("the operator {} on json (it is on jsonb)", op.symbol())));
            }
            if lt != SqlType::Jsonb && lt != SqlType::Unknown {
                return Err(QueryError::UndefinedOperator(format!("{lt} {} {rt}", op.symbol())));
            }
            (self.coerce(l, SqlType::Jsonb)?, self.coerce(r, r_ty)?)
        } else {
            let l = self.coerce(l, rt)?;
            let r = self.coerce(r, lt)?;
            (l, r)
        };
        if op.is_comparison() {
            let (lt, rt) = (l.ty(), r.ty());
            let comparable = lt == rt
                || lt == SqlType::Unknown
                || rt == SqlType::Unknown
                || (lt.is_numeric() && rt.is_numeric())
                || (lt.is_text() && rt.is_text())
                || (matches!(lt, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date)
                    && matches!(rt, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date))
                || (matches!(lt, SqlType::Json | SqlType::Jsonb) && rt.is_text());
            if !comparable {
                return Err(QueryError::UndefinedOperator(format!("{lt} {} {rt}", op.symbol())));
            }
        }
        Ok(Expr::Binary { op, left: Box::new(l), right: Box::new(r) })
    }

    fn bind_tuple_cmp(&mut self, op: BinOp, ls: &[ast::Expr], rs: &[ast::Expr]) -> Result<Expr> {
        if ls.len() != rs.len() || ls.is_empty() {
            return Err(QueryError::Syntax("unequal number of entries in row expressions".into()));
        }
        let l: Vec<Expr> = ls.iter().map(|e| self.bind(e)).collect::<Result<_>>()?;
        let r: Vec<Expr> = rs.iter().map(|e| self.bind(e)).collect::<Result<_>>()?;
        let pairs: Vec<(Expr, Expr)> = l.into_iter().zip(r).collect();
        match op {
            BinOp::Eq | BinOp::NotEq => {
                let eqs = pairs.into_iter().map(|(a, b)| self.binary(BinOp::Eq, a, b)).collect::<Result<Vec<_>>>()?;
                let all = Expr::and_all(eqs).unwrap();
                Ok(if op == BinOp::Eq { all } else { Expr::Not(Box::new(all)) })
            }
            _ => {
                // (a, b) > (x, y)  ≡  a > x OR (a = x AND b > y), built from the last column up.
                let strict = match op {
                    BinOp::LtEq => BinOp::Lt,
                    BinOp::GtEq => BinOp::Gt,
                    o => o,
                };
                let mut it = pairs.into_iter().rev();
                let (la, lb) = it.next().unwrap();
                let mut acc = self.binary(op, la, lb)?;
                for (a, b) in it {
                    let gt = self.binary(strict, a.clone(), b.clone())?;
                    let eq = self.binary(BinOp::Eq, a, b)?;
                    acc = Expr::Binary {
                        op: BinOp::Or,
                        left: Box::new(gt),
                        right: Box::new(Expr::Binary { op: BinOp::And, left: Box::new(eq), right: Box::new(acc) }),
                    };
                }
                Ok(acc)
            }
        }
    }

    fn value(&mut self, v: &ast::Value) -> Result<Expr> {
        use ast::Value as V;
        Ok(match v {
            V::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    Expr::Literal(Datum::Int(i), if i32::try_from(i).is_ok() { SqlType::Int4 } else { SqlType::Int8 })
                } else {
                    Expr::Literal(Datum::parse(SqlType::Numeric, n)?, SqlType::Numeric)
                }
            }
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) | V::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
                Expr::Literal(Datum::Text(s.clone()), SqlType::Unknown)
            }
            V::HexStringLiteral(h) => Expr::Literal(Datum::parse(SqlType::Bytea, &format!("\\x{h}"))?, SqlType::Bytea),
            V::Boolean(b) => Expr::Literal(Datum::Bool(*b), SqlType::Bool),
            V::Null => Expr::Literal(Datum::Null, SqlType::Unknown),
            V::Placeholder(p) => self.param(p)?,
            other => return Err(QueryError::NotSupported(format!("literal {other} is not supported"))),
        })
    }

    fn function(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = f.name.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
        let func = Func::lookup(&name).ok_or_else(|| QueryError::UndefinedFunction(format!("{name}()")))?;
        let mut args = Vec::new();
        match &f.args {
            ast::FunctionArguments::None => {}
            ast::FunctionArguments::List(list) => {
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(self.bind(e)?),
                        other => return Err(QueryError::NotSupported(format!("function argument {other} is not supported"))),
                    }
                }
            }
            ast::FunctionArguments::Subquery(_) => return Err(QueryError::NotSupported("subqueries are not supported yet".into())),
        }
        let arity_ok = match func {
            Func::Coalesce | Func::Concat | Func::Greatest | Func::Least => !args.is_empty(),
            Func::NullIf => args.len() == 2,
            Func::Now
            | Func::CurrentDate
            | Func::Version
            | Func::CurrentSchema
            | Func::CurrentDatabase
            | Func::CurrentUser
            | Func::SessionUser
            | Func::GenRandomUuid => args.is_empty(),
            Func::Substr => (2..=3).contains(&args.len()),
            Func::Round => (1..=2).contains(&args.len()),
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(QueryError::UndefinedFunction(format!("{name} with {} arguments", args.len())));
        }
        // Untyped arguments of text functions are text; of the variadic ones, the first typed argument's type.
        let target = match func {
            Func::Lower | Func::Upper | Func::Length | Func::Md5 | Func::Concat => SqlType::Text,
            _ => args.iter().map(|a| a.ty()).find(|t| *t != SqlType::Unknown).unwrap_or(SqlType::Unknown),
        };
        let args = args.into_iter().map(|a| self.coerce(a, target)).collect::<Result<Vec<_>>>()?;
        Ok(Expr::Func { func, args })
    }
}

fn strip(e: &ast::Expr) -> &ast::Expr {
    match e {
        ast::Expr::Nested(inner) => strip(inner),
        e => e,
    }
}

/// Maps a SQL data type to Tabula's.
pub fn sql_type(dt: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match dt {
        D::Boolean | D::Bool => SqlType::Bool,
        D::SmallInt(_) | D::Int2(_) => SqlType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => SqlType::Int4,
        D::BigInt(_) | D::Int8(_) => SqlType::Int8,
        D::Real | D::Float4 => SqlType::Float4,
        D::DoublePrecision | D::Float8 | D::Double(_) | D::Float(_) => SqlType::Float8,
        D::Numeric(_) | D::Decimal(_) | D::Dec(_) => SqlType::Numeric,
        D::Text | D::String(_) => SqlType::Text,
        D::Varchar(_) | D::CharacterVarying(_) | D::CharVarying(_) | D::Char(_) | D::Character(_) => SqlType::Varchar,
        D::Bytea => SqlType::Bytea,
        D::Timestamp(_, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => SqlType::Timestamptz,
            _ => SqlType::Timestamp,
        },
        D::Date => SqlType::Date,
        D::JSON => SqlType::Json,
        D::JSONB => SqlType::Jsonb,
        D::Uuid => SqlType::Uuid,
        D::Custom(name, _) => {
            let n = name.to_string().to_lowercase();
            SqlType::parse(&n).ok_or_else(|| QueryError::NotSupported(format!("type \"{n}\" is not supported")))?
        }
        other => return Err(QueryError::NotSupported(format!("type {other} is not supported"))),
    })
}
