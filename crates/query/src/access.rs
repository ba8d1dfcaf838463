//! CREATE/ALTER/DROP ROLE, GRANT, REVOKE and SET ROLE, from sqlparser's statements to an
//! [`AccessStatement`]. What Tabula's roles do not have (role membership, grant options, column privileges,
//! CREATEROLE and the other attributes) is refused with 0A000 rather than ignored.

use sqlparser::ast::{self, Statement};
use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

use crate::error::{QueryError, Result};
use crate::roles::{AccessStatement, Privilege, Privileges, RoleOptions};
use crate::schema::ident_name;

fn unsupported(what: &str) -> QueryError {
    QueryError::NotSupported(format!("{what} is not supported"))
}

/// The statement as an access statement, or `None` when it is none.
pub fn access_statement(stmt: &Statement) -> Result<Option<AccessStatement>> {
    Ok(Some(match stmt {
        Statement::CreateRole(c) => create_role(c)?,
        Statement::AlterRole { name, operation } => match operation {
            ast::AlterRoleOperation::WithOptions { options } => {
                AccessStatement::AlterRole { name: ident_name(name), options: role_options(options, RoleOptions::default())? }
            }
            ast::AlterRoleOperation::RenameRole { .. } => return Err(unsupported("ALTER ROLE ... RENAME")),
            _ => return Err(unsupported("ALTER ROLE ... SET and RESET")),
        },
        Statement::Drop { object_type: ast::ObjectType::Role | ast::ObjectType::User, if_exists, names, .. } => {
            AccessStatement::DropRole { names: names.iter().map(role_name).collect::<Result<_>>()?, if_exists: *if_exists }
        }
        Statement::Grant(g) => {
            if g.with_grant_option {
                return Err(unsupported("WITH GRANT OPTION"));
            }
            if g.granted_by.is_some() || g.as_grantor.is_some() || g.current_grants.is_some() {
                return Err(unsupported("GRANTED BY"));
            }
            grant_or_revoke(true, &g.privileges, g.objects.as_ref(), &g.grantees)?
        }
        Statement::Revoke(r) => {
            if r.granted_by.is_some() {
                return Err(unsupported("GRANTED BY"));
            }
            grant_or_revoke(false, &r.privileges, r.objects.as_ref(), &r.grantees)?
        }
        Statement::Set(ast::Set::SetRole { role_name, .. }) => AccessStatement::SetRole(role_name.as_ref().map(ident_name)),
        _ => return Ok(None),
    }))
}

/// `CREATE USER` and `ALTER USER` are PostgreSQL's `CREATE ROLE ... LOGIN` and `ALTER ROLE`; sqlparser reads
/// them as Snowflake's statements, so the tokens of each such statement are rewritten to the role forms.
pub fn user_as_role(tokens: &mut Vec<TokenWithSpan>) {
    let mut start = 0;
    while start < tokens.len() {
        let end = tokens[start..].iter().position(|t| t.token == Token::SemiColon).map_or(tokens.len(), |i| start + i);
        let words: Vec<(usize, String)> = (start..end)
            .filter_map(|i| match &tokens[i].token {
                Token::Whitespace(_) | Token::EOF => None,
                Token::Word(w) if w.quote_style.is_none() => Some((i, w.value.to_lowercase())),
                _ => Some((i, String::new())),
            })
            .collect();
        let mut next = end + 1;
        if let [(_, first), (user, second), ..] = words.as_slice() {
            if second == "user" && (first == "create" || first == "alter") {
                tokens[*user].token = Token::make_keyword("ROLE");
                if first == "create" && !words.iter().any(|(_, w)| w == "login" || w == "nologin") {
                    let at = words.last().map_or(end, |(i, _)| i + 1);
                    tokens.insert(at, TokenWithSpan::wrap(Token::make_keyword("LOGIN")));
                    tokens.insert(at, TokenWithSpan::wrap(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space)));
                    next += 2;
                }
            }
        }
        start = next;
    }
}

/// What a GRANT or REVOKE that sqlparser could not parse meant, when it is a form PostgreSQL has and
/// Tabula refuses: `GRANT role TO role` or `REVOKE role FROM role` (no ON), and `REVOKE GRANT OPTION FOR`.
pub fn refused_unparsed(tokens: &[TokenWithSpan]) -> Option<QueryError> {
    let mut words = tokens.iter().filter(|t| !matches!(t.token, Token::Whitespace(_)));
    let is = |t: Option<&TokenWithSpan>, k: Keyword| matches!(t.map(|t| &t.token), Some(Token::Word(w)) if w.keyword == k);
    let first = words.next();
    if !is(first, Keyword::GRANT) && !is(first, Keyword::REVOKE) {
        return None;
    }
    if is(first, Keyword::REVOKE) && is(words.next(), Keyword::GRANT) && is(words.next(), Keyword::OPTION) {
        return Some(unsupported("REVOKE GRANT OPTION FOR"));
    }
    let has_on = tokens.iter().any(|t| is(Some(t), Keyword::ON));
    (!has_on).then(|| QueryError::NotSupported("role membership (GRANT role TO role) is not supported".into()))
}

fn role_name(n: &ast::ObjectName) -> Result<String> {
    match n.0.as_slice() {
        [ast::ObjectNamePart::Identifier(id)] => Ok(ident_name(id)),
        _ => Err(QueryError::Syntax(format!("role name \"{n}\" is not a plain name"))),
    }
}

fn create_role(c: &ast::CreateRole) -> Result<AccessStatement> {
    let [name] = c.names.as_slice() else { return Err(unsupported("CREATE ROLE of several roles")) };
    if c.create_db == Some(true) || c.create_role == Some(true) || c.replication == Some(true) || c.bypassrls == Some(true) {
        return Err(unsupported("CREATEDB, CREATEROLE, REPLICATION and BYPASSRLS"));
    }
    if c.connection_limit.is_some() || c.valid_until.is_some() {
        return Err(unsupported("CONNECTION LIMIT and VALID UNTIL"));
    }
    if !(c.in_role.is_empty() && c.in_group.is_empty() && c.role.is_empty() && c.user.is_empty() && c.admin.is_empty()) {
        return Err(unsupported("role membership (IN ROLE, ROLE, ADMIN)"));
    }
    let password = match &c.password {
        None => None,
        Some(p) => Some(password(p)?),
    };
    let name = role_name(name)?;
    // sqlparser reads CREATE USER as CREATE ROLE with LOGIN given; PostgreSQL's default for a role is NOLOGIN.
    let options = RoleOptions { superuser: c.superuser, login: c.login, password };
    Ok(AccessStatement::CreateRole { name, if_not_exists: c.if_not_exists, options })
}

fn password(p: &ast::Password) -> Result<Option<String>> {
    match p {
        ast::Password::NullPassword => Ok(None),
        ast::Password::Password(ast::Expr::Value(v)) => match &v.value {
            // PostgreSQL: "empty string is not a valid password, clearing password".
            ast::Value::SingleQuotedString(s) => Ok((!s.is_empty()).then(|| s.clone())),
            ast::Value::Null => Ok(None),
            other => Err(QueryError::Syntax(format!("a password is a string literal, not {other}"))),
        },
        ast::Password::Password(other) => Err(QueryError::Syntax(format!("a password is a string literal, not {other}"))),
    }
}

fn role_options(options: &[ast::RoleOption], mut out: RoleOptions) -> Result<RoleOptions> {
    for o in options {
        match o {
            ast::RoleOption::SuperUser(b) => out.superuser = Some(*b),
            ast::RoleOption::Login(b) => out.login = Some(*b),
            ast::RoleOption::Password(p) => out.password = Some(password(p)?),
            ast::RoleOption::Inherit(true) => {}
            ast::RoleOption::CreateDB(false) | ast::RoleOption::CreateRole(false) | ast::RoleOption::Replication(false) => {}
            ast::RoleOption::BypassRLS(false) => {}
            other => return Err(unsupported(&format!("role option {other}"))),
        }
    }
    Ok(out)
}

fn grant_or_revoke(
    grant: bool,
    privileges: &ast::Privileges,
    objects: Option<&ast::GrantObjects>,
    grantees: &[ast::Grantee],
) -> Result<AccessStatement> {
    let grantees = grantees
        .iter()
        .map(|g| match (&g.grantee_type, &g.name) {
            (ast::GranteesType::Public, _) => Ok(String::new()),
            (
                ast::GranteesType::None | ast::GranteesType::Role | ast::GranteesType::User | ast::GranteesType::Group,
                Some(ast::GranteeName::ObjectName(n)),
            ) => role_name(n),
            _ => Err(QueryError::Syntax(format!("grantee {g} is not a role"))),
        })
        .collect::<Result<Vec<_>>>()?;
    let Some(objects) = objects else { return Err(unsupported("role membership (GRANT role TO role)")) };
    match objects {
        ast::GrantObjects::Tables(names) => {
            let tables = names.iter().map(crate::schema::table_name).collect();
            Ok(AccessStatement::Tables { grant, privileges: table_privileges(privileges)?, tables: Some(tables), grantees })
        }
        ast::GrantObjects::AllTablesInSchema { schemas } => {
            public_schema(schemas)?;
            Ok(AccessStatement::Tables { grant, privileges: table_privileges(privileges)?, tables: None, grantees })
        }
        ast::GrantObjects::Schemas(schemas) => {
            public_schema(schemas)?;
            match privileges {
                ast::Privileges::Actions(a) if matches!(a.as_slice(), [ast::Action::Create { obj_type: None }]) => {
                    Ok(AccessStatement::CreateInPublic { grant, grantees })
                }
                ast::Privileges::All { .. } => Ok(AccessStatement::CreateInPublic { grant, grantees }),
                // USAGE on public is everybody's and stays so.
                _ => Err(unsupported("privileges on the schema public other than CREATE")),
            }
        }
        other => Err(unsupported(&format!("privileges on {}", first_word(&other.to_string())))),
    }
}

fn first_word(s: &str) -> String {
    s.split_whitespace().next().unwrap_or("").to_string()
}

fn public_schema(schemas: &[ast::ObjectName]) -> Result<()> {
    for s in schemas {
        let name = role_name(s)?;
        if name != "public" {
            return Err(QueryError::Engine { sqlstate: "3F000", message: format!("schema \"{name}\" does not exist") });
        }
    }
    Ok(())
}

fn table_privileges(p: &ast::Privileges) -> Result<Privileges> {
    let actions = match p {
        ast::Privileges::All { .. } => return Ok(Privileges::ALL),
        ast::Privileges::Actions(a) => a,
    };
    let column_list = || unsupported("column privileges");
    let list = actions
        .iter()
        .map(|a| {
            Ok(match a {
                ast::Action::Select { columns: None } => Privilege::Select,
                ast::Action::Insert { columns: None } => Privilege::Insert,
                ast::Action::Update { columns: None } => Privilege::Update,
                ast::Action::References { columns: None } => Privilege::References,
                ast::Action::Select { .. } | ast::Action::Insert { .. } | ast::Action::Update { .. } | ast::Action::References { .. } => {
                    return Err(column_list())
                }
                ast::Action::Delete => Privilege::Delete,
                ast::Action::Truncate => Privilege::Truncate,
                ast::Action::Trigger => Privilege::Trigger,
                other => {
                    return Err(QueryError::Engine { sqlstate: "0LP01", message: format!("invalid privilege type {other} for table") })
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Privileges::of(&list))
}
