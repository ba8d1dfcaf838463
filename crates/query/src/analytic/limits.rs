//! PostgreSQL's limit on one value, for the text functions whose result size the caller chooses.
//!
//! `repeat('x', 2147483647)` asked DataFusion for a 2 GiB string per row (a server reached 6 GB on a
//! few such rows). PostgreSQL allocates no value over `MaxAllocSize` (1 GiB - 1) with its 4-byte
//! header, and refuses larger requests with 54000 "requested length too large" before allocating.
//! These wrappers check the same bound on each row's arguments, then call DataFusion's function.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};

use crate::error::QueryError;

/// PostgreSQL's `MaxAllocSize`.
const MAX_ALLOC: i64 = (1 << 30) - 1;
/// A varlena's header, allocated with its bytes.
const HEADER: i64 = 4;
/// Bytes per character PostgreSQL reserves for a padded result (UTF-8's longest).
const MAX_CHAR_BYTES: i64 = 4;

/// The functions replaced by checked ones.
pub fn checked_udfs() -> Vec<ScalarUDF> {
    use datafusion::functions::{string, unicode};
    vec![Checked::wrap(string::repeat(), repeat_size), Checked::wrap(unicode::lpad(), pad_size), Checked::wrap(unicode::rpad(), pad_size)]
}

/// `repeat(s, n)`: the bytes of `s` times `n`.
fn repeat_size(text_bytes: i64, n: i64) -> i64 {
    text_bytes.saturating_mul(n.max(0))
}

/// `lpad(s, n [, fill])`, `rpad`: room for `n` characters of the longest encoding.
fn pad_size(_text_bytes: i64, n: i64) -> i64 {
    n.max(0).saturating_mul(MAX_CHAR_BYTES)
}

/// One of DataFusion's functions, with the size of its result checked first from the first two arguments
/// (a text and a count).
#[derive(Debug)]
struct Checked {
    inner: Arc<ScalarUDF>,
    size: fn(i64, i64) -> i64,
}

impl PartialEq for Checked {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}
impl Eq for Checked {}
impl std::hash::Hash for Checked {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.inner.name().hash(state)
    }
}

impl Checked {
    fn wrap(inner: Arc<ScalarUDF>, size: fn(i64, i64) -> i64) -> ScalarUDF {
        ScalarUDF::new_from_impl(Checked { inner, size })
    }

    /// Refuses the call if any row's result would be over PostgreSQL's limit.
    fn check(&self, args: &[ColumnarValue]) -> Result<()> {
        let (Some(text), Some(count)) = (args.first(), args.get(1)) else { return Ok(()) };
        let rows = match (text, count) {
            (ColumnarValue::Array(a), _) | (_, ColumnarValue::Array(a)) => a.len(),
            _ => 1,
        };
        let texts = text.to_array(rows)?;
        let texts = datafusion::arrow::compute::cast(&texts, &DataType::Utf8)?;
        let counts = datafusion::arrow::compute::cast(&count.to_array(rows)?, &DataType::Int64)?;
        let (texts, counts) = (texts.as_string::<i32>(), counts.as_primitive::<Int64Type>());
        for i in 0..rows {
            if texts.is_null(i) || counts.is_null(i) {
                continue;
            }
            let bytes = i64::try_from(texts.value(i).len()).unwrap_or(i64::MAX);
            if (self.size)(bytes, counts.value(i)).saturating_add(HEADER) > MAX_ALLOC {
                return Err(DataFusionError::External(Box::new(QueryError::ProgramLimitExceeded("requested length too large".into()))));
            }
        }
        Ok(())
    }
}

impl ScalarUDFImpl for Checked {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.check(&args.args)?;
        self.inner.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::ScalarValue;

    fn int(v: i64) -> ColumnarValue {
        ColumnarValue::Scalar(ScalarValue::Int64(Some(v)))
    }

    #[test]
    fn sizes_over_postgresql_limit_are_refused_at_its_bounds() {
        let text = |s: &str| ColumnarValue::Scalar(ScalarValue::Utf8(Some(s.into())));
        let repeat = Checked { inner: datafusion::functions::string::repeat(), size: repeat_size };
        assert!(repeat.check(&[text("x"), int(1_073_741_819)]).is_ok());
        assert!(repeat.check(&[text("x"), int(1_073_741_820)]).is_err());
        assert!(repeat.check(&[text("xy"), int(600_000_000)]).is_err());
        assert!(repeat.check(&[text("x"), int(-5)]).is_ok());
        let lpad = Checked { inner: datafusion::functions::unicode::lpad(), size: pad_size };
        assert!(lpad.check(&[text("x"), int(268_435_454)]).is_ok());
        assert!(lpad.check(&[text("x"), int(268_435_455)]).is_err());
    }
}
