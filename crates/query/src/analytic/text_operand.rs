//! `tabula_text_operand(x, op)`: x itself, where x must be text. PostgreSQL types `ARRAY['a', 'b']` as
//! `text[]`, so `x = ANY(ARRAY['1'])` with an integer x has no operator (42883, `integer = text`), where
//! DataFusion would cast the literals to x's type and answer. The rewrite wraps x in this function when the
//! array is all quoted literals (`rewrite/casts.rs`, `any_text_array`); its type check is the refusal.

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use super::arrow::sql_type;

pub const NAME: &str = "tabula_text_operand";

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextOperand {
    signature: Signature,
}

impl TextOperand {
    pub fn new() -> TextOperand {
        TextOperand { signature: Signature::any(2, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for TextOperand {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let x = &args.arg_fields[0];
        if matches!(x.data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null) {
            return Ok(std::sync::Arc::new(Field::new(NAME, x.data_type().clone(), true).with_metadata(x.metadata().clone())));
        }
        let op = match args.scalar_arguments.get(1) {
            Some(Some(datafusion::common::ScalarValue::Utf8(Some(op)))) => op.clone(),
            _ => "=".into(),
        };
        let message = format!("{} {op} text", sql_type(x).pg_name());
        Err(DataFusionError::External(Box::new(crate::error::QueryError::UndefinedOperator(message))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(args.args[0].clone())
    }
}
