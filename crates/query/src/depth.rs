//! How deeply a statement may nest, checked on its tokens before it is parsed.
//!
//! Every stage after the parser walks the syntax tree recursively (binding, planning, evaluation,
//! DataFusion's planner, even dropping the tree), so a tree deep enough overflows a thread's stack, and
//! Rust answers a stack overflow by aborting the whole process. PostgreSQL checks its stack depth as it
//! recurses (`max_stack_depth`, error 54001); here the depth is bounded once, up front, where no
//! recursion has started: sqlparser limits its own recursion (parentheses, subqueries, prefix operators:
//! 50 levels, 54001 too), but builds chains of infix operators in a loop, so `1+1+...+1`, `a OR b OR ...`
//! or `SELECT 1 UNION SELECT 1 UNION ...` nest one level per operator with no limit but the text's length.
//!
//! The bound is an over-estimate read off the tokens: at each bracket level, the operators since the last
//! comma (a list's items are siblings, not nested) or the last `WHEN`/`THEN`/`ELSE` (a CASE's branches
//! are siblings too), summed over the open levels. A tree is never deeper than that.

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{QueryError, Result};

/// The deepest nesting accepted, as estimated: about where PostgreSQL's default `max_stack_depth` stops a
/// chain of additions (between 4,000 and 6,000 levels). A chain of 2,500 `OR`ed equalities counts 5,000.
/// DataFusion's planner recurses on the stack it is given, so its threads' stacks are sized for this bound
/// in debug builds (the server's tests send statements at the bound through both routes).
pub const MAX_DEPTH: usize = 5_000;

/// The stack of every thread that binds, plans or evaluates a statement (connections, DataFusion's
/// runtime, its streams): enough for a statement at [`MAX_DEPTH`] in a debug build. It is address space
/// reserved, not memory: only the pages a statement touches are ever committed.
pub const STACK_BYTES: usize = 64 << 20;

/// When a recursion of Tabula's own (binding, evaluation) finds less stack than this left, it goes on in a
/// new segment of `SEGMENT_BYTES` on the heap: its frames are large in debug builds (binding takes about
/// 16 KiB a level), and no thread's stack need be sized for the deepest statement.
const RED_ZONE_BYTES: usize = 256 << 10;
const SEGMENT_BYTES: usize = 4 << 20;

/// Runs one level of a recursion with room on the stack (see [`RED_ZONE_BYTES`]).
pub fn with_stack<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(RED_ZONE_BYTES, SEGMENT_BYTES, f)
}

/// Keywords that join two expressions into one a level deeper.
const INFIX_KEYWORDS: &[Keyword] = &[
    Keyword::AND,
    Keyword::OR,
    Keyword::XOR,
    Keyword::NOT,
    Keyword::IS,
    Keyword::IN,
    Keyword::BETWEEN,
    Keyword::LIKE,
    Keyword::ILIKE,
    Keyword::SIMILAR,
    Keyword::COLLATE,
    Keyword::AT,
    Keyword::OVERLAPS,
    Keyword::OPERATOR,
];

/// Set operations chain queries rather than expressions, and DataFusion spends about four times an
/// expression level's stack on each (a debug build survived 2,000 `UNION`s and not 5,000 in 64 MiB): each
/// counts [`SET_OPERATION_LEVELS`].
const SET_OPERATIONS: &[Keyword] = &[Keyword::UNION, Keyword::INTERSECT, Keyword::EXCEPT];
const SET_OPERATION_LEVELS: usize = 4;

/// Refuses a statement whose tokens could nest deeper than [`MAX_DEPTH`] (54001).
pub fn check(tokens: &[TokenWithSpan]) -> Result<()> {
    // Operators since the last reset, per open bracket level; `depth` is their sum plus the levels.
    let mut runs: Vec<usize> = vec![0];
    let mut depth = 1usize;
    for t in tokens {
        let run = runs.last_mut().expect("the outermost level is never closed");
        match &t.token {
            Token::LParen | Token::LBracket | Token::LBrace => {
                runs.push(0);
                depth += 1;
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                if runs.len() > 1 {
                    depth -= 1 + runs.pop().unwrap_or(0);
                }
            }
            Token::Comma | Token::SemiColon => {
                depth -= std::mem::take(run);
            }
            Token::Word(w) if w.quote_style.is_none() && matches!(w.keyword, Keyword::WHEN | Keyword::THEN | Keyword::ELSE) => {
                depth -= std::mem::take(run);
            }
            Token::Word(w) if w.quote_style.is_none() && SET_OPERATIONS.contains(&w.keyword) => {
                *run += SET_OPERATION_LEVELS;
                depth += SET_OPERATION_LEVELS;
            }
            Token::Word(w) if w.quote_style.is_some() || !INFIX_KEYWORDS.contains(&w.keyword) => {}
            Token::Whitespace(_) | Token::Period | Token::Placeholder(_) | Token::Number(..) | Token::EOF => {}
            t if is_literal(t) => {}
            _ => {
                *run += 1;
                depth += 1;
            }
        }
        if depth > MAX_DEPTH {
            return Err(QueryError::TooComplex(format!("statement too complex: its expressions nest more than {MAX_DEPTH} levels deep")));
        }
    }
    Ok(())
}

fn is_literal(t: &Token) -> bool {
    matches!(
        t,
        Token::Char(_)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::TripleSingleQuotedString(_)
            | Token::TripleDoubleQuotedString(_)
            | Token::DollarQuotedString(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::UnicodeStringLiteral(_)
            | Token::HexStringLiteral(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::tokenizer::Tokenizer;

    fn depth_ok(sql: &str) -> bool {
        check(&Tokenizer::new(&PostgreSqlDialect {}, sql).tokenize_with_location().unwrap()).is_ok()
    }

    #[test]
    fn long_chains_are_refused_and_long_lists_are_not() {
        let chain = |n: usize, op: &str| String::from("SELECT 1") + &format!(" {op} 1").repeat(n);
        assert!(depth_ok(&chain(MAX_DEPTH - 2, "+")));
        assert!(!depth_ok(&chain(MAX_DEPTH, "+")));
        assert!(!depth_ok(&chain(MAX_DEPTH, "OR")));
        assert!(!depth_ok(&format!("SELECT 1{}", " UNION SELECT 1".repeat(MAX_DEPTH / SET_OPERATION_LEVELS))));
        assert!(depth_ok(&format!("SELECT 1{}", " UNION SELECT 1".repeat(MAX_DEPTH / SET_OPERATION_LEVELS - 1))));
        // Siblings do not add up: lists, VALUES rows, CASE branches, statements.
        assert!(depth_ok(&format!("SELECT 1{}", ", 1 + 1".repeat(3 * MAX_DEPTH))));
        assert!(depth_ok(&format!("INSERT INTO t VALUES (1, 'a'){}", ", (1 + 2, 'a' || 'b')".repeat(MAX_DEPTH))));
        assert!(depth_ok(&format!("SELECT CASE{} END", " WHEN a = 1 THEN b + 1".repeat(MAX_DEPTH))));
        assert!(depth_ok(&"SELECT 1 + 1 + 1; ".repeat(MAX_DEPTH)));
        // Operators inside strings and quoted names are not operators.
        assert!(depth_ok(&format!("SELECT '{}', \"{}\"", "+".repeat(3 * MAX_DEPTH), "or ".repeat(MAX_DEPTH))));
        // Nesting in brackets adds the levels of every open bracket.
        let nested = format!("SELECT {}1{}", "(1 + ".repeat(MAX_DEPTH / 2), ")".repeat(MAX_DEPTH / 2));
        assert!(!depth_ok(&nested));
    }
}
