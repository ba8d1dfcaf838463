//! Statement text to statements: sqlparser's PostgreSQL dialect, after [`crate::depth::check`] has bounded
//! how deeply the tokens nest, plus the few forms sqlparser does not know, recognised from the tokens.

use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{QueryError, Result};

/// Parses SQL text into statements (PostgreSQL dialect). `ALTER TABLE t RESET (...)`, which sqlparser
/// does not know, comes back as a ready plan.
pub fn parse(sql: &str) -> Result<Vec<ParsedStatement>> {
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| QueryError::syntax(sql, sqlparser::parser::ParserError::from(e)))?;
    crate::depth::check(&tokens)?;
    crate::access::user_as_role(&mut tokens);
    copy_booleans(&mut tokens);
    let refused = crate::access::refused_unparsed(&tokens);
    let first = tokens.iter().map(|t| &t.token).find(|t| !matches!(t, Token::Whitespace(_)));
    if matches!(first, Some(Token::Word(w)) if w.keyword == Keyword::FETCH || w.value.eq_ignore_ascii_case("move")) {
        if let Some(f) = crate::cursors::parse_fetch(sql) {
            return Ok(vec![ParsedStatement::Fetch(f?)]);
        }
    }
    if let Some(s) = crate::sequences::parse::parse(&tokens) {
        return Ok(vec![ParsedStatement::Sequence(s?)]);
    }
    if let Some(stmts) = with_sequence_statements(sql, &tokens) {
        return stmts;
    }
    if let Some(m) = crate::maintenance::parse(&tokens) {
        return Ok(vec![ParsedStatement::Maintenance(m?)]);
    }
    if let Some(set) = parse_set_constraints(&tokens) {
        return Ok(vec![set]);
    }
    match parse_tokens(tokens) {
        Ok(stmts) => Ok(stmts.into_iter().map(|s| ParsedStatement::Ast(Box::new(s))).collect()),
        Err(e) => match parse_reset(sql) {
            Some(p) => Ok(vec![p]),
            None => match insert_select_on_conflict(sql) {
                Some(stmts) => Ok(stmts.into_iter().map(|s| ParsedStatement::Ast(Box::new(s))).collect()),
                None => Err(refused.unwrap_or_else(|| QueryError::syntax(sql, e))),
            },
        },
    }
}

/// sqlparser's statements of the tokens, with the CHECK OPTION of views ([`take_check_option`]).
fn parse_tokens(mut tokens: Vec<TokenWithSpan>) -> std::result::Result<Vec<Statement>, sqlparser::parser::ParserError> {
    let check = take_check_option(&mut tokens);
    let mut stmts = Parser::new(&PostgreSqlDialect {}).with_tokens_with_locations(tokens).parse_statements()?;
    for (i, option) in check {
        if let Some(Statement::CreateView(v)) = stmts.get_mut(i) {
            with_check_option(v, option);
        }
    }
    Ok(stmts)
}

/// `CREATE VIEW ... WITH [LOCAL | CASCADED] CHECK OPTION`, which sqlparser does not read: the clause is
/// taken off the end of each statement that has it, and given back to the parsed view as the
/// `check_option` of its options ([`with_check_option`]), which is how PostgreSQL keeps it too (pg_class's
/// reloptions). Returns, for each such statement, its place among the text's statements.
fn take_check_option(tokens: &mut Vec<TokenWithSpan>) -> Vec<(usize, crate::views::CheckOption)> {
    let word = |t: &TokenWithSpan, k: Keyword| matches!(&t.token, Token::Word(w) if w.keyword == k);
    // Every statement comes through here: one pass without allocating for the usual text without OPTION.
    if !tokens.iter().any(|t| word(t, Keyword::OPTION)) {
        return Vec::new();
    }
    let significant = |t: &TokenWithSpan| !matches!(t.token, Token::Whitespace(_) | Token::SemiColon | Token::EOF);
    let (mut found, mut cut) = (Vec::new(), Vec::new()); // (statement, option), token ranges to drop
    let (mut start, mut depth, mut statement) = (0, 0i32, 0);
    for end in 0..=tokens.len() {
        match tokens.get(end).map(|t| &t.token) {
            Some(Token::LParen) => {
                depth += 1;
                continue;
            }
            Some(Token::RParen) => {
                depth -= 1;
                continue;
            }
            Some(Token::SemiColon) if depth == 0 => {}
            None => {}
            Some(_) => continue,
        }
        let at: Vec<usize> = (start..end).filter(|&i| significant(&tokens[i])).collect();
        start = end + 1;
        if at.is_empty() {
            continue;
        }
        statement += 1;
        let n = at.len();
        let creates_view = word(&tokens[at[0]], Keyword::CREATE) && at.iter().take(5).any(|&i| word(&tokens[i], Keyword::VIEW));
        if !creates_view || n < 4 || !word(&tokens[at[n - 2]], Keyword::CHECK) || !word(&tokens[at[n - 1]], Keyword::OPTION) {
            continue;
        }
        let (with, option) = if word(&tokens[at[n - 3]], Keyword::LOCAL) {
            (at[n - 4], crate::views::CheckOption::Local)
        } else if word(&tokens[at[n - 3]], Keyword::CASCADED) {
            (at[n - 4], crate::views::CheckOption::Cascaded)
        } else {
            (at[n - 3], crate::views::CheckOption::Cascaded)
        };
        if word(&tokens[with], Keyword::WITH) {
            found.push((statement - 1, option));
            cut.push(with..at[n - 1] + 1);
        }
    }
    for r in cut.into_iter().rev() {
        tokens.drain(r);
    }
    found
}

/// A view's CHECK OPTION as its `check_option` option, where `WITH (check_option = ...)` puts it.
fn with_check_option(v: &mut sqlparser::ast::CreateView, option: crate::views::CheckOption) {
    use sqlparser::ast::{CreateTableOptions, Expr, Ident, SqlOption, Value};
    let set = SqlOption::KeyValue {
        key: Ident::new("check_option"),
        value: Expr::Value(Value::SingleQuotedString(option.name().to_string()).into()),
    };
    match &mut v.options {
        CreateTableOptions::With(options) => options.push(set),
        other => *other = CreateTableOptions::With(vec![set]),
    }
}

/// Several statements of which some are sequence statements (`crate::sequences::parse`), which sqlparser
/// cannot read: each statement parsed on its own, by the one that reads it. `None` when none is one.
fn with_sequence_statements(sql: &str, tokens: &[TokenWithSpan]) -> Option<Result<Vec<ParsedStatement>>> {
    let mut parts: Vec<&[TokenWithSpan]> = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, t) in tokens.iter().enumerate() {
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon if depth == 0 => {
                parts.push(&tokens[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tokens[start..]);
    let parts: Vec<&[TokenWithSpan]> =
        parts.into_iter().filter(|p| p.iter().any(|t| !matches!(t.token, Token::Whitespace(_) | Token::EOF))).collect();
    if parts.len() < 2 || !parts.iter().any(|p| crate::sequences::parse::parse(p).is_some()) {
        return None;
    }
    let parse_one = |part: &[TokenWithSpan]| -> Result<Vec<ParsedStatement>> {
        if let Some(s) = crate::sequences::parse::parse(part) {
            return Ok(vec![ParsedStatement::Sequence(s?)]);
        }
        let stmts = parse_tokens(part.to_vec()).map_err(|e| QueryError::syntax(sql, e))?;
        Ok(stmts.into_iter().map(|s| ParsedStatement::Ast(Box::new(s))).collect())
    };
    Some(parts.into_iter().map(parse_one).collect::<Result<Vec<_>>>().map(|v| v.into_iter().flatten().collect()))
}

/// `COPY ... (FREEZE on, HEADER 1)`: PostgreSQL's boolean option values `on`/`off`/`1`/`0` (pgbench's
/// `COPY ... WITH (FREEZE ON)`), where sqlparser knows only TRUE and FALSE: each becomes the keyword it means.
fn copy_booleans(tokens: &mut [TokenWithSpan]) {
    let words: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let is_copy = words.first().is_some_and(|&i| matches!(&tokens[i].token, Token::Word(w) if w.keyword == Keyword::COPY));
    if !is_copy {
        return;
    }
    for pair in words.windows(2) {
        let option = matches!(&tokens[pair[0]].token, Token::Word(w) if matches!(w.keyword, Keyword::FREEZE | Keyword::HEADER));
        if !option {
            continue;
        }
        let value = match &tokens[pair[1]].token {
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("on") => true,
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("off") => false,
            Token::Number(n, _) if n == "1" => true,
            Token::Number(n, _) if n == "0" => false,
            _ => continue,
        };
        tokens[pair[1]].token = Token::make_keyword(if value { "TRUE" } else { "FALSE" });
    }
}

/// `INSERT INTO t SELECT 1, 'a' ON CONFLICT ...`: a SELECT without FROM or WHERE, where sqlparser reads
/// `ON` as the last item's alias (PostgreSQL reserves it), so the statement does not parse. With
/// `WHERE TRUE` before `ON`, which keeps the SELECT's one row, it does: that is what is parsed, and only
/// when the text as written failed.
fn insert_select_on_conflict(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().ok()?;
    let keyword = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    let (mut depth, mut insert, mut select, mut clause) = (0i32, false, false, false);
    let mut at = Vec::new();
    for i in 0..tokens.len() {
        match &tokens[i].token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon if depth == 0 => (insert, select, clause) = (false, false, false),
            t if depth == 0 => match keyword(t) {
                Some(Keyword::INSERT) => insert = true,
                Some(Keyword::SELECT) if insert => select = true,
                Some(
                    Keyword::FROM | Keyword::WHERE | Keyword::GROUP | Keyword::HAVING | Keyword::WINDOW | Keyword::ORDER | Keyword::LIMIT,
                ) if select => clause = true,
                Some(Keyword::ON) if select && !clause => {
                    let next = tokens[i + 1..].iter().map(|t| &t.token).find(|t| !matches!(t, Token::Whitespace(_)));
                    if next.and_then(keyword) == Some(Keyword::CONFLICT) {
                        at.push(i);
                        (insert, select) = (false, false);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    if at.is_empty() {
        return None;
    }
    let space = || TokenWithSpan::wrap(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space));
    for i in at.into_iter().rev() {
        let words = [Token::make_keyword("WHERE"), Token::make_keyword("TRUE")].map(TokenWithSpan::wrap);
        tokens.splice(i..i, [words[0].clone(), space(), words[1].clone(), space()]);
    }
    Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statements().ok()
}

#[derive(Debug, Clone)]
pub enum ParsedStatement {
    Ast(Box<Statement>),
    Reset {
        table: String,
        options: Vec<String>,
    },
    Fetch(crate::cursors::FetchStatement),
    Maintenance(crate::maintenance::Maintenance),
    /// CREATE SEQUENCE, ALTER SEQUENCE, `ALTER TABLE ... ADD GENERATED ... AS IDENTITY`.
    Sequence(crate::sequences::parse::SequenceStatement),
    /// `SET CONSTRAINTS {ALL | name [, ...]} {DEFERRED | IMMEDIATE}` (`names` `None`: ALL).
    SetConstraints {
        names: Option<Vec<String>>,
        deferred: bool,
    },
}

/// `SET CONSTRAINTS ...`, which sqlparser does not know, from the tokens.
fn parse_set_constraints(tokens: &[TokenWithSpan]) -> Option<ParsedStatement> {
    let words: Vec<&Token> = tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_some() => Some(w.value.clone()),
        Token::Word(w) => Some(w.value.to_lowercase()),
        _ => None,
    };
    let words: &[&Token] = match words.as_slice() {
        [rest @ .., Token::SemiColon] => rest,
        all => all,
    };
    let [set, constraints, rest @ .., mode] = words else { return None };
    if word(set)?.as_str() != "set" || word(constraints)?.as_str() != "constraints" {
        return None;
    }
    let deferred = match word(mode)?.as_str() {
        "deferred" => true,
        "immediate" => false,
        _ => return None,
    };
    let names = match rest {
        [all] if word(all)?.as_str() == "all" => None,
        names => {
            let mut out = Vec::new();
            for (i, t) in names.iter().enumerate() {
                match (i % 2, t) {
                    (0, t) => out.push(word(t)?),
                    (_, Token::Comma) => {}
                    _ => return None,
                }
            }
            if out.is_empty() {
                return None;
            }
            Some(out)
        }
    };
    Some(ParsedStatement::SetConstraints { names, deferred })
}

/// `ALTER TABLE name RESET (opt [, opt ...]) [;]` and `RESET SESSION AUTHORIZATION`, from the tokens.
fn parse_reset(sql: &str) -> Option<ParsedStatement> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let words: Vec<Token> = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    let word = |t: &Token| match t {
        Token::Word(w) => Some(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() }),
        _ => None,
    };
    let mut it = words.iter();
    // sqlparser's PostgreSQL dialect does not know `RESET SESSION AUTHORIZATION`: it is that setting's reset.
    let lead: Vec<Option<String>> = words.iter().take(3).map(word).collect();
    if lead.iter().map(|w| w.as_deref()).eq([Some("reset"), Some("session"), Some("authorization")])
        && matches!(&words[3..], [] | [Token::SemiColon])
    {
        let name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new("session_authorization")]);
        let reset = sqlparser::ast::ResetStatement { reset: sqlparser::ast::Reset::ConfigurationParameter(name) };
        return Some(ParsedStatement::Ast(Box::new(Statement::Reset(reset))));
    }
    if word(it.next()?)?.as_str() != "alter" || word(it.next()?)?.as_str() != "table" {
        return None;
    }
    let mut table = word(it.next()?)?;
    let mut next = it.next()?;
    if *next == Token::Period {
        table = word(it.next()?)?;
        next = it.next()?;
    }
    if word(next)?.as_str() != "reset" || *it.next()? != Token::LParen {
        return None;
    }
    let mut options = Vec::new();
    loop {
        options.push(word(it.next()?)?);
        match it.next()? {
            Token::Comma => continue,
            Token::RParen => break,
            _ => return None,
        }
    }
    match it.next() {
        None | Some(Token::SemiColon) if it.next().is_none() => Some(ParsedStatement::Reset { table, options }),
        _ => None,
    }
}

/// The result columns a plan produces (RowDescription), known before it runs.
/// The highest `$n` in a statement.
pub(crate) fn max_placeholder(stmt: &Statement) -> usize {
    let mut n = 0;
    let _ = crate::walk::exprs(stmt, |e| {
        if let sqlparser::ast::Expr::Value(v) = e {
            if let sqlparser::ast::Value::Placeholder(p) = &v.value {
                n = n.max(p.strip_prefix('$').and_then(|d| d.parse().ok()).unwrap_or(0));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_say_where_as_postgresql_does() {
        let e = parse("SELECT 1;\nSELEC 2").err().unwrap();
        assert_eq!((e.to_string().as_str(), e.position(), e.sqlstate()), ("syntax error at or near \"SELEC\"", Some(11), "42601"));
        let e = parse("SELECT * FROM t WHERE").err().unwrap();
        assert_eq!((e.to_string().as_str(), e.position()), ("syntax error at end of input", Some(22)));
        let e = parse("SELECT 'abc").err().unwrap();
        assert_eq!((e.sqlstate(), e.position()), ("42601", Some(8)));
    }

    #[test]
    fn insert_select_without_from_takes_on_conflict_as_postgresql_does() {
        let sql = "INSERT INTO t SELECT 1, 'a' ON CONFLICT DO NOTHING; INSERT INTO t SELECT (2) ON CONFLICT (k) DO NOTHING";
        let stmts = parse(sql).unwrap();
        assert_eq!(stmts.len(), 2);
        for s in &stmts {
            let ParsedStatement::Ast(s) = s else { panic!("{s:?}") };
            let Statement::Insert(i) = s.as_ref() else { panic!("{s}") };
            assert!(i.on.is_some(), "{s}");
        }
        // What does not parse either way is still the syntax error it was.
        assert!(parse("INSERT INTO t SELECT 1 ON CONFLICT DO NOTHING garbage").is_err());
        assert!(parse("SELECT 1 ON CONFLICT DO NOTHING").is_err());
    }

    #[test]
    fn a_views_check_option_becomes_its_option_in_any_statement_of_the_text() {
        let sql = "CREATE VIEW a AS SELECT k FROM t WHERE k IN (SELECT 1) WITH CHECK OPTION; SELECT (1); \
                   CREATE VIEW b AS SELECT k FROM t WITH LOCAL CHECK OPTION;; CREATE VIEW c AS SELECT 1; \
                   CREATE OR REPLACE VIEW d AS SELECT k FROM t WHERE (k > 0) WITH CASCADED CHECK OPTION";
        let options: Vec<Option<crate::views::CheckOption>> = parse(sql)
            .unwrap()
            .iter()
            .filter_map(|s| match s {
                ParsedStatement::Ast(s) => match s.as_ref() {
                    Statement::CreateView(v) => Some(crate::views::check_option(&v.options).unwrap()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        use crate::views::CheckOption::*;
        assert_eq!(options, [Some(Cascaded), Some(Local), None, Some(Cascaded)]);
        // Anywhere else it is the syntax error it was.
        assert!(parse("SELECT 1 WITH CHECK OPTION").is_err());
    }
}
