//! `$1::bigint[]`: an array parameter arrives as PostgreSQL's array text (`{1,2}`), which Arrow's cast to
//! a list would take whole for one element (Django's `bulk_create` then inserted one row of `{a,b}` for
//! two rows). The rewrite makes it `tabula_array_in($1)::bigint[]`: the text parsed into a list of text,
//! which the cast turns into the array type element by element.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, ListBuilder, StringArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

pub const NAME: &str = "tabula_array_in";

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ArrayIn {
    signature: Signature,
}

impl ArrayIn {
    pub fn new() -> Self {
        ArrayIn { signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for ArrayIn {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].clone().into_array(args.number_rows)?;
        let text = input
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| DataFusionError::Internal(format!("{NAME} of {}", input.data_type())))?;
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..text.len() {
            if text.is_null(i) {
                out.append_null();
                continue;
            }
            let s = text.value(i);
            // PostgreSQL's error (22P02), carried through DataFusion's.
            let items = crate::types::parse_text_array(s).ok_or_else(|| {
                DataFusionError::External(Box::new(crate::error::QueryError::InvalidText(format!("malformed array literal: \"{s}\""))))
            })?;
            for item in items {
                out.values().append_option(item);
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}
