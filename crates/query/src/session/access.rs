//! Privileges, checked before every statement runs on either engine, and the statements about roles and
//! privileges (see [`crate::roles`]). Messages and SQLSTATEs are PostgreSQL 15's.
//!
//! What a statement needs, as in PostgreSQL: SELECT to read a table (and for the columns an UPDATE or
//! DELETE reads in its WHERE, its SET or RETURNING, and the conflict columns INSERT ... ON CONFLICT names);
//! INSERT, UPDATE, DELETE, TRUNCATE to change it (ON CONFLICT DO UPDATE needs UPDATE too; COPY FROM is an
//! INSERT, COPY TO a SELECT); ownership to alter, drop or grant on it; CREATE on the schema public to make
//! a table. Superusers need nothing.

use super::{Output, Session};
use crate::error::{QueryError, Result};
use crate::plan::{AccessPath, InsertPlan, OnConflict, Plan, Scan};
use crate::planner::Catalog;
use crate::roles::{AccessStatement, Acl, Privilege, Role, RoleOptions, Secret, BOOTSTRAP};
use crate::schema::TableSchema;

fn denied(table: &str) -> QueryError {
    QueryError::InsufficientPrivilege(format!("permission denied for table {table}"))
}

fn not_owner(table: &str) -> QueryError {
    QueryError::InsufficientPrivilege(format!("must be owner of table {table}"))
}

fn in_use(message: &str) -> QueryError {
    QueryError::Engine { sqlstate: "55006", message: message.into() }
}

/// Whether `role` holds `p` on `table` (its owner does unless it was revoked).
fn allows(table: &TableSchema, role: &str, p: Privilege) -> bool {
    match &table.acl {
        Some(acl) => acl.allows(role, p),
        None => table.owner == role,
    }
}

impl Session {
    /// Whether the current user may do anything. A role dropped while its session lives has no privileges;
    /// a session whose user was no role at login (trust) is a superuser.
    pub(super) fn is_superuser(&self) -> bool {
        match self.db.roles().is_superuser(self.current_user()) {
            Some(s) => s,
            None => self.unlisted && self.role.is_none(),
        }
    }

    fn need(&self, table: &TableSchema, p: Privilege) -> Result<()> {
        if allows(table, self.current_user(), p) {
            Ok(())
        } else {
            Err(denied(&table.name))
        }
    }

    pub(super) fn need_owner(&self, name: &str) -> Result<()> {
        match self.db.relation(name) {
            Ok(t) if t.owner != self.current_user() => Err(not_owner(name)),
            // A table that does not exist fails as it would for anyone.
            _ => Ok(()),
        }
    }

    /// Refuses a plan the current user may not run (42501), before it runs.
    pub(super) fn check_access(&self, plan: &Plan) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        match plan {
            Plan::Select(s) => s.scan.as_ref().map_or(Ok(()), |scan| self.need(&scan.table, Privilege::Select)),
            Plan::Insert(i) | Plan::InsertSelect { insert: i, .. } => self.check_insert(i),
            Plan::Update(u) => {
                self.need(&u.scan.table, Privilege::Update)?;
                let sets_read = u.assignments.iter().map(|(_, e)| e).chain(u.version.as_ref()).any(|e| {
                    let mut cols = Vec::new();
                    e.columns(&mut cols);
                    !cols.is_empty()
                });
                if sets_read || reads(&u.scan) || u.returning.is_some() {
                    self.need(&u.scan.table, Privilege::Select)?;
                }
                Ok(())
            }
            Plan::Delete(d) => {
                self.need(&d.scan.table, Privilege::Delete)?;
                if reads(&d.scan) || d.returning.is_some() {
                    self.need(&d.scan.table, Privilege::Select)?;
                }
                Ok(())
            }
            Plan::LockShared { names } => names.iter().try_for_each(|n| self.need(&*self.db.table(n)?, Privilege::Select)),
            Plan::Truncate { names, .. } => names.iter().try_for_each(|n| match self.db.table(n) {
                Ok(t) => self.need(&t, Privilege::Truncate),
                Err(_) => Ok(()),
            }),
            Plan::DropTable { names, .. } => names.iter().try_for_each(|n| self.need_owner(n)),
            Plan::SetOptions { table, .. }
            | Plan::AddColumn { table, .. }
            | Plan::DropColumn { table, .. }
            | Plan::AddPrimaryKey { table, .. }
            | Plan::RenameTable { table, .. }
            | Plan::AlterOwner { table, .. }
            | Plan::RenameColumn { table, .. }
            | Plan::AddCheck { table, .. }
            | Plan::AlterColumn { table, .. } => self.need_owner(table),
            Plan::Sequence(crate::sequences::parse::SequenceStatement::Alter { name, .. }) => self.need_owner(name),
            Plan::Sequence(crate::sequences::parse::SequenceStatement::AddIdentity { table, .. }) => self.need_owner(table),
            Plan::DropSequence { names, .. } | Plan::DropView { names, .. } => names.iter().try_for_each(|n| self.need_owner(n)),
            Plan::CreateView { name, or_replace: true, .. } if self.db.relation(name).is_ok() => self.need_owner(name),
            Plan::CreateTable(_) | Plan::Sequence(_) | Plan::CreateView { .. } => match self.db.roles().get(self.current_user()) {
                Some(r) if r.create_in_public => Ok(()),
                _ => Err(QueryError::InsufficientPrivilege("permission denied for schema public".into())),
            },
            Plan::CopyFrom { table, .. } => self.need(table, Privilege::Insert),
            Plan::CopyTo { select, .. } => select.scan.as_ref().map_or(Ok(()), |scan| self.need(&scan.table, Privilege::Select)),
            Plan::Explain { plan, .. } => self.check_access(plan),
            // The join's query is checked as any query when it runs.
            Plan::Joined(j) => self.check_access(&j.write),
            _ => Ok(()),
        }
    }

    fn check_insert(&self, i: &InsertPlan) -> Result<()> {
        self.need(&i.table, Privilege::Insert)?;
        match i.on_conflict {
            OnConflict::DoUpdate { .. } => {
                self.need(&i.table, Privilege::Update)?;
                self.need(&i.table, Privilege::Select)?;
            }
            OnConflict::DoNothing { arbiters: Some(_) } => self.need(&i.table, Privilege::Select)?,
            _ => {}
        }
        if i.returning.is_some() {
            self.need(&i.table, Privilege::Select)?;
        }
        Ok(())
    }

    /// SELECT on each table an analytic statement reads.
    pub(super) fn check_tables(&self, tables: &[String]) -> Result<()> {
        if self.is_superuser() {
            return Ok(());
        }
        tables.iter().try_for_each(|name| self.need(&*self.db.table(name)?, Privilege::Select))
    }

    /// Runs CREATE/ALTER/DROP ROLE, GRANT, REVOKE or SET ROLE.
    pub(super) fn run_access(&mut self, statement: &AccessStatement) -> Result<Output> {
        let tag = match statement {
            AccessStatement::CreateRole { name, if_not_exists, options } => {
                if *if_not_exists {
                    return Err(QueryError::Syntax("syntax error at or near \"NOT\": CREATE ROLE has no IF NOT EXISTS".into()));
                }
                self.create_role(name, options)?;
                "CREATE ROLE"
            }
            AccessStatement::AlterRole { name, options } => {
                self.alter_role(name, options)?;
                "ALTER ROLE"
            }
            AccessStatement::DropRole { names, if_exists } => {
                self.drop_roles(names, *if_exists)?;
                "DROP ROLE"
            }
            AccessStatement::Tables { grant, privileges, tables, grantees } => {
                self.check_grantees(grantees)?;
                let names = match tables {
                    Some(t) => t.clone(),
                    None => self.db.table_names(),
                };
                // Every table is checked before any changes: all or nothing.
                let mut changed = Vec::new();
                for name in &names {
                    let t = self.db.table(name)?;
                    if !self.is_superuser() && t.owner != self.current_user() {
                        return Err(denied(name));
                    }
                    let mut acl = t.acl.clone().unwrap_or_else(|| Acl::owner_default(&t.owner));
                    for g in grantees {
                        if *grant {
                            acl.grant(g, *privileges);
                        } else {
                            acl.revoke(g, *privileges);
                        }
                    }
                    changed.push(TableSchema { acl: Some(acl), ..(*t).clone() });
                }
                for t in changed {
                    self.ddl().set_user_meta(&t.name, t.encode())?;
                }
                self.db.invalidate();
                if *grant {
                    "GRANT"
                } else {
                    "REVOKE"
                }
            }
            AccessStatement::CreateInPublic { grant, grantees } => {
                if !self.is_superuser() {
                    return Err(QueryError::InsufficientPrivilege("permission denied for schema public".into()));
                }
                self.check_grantees(grantees)?;
                for g in grantees {
                    let Some(role) = self.db.roles().get(g) else {
                        return Err(QueryError::NotSupported(
                            "CREATE on the schema public for PUBLIC is not supported: grant it to roles".into(),
                        ));
                    };
                    if !role.configured {
                        self.db.clone().roles().update(&mut self.ddl(), Role { create_in_public: *grant, ..role })?;
                    }
                }
                if *grant {
                    "GRANT"
                } else {
                    "REVOKE"
                }
            }
            AccessStatement::SetRole(role) => {
                self.set_role(role.as_deref())?;
                "SET"
            }
            AccessStatement::ResetRole => {
                self.role = None;
                "RESET"
            }
        };
        Ok(Output::Command { tag: tag.into() })
    }

    /// Every grantee must be a role (or PUBLIC, `""`).
    fn check_grantees(&self, grantees: &[String]) -> Result<()> {
        match grantees.iter().find(|g| !g.is_empty() && self.db.roles().get(g).is_none()) {
            Some(g) => Err(QueryError::UndefinedRole(g.clone())),
            None => Ok(()),
        }
    }

    fn create_role(&mut self, name: &str, options: &RoleOptions) -> Result<()> {
        if !self.is_superuser() {
            return Err(QueryError::InsufficientPrivilege("permission denied to create role".into()));
        }
        if name == "public" || name == "none" || name.starts_with("pg_") {
            return Err(QueryError::Engine { sqlstate: "42939", message: format!("role name \"{name}\" is reserved") });
        }
        if name.is_empty() || name.contains(['\t', '\n', '\r']) {
            return Err(QueryError::InvalidName(format!("invalid role name \"{}\"", name.escape_debug())));
        }
        let password = options.password.clone().flatten().map(|p| Secret::new(name, &p)).transpose()?;
        let role = Role {
            name: name.to_string(),
            oid: 0,
            superuser: options.superuser.unwrap_or(false),
            login: options.login.unwrap_or(false),
            create_in_public: false,
            password,
            configured: false,
        };
        self.db.clone().roles().create(&mut self.ddl(), role)?;
        self.db.invalidate();
        Ok(())
    }

    fn alter_role(&mut self, name: &str, options: &RoleOptions) -> Result<()> {
        let role = self.db.roles().get(name).ok_or_else(|| QueryError::UndefinedRole(name.to_string()))?;
        if !self.is_superuser() {
            if role.superuser || options.superuser.is_some() {
                return Err(QueryError::InsufficientPrivilege(
                    "must be superuser to alter superuser roles or change superuser attribute".into(),
                ));
            }
            // A role may change its own password, and nothing else.
            if name != self.current_user() || options.login.is_some() {
                return Err(QueryError::InsufficientPrivilege("permission denied".into()));
            }
        }
        if role.configured {
            return Err(QueryError::NotSupported(format!("role \"{name}\" is defined by the server's configuration: change it there")));
        }
        let password = match &options.password {
            None => role.password.clone(),
            Some(p) => p.as_deref().map(|p| Secret::new(name, p)).transpose()?,
        };
        let altered =
            Role { superuser: options.superuser.unwrap_or(role.superuser), login: options.login.unwrap_or(role.login), password, ..role };
        self.db.clone().roles().update(&mut self.ddl(), altered)?;
        self.db.invalidate();
        Ok(())
    }

    fn drop_roles(&mut self, names: &[String], if_exists: bool) -> Result<()> {
        if !self.is_superuser() {
            return Err(QueryError::InsufficientPrivilege("permission denied to drop role".into()));
        }
        // Every role is checked before any is dropped.
        let mut dropped = Vec::new();
        for name in names {
            let Some(role) = self.db.roles().get(name) else {
                if if_exists {
                    continue;
                }
                return Err(QueryError::UndefinedRole(name.clone()));
            };
            if name == self.current_user() {
                return Err(in_use("current user cannot be dropped"));
            }
            if *name == self.user {
                return Err(in_use("session user cannot be dropped"));
            }
            if role.configured {
                let why =
                    if name == BOOTSTRAP { "it is required by the database system" } else { "it is defined by the server's configuration" };
                return Err(QueryError::DependentObjects(format!("cannot drop role {name} because {why}")));
            }
            let dependents = self.dependents(&role)?;
            if !dependents.is_empty() {
                let e = QueryError::DependentObjects(format!("role \"{name}\" cannot be dropped because some objects depend on it"));
                return Err(e.with_message(dependents.join("\n")));
            }
            dropped.push(name);
        }
        for name in dropped {
            self.db.clone().roles().drop_role(&mut self.ddl(), name)?;
        }
        self.db.invalidate();
        Ok(())
    }

    /// What would be left pointing at a dropped role, as PostgreSQL's DETAIL lists it.
    fn dependents(&self, role: &Role) -> Result<Vec<String>> {
        let mut privileges = Vec::new();
        let mut owned = Vec::new();
        if role.create_in_public {
            privileges.push("privileges for schema public".to_string());
        }
        for name in self.db.table_names() {
            let t = self.db.table(&name)?;
            if t.acl.as_ref().is_some_and(|a| a.names(&role.name)) && t.owner != role.name {
                privileges.push(format!("privileges for table {name}"));
            }
            if t.owner == role.name {
                owned.push(format!("owner of table {name}"));
            }
        }
        privileges.extend(owned);
        Ok(privileges)
    }

    fn set_role(&mut self, role: Option<&str>) -> Result<()> {
        let Some(name) = role else {
            self.role = None;
            return Ok(());
        };
        if self.db.roles().get(name).is_none() {
            return Err(QueryError::InvalidParameterValue(format!("role \"{name}\" does not exist")));
        }
        // Whom the session's own user may become: anyone for a superuser, else itself (no role membership).
        let may = name == self.user || self.db.roles().is_superuser(&self.user).unwrap_or(self.unlisted);
        if !may {
            return Err(QueryError::InsufficientPrivilege(format!("permission denied to set role \"{name}\"")));
        }
        self.role = (name != self.user).then(|| name.to_string());
        Ok(())
    }
}

/// Whether a scan reads the table's values to find its rows (a WHERE, a key, a limit): UPDATE and DELETE
/// then need SELECT as well.
fn reads(scan: &Scan) -> bool {
    scan.filter.is_some() || !matches!(scan.access, AccessPath::FullScan { .. }) || scan.limit.is_some()
}
