//! `gen_random_uuid()` on the analytic route: typed `uuid` (not text) in the result's description, as
//! PostgreSQL types it, and a new value for every row.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::types::{Datum, SqlType};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GenRandomUuid {
    signature: Signature,
}

impl GenRandomUuid {
    pub fn new() -> Self {
        GenRandomUuid { signature: Signature::exact(vec![], Volatility::Volatile) }
    }
}

impl ScalarUDFImpl for GenRandomUuid {
    fn name(&self) -> &str {
        "gen_random_uuid"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(super::arrow::field(self.name(), SqlType::Uuid, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let values = (0..args.number_rows)
            .map(|_| {
                let u = crate::expr::random_uuid().map_err(|e| DataFusionError::External(Box::new(e)))?;
                Ok(Datum::Uuid(u).to_pg_text(SqlType::Uuid))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(values)) as ArrayRef))
    }
}
