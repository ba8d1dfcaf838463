//! The catalog functions DataFusion lacks or gets wrong for Tabula: OIDs to names and back, object
//! descriptions, relation sizes, `format_type`, and others PostgreSQL's tools call.

use crate::analytic::catalog::*;

/// A Tabula table's or primary key's name by OID.
fn relation_name(db: &dyn Source, oid: i64) -> Option<String> {
    // pg_catalog is always on the search path: its relations print unqualified, as PostgreSQL prints them.
    if let Some(name) = super::pg_catalog_name(oid) {
        return Some(name.to_string());
    }
    match tabula_object(db, oid)? {
        (name, OidPart::Table) => Some(quote_ident(&name)),
        (name, OidPart::PrimaryKeyIndex) => Some(format!("{name}_pkey")),
        (_, OidPart::PrimaryKeyConstraint | OidPart::IndexConstraint(_) | OidPart::Check(_) | OidPart::ForeignKey(_)) => None,
        (name, OidPart::Index(i)) => Some(quote_ident(&db.table(&name).ok()?.indexes.get(i)?.name)),
    }
}

/// Looks up what an OID names, for pg_get_indexdef / pg_get_constraintdef.
fn describe_oid(db: &dyn Source, oid: i64, what: OidText, qualified: bool) -> Option<String> {
    let (name, part) = tabula_object(db, oid)?;
    if what == OidText::View {
        return db.view(&name)?.view.as_ref().map(|v| v.definition(qualified));
    }
    let t = db.table(&name).ok()?;
    let cols: Vec<String> = t.pk.iter().map(|&c| quote_ident(&t.columns[c].name)).collect();
    match (what, part) {
        (OidText::Index, OidPart::PrimaryKeyIndex) => Some(index_def(&t, None)),
        (OidText::Constraint, OidPart::PrimaryKeyConstraint) => Some(format!("PRIMARY KEY ({})", cols.join(", "))),
        (OidText::Index, OidPart::Index(i)) => Some(index_def(&t, Some(t.indexes.get(i)?))),
        (OidText::Constraint, OidPart::IndexConstraint(i)) => {
            let ix = t.indexes.get(i)?;
            let cols: Vec<String> = ix.columns.iter().map(|&c| quote_ident(&t.columns[c].name)).collect();
            let nulls = if ix.nulls_not_distinct { "NULLS NOT DISTINCT " } else { "" };
            Some(format!("UNIQUE {nulls}({})", cols.join(", ")))
        }
        (OidText::Constraint, OidPart::Check(i)) => Some(check_def(t.checks.get(i)?)),
        (OidText::Constraint, OidPart::ForeignKey(i)) => Some(t.foreign_keys.get(i)?.definition(quote_ident, qualified)),
        _ => None,
    }
}

/// `pg_get_constraintdef` of a CHECK constraint, parenthesized as PostgreSQL deparses it: each operator
/// in parentheses of its own (`CHECK (((a > 0) AND (b > a)))`). PostgreSQL also prints the casts it
/// inferred (`(0)::numeric`), which the text as written does not hold.
pub(super) fn check_def(c: &crate::schema::CheckDef) -> String {
    use sqlparser::ast::{Expr, UnaryOperator};
    fn deparse(e: &Expr) -> String {
        match e {
            Expr::BinaryOp { left, op, right } => format!("({} {op} {})", deparse(left), deparse(right)),
            Expr::UnaryOp { op: UnaryOperator::Not, expr } => format!("(NOT {})", deparse(expr)),
            Expr::IsNull(e) => format!("({} IS NULL)", deparse(e)),
            Expr::IsNotNull(e) => format!("({} IS NOT NULL)", deparse(e)),
            Expr::Nested(e) => deparse(e),
            e => e.to_string(),
        }
    }
    let parsed =
        sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(&c.expr).and_then(|mut p| p.parse_expr());
    format!("CHECK ({})", parsed.map_or_else(|_| c.expr.clone(), |e| deparse(&e)))
}

/// `pg_get_indexdef` of table `t`'s primary key (`None`) or of one of its secondary indexes.
pub(super) fn index_def(t: &TableSchema, index: Option<&crate::schema::Index>) -> String {
    let (unique, name, columns) = match index {
        None => ("UNIQUE ", format!("{}_pkey", t.name), &t.pk),
        Some(ix) => (if ix.unique { "UNIQUE " } else { "" }, ix.name.clone(), &ix.columns),
    };
    let desc = |i: usize| index.is_some_and(|ix| ix.desc(i));
    let cols: Vec<String> =
        columns.iter().enumerate().map(|(i, &c)| quote_ident(&t.columns[c].name) + if desc(i) { " DESC" } else { "" }).collect();
    let include = match index.map(|ix| &ix.include).filter(|i| !i.is_empty()) {
        Some(i) => format!(" INCLUDE ({})", i.iter().map(|&c| quote_ident(&t.columns[c].name)).collect::<Vec<_>>().join(", ")),
        None => String::new(),
    };
    let nulls = if index.is_some_and(|ix| ix.nulls_not_distinct) { " NULLS NOT DISTINCT" } else { "" };
    // As PostgreSQL prints an index's storage parameters (pg_dump's output makes the same index again).
    let with = if index.is_some_and(|ix| ix.local) { " WITH (local='true')" } else { "" };
    let (name, table) = (quote_ident(&name), quote_ident(&t.name));
    format!("CREATE {unique}INDEX {name} ON public.{table} USING btree ({}){include}{nulls}{with}", cols.join(", "))
}

pub(crate) fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OidText {
    Index,
    Constraint,
    /// A view's query (`crate::views`); NULL for any other OID.
    View,
}

/// `pg_get_indexdef(oid [, column, pretty])`, `pg_get_constraintdef(oid [, pretty])` and
/// `pg_get_viewdef(oid [, pretty])` over Tabula's catalog.
#[derive(Debug)]
pub struct OidTextUdf {
    what: OidText,
    signature: Signature,
    db: Weak<dyn Source>,
    /// Tables named with their schema: it is not on the session's search path.
    qualified: bool,
}

impl PartialEq for OidTextUdf {
    fn eq(&self, other: &Self) -> bool {
        self.what == other.what && self.qualified == other.qualified
    }
}
impl Eq for OidTextUdf {}
impl Hash for OidTextUdf {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.what.hash(state)
    }
}

impl OidTextUdf {
    fn new(what: OidText, db: Weak<dyn Source>, qualified: bool) -> Self {
        let mut sigs = Vec::new();
        for oid in [DataType::Int32, DataType::Int64] {
            sigs.push(TypeSignature::Exact(vec![oid.clone()]));
            sigs.push(TypeSignature::Exact(vec![oid.clone(), DataType::Boolean]));
            sigs.push(TypeSignature::Exact(vec![oid.clone(), DataType::Int32, DataType::Boolean]));
            sigs.push(TypeSignature::Exact(vec![oid, DataType::Int64, DataType::Boolean]));
        }
        OidTextUdf { what, signature: Signature::one_of(sigs, Volatility::Stable), db, qualified }
    }
}

impl ScalarUDFImpl for OidTextUdf {
    fn name(&self) -> &str {
        match self.what {
            OidText::Index => "pg_get_indexdef",
            OidText::Constraint => "pg_get_constraintdef",
            OidText::View => "pg_get_viewdef",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
        let oids = oids.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        let db = self.db.upgrade();
        let out: StringArray =
            oids.iter().map(|o| o.and_then(|o| db.as_ref().and_then(|db| describe_oid(&**db, o, self.what, self.qualified)))).collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// `pg_get_constraintdef` and `pg_get_viewdef` for a session whose search path does not name `public`
/// (pg_dump's): they name the tables a foreign key references, or a view reads, with their schema.
/// Registered for each such statement.
pub fn qualified_definitions(db: Weak<dyn Source>) -> [ScalarUDF; 2] {
    [
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::Constraint, db.clone(), true)),
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::View, db, true)),
    ]
}

/// `f(name) -> oid`: NULL when nothing has that name.
/// Looks a name up, with the database when it is still there.
type NameLookup = fn(Option<Arc<dyn Source>>, &str) -> Option<i32>;

fn name_to_oid(name: &str, db: Weak<dyn Source>, f: NameLookup) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Int32,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let names = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
            let out: Int32Array = names.as_string::<i32>().iter().map(|n| n.and_then(|n| f(db.upgrade(), n))).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// The name a relation OID prints as (`oid::regclass`): Tabula's tables and their keys by name, others
/// by number.
fn oid_to_name(name: &str, db: Weak<dyn Source>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Int64],
        DataType::Utf8,
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let oids = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
            let db = db.upgrade();
            let out: StringArray = oids
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                .iter()
                .map(|o| o.map(|o| db.as_ref().and_then(|db| relation_name(&**db, o)).unwrap_or_else(|| o.to_string())))
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// PostgreSQL's quote_literal: single quotes doubled; with a backslash, an escape string (`E'...'`)
/// with backslashes doubled.
pub(crate) fn quote_literal(s: &str) -> String {
    let quoted = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

fn text_to_text(name: &str, f: fn(&str) -> Option<String>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        name,
        vec![DataType::Utf8],
        DataType::Utf8,
        Volatility::Immutable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let text = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
            let out: StringArray = text.as_string::<i32>().iter().map(|v| v.and_then(f)).collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// `acldefault(kind, owner)`: the privileges an object of that kind has before any GRANT or REVOKE, as
/// PostgreSQL's `acldefault` gives them (pg_dump compares each ACL with it to write only the changes).
fn acl_default(kind: &str, owner: &str) -> Vec<String> {
    let owner = crate::roles::acl_name(owner);
    let (public, own) = match kind {
        "r" => ("", "arwdDxt"),
        "s" => ("", "rwU"),
        "d" => ("Tc", "CTc"),
        "f" => ("X", "X"),
        "l" | "T" => ("U", "U"),
        "L" => ("", "rw"),
        "n" => ("", "UC"),
        "t" => ("", "C"),
        "F" | "S" => ("", "U"),
        _ => ("", ""),
    };
    let mut items = Vec::new();
    if !public.is_empty() {
        items.push(format!("={public}/{owner}"));
    }
    if !own.is_empty() {
        items.push(format!("{owner}={own}/{owner}"));
    }
    items
}

fn acldefault_udf(db: Weak<dyn Source>) -> ScalarUDF {
    datafusion::logical_expr::create_udf(
        "acldefault",
        vec![DataType::Utf8, DataType::Int64],
        DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
        Volatility::Stable,
        Arc::new(move |args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let kinds = datafusion::arrow::compute::cast(&arrays[0], &DataType::Utf8)?;
            let owners = datafusion::arrow::compute::cast(&arrays[1], &DataType::Int64)?;
            let roles = db.upgrade().map(|db| db.roles().all()).unwrap_or_default();
            let mut out = ListBuilder::new(StringBuilder::new());
            for (kind, owner) in kinds.as_string::<i32>().iter().zip(owners.as_primitive::<datafusion::arrow::datatypes::Int64Type>()) {
                let (Some(kind), Some(owner)) = (kind, owner) else {
                    out.append_null();
                    continue;
                };
                // An owner that no longer exists prints as its number, as in PostgreSQL.
                let name = roles.iter().find(|r| r.oid as i64 == owner).map_or_else(|| owner.to_string(), |r| r.name.clone());
                acl_default(kind, &name).iter().for_each(|i| out.values().append_value(i));
                out.append(true);
            }
            Ok(ColumnarValue::Array(Arc::new(out.finish())))
        }),
    )
}

pub fn catalog_udfs(db: Weak<dyn Source>) -> Vec<ScalarUDF> {
    let db_for_names = db.clone();
    let db_for_regclass = db.clone();
    let db_for_sizes = db.clone();
    fn int_to_text(name: &str, f: impl Fn(i64) -> Option<String> + Send + Sync + 'static) -> ScalarUDF {
        datafusion::logical_expr::create_udf(
            name,
            vec![DataType::Int64],
            DataType::Utf8,
            Volatility::Stable,
            Arc::new(move |args: &[ColumnarValue]| {
                let arrays = ColumnarValue::values_to_arrays(args)?;
                let ints = datafusion::arrow::compute::cast(&arrays[0], &DataType::Int64)?;
                let out: StringArray =
                    ints.as_primitive::<datafusion::arrow::datatypes::Int64Type>().iter().map(|v| v.and_then(&f)).collect();
                Ok(ColumnarValue::Array(Arc::new(out)))
            }),
        )
    }
    let db_for_users = db.clone();
    let db_for_views = db.clone();
    vec![
        acldefault_udf(db.clone()),
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::Index, db.clone(), false)),
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::Constraint, db, false)),
        // Expressions are stored as their SQL text: pg_get_expr(text, relation [, pretty]) is that text.
        ScalarUDF::new_from_impl(ExprTextUdf { signature: Signature::variadic_any(Volatility::Stable) }),
        // Tabula keeps no comments; every type, function and collation is visible.
        ConstUdf::udf("obj_description", ScalarValue::Utf8(None)),
        ConstUdf::udf("col_description", ScalarValue::Utf8(None)),
        ConstUdf::udf("shobj_description", ScalarValue::Utf8(None)),
        ScalarUDF::new_from_impl(OidTextUdf::new(OidText::View, db_for_views, false)),
        // Tabula has no triggers or statistics objects.
        ConstUdf::udf("pg_get_triggerdef", ScalarValue::Utf8(None)),
        ConstUdf::udf("pg_get_statisticsobjdef", ScalarValue::Utf8(None)),
        ConstUdf::udf("pg_type_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_function_is_visible", ScalarValue::Boolean(Some(true))),
        // Every operator is pg_catalog's, which is always on the search path.
        ConstUdf::udf("pg_operator_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_collation_is_visible", ScalarValue::Boolean(Some(true))),
        ConstUdf::udf("pg_is_in_recovery", ScalarValue::Boolean(Some(false))),
        ScalarUDF::new_from_impl(JsonBuildObject { signature: Signature::variadic_any(Volatility::Immutable) }),
        name_to_oid("to_regtype", db_for_names.clone(), |_, name| {
            crate::types::SqlType::parse(name).filter(|t| *t != SqlType::Unknown).map(|t| t.oid() as i32)
        }),
        name_to_oid("to_regclass", db_for_names, |db, name| {
            let db = db?;
            let name = name.strip_prefix("public.").unwrap_or(name).trim_matches('"');
            db.store().table_id(name).ok().map(table_oid)
        }),
        oid_to_name("regclass_name", db_for_regclass),
        ScalarUDF::new_from_impl(RegclassCheck { signature: Signature::any(2, Volatility::Immutable) }),
        int_to_text("pg_size_pretty", |n| Some(super::sizes::size_pretty(n))),
        text_to_text("quote_literal", |s| Some(quote_literal(s))),
        pg_text(),
        super::sizes::relation_bytes("pg_table_size", db_for_sizes.clone()),
        super::sizes::relation_bytes("pg_relation_size", db_for_sizes.clone()),
        super::sizes::relation_bytes("pg_total_relation_size", db_for_sizes.clone()),
        super::sizes::database_bytes(db_for_sizes),
        int_to_text("pg_get_userbyid", move |oid| {
            let role = db_for_users.upgrade().and_then(|db| db.roles().all().into_iter().find(|r| r.oid as i64 == oid));
            Some(role.map_or_else(|| format!("unknown (OID={oid})"), |r| r.name))
        }),
        int_to_text("pg_encoding_to_char", |e| {
            Some(
                if e == UTF8_ENCODING as i64 {
                    "UTF8"
                } else if e == 0 {
                    "SQL_ASCII"
                } else {
                    ""
                }
                .to_string(),
            )
        }),
    ]
    .into_iter()
    .chain(super::proc_text::proc_udfs())
    .collect()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ExprTextUdf {
    signature: Signature,
}

impl ScalarUDFImpl for ExprTextUdf {
    fn name(&self) -> &str {
        "pg_get_expr"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let first = arrays.first().ok_or_else(|| DataFusionError::Plan("pg_get_expr needs an expression".into()))?;
        Ok(ColumnarValue::Array(datafusion::arrow::compute::cast(first, &DataType::Utf8)?))
    }
}

/// A catalog function whose answer does not depend on its arguments in Tabula.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ConstUdf {
    name: &'static str,
    value: ScalarValue,
    signature: Signature,
}

impl ConstUdf {
    fn udf(name: &'static str, value: ScalarValue) -> ScalarUDF {
        // Nullary too: `pg_is_in_recovery()` takes no argument, and variadic_any wants one.
        let signature = Signature::one_of(vec![TypeSignature::Nullary, TypeSignature::VariadicAny], Volatility::Stable);
        ScalarUDF::new_from_impl(ConstUdf { name, value, signature })
    }
}

impl ScalarUDFImpl for ConstUdf {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(self.value.data_type())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value.clone()))
    }
}

/// `json_build_object(k1, v1, ...)`: a json value (text typed json for the client).
#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonBuildObject {
    signature: Signature,
}

impl ScalarUDFImpl for JsonBuildObject {
    fn name(&self) -> &str {
        "json_build_object"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: datafusion::logical_expr::ReturnFieldArgs) -> DfResult<Arc<Field>> {
        Ok(Arc::new(crate::analytic::arrow::field(self.name(), SqlType::Json, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        if !args.args.len().is_multiple_of(2) {
            return Err(DataFusionError::Plan("argument list must have even number of elements".into()));
        }
        let n = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let mut parts = Vec::new();
            for pair in arrays.chunks(2) {
                let key = ScalarValue::try_from_array(&pair[0], row)?;
                let value = ScalarValue::try_from_array(&pair[1], row)?;
                parts.push(format!("{} : {}", json_string(&key.to_string()), json_value(&value)));
            }
            out.push(format!("{{{}}}", parts.join(", ")));
        }
        Ok(ColumnarValue::Array(Arc::new(StringArray::from(out))))
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_value(v: &ScalarValue) -> String {
    if v.is_null() {
        return "null".into();
    }
    match v {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        v if v.data_type().is_numeric() => v.to_string(),
        v => json_string(&v.to_string()),
    }
}

/// `x::text` (see the rewrite's `float_text_cast`): floats and arrays as PostgreSQL prints them (Arrow's
/// cast prints `1000.0` and `[a, b c]` where PostgreSQL prints `1000` and `{a,"b c"}`), anything else as
/// Arrow casts it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PgText {
    signature: Signature,
}

fn pg_text() -> ScalarUDF {
    ScalarUDF::new_from_impl(PgText { signature: Signature::any(1, Volatility::Immutable) })
}

impl ScalarUDFImpl for PgText {
    fn name(&self) -> &str {
        "pg_text"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let a = &arrays[0];
        let out: ArrayRef = match a.data_type() {
            DataType::Float64 | DataType::Float32 => {
                let ty = if *a.data_type() == DataType::Float32 { SqlType::Float4 } else { SqlType::Float8 };
                let f = datafusion::arrow::compute::cast(a, &DataType::Float64)?;
                let text: StringArray = f
                    .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                    .iter()
                    .map(|v| v.and_then(|v| crate::types::Datum::Float(v).to_pg_text(ty)))
                    .collect();
                Arc::new(text)
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) | DataType::ListView(_) => {
                let text = (0..a.len())
                    .map(|i| if a.is_null(i) { Ok(None) } else { crate::analytic::arrow::pg_text(a, i).map(Some) })
                    .collect::<crate::error::Result<StringArray>>()
                    .map_err(|e| DataFusionError::External(Box::new(e)))?;
                Arc::new(text)
            }
            _ => datafusion::arrow::compute::cast(a, &DataType::Utf8)?,
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// `'name'::regclass` of a relation that does not exist is 42P01, as PostgreSQL's regclass input raises,
/// not a NULL that compares with nothing: `tabula_regclass(oid, name)` passes the OID the name was
/// looked up as and raises where the lookup found none (see the rewrite's `casts`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct RegclassCheck {
    signature: Signature,
}

impl ScalarUDFImpl for RegclassCheck {
    fn name(&self) -> &str {
        "tabula_regclass"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> DfResult<DataType> {
        Ok(arg_types[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let names = datafusion::arrow::compute::cast(&arrays[1], &DataType::Utf8)?;
        let names = names.as_string::<i32>();
        if let Some(i) = (0..arrays[0].len()).find(|&i| arrays[0].is_null(i) && names.is_valid(i)) {
            return Err(DataFusionError::External(Box::new(crate::error::QueryError::UndefinedTable(names.value(i).to_string()))));
        }
        Ok(ColumnarValue::Array(arrays[0].clone()))
    }
}
