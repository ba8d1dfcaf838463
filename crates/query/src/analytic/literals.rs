//! An untyped literal compared with a boolean takes the boolean's type, as in PostgreSQL:
//! `WHERE active = 't'` (what ORMs and hand-written SQL send), where DataFusion cannot compare a boolean
//! with text. The literal is read as PostgreSQL's boolean input reads it (`t`, `true`, `yes`, `on`, `1` and
//! their opposites; 22P02 otherwise), while the comparison is planned, so that both the logical plan and
//! the physical one see two booleans.

use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use crate::types::{Datum, SqlType};

#[derive(Debug)]
pub struct BooleanLiterals;

impl ExprPlanner for BooleanLiterals {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        use BinaryOperator as B;
        if !matches!(expr.op, B::Eq | B::NotEq | B::Lt | B::LtEq | B::Gt | B::GtEq) {
            return Ok(PlannerResult::Original(expr));
        }
        let is_bool = |e: &Expr| matches!(e.get_type(schema), Ok(datafusion::arrow::datatypes::DataType::Boolean));
        let RawBinaryExpr { op, left, right } = expr;
        let (left, right) = if is_bool(&left) {
            let right = as_boolean(right)?;
            (left, right)
        } else if is_bool(&right) {
            (as_boolean(left)?, right)
        } else {
            (left, right)
        };
        Ok(PlannerResult::Original(RawBinaryExpr { op, left, right }))
    }
}

/// A text literal as a boolean one; any other expression as it is.
fn as_boolean(e: Expr) -> Result<Expr> {
    let Expr::Literal(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s)), meta) = &e else {
        return Ok(e);
    };
    match Datum::parse(SqlType::Bool, s) {
        Ok(Datum::Bool(b)) => Ok(Expr::Literal(ScalarValue::Boolean(Some(b)), meta.clone())),
        Ok(_) => Ok(e),
        Err(err) => Err(DataFusionError::External(Box::new(err))),
    }
}
