//! The session's text functions on the analytic route: `version()`, `current_user` and the like (constants
//! of the session), and `current_setting(name [, missing_ok])`.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;
use crate::settings::Settings;

/// Text functions of the session: `version()` and `current_setting(name [, missing_ok])`.
#[derive(Debug)]
pub(super) struct TextUdf {
    name: &'static str,
    signature: Signature,
    constant: Option<String>,
    settings: Settings,
}

impl PartialEq for TextUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.constant == other.constant && self.settings == other.settings
    }
}
impl Eq for TextUdf {}
impl Hash for TextUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl TextUdf {
    pub(super) fn constant(name: &'static str, value: String) -> Self {
        TextUdf { name, signature: Signature::exact(vec![], Volatility::Stable), constant: Some(value), settings: Settings::default() }
    }

    pub(super) fn setting(settings: Settings) -> Self {
        let signature = Signature::one_of(
            vec![
                datafusion::logical_expr::TypeSignature::Exact(vec![DataType::Utf8]),
                datafusion::logical_expr::TypeSignature::Exact(vec![DataType::Utf8, DataType::Boolean]),
            ],
            Volatility::Stable,
        );
        TextUdf { name: "current_setting", signature, constant: None, settings }
    }
}

impl ScalarUDFImpl for TextUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> datafusion::error::Result<ColumnarValue> {
        if let Some(c) = &self.constant {
            return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(c.clone()))));
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let names = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
        let missing_ok = arrays.get(1).map(|a| a.as_boolean().clone());
        let mut out = Vec::with_capacity(names.len());
        for (i, name) in names.as_string::<i32>().iter().enumerate() {
            let Some(name) = name else {
                out.push(None);
                continue;
            };
            match self.settings.get(&name.to_lowercase()) {
                Some(v) => out.push(Some(v.clone())),
                None if missing_ok.as_ref().is_some_and(|m| m.value(i)) => out.push(None),
                None => return Err(DataFusionError::External(Box::new(QueryError::UndefinedParameter(name.to_string())))),
            }
        }
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(out)) as ArrayRef))
    }
}
