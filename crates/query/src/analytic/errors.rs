//! DataFusion's errors as the PostgreSQL errors they are.

use super::*;

/// DataFusion's error as the PostgreSQL error it is.
pub fn map_err(e: DataFusionError) -> QueryError {
    let root = e.find_root();
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
                SchemaError::FieldNotFound { field, .. } => QueryError::UndefinedColumn(field.name.clone()),
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
