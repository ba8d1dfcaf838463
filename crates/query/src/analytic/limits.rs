//! PostgreSQL's limit on one value, for the text functions whose result size the caller chooses.
//!
//! `repeat('x', 2147483647)` asked DataFusion for a 2 GiB string per row (a server reached 6 GB on a
//! few such rows). PostgreSQL allocates no value over `MaxAllocSize` (1 GiB - 1) with its 4-byte
//! header, and refuses larger requests with 54000 "requested length too large" before allocating.
//! These wrappers check the same bound on each row's arguments, then call DataFusion's function.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarUDF};

use super::guarded::{Check, Guarded};
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
    vec![
        Guarded::wrap(string::repeat(), Check::Size(Size::Repeat)),
        Guarded::wrap(unicode::lpad(), Check::Size(Size::Pad)),
        Guarded::wrap(unicode::rpad(), Check::Size(Size::Pad)),
    ]
}

/// How a function's result size follows from its text and count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Size {
    /// `repeat(s, n)`: the bytes of `s` times `n`.
    Repeat,
    /// `lpad(s, n [, fill])`, `rpad`: room for `n` characters of the longest encoding.
    Pad,
}

impl Size {
    fn bytes(self, text_bytes: i64, n: i64) -> i64 {
        match self {
            Size::Repeat => text_bytes.saturating_mul(n.max(0)),
            Size::Pad => n.max(0).saturating_mul(MAX_CHAR_BYTES),
        }
    }
}

/// Refuses the call if any row's result would be over PostgreSQL's limit.
pub(super) fn check_size(args: &[ColumnarValue], size: Size) -> Result<()> {
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
        if size.bytes(bytes, counts.value(i)).saturating_add(HEADER) > MAX_ALLOC {
            return Err(DataFusionError::External(Box::new(QueryError::ProgramLimitExceeded("requested length too large".into()))));
        }
    }
    Ok(())
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
        assert!(check_size(&[text("x"), int(1_073_741_819)], Size::Repeat).is_ok());
        assert!(check_size(&[text("x"), int(1_073_741_820)], Size::Repeat).is_err());
        assert!(check_size(&[text("xy"), int(600_000_000)], Size::Repeat).is_err());
        assert!(check_size(&[text("x"), int(-5)], Size::Repeat).is_ok());
        assert!(check_size(&[text("x"), int(268_435_454)], Size::Pad).is_ok());
        assert!(check_size(&[text("x"), int(268_435_455)], Size::Pad).is_err());
    }
}
