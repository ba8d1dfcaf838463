//! `sqrt`, `exp`, `ln`, `log`, `log10` and `power` on the key-value route: a call whose arguments make
//! PostgreSQL choose the function's numeric form ([`MathFn::numeric_form`]) is evaluated on the values'
//! own digits and scale (`types::numeric_math`); any other goes to the analytic engine's double precision
//! one, as PostgreSQL's float8 forms.

use super::{Expr, Func};
use crate::error::{QueryError, Result};
use crate::types::numeric::Fixed;
use crate::types::numeric_math::{self, ArgKind, MathFn};
use crate::types::{Datum, SqlType};

/// What PostgreSQL's resolution of these functions makes of an argument's type.
pub(super) fn kind(ty: SqlType) -> ArgKind {
    match ty {
        SqlType::Float4 | SqlType::Float8 => ArgKind::Float,
        SqlType::Numeric => ArgKind::Numeric,
        _ => ArgKind::Other,
    }
}

impl super::bind::Binder<'_, '_> {
    /// A call of one of the math functions: its numeric form, or the analytic engine's float one.
    pub(super) fn math_call(&mut self, name: &str, args: Vec<Expr>) -> Result<Expr> {
        if let Some(f) = MathFn::lookup(name, args.len()) {
            let kinds: Vec<ArgKind> = args.iter().map(|a| kind(a.ty())).collect();
            match f.numeric_form(&kinds) {
                Some(true) => {
                    let numeric = |b: &mut Self, a: Expr| -> Result<Expr> {
                        Ok(match b.coerce(a, SqlType::Numeric)? {
                            a if a.ty() == SqlType::Numeric => a,
                            a => Expr::Cast { expr: Box::new(a), ty: SqlType::Numeric },
                        })
                    };
                    let args = args.into_iter().map(|a| numeric(self, a)).collect::<Result<Vec<_>>>()?;
                    return Ok(Expr::Func { func: Func::NumericMath(f), args });
                }
                Some(false) => {}
                None => {
                    let types: Vec<&str> = args.iter().map(|a| a.ty().pg_name()).collect();
                    return Err(QueryError::UndefinedFunction(format!("{name}({})", types.join(", "))));
                }
            }
        }
        let udf = super::udf::lookup(name).ok_or_else(|| QueryError::UndefinedFunction(format!("{name}()")))?;
        self.udf_call(udf, args)
    }
}

/// `f` of numeric values (none NULL).
pub(super) fn eval(f: MathFn, vals: &[Datum]) -> Result<Datum> {
    let args = vals
        .iter()
        .map(|v| match v {
            Datum::Numeric(d) => Ok(Fixed { mantissa: d.mantissa(), scale: d.scale() }),
            other => Err(QueryError::Internal(format!("{}() of {}", f.name(), other.natural_type()))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Datum::Numeric(numeric_math::call(f, &args)?.to_decimal()?))
}
