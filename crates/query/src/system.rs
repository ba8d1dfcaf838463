//! Tabula's own views: `tabula.tables` (each table's options) and `tabula.partitions` (each partition's
//! key bounds and statistics), built from the engine's live catalog on every read.

use std::sync::Arc;

use tabula_store::{PartitionInfo, PkValue, Store, TableDef, TableOptions, Value};

use crate::error::Result;
use crate::schema::{ColumnDef, TableSchema};
use crate::types::{Datum, SqlType};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemView {
    Tables,
    Partitions,
}

impl SystemView {
    pub fn lookup(schema: &str, name: &str) -> Option<SystemView> {
        match (schema, name) {
            ("tabula", "tables") => Some(SystemView::Tables),
            ("tabula", "partitions") => Some(SystemView::Partitions),
            _ => None,
        }
    }

    pub fn schema(self) -> Arc<TableSchema> {
        let col = ColumnDef::plain;
        let (name, columns) = match self {
            SystemView::Tables => (
                "tabula.tables",
                [col("table_name", SqlType::Text), col("primary_key", SqlType::Text), col("partition_key", SqlType::Text)]
                    .into_iter()
                    .chain(crate::options::OPTIONS.iter().map(|d| col(d.name, d.ty)))
                    .chain([col("partitions", SqlType::Int8)])
                    .collect(),
            ),
            SystemView::Partitions => (
                "tabula.partitions",
                vec![
                    col("table_name", SqlType::Text),
                    col("index_name", SqlType::Text),
                    col("partition_id", SqlType::Int8),
                    col("start_key", SqlType::Text),
                    col("end_key", SqlType::Text),
                    col("approx_bytes", SqlType::Int8),
                    col("approx_rows", SqlType::Int8),
                    col("stored_bytes", SqlType::Int8),
                    col("reads", SqlType::Int8),
                    col("writes", SqlType::Int8),
                    col("read_rate", SqlType::Float8),
                    col("write_rate", SqlType::Float8),
                    col("advice", SqlType::Text),
                ],
            ),
        };
        // Views have no key: `pk` is empty and every read is a full scan of the generated rows.
        // Everybody reads them, as PostgreSQL's statistics views.
        let acl = Some(crate::roles::Acl(vec![(String::new(), crate::roles::Privileges::of(&[crate::roles::Privilege::Select]))]));
        Arc::new(TableSchema { acl, ..TableSchema::new(name, columns, (vec![], 0), TableOptions::default(), crate::roles::BOOTSTRAP) })
    }

    /// The view's rows now (the last column of each row is the `_version` slot, always NULL).
    pub fn rows(self, store: &Store) -> Result<Vec<Vec<Datum>>> {
        let mut out = Vec::new();
        for name in store.table_names() {
            let def = match store.table(&name) {
                Ok(d) => d,
                Err(_) => continue, // dropped meanwhile
            };
            // A sequence is an empty table of the store's, and no table of the user's.
            if TableSchema::from_def(&def).is_ok_and(|t| t.sequence.is_some()) {
                continue;
            }
            let parts = store.partitions_with_stored_bytes(&name)?;
            match self {
                SystemView::Tables => {
                    let pk: Vec<&str> = def.primary_key.iter().map(|c| c.name.as_str()).collect();
                    let o = def.options;
                    let names = [name.clone(), pk.join(", "), pk[..def.partition_key_len].join(", ")].map(Datum::Text);
                    let options = crate::options::OPTIONS.iter().map(|d| Datum::Int(d.value(&o)));
                    out.push(names.into_iter().chain(options).chain([Datum::Int(parts.len() as i64), Datum::Null]).collect());
                }
                SystemView::Partitions => {
                    let table_bound = |key: &[u8]| -> Result<String> {
                        Ok(match store.partition_bound(&name, key)? {
                            Some(vals) => format!("({})", vals.iter().map(show).collect::<Vec<_>>().join(", ")),
                            None => format!("hash bucket {}", key.get(4).copied().unwrap_or(0)),
                        })
                    };
                    push_partitions(&mut out, &name, None, &parts, &table_bound, &|p| advice(&def, p))?;
                    let schema = TableSchema::from_def(&def)?;
                    for (index, parts) in store.index_partitions(&name)? {
                        let index_bound = |key: &[u8]| -> Result<String> {
                            let (values, row) = store.index_partition_bound(&name, &index, key)?;
                            let ix = def.indexes.iter().find(|i| i.name == index);
                            let shown = values.iter().enumerate().map(|(i, v)| {
                                let ty = ix.and_then(|ix| schema.column_index(&ix.columns[i])).map(|c| schema.column_type(c));
                                show_value(v.as_ref(), ty)
                            });
                            Ok(format!("({})", shown.chain(row.iter().map(show)).collect::<Vec<_>>().join(", ")))
                        };
                        push_partitions(&mut out, &name, Some(&index), &parts, &index_bound, &|_| Datum::Null)?;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The rows of one key space's partitions: the table's (`index` None) or a global index's. A bound between
/// two partitions is shown by `bound`; the first starts at `-inf`, the last ends at `+inf`.
fn push_partitions(
    out: &mut Vec<Vec<Datum>>,
    table: &str,
    index: Option<&str>,
    parts: &[PartitionInfo],
    bound: &dyn Fn(&[u8]) -> Result<String>,
    advice: &dyn Fn(&PartitionInfo) -> Datum,
) -> Result<()> {
    for (i, p) in parts.iter().enumerate() {
        let start = if i == 0 { "-inf".to_string() } else { bound(&p.start)? };
        let end = if i + 1 == parts.len() { "+inf".to_string() } else { bound(&p.end)? };
        out.push(vec![
            Datum::Text(table.to_string()),
            index.map_or(Datum::Null, |n| Datum::Text(n.to_string())),
            Datum::Int(p.id as i64),
            Datum::Text(start),
            Datum::Text(end),
            Datum::Int(p.approx_bytes),
            Datum::Int(p.approx_rows),
            p.stored_bytes.map_or(Datum::Null, Datum::Int),
            Datum::Int(p.reads as i64),
            Datum::Int(p.writes as i64),
            Datum::Float(p.read_rate),
            Datum::Float(p.write_rate),
            advice(p),
            Datum::Null,
        ]);
    }
    Ok(())
}

/// An index column's value in a partition bound: as a literal of the column's type (`NULL` for none).
fn show_value(v: Option<&Value>, ty: Option<SqlType>) -> String {
    let Some(v) = v else { return "NULL".into() };
    let text = ty.and_then(|ty| Datum::from_value(v, ty).ok().and_then(|d| d.to_pg_text(ty).map(|t| (t, ty))));
    match text {
        Some((t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float4 | SqlType::Float8 | SqlType::Numeric)) => t,
        Some((t, _)) => format!("'{}'", t.replace('\'', "''")),
        None => format!("{v:?}"),
    }
}

/// What to do about a partition that one partition-key value fills: the partition key is the smallest unit
/// of distribution, never split, and Tablestore advises keeping one value under 10 GB by splicing more
/// primary-key columns into the partition key.
fn advice(def: &TableDef, p: &PartitionInfo) -> Datum {
    if !p.single_value {
        return Datum::Null;
    }
    let names: Vec<&str> = def.primary_key.iter().map(|c| c.name.as_str()).collect();
    let n = def.partition_key_len;
    Datum::Text(if n < names.len() {
        let rest: String = names[n + 1..].iter().map(|c| format!(", {c}")).collect();
        format!(
            "one partition-key value holds these {} bytes and is never split; keep each value under 10 GB by \
             splicing more key columns into the partition key, e.g. PRIMARY KEY (({}){rest})",
            p.approx_bytes,
            names[..=n].join(", "),
        )
    } else {
        format!("one row holds these {} bytes and is never split; keep fewer versions or columns per row", p.approx_bytes)
    })
}

fn show(v: &PkValue) -> String {
    match v {
        PkValue::Integer(i) => i.to_string(),
        PkValue::String(s) => format!("'{}'", s.replace('\'', "''")),
        PkValue::Binary(b) => format!("'\\x{}'", b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    }
}
