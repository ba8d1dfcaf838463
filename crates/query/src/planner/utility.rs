//! SET, `set_config`, DECLARE CURSOR and COPY.

use super::*;

impl Planner<'_> {
    pub(super) fn set(&mut self, s: &ast::Set) -> Result<Plan> {
        match s {
            ast::Set::SingleAssignment { variable, values, .. } => {
                let name = variable.to_string().to_lowercase();
                let value = values
                    .iter()
                    .map(|v| match v {
                        ast::Expr::Value(v) => match &v.value {
                            ast::Value::SingleQuotedString(s) => s.clone(),
                            other => other.to_string(),
                        },
                        ast::Expr::Identifier(i) => i.value.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                let value = if value.eq_ignore_ascii_case("default") { None } else { Some(value) };
                match name.as_str() {
                    // `SET role = r` is SET ROLE; `none` (or DEFAULT) goes back to the session's user.
                    "role" => Ok(Plan::Access(crate::roles::AccessStatement::SetRole(value.filter(|v| !v.eq_ignore_ascii_case("none"))))),
                    "session_authorization" => {
                        Err(QueryError::NotSupported("SET SESSION AUTHORIZATION is not supported: use SET ROLE".into()))
                    }
                    _ => Ok(Plan::SetVariable { name, value }),
                }
            }
            ast::Set::SetTimeZone { value, .. } => Ok(Plan::SetVariable {
                name: "timezone".into(),
                value: Some(match value {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                }),
            }),
            ast::Set::SetNames { charset_name, .. } => {
                Ok(Plan::SetVariable { name: "client_encoding".into(), value: Some(charset_name.to_string()) })
            }
            // SET SESSION CHARACTERISTICS / SET TRANSACTION: every transaction is snapshot isolation.
            ast::Set::SetTransaction { .. } => Ok(Plan::SetVariable { name: "transaction_characteristics".into(), value: None }),
            other => Err(QueryError::NotSupported(format!("statement not supported: {other}"))),
        }
    }

    /// `LOCK TABLE`: ACCESS SHARE only. It conflicts with nothing but ACCESS EXCLUSIVE (DROP, TRUNCATE,
    /// ALTER), which Tabula does not make wait; stronger modes would promise to hold writers off.
    pub(super) fn lock(&mut self, l: &ast::Lock) -> Result<Plan> {
        if !matches!(l.lock_mode, Some(ast::LockTableMode::AccessShare)) {
            let mode = l.lock_mode.as_ref().map_or("ACCESS EXCLUSIVE".to_string(), |m| m.to_string());
            return Err(QueryError::NotSupported(format!("LOCK TABLE in {mode} mode is not supported (only ACCESS SHARE)")));
        }
        // The tables are looked up when it runs, after the transaction check, as PostgreSQL orders them.
        Ok(Plan::LockShared { names: l.tables.iter().map(|t| object_name(&t.name)).collect() })
    }

    /// `SELECT set_config(name, value, is_local)`: a SET that returns the new value (pg_dump's first
    /// statement). Only a session-wide change (`is_local` false) is taken. `of_setting`: the name of
    /// pg_dump's `FROM pg_settings WHERE name = '...'` form, which sets it only if it exists.
    pub(super) fn set_config(&mut self, args: &[&ast::Expr], of_setting: Option<String>) -> Result<Plan> {
        let scope = Scope::empty();
        let ctx =
            crate::expr::EvalCtx { params: &[], now_us: 0, user: "", session_user: "", database: "", zone: self.zone, sequences: None };
        let mut values = Vec::new();
        for a in args.iter().skip(usize::from(of_setting.is_some())) {
            let e = self.binder(&scope).bind(a)?;
            if !e.is_constant() {
                return Err(QueryError::NotSupported("set_config() of other than constants".into()));
            }
            values.push(e.eval(&[], &ctx)?);
        }
        let text = |d: &Datum| match d.clone().cast(SqlType::Text) {
            Ok(Datum::Text(t)) => Some(t),
            _ => None,
        };
        if let Some(name) = &of_setting {
            values.insert(0, Datum::Text(name.clone()));
        }
        let (Some(name), Some(value)) = (text(&values[0]), text(&values[1])) else {
            return Err(QueryError::InvalidParameterValue("set_config() needs a name and a value".into()));
        };
        if crate::expr::truth(&values[2])? != Some(false) {
            return Err(QueryError::NotSupported("set_config() local to the transaction".into()));
        }
        Ok(Plan::SetConfig { name: name.to_lowercase(), value, if_exists: of_setting.is_some() })
    }

    /// `DECLARE name CURSOR FOR query`: forward-only cursors over text rows, as psql, psycopg and
    /// SQLAlchemy declare them.
    pub(super) fn declare(&mut self, stmts: &[ast::Declare]) -> Result<Plan> {
        let [d] = stmts else { return Err(QueryError::NotSupported("DECLARE of several names".into())) };
        let (Some(ast::DeclareType::Cursor), [name], Some(query)) = (&d.declare_type, d.names.as_slice(), &d.for_query) else {
            return Err(QueryError::NotSupported("DECLARE other than of a cursor".into()));
        };
        if d.binary == Some(true) {
            return Err(QueryError::NotSupported("BINARY cursors".into()));
        }
        if d.scroll == Some(true) {
            return Err(QueryError::NotSupported("SCROLL cursors: cursors only move forward".into()));
        }
        if !query.locks.is_empty() {
            return Err(QueryError::NotSupported("DECLARE CURSOR with FOR UPDATE or FOR SHARE".into()));
        }
        Ok(Plan::DeclareCursor { name: ident_name(name), hold: d.hold == Some(true), query: query.clone() })
    }

    pub(super) fn copy(
        &mut self,
        source: &ast::CopySource,
        to: bool,
        target: &ast::CopyTarget,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
    ) -> Result<Plan> {
        let format = crate::copy::CopyFormat::from_options(options, legacy)?;
        match (to, target) {
            (false, ast::CopyTarget::Stdin) | (true, ast::CopyTarget::Stdout) => {}
            _ => {
                return Err(QueryError::NotSupported(
                    "COPY with a file or program on the server is not supported: use STDIN / STDOUT (psql's \\copy)".into(),
                ))
            }
        }
        match source {
            ast::CopySource::Table { table_name, columns } => {
                let table = self.catalog.table(&object_name(table_name))?;
                let targets: Vec<usize> = if columns.is_empty() {
                    (0..table.visible().len()).collect()
                } else {
                    columns
                        .iter()
                        .map(|c| {
                            let n = ident_name(c);
                            table.column_index(&n).ok_or_else(|| QueryError::UndefinedColumn(format!("{n}\" of relation \"{}", table.name)))
                        })
                        .collect::<Result<_>>()?
                };
                if !to {
                    let defaults = self.omitted_defaults(&table, &targets)?;
                    let checks = self.bound_checks(&table)?;
                    return Ok(Plan::CopyFrom { table, targets, defaults, format, checks });
                }
                let projection: Vec<Expr> = targets
                    .iter()
                    .map(|&i| Expr::Column { index: i, ty: table.column_type(i), name: table.column_name(i).to_string() })
                    .collect();
                let columns = targets
                    .iter()
                    .map(|&i| OutputColumn {
                        name: table.column_name(i).to_string(),
                        ty: table.column_type(i),
                        source: Some((table.name.clone(), i)),
                    })
                    .collect();
                let scan = Scan {
                    table: table.clone(),
                    access: AccessPath::FullScan { direction: Direction::Forward },
                    filter: None,
                    limit: None,
                    versions: Versions::Latest,
                    columns: None,
                    ranks: vec![],
                };
                Ok(Plan::CopyTo {
                    select: SelectPlan {
                        scan: Some(scan),
                        projection,
                        columns,
                        sort: vec![],
                        offset: None,
                        limit: None,
                        lock: false,
                        stream: false,
                    },
                    format,
                })
            }
            ast::CopySource::Query(q) if to => Ok(Plan::CopyTo { select: self.select(q)?, format }),
            ast::CopySource::Query(_) => Err(QueryError::Syntax("COPY FROM needs a table".into())),
        }
    }
}
