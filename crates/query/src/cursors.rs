//! Cursors declared in SQL: `DECLARE name CURSOR FOR query`, `FETCH`, `MOVE`, `CLOSE`.
//!
//! A cursor holds the stream of its query, opened at DECLARE: it reads the snapshot of that moment (a
//! transaction that has not written streams from its snapshot; one that has is read out at DECLARE), so later
//! writes of the transaction do not show, as in PostgreSQL. Cursors only move forward, as PostgreSQL's
//! `NO SCROLL` cursors do: a backward move is 55000, and `SCROLL` is refused at DECLARE (0A000).
//!
//! A cursor lives until CLOSE or the end of its transaction; `WITH HOLD` keeps it after COMMIT (its stream
//! reads a snapshot that outlives the transaction), while ROLLBACK closes those declared in it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, Tokenizer};

use crate::error::{QueryError, Result};
use crate::exec::Deadline;
use crate::plan::{FetchDirection, OutputColumn};
use crate::types::SqlRow;

/// The rows of a cursor's query, read as FETCH asks for them.
pub type CursorRows = Box<dyn Iterator<Item = Result<SqlRow>> + Send>;

struct Cursor {
    columns: Vec<OutputColumn>,
    rows: CursorRows,
    /// The statement deadline the stream checks: each FETCH's while it runs, none in between.
    deadline: Arc<Deadline>,
    /// Rows read so far: ABSOLUTE counts from the start.
    position: u64,
    /// Read past the last row.
    at_end: bool,
    hold: bool,
    /// Declared in the open transaction: a ROLLBACK closes it, held or not.
    this_transaction: bool,
}

/// The session's open cursors by name.
#[derive(Default)]
pub struct Cursors {
    open: HashMap<String, Cursor>,
}

impl Cursors {
    pub fn declare(
        &mut self,
        name: &str,
        columns: Vec<OutputColumn>,
        rows: CursorRows,
        deadline: Arc<Deadline>,
        hold: bool,
        in_transaction: bool,
    ) -> Result<()> {
        if self.open.contains_key(name) {
            return Err(QueryError::DuplicateCursor(name.to_string()));
        }
        self.open.insert(
            name.to_string(),
            Cursor { columns, rows, deadline, position: 0, at_end: false, hold, this_transaction: in_transaction },
        );
        Ok(())
    }

    /// The columns FETCH returns from the cursor.
    pub fn columns(&self, name: &str) -> Result<Vec<OutputColumn>> {
        self.open.get(name).map(|c| c.columns.clone()).ok_or_else(|| QueryError::UndefinedCursor(name.to_string()))
    }

    /// FETCH (`keep`) or MOVE: the rows passed over, kept only for FETCH, and how many there were.
    /// `deadline` is the FETCH's statement timeout.
    pub fn fetch(&mut self, name: &str, direction: FetchDirection, keep: bool, deadline: Option<Instant>) -> Result<(Vec<SqlRow>, u64)> {
        let c = self.open.get_mut(name).ok_or_else(|| QueryError::UndefinedCursor(name.to_string()))?;
        c.deadline.set(deadline);
        let r = c.read(direction, keep);
        c.deadline.set(None);
        r
    }

    pub fn close(&mut self, name: Option<&str>) -> Result<()> {
        match name {
            Some(n) => self.open.remove(n).map(|_| ()).ok_or_else(|| QueryError::UndefinedCursor(n.to_string())),
            None => {
                self.open.clear();
                Ok(())
            }
        }
    }

    /// The transaction ended: cursors not held close, and on ROLLBACK held ones declared in it too.
    pub fn end_transaction(&mut self, committed: bool) {
        self.open.retain(|_, c| c.hold && (committed || !c.this_transaction));
        self.open.values_mut().for_each(|c| c.this_transaction = false);
    }
}

impl Cursor {
    fn read(&mut self, direction: FetchDirection, keep: bool) -> Result<(Vec<SqlRow>, u64)> {
        let c = self;
        let (skip, take) = match direction {
            // The current row again: a MOVE stays where it is; a FETCH would read the row before, backward,
            // unless there is no current row (before the first, after the last).
            FetchDirection::Forward(Some(0)) | FetchDirection::Relative(0) => {
                let on_row = c.position > 0 && !c.at_end;
                if keep && on_row {
                    return Err(QueryError::ForwardOnly);
                }
                return Ok((Vec::new(), u64::from(on_row && !keep)));
            }
            FetchDirection::Forward(n) => (0, n.unwrap_or(u64::MAX)),
            // Forward only: the one row `n` ahead, or at `n` from the start, when it is ahead.
            FetchDirection::Relative(n) if n > 0 => (n as u64 - 1, 1),
            FetchDirection::Absolute(n) if n > 0 && n as u64 > c.position => (n as u64 - c.position - 1, 1),
            FetchDirection::Relative(_) | FetchDirection::Absolute(_) | FetchDirection::Backward => return Err(QueryError::ForwardOnly),
        };
        let mut rows = Vec::new();
        let mut count = 0u64;
        for _ in 0..skip {
            match c.rows.next() {
                Some(r) => {
                    r?;
                    c.position += 1;
                }
                None => {
                    c.at_end = true;
                    return Ok((rows, 0));
                }
            }
        }
        while count < take {
            match c.rows.next() {
                Some(r) => {
                    let r = r?;
                    if keep {
                        rows.push(r);
                    }
                    count += 1;
                    c.position += 1;
                }
                None => {
                    c.at_end = true;
                    break;
                }
            }
        }
        Ok((rows, count))
    }
}

/// `FETCH [direction] [FROM | IN] name` and `MOVE ...`, from the tokens: sqlparser wants a count in every
/// FETCH and has no MOVE. `None` when the text is not one of them.
pub fn parse_fetch(sql: &str) -> Option<std::result::Result<FetchStatement, QueryError>> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize().ok()?;
    let mut t: Vec<Token> = tokens.into_iter().filter(|t| !matches!(t, Token::Whitespace(_))).collect();
    while t.last() == Some(&Token::SemiColon) {
        t.pop();
    }
    let kw = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => w.keyword,
        _ => Keyword::NoKeyword,
    };
    let move_only = match t.first()? {
        Token::Word(w) if w.quote_style.is_none() && w.keyword == Keyword::FETCH => false,
        // sqlparser has no MOVE keyword.
        Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("move") => true,
        _ => return None,
    };
    Some(parse_fetch_tokens(&t[1..], move_only, &kw))
}

/// A parsed FETCH or MOVE.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchStatement {
    pub name: String,
    pub direction: FetchDirection,
    pub move_only: bool,
}

fn parse_fetch_tokens(t: &[Token], move_only: bool, kw: &dyn Fn(&Token) -> Keyword) -> std::result::Result<FetchStatement, QueryError> {
    let syntax = || QueryError::Syntax(format!("syntax error in {}", if move_only { "MOVE" } else { "FETCH" }));
    let count = |t: Option<&Token>, negative: bool| -> Option<i64> {
        match t? {
            Token::Number(n, _) => n.parse::<i64>().ok().map(|n| if negative { -n } else { n }),
            _ => None,
        }
    };
    // A signed count: `-3`, `+3` or `3`; returns the count and the tokens it took.
    let signed = |i: usize| -> Option<(i64, usize)> {
        match t.get(i)? {
            Token::Minus => count(t.get(i + 1), true).map(|n| (n, 2)),
            Token::Plus => count(t.get(i + 1), false).map(|n| (n, 2)),
            other => count(Some(other), false).map(|n| (n, 1)),
        }
    };
    let forward = |n: i64| if n >= 0 { FetchDirection::Forward(Some(n as u64)) } else { FetchDirection::Backward };
    let mut i = 0;
    let direction = match t.get(i).map(kw) {
        Some(Keyword::NEXT) => (i += 1, FetchDirection::Forward(Some(1))).1,
        Some(Keyword::PRIOR | Keyword::LAST | Keyword::BACKWARD) => {
            i += 1;
            if t.get(i).map(kw) == Some(Keyword::ALL) {
                i += 1;
            } else if let Some((_, used)) = signed(i).filter(|_| t.len() > i + 1) {
                i += used;
            }
            FetchDirection::Backward
        }
        Some(Keyword::FIRST) => (i += 1, FetchDirection::Absolute(1)).1,
        Some(Keyword::ABSOLUTE) => {
            let (n, used) = signed(i + 1).ok_or_else(syntax)?;
            i += 1 + used;
            FetchDirection::Absolute(n)
        }
        Some(Keyword::RELATIVE) => {
            let (n, used) = signed(i + 1).ok_or_else(syntax)?;
            i += 1 + used;
            FetchDirection::Relative(n)
        }
        Some(Keyword::ALL) => (i += 1, FetchDirection::Forward(None)).1,
        Some(Keyword::FORWARD) => {
            i += 1;
            if t.get(i).map(kw) == Some(Keyword::ALL) {
                i += 1;
                FetchDirection::Forward(None)
            } else if let Some((n, used)) = signed(i).filter(|_| t.len() > i + 1) {
                i += used;
                forward(n)
            } else {
                FetchDirection::Forward(Some(1))
            }
        }
        _ => match signed(i).filter(|_| t.len() > i + 1) {
            Some((n, used)) => {
                i += used;
                forward(n)
            }
            None => FetchDirection::Forward(Some(1)),
        },
    };
    if matches!(t.get(i).map(kw), Some(Keyword::FROM | Keyword::IN)) {
        i += 1;
    }
    let name = match t.get(i) {
        Some(Token::Word(w)) if w.quote_style.is_some() => w.value.clone(),
        Some(Token::Word(w)) => w.value.to_lowercase(),
        _ => return Err(syntax()),
    };
    if i + 1 != t.len() {
        return Err(syntax());
    }
    Ok(FetchStatement { name, direction, move_only })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> FetchStatement {
        parse_fetch(sql).unwrap().unwrap()
    }

    #[test]
    fn fetch_and_move_forms() {
        use FetchDirection::*;
        let f = Forward;
        assert_eq!(p("FETCH c").direction, f(Some(1)));
        assert_eq!(p("fetch forward 100 from _psql_cursor;").direction, f(Some(100)));
        assert_eq!(p("FETCH FORWARD 100 FROM \"My C\"").name, "My C");
        assert_eq!(p("FETCH 5 IN c").direction, f(Some(5)));
        assert_eq!(p("FETCH ALL FROM c").direction, f(None));
        assert_eq!(p("FETCH FORWARD ALL FROM c").direction, f(None));
        assert_eq!(p("FETCH NEXT FROM c").direction, f(Some(1)));
        assert_eq!(p("FETCH FORWARD c").direction, f(Some(1)));
        assert_eq!(p("FETCH -2 FROM c").direction, Backward);
        assert_eq!(p("FETCH BACKWARD 2 FROM c").direction, Backward);
        assert_eq!(p("FETCH PRIOR FROM c").direction, Backward);
        assert_eq!(p("FETCH ABSOLUTE 3 FROM c").direction, Absolute(3));
        assert_eq!(p("FETCH FIRST FROM c").direction, Absolute(1));
        assert_eq!(p("FETCH RELATIVE -1 FROM c").direction, Relative(-1));
        let m = p("MOVE 10 FROM c");
        assert!(m.move_only);
        assert_eq!(m.direction, f(Some(10)));
        assert!(parse_fetch("SELECT 1").is_none());
        assert!(parse_fetch("FETCH 1 FROM c extra").unwrap().is_err());
        assert!(parse_fetch("FETCH ABSOLUTE FROM c").unwrap().is_err());
    }
}
