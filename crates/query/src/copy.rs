//! COPY: PostgreSQL's text and CSV formats, parsed as data arrives and formatted for COPY TO.

use sqlparser::ast;

use crate::error::{QueryError, Result};
use crate::types::{Datum, SqlType};

#[derive(Debug, Clone, PartialEq)]
pub struct CopyFormat {
    pub csv: bool,
    /// PostgreSQL's binary format ([`crate::copy_binary`]).
    pub binary: bool,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl Default for CopyFormat {
    fn default() -> Self {
        CopyFormat { csv: false, binary: false, delimiter: b'\t', null: "\\N".into(), header: false, quote: b'"', escape: b'"' }
    }
}

impl CopyFormat {
    pub fn from_options(options: &[ast::CopyOption], legacy: &[ast::CopyLegacyOption]) -> Result<CopyFormat> {
        let mut f = CopyFormat::default();
        let mut delimiter = None;
        let mut null = None;
        let one_byte = |c: char| -> Result<u8> {
            if c.is_ascii() {
                Ok(c as u8)
            } else {
                Err(QueryError::NotSupported("COPY delimiter and quote must be a single one-byte character".into()))
            }
        };
        for o in options {
            match o {
                ast::CopyOption::Format(name) => match name.value.to_lowercase().as_str() {
                    "text" => (f.csv, f.binary) = (false, false),
                    "csv" => (f.csv, f.binary) = (true, false),
                    "binary" => (f.csv, f.binary) = (false, true),
                    other => return Err(QueryError::InvalidParameterValue(format!("COPY format \"{other}\" not recognized"))),
                },
                ast::CopyOption::Delimiter(c) => delimiter = Some(one_byte(*c)?),
                ast::CopyOption::Null(s) => null = Some(s.clone()),
                ast::CopyOption::Header(h) => f.header = *h,
                ast::CopyOption::Quote(c) => f.quote = one_byte(*c)?,
                ast::CopyOption::Escape(c) => f.escape = one_byte(*c)?,
                ast::CopyOption::Freeze(_) | ast::CopyOption::Encoding(_) => {}
                other => return Err(QueryError::NotSupported(format!("COPY option {other} is not supported"))),
            }
        }
        for o in legacy {
            match o {
                ast::CopyLegacyOption::Binary => f.binary = true,
                ast::CopyLegacyOption::Delimiter(c) => delimiter = Some(one_byte(*c)?),
                ast::CopyLegacyOption::Null(s) => null = Some(s.clone()),
                ast::CopyLegacyOption::Header => f.header = true,
                ast::CopyLegacyOption::Csv(opts) => {
                    f.csv = true;
                    for c in opts {
                        match c {
                            ast::CopyLegacyCsvOption::Header => f.header = true,
                            ast::CopyLegacyCsvOption::Quote(q) => f.quote = one_byte(*q)?,
                            ast::CopyLegacyCsvOption::Escape(e) => f.escape = one_byte(*e)?,
                            other => return Err(QueryError::NotSupported(format!("COPY option {other:?} is not supported"))),
                        }
                    }
                }
                other => return Err(QueryError::NotSupported(format!("COPY option {other} is not supported"))),
            }
        }
        if f.binary {
            // As PostgreSQL refuses them (42601): the binary format has no text to shape.
            let given = [("DELIMITER", delimiter.is_some()), ("NULL", null.is_some()), ("HEADER", f.header)];
            if let Some((name, _)) = given.iter().find(|(_, given)| *given) {
                return Err(QueryError::Syntax(format!("cannot specify {name} in BINARY mode")));
            }
        }
        if f.csv {
            f.delimiter = delimiter.unwrap_or(b',');
            f.null = null.unwrap_or_default();
        } else {
            f.delimiter = delimiter.unwrap_or(b'\t');
            f.null = null.unwrap_or_else(|| "\\N".into());
        }
        Ok(f)
    }

    /// Takes the complete records at the front of `buf`, leaving a partial one. Each record is its fields
    /// (`None` is NULL). `at_end` means no more data follows: the rest is one last record.
    pub fn take_records(&self, buf: &mut Vec<u8>, at_end: bool, out: &mut Vec<Vec<Option<String>>>) -> Result<bool> {
        let mut pos = 0;
        let mut finished = false;
        loop {
            let rest = &buf[pos..];
            if rest.is_empty() {
                break;
            }
            let Some(len) = self.record_len(rest, at_end) else { break };
            let mut line = &rest[..len];
            pos += len;
            if line.last() == Some(&b'\n') {
                line = &line[..line.len() - 1];
            }
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line == b"\\." {
                finished = true;
                break;
            }
            if line.is_empty() && at_end && pos >= buf.len() {
                break;
            }
            let text = std::str::from_utf8(line)
                .map_err(|_| QueryError::InvalidText("invalid byte sequence for encoding \"UTF8\" in COPY data".into()))?;
            out.push(if self.csv { self.csv_fields(text)? } else { self.text_fields(text)? });
        }
        buf.drain(..pos);
        Ok(finished)
    }

    /// Length of the first complete record (with its newline), if there is one.
    fn record_len(&self, data: &[u8], at_end: bool) -> Option<usize> {
        if !self.csv {
            return match data.iter().position(|b| *b == b'\n') {
                Some(i) => Some(i + 1),
                None if at_end => Some(data.len()),
                None => None,
            };
        }
        // CSV: a newline inside quotes belongs to the field. Most records hold no quote before their
        // newline: found with one search.
        if let Some(nl) = data.iter().position(|b| *b == b'\n') {
            if !data[..nl].contains(&self.quote) {
                return Some(nl + 1);
            }
        }
        let mut quoted = false;
        let mut i = 0;
        while i < data.len() {
            let b = data[i];
            if quoted {
                if b == self.escape && self.escape != self.quote && data.get(i + 1) == Some(&self.quote) {
                    i += 2;
                    continue;
                }
                if b == self.quote {
                    quoted = false;
                }
            } else if b == self.quote {
                quoted = true;
            } else if b == b'\n' {
                return Some(i + 1);
            }
            i += 1;
        }
        at_end.then_some(data.len())
    }

    fn text_fields(&self, line: &str) -> Result<Vec<Option<String>>> {
        line.split(self.delimiter as char)
            .map(|raw| {
                if raw == self.null {
                    return Ok(None);
                }
                if !raw.contains('\\') {
                    return Ok(Some(raw.to_string()));
                }
                let mut s = String::with_capacity(raw.len());
                let mut chars = raw.chars().peekable();
                while let Some(c) = chars.next() {
                    if c != '\\' {
                        s.push(c);
                        continue;
                    }
                    match chars.next() {
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some('r') => s.push('\r'),
                        Some('b') => s.push('\u{8}'),
                        Some('f') => s.push('\u{c}'),
                        Some('v') => s.push('\u{b}'),
                        Some(d @ '0'..='7') => {
                            let mut v = d.to_digit(8).unwrap();
                            for _ in 0..2 {
                                match chars.peek() {
                                    Some(n @ '0'..='7') => {
                                        v = v * 8 + n.to_digit(8).unwrap();
                                        chars.next();
                                    }
                                    _ => break,
                                }
                            }
                            s.push(char::from_u32(v).unwrap_or('?'));
                        }
                        Some(other) => s.push(other),
                        None => return Err(QueryError::InvalidText("end-of-copy marker corrupt".into())),
                    }
                }
                Ok(Some(s))
            })
            .collect()
    }

    fn csv_fields(&self, line: &str) -> Result<Vec<Option<String>>> {
        // Byte by byte: quote, escape and delimiter are single ASCII bytes, which never occur inside a
        // multi-byte UTF-8 sequence, so every cut falls on a character boundary.
        let (q, e, d) = (self.quote, self.escape, self.delimiter);
        let b = line.as_bytes();
        let mut fields = Vec::new();
        let mut i = 0;
        loop {
            // Most fields hold no quote: taken as they are.
            let plain_end = b[i..].iter().position(|&c| c == d || c == q).map_or(b.len(), |n| i + n);
            if plain_end == b.len() || b[plain_end] == d {
                let raw = &line[i..plain_end];
                fields.push(if raw == self.null { None } else { Some(raw.to_string()) });
                if plain_end == b.len() {
                    break;
                }
                i = plain_end + 1;
                continue;
            }
            let mut field = Vec::with_capacity(b.len() - i);
            let mut quoted = false;
            while i < b.len() {
                let c = b[i];
                if quoted {
                    if c == e && b.get(i + 1) == Some(&q) {
                        field.push(q);
                        i += 2;
                        continue;
                    }
                    if c == q {
                        quoted = false;
                    } else {
                        field.push(c);
                    }
                } else if c == q {
                    quoted = true;
                } else if c == d {
                    break;
                } else {
                    field.push(c);
                }
                i += 1;
            }
            if quoted {
                return Err(QueryError::InvalidText("unterminated CSV quoted field".into()));
            }
            // A quoted field is never NULL, even when its text equals the NULL string.
            fields.push(Some(String::from_utf8(field).map_err(|_| QueryError::InvalidText("invalid UTF-8 in CSV field".into()))?));
            if i >= b.len() {
                break;
            }
            i += 1;
        }
        Ok(fields)
    }

    /// One row in this format, newline included; a `timestamptz` as local time in `zone`, the session's.
    pub fn format_row(&self, row: &[Datum], types: &[SqlType], zone: &crate::types::Zone, out: &mut Vec<u8>) {
        for (i, d) in row.iter().enumerate() {
            if i > 0 {
                out.push(self.delimiter);
            }
            match d.text_in(types.get(i).copied().unwrap_or(SqlType::Text), zone) {
                None => out.extend_from_slice(self.null.as_bytes()),
                Some(s) if self.csv => {
                    let needs = s.is_empty() && self.null.is_empty()
                        || s.bytes().any(|b| b == self.delimiter || b == self.quote || b == b'\n' || b == b'\r')
                        || s == self.null;
                    if needs {
                        out.push(self.quote);
                        for b in s.bytes() {
                            if b == self.quote {
                                out.push(self.escape);
                            }
                            out.push(b);
                        }
                        out.push(self.quote);
                    } else {
                        out.extend_from_slice(s.as_bytes());
                    }
                }
                Some(s) => {
                    for c in s.chars() {
                        match c {
                            '\\' => out.extend_from_slice(b"\\\\"),
                            '\n' => out.extend_from_slice(b"\\n"),
                            '\r' => out.extend_from_slice(b"\\r"),
                            '\t' => out.extend_from_slice(b"\\t"),
                            c if c as u32 == self.delimiter as u32 => {
                                out.push(b'\\');
                                out.push(self.delimiter);
                            }
                            c => {
                                let mut b = [0u8; 4];
                                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                            }
                        }
                    }
                }
            }
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format_records_split_across_chunks() {
        let f = CopyFormat::default();
        let mut buf = b"1\ta\\tb\n2\t\\N\n3\tpar".to_vec();
        let mut out = Vec::new();
        assert!(!f.take_records(&mut buf, false, &mut out).unwrap());
        assert_eq!(out, vec![vec![Some("1".into()), Some("a\tb".into())], vec![Some("2".into()), None]]);
        buf.extend_from_slice(b"tial\n\\.\n");
        out.clear();
        assert!(f.take_records(&mut buf, false, &mut out).unwrap());
        assert_eq!(out, vec![vec![Some("3".into()), Some("partial".into())]]);
    }

    #[test]
    fn csv_fields_plain_quoted_mid_field_escaped_and_multibyte() {
        let f = CopyFormat { csv: true, delimiter: b',', escape: b'\\', null: String::new(), ..CopyFormat::default() };
        let fields = f.csv_fields(r#""a\"b",é ü,,"",x"y,z"w,"#).unwrap();
        assert_eq!(fields, vec![Some("a\"b".into()), Some("é ü".into()), None, Some("".into()), Some("xy,zw".into()), None]);
        assert!(f.csv_fields(r#"1,"open"#).is_err());
        assert_eq!(f.csv_fields("").unwrap(), vec![None]);
    }

    #[test]
    fn csv_quotes_newlines_and_nulls() {
        let f = CopyFormat { csv: true, delimiter: b',', null: String::new(), ..CopyFormat::default() };
        let mut buf = b"1,\"a,\"\"b\"\"\nc\",\n2,\"\",x\n".to_vec();
        let mut partial = b"3,plain\n4,\"open\nstill".to_vec();
        let mut out = Vec::new();
        f.take_records(&mut partial, false, &mut out).unwrap();
        assert_eq!(out, vec![vec![Some("3".into()), Some("plain".into())]]);
        assert_eq!(partial, b"4,\"open\nstill", "a record whose quote is still open waits for more data");
        let mut out = Vec::new();
        f.take_records(&mut buf, true, &mut out).unwrap();
        assert_eq!(out[0], vec![Some("1".into()), Some("a,\"b\"\nc".into()), None]);
        assert_eq!(out[1], vec![Some("2".into()), Some("".into()), Some("x".into())]);
        let mut line = Vec::new();
        f.format_row(
            &[Datum::Int(1), Datum::Text("a,\"b\"".into()), Datum::Null],
            &[SqlType::Int8, SqlType::Text, SqlType::Text],
            &crate::types::Zone::UTC,
            &mut line,
        );
        assert_eq!(line, b"1,\"a,\"\"b\"\"\",\n");
    }
}
