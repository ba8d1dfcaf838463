//! CREATE SEQUENCE, ALTER SEQUENCE and `ALTER TABLE ... ALTER COLUMN ... ADD GENERATED ... AS IDENTITY`,
//! read from the tokens: sqlparser takes sequence options only in one fixed order (pg_dump writes START
//! before INCREMENT) and knows neither ALTER SEQUENCE nor an identity's `SEQUENCE NAME`.
//!
//! ```text
//! CREATE [ TEMP | TEMPORARY | UNLOGGED ] SEQUENCE [ IF NOT EXISTS ] name [ option ... ]
//! ALTER SEQUENCE [ IF EXISTS ] name { option ... | RENAME TO new | OWNER TO role | SET { LOGGED | UNLOGGED } }
//! ALTER TABLE [ IF EXISTS ] [ ONLY ] t ALTER [ COLUMN ] c ADD GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY
//!     [ ( [ SEQUENCE NAME name ] option ... ) ]
//! option: AS type | INCREMENT [ BY ] n | MINVALUE n | NO MINVALUE | MAXVALUE n | NO MAXVALUE
//!       | START [ WITH ] n | RESTART [ [ WITH ] n ] | CACHE n | [ NO ] CYCLE | OWNED BY { t.c | NONE }
//! ```

use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::def::SequenceOptions;
use crate::error::{QueryError, Result};
use crate::types::SqlType;

/// A sequence statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceStatement {
    Create { name: String, if_not_exists: bool, options: SequenceOptions },
    Alter { name: String, if_exists: bool, change: AlterSequence },
    AddIdentity { table: String, column: String, always: bool, sequence: Option<String>, options: SequenceOptions },
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterSequence {
    Options(SequenceOptions),
    Rename(String),
    Owner(String),
    /// `SET LOGGED | UNLOGGED`: every sequence is logged.
    Logged,
}

struct Words<'a> {
    toks: Vec<&'a Token>,
    at: usize,
}

fn word(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_lowercase()),
        _ => None,
    }
}

fn syntax(near: Option<&Token>) -> QueryError {
    match near {
        Some(t) => QueryError::Syntax(format!("syntax error at or near \"{t}\"")),
        None => QueryError::Syntax("syntax error at end of input".into()),
    }
}

impl<'a> Words<'a> {
    fn peek(&self) -> Option<&'a Token> {
        self.toks.get(self.at).copied()
    }

    fn is(&self, w: &str) -> bool {
        self.peek().and_then(word).as_deref() == Some(w)
    }

    fn eat(&mut self, w: &str) -> bool {
        let yes = self.is(w);
        self.at += yes as usize;
        yes
    }

    fn eat_all(&mut self, ws: &[&str]) -> bool {
        let yes = ws.iter().enumerate().all(|(i, w)| self.toks.get(self.at + i).and_then(|t| word(t)).as_deref() == Some(*w));
        if yes {
            self.at += ws.len();
        }
        yes
    }

    fn expect(&mut self, w: &str) -> Result<()> {
        if self.eat(w) {
            Ok(())
        } else {
            Err(syntax(self.peek()))
        }
    }

    fn ident(&mut self) -> Result<String> {
        match self.peek() {
            Some(Token::Word(w)) => {
                self.at += 1;
                Ok(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() })
            }
            t => Err(syntax(t)),
        }
    }

    /// A name, `public.` dropped as in [`crate::schema::table_name`]; another schema's is kept whole.
    fn name(&mut self) -> Result<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.peek() == Some(&Token::Period) {
            self.at += 1;
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    fn relation(&mut self) -> Result<String> {
        let parts = self.name()?;
        Ok(match parts.as_slice() {
            [.., s, t] if s == "public" => t.clone(),
            [t] => t.clone(),
            _ => parts.join("."),
        })
    }

    fn number(&mut self) -> Result<i64> {
        let negative = match self.peek() {
            Some(Token::Minus) => {
                self.at += 1;
                true
            }
            Some(Token::Plus) => {
                self.at += 1;
                false
            }
            _ => false,
        };
        match self.peek() {
            Some(Token::Number(n, _)) => {
                self.at += 1;
                let text = if negative { format!("-{n}") } else { n.clone() };
                text.parse::<i64>().map_err(|_| QueryError::NumericOutOfRange(format!("value \"{text}\" is out of range for type bigint")))
            }
            t => Err(syntax(t)),
        }
    }

    fn done(&self) -> bool {
        self.at == self.toks.len()
    }
}

/// The statement, when `tokens` are one of the sequence statements; `None` otherwise.
pub fn parse(tokens: &[TokenWithSpan]) -> Option<Result<SequenceStatement>> {
    let toks: Vec<&Token> = tokens.iter().map(|t| &t.token).filter(|t| !matches!(t, Token::Whitespace(_) | Token::EOF)).collect();
    let toks = match toks.split_last() {
        Some((Token::SemiColon, rest)) => rest.to_vec(),
        _ => toks,
    };
    // One statement only: several go to sqlparser, which reports what it cannot read.
    if toks.contains(&&Token::SemiColon) {
        return None;
    }
    let mut w = Words { toks, at: 0 };
    if w.eat("create") {
        let temporary = w.eat("temp") || w.eat("temporary");
        w.eat("unlogged");
        if !w.eat("sequence") {
            return None;
        }
        if temporary {
            return Some(Err(QueryError::NotSupported("CREATE TEMPORARY SEQUENCE".into())));
        }
        return Some(create(&mut w));
    }
    if w.eat_all(&["alter", "sequence"]) {
        return Some(alter(&mut w));
    }
    if w.eat_all(&["alter", "table"]) && identity_ahead(&w) {
        return Some(add_identity(&mut w));
    }
    None
}

fn create(w: &mut Words) -> Result<SequenceStatement> {
    let if_not_exists = w.eat_all(&["if", "not", "exists"]);
    let name = w.relation()?;
    let options = options(w, false)?;
    if !w.done() {
        return Err(syntax(w.peek()));
    }
    Ok(SequenceStatement::Create { name, if_not_exists, options })
}

fn alter(w: &mut Words) -> Result<SequenceStatement> {
    let if_exists = w.eat_all(&["if", "exists"]);
    let name = w.relation()?;
    let change = if w.eat_all(&["rename", "to"]) {
        AlterSequence::Rename(w.ident()?)
    } else if w.eat_all(&["owner", "to"]) {
        AlterSequence::Owner(w.ident()?)
    } else if w.eat("set") {
        if !(w.eat("logged") || w.eat("unlogged")) {
            return Err(QueryError::NotSupported("ALTER SEQUENCE ... SET SCHEMA".into()));
        }
        AlterSequence::Logged
    } else {
        AlterSequence::Options(options(w, true)?)
    };
    if !w.done() {
        return Err(syntax(w.peek()));
    }
    Ok(SequenceStatement::Alter { name, if_exists, change })
}

/// Whether the rest of an ALTER TABLE is `... ALTER [COLUMN] c ADD GENERATED`, and nothing before it.
fn identity_ahead(w: &Words) -> bool {
    let words: Vec<Option<String>> = w.toks[w.at..].iter().map(|t| word(t)).collect();
    let at = words.iter().position(|x| x.as_deref() == Some("add"));
    at.is_some_and(|i| words.get(i + 1).is_some_and(|x| x.as_deref() == Some("generated")) && w.toks[w.at..i + w.at].len() <= 8)
}

fn add_identity(w: &mut Words) -> Result<SequenceStatement> {
    if w.eat_all(&["if", "exists"]) {
        return Err(QueryError::NotSupported("ALTER TABLE IF EXISTS ... ADD GENERATED".into()));
    }
    w.eat("only");
    let table = w.relation()?;
    w.expect("alter")?;
    w.eat("column");
    let column = w.ident()?;
    w.expect("add")?;
    w.expect("generated")?;
    let always = if w.eat("always") {
        true
    } else {
        w.expect("by")?;
        w.expect("default")?;
        false
    };
    w.expect("as")?;
    w.expect("identity")?;
    let (mut sequence, mut options) = (None, SequenceOptions::default());
    if w.peek() == Some(&Token::LParen) {
        w.at += 1;
        if w.eat_all(&["sequence", "name"]) {
            sequence = Some(w.relation()?);
        }
        options = self::options(w, false)?;
        if w.peek() != Some(&Token::RParen) {
            return Err(syntax(w.peek()));
        }
        w.at += 1;
    }
    if !w.done() {
        return Err(syntax(w.peek()));
    }
    Ok(SequenceStatement::AddIdentity { table, column, always, sequence, options })
}

/// The options, in any order; each at most once (42601, as PostgreSQL).
fn options(w: &mut Words, alter: bool) -> Result<SequenceOptions> {
    let mut o = SequenceOptions::default();
    let twice = || QueryError::Engine { sqlstate: "42601", message: "conflicting or redundant options".into() };
    fn set<T>(slot: &mut Option<T>, v: T, twice: &dyn Fn() -> QueryError) -> Result<()> {
        if slot.is_some() {
            return Err(twice());
        }
        *slot = Some(v);
        Ok(())
    }
    loop {
        if w.eat("as") {
            let name = w.ident()?;
            let ty = match name.as_str() {
                "smallint" | "int2" => SqlType::Int2,
                "integer" | "int" | "int4" => SqlType::Int4,
                "bigint" | "int8" => SqlType::Int8,
                other => SqlType::parse(other).unwrap_or(SqlType::Text),
            };
            set(&mut o.ty, ty, &twice)?;
        } else if w.eat("increment") {
            w.eat("by");
            set(&mut o.increment, w.number()?, &twice)?;
        } else if w.eat("minvalue") {
            set(&mut o.min, Some(w.number()?), &twice)?;
        } else if w.eat("maxvalue") {
            set(&mut o.max, Some(w.number()?), &twice)?;
        } else if w.eat_all(&["no", "minvalue"]) {
            set(&mut o.min, None, &twice)?;
        } else if w.eat_all(&["no", "maxvalue"]) {
            set(&mut o.max, None, &twice)?;
        } else if w.eat_all(&["no", "cycle"]) {
            set(&mut o.cycle, false, &twice)?;
        } else if w.eat("cycle") {
            set(&mut o.cycle, true, &twice)?;
        } else if w.eat("start") {
            w.eat("with");
            set(&mut o.start, w.number()?, &twice)?;
        } else if alter && w.eat("restart") {
            let at = if w.eat("with") || matches!(w.peek(), Some(Token::Number(..) | Token::Minus | Token::Plus)) {
                Some(w.number()?)
            } else {
                None
            };
            set(&mut o.restart, at, &twice)?;
        } else if w.eat("cache") {
            set(&mut o.cache, w.number()?, &twice)?;
        } else if w.eat_all(&["owned", "by"]) {
            let parts = w.name()?;
            let owner = match parts.as_slice() {
                [none] if none == "none" => None,
                [.., t, c] => Some((t.clone(), c.clone())),
                _ => {
                    return Err(QueryError::Engine { sqlstate: "42601", message: "invalid OWNED BY option".into() }
                        .with_message("Specify OWNED BY table.column or OWNED BY NONE.".into()))
                }
            };
            set(&mut o.owned_by, owner, &twice)?;
        } else {
            return Ok(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(sql: &str) -> Option<Result<SequenceStatement>> {
        let tokens = sqlparser::tokenizer::Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        parse(&tokens)
    }

    #[test]
    fn pg_dump_forms_parse() {
        let Some(Ok(SequenceStatement::Create { name, options, .. })) =
            parsed("CREATE SEQUENCE public.t_id_seq AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1;")
        else {
            panic!()
        };
        assert_eq!(name, "t_id_seq");
        assert_eq!((options.ty, options.start, options.increment, options.min), (Some(SqlType::Int4), Some(1), Some(1), Some(None)));
        let Some(Ok(SequenceStatement::Alter { change: AlterSequence::Options(o), .. })) =
            parsed("ALTER SEQUENCE public.t_id_seq OWNED BY public.t.id")
        else {
            panic!()
        };
        assert_eq!(o.owned_by, Some(Some(("t".into(), "id".into()))));
        let s = parsed("ALTER TABLE public.b ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (SEQUENCE NAME public.b_id_seq START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1)");
        let Some(Ok(SequenceStatement::AddIdentity { table, column, always: false, sequence: Some(seq), .. })) = s else { panic!("{s:?}") };
        assert_eq!((table.as_str(), column.as_str(), seq.as_str()), ("b", "id", "b_id_seq"));
        assert!(parsed("ALTER TABLE t ADD COLUMN x int").is_none());
        assert!(parsed("SELECT 1").is_none());
    }

    #[test]
    fn repeated_options_are_refused() {
        let e = parsed("CREATE SEQUENCE s START 1 START 2").unwrap().unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
        let e = parsed("CREATE SEQUENCE s START").unwrap().unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
    }
}
