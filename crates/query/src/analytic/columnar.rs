//! A scalar function's arguments and answer as DataFusion hands and takes them.

use datafusion::common::ScalarValue;

/// A scalar function's arguments as arrays: of one row when every argument is a scalar (the answer is
/// then one too, by [`columnar`]), else of the batch's rows.
pub(crate) fn arrays(
    args: &datafusion::logical_expr::ScalarFunctionArgs,
) -> datafusion::error::Result<Vec<datafusion::arrow::array::ArrayRef>> {
    use datafusion::logical_expr::ColumnarValue;
    let rows = if args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) { 1 } else { args.number_rows };
    args.args.iter().map(|a| a.clone().into_array(rows)).collect()
}

/// A scalar function's answer as DataFusion takes it: a scalar when every argument was one (`out` then
/// holds it first), else the array.
pub(crate) fn columnar(
    args: &[datafusion::logical_expr::ColumnarValue],
    out: datafusion::arrow::array::ArrayRef,
) -> datafusion::error::Result<datafusion::logical_expr::ColumnarValue> {
    use datafusion::logical_expr::ColumnarValue;
    Ok(if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
        ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
    } else {
        ColumnarValue::Array(out)
    })
}
