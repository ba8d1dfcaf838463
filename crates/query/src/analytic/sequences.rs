//! The sequence functions in DataFusion's plans, and a made sequence read as a relation (`crate::sequences` says what they answer). Registered for
//! each statement with the session's [`SessionSequences`], since `currval` and `lastval` are the session's.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility};
use datafusion::physical_plan::ExecutionPlan;

use super::Source;
use crate::error::{QueryError, Result};
use crate::sequences::def::SequenceDef;
use crate::sequences::{self, Call, SessionSequences};

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

    fn run(&self, args: &[ColumnarValue], rows: usize) -> Result<ArrayRef> {
        let df = |e: DataFusionError| QueryError::Internal(e.to_string());
        let db = self.db()?;
        let call = match self.kind {
            Kind::Nextval => Call::Nextval,
            Kind::Currval => Call::Currval,
            Kind::Setval => Call::Setval,
            Kind::Lastval => {
                let v = sequences::call(db.sequences(), &self.session, Call::Lastval, None, None, None)?;
                return Ok(Arc::new(Int64Array::from(vec![v; rows.max(1)])));
            }
            Kind::SerialSequence => {
                let names = column(args, 0, rows, &DataType::Utf8).map_err(df)?;
                let names = names.as_string::<i32>();
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
        };
        let names = column(args, 0, rows, &DataType::Utf8).map_err(df)?;
        let names = names.as_string::<i32>();
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
            let name = names.is_valid(i).then(|| names.value(i));
            let value = values.as_ref().map(|v| v.as_primitive::<Int64Type>()).filter(|v| v.is_valid(i)).map(|v| v.value(i));
            let called: Option<&BooleanArray> = called.as_ref().map(|c| c.as_boolean());
            let is_called = called.map_or(Some(true), |c| c.is_valid(i).then(|| c.value(i)));
            out.push(sequences::call(db.sequences(), &self.session, call, name, value, is_called)?);
        }
        Ok(Arc::new(Int64Array::from(out)))
    }

    /// `pg_get_serial_sequence(table, column)`: the sequence's qualified name, NULL for a column that
    /// draws from none; 42P01 and 42703 for a table or column that does not exist, as in PostgreSQL.
    fn serial_sequence(&self, table: &str, column: &str) -> Result<Option<String>> {
        let name = sequences::given_name(table);
        let db = self.db()?;
        let t = db.table(&name)?;
        if t.column_index(column).is_none() {
            return Err(QueryError::UndefinedColumn(format!("{column}\" of relation \"{name}")));
        }
        let all = sequences::all(&db.sequences().relations()?);
        Ok(all.into_iter().find(|s| s.column_of() == Some((&name, column))).map(|s| format!("public.{}", s.name)))
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

/// A sequence read as a relation (`SELECT last_value, is_called FROM s`, as pg_dump reads one): one row,
/// read from the engine's counter when scanned. `log_cnt` is always 0: values are reserved in blocks
/// (`engine/sequence.rs`), not logged ahead one by one.
#[derive(Debug)]
pub struct SequenceRelation {
    pub db: Weak<dyn Source>,
    pub name: String,
    pub def: SequenceDef,
}

impl SequenceRelation {
    fn schema_ref() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("last_value", DataType::Int64, false),
            Field::new("log_cnt", DataType::Int64, false),
            Field::new("is_called", DataType::Boolean, false),
        ]))
    }
}

#[async_trait::async_trait]
impl TableProvider for SequenceRelation {
    fn schema(&self) -> SchemaRef {
        Self::schema_ref()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        _filters: &[datafusion::prelude::Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let db = self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is shut down".into()))?;
        let (n, called) = db.store().sequence_state(&self.name).map_err(|e| external(e.into()))?;
        let last = self.def.shown_value(n);
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(vec![last])),
            Arc::new(Int64Array::from(vec![0i64])),
            Arc::new(BooleanArray::from(vec![called])),
        ];
        let batch = RecordBatch::try_new(Self::schema_ref(), columns)?;
        Ok(MemorySourceConfig::try_new_exec(&[vec![batch]], Self::schema_ref(), projection.cloned())?)
    }
}
