//! PostgreSQL's functions beyond the evaluator's own ([`super::Func`]), taken from the analytic engine's
//! implementations, so that both routes have one function set: an UPDATE's `SET s = replace(s, 'a', 'b')`
//! runs the same `replace` a SELECT on the analytic route runs. A call is evaluated for one row as DataFusion
//! evaluates a batch of one row: its arguments coerced to the function's signature, as scalars.
//!
//! Only functions that DataFusion (or the analytic engine's own, `analytic::pg_functions`) implements as
//! PostgreSQL does, and that the analytic route takes as they are written (no rewrite of their arguments,
//! `analytic::rewrite`), are listed.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::type_coercion::functions::fields_with_udf;
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF};

use super::Expr;
use crate::analytic::arrow::{arrow_type, datum_of, scalar, sql_type_of};
use crate::error::{QueryError, Result};
use crate::types::{Datum, SqlType};

/// The functions taken from the analytic engine: strings, numbers and dates whose results are PostgreSQL's.
const FUNCTIONS: &[&str] = &[
    "ascii",
    "btrim",
    "ltrim",
    "rtrim",
    "chr",
    "initcap",
    "left",
    "right",
    "lpad",
    "rpad",
    "repeat",
    "replace",
    "reverse",
    "split_part",
    "starts_with",
    "strpos",
    "translate",
    "octet_length",
    "bit_length",
    "to_hex",
    "regexp_replace",
    "sqrt",
    "cbrt",
    "power",
    "pow",
    "exp",
    "ln",
    "log10",
    "trunc",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "degrees",
    "radians",
    "pi",
    "gcd",
    "lcm",
    "format",
    "make_date",
    "make_timestamp",
    "num_nulls",
    "num_nonnulls",
    "width_bucket",
];

fn registry() -> &'static HashMap<String, Arc<ScalarUDF>> {
    static REGISTRY: OnceLock<HashMap<String, Arc<ScalarUDF>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut all = HashMap::new();
        for f in crate::analytic::scalar_functions() {
            for name in std::iter::once(f.name()).chain(f.aliases().iter().map(String::as_str)) {
                if FUNCTIONS.contains(&name) {
                    all.insert(name.to_string(), f.clone());
                }
            }
        }
        all
    })
}

/// DataFusion's default options, which its functions read: built once, not for every row a call evaluates.
fn config_options() -> Arc<ConfigOptions> {
    static OPTIONS: OnceLock<Arc<ConfigOptions>> = OnceLock::new();
    OPTIONS.get_or_init(|| Arc::new(ConfigOptions::default())).clone()
}

/// A call of one of DataFusion's functions, bound to its arguments' types.
#[derive(Debug, Clone)]
pub struct Udf {
    pub func: Arc<ScalarUDF>,
    /// What each argument is cast to before the call (the function's signature, coerced).
    args: Vec<FieldRef>,
    ret: FieldRef,
    /// The result's SQL type.
    pub ty: SqlType,
}

impl PartialEq for Udf {
    fn eq(&self, other: &Self) -> bool {
        self.func.name() == other.func.name() && self.args == other.args
    }
}

/// A function of that name to bind, if DataFusion's is one PostgreSQL's answers agree with.
pub fn lookup(name: &str) -> Option<Arc<ScalarUDF>> {
    registry().get(name).cloned()
}

fn field(ty: DataType) -> FieldRef {
    Arc::new(Field::new("a", ty, true))
}

/// Binds `func` to arguments of types `types`: an untyped one (a quoted literal, a parameter) takes the type
/// the function's signature has there, as PostgreSQL resolves an unknown literal; 42883 when no signature
/// takes the others.
pub fn bind(func: Arc<ScalarUDF>, types: &[SqlType]) -> Result<Udf> {
    let undefined = || {
        let names: Vec<&str> = types.iter().map(|t| if *t == SqlType::Unknown { "unknown" } else { t.pg_name() }).collect();
        QueryError::UndefinedFunction(format!("{}({})", func.name(), names.join(", ")))
    };
    let given: Vec<FieldRef> = types.iter().map(|t| field(if *t == SqlType::Unknown { DataType::Null } else { arrow_type(*t) })).collect();
    let args = fields_with_udf(&given, func.as_ref()).map_err(|_| undefined())?;
    // Where the signature takes anything, an untyped argument is text.
    let args: Vec<FieldRef> = args.into_iter().map(|f| if f.data_type() == &DataType::Null { field(DataType::Utf8) } else { f }).collect();
    let scalars = vec![None; args.len()];
    let ret = func.return_field_from_args(ReturnFieldArgs { arg_fields: &args, scalar_arguments: &scalars }).map_err(|_| undefined())?;
    let ty = sql_type_of(ret.data_type());
    Ok(Udf { func, args, ret, ty })
}

impl Udf {
    /// The SQL types the arguments are given (an untyped literal or parameter takes its argument's).
    pub fn arg_types(&self) -> Vec<SqlType> {
        self.args.iter().map(|f| sql_type_of(f.data_type())).collect()
    }

    pub fn name(&self) -> &str {
        self.func.name()
    }

    /// Calls the function on one row's values (`types`: the SQL types of the argument expressions).
    pub fn call(&self, values: Vec<Datum>, types: &[SqlType]) -> Result<Datum> {
        let mut args = Vec::with_capacity(values.len());
        for ((v, ty), f) in values.iter().zip(types).zip(&self.args) {
            let ty = if *ty == SqlType::Unknown { SqlType::Text } else { *ty };
            args.push(ColumnarValue::Scalar(scalar(v, ty, Some(f.data_type()))?));
        }
        let out = self
            .func
            .invoke_with_args(ScalarFunctionArgs {
                args,
                arg_fields: self.args.clone(),
                number_rows: 1,
                return_field: self.ret.clone(),
                config_options: config_options(),
            })
            .map_err(crate::analytic::map_err)?;
        let value = match out {
            ColumnarValue::Scalar(s) => s,
            ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0).map_err(crate::analytic::map_err)?,
        };
        match datum_of(&value) {
            Some((d, _)) => d.cast(self.ty),
            None => Err(QueryError::Internal(format!("{} gave a value of type {}", self.func.name(), value.data_type()))),
        }
    }
}

impl super::bind::Binder<'_, '_> {
    /// A call of one of the analytic engine's functions (`udf`): untyped arguments take the types its
    /// signature gives them.
    pub(super) fn udf_call(&mut self, udf: Arc<ScalarUDF>, mut args: Vec<Expr>) -> Result<Expr> {
        // `octet_length` counts a bpchar's padding, as PostgreSQL's own function for bpchar does.
        if let (Some(SqlType::Bpchar(n @ 1..)), "octet_length") = (args.first().map(Expr::ty), udf.name()) {
            let rpad = lookup("rpad").ok_or_else(|| QueryError::Internal("rpad is not registered".into()))?;
            let padded = self.udf_call(rpad, vec![args.remove(0), Expr::literal(Datum::Int(n as i64))])?;
            args.insert(0, padded);
        }
        // `format` prints a numeric with its scale and a timestamptz in the session's zone: it is given
        // their text (not a boolean's, whose cast to text is `true`, or a bpchar's, which drops its padding).
        if udf.name() == "format" {
            let text = |a: Expr| match a.ty() {
                SqlType::Numeric | SqlType::Timestamptz => Expr::Cast { expr: Box::new(a), ty: SqlType::Text },
                _ => a,
            };
            args = args.into_iter().map(text).collect();
        }
        let types: Vec<SqlType> = args.iter().map(|a| a.ty()).collect();
        let call = bind(udf, &types)?;
        let args = args.into_iter().zip(call.arg_types()).map(|(a, ty)| self.coerce(a, ty)).collect::<Result<Vec<_>>>()?;
        Ok(Expr::Udf { call: Box::new(call), args })
    }
}
