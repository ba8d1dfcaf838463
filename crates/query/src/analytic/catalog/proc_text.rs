//! A function's signature as text, as psql's `\df` prints it: `pg_get_function_result`,
//! `pg_get_function_arguments` and `pg_get_function_identity_arguments`, read from pg_proc's rows (the
//! library's copy of PostgreSQL 15's functions) and pg_type's names.
//!
//! An argument prints as `[mode ]name type[ DEFAULT value]`: OUT, INOUT and VARIADIC modes named, IN not,
//! TABLE columns in the result instead (`TABLE(a integer)`), a set-returning function's result as `SETOF
//! type`. The identity arguments are the same without the defaults (OUT ones included, as PostgreSQL 15
//! prints them). Defaults are deparsed from pg_proc's node trees for boolean and integer constants; a function
//! with a default of another type is refused (0A000) rather than printed without it.

use std::collections::HashMap;
use std::sync::OnceLock;

use datafusion::arrow::array::Array;

use super::functions::quote_ident;
use crate::analytic::catalog::*;

use super::proc_defaults::deparse_defaults;

struct Proc {
    name: String,
    rettype: i64,
    retset: bool,
    kind: String,
    /// (mode, name, type) of every argument, OUT and TABLE ones included.
    args: Vec<(char, String, i64)>,
    ndefaults: usize,
    defaults: String,
}

struct Procs {
    procs: HashMap<i64, Proc>,
    /// typname and typelem by OID.
    types: HashMap<i64, (String, i64)>,
}

fn load() -> Result<Procs, String> {
    let tables = datafusion_pg_catalog::pg_catalog::PgCatalogStaticTables::try_new().map_err(|e| e.to_string())?;
    let text = |b: &RecordBatch, name: &str, row: usize| -> String {
        let Some(c) = b.column_by_name(name) else { return String::new() };
        let Ok(c) = datafusion::arrow::compute::cast(c, &DataType::Utf8) else { return String::new() };
        if c.is_null(row) {
            String::new()
        } else {
            c.as_string::<i32>().value(row).to_string()
        }
    };
    let mut procs = HashMap::new();
    for b in tables.pg_proc.data() {
        for row in 0..b.num_rows() {
            // Arrays as the library holds them: `['from_json', 'key', '']`, `[114, 25]`; names may be empty.
            let list = |name: &str| -> Vec<String> {
                let t = text(b, name, row);
                let t = t.trim().trim_start_matches(['[', '{']).trim_end_matches([']', '}']);
                if t.trim().is_empty() {
                    return Vec::new();
                }
                t.split(',').map(|s| s.trim().trim_matches('\'').trim_matches('"').to_string()).collect()
            };
            let all: Vec<i64> = list("proallargtypes").iter().filter_map(|s| s.parse().ok()).collect();
            // An oidvector: `114 25`.
            let types =
                if all.is_empty() { text(b, "proargtypes", row).split_whitespace().filter_map(|s| s.parse().ok()).collect() } else { all };
            let (names, modes) = (list("proargnames"), list("proargmodes"));
            let args = types
                .iter()
                .enumerate()
                .map(|(i, &t)| (modes.get(i).and_then(|m| m.chars().next()).unwrap_or('i'), names.get(i).cloned().unwrap_or_default(), t))
                .collect();
            let oid: i64 = text(b, "oid", row).parse().map_err(|_| "pg_proc row without an oid".to_string())?;
            procs.insert(
                oid,
                Proc {
                    name: text(b, "proname", row),
                    rettype: text(b, "prorettype", row).parse().unwrap_or(0),
                    retset: text(b, "proretset", row) == "true",
                    kind: text(b, "prokind", row),
                    args,
                    ndefaults: text(b, "pronargdefaults", row).parse().unwrap_or(0),
                    defaults: text(b, "proargdefaults", row),
                },
            );
        }
    }
    let mut types = HashMap::new();
    for b in tables.pg_type.data() {
        for row in 0..b.num_rows() {
            let oid: i64 = text(b, "oid", row).parse().unwrap_or(0);
            types.insert(oid, (text(b, "typname", row), text(b, "typelem", row).parse().unwrap_or(0)));
        }
    }
    Ok(Procs { procs, types })
}

fn procs() -> DfResult<&'static Procs> {
    static PROCS: OnceLock<Result<Procs, String>> = OnceLock::new();
    PROCS.get_or_init(load).as_ref().map_err(|e| DataFusionError::Execution(format!("pg_proc: {e}")))
}

impl Procs {
    /// `format_type(oid, NULL)` of a built-in type.
    fn type_name(&self, oid: i64) -> String {
        let Some((name, elem)) = self.types.get(&oid) else { return "???".into() };
        if name.starts_with('_') && *elem != 0 {
            return format!("{}[]", self.type_name(*elem));
        }
        match name.as_str() {
            "bool" => "boolean",
            "int2" => "smallint",
            "int4" => "integer",
            "int8" => "bigint",
            "float4" => "real",
            "float8" => "double precision",
            "varchar" => "character varying",
            "bpchar" => "character",
            "varbit" => "bit varying",
            "timestamp" => "timestamp without time zone",
            "timestamptz" => "timestamp with time zone",
            "time" => "time without time zone",
            "timetz" => "time with time zone",
            // Names that are keywords print quoted.
            "char" => "\"char\"",
            "any" => "\"any\"",
            other => return other.to_string(),
        }
        .into()
    }

    fn result(&self, p: &Proc) -> Option<String> {
        if p.kind == "p" {
            return None;
        }
        let table: Vec<String> =
            p.args.iter().filter(|a| a.0 == 't').map(|(_, n, t)| format!("{} {}", quote_ident(n), self.type_name(*t))).collect();
        if !table.is_empty() {
            return Some(format!("TABLE({})", table.join(", ")));
        }
        Some(format!("{}{}", if p.retset { "SETOF " } else { "" }, self.type_name(p.rettype)))
    }

    fn arguments(&self, p: &Proc, identity: bool) -> DfResult<String> {
        let inputs = p.args.iter().filter(|a| matches!(a.0, 'i' | 'b' | 'v')).count();
        let defaults = if identity || p.ndefaults == 0 { Vec::new() } else { deparse_defaults(&p.name, &p.defaults, p.ndefaults)? };
        let mut input = 0;
        let mut out = Vec::new();
        for (mode, name, ty) in &p.args {
            let prefix = match mode {
                't' => continue,
                'o' => "OUT ",
                'b' => "INOUT ",
                'v' => "VARIADIC ",
                _ => "",
            };
            let mut arg = format!(
                "{prefix}{}{}",
                if name.is_empty() { String::new() } else { format!("{} ", quote_ident(name)) },
                self.type_name(*ty)
            );
            if *mode != 'o' {
                if let Some(d) = (input + defaults.len()).checked_sub(inputs).and_then(|i| defaults.get(i)) {
                    arg.push_str(&format!(" DEFAULT {d}"));
                }
                input += 1;
            }
            out.push(arg);
        }
        Ok(out.join(", "))
    }
}

#[derive(Clone, Copy)]
enum Part {
    Result,
    Arguments,
    IdentityArguments,
}

fn udf(name: &str, part: Part) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let oids = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            let all = procs()?;
            let mut out = Vec::with_capacity(oids.len());
            for oid in oids.iter() {
                let Some(p) = oid.and_then(|o| all.procs.get(&o)) else {
                    out.push(None);
                    continue;
                };
                out.push(match part {
                    Part::Result => all.result(p),
                    Part::Arguments => Some(all.arguments(p, false)?),
                    Part::IdentityArguments => Some(all.arguments(p, true)?),
                });
            }
            Ok(ColumnarValue::Array(Arc::new(datafusion::arrow::array::StringArray::from(out))))
        }),
    )
}

pub(super) fn proc_udfs() -> Vec<ScalarUDF> {
    vec![
        FormatType::udf(),
        udf("pg_get_function_result", Part::Result),
        udf("pg_get_function_arguments", Part::Arguments),
        udf("pg_get_function_identity_arguments", Part::IdentityArguments),
    ]
}

/// `format_type`: the library's, which names the common types and their modifiers (`character varying(10)`),
/// with the types it does not know (pseudo-types such as `anycompatible`, which psql's `\do` and `\df` print)
/// named from pg_type instead of as `oid(2776)`, OID 0 and unknown OIDs as PostgreSQL prints them (`-`,
/// `???`), and a numeric's scale always (`numeric(10,0)`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct FormatType {
    signature: Signature,
}

impl FormatType {
    pub(super) fn udf() -> ScalarUDF {
        let inner = datafusion_pg_catalog::pg_catalog::format_type::create_format_type_udf();
        ScalarUDF::new_from_impl(FormatType { signature: inner.signature().clone() })
    }
}

impl ScalarUDFImpl for FormatType {
    fn name(&self) -> &str {
        "format_type"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let rows = args.number_rows;
        let oids = args.args[0].clone().into_array(rows)?;
        let oids = datafusion::arrow::compute::cast(&oids, &DataType::Int64)?;
        let oids = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let library = datafusion_pg_catalog::pg_catalog::format_type::create_format_type_udf();
        let names = library.invoke_with_args(args)?.into_array(rows)?;
        let names = names.as_string::<i32>();
        let all = procs()?;
        let out: datafusion::arrow::array::StringArray = (0..rows)
            .map(|i| {
                if names.is_null(i) {
                    return None;
                }
                let name = names.value(i);
                // `numeric(10,0)`, where the library prints `numeric(10)`.
                if let Some(p) = name.strip_prefix("numeric(").and_then(|r| r.strip_suffix(')')).filter(|p| !p.contains(',')) {
                    return Some(format!("numeric({p},0)"));
                }
                match oids.is_valid(i).then(|| oids.value(i)) {
                    Some(oid) if name == format!("oid({oid})") => Some(match oid {
                        0 => "-".to_string(),
                        oid if all.types.contains_key(&oid) => all.type_name(oid),
                        _ => "???".to_string(),
                    }),
                    _ => Some(name.to_string()),
                }
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}
