//! One of DataFusion's functions with a check of PostgreSQL's around it: the size of its result
//! (`limits`), or the domain of its arguments and the range of its result (`math`). The wrapper stands in
//! for the function under its own name, on both routes.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};

/// What is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Check {
    /// The result's size in bytes from the first two arguments (a text and a count), before the call.
    Size(super::limits::Size),
    /// The arguments before the call and the result after (`math::Rule`).
    Domain(super::math::Rule),
    /// Nothing: the result keeps its argument's field metadata, which says how a quotient prints
    /// (`quotient`), where it has the argument's type (`abs` of a quotient).
    KeepsScale,
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Guarded {
    inner: Arc<ScalarUDF>,
    check: Check,
    /// The inner function's, or for a function with a numeric form (`sqrt`, `power`, ...) one that
    /// lets the arguments' types choose the form (`math::coerce`).
    signature: Signature,
}

impl Guarded {
    pub(super) fn wrap(inner: Arc<ScalarUDF>, check: Check) -> ScalarUDF {
        let signature = if crate::types::numeric_math::MathFn::has(inner.name()) {
            Signature::user_defined(inner.signature().volatility)
        } else {
            inner.signature().clone()
        };
        ScalarUDF::new_from_impl(Guarded { inner, check, signature })
    }

    fn numeric(&self, arg_types: &[DataType]) -> bool {
        super::math::numeric_form(self.inner.name(), arg_types)
    }
}

impl ScalarUDFImpl for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if self.numeric(arg_types) {
            return Ok(super::math::NUMERIC_RESULT);
        }
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        if self.numeric(&types) {
            return Ok(Arc::new(datafusion::arrow::datatypes::Field::new(self.name(), super::math::NUMERIC_RESULT, true)));
        }
        let first = args.arg_fields.first().cloned();
        let field = self.inner.return_field_from_args(args)?;
        match first {
            Some(arg) if self.check == Check::KeepsScale && arg.data_type() == field.data_type() => {
                Ok(Arc::new(field.as_ref().clone().with_metadata(arg.metadata().clone())))
            }
            _ => Ok(field),
        }
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if crate::types::numeric_math::MathFn::has(self.inner.name()) {
            return super::math::coerce(self.inner.name(), arg_types);
        }
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        if self.numeric(&types) {
            return super::math::invoke_numeric(self.inner.name(), args);
        }
        match self.check {
            Check::Size(size) => {
                super::limits::check_size(&args.args, size)?;
                self.inner.invoke_with_args(args)
            }
            Check::Domain(rule) => super::math::invoke(&self.inner, rule, args),
            Check::KeepsScale => self.inner.invoke_with_args(args),
        }
    }
}
