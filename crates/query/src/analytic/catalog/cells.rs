//! The cells of generated catalog rows, their Arrow types, and the record batches built from them.

use std::sync::Arc;

use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result as DfResult};

/// A catalog column's kind.
#[derive(Clone, Copy)]
pub(super) enum K {
    Oid,
    Text,
    Bool,
    I16,
    I32,
    I64,
    F32,
    Ts,
    I16s,
    Oids,
    /// int2vector and oidvector: arrays printed as their elements separated by spaces (`1 2`), the form
    /// pg_dump and ODBC drivers parse.
    I16Vector,
    OidVector,
    Texts,
}

/// A catalog cell.
#[derive(Clone, Debug)]
pub(super) enum Cell {
    Null,
    I(i64),
    F(f64),
    B(bool),
    S(String),
    Ints(Vec<i64>),
    Texts(Vec<String>),
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::S(s.to_string())
    }
}
impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::S(s)
    }
}
impl From<i32> for Cell {
    fn from(v: i32) -> Self {
        Cell::I(v as i64)
    }
}
impl From<i64> for Cell {
    fn from(v: i64) -> Self {
        Cell::I(v)
    }
}
impl From<bool> for Cell {
    fn from(v: bool) -> Self {
        Cell::B(v)
    }
}
impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Self {
        v.map(Into::into).unwrap_or(Cell::Null)
    }
}

pub(super) fn data_type(k: K) -> DataType {
    let list = |t: DataType| DataType::List(Arc::new(Field::new_list_field(t, true)));
    match k {
        K::Oid | K::I32 => DataType::Int32,
        K::Text => DataType::Utf8,
        K::Bool => DataType::Boolean,
        K::I16 => DataType::Int16,
        K::I64 => DataType::Int64,
        K::F32 => DataType::Float32,
        K::Ts => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        K::I16s => list(DataType::Int16),
        K::Oids => list(DataType::Int32),
        K::I16Vector => DataType::List(Arc::new(Field::new(crate::analytic::arrow::VECTOR_FIELD, DataType::Int16, true))),
        K::OidVector => DataType::List(Arc::new(Field::new(crate::analytic::arrow::VECTOR_FIELD, DataType::Int32, true))),
        K::Texts => list(DataType::Utf8),
    }
}

pub(super) fn schema_of(cols: &[(&str, K)]) -> SchemaRef {
    Arc::new(Schema::new(cols.iter().map(|(n, k)| Field::new(*n, data_type(*k), true)).collect::<Vec<_>>()))
}

pub(super) fn build_batch(schema: &SchemaRef, rows: &[Vec<Cell>]) -> DfResult<RecordBatch> {
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (i, f) in schema.fields().iter().enumerate() {
        let cells = rows.iter().map(|r| &r[i]);
        let int = |c: &Cell| match c {
            Cell::I(v) => Some(*v),
            _ => None,
        };
        let a: ArrayRef = match f.data_type() {
            DataType::Int16 => Arc::new(cells.map(|c| int(c).map(|v| v as i16)).collect::<Int16Array>()),
            DataType::Int32 => Arc::new(cells.map(|c| int(c).map(|v| v as i32)).collect::<Int32Array>()),
            DataType::Int64 => Arc::new(cells.map(int).collect::<Int64Array>()),
            DataType::Float32 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::F(v) => Some(*v as f32),
                        _ => None,
                    })
                    .collect::<Float32Array>(),
            ),
            DataType::Boolean => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::B(v) => Some(*v),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
            ),
            DataType::Utf8 => Arc::new(
                cells
                    .map(|c| match c {
                        Cell::S(v) => Some(v.as_str()),
                        _ => None,
                    })
                    .collect::<StringArray>(),
            ),
            DataType::Timestamp(..) => Arc::new(cells.map(int).collect::<TimestampMicrosecondArray>().with_timezone("UTC")),
            DataType::List(inner) => match inner.data_type() {
                DataType::Int16 => {
                    let mut b = ListBuilder::new(Int16Builder::new()).with_field(inner.clone());
                    for c in cells {
                        match c {
                            Cell::Ints(v) => b.append_value(v.iter().map(|x| Some(*x as i16))),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
                DataType::Int32 => {
                    let mut b = ListBuilder::new(Int32Builder::new()).with_field(inner.clone());
                    for c in cells {
                        match c {
                            Cell::Ints(v) => b.append_value(v.iter().map(|x| Some(*x as i32))),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
                _ => {
                    let mut b = ListBuilder::new(StringBuilder::new()).with_field(inner.clone());
                    for c in cells {
                        match c {
                            Cell::Texts(v) => b.append_value(v.iter().map(Some)),
                            _ => b.append_null(),
                        }
                    }
                    Arc::new(b.finish())
                }
            },
            other => return Err(DataFusionError::Internal(format!("catalog column of type {other}"))),
        };
        arrays.push(a);
    }
    // The list fields of the built arrays are named "item", as in the schema.
    Ok(RecordBatch::try_new(schema.clone(), arrays)?)
}
