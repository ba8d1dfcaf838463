//! `current_schema()`, `current_schemas(implicit)` and `pg_table_is_visible(oid)`: the schemas of the session's `search_path` that
//! exist, as PostgreSQL reads them. With `search_path` set to '' (pg_dump does so first), there is no
//! current schema (NULL) and `current_schemas(false)` is empty; `current_schemas(true)` adds pg_catalog,
//! which is searched first unless the path names it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use crate::settings::Settings;

/// The existing schemas `search_path` names, in order, names folded to lower case unless quoted.
/// `$user` names none: Tabula's users have no schemas of their own, and a user called `tabula` must not
/// get Tabula's read-only views as the schema where unqualified names are looked up and created.
pub fn schemas(settings: &Settings) -> Vec<String> {
    let path = settings.get("search_path").map(String::as_str).unwrap_or("\"$user\", public");
    let mut out: Vec<String> = Vec::new();
    for item in split(path) {
        let name = match item.strip_prefix('"').and_then(|i| i.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => item.to_lowercase(),
        };
        if name != "$user" && super::catalog::namespace_exists(&name) && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The comma-separated items of a search path, commas inside double quotes kept.
fn split(path: &str) -> Vec<String> {
    let (mut items, mut cur, mut quoted) = (Vec::new(), String::new(), false);
    for c in path.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => items.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    items.push(cur);
    items.into_iter().map(|i| i.trim().to_string()).filter(|i| !i.is_empty()).collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CurrentSchemas {
    /// `current_schemas` (one boolean argument) or `current_schema` (none).
    list: bool,
    schemas: Vec<String>,
    signature: Signature,
}

impl ScalarUDFImpl for CurrentSchemas {
    fn name(&self) -> &str {
        if self.list {
            "current_schemas"
        } else {
            "current_schema"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(if self.list { DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))) } else { DataType::Utf8 })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        if !self.list {
            return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(self.schemas.first().cloned())));
        }
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let implicit = datafusion::arrow::compute::cast(&arrays[0], &DataType::Boolean)?;
        let implicit = implicit.as_boolean();
        let mut out = ListBuilder::new(StringBuilder::new());
        for i in 0..args.number_rows {
            if implicit.is_null(i) {
                out.append_null();
                continue;
            }
            if implicit.value(i) && !self.schemas.iter().any(|s| s == "pg_catalog") {
                out.values().append_value("pg_catalog");
            }
            self.schemas.iter().for_each(|s| out.values().append_value(s));
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

/// The two functions for one statement of a session.
pub fn udfs(settings: &Settings) -> [ScalarUDF; 3] {
    let schemas = schemas(settings);
    [
        table_is_visible(schemas.clone()),
        ScalarUDF::new_from_impl(CurrentSchemas {
            list: false,
            schemas: schemas.clone(),
            signature: Signature::exact(vec![], Volatility::Stable),
        }),
        ScalarUDF::new_from_impl(CurrentSchemas {
            list: true,
            schemas,
            signature: Signature::exact(vec![DataType::Boolean], Volatility::Stable),
        }),
    ]
}

/// `pg_table_is_visible(oid)`: whether the relation's schema is searched (pg_catalog always is), so that
/// psql's `\dp` and `\dt` list what an unqualified name reaches, as PostgreSQL's do: information_schema's
/// and Tabula's own views only when `search_path` names their schema. (A relation shadowed by one of the
/// same name earlier in the path counts as visible here.)
fn table_is_visible(schemas: Vec<String>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        "pg_table_is_visible",
        vec![DataType::Int64],
        DataType::Boolean,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let out: datafusion::arrow::array::BooleanArray = oids
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .iter()
                .map(|o| {
                    o.map(|o| match super::catalog::relation_schema(o) {
                        "pg_catalog" => true,
                        schema => schemas.iter().any(|s| s == schema),
                    })
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Vec<String> {
        let s: Settings = Arc::new([("search_path".to_string(), p.to_string())].into());
        schemas(&s)
    }

    #[test]
    fn reads_the_path_as_postgres_does() {
        assert_eq!(path("\"$user\", public"), vec!["public"]);
        assert_eq!(path(""), Vec::<String>::new());
        assert_eq!(path("pg_catalog, PUBLIC"), vec!["pg_catalog", "public"]);
        assert_eq!(path("\"Public\", nosuch, tabula"), vec!["tabula"]);
        assert_eq!(path("\"$user\", tabula"), vec!["tabula"]);
    }
}
