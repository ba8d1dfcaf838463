//! `to_timestamp(text, 'YYYY-MM-DD HH24:MI:SS.US')`: PostgreSQL's template patterns become the strftime ones
//! DataFusion parses with. (`to_char` is PostgreSQL's own formatter, `analytic::to_char`.)

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Value};

pub(super) fn to_timestamp_pattern(e: &mut Expr) {
    let Expr::Function(f) = e else { return };
    if !f.name.0.last().is_some_and(|p| p.to_string().eq_ignore_ascii_case("to_timestamp")) {
        return;
    }
    let FunctionArguments::List(list) = &mut f.args else { return };
    if let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) = list.args.get_mut(1) {
        if let Value::SingleQuotedString(p) = &v.value {
            v.value = Value::SingleQuotedString(strftime_of(p));
        }
    }
}

/// PostgreSQL's date/time template as a strftime format.
fn strftime_of(pattern: &str) -> String {
    const MAP: &[(&str, &str)] = &[
        ("YYYY", "%Y"),
        ("HH24", "%H"),
        ("HH12", "%I"),
        ("Month", "%B"),
        ("MONTH", "%B"),
        ("DDD", "%j"),
        ("Mon", "%b"),
        ("MON", "%b"),
        ("Day", "%A"),
        ("DAY", "%A"),
        ("YY", "%y"),
        ("MM", "%m"),
        ("DD", "%d"),
        ("HH", "%I"),
        ("MI", "%M"),
        ("SS", "%S"),
        ("MS", "%3f"),
        ("US", "%6f"),
        ("Dy", "%a"),
        ("DY", "%a"),
        ("AM", "%p"),
        ("PM", "%p"),
        ("TZ", "%Z"),
    ];
    let mut out = String::new();
    let mut rest = pattern;
    'outer: while let Some(c) = rest.chars().next() {
        if c == '"' {
            // Quoted text is copied as it is.
            let end = rest[1..].find('"').map(|i| i + 1).unwrap_or(rest.len());
            out.push_str(&rest[1..end].replace('%', "%%"));
            rest = rest.get(end + 1..).unwrap_or("");
            continue;
        }
        for (pg, sf) in MAP {
            if let Some(r) = rest.strip_prefix(pg) {
                out.push_str(sf);
                rest = r;
                continue 'outer;
            }
        }
        if c == '%' {
            out.push_str("%%");
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}
