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
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Guarded {
    inner: Arc<ScalarUDF>,
    check: Check,
}

impl Guarded {
    pub(super) fn wrap(inner: Arc<ScalarUDF>, check: Check) -> ScalarUDF {
        ScalarUDF::new_from_impl(Guarded { inner, check })
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
        match self.check {
            Check::Size(size) => {
                super::limits::check_size(&args.args, size)?;
                self.inner.invoke_with_args(args)
            }
            Check::Domain(rule) => super::math::invoke(&self.inner, rule, args),
        }
    }
}
