//! `upper`, `lower` and `initcap` on the analytic route: PostgreSQL's one-character-for-one case mapping
//! (`types::letter_case`) in place of DataFusion's, which followed Unicode's full mappings (`upper('ß')`
//! was `SS`).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::types::letter_case;

#[derive(Debug, PartialEq, Eq, Hash)]
struct LetterCase {
    name: &'static str,
    signature: Signature,
}

/// The three functions, under DataFusion's names, which they replace.
pub fn udfs() -> Vec<ScalarUDF> {
    ["upper", "lower", "initcap"]
        .into_iter()
        .map(|name| ScalarUDF::new_from_impl(LetterCase { name, signature: Signature::string(1, Volatility::Immutable) }))
        .collect()
}

impl ScalarUDFImpl for LetterCase {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let f = match self.name {
            "upper" => letter_case::upper,
            "lower" => letter_case::lower,
            _ => letter_case::initcap,
        };
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].clone().into_array(if scalar { 1 } else { args.number_rows })?;
        let values = datafusion::arrow::compute::cast(&values, &DataType::Utf8)?;
        let out: StringArray = values.as_string::<i32>().iter().map(|v| v.map(f)).collect();
        let out: ArrayRef = Arc::new(out);
        Ok(if scalar { ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?) } else { ColumnarValue::Array(out) })
    }
}
