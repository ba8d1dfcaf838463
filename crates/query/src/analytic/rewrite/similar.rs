//! `x SIMILAR TO 'pattern'` as PostgreSQL matches it: the whole string, `%` any text, `_` one character,
//! `.` itself, and `|`, `*`, `+`, `?`, `{m,n}`, `()` and `[...]` as in a regular expression. DataFusion
//! matched the pattern as a regular expression anywhere in the string (`'ab' SIMILAR TO 'a'` was true,
//! `'abc' SIMILAR TO 'a_c'` false). The pattern becomes the regular expression PostgreSQL builds from it
//! (its `similar_escape`) and the test a `~` match. A pattern that is not a constant, or that marks a
//! substring with the escape and `"` (which only `SUBSTRING ... SIMILAR` uses), is refused.

use sqlparser::ast::{BinaryOperator, Expr, Value, ValueWithSpan};

/// The pattern's text and its escape character (`None`: no escape, `ESCAPE ''`), when built here.
fn pattern_of(pattern: &Expr, escape: Option<&ValueWithSpan>) -> Option<(String, Option<char>)> {
    let Expr::Value(ValueWithSpan { value: Value::SingleQuotedString(p), .. }) = pattern else { return None };
    let escape = match escape.map(|v| &v.value) {
        None => Some('\\'),
        Some(Value::SingleQuotedString(e)) if e.is_empty() => None,
        Some(Value::SingleQuotedString(e)) if e.chars().count() == 1 => e.chars().next(),
        _ => return None,
    };
    if let Some(c) = escape {
        if p.contains(&format!("{c}\"")) {
            return None;
        }
    }
    Some((p.clone(), escape))
}

/// PostgreSQL's regular expression for a SIMILAR TO pattern.
fn regex_of(pattern: &str, escape: Option<char>) -> String {
    let mut out = String::from("^(?:");
    let mut after_escape = false;
    let mut in_class = false;
    for c in pattern.chars() {
        if after_escape {
            out.push('\\');
            out.push(c);
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            if c == ']' {
                in_class = false;
            }
        } else {
            match c {
                '[' => {
                    out.push(c);
                    in_class = true;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                _ => out.push(c),
            }
        }
    }
    out.push_str(")$");
    out
}

/// Rewrites a SIMILAR TO with a constant pattern into a regular-expression match.
pub(super) fn similar_to(e: &mut Expr) {
    let Expr::SimilarTo { negated, expr, pattern, escape_char } = e else { return };
    let Some((p, escape)) = pattern_of(pattern, escape_char.as_ref()) else { return };
    let regex = Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(regex_of(&p, escape))));
    let op = if *negated { BinaryOperator::PGRegexNotMatch } else { BinaryOperator::PGRegexMatch };
    *e = Expr::BinaryOp { left: expr.clone(), op, right: Box::new(regex) };
}

/// Why a SIMILAR TO is refused, if it is.
pub(super) fn refusal(e: &Expr) -> Option<String> {
    match e {
        Expr::SimilarTo { pattern, escape_char, .. } if pattern_of(pattern, escape_char.as_ref()).is_none() => {
            Some("SIMILAR TO with a pattern that is not a constant, or that marks a substring (escape and \"), is not supported".into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_as_postgresql_builds_them() {
        assert_eq!(regex_of("a%", Some('\\')), "^(?:a.*)$");
        assert_eq!(regex_of("a_c.d", Some('\\')), "^(?:a.c\\.d)$");
        assert_eq!(regex_of("(a|b)\\%[x_]", Some('\\')), "^(?:(?:a|b)\\%[x_])$");
        assert_eq!(regex_of("a#%", Some('#')), "^(?:a\\%)$");
    }
}
