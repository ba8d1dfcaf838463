//! DataFusion's errors as the PostgreSQL errors they are.

use super::*;

/// DataFusion's error as the PostgreSQL error it is.
pub fn map_err(e: DataFusionError) -> QueryError {
    // Where the text names what the error is about, when DataFusion kept it (`collect_spans`).
    let span = e.diagnostic().and_then(|d| d.span);
    let root = e.find_root();
    let internal = matches!(
        root,
        DataFusionError::Plan(_) | DataFusionError::Internal(_) | DataFusionError::Execution(_) | DataFusionError::ArrowError(..)
    );
    if let Some(q) = reworded(&root.to_string()).filter(|_| internal) {
        return q;
    }
    match root {
        DataFusionError::External(inner) => {
            if let Some(q) = inner.downcast_ref::<QueryError>() {
                return q.clone();
            }
            QueryError::Internal(inner.to_string())
        }
        DataFusionError::Shared(inner) => map_err(inner.as_ref().clone_shallow()),
        DataFusionError::SQL(pe, _) => QueryError::Syntax(pe.to_string()),
        DataFusionError::NotImplemented(m) => QueryError::NotSupported(m.clone()),
        DataFusionError::SchemaError(se, _) => {
            use datafusion::common::SchemaError;
            match se.as_ref() {
                // A qualifier no table of the query goes by: PostgreSQL names the qualifier (42P01).
                SchemaError::FieldNotFound { field, valid_fields } => match &field.relation {
                    Some(q) if !valid_fields.iter().any(|f| f.relation.as_ref().is_some_and(|r| r.table() == q.table())) => {
                        QueryError::UndefinedTableReference(format!("missing FROM-clause entry for table \"{}\"", q.table()))
                    }
                    _ => {
                        let e = match &field.relation {
                            Some(q) => QueryError::UndefinedColumnOf { qualifier: q.table().to_string(), column: field.name.clone() },
                            None => QueryError::UndefinedColumn(field.name.clone()),
                        };
                        // Where the text names it, checked against the name (or its qualifier) written there.
                        let written = field.relation.as_ref().map_or(field.name.as_str(), |r| r.table());
                        match field.spans().first().or(span) {
                            Some(span) => e.at_location(span.start.line, span.start.column, written),
                            None => e,
                        }
                    }
                },
                SchemaError::AmbiguousReference { field } => QueryError::AmbiguousColumn(field.name.clone()),
                other => QueryError::Engine { sqlstate: "42P10", message: other.to_string() },
            }
        }
        DataFusionError::ArrowError(ae, _) => {
            use datafusion::arrow::error::ArrowError;
            match ae.as_ref() {
                ArrowError::DivideByZero => QueryError::DivisionByZero,
                ArrowError::CastError(m) | ArrowError::ParseError(m) => QueryError::InvalidText(m.clone()),
                ArrowError::ArithmeticOverflow(m) => QueryError::NumericOutOfRange(m.clone()),
                ArrowError::ComputeError(m) if m.to_lowercase().contains("overflow") => QueryError::NumericOutOfRange(m.clone()),
                other => QueryError::Engine { sqlstate: "22000", message: other.to_string() },
            }
        }
        DataFusionError::Plan(m) => classify_plan_error(m),
        DataFusionError::Execution(m) => {
            let l = m.to_lowercase();
            if l.contains("divide by zero") || l.contains("division by zero") {
                QueryError::DivisionByZero
            } else if l.contains("overflow") {
                QueryError::NumericOutOfRange(m.clone())
            } else if l.contains("cast") || l.contains("parse") {
                QueryError::InvalidText(m.clone())
            } else {
                QueryError::Engine { sqlstate: "22000", message: m.clone() }
            }
        }
        DataFusionError::ResourcesExhausted(m) => QueryError::Engine { sqlstate: "53200", message: m.clone() },
        other => QueryError::Internal(other.message().to_string()),
    }
}

fn classify_plan_error(m: &str) -> QueryError {
    let l = m.to_lowercase();
    if let Some(rest) = m.strip_prefix("table '").and_then(|r| r.split_once("' not found")) {
        let name = rest.0.rsplit('.').next().unwrap_or(rest.0);
        return QueryError::UndefinedTable(name.to_string());
    }
    // "Invalid function 'f'.\nDid you mean 'g'?": worded as PostgreSQL words it.
    if let Some((name, _)) = m.strip_prefix("Invalid function '").and_then(|r| r.split_once('\'')) {
        return QueryError::UndefinedFunction(name.to_string());
    }
    if l.contains("invalid function") || (l.contains("function") && l.contains("not found")) {
        return QueryError::Engine { sqlstate: "42883", message: m.to_string() };
    }
    // `integer * interval` and the like, which PostgreSQL has and DataFusion's arithmetic does not.
    if l.contains("temporal operation") || l.contains("interval arithmetic") {
        return QueryError::NotSupported(format!("this arithmetic of dates, times or intervals on the analytic route ({m})"));
    }
    if l.contains("coerc") || l.contains("cannot infer") || l.contains("type") && l.contains("mismatch") {
        return QueryError::Engine { sqlstate: "42804", message: m.to_string() };
    }
    if l.contains("group by") || l.contains("aggregate") {
        return QueryError::Engine { sqlstate: "42803", message: m.to_string() };
    }
    QueryError::Engine { sqlstate: "42601", message: m.to_string() }
}

/// DataFusion's messages that name its own types and internals (`sum(Utf8)`, `array_has(List(Int64), Utf8)`,
/// `ScalarSubquery(<subquery>)`), reworded as PostgreSQL words the same error.
fn reworded(m: &str) -> Option<QueryError> {
    // "No function matches the given name and argument types 'sum(Utf8)'."
    if let Some((call, _)) = m.split_once("argument types '").and_then(|(_, r)| r.split_once("'")) {
        let (name, args) = call.split_once('(')?;
        let args: Vec<String> = split_top(args.strip_suffix(')')?).iter().map(|a| pg_type_name(a)).collect();
        // `x = ANY(array)`: DataFusion's array_has of the array and the element.
        if let ("array_has", [array, element]) = (name, args.as_slice()) {
            return Some(QueryError::UndefinedOperator(format!("{element} = {}", array.strip_suffix("[]").unwrap_or(array))));
        }
        return Some(QueryError::UndefinedFunction(format!("{name}({})", args.join(", "))));
    }
    // "... column \"a.k\" must appear in the GROUP BY clause ..."
    if let Some((_, rest)) = m.split_once("column \"").filter(|_| m.contains("must appear in the GROUP BY clause")) {
        let column = rest.split_once('"')?.0;
        return Some(QueryError::Engine {
            sqlstate: "42803",
            message: format!("column \"{column}\" must appear in the GROUP BY clause or be used in an aggregate function"),
        });
    }
    if ["ScalarSubquery", "Exists", "InSubquery"].iter().any(|e| m.contains(&format!("does not support logical expression {e}"))) {
        return Some(QueryError::NotSupported(
            "a subquery that names the outer query's columns where the analytic route cannot decorrelate it (in HAVING, or beside \
             aggregates)"
                .into(),
        ));
    }
    // "Cannot cast string 'a' to value of Int64 type"
    if let Some((value, ty)) = m.split_once("Cannot cast string '").and_then(|(_, r)| r.split_once("' to value of ")) {
        let ty = ty.split_once(" type")?.0;
        return Some(QueryError::InvalidText(format!("invalid input syntax for type {}: \"{value}\"", pg_type_name(ty))));
    }
    // An integer out of its type's range: "Can't cast value 40000 to type Int16", "Int32Array overflow on
    // abs(-2147483648)", "Overflow happened on: - -2147483648".
    let integer = |ty: &str| match ty {
        "Int16" => Some("smallint"),
        "Int32" => Some("integer"),
        "Int64" => Some("bigint"),
        _ => None,
    };
    let out_of_range = |name: &str| Some(QueryError::NumericOutOfRange(format!("{name} out of range")));
    if let Some(name) = m.split_once("Can't cast value ").and_then(|(_, r)| r.split_once(" to type ")).and_then(|(_, t)| integer(t.trim()))
    {
        return out_of_range(name);
    }
    if let Some(name) = m.split_once("Array overflow on ").and_then(|(l, _)| integer(l.rsplit(' ').next().unwrap_or(l))) {
        return out_of_range(name);
    }
    if let Some(v) = m.split_once("Overflow happened on: - ").map(|(_, v)| v.trim()) {
        return match v {
            "-32768" => out_of_range("smallint"),
            "-2147483648" => out_of_range("integer"),
            "-9223372036854775808" => out_of_range("bigint"),
            _ => None,
        };
    }
    None
}

/// A comma-separated list split at its top level (`List(Int64), Decimal128(38, 10)` is two items).
fn split_top(s: &str) -> Vec<&str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

/// An Arrow type as DataFusion's messages name it (`Utf8`, `List(Int64)`), as PostgreSQL names it.
fn pg_type_name(arrow: &str) -> String {
    let t = arrow.trim();
    if let Some(inner) = t.strip_prefix("List(").and_then(|r| r.strip_suffix(')')) {
        return format!("{}[]", pg_type_name(inner.trim_start_matches("nullable ")));
    }
    match t {
        "Null" => "unknown".into(),
        _ => t.parse::<DataType>().map(|dt| super::arrow::sql_type_of(&dt).pg_name().to_string()).unwrap_or_else(|_| t.to_string()),
    }
}

trait CloneShallow {
    fn clone_shallow(&self) -> DataFusionError;
}

impl CloneShallow for DataFusionError {
    /// A shared error as an owned one with the same message and kind where it matters for SQLSTATEs.
    fn clone_shallow(&self) -> DataFusionError {
        match self {
            DataFusionError::Plan(m) => DataFusionError::Plan(m.clone()),
            DataFusionError::Execution(m) => DataFusionError::Execution(m.clone()),
            DataFusionError::NotImplemented(m) => DataFusionError::NotImplemented(m.clone()),
            other => DataFusionError::Internal(other.message().to_string()),
        }
    }
}
