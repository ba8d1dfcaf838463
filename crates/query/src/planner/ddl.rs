//! CREATE TABLE and ALTER TABLE.

use super::*;

/// The hash buckets a table gets when its partition key is generated: up to this many partitions take
/// its inserts at once. Each ordered or range read merges one cursor per bucket, so more buckets cost
/// reads; 16 spreads the writes over more partitions than one machine's cores while keeping that merge
/// small. `WITH (hash_prefix = N)` chooses otherwise.
pub const GENERATED_KEY_BUCKETS: u16 = 16;

/// The names of the options in `WITH (...)`.
fn table_option_names(opts: &ast::CreateTableOptions) -> impl Iterator<Item = String> + '_ {
    let list: &[ast::SqlOption] = match opts {
        ast::CreateTableOptions::None => &[],
        ast::CreateTableOptions::With(l)
        | ast::CreateTableOptions::Options(l)
        | ast::CreateTableOptions::Plain(l)
        | ast::CreateTableOptions::TableProperties(l) => l,
    };
    list.iter().filter_map(|o| match o {
        ast::SqlOption::KeyValue { key, .. } => Some(ident_name(key)),
        _ => None,
    })
}

impl Planner<'_> {
    pub(super) fn create_table(&mut self, c: &ast::CreateTable) -> Result<Plan> {
        if c.query.is_some() || c.like.is_some() {
            return Err(QueryError::NotSupported("CREATE TABLE AS / LIKE".into()));
        }
        // A temporary table has come here under its private name, made by the session (`crate::temp`);
        // made as an ordinary one, it would be shared by every session and kept.
        if c.temporary || c.global.is_some() {
            return Err(QueryError::NotSupported("CREATE TEMPORARY TABLE outside a session".into()));
        }
        let name = created_name(&c.name)?;
        let mut columns = Vec::new();
        let mut unique = Vec::new();
        // CHECK constraints, with the column each was declared on.
        let mut checks: Vec<(Option<String>, ast::CheckConstraint)> = Vec::new();
        let mut foreign_keys: Vec<(Option<String>, ast::ForeignKeyConstraint)> = Vec::new();
        let mut pk_names: Vec<String> = Vec::new();
        let mut partition_key_len = 1;
        for col in &c.columns {
            let cname = ident_name(&col.name);
            if columns.iter().any(|d: &ColumnDef| d.name == cname) {
                return Err(QueryError::InvalidTableDefinition(format!("column \"{cname}\" specified more than once")));
            }
            if cname == VERSION_COLUMN {
                return Err(QueryError::InvalidName(format!("column name \"{VERSION_COLUMN}\" is reserved for versions")));
            }
            let type_text = col.data_type.to_string().to_lowercase();
            let serial = matches!(type_text.as_str(), "bigserial" | "serial" | "smallserial" | "serial8" | "serial4");
            let (ty, max_chars) = crate::expr::column_type(&col.data_type)?;
            let numeric = crate::types::numeric_spec(&col.data_type)?;
            let mut def = ColumnDef { not_null: serial, identity: serial, max_chars, numeric, ..ColumnDef::plain(&cname, ty) };
            for opt in &col.options {
                match &opt.option {
                    ast::ColumnOption::NotNull => def.not_null = true,
                    ast::ColumnOption::Null => def.not_null = false,
                    ast::ColumnOption::PrimaryKey(_) => {
                        if !pk_names.is_empty() {
                            return Err(QueryError::InvalidTableDefinition(format!(
                                "multiple primary keys for table \"{name}\" are not allowed"
                            )));
                        }
                        pk_names.push(cname.clone());
                    }
                    // No default at all, as PostgreSQL stores none for it (the catalog shows none).
                    ast::ColumnOption::Default(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => def.default = None,
                    ast::ColumnOption::Default(e) => {
                        // Checked now: a DEFAULT that cannot be evaluated is refused, never ignored.
                        let text = default_text(e);
                        self.bind_default(&text, ty, &cname)?;
                        def.default = Some(text);
                    }
                    ast::ColumnOption::Generated { generation_expr: None, generated_as, .. } => {
                        def.identity = true;
                        def.always = matches!(generated_as, ast::GeneratedAs::Always);
                        def.not_null = true;
                    }
                    ast::ColumnOption::Identity(_) => {
                        def.identity = true;
                        def.not_null = true;
                    }
                    ast::ColumnOption::Unique(u) => {
                        let name = opt.name.as_ref().or(u.name.as_ref()).map(ident_name);
                        let (_, nulls_not_distinct) = super::index::unique_columns(u)?;
                        unique.push((name, vec![cname.clone()], nulls_not_distinct));
                    }
                    ast::ColumnOption::Check(c) => {
                        let name = opt.name.clone().or(c.name.clone());
                        checks.push((Some(cname.clone()), ast::CheckConstraint { name, ..c.clone() }));
                    }
                    ast::ColumnOption::ForeignKey(f) => {
                        let name = opt.name.clone().or(f.name.clone());
                        foreign_keys.push((Some(cname.clone()), ast::ForeignKeyConstraint { name, ..f.clone() }));
                    }
                    other => return Err(QueryError::NotSupported(format!("column option {other} is not supported"))),
                }
            }
            columns.push(def);
        }
        for con in &c.constraints {
            match con {
                ast::TableConstraint::PrimaryKey(pk) => {
                    if !pk_names.is_empty() {
                        return Err(QueryError::InvalidTableDefinition(format!(
                            "multiple primary keys for table \"{name}\" are not allowed"
                        )));
                    }
                    (pk_names, partition_key_len) = key_names(pk)?;
                }
                ast::TableConstraint::Unique(u) => {
                    let (columns, nulls_not_distinct) = super::index::unique_columns(u)?;
                    unique.push((u.name.as_ref().map(ident_name), columns, nulls_not_distinct));
                }
                ast::TableConstraint::Check(c) => checks.push((None, c.clone())),
                ast::TableConstraint::ForeignKey(f) => foreign_keys.push((None, f.clone())),
                other => return Err(QueryError::NotSupported(format!("constraint {other} is not supported"))),
            }
        }
        // Without a primary key the rows are stored under a hidden, generated row id (as CockroachDB's
        // `rowid`), hash-prefixed below as every generated partition key is.
        let keyless = pk_names.is_empty();
        let hash_prefix_given = table_option_names(&c.table_options).any(|k| k == "hash_prefix");
        if keyless {
            let id = ColumnDef::row_id(&columns, hash_prefix_given);
            pk_names.push(id.name.clone());
            columns.push(id);
        }
        let pk = key_columns(&name, &mut columns, &pk_names)?;
        let mut generated_partition_key = None;
        for (i, col) in columns.iter().enumerate() {
            if col.identity {
                match pk.iter().position(|&k| k == i) {
                    None => {
                        return Err(QueryError::NotSupported(format!(
                            "identity column \"{}\" outside the primary key: generated values are drawn for key columns only",
                            col.name
                        )))
                    }
                    Some(p) if p < partition_key_len => generated_partition_key = Some(col.name.clone()),
                    _ => {}
                }
                if !col.ty.is_integer() {
                    return Err(QueryError::InvalidParameterValue("identity column type must be smallint, integer, or bigint".into()));
                }
            }
        }
        let mut options = self.table_options(&c.table_options, TableOptions::default(), true)?;
        // Sequential values in the partition key write to one partition at a time; the seeds' remedy is a
        // hash prefix, which Tabula applies itself unless the table names its own `hash_prefix` (0: none).
        let generated_hash_prefix = match generated_partition_key {
            Some(column) if !hash_prefix_given => {
                options.hash_prefix = GENERATED_KEY_BUCKETS;
                // No NOTICE names a hidden row id: the user chose no key.
                (!keyless).then_some(column)
            }
            _ => None,
        };
        for c in unique.iter().flat_map(|(_, cols, _)| cols) {
            if !columns.iter().any(|d| d.name == *c && d.hidden.is_none()) {
                return Err(QueryError::Engine { sqlstate: "42703", message: format!("column \"{c}\" named in key does not exist") });
            }
        }
        // The CHECKs, bound over the table as it will be.
        let mut table = TableSchema::new(&name, columns.clone(), (pk.clone(), partition_key_len), options, "");
        for (column, c) in &checks {
            let def = self.check_def(&table, c, column.as_deref(), &super::check::constraint_names(&table))?;
            table.checks.push(def);
        }
        if !foreign_keys.is_empty() {
            crate::temp::no_foreign_key(&name)?;
        }
        for (column, f) in &foreign_keys {
            let def = self.fk_def(&table, f, column.as_deref(), &super::check::constraint_names(&table))?;
            table.foreign_keys.push(def);
        }
        let on_commit = crate::temp::on_commit(&name, c.on_commit)?;
        Ok(Plan::CreateTable(CreateTablePlan {
            name,
            if_not_exists: c.if_not_exists,
            columns,
            pk,
            partition_key_len,
            options,
            generated_hash_prefix,
            unique,
            checks: table.checks,
            foreign_keys: table.foreign_keys,
            on_commit,
        }))
    }

    pub(super) fn table_options(&mut self, opts: &ast::CreateTableOptions, mut o: TableOptions, creating: bool) -> Result<TableOptions> {
        let list = match opts {
            ast::CreateTableOptions::None => return Ok(o),
            ast::CreateTableOptions::With(l)
            | ast::CreateTableOptions::Options(l)
            | ast::CreateTableOptions::Plain(l)
            | ast::CreateTableOptions::TableProperties(l) => l,
        };
        for opt in list {
            let ast::SqlOption::KeyValue { key, value } = opt else {
                return Err(QueryError::InvalidParameterValue(format!("unrecognized table option {opt}")));
            };
            crate::options::set(&mut o, &ident_name(key), &crate::options::text_of(value), creating)?;
        }
        Ok(o)
    }

    pub(super) fn alter_table(&mut self, a: &ast::AlterTable) -> Result<Plan> {
        let table = object_name(&a.name);
        let [op] = a.operations.as_slice() else {
            return Err(QueryError::NotSupported("ALTER TABLE with several actions".into()));
        };
        match op {
            ast::AlterTableOperation::SetOptionsParens { options } => {
                let mut set = Vec::new();
                for opt in options {
                    let ast::SqlOption::KeyValue { key, value } = opt else {
                        return Err(QueryError::InvalidParameterValue(format!("unrecognized table option {opt}")));
                    };
                    // Checked now, applied against the current options at execution.
                    let (key, text) = (ident_name(key), crate::options::text_of(value));
                    crate::options::set(&mut TableOptions::default(), &key, &text, false)?;
                    set.push((key, text));
                }
                Ok(Plan::SetOptions { table, set, reset: vec![] })
            }
            ast::AlterTableOperation::AddColumn { column_def, if_not_exists, .. } => {
                let (ty, max_chars) = crate::expr::column_type(&column_def.data_type)?;
                let numeric = crate::types::numeric_spec(&column_def.data_type)?;
                let name = ident_name(&column_def.name);
                let mut col = ColumnDef { max_chars, numeric, ..ColumnDef::plain(&name, ty) };
                for opt in &column_def.options {
                    match &opt.option {
                        ast::ColumnOption::Null => col.not_null = false,
                        ast::ColumnOption::NotNull => col.not_null = true,
                        ast::ColumnOption::Default(ast::Expr::Value(v)) if matches!(v.value, ast::Value::Null) => col.default = None,
                        // Checked now: a DEFAULT that cannot be evaluated is refused, never ignored. The rows
                        // there get it when the column is added.
                        ast::ColumnOption::Default(e) => {
                            let text = default_text(e);
                            self.bind_default(&text, ty, &name)?;
                            col.default = Some(text);
                        }
                        other => return Err(QueryError::NotSupported(format!("ADD COLUMN with {other}"))),
                    }
                }
                Ok(Plan::AddColumn { table, column: col, if_not_exists: *if_not_exists })
            }
            ast::AlterTableOperation::DropColumn { column_names, if_exists, .. } => {
                let [c] = column_names.as_slice() else {
                    return Err(QueryError::NotSupported("dropping several columns at once".into()));
                };
                Ok(Plan::DropColumn { table, column: ident_name(c), if_exists: *if_exists })
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::PrimaryKey(pk), .. } => {
                // The key's index and constraint are always `<table>_pkey` in the catalog.
                if let Some(n) = pk.name.as_ref().map(ident_name).filter(|n| *n != format!("{table}_pkey")) {
                    return Err(QueryError::NotSupported(format!("a primary key named \"{n}\": Tabula names it \"{table}_pkey\"")));
                }
                let (columns, partition_key_len) = key_names(pk)?;
                Ok(Plan::AddPrimaryKey { table, columns, partition_key_len })
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::Unique(u), .. } => {
                let (columns, nulls_not_distinct) = super::index::unique_columns(u)?;
                let schema = self.catalog.table(&table)?;
                if let Some(c) = columns.iter().find(|c| schema.column_index(c).filter(|&i| i < schema.visible().len()).is_none()) {
                    return Err(QueryError::UndefinedColumn(c.clone()));
                }
                let name = u.name.as_ref().map(ident_name);
                Ok(Plan::CreateIndex {
                    table,
                    name,
                    columns,
                    unique: true,
                    constraint: true,
                    if_not_exists: false,
                    descending: vec![],
                    nulls_not_distinct,
                    local: false,
                    include: vec![],
                })
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::Check(c), not_valid } => {
                let t = self.catalog.table(&table)?;
                let check = self.check_def(&t, c, None, &super::check::constraint_names(&t))?;
                Ok(Plan::AddCheck { table, check, validate: !*not_valid })
            }
            ast::AlterTableOperation::AddConstraint { constraint: ast::TableConstraint::ForeignKey(f), not_valid } => {
                let t = self.catalog.table(&table)?;
                let fk = self.fk_def(&t, f, None, &super::check::constraint_names(&t))?;
                Ok(Plan::AddForeignKey { table, fk, validate: !*not_valid })
            }
            ast::AlterTableOperation::DropConstraint { if_exists, name, drop_behavior } => {
                if matches!(drop_behavior, Some(ast::DropBehavior::Cascade)) {
                    return Err(QueryError::NotSupported("DROP CONSTRAINT ... CASCADE".into()));
                }
                Ok(Plan::DropConstraint { table, name: ident_name(name), if_exists: *if_exists })
            }
            ast::AlterTableOperation::AlterColumn { column_name, op } => self.alter_column(table, ident_name(column_name), op),
            ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                Ok(Plan::RenameColumn { table, from: ident_name(old_column_name), to: ident_name(new_column_name) })
            }
            ast::AlterTableOperation::OwnerTo { new_owner } => Ok(Plan::AlterOwner { table, owner: new_owner.clone() }),
            ast::AlterTableOperation::RenameTable { table_name: ast::RenameTableNameKind::To(to) | ast::RenameTableNameKind::As(to) } => {
                Ok(Plan::RenameTable { table, to: created_name(to)? })
            }
            other => Err(QueryError::NotSupported(format!("ALTER TABLE {other}"))),
        }
    }
}

impl Planner<'_> {
    /// `ALTER TABLE t ALTER COLUMN c SET DEFAULT x | DROP DEFAULT | DROP NOT NULL | SET NOT NULL | TYPE t`:
    /// the catalog only, as in PostgreSQL (a default applies to rows written from then on; NOT NULL and a
    /// type between types stored alike once the rows are checked). Other `TYPE`s rewrite every row
    /// ([`ColumnChange::Convert`]).
    fn alter_column(&mut self, table: String, column: String, op: &ast::AlterColumnOperation) -> Result<Plan> {
        let t = self.catalog.table(&table)?;
        let i = t
            .column_index(&column)
            .filter(|&i| i < t.columns.len())
            .ok_or_else(|| QueryError::UndefinedColumn(format!("{column}\" of relation \"{table}")))?;
        let identity = || QueryError::Syntax(format!("column \"{column}\" of relation \"{table}\" is an identity column"));
        let change = match op {
            ast::AlterColumnOperation::SetDefault { .. } | ast::AlterColumnOperation::DropDefault if t.columns[i].identity => {
                return Err(identity())
            }
            ast::AlterColumnOperation::SetDefault { value: ast::Expr::Value(v) } if matches!(v.value, ast::Value::Null) => {
                ColumnChange::Default(None)
            }
            ast::AlterColumnOperation::SetDefault { value } => {
                // Checked now: a DEFAULT that cannot be evaluated is refused, never ignored.
                let text = default_text(value);
                self.bind_default(&text, t.columns[i].ty, &column)?;
                ColumnChange::Default(Some(text))
            }
            ast::AlterColumnOperation::DropDefault => ColumnChange::Default(None),
            ast::AlterColumnOperation::DropNotNull if t.is_pk(i) && t.columns[i].identity => return Err(identity()),
            ast::AlterColumnOperation::DropNotNull if t.is_pk(i) => {
                return Err(QueryError::InvalidTableDefinition(format!("column \"{column}\" is in a primary key")))
            }
            ast::AlterColumnOperation::DropNotNull => ColumnChange::Nullable,
            ast::AlterColumnOperation::SetNotNull => ColumnChange::NotNull,
            ast::AlterColumnOperation::SetDataType { data_type, using, .. } => {
                let (ty, max_chars) = crate::expr::column_type(data_type)?;
                let numeric = crate::types::numeric_spec(data_type)?;
                let old = &t.columns[i];
                let plain_using = using.as_ref().is_none_or(|u| matches!(u, ast::Expr::Identifier(id) if ident_name(id) == column));
                // A bpchar is held without its trailing spaces: another text type's values may have them.
                let to_bpchar = matches!(ty, SqlType::Bpchar(_)) && !matches!(old.ty, SqlType::Bpchar(_));
                // A precision and scale, or new ones, round the values there.
                let rescaled = numeric.is_some() && numeric != old.numeric;
                let in_place = old.ty == ty || (old.ty.is_text() && ty.is_text()) || (old.ty.is_integer() && ty.is_integer());
                if plain_using && !to_bpchar && !rescaled && in_place {
                    ColumnChange::Type { ty, max_chars, numeric }
                } else {
                    self.converted_column(&t, i, ty, max_chars, numeric, using.as_ref())?
                }
            }
            other => return Err(QueryError::NotSupported(format!("ALTER COLUMN {other}: it would check or rewrite every row"))),
        };
        Ok(Plan::AlterColumn { table, column, change })
    }
}

impl Planner<'_> {
    /// `ALTER COLUMN c TYPE t [USING expr]` that rewrites the rows. Without USING the old type must be
    /// assignable to the new one (42804 with PostgreSQL's HINT otherwise); USING may name only the column.
    /// A key column's rows move to their new keys. Not built (0A000): an identity key column's, and a USING
    /// that reads `_version`.
    fn converted_column(
        &mut self,
        t: &Arc<TableSchema>,
        i: usize,
        ty: SqlType,
        max_chars: Option<u32>,
        numeric: Option<(u32, u32)>,
        using: Option<&ast::Expr>,
    ) -> Result<ColumnChange> {
        let column = t.columns[i].name.clone();
        // Named as PostgreSQL prints the type.
        let data_type = ColumnDef { max_chars, numeric, ..ColumnDef::plain("", ty) }.type_name();
        let refused = |why: &str| QueryError::NotSupported(format!("ALTER COLUMN TYPE of column \"{column}\": {why}"));
        // A key column's rows move to their new keys (`Store::rebuild_converting`).
        if t.is_pk(i) && ty.pk_type().is_none() {
            return Err(QueryError::InvalidTableDefinition(format!(
                "primary key column \"{column}\" cannot have type {data_type}: key columns must be text, varchar, bigint, integer, smallint or bytea"
            )));
        }
        if t.is_pk(i) && t.columns[i].identity {
            return Err(refused("an identity key column's values are drawn as integers"));
        }
        // A foreign key's columns: the other side's type must still compare with the new one, as in
        // PostgreSQL (integers with integers, text with text), else 42804. Within those, the session checks
        // the key again over the converted rows (`Session::convert_column`).
        let mut pairs = Vec::new(); // (constraint, referencing column and type, referenced column and type)
        for (child, f) in self.catalog.referencing(&t.name)? {
            let fk = &child.foreign_keys[f];
            for (c, p) in fk.columns.iter().zip(&fk.parent_columns).filter(|(_, p)| **p == column) {
                let cty = child.column_index(c).map(|j| child.columns[j].type_name()).unwrap_or_default();
                pairs.push((
                    fk.name.clone(),
                    (c.clone(), cty, child.column_index(c).map(|j| child.columns[j].ty)),
                    (p.clone(), data_type.clone(), Some(ty)),
                ));
            }
        }
        for fk in &t.foreign_keys {
            let parent = self.catalog.table(&fk.parent).ok();
            for (c, p) in fk.columns.iter().zip(&fk.parent_columns).filter(|(c, _)| **c == column) {
                let (pty, pname) = match parent.as_ref().and_then(|pt| pt.column_index(p).map(|j| &pt.columns[j])) {
                    Some(pc) => (Some(pc.ty), pc.type_name()),
                    None => (None, String::new()),
                };
                pairs.push((fk.name.clone(), (c.clone(), data_type.clone(), Some(ty)), (p.clone(), pname, pty)));
            }
        }
        let family = |t: Option<SqlType>| {
            t.map(|t| {
                if t.is_integer() {
                    1
                } else if t.is_text() {
                    2
                } else {
                    3 + t.oid() as i64
                }
            })
        };
        if let Some((name, (c, cty, _), (p, pty, _))) = pairs.iter().find(|(_, (_, _, ct), (_, _, pt))| family(*ct) != family(*pt)) {
            return Err(QueryError::DatatypeMismatch(format!("foreign key constraint \"{name}\" cannot be implemented"))
                .with_message(format!("Key columns \"{c}\" and \"{p}\" are of incompatible types: {cty} and {pty}.")));
        }
        let using = match using {
            Some(e) => {
                let bound = self.binder(&Scope::table(t, None)).bind(e)?;
                let mut reads = Vec::new();
                bound.columns(&mut reads);
                if reads.contains(&t.columns.len()) {
                    return Err(refused(&format!("a USING expression that reads \"{VERSION_COLUMN}\"")));
                }
                let et = bound.ty();
                if !crate::planner::assignable(et, ty) {
                    return Err(QueryError::DatatypeMismatch(format!(
                        "result of USING clause for column \"{column}\" cannot be cast automatically to type {data_type}"
                    )));
                }
                Some(bound)
            }
            None if !crate::planner::assignable(t.columns[i].ty, ty) => {
                return Err(QueryError::DatatypeMismatch(format!("column \"{column}\" cannot be cast automatically to type {data_type}"))
                    .with_hint(&format!("You might need to specify \"USING {column}::{data_type}\".")))
            }
            None => None,
        };
        // The default must go to the new type too.
        if let Some(d) = &t.columns[i].default {
            if self.bind_default(d, ty, &column).is_err() {
                return Err(QueryError::DatatypeMismatch(format!(
                    "default for column \"{column}\" cannot be cast automatically to type {data_type}"
                )));
            }
        }
        Ok(ColumnChange::Convert { ty, max_chars, numeric, using })
    }
}

/// The positions of a primary key's columns, which become NOT NULL; 42P16 for a key Tabula cannot store.
pub(crate) fn key_columns(table: &str, columns: &mut [ColumnDef], names: &[String]) -> Result<Vec<usize>> {
    let mut pk = Vec::new();
    for n in names {
        let i = columns
            .iter()
            .position(|c| &c.name == n)
            .ok_or_else(|| QueryError::UndefinedColumn(format!("{n}\" named in key does not exist")))?;
        if pk.contains(&i) {
            return Err(QueryError::InvalidTableDefinition(format!("column \"{n}\" appears twice in primary key constraint")));
        }
        pk.push(i);
    }
    if pk.len() > 4 {
        return Err(QueryError::InvalidTableDefinition(format!(
            "a primary key has at most 4 columns, table \"{table}\" names {}",
            pk.len()
        )));
    }
    for &i in &pk {
        let col = &mut columns[i];
        col.not_null = true;
        if col.ty.pk_type().is_none() {
            return Err(QueryError::InvalidTableDefinition(format!(
                "primary key column \"{}\" has type {}: key columns must be text, varchar, bigint, integer, smallint or bytea",
                col.name, col.ty
            )));
        }
    }
    Ok(pk)
}

/// The columns of `PRIMARY KEY (...)`, and how many of them are the partition key: the first, or the
/// parenthesised first group of `PRIMARY KEY ((a, b), c)` (Tablestore's spliced partition key).
/// A DEFAULT's SQL text as PostgreSQL prints it back: `nextval('s'::regclass)`, where sqlparser prints the
/// cast's type in capitals and the name as given (`'public.s'`; a regclass prints without its schema when
/// that is on the search path), and `nextval('s')` without the cast its regclass argument gets.
fn default_text(e: &ast::Expr) -> String {
    let mut e = e.clone();
    let _ = crate::walk::exprs_mut(&mut e, |x| {
        if let ast::Expr::Function(f) = x {
            let sequence_call = matches!(ident_of(&f.name).as_deref(), Some("nextval" | "currval" | "setval"));
            if let (true, ast::FunctionArguments::List(list)) = (sequence_call, &mut f.args) {
                if let Some(ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg @ ast::Expr::Value(_)))) = list.args.first_mut() {
                    *arg = ast::Expr::Cast {
                        kind: ast::CastKind::DoubleColon,
                        expr: Box::new(arg.clone()),
                        data_type: ast::DataType::Regclass,
                        array: false,
                        format: None,
                    };
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let _ = crate::walk::exprs_mut(&mut e, |x| {
        if let ast::Expr::Cast { expr, data_type, .. } = x {
            if matches!(data_type, ast::DataType::Regclass) {
                *data_type = ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new("regclass")]), vec![]);
                if let ast::Expr::Value(v) = expr.as_mut() {
                    if let ast::Value::SingleQuotedString(name) = &mut v.value {
                        if let Some(rest) = name.strip_prefix("public.") {
                            *name = rest.to_string();
                        }
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e.to_string()
}

/// The last part of a function's name, folded as an identifier.
fn ident_of(n: &ast::ObjectName) -> Option<String> {
    n.0.last().and_then(|p| p.as_ident()).map(ident_name)
}

fn key_names(pk: &ast::PrimaryKeyConstraint) -> Result<(Vec<String>, usize)> {
    let bad = |e: &ast::Expr| QueryError::Syntax(format!("bad primary key column {e}"));
    let mut names = Vec::new();
    let mut partition_key_len = 1;
    for (i, ic) in pk.columns.iter().enumerate() {
        match &ic.column.expr {
            ast::Expr::Identifier(id) => names.push(ident_name(id)),
            ast::Expr::Tuple(ids) if i == 0 => {
                for e in ids {
                    match e {
                        ast::Expr::Identifier(id) => names.push(ident_name(id)),
                        other => return Err(bad(other)),
                    }
                }
                partition_key_len = ids.len();
            }
            ast::Expr::Nested(inner) if i == 0 => match inner.as_ref() {
                ast::Expr::Identifier(id) => names.push(ident_name(id)),
                other => return Err(bad(other)),
            },
            other => return Err(bad(other)),
        }
    }
    Ok((names, partition_key_len))
}

/// The name of a table to create: only in `public`, as PostgreSQL refuses a schema that does not exist.
pub(super) fn created_name(n: &ast::ObjectName) -> Result<String> {
    let name = object_name(n);
    match name.split_once('.') {
        Some((schema, _)) => Err(QueryError::Engine { sqlstate: "3F000", message: format!("schema \"{schema}\" does not exist") }),
        None => Ok(name),
    }
}
