//! `VACUUM`, `ANALYZE` and `CHECKPOINT`, read from the tokens (sqlparser knows none of them in PostgreSQL's
//! form).
//!
//! ```text
//! VACUUM [ ( option [value] [, ...] ) ] [ table [ (column [, ...]) ] [, ...] ]
//! VACUUM [ FULL ] [ FREEZE ] [ VERBOSE ] [ ANALYZE ] [ table [ (column [, ...]) ] [, ...] ]
//! ANALYZE [ ( option [value] [, ...] ) ] [ table [ (column [, ...]) ] [, ...] ]
//! ANALYZE [ VERBOSE ] [ table [ (column [, ...]) ] [, ...] ]
//! CHECKPOINT
//! ```
//!
//! What they do in Tabula: VACUUM compacts a table and removes what no row needs any more
//! ([`tabula_store::Store::vacuum`]); ANALYZE checks what it names and gathers nothing, as the planner
//! chooses its routes by rules, with no statistics (`FULL`, `FREEZE`, `PARALLEL` and the other options change
//! nothing either: there are no pages to rewrite or freeze). CHECKPOINT writes what the memtables hold to
//! table files and syncs the log, as PostgreSQL's writes its dirty buffers to its data files.

use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{QueryError, Result};

/// A VACUUM, ANALYZE or CHECKPOINT statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Maintenance {
    /// VACUUM, ANALYZE or both, of tables.
    Tables(TableMaintenance),
    /// CHECKPOINT: no table, no option.
    Checkpoint,
}

/// What a VACUUM or ANALYZE does, and to which tables.
#[derive(Debug, Clone, PartialEq)]
pub struct TableMaintenance {
    pub vacuum: bool,
    pub analyze: bool,
    pub verbose: bool,
    /// The tables named, each with its column list (empty: none given); none: every table.
    pub tables: Vec<(String, Vec<String>)>,
}

const VACUUM_OPTIONS: &[&str] = &[
    "full",
    "freeze",
    "verbose",
    "analyze",
    "disable_page_skipping",
    "skip_locked",
    "index_cleanup",
    "process_toast",
    "truncate",
    "parallel",
];
const ANALYZE_OPTIONS: &[&str] = &["verbose", "skip_locked"];

/// The statement, when `tokens` are one VACUUM, ANALYZE or CHECKPOINT; `None` when they are not (or not in
/// a form read here, left to sqlparser's error).
pub fn parse(tokens: &[TokenWithSpan]) -> Option<Result<Maintenance>> {
    let toks: Vec<&Token> = tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF)).collect();
    let toks = match toks.split_last() {
        Some((Token::SemiColon, rest)) => rest.to_vec(),
        _ => toks,
    };
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        _ => None,
    };
    let vacuum = match word(toks.first()?)?.as_str() {
        "vacuum" => true,
        "analyze" | "analyse" => false,
        "checkpoint" if toks.len() == 1 => return Some(Ok(Maintenance::Checkpoint)),
        _ => return None,
    };
    let mut m = TableMaintenance { vacuum, analyze: !vacuum, verbose: false, tables: Vec::new() };
    let mut i = 1;
    let (mut full, mut parallel) = (false, false);
    if toks.get(i) == Some(&&Token::LParen) {
        i += 1;
        loop {
            let name = word(toks.get(i)?)?;
            let known = if vacuum { VACUUM_OPTIONS } else { ANALYZE_OPTIONS };
            if !known.contains(&name.as_str()) {
                let what = if vacuum { "VACUUM" } else { "ANALYZE" };
                return Some(Err(QueryError::Syntax(format!("unrecognized {what} option \"{name}\""))));
            }
            i += 1;
            // A value: a boolean's words, a number, or `auto` (INDEX_CLEANUP).
            let mut on = true;
            if let Some(t) = toks.get(i).filter(|t| !matches!(t, Token::Comma | Token::RParen)) {
                on = !matches!(word(t).as_deref(), Some("off" | "false")) && !matches!(t, Token::Number(n, _) if n == "0");
                i += 1;
            }
            match name.as_str() {
                "analyze" => m.analyze = on,
                "verbose" => m.verbose = on,
                "full" => full = on,
                "parallel" => parallel = true,
                _ => {}
            }
            match toks.get(i)? {
                Token::Comma => i += 1,
                Token::RParen => break i += 1,
                _ => return None,
            }
        }
    } else {
        // The old form's keywords, in PostgreSQL's order.
        let allowed: &[&str] = if vacuum { &["full", "freeze", "verbose", "analyze", "analyse"] } else { &["verbose"] };
        let mut next = 0;
        while let Some(w) = toks.get(i).and_then(|t| word(t)) {
            let Some(at) = allowed.iter().skip(next).position(|a| *a == w) else { break };
            next += at + 1;
            match w.as_str() {
                "analyze" | "analyse" => m.analyze = true,
                "verbose" => m.verbose = true,
                _ => {}
            }
            i += 1;
        }
    }
    while i < toks.len() {
        let mut name = table_word(toks.get(i)?)?;
        i += 1;
        // `public.t`: Tabula's one schema.
        if toks.get(i) == Some(&&Token::Period) {
            let table = table_word(toks.get(i + 1)?)?;
            name = if name == "public" { table } else { format!("{name}.{table}") };
            i += 2;
        }
        let mut columns = Vec::new();
        if toks.get(i) == Some(&&Token::LParen) {
            i += 1;
            loop {
                columns.push(table_word(toks.get(i)?)?);
                match toks.get(i + 1)? {
                    Token::Comma => i += 2,
                    Token::RParen => break i += 2,
                    _ => return None,
                }
            }
        }
        m.tables.push((name, columns));
        match toks.get(i) {
            None => break,
            Some(Token::Comma) => i += 1,
            Some(_) => return None,
        }
    }
    if full && parallel {
        return Some(Err(QueryError::NotSupported("VACUUM FULL cannot be performed in parallel".into())));
    }
    if m.vacuum && !m.analyze && m.tables.iter().any(|(_, c)| !c.is_empty()) {
        return Some(Err(QueryError::NotSupported("ANALYZE option must be specified when a column list is provided".into())));
    }
    Some(Ok(Maintenance::Tables(m)))
}

/// A name as PostgreSQL folds it: unquoted to lower case.
fn table_word(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        Token::Word(w) if w.quote_style == Some('"') => Some(w.value.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn read(sql: &str) -> Option<Result<Maintenance>> {
        parse(&Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap())
    }

    fn tables(sql: &str) -> TableMaintenance {
        match read(sql) {
            Some(Ok(Maintenance::Tables(m))) => m,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn forms() {
        let m = tables("vacuum analyze pgbench_branches");
        assert!(m.vacuum && m.analyze && !m.verbose);
        assert_eq!(m.tables, vec![("pgbench_branches".to_string(), vec![])]);
        let m = tables("VACUUM (FULL, ANALYZE on, INDEX_CLEANUP auto) public.t, \"U\"(a, b);");
        assert!(m.vacuum && m.analyze);
        assert_eq!(m.tables, vec![("t".to_string(), vec![]), ("U".to_string(), vec!["a".to_string(), "b".to_string()])]);
        let m = tables("analyze verbose t(a)");
        assert!(!m.vacuum && m.analyze && m.verbose);
        assert_eq!(tables("vacuum").tables, vec![]);
        assert_eq!(read("checkpoint;").unwrap().unwrap(), Maintenance::Checkpoint);
        assert!(read("checkpoint ck").is_none());
        assert_eq!(read("vacuum (bogus) t").unwrap().unwrap_err().sqlstate(), "42601");
        assert_eq!(read("vacuum (full, parallel 2) t").unwrap().unwrap_err().sqlstate(), "0A000");
        assert_eq!(read("vacuum t(a)").unwrap().unwrap_err().sqlstate(), "0A000");
        assert!(read("vacuum t u").is_none());
        assert!(read("select 1").is_none());
        // Keywords out of PostgreSQL's order are a table's name, and then a syntax error.
        assert!(read("vacuum analyze full t").is_none());
    }
}
