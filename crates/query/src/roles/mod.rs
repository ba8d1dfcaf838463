//! Roles and table privileges, as PostgreSQL has them.
//!
//! Who is a superuser: the bootstrap role `tabula`, which owns every table made before roles existed; the
//! users of the server's configuration (`--users`), as an installation's first superuser is; and the
//! roles made `SUPERUSER` in SQL. Other roles made in SQL (`CREATE ROLE`, `CREATE USER`) may do what they
//! are granted: privileges on tables (`GRANT SELECT ON t TO r`, PostgreSQL's access control lists), and
//! CREATE on the schema `public`, which PostgreSQL 15 no longer grants to everybody. A table's owner, its
//! maker, has every privilege on it until some are revoked, and alone (with superusers) may alter, drop or
//! grant on it.
//!
//! Under `--auth trust` a name that is no role logs in as a superuser (PostgreSQL refuses it): trust lets
//! anyone on the machine claim the superuser's name anyway.
//!
//! Role records are kept by the store, opaque to it (`Store::set_role`), one per role:
//!
//! ```text
//! "r" name  ->  oid <TAB> superuser <TAB> login <TAB> create_in_public <TAB> scram verifier <TAB> md5 hash
//! ```
//!
//! A table's owner and access control list live with its columns in the table's SQL metadata (`schema`).

pub mod secret;

use std::collections::BTreeMap;

use parking_lot::RwLock;
use tabula_store::{Ddl, Store};

use crate::error::{QueryError, Result};
pub use secret::Secret;

/// The superuser every installation has; trust's default user name.
pub const BOOTSTRAP: &str = "tabula";
/// Its OID (PostgreSQL's bootstrap superuser is 10).
pub const BOOTSTRAP_OID: u32 = 10;
/// OIDs of roles made in SQL start here, above those of configured users.
const FIRST_OID: u32 = 17000;

#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    pub name: String,
    pub oid: u32,
    pub superuser: bool,
    pub login: bool,
    /// `GRANT CREATE ON SCHEMA public`: may create tables.
    pub create_in_public: bool,
    pub password: Option<Secret>,
    /// The bootstrap role or a user of the server's configuration: not made, changed or dropped in SQL.
    pub configured: bool,
}

impl Role {
    fn encode(&self) -> Vec<u8> {
        let (scram, md5) = self.password.as_ref().map_or(("", ""), |s| (s.scram.as_str(), s.md5.as_str()));
        let flag = |b: bool| if b { "1" } else { "0" };
        format!("{}\t{}\t{}\t{}\t{scram}\t{md5}", self.oid, flag(self.superuser), flag(self.login), flag(self.create_in_public))
            .into_bytes()
    }

    fn decode(name: &str, record: &[u8]) -> Result<Role> {
        let bad = || QueryError::Internal(format!("bad catalog record of role {name}"));
        let text = std::str::from_utf8(record).map_err(|_| bad())?;
        let f: Vec<&str> = text.split('\t').collect();
        if f.len() != 6 {
            return Err(bad());
        }
        Ok(Role {
            name: name.to_string(),
            oid: f[0].parse().map_err(|_| bad())?,
            superuser: f[1] == "1",
            login: f[2] == "1",
            create_in_public: f[3] == "1",
            password: if f[4].is_empty() { None } else { Some(Secret::from_parts(f[4], f[5])?) },
            configured: false,
        })
    }
}

/// Every role: those made in SQL, persisted, and those of the configuration.
#[derive(Debug, Default)]
pub struct Registry {
    made: RwLock<BTreeMap<String, Role>>,
    configured: RwLock<Vec<String>>,
}

impl Registry {
    pub fn load(store: &Store) -> Result<Registry> {
        Ok(Registry { made: RwLock::new(Self::read(store)?), configured: RwLock::default() })
    }

    fn read(store: &Store) -> Result<BTreeMap<String, Role>> {
        let mut made = BTreeMap::new();
        for (name, record) in store.roles()? {
            made.insert(name.clone(), Role::decode(&name, &record)?);
        }
        Ok(made)
    }

    /// Reads the roles made in SQL again: a rollback has undone some change of them.
    pub fn reload(&self, store: &Store) -> Result<()> {
        *self.made.write() = Self::read(store)?;
        Ok(())
    }

    /// The users of the server's configuration (superusers, with their passwords kept there).
    pub fn set_configured(&self, mut names: Vec<String>) {
        names.retain(|n| n != BOOTSTRAP);
        names.sort();
        *self.configured.write() = names;
    }

    /// A role by name; the configuration's users come first (a role made in SQL before a user of the same
    /// name was configured is hidden by it).
    pub fn get(&self, name: &str) -> Option<Role> {
        let configured = |oid| Role {
            name: name.to_string(),
            oid,
            superuser: true,
            login: true,
            create_in_public: true,
            password: None,
            configured: true,
        };
        if name == BOOTSTRAP {
            return Some(configured(BOOTSTRAP_OID));
        }
        if let Some(i) = self.configured.read().iter().position(|n| n == name) {
            return Some(configured(16390 + i as u32 + 1));
        }
        self.made.read().get(name).cloned()
    }

    /// Every role, the bootstrap role first, then the configured ones, then those made in SQL, by name.
    pub fn all(&self) -> Vec<Role> {
        let mut names = vec![BOOTSTRAP.to_string()];
        names.extend(self.configured.read().iter().cloned());
        names.extend(self.made.read().keys().filter(|n| !names.contains(n)).cloned().collect::<Vec<_>>());
        names.iter().filter_map(|n| self.get(n)).collect()
    }

    /// Whether a role may do anything. `None`: no such role.
    pub fn is_superuser(&self, name: &str) -> Option<bool> {
        // Asked before every statement: no copy of the role.
        if name == BOOTSTRAP || self.configured.read().iter().any(|n| n == name) {
            return Some(true);
        }
        self.made.read().get(name).map(|r| r.superuser)
    }

    /// Makes a role; its OID is the next free one. `ddl` writes it, in the session's transaction if any.
    pub fn create(&self, ddl: &mut Ddl, mut role: Role) -> Result<()> {
        if self.get(&role.name).is_some() {
            return Err(QueryError::DuplicateRole(role.name));
        }
        let mut made = self.made.write();
        role.oid = made.values().map(|r| r.oid + 1).max().unwrap_or(FIRST_OID).max(FIRST_OID);
        ddl.set_role(&role.name, Some(role.encode()))?;
        made.insert(role.name.clone(), role);
        Ok(())
    }

    /// Replaces a role made in SQL.
    pub fn update(&self, ddl: &mut Ddl, role: Role) -> Result<()> {
        let mut made = self.made.write();
        if !made.contains_key(&role.name) {
            return Err(QueryError::UndefinedRole(role.name));
        }
        ddl.set_role(&role.name, Some(role.encode()))?;
        made.insert(role.name.clone(), role);
        Ok(())
    }

    pub fn drop_role(&self, ddl: &mut Ddl, name: &str) -> Result<()> {
        let mut made = self.made.write();
        ddl.set_role(name, None)?;
        made.remove(name);
        Ok(())
    }
}

/// A privilege on a table, with its letter in an access control list (PostgreSQL's `aclitem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    Insert,
    Select,
    Update,
    Delete,
    Truncate,
    References,
    Trigger,
}

impl Privilege {
    /// In PostgreSQL's order of the letters (`arwdDxt`).
    pub const ALL: [Privilege; 7] = [
        Privilege::Insert,
        Privilege::Select,
        Privilege::Update,
        Privilege::Delete,
        Privilege::Truncate,
        Privilege::References,
        Privilege::Trigger,
    ];

    pub fn letter(self) -> char {
        b"arwdDxt"[self as usize] as char
    }

    pub fn name(self) -> &'static str {
        ["INSERT", "SELECT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"][self as usize]
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of privileges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Privileges(u8);

impl Privileges {
    pub const ALL: Privileges = Privileges(0x7f);

    pub fn of(list: &[Privilege]) -> Privileges {
        Privileges(list.iter().fold(0, |b, p| b | p.bit()))
    }

    pub fn has(self, p: Privilege) -> bool {
        self.0 & p.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn letters(self) -> String {
        Privilege::ALL.iter().filter(|p| self.has(**p)).map(|p| p.letter()).collect()
    }

    pub fn from_letters(s: &str) -> Privileges {
        Privileges::of(&Privilege::ALL.into_iter().filter(|p| s.contains(p.letter())).collect::<Vec<_>>())
    }
}

/// Who holds which privileges on a table, in the order they were first granted. The grantee `""` is
/// PUBLIC, everybody. A table whose privileges were never granted or revoked has none (`TableSchema::acl`
/// is `None`): its owner holds them all, as in PostgreSQL.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Acl(pub Vec<(String, Privileges)>);

impl Acl {
    /// The list a table starts with: its owner holds everything.
    pub fn owner_default(owner: &str) -> Acl {
        Acl(vec![(owner.to_string(), Privileges::ALL)])
    }

    pub fn grant(&mut self, grantee: &str, privileges: Privileges) {
        match self.0.iter_mut().find(|(g, _)| g == grantee) {
            Some((_, p)) => p.0 |= privileges.0,
            None => self.0.push((grantee.to_string(), privileges)),
        }
    }

    pub fn revoke(&mut self, grantee: &str, privileges: Privileges) {
        for (g, p) in &mut self.0 {
            if g == grantee {
                p.0 &= !privileges.0;
            }
        }
        self.0.retain(|(_, p)| !p.is_empty());
    }

    /// Whether `role` holds `p` itself or through PUBLIC.
    pub fn allows(&self, role: &str, p: Privilege) -> bool {
        self.0.iter().any(|(g, have)| (g == role || g.is_empty()) && have.has(p))
    }

    /// Whether `role` is named in it.
    pub fn names(&self, role: &str) -> bool {
        self.0.iter().any(|(g, _)| g == role)
    }

    /// As `pg_class.relacl` prints it: `{owner=arwdDxt/owner,=r/owner}` (every grant is the owner's).
    pub fn display(&self, owner: &str) -> String {
        format!("{{{}}}", self.items(owner).join(","))
    }

    /// Its aclitems: `grantee=letters/grantor`.
    pub fn items(&self, owner: &str) -> Vec<String> {
        self.0.iter().map(|(g, p)| format!("{}={}/{}", acl_name(g), p.letters(), acl_name(owner))).collect()
    }
}

/// A role name inside an aclitem, quoted as PostgreSQL quotes it.
pub(crate) fn acl_name(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// A statement about roles and privileges, planned ([`crate::access`]) and then run by the session.
#[derive(Debug, Clone, PartialEq)]
pub enum AccessStatement {
    CreateRole {
        name: String,
        if_not_exists: bool,
        options: RoleOptions,
    },
    AlterRole {
        name: String,
        options: RoleOptions,
    },
    DropRole {
        names: Vec<String>,
        if_exists: bool,
    },
    /// `GRANT` or `REVOKE` of table privileges; `tables: None` is ALL TABLES IN SCHEMA public.
    Tables {
        grant: bool,
        privileges: Privileges,
        tables: Option<Vec<String>>,
        grantees: Vec<String>,
    },
    /// `GRANT` or `REVOKE CREATE ON SCHEMA public`.
    CreateInPublic {
        grant: bool,
        grantees: Vec<String>,
    },
    /// `SET ROLE name`, or back to the session's user (`None`: `SET ROLE NONE`).
    SetRole(Option<String>),
    ResetRole,
}

/// What CREATE ROLE or ALTER ROLE sets; `None` leaves it as it is (or at its default).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoleOptions {
    pub superuser: Option<bool>,
    pub login: Option<bool>,
    /// `Some(None)`: `PASSWORD NULL` (or an empty password).
    pub password: Option<Option<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_grants_revokes_and_prints_as_postgresql() {
        let mut acl = Acl::owner_default("alice");
        acl.grant("bob", Privileges::of(&[Privilege::Select, Privilege::Update]));
        acl.grant("", Privileges::of(&[Privilege::Select]));
        assert_eq!(acl.display("alice"), "{alice=arwdDxt/alice,bob=rw/alice,=r/alice}");
        assert!(acl.allows("carol", Privilege::Select), "through PUBLIC");
        assert!(!acl.allows("carol", Privilege::Insert));
        acl.revoke("bob", Privileges::ALL);
        acl.revoke("alice", Privileges::of(&[Privilege::Delete]));
        assert_eq!(acl.display("alice"), "{alice=arwDxt/alice,=r/alice}");
        assert_eq!(Privileges::from_letters("arwDxt"), acl.0[0].1);
    }
}
