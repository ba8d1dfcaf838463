//! `character(n)` in analytic plans, read as PostgreSQL reads it.
//!
//! A bpchar travels through DataFusion as its value without trailing spaces ([`SqlType::Bpchar`]), the
//! form PostgreSQL's comparisons, grouping, joins and casts to text use, with `character(n)` in its field's
//! metadata. Where PostgreSQL reads the padded value instead, the plan pads it (`rpad(c, n)`) once it is
//! built:
//! - `LIKE`, `ILIKE`, `SIMILAR TO` and the regular-expression operators (`c LIKE 'ab'` is false for a
//!   `char(4)` holding `ab`, whose value is `ab  `);
//! - `concat`, `concat_ws` and `octet_length`, which take the type's printed form.
//!
//! `min` and `max` of a bpchar are bpchars, padded on the way out as the column is.
//!
//! And a string literal compared with a bpchar (or in an `IN` list against one) loses its trailing spaces,
//! as PostgreSQL makes it a bpchar (`c = 'ab  '` finds `ab`).

use std::collections::BTreeMap;

use datafusion::common::metadata::FieldMetadata;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchemaRef, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr::{Alias, ScalarFunction};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Like, LogicalPlan, Operator};

use super::arrow::TYPE_KEY;
use crate::types::SqlType;

/// The plan with bpchar values padded where PostgreSQL reads them padded (the module's doc).
pub fn as_postgres(plan: LogicalPlan) -> Result<LogicalPlan> {
    super::plan_rewrite::rewrite_expressions(plan, rewrite)
}

/// A bpchar's declared length, when `e` is one (a column, or a cast to one).
fn length(e: &Expr, schema: &DFSchemaRef) -> Option<u32> {
    let (_, field) = e.to_field(schema.as_ref()).ok()?;
    match field.metadata().get(TYPE_KEY).and_then(|t| SqlType::parse(t)) {
        Some(SqlType::Bpchar(n)) if n > 0 => Some(n),
        _ => None,
    }
}

fn padded(e: Expr, schema: &DFSchemaRef) -> Transformed<Expr> {
    match length(&e, schema) {
        Some(n) => {
            let width = Expr::Literal(ScalarValue::Int64(Some(n as i64)), None);
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(datafusion::functions::unicode::rpad(), vec![e, width])))
        }
        None => Transformed::no(e),
    }
}

fn rewrite(e: Expr, schema: &DFSchemaRef) -> Result<Transformed<Expr>> {
    Ok(match e {
        Expr::Like(like) if length(&like.expr, schema).is_some() => {
            Transformed::yes(Expr::Like(Like { expr: Box::new(padded(*like.expr, schema).data), ..like }))
        }
        Expr::SimilarTo(like) if length(&like.expr, schema).is_some() => {
            Transformed::yes(Expr::SimilarTo(Like { expr: Box::new(padded(*like.expr, schema).data), ..like }))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right })
            if matches!(op, Operator::RegexMatch | Operator::RegexIMatch | Operator::RegexNotMatch | Operator::RegexNotIMatch)
                && length(&left, schema).is_some() =>
        {
            Transformed::yes(Expr::BinaryExpr(BinaryExpr { left: Box::new(padded(*left, schema).data), op, right }))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if super::plan_rewrite::is_comparison(op) => {
            let (l, r) = (length(&left, schema).is_some(), length(&right, schema).is_some());
            match (trimmed(&right).filter(|_| l), trimmed(&left).filter(|_| r)) {
                (Some(t), _) => Transformed::yes(Expr::BinaryExpr(BinaryExpr { left, op, right: Box::new(t) })),
                (_, Some(t)) => Transformed::yes(Expr::BinaryExpr(BinaryExpr { left: Box::new(t), op, right })),
                _ => Transformed::no(Expr::BinaryExpr(BinaryExpr { left, op, right })),
            }
        }
        Expr::InList(mut list) if length(&list.expr, schema).is_some() && list.list.iter().any(|e| trimmed(e).is_some()) => {
            list.list = list.list.into_iter().map(|e| trimmed(&e).unwrap_or(e)).collect();
            Transformed::yes(Expr::InList(list))
        }
        Expr::ScalarFunction(f) if matches!(f.func.name(), "concat" | "concat_ws" | "octet_length") => {
            let mut changed = false;
            let args = f
                .args
                .into_iter()
                .map(|a| {
                    let p = padded(a, schema);
                    changed |= p.transformed;
                    p.data
                })
                .collect();
            let call = Expr::ScalarFunction(ScalarFunction { func: f.func, args });
            if changed {
                Transformed::yes(call)
            } else {
                Transformed::no(call)
            }
        }
        // `min(c)` is a bpchar too: its field says so, so the client gets it padded.
        Expr::AggregateFunction(ref f) if matches!(f.func.name(), "min" | "max") && f.params.args.len() == 1 => {
            match length(&f.params.args[0], schema) {
                Some(n) => {
                    let name = e.schema_name().to_string();
                    let meta = FieldMetadata::from(BTreeMap::from([(TYPE_KEY.to_string(), SqlType::Bpchar(n).to_string())]));
                    Transformed::yes(Expr::Alias(Alias::new(e, None::<&str>, name).with_metadata(Some(meta))))
                }
                None => Transformed::no(e),
            }
        }
        other => Transformed::no(other),
    })
}

/// A string literal without its trailing spaces, when it has any.
fn trimmed(e: &Expr) -> Option<Expr> {
    let Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)), meta) = e else {
        return None;
    };
    let t = s.trim_end_matches(' ');
    (t.len() < s.len()).then(|| Expr::Literal(ScalarValue::Utf8(Some(t.to_string())), meta.clone()))
}
