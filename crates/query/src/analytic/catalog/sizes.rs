//! Sizes, as PostgreSQL's tools ask for them: `pg_relation_size` and its kin, `pg_database_size`, and
//! `pg_size_pretty` to print them.

use crate::analytic::catalog::*;

/// PostgreSQL's pg_size_pretty: bytes, kB, MB, GB, TB, rounding half up past 10 of a unit.
pub(super) fn size_pretty(n: i64) -> String {
    let mut v = n;
    for unit in ["bytes", "kB", "MB", "GB", "TB"] {
        if v.abs() < 10 * 1024 || unit == "TB" {
            return format!("{v} {unit}");
        }
        v = (v + if v >= 0 { 512 } else { -512 }) / 1024;
    }
    unreachable!("TB returns")
}

/// Approximate bytes of a Tabula table (its partitions' statistics); 0 for anything else.
pub(super) fn relation_bytes(name: &str, db: Weak<dyn Source>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Int64],
        DataType::Int64,
        Volatility::Volatile,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let db = db.upgrade();
            let bytes = |oid: i64| -> i64 {
                let Some(db) = db.as_ref() else { return 0 };
                let Some((name, OidPart::Table)) = tabula_object(&**db, oid) else { return 0 };
                db.store().partitions(&name).map(|p| p.iter().map(|p| p.approx_bytes.max(0)).sum()).unwrap_or(0)
            };
            let out: Int64Array = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().map(|o| o.map(bytes)).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// `pg_database_size(name | oid)`: what the engine stores for every table, as it counts its own files
/// (`Store::stored_bytes`), or, on an engine that cannot tell, the tables' approximate bytes. Another
/// database's name is 3D000 and another OID is NULL, as PostgreSQL answers.
pub(super) fn database_bytes(db: Weak<dyn Source>) -> ScalarUDF {
    ScalarUDF::new_from_impl(DatabaseSize { db, signature: Signature::any(1, Volatility::Volatile) })
}

#[derive(Debug)]
struct DatabaseSize {
    db: Weak<dyn Source>,
    signature: Signature,
}

// One instance per database: any two compare equal, as DataFusion compares functions by what they compute.
impl PartialEq for DatabaseSize {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for DatabaseSize {}
impl std::hash::Hash for DatabaseSize {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

fn no_database(name: &str) -> DataFusionError {
    DataFusionError::External(Box::new(crate::error::QueryError::Engine {
        sqlstate: "3D000",
        message: format!("database \"{name}\" does not exist"),
    }))
}

impl ScalarUDFImpl for DatabaseSize {
    fn name(&self) -> &str {
        "pg_database_size"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Int64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let by_name = matches!(arrays[0].data_type(), DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
        let keys = datafusion::arrow::compute::cast(&arrays[0], if by_name { &DataType::Utf8 } else { &DataType::Int64 })?;
        let mut size: Option<i64> = None;
        let mut total = || -> DfResult<i64> {
            if let Some(n) = size {
                return Ok(n);
            }
            let db = self.db.upgrade().ok_or_else(|| DataFusionError::Execution("the database is closing".into()))?;
            let store = db.store();
            let n = match store.stored_bytes().map_err(|e| DataFusionError::External(Box::new(crate::error::QueryError::from(e))))? {
                Some(n) => n as i64,
                None => store.table_names().iter().filter_map(|t| store.partitions(t).ok()).flatten().map(|p| p.approx_bytes.max(0)).sum(),
            };
            size = Some(n);
            Ok(n)
        };
        let mut out = Vec::with_capacity(keys.len());
        for i in 0..keys.len() {
            if keys.is_null(i) {
                out.push(None);
                continue;
            }
            if by_name {
                let name = keys.as_string::<i32>().value(i);
                if name != CATALOG {
                    return Err(no_database(name));
                }
            } else if keys.as_primitive::<datafusion::arrow::datatypes::Int64Type>().value(i) != DATABASE_OID as i64 {
                // An OID that names no database is NULL, not an error, in PostgreSQL.
                out.push(None);
                continue;
            }
            out.push(Some(total()?));
        }
        Ok(ColumnarValue::Array(Arc::new(Int64Array::from(out))))
    }
}
