//! What a bound expression is and does: its type ([`Expr::ty`]), whether it is constant, its value over a
//! row ([`Expr::eval`]), its conjuncts and the columns it reads.

use super::*;

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
                } else if matches!(op, BinOp::ShiftLeft | BinOp::ShiftRight) {
                    left.ty()
                } else if op.is_bitwise() {
                    // The wider integer (`smallint & smallint` stays a smallint).
                    let width = |t: SqlType| [Int2, Int4, Int8].iter().position(|w| *w == t).unwrap_or(2);
                    if width(left.ty()) >= width(right.ty()) {
                        left.ty()
                    } else {
                        right.ty()
                    }
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
                Func::LocalTimestamp => Timestamp,
                Func::GenRandomUuid => Uuid,
                Func::Sequence(_) => Int8,
                Func::NumericFit(..) | Func::NumericMath(_) => Numeric,
                Func::Abs | Func::Sign | Func::Floor | Func::Ceil | Func::Round | Func::Trunc => {
                    args.first().map(|a| a.ty()).unwrap_or(Float8)
                }
                // nullif returns the left operand of the `=` it implies, which has no varchar form: a
                // varchar compares, and comes back, as text.
                Func::NullIf if args.first().is_some_and(|a| a.ty() == Varchar) => Text,
                Func::Coalesce | Func::NullIf | Func::Greatest | Func::Least | Func::MoreThanOneRow => {
                    args.iter().map(|a| a.ty()).find(|t| *t != Unknown).unwrap_or(Text)
                }
            },
            Expr::Udf { call, .. } => call.ty,
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
                !matches!(
                    func,
                    Func::Now | Func::CurrentDate | Func::LocalTimestamp | Func::GenRandomUuid | Func::MoreThanOneRow | Func::Sequence(_)
                ) && args.iter().all(|a| a.is_constant())
            }
            // The functions taken from the analytic engine are all immutable.
            Expr::Udf { args, .. } => args.iter().all(|a| a.is_constant()),
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
                .cast_in(SqlType::Unknown, *ty, &ctx.zone)?,
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
            // `||` takes its operands' text, a timestamptz's in the session's zone.
            Expr::Binary { op: BinOp::Concat, left, right } => {
                let text = |e: &Expr| -> Result<Datum> { e.eval(row, ctx)?.cast_in(e.ty(), SqlType::Text, &ctx.zone) };
                binary(BinOp::Concat, text(left)?, text(right)?, self.ty())?
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
                    let v = v.text_in(expr.ty(), &ctx.zone).unwrap_or_default();
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
            Expr::Cast { expr, ty } => expr.eval(row, ctx)?.cast_explicit_in(expr.ty(), *ty, &ctx.zone)?,
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
            Expr::Udf { call, args } => {
                let vals = args.iter().map(|a| a.eval(row, ctx)).collect::<Result<Vec<_>>>()?;
                let types: Vec<SqlType> = args.iter().map(|a| a.ty()).collect();
                call.call(vals, &types)?
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
                        return then.eval(row, ctx)?.cast_in(then.ty(), self.ty(), &ctx.zone);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(row, ctx)?.cast_in(e.ty(), self.ty(), &ctx.zone)?,
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
            Expr::Func { args, .. } | Expr::Udf { args, .. } => args.iter().for_each(|e| e.columns(out)),
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
