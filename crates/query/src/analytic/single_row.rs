//! The value of a scalar subquery, as PostgreSQL defines it: NULL when the subquery finds no row, the row's
//! value when it finds one, and error 21000 when it finds more than one.
//!
//! DataFusion decorrelates a correlated scalar subquery only when it aggregates, and then it aggregates
//! every group before the join, the groups of outer rows a filter drops included. So the check is in two
//! halves (`rewrite::subqueries::aggregate_scalar_subquery` puts them in place):
//! - [`Rows`], an aggregate, makes of the subquery's rows a pair `{value, rows}`: the first row's value and
//!   how many rows there were (rows, not values: two rows whose value is NULL are two);
//! - [`Check`], a scalar function around the subquery in the outer statement, answers `value`, or 21000
//!   when `rows` is over one. It runs only for the outer rows that reach the expression, as PostgreSQL runs
//!   a subquery only for them.

use std::sync::Arc;

use datafusion::arrow::array::{make_array, Array, ArrayRef, AsArray, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;

/// The aggregate's name, which the rewrite calls: not one a user would choose for a function of their own.
pub const ROWS: &str = "tabula_subquery_rows";
/// The check's name.
pub const CHECK: &str = "tabula_subquery_value";

/// `{value, rows}` of a value type.
fn pair(value: &DataType) -> DataType {
    DataType::Struct(Fields::from(vec![Field::new("value", value.clone(), true), Field::new("rows", DataType::Int64, false)]))
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Rows {
    signature: Signature,
}

impl Rows {
    pub fn new() -> Self {
        Rows { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for Rows {
    fn name(&self) -> &str {
        ROWS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(pair(&arg_types[0]))
    }

    fn accumulator(&self, acc_args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let DataType::Struct(fields) = acc_args.return_field.data_type() else {
            return Err(DataFusionError::Internal(format!("{ROWS} returns a struct")));
        };
        let empty = ScalarValue::try_from(fields[0].data_type())?;
        Ok(Box::new(Counted { rows: 0, value: empty }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let DataType::Struct(fields) = args.return_field.data_type() else {
            return Err(DataFusionError::Internal(format!("{ROWS} returns a struct")));
        };
        Ok(vec![
            Arc::new(Field::new(format_state_name(args.name, "rows"), DataType::Int64, false)),
            Arc::new(Field::new(format_state_name(args.name, "value"), fields[0].data_type().clone(), true)),
        ])
    }
}

/// The rows of one group seen so far, and the first one's value.
#[derive(Debug)]
struct Counted {
    rows: i64,
    value: ScalarValue,
}

impl Counted {
    /// Adds `n` rows whose first is at `index` of `values`.
    fn add(&mut self, n: i64, values: &ArrayRef, index: usize) -> Result<()> {
        if n > 0 && self.rows == 0 {
            self.value = ScalarValue::try_from_array(values, index)?;
        }
        // Two or more is all the check needs to know, and saturating keeps any count from overflowing.
        self.rows = self.rows.saturating_add(n).min(2);
        Ok(())
    }
}

impl Accumulator for Counted {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(values[0].len() as i64, &values[0], 0)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let rows = states[0].as_primitive::<Int64Type>();
        for i in 0..rows.len() {
            if rows.is_valid(i) {
                self.add(rows.value(i), &states[1], i)?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Int64(Some(self.rows)), self.value.clone()])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let fields = Fields::from(vec![Field::new("value", self.value.data_type(), true), Field::new("rows", DataType::Int64, false)]);
        let columns = vec![self.value.to_array()?, ScalarValue::Int64(Some(self.rows)).to_array()?];
        Ok(ScalarValue::Struct(Arc::new(StructArray::try_new(fields, columns, None)?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size() - std::mem::size_of_val(&self.value)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Check {
    signature: Signature,
}

impl Check {
    pub fn new() -> Self {
        Check { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for Check {
    fn name(&self) -> &str {
        CHECK
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match &arg_types[0] {
            DataType::Struct(fields) if fields.len() == 2 => Ok(fields[0].data_type().clone()),
            other => Err(DataFusionError::Internal(format!("{CHECK} of {other}, not of {ROWS}"))),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let pairs = args.args[0].clone().into_array(args.number_rows)?;
        let pairs = pairs.as_struct();
        let (values, rows) = (pairs.column(0), pairs.column(1).as_primitive::<Int64Type>());
        for i in 0..pairs.len() {
            if pairs.is_valid(i) && rows.is_valid(i) && rows.value(i) > 1 {
                return Err(too_many());
            }
        }
        // An outer row the subquery found nothing for (a NULL pair, from the join) is NULL.
        let nulls = NullBuffer::union(pairs.nulls(), values.nulls());
        let data = values.to_data().into_builder().nulls(nulls).build()?;
        Ok(ColumnarValue::Array(make_array(data)))
    }
}

fn too_many() -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::CardinalityViolation(
        "more than one row returned by a subquery used as an expression".into(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::config::ConfigOptions;

    fn counted() -> Counted {
        Counted { rows: 0, value: ScalarValue::Utf8(None) }
    }

    fn check(pair: ScalarValue) -> Result<ScalarValue> {
        let arg_fields = vec![Arc::new(Field::new("p", pair.data_type(), true))];
        let out = Check::new().invoke_with_args(ScalarFunctionArgs {
            args: vec![ColumnarValue::Scalar(pair)],
            arg_fields,
            number_rows: 1,
            return_field: Arc::new(Field::new("v", DataType::Utf8, true)),
            config_options: Arc::new(ConfigOptions::default()),
        })?;
        ScalarValue::try_from_array(&out.into_array(1)?, 0)
    }

    #[test]
    fn none_is_null_one_is_its_value_two_are_21000() {
        let mut c = counted();
        c.update_batch(&[Arc::new(StringArray::from(Vec::<Option<&str>>::new()))]).unwrap();
        assert_eq!(check(c.evaluate().unwrap()).unwrap(), ScalarValue::Utf8(None));
        c.update_batch(&[Arc::new(StringArray::from(vec![Some("a")]))]).unwrap();
        assert_eq!(check(c.evaluate().unwrap()).unwrap(), ScalarValue::Utf8(Some("a".into())));
        c.update_batch(&[Arc::new(StringArray::from(vec![None::<&str>]))]).unwrap();
        let e = check(c.evaluate().unwrap()).unwrap_err();
        assert_eq!(crate::analytic::map_err(e).sqlstate(), "21000");
        // Two rows whose value is NULL are two rows.
        let mut c = counted();
        c.update_batch(&[Arc::new(StringArray::from(vec![None::<&str>, None]))]).unwrap();
        assert!(check(c.evaluate().unwrap()).is_err());
    }

    #[test]
    fn partial_states_merge_by_their_row_counts() {
        let values: ArrayRef = Arc::new(StringArray::from(vec![None, Some("b"), None]));
        let mut c = counted();
        c.merge_batch(&[Arc::new(Int64Array::from(vec![0, 1, 0])), values.clone()]).unwrap();
        assert_eq!(check(c.evaluate().unwrap()).unwrap(), ScalarValue::Utf8(Some("b".into())));
        c.merge_batch(&[Arc::new(Int64Array::from(vec![1])), values]).unwrap();
        assert!(check(c.evaluate().unwrap()).is_err());
    }

    #[test]
    fn an_outer_row_without_a_pair_is_null() {
        let null = ScalarValue::try_from(pair(&DataType::Utf8)).unwrap();
        assert_eq!(check(null).unwrap(), ScalarValue::Utf8(None));
    }
}
