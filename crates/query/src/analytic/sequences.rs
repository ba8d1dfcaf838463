//! The sequence functions in DataFusion's plans (`crate::sequences` says what they answer). Registered for
//! each statement with the session's [`SessionSequences`], since `currval` and `lastval` are the session's.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility};

use super::Source;
use crate::error::{QueryError, Result};
use crate::sequences::{self, Sequence, SessionSequences};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Nextval,
    Currval,
    Setval,
    Lastval,
    SerialSequence,
}

/// The five functions, over the database and this session's sequences.
pub fn udfs(db: &Weak<dyn Source>, session: &SessionSequences) -> Vec<ScalarUDF> {
    use Kind::*;
    [Nextval, Currval, Setval, Lastval, SerialSequence]
        .into_iter()
        .map(|kind| {
            let volatility = if kind == SerialSequence { Volatility::Stable } else { Volatility::Volatile };
            let signature = match kind {
                Nextval | Currval => Signature::any(1, volatility),
                Setval => Signature::one_of(vec![TypeSignature::Any(2), TypeSignature::Any(3)], volatility),
                Lastval => Signature::nullary(volatility),
                SerialSequence => Signature::any(2, volatility),
            };
            ScalarUDF::new_from_impl(SequenceUdf { kind, signature, db: db.clone(), session: session.clone() })
        })
        .collect()
}

#[derive(Debug)]
struct SequenceUdf {
    kind: Kind,
    signature: Signature,
    db: Weak<dyn Source>,
    session: SessionSequences,
}

impl PartialEq for SequenceUdf {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && Arc::ptr_eq(&self.session, &other.session)
    }
}

impl Eq for SequenceUdf {}

impl Hash for SequenceUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
    }
}

fn external(e: QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The `i`th row's value of an argument cast to `ty` (a scalar argument is the same in every row).
fn column(args: &[ColumnarValue], i: usize, rows: usize, ty: &DataType) -> DfResult<ArrayRef> {
    let a = args[i].clone().into_array(rows)?;
    Ok(datafusion::arrow::compute::cast(&a, ty)?)
}

impl SequenceUdf {
    fn db(&self) -> Result<Arc<dyn Source>> {
        self.db.upgrade().ok_or_else(|| QueryError::Internal("the database is shut down".into()))
    }

    fn tables(&self) -> Result<Vec<Arc<crate::schema::TableSchema>>> {
        let db = self.db()?;
        db.store().table_names().iter().map(|n| db.table(n)).collect()
    }

    fn resolve(&self, name: &str) -> Result<Sequence> {
        sequences::resolve(&self.tables()?, name)
    }

    fn run(&self, args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
        let df = |e: DataFusionError| QueryError::Internal(e.to_string());
        if self.kind == Kind::Lastval {
            let v = self.session.lock().lastval()?;
            return Ok(Arc::new(Int64Array::from(vec![v; rows.max(1)])));
        }
        let names = column(args, 0, rows, &DataType::Utf8).map_err(df)?;
        let names = names.as_string::<i32>();
        if self.kind == Kind::SerialSequence {
            let columns = column(args, 1, rows, &DataType::Utf8).map_err(df)?;
            let columns = columns.as_string::<i32>();
            let out = (0..names.len())
                .map(|i| {
                    if names.is_null(i) || columns.is_null(i) {
                        return Ok(None);
                    }
                    self.serial_sequence(names.value(i), columns.value(i))
                })
                .collect::<Result<StringArray>>()?;
            return Ok(Arc::new(out));
        }
        let db = self.db()?;
        let values = match self.kind {
            Kind::Setval => Some(column(args, 1, rows, &DataType::Int64).map_err(df)?),
            _ => None,
        };
        let called = match (self.kind, args.len()) {
            (Kind::Setval, 3) => Some(column(args, 2, rows, &DataType::Boolean).map_err(df)?),
            _ => None,
        };
        let mut out = Vec::with_capacity(names.len());
        for i in 0..names.len() {
            if names.is_null(i) {
                out.push(None);
                continue;
            }
            let s = self.resolve(names.value(i))?;
            let mut session = self.session.lock();
            out.push(match self.kind {
                Kind::Nextval => Some(session.nextval(db.store(), &s)?),
                Kind::Currval => Some(session.currval(&s)?),
                _ => {
                    let value = values.as_ref().map(|v| v.as_primitive::<Int64Type>()).filter(|v| v.is_valid(i)).map(|v| v.value(i));
                    let called: Option<&BooleanArray> = called.as_ref().map(|c| c.as_boolean());
                    let is_called = called.map_or(Some(true), |c| c.is_valid(i).then(|| c.value(i)));
                    match (value, is_called) {
                        (Some(v), Some(c)) => Some(session.setval(db.store(), &s, v, c)?),
                        _ => None,
                    }
                }
            });
        }
        Ok(Arc::new(Int64Array::from(out)))
    }

    /// `pg_get_serial_sequence(table, column)`: the sequence's qualified name, NULL for a column that
    /// draws from none; 42P01 and 42703 for a table or column that does not exist, as in PostgreSQL.
    fn serial_sequence(&self, table: &str, column: &str) -> Result<Option<String>> {
        let name = table.strip_prefix("public.").unwrap_or(table);
        let name = name.strip_prefix('"').and_then(|n| n.strip_suffix('"')).map_or_else(|| name.to_lowercase(), |q| q.to_string());
        let t = self.db()?.table(&name)?;
        if t.column_index(column).is_none() {
            return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{name}")));
        }
        Ok(sequences::of_table(&t).filter(|s| s.column == column).map(|s| format!("public.{}", s.name)))
    }
}

impl ScalarUDFImpl for SequenceUdf {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Nextval => "nextval",
            Kind::Currval => "currval",
            Kind::Setval => "setval",
            Kind::Lastval => "lastval",
            Kind::SerialSequence => "pg_get_serial_sequence",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(if self.kind == Kind::SerialSequence { DataType::Utf8 } else { DataType::Int64 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let out = self.run(&args.args, args.number_rows).map_err(external)?;
        Ok(ColumnarValue::Array(out))
    }
}
