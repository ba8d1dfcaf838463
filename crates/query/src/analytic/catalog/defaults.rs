//! A column's DEFAULT as PostgreSQL shows it (`pg_get_expr(adbin)`, `information_schema.columns`,
//! psql's `\d`, pg_dump): PostgreSQL stores the expression coerced to the column's type and prints a
//! constant with the type it has, so `DEFAULT 'none'` on a varchar column reads back as
//! `'none'::character varying` and `DEFAULT '0'` on a bigint as `'0'::bigint`. Tabula keeps the text as
//! written; a constant is shown here as PostgreSQL's deparser (`get_const_expr`) prints it, any other
//! expression as written.

use sqlparser::ast::{CastKind, Expr, UnaryOperator, Value};

use crate::types::{Datum, SqlType};

/// What PostgreSQL would show for the default `text` of a column of type `ty`.
pub(super) fn shown_default(text: &str, ty: SqlType) -> String {
    constant(text, ty).unwrap_or_else(|| text.to_string())
}

fn constant(text: &str, ty: SqlType) -> Option<String> {
    let expr = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {}).try_with_sql(text).ok()?.parse_expr().ok()?;
    // A string literal takes the column's type (or the type it is cast to, when that is the column's):
    // PostgreSQL stores a constant of that type. A number keeps its own type (integer, bigint or
    // numeric, by its digits) and the cast to the column's is implicit, which PostgreSQL does not print.
    let (literal, of) = match &expr {
        Expr::Cast { kind: CastKind::DoubleColon | CastKind::Cast, expr, data_type, .. }
            if crate::expr::sql_type(data_type).ok() == Some(ty) =>
        {
            (string(expr)?, ty)
        }
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => (s.clone(), ty),
            Value::Number(n, _) => (n.clone(), number_type(n)),
            Value::Boolean(b) => (b.to_string(), SqlType::Bool),
            _ => return None,
        },
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => (format!("-{n}"), number_type(&format!("-{n}"))),
                _ => return None,
            },
            _ => return None,
        },
        _ => return None,
    };
    let value = Datum::parse(of, &literal).ok()?.to_pg_text(of)?;
    let quoted = || format!("'{}'::{}", value.replace('\'', "''"), of.pg_name());
    Some(match of {
        SqlType::Bool => if value == "t" { "true" } else { "false" }.to_string(),
        // Unadorned only where the parser reads it back as that type: a non-negative integer, and a
        // numeric written with a point or an exponent.
        SqlType::Int4 if !value.starts_with('-') => value,
        SqlType::Numeric if value.starts_with(|c: char| c.is_ascii_digit()) && value.contains(['.', 'e', 'E']) => value,
        _ => quoted(),
    })
}

fn string(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The type PostgreSQL's parser gives a number literal.
fn number_type(n: &str) -> SqlType {
    if n.contains(['.', 'e', 'E']) {
        SqlType::Numeric
    } else if n.parse::<i32>().is_ok() {
        SqlType::Int4
    } else if n.parse::<i64>().is_ok() {
        SqlType::Int8
    } else {
        SqlType::Numeric
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_read_back_as_postgresql_prints_them() {
        let cases = [
            ("'none'", SqlType::Varchar, "'none'::character varying"),
            ("'it''s'", SqlType::Text, "'it''s'::text"),
            ("'a'::text", SqlType::Text, "'a'::text"),
            ("7", SqlType::Int4, "7"),
            ("-5", SqlType::Int4, "'-5'::integer"),
            ("0", SqlType::Int8, "0"),
            ("'0'", SqlType::Int8, "'0'::bigint"),
            ("-5", SqlType::Int8, "'-5'::integer"),
            ("9000000000", SqlType::Int8, "'9000000000'::bigint"),
            ("0", SqlType::Numeric, "0"),
            ("'0'", SqlType::Numeric, "'0'::numeric"),
            ("1.50", SqlType::Numeric, "1.50"),
            ("1.5", SqlType::Float8, "1.5"),
            ("'1.5'", SqlType::Float8, "'1.5'::double precision"),
            ("true", SqlType::Bool, "true"),
            ("'f'", SqlType::Bool, "false"),
            ("'2020-02-29'", SqlType::Date, "'2020-02-29'::date"),
            ("now()", SqlType::Timestamptz, "now()"),
            ("CURRENT_TIMESTAMP", SqlType::Timestamptz, "CURRENT_TIMESTAMP"),
        ];
        for (written, ty, shown) in cases {
            assert_eq!(shown_default(written, ty), shown, "{written} as {ty:?}");
        }
    }
}
