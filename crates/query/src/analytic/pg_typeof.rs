//! `pg_typeof(x)` on the analytic route: the name of x's PostgreSQL type, as the key-value route gives it
//! (`SqlType::pg_name`), read from the argument's field (its Arrow type, and the metadata that tells
//! `varchar` and `char(n)` from `text`). x is not evaluated for its value.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use super::arrow::sql_type;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PgTypeof {
    signature: Signature,
}

impl PgTypeof {
    pub fn new() -> PgTypeof {
        PgTypeof { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for PgTypeof {
    fn name(&self) -> &str {
        "pg_typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = match args.arg_fields.first() {
            // A bare NULL: PostgreSQL's `unknown`, as on the key-value route.
            Some(f) if f.data_type() == &DataType::Null => "unknown",
            Some(f) => sql_type(f).pg_name(),
            None => "unknown",
        };
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(name.into()))))
    }
}
