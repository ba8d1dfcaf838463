//! A timestamp's text on the analytic route, as PostgreSQL writes it: `2024-07-15 14:00:00.5+02`, a
//! timestamptz in the session's zone. Arrow's cast to text writes ISO 8601 (`2024-07-15T14:00:00.500+02:00`),
//! which `t::text`, `t || 'x'` and `concat(t, ...)` answered; they call this instead (`zoned::local_casts`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::types::{Datum, SqlType, Zone};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimestampText {
    signature: Signature,
    /// The session's zone, in which a timestamptz is written.
    zone: Zone,
}

impl TimestampText {
    pub fn new(zone: Zone) -> TimestampText {
        TimestampText { signature: Signature::any(1, Volatility::Immutable), zone }
    }
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        "tabula_timestamp_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [arg] = args.args.as_slice() else { return exec_err!("tabula_timestamp_text takes one argument") };
        let (ty, tz) = match arg.data_type() {
            DataType::Timestamp(_, tz) => (if tz.is_some() { SqlType::Timestamptz } else { SqlType::Timestamp }, tz),
            other => return exec_err!("tabula_timestamp_text of {other}"),
        };
        let values = cast(&arg.to_array(args.number_rows)?, &DataType::Timestamp(TimeUnit::Microsecond, tz))?;
        let values = values.as_primitive::<TimestampMicrosecondType>();
        let text: StringArray = (0..values.len())
            .map(|i| (!values.is_null(i)).then(|| Datum::Timestamp(values.value(i)).text_in(ty, &self.zone)).flatten())
            .collect();
        Ok(match arg {
            ColumnarValue::Scalar(_) => ColumnarValue::Scalar(ScalarValue::try_from_array(&text, 0)?),
            ColumnarValue::Array(_) => ColumnarValue::Array(Arc::new(text)),
        })
    }
}
