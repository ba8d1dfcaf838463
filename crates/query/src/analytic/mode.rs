//! `mode() WITHIN GROUP (ORDER BY x)`: the most frequent non-NULL value of `x`, PostgreSQL's ordered-set
//! aggregate. Of values equally frequent, the first in the ordering wins (the smallest ascending, the
//! largest descending), as PostgreSQL's, which walks the sorted values, keeps.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Signature, Volatility};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Mode {
    signature: Signature,
}

impl Mode {
    pub fn new() -> Mode {
        Mode { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl AggregateUDFImpl for Mode {
    fn name(&self) -> &str {
        "mode"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }

    /// The values are counted, in any order; the ordering only breaks ties.
    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let descending = args.order_bys.first().is_some_and(|o| o.options.descending) != args.is_reversed;
        Ok(Box::new(ModeAccumulator { counts: HashMap::new(), descending, ty: args.return_field.data_type().clone() }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let ty = args.return_field.data_type().clone();
        Ok(vec![
            Arc::new(Field::new(format!("{}[values]", args.name), DataType::List(Arc::new(Field::new_list_field(ty, true))), true)),
            Arc::new(Field::new(
                format!("{}[counts]", args.name),
                DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
                true,
            )),
        ])
    }
}

#[derive(Debug)]
struct ModeAccumulator {
    counts: HashMap<ScalarValue, i64>,
    descending: bool,
    ty: DataType,
}

impl ModeAccumulator {
    fn count(&mut self, values: &ArrayRef, counts: Option<&Int64Array>) -> Result<()> {
        for i in 0..values.len() {
            if values.is_null(i) {
                continue;
            }
            let n = counts.map_or(1, |c| c.value(i));
            *self.counts.entry(ScalarValue::try_from_array(values, i)?).or_insert(0) += n;
        }
        Ok(())
    }
}

impl Accumulator for ModeAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.count(&values[0], None)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (values, counts) = (states[0].as_list::<i32>(), states[1].as_list::<i32>());
        for i in 0..values.len() {
            if values.is_null(i) {
                continue;
            }
            let n = counts.value(i);
            let n = n.as_any().downcast_ref::<Int64Array>().ok_or_else(|| DataFusionError::Internal("mode state".into()))?;
            self.count(&values.value(i), Some(n))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (values, counts): (Vec<ScalarValue>, Vec<ScalarValue>) =
            self.counts.iter().map(|(v, n)| (v.clone(), ScalarValue::Int64(Some(*n)))).unzip();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&values, &self.ty)),
            ScalarValue::List(ScalarValue::new_list_nullable(&counts, &DataType::Int64)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut best: Option<(&ScalarValue, i64)> = None;
        for (v, &n) in &self.counts {
            let better = match best {
                None => true,
                Some((b, m)) => {
                    let first = if self.descending { v > b } else { v < b };
                    n > m || (n == m && first)
                }
            };
            if better {
                best = Some((v, n));
            }
        }
        match best {
            Some((v, _)) => Ok(v.clone()),
            None => ScalarValue::try_from(&self.ty),
        }
    }

    fn size(&self) -> usize {
        size_of::<Self>() + self.counts.keys().map(|v| v.size() + size_of::<i64>()).sum::<usize>()
    }
}
