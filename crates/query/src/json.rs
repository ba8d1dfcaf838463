//! json and jsonb values: checked on input as PostgreSQL checks them, and jsonb printed as PostgreSQL
//! prints it. `json` keeps its text as written; `jsonb` is a normalized value: keys of an object sorted
//! (shorter first, then bytewise) with the last of duplicate keys kept, `", "` and `": "` between items,
//! strings re-escaped, numbers as numeric prints them (`1e2` is `100`).

use std::str::FromStr;

use rust_decimal::Decimal;

use crate::error::{QueryError, Result};

enum Json {
    Null,
    Bool(bool),
    /// The number's text, normalized as numeric prints it.
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Checks a json value (22P02 when it is not one).
pub fn check(text: &str) -> Result<()> {
    parse(text).map(|_| ())
}

/// The jsonb form of a json text.
pub fn to_jsonb(text: &str) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    write(&parse(text)?, &mut out);
    Ok(out)
}

/// `jsonb -> key` (an object's field) or `jsonb -> n` (an array's element, negative from the end): the
/// value as jsonb text, `None` when there is none.
pub fn get(jsonb: &str, key: Step<'_>) -> Result<Option<String>> {
    Ok(step(parse(jsonb)?, key).map(|v| {
        let mut out = String::new();
        write(&v, &mut out);
        out
    }))
}

/// `jsonb ->> key`: as `get`, but a string as its text and a json null as SQL NULL.
pub fn get_text(jsonb: &str, key: Step<'_>) -> Result<Option<String>> {
    Ok(match step(parse(jsonb)?, key) {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s),
        Some(v) => {
            let mut out = String::new();
            write(&v, &mut out);
            Some(out)
        }
    })
}

/// What `->` and `->>` step into.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    Key(&'a str),
    Index(i64),
}

fn step(v: Json, key: Step<'_>) -> Option<Json> {
    match (v, key) {
        // Of duplicate keys the last counts, as jsonb keeps it.
        (Json::Object(items), Step::Key(k)) => items.into_iter().rev().find(|(name, _)| name == k).map(|(_, v)| v),
        (Json::Array(mut items), Step::Index(i)) => {
            let i = if i < 0 { i + items.len() as i64 } else { i };
            (0..items.len() as i64).contains(&i).then(|| items.swap_remove(i as usize))
        }
        _ => None,
    }
}

/// `a @> b`: whether jsonb `a` contains `b` (PostgreSQL's containment: every field of an object and every
/// element of an array in `b` is contained in `a`; a top-level array contains a scalar it holds).
pub fn contains(a: &str, b: &str) -> Result<bool> {
    let (a, b) = (parse(a)?, parse(b)?);
    Ok(match (&a, &b) {
        (Json::Array(items), scalar) if !matches!(scalar, Json::Array(_) | Json::Object(_)) => items.iter().any(|x| contained(x, scalar)),
        _ => contained(&a, &b),
    })
}

fn contained(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            y.iter().all(|(k, vb)| x.iter().rev().find(|(name, _)| name == k).is_some_and(|(_, va)| contained(va, vb)))
        }
        (Json::Array(x), Json::Array(y)) => y.iter().all(|vb| x.iter().any(|va| contained(va, vb))),
        (Json::Number(x), Json::Number(y)) => match (Decimal::from_str(x), Decimal::from_str(y)) {
            (Ok(x), Ok(y)) => x == y,
            _ => x == y,
        },
        (Json::String(x), Json::String(y)) => x == y,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Null, Json::Null) => true,
        _ => false,
    }
}

fn parse(text: &str) -> Result<Json> {
    let mut p = JsonParser { s: text.as_bytes(), i: 0, depth: 0 };
    let v = p.value()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(p.invalid());
    }
    Ok(v)
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
}

/// Nesting PostgreSQL's stack allows is far deeper; this bound only keeps the parser's recursion safe.
const MAX_DEPTH: usize = 2000;

impl JsonParser<'_> {
    fn invalid(&self) -> QueryError {
        QueryError::InvalidText("invalid input syntax for type json".into())
    }

    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, lit: &[u8]) -> bool {
        if self.s[self.i..].starts_with(lit) {
            self.i += lit.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Result<Json> {
        self.ws();
        let Some(&c) = self.s.get(self.i) else { return Err(self.invalid()) };
        match c {
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(QueryError::TooComplex("json nested too deeply".into()));
                }
                let v = if c == b'{' { self.object() } else { self.array() };
                self.depth -= 1;
                v
            }
            b'"' => self.string().map(Json::String),
            b't' if self.eat(b"true") => Ok(Json::Bool(true)),
            b'f' if self.eat(b"false") => Ok(Json::Bool(false)),
            b'n' if self.eat(b"null") => Ok(Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.invalid()),
        }
    }

    fn object(&mut self) -> Result<Json> {
        self.i += 1;
        let mut items: Vec<(String, Json)> = Vec::new();
        self.ws();
        if self.eat(b"}") {
            return Ok(Json::Object(items));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return Err(self.invalid());
            }
            let key = self.string()?;
            self.ws();
            if !self.eat(b":") {
                return Err(self.invalid());
            }
            let value = self.value()?;
            items.push((key, value));
            self.ws();
            if self.eat(b"}") {
                return Ok(Json::Object(items));
            }
            if !self.eat(b",") {
                return Err(self.invalid());
            }
        }
    }

    fn array(&mut self) -> Result<Json> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b"]") {
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.ws();
            if self.eat(b"]") {
                return Ok(Json::Array(items));
            }
            if !self.eat(b",") {
                return Err(self.invalid());
            }
        }
    }

    fn string(&mut self) -> Result<String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while self.i < self.s.len() && !matches!(self.s[self.i], b'"' | b'\\') && self.s[self.i] >= 0x20 {
                self.i += 1;
            }
            out.push_str(std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.invalid())?);
            match self.s.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let c = *self.s.get(self.i).ok_or_else(|| self.invalid())?;
                    self.i += 1;
                    match c {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut code = self.hex4()?;
                            if (0xD800..0xDC00).contains(&code) {
                                if !self.eat(b"\\u") {
                                    return Err(self.invalid());
                                }
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(self.invalid());
                                }
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                            }
                            if code == 0 {
                                return Err(QueryError::Engine {
                                    sqlstate: "22P05",
                                    message: "unsupported Unicode escape sequence".into(),
                                });
                            }
                            out.push(char::from_u32(code).ok_or_else(|| self.invalid())?);
                        }
                        _ => return Err(self.invalid()),
                    }
                }
                _ => return Err(self.invalid()),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self.s.get(self.i..self.i + 4).ok_or_else(|| self.invalid())?;
        let code = std::str::from_utf8(h).ok().and_then(|h| u32::from_str_radix(h, 16).ok()).ok_or_else(|| self.invalid())?;
        self.i += 4;
        Ok(code)
    }

    fn number(&mut self) -> Result<Json> {
        let start = self.i;
        self.eat(b"-");
        let digits = |p: &mut Self| {
            let s = p.i;
            while p.i < p.s.len() && p.s[p.i].is_ascii_digit() {
                p.i += 1;
            }
            p.i - s
        };
        let int = digits(self);
        // No leading zeros, as JSON has it: `01` is invalid.
        if int == 0 || (int > 1 && self.s[self.i - int] == b'0') {
            return Err(self.invalid());
        }
        if self.eat(b".") && digits(self) == 0 {
            return Err(self.invalid());
        }
        let mut exponent = false;
        if self.i < self.s.len() && matches!(self.s[self.i], b'e' | b'E') {
            exponent = true;
            self.i += 1;
            if !self.eat(b"+") {
                self.eat(b"-");
            }
            if digits(self) == 0 {
                return Err(self.invalid());
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| self.invalid())?;
        // numeric prints a number without its exponent; a value past Decimal's range keeps its text.
        let normalized = match (exponent, Decimal::from_str(text)) {
            (false, Ok(d)) if d.is_zero() => d.abs().to_string(),
            (false, _) => text.to_string(),
            (true, _) => Decimal::from_scientific(text)
                .map(|d| if d.is_zero() { d.abs() } else { d }.to_string())
                .unwrap_or_else(|_| text.to_string()),
        };
        Ok(Json::Number(normalized))
    }
}

fn write(v: &Json, out: &mut String) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => out.push_str(n),
        Json::String(s) => write_string(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Json::Object(items) => {
            // jsonb's key order: shorter keys first, then bytewise; of duplicate keys the last one counts.
            let mut keyed: Vec<(usize, &String, &Json)> = items.iter().enumerate().map(|(i, (k, v))| (i, k, v)).collect();
            keyed.sort_by(|a, b| {
                (a.1.len(), a.1.as_bytes(), std::cmp::Reverse(a.0)).cmp(&(b.1.len(), b.1.as_bytes(), std::cmp::Reverse(b.0)))
            });
            keyed.dedup_by(|b, a| a.1 == b.1);
            out.push('{');
            for (i, (_, k, v)) in keyed.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_string(k, out);
                out.push_str(": ");
                write(v, out);
            }
            out.push('}');
        }
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonb_prints_as_postgresql_does() {
        // Each checked against PostgreSQL 15's `SELECT 'x'::jsonb`.
        let cases = [
            (r#"{"b":1,   "a":[1,2,{"c":null}]}"#, r#"{"a": [1, 2, {"c": null}], "b": 1}"#),
            (r#"{"aa":1,"b":2,"a":3,"b":4}"#, r#"{"a": 3, "b": 4, "aa": 1}"#),
            (r#" [ 1.50 , 1e2, 1.5E-1, -0, true, false, null ] "#, r#"[1.50, 100, 0.15, 0, true, false, null]"#),
            (r#""a\u0041\n\/\"""#, r#""aA\n/\"""#),
            (r#""\ud83d\ude00 é""#, "\"\u{1F600} é\""),
            ("{}", "{}"),
            ("[]", "[]"),
        ];
        for (input, want) in cases {
            assert_eq!(to_jsonb(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "'a'", "{\"a\":1} x", "nul", "\"\\x\"", "-", "1e"] {
            let e = check(bad).unwrap_err();
            assert_eq!(e.sqlstate(), "22P02", "{bad}");
        }
        assert_eq!(to_jsonb(r#""\u0000""#).unwrap_err().sqlstate(), "22P05");
    }

    #[test]
    fn operators_as_postgresql_answers_them() {
        // Each checked against PostgreSQL 15.
        let doc = r#"{"a": [1, "x", {"b": null}], "n": 1.50, "s": "t\"q"}"#;
        assert_eq!(get(doc, Step::Key("a")).unwrap().as_deref(), Some(r#"[1, "x", {"b": null}]"#));
        assert_eq!(get_text(doc, Step::Key("s")).unwrap().as_deref(), Some("t\"q"));
        assert_eq!(get_text(doc, Step::Key("n")).unwrap().as_deref(), Some("1.50"));
        assert_eq!(get(doc, Step::Key("zz")).unwrap(), None);
        assert_eq!(get(r#"[1, 2, 3]"#, Step::Index(-1)).unwrap().as_deref(), Some("3"));
        assert_eq!(get(r#"[1, 2, 3]"#, Step::Index(3)).unwrap(), None);
        assert_eq!(get(r#"[1, 2, 3]"#, Step::Key("a")).unwrap(), None);
        assert_eq!(get_text(r#"{"b": null}"#, Step::Key("b")).unwrap(), None);
        assert!(contains(doc, r#"{"a": [{"b": null}], "n": 1.5}"#).unwrap());
        assert!(!contains(doc, r#"{"a": [2]}"#).unwrap());
        assert!(contains(r#"[1, [2, 3]]"#, r#"[[3]]"#).unwrap());
        assert!(contains(r#"[1, 2]"#, "1").unwrap());
        assert!(!contains(r#"{"a": 1}"#, "1").unwrap());
        assert!(contains(r#"{"a": 1}"#, "{}").unwrap());
    }
}
