//! `format(formatstr, args...)`, PostgreSQL's: `%s` an argument's text (NULL: nothing), `%I` it quoted as
//! an identifier (NULL: 22004), `%L` it quoted as a literal (NULL: `NULL`), `%%` a `%`; each with an
//! optional position (`%2$s`), `-` flag and width (`%-10s`, `%*s`, `%*1$s`; a negative width pads on the
//! right). Arguments print as PostgreSQL prints their type (`t` for true), timestamps with a zone in the
//! session's. A NULL format string gives NULL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, StringArray};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Format {
    signature: Signature,
}

impl Format {
    pub fn new() -> Format {
        Format { signature: Signature::variadic_any(Volatility::Stable) }
    }
}

fn invalid(message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(QueryError::InvalidParameterValue(message.into())))
}

/// Reads a number at `chars[*at..]`, if one starts there.
fn number(chars: &[char], at: &mut usize) -> Result<Option<usize>> {
    let start = *at;
    while *at < chars.len() && chars[*at].is_ascii_digit() {
        *at += 1;
    }
    if *at == start {
        return Ok(None);
    }
    let digits: String = chars[start..*at].iter().collect();
    digits.parse().map(Some).map_err(|_| invalid("number is out of range"))
}

/// An argument's position `n$` at `chars[*at..]`, if one is written there (1-based).
fn position(chars: &[char], at: &mut usize) -> Result<Option<usize>> {
    let before = *at;
    match number(chars, at)? {
        Some(n) if chars.get(*at) == Some(&'$') => {
            *at += 1;
            if n == 0 {
                return Err(invalid("format specifies argument 0, but arguments are numbered from 1"));
            }
            Ok(Some(n))
        }
        _ => {
            *at = before;
            Ok(None)
        }
    }
}

/// One row's result: `args` are the arguments' texts (None: NULL).
fn format_row(fmt: &str, args: &[Option<String>]) -> Result<String> {
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut next = 0usize;
    let mut at = 0usize;
    let take = |n: usize| -> Result<&Option<String>> { args.get(n).ok_or_else(|| invalid("too few arguments for format()")) };
    while at < chars.len() {
        let c = chars[at];
        at += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        let unterminated = || invalid("unterminated format() type specifier");
        if chars.get(at) == Some(&'%') {
            out.push('%');
            at += 1;
            continue;
        }
        let mut arg = position(&chars, &mut at)?;
        let mut left = false;
        while chars.get(at) == Some(&'-') {
            left = true;
            at += 1;
        }
        // The width: a number, or `*` (the next argument) or `*n$` (argument n), an integer.
        let width = if chars.get(at) == Some(&'*') {
            at += 1;
            let n = match position(&chars, &mut at)? {
                Some(n) => n - 1,
                None => {
                    next += 1;
                    next - 1
                }
            };
            let w = match take(n)? {
                None => 0,
                Some(t) => t.trim().parse::<i64>().map_err(|_| invalid(format!("invalid input syntax for type integer: \"{t}\"")))?,
            };
            if w < 0 {
                left = true;
            }
            w.unsigned_abs() as usize
        } else {
            number(&chars, &mut at)?.unwrap_or(0)
        };
        if arg.is_none() {
            arg = Some(next + 1);
        }
        let n = arg.unwrap_or(1) - 1;
        next = n + 1;
        let Some(&kind) = chars.get(at) else { return Err(unterminated()) };
        at += 1;
        let value = take(n)?;
        let text = match (kind, value) {
            ('s', v) => v.clone().unwrap_or_default(),
            ('I', None) => {
                return Err(DataFusionError::External(Box::new(QueryError::Engine {
                    sqlstate: "22004",
                    message: "null values cannot be formatted as an SQL identifier".into(),
                })))
            }
            ('I', Some(v)) => super::catalog::quote_ident(v),
            ('L', None) => "NULL".to_string(),
            ('L', Some(v)) => super::catalog::quote_literal(v),
            (other, _) => {
                return Err(DataFusionError::External(Box::new(
                    QueryError::InvalidParameterValue(format!("unrecognized format() type specifier \"{other}\""))
                        .with_hint("For a single \"%\" use \"%%\"."),
                )))
            }
        };
        let pad = width.saturating_sub(text.chars().count());
        if left {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(out)
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        "format"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(rows)).collect::<Result<_>>()?;
        let Some((fmt, rest)) = arrays.split_first() else {
            return Err(DataFusionError::External(Box::new(QueryError::UndefinedFunction("format()".into()))));
        };
        let fmt = datafusion::arrow::compute::cast(fmt, &DataType::Utf8)?;
        let fmt = fmt.as_any().downcast_ref::<StringArray>().ok_or_else(|| DataFusionError::Internal("format string".into()))?;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if fmt.is_null(i) {
                out.push(None);
                continue;
            }
            let texts = rest
                .iter()
                .map(|a| super::arrow::cell_text(a, i))
                .collect::<crate::error::Result<Vec<_>>>()
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            out.push(Some(format_row(fmt.value(i), &texts)?));
        }
        super::columnar(&args.args, Arc::new(StringArray::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::format_row;

    #[test]
    fn formats_as_postgresql_does() {
        let args = |v: &[Option<&str>]| v.iter().map(|s| s.map(str::to_string)).collect::<Vec<_>>();
        let f = |fmt: &str, a: &[Option<&str>]| format_row(fmt, &args(a)).map_err(|e| e.to_string());
        assert_eq!(f("Hello %s, %I, %L", &[Some("world"), Some("my col"), Some("it's")]).unwrap(), "Hello world, \"my col\", 'it''s'");
        assert_eq!(f("%2$s %1$s %s", &[Some("a"), Some("b")]).unwrap(), "b a b");
        assert_eq!(
            f("[%5s|%-5s|%*s|%-*s]", &[Some("ab"), Some("cd"), Some("4"), Some("x"), Some("-3"), Some("y")]).unwrap(),
            "[   ab|cd   |   x|y  ]"
        );
        assert_eq!(f("%s|%L|100%%", &[None, None]).unwrap(), "|NULL|100%");
        assert!(f("%s %s", &[Some("a")]).unwrap_err().contains("too few arguments"));
        assert!(f("%I", &[None]).unwrap_err().contains("SQL identifier"));
        assert!(f("%x", &[Some("a")]).unwrap_err().contains("unrecognized format() type specifier \"x\""));
    }
}
