//! Temporary tables: `CREATE TEMP TABLE` makes a table private to its session and gone at the session's
//! end, as PostgreSQL's are.
//!
//! A temporary table is an ordinary table of the store's under a private name
//! (`tabula_store::value::PRIVATE_PREFIX`): the session's number and the name given, behind a NUL byte
//! that no SQL text can hold. No other session can name it, the catalog lists no such name, and the store
//! drops such tables when it opens, so one left by a crash goes at the restart.
//!
//! Nothing else in the SQL layer knows about them. Before a statement is planned, the session rewrites
//! the names that mean one of its temporary tables into their private names ([`TempTables::rewrite`]), so
//! the key-value planner and DataFusion read and write them as any table. A name means a temporary table
//! as it does in PostgreSQL, whose search path starts with the session's `pg_temp` schema: written
//! unqualified or as `pg_temp.t`, and not the name of one of the statement's CTEs; `public.t` is the
//! permanent table. A table read under its private name keeps the name written as its alias, so
//! `t.col` resolves as written. What clients are told never shows the private part ([`visible`]).

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use sqlparser::ast::{self, Ident, ObjectName, ObjectNamePart, Statement, TableAlias, TableFactor};
use tabula_store::value::{private_table_name, public_part, PRIVATE_PREFIX};

use crate::error::{QueryError, Result};
use crate::schema::ident_name;

/// One session's temporary tables.
#[derive(Default)]
pub struct TempTables {
    /// The owner number of the session's private tables: unique among the server's sessions.
    owner: u64,
    /// Every name the session has made a temporary table under. Those whose private table exists are its
    /// temporary tables now: a rollback or a DROP removes the table and leaves the name, and a rollback
    /// of the DROP brings the table back.
    names: BTreeSet<String>,
    /// The ON COMMIT actions of those that have one, by name.
    on_commit: HashMap<String, OnCommit>,
}

impl TempTables {
    pub fn new(owner: u64) -> TempTables {
        TempTables { owner, names: BTreeSet::new(), on_commit: HashMap::new() }
    }

    /// The private name of the session's temporary table `name`.
    pub fn private_name(&self, name: &str) -> String {
        private_table_name(self.owner, name)
    }

    /// Notes a table the session made or renamed: a private name of its own adds its name.
    pub fn note(&mut self, table: &str) {
        if table.starts_with(&self.private_name("")) {
            self.names.insert(public_part(table).to_string());
        }
    }

    /// The private names of the temporary tables that exist (`exists` asks the catalog).
    pub fn live(&self, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
        self.names.iter().map(|n| self.private_name(n)).filter(|p| exists(p)).collect()
    }

    /// A table's name as the catalog knows it: the private name if `name` is a live temporary table's.
    pub fn resolve(&self, name: &str, exists: &dyn Fn(&str) -> bool) -> String {
        let private = self.private_name(name);
        if self.names.contains(name) && exists(&private) {
            private
        } else {
            name.to_string()
        }
    }

    /// Makes private the names in the statement that mean the session's temporary tables, and a
    /// `CREATE TEMP TABLE`'s name too. Without temporary tables the statement is left as it is.
    pub fn rewrite(&self, stmt: &mut Statement, exists: &dyn Fn(&str) -> bool) -> Result<()> {
        let creates_temp = matches!(stmt, Statement::CreateTable(c) if c.temporary || c.global.is_some());
        let live: HashMap<String, String> =
            self.names.iter().map(|n| (n.clone(), self.private_name(n))).filter(|(_, p)| exists(p)).collect();
        if live.is_empty() && !creates_temp {
            return Ok(());
        }
        let mut renamer = Renamer { live, ctes: statement_ctes(stmt) };
        // The name a CREATE TABLE gives is made, not looked up: a permanent table may share a temporary
        // one's name, as in PostgreSQL.
        let created = match stmt {
            Statement::CreateTable(c) => Some(std::mem::replace(&mut c.name, ObjectName(vec![]))),
            _ => None,
        };
        let _ = crate::walk::walk_mut(stmt, &mut renamer);
        match stmt {
            Statement::CreateTable(c) => {
                let name = created.unwrap_or_else(|| ObjectName(vec![]));
                c.name = if creates_temp { self.created(c, &name)? } else { name };
            }
            Statement::Drop { object_type: ast::ObjectType::Table, names, .. } => names.iter_mut().for_each(|n| renamer.rename(n)),
            Statement::Copy { source: ast::CopySource::Table { table_name, .. }, .. } => renamer.rename(table_name),
            Statement::AlterTable(a) => {
                // A temporary table renamed stays temporary: its new name is private too.
                let temp = a.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| i.value.starts_with(PRIVATE_PREFIX));
                for op in a.operations.iter_mut() {
                    if let ast::AlterTableOperation::RenameTable {
                        table_name: ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to),
                    } = op
                    {
                        if temp {
                            if let Some(n) = plain_name(to) {
                                *to = private_object(self.private_name(&n));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The private name a `CREATE TEMP TABLE` makes, checked as PostgreSQL checks it.
    fn created(&self, c: &mut ast::CreateTable, name: &ObjectName) -> Result<ObjectName> {
        let Some(n) = plain_name(name) else {
            return Err(QueryError::Engine {
                sqlstate: "42P16",
                message: "cannot create temporary relation in non-temporary schema".into(),
            });
        };
        // The ON COMMIT action stays for the planner (`on_commit`).
        c.temporary = false;
        c.global = None;
        Ok(private_object(self.private_name(&n)))
    }

    /// Remembers what a temporary table made under private name `table` does at each commit.
    pub fn set_on_commit(&mut self, table: &str, action: OnCommit) {
        self.on_commit.insert(public_part(table).to_string(), action);
    }

    /// The actions due at a transaction's end, by private name, for the temporary tables that exist; an
    /// ON COMMIT DROP table is forgotten with it.
    pub fn due(&mut self, exists: &dyn Fn(&str) -> bool) -> Vec<(String, OnCommit)> {
        let due: Vec<(String, OnCommit)> =
            self.on_commit.iter().map(|(n, a)| (self.private_name(n), *a)).filter(|(p, _)| exists(p)).collect();
        let owner = self.owner;
        self.on_commit.retain(|n, a| *a == OnCommit::DeleteRows && exists(&private_table_name(owner, n)));
        due
    }

    pub fn has_actions(&self) -> bool {
        !self.on_commit.is_empty()
    }
}

/// What a temporary table does when a transaction commits (PostgreSQL's `ON COMMIT`): keeping its rows is
/// no action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnCommit {
    DeleteRows,
    Drop,
}

/// The ON COMMIT action of CREATE TABLE `name` (a private name for a temporary table): 42P16 on a
/// permanent table, as PostgreSQL says.
pub fn on_commit(name: &str, given: Option<ast::OnCommit>) -> Result<Option<OnCommit>> {
    let action = match given {
        None => return Ok(None),
        Some(ast::OnCommit::PreserveRows) => None,
        Some(ast::OnCommit::DeleteRows) => Some(OnCommit::DeleteRows),
        Some(ast::OnCommit::Drop) => Some(OnCommit::Drop),
    };
    if !name.starts_with(PRIVATE_PREFIX) {
        return Err(QueryError::Engine { sqlstate: "42P16", message: "ON COMMIT can only be used on temporary tables".into() });
    }
    Ok(action)
}

/// Renames the relations that mean live temporary tables.
struct Renamer {
    /// Name → private name.
    live: HashMap<String, String>,
    ctes: Vec<String>,
}

impl Renamer {
    fn private(&self, n: &ObjectName) -> Option<(String, String)> {
        let name = plain_name(n)?;
        if self.ctes.contains(&name) {
            return None;
        }
        self.live.get(&name).map(|p| (name, p.clone()))
    }

    fn rename(&self, n: &mut ObjectName) {
        if let Some((_, p)) = self.private(n) {
            *n = private_object(p);
        }
    }
}

impl crate::walk::WalkerMut for Renamer {
    fn pre_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, args: None, .. } = f {
            if let Some((written, private)) = self.private(name) {
                if alias.is_none() {
                    *alias = Some(TableAlias { explicit: true, name: Ident::with_quote('"', written), columns: vec![], at: None });
                }
                *name = private_object(private);
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_relation(&mut self, r: &mut ObjectName) -> ControlFlow<()> {
        self.rename(r);
        ControlFlow::Continue(())
    }
}

/// A name as the session's search path finds a temporary table under it: unqualified or in `pg_temp`.
fn plain_name(n: &ObjectName) -> Option<String> {
    let parts: Vec<&Ident> = n.0.iter().map(|p| p.as_ident()).collect::<Option<_>>()?;
    match parts.as_slice() {
        [t] => Some(ident_name(t)),
        [s, t] if ident_name(s) == "pg_temp" => Some(ident_name(t)),
        _ => None,
    }
}

fn private_object(private: String) -> ObjectName {
    ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('"', private))])
}

/// The names of every CTE in the statement: a relation of such a name is the CTE (an approximation of
/// scoping that errs toward the CTE, which is what a statement naming both means).
fn statement_ctes(stmt: &Statement) -> Vec<String> {
    struct Ctes(Vec<String>);
    impl crate::walk::Walker for Ctes {
        fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
            self.0.extend(crate::views::cte_names(q));
            ControlFlow::Continue(())
        }
    }
    let mut c = Ctes(Vec::new());
    let _ = crate::walk::walk(stmt, &mut c);
    c.0
}

/// Text for a client: every private table name in it as its session wrote it.
pub fn visible(text: &str) -> String {
    if !text.contains(PRIVATE_PREFIX) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(PRIVATE_PREFIX) {
        out.push_str(&rest[..i]);
        let after = &rest[i + PRIVATE_PREFIX.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        rest = match after[digits..].strip_prefix('\0') {
            Some(r) if digits > 0 => r,
            _ => after,
        };
    }
    out.push_str(rest);
    out
}

/// Whether a table's name is a temporary table's.
pub fn is_temporary(table: &str) -> bool {
    table.starts_with(PRIVATE_PREFIX)
}

/// 0A000 for a foreign key of a temporary table. The tables that reference a table are found in the
/// catalog, which lists no temporary table, so a parent's rows could be deleted under its temporary
/// children unchecked.
pub fn no_foreign_key(table: &str) -> Result<()> {
    if is_temporary(table) {
        return Err(QueryError::NotSupported("foreign keys of temporary tables".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(sql: &str) -> Statement {
        match crate::parse::parse(sql).unwrap().pop() {
            Some(crate::parse::ParsedStatement::Ast(s)) => *s,
            _ => panic!("{sql} is no statement of sqlparser's"),
        }
    }

    fn rewritten(temp: &TempTables, sql: &str, live: &[&str]) -> String {
        let stmt = one(sql);
        let exists = |p: &str| live.iter().any(|n| temp.private_name(n) == p);
        let mut stmt = stmt;
        temp.rewrite(&mut stmt, &exists).unwrap();
        visible(&stmt.to_string())
    }

    #[test]
    fn names_of_live_temporary_tables_become_private_and_keep_their_written_name() {
        let mut temp = TempTables::new(7);
        temp.note(&temp.private_name("t"));
        temp.note("u");
        assert_eq!(temp.names.len(), 1, "only the session's own private names count");
        let live = ["t"];
        assert_eq!(rewritten(&temp, "SELECT t.a FROM t", &live), "SELECT t.a FROM \"t\" AS \"t\"");
        assert_eq!(rewritten(&temp, "SELECT * FROM pg_temp.t x", &live), "SELECT * FROM \"t\" x");
        assert_eq!(rewritten(&temp, "SELECT * FROM public.t", &live), "SELECT * FROM public.t");
        assert_eq!(rewritten(&temp, "WITH t AS (SELECT 1) SELECT * FROM t", &live), "WITH t AS (SELECT 1) SELECT * FROM t");
        assert_eq!(rewritten(&temp, "SELECT * FROM t", &[]), "SELECT * FROM t", "a dropped temporary table is no longer found");
        let mut private = one("DROP TABLE t");
        temp.rewrite(&mut private, &|_| true).unwrap();
        let private = private.to_string();
        assert!(private.contains(&temp.private_name("t")));
        let mut made = one("CREATE TABLE t (a int)");
        temp.rewrite(&mut made, &|_| true).unwrap();
        let made = made.to_string();
        assert_eq!(made, "CREATE TABLE t (a INT)", "a permanent table may share a temporary one's name");
    }

    #[test]
    fn visible_text_drops_the_private_prefix() {
        let temp = TempTables::new(12);
        let msg = format!("relation \"{}\" has constraint \"{}_pkey\"", temp.private_name("t"), temp.private_name("t"));
        assert_eq!(visible(&msg), "relation \"t\" has constraint \"t_pkey\"");
        assert_eq!(visible("plain"), "plain");
    }
}
