//! How a plan prints: the tree EXPLAIN shows, one line per node, with each table read's access path.

use std::fmt;

use crate::maintenance::Maintenance;

use super::*;

fn list(f: &mut fmt::Formatter<'_>, items: &[Expr]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

fn bound(f: &mut fmt::Formatter<'_>, b: &[KeyBound]) -> fmt::Result {
    write!(f, "(")?;
    for (i, k) in b.iter().enumerate() {
        if i > 0 {
            write!(f, ", ")?;
        }
        match k {
            KeyBound::Value(e) => write!(f, "{e}")?,
            KeyBound::InfMin => write!(f, "-inf")?,
            KeyBound::InfMax => write!(f, "+inf")?,
        }
    }
    write!(f, ")")
}

impl fmt::Display for AccessPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccessPath::PointGet { key } => {
                write!(f, "PointGet key=(")?;
                list(f, key)?;
                write!(f, ")")
            }
            AccessPath::BatchGet { keys } => {
                write!(f, "BatchGet keys=[")?;
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "(")?;
                    list(f, k)?;
                    write!(f, ")")?;
                }
                write!(f, "]")
            }
            AccessPath::RangeScan { start, end, direction } => {
                write!(f, "RangeScan ")?;
                if *direction == Direction::Forward {
                    write!(f, "[")?;
                    bound(f, start)?;
                    write!(f, " .. ")?;
                    bound(f, end)?;
                    write!(f, ") forward")
                } else {
                    write!(f, "(")?;
                    bound(f, end)?;
                    write!(f, " .. ")?;
                    bound(f, start)?;
                    write!(f, "] backward")
                }
            }
            AccessPath::FullScan { direction } => {
                write!(f, "FullScan {}", if *direction == Direction::Forward { "forward" } else { "backward" })
            }
            AccessPath::System(_) => write!(f, "SystemView"),
            AccessPath::IndexScan { index, lookups, lower, upper, order, covering } => {
                write!(f, "{} index={index}", if *covering { "IndexOnlyScan" } else { "IndexScan" })?;
                if lookups.iter().any(|l| !l.is_empty()) {
                    write!(f, " values=")?;
                    for (i, l) in lookups.iter().enumerate() {
                        write!(f, "{}(", if i > 0 { ", " } else { "" })?;
                        list(f, l)?;
                        write!(f, ")")?;
                    }
                }
                if lower.is_some() || upper.is_some() {
                    // An interval of the next column: [ ] inclusive, ( ) exclusive.
                    let lo = match lower {
                        Some((true, e)) => format!("[{e}"),
                        Some((false, e)) => format!("({e}"),
                        None => "(-inf".into(),
                    };
                    let hi = match upper {
                        Some((true, e)) => format!("{e}]"),
                        Some((false, e)) => format!("{e})"),
                        None => "+inf)".into(),
                    };
                    write!(f, " range={lo}, {hi}")?;
                }
                match order {
                    Some(Direction::Forward) => write!(f, " forward"),
                    Some(Direction::Backward) => write!(f, " backward"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Scan {
    fn fmt_tree(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        write!(f, "{pad}{} on {}", self.access, self.table.name)?;
        if let Some(flt) = &self.filter {
            write!(f, " filter={flt}")?;
        }
        if let Some(l) = &self.limit {
            write!(f, " limit={l}")?;
        }
        match &self.versions {
            Versions::Latest => {}
            Versions::AsOf(e) => write!(f, " as_of={e}")?,
            Versions::History { latest_n, after_or_equal, before } => {
                write!(f, " versions(")?;
                let mut parts = Vec::new();
                if let Some(e) = latest_n {
                    parts.push(format!("latest_n={e}"));
                }
                if let Some(e) = after_or_equal {
                    parts.push(format!("after_or_equal={e}"));
                }
                if let Some(e) = before {
                    parts.push(format!("before={e}"));
                }
                write!(f, "{})", parts.join(", "))?;
            }
        }
        writeln!(f)?;
        if !self.ranks.is_empty() {
            let ranks: Vec<String> = self.ranks.iter().map(|r| format!("{} {}", r.index.as_deref().unwrap_or("key"), r.rank)).collect();
            writeln!(f, "{pad}  Path ranks: {} (2 per equality column, 1 for a range after them; the key wins ties)", ranks.join(", "))?;
        }
        Ok(())
    }
}

impl Plan {
    fn fmt_tree(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match self {
            Plan::Select(s) => {
                write!(f, "{pad}Project ")?;
                let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
                writeln!(f, "[{}]{}", names.join(", "), if s.stream { " streamed" } else { "" })?;
                let mut d = depth + 1;
                if s.lock {
                    writeln!(f, "{}LockRows", "  ".repeat(d))?;
                    d += 1;
                }
                if s.limit.is_some() || s.offset.is_some() {
                    write!(f, "{}Limit", "  ".repeat(d))?;
                    if let Some(l) = &s.limit {
                        write!(f, " {l}")?;
                    }
                    if let Some(o) = &s.offset {
                        write!(f, " offset {o}")?;
                    }
                    writeln!(f)?;
                    d += 1;
                }
                if !s.sort.is_empty() {
                    let keys: Vec<String> = s.sort.iter().map(|(e, asc)| format!("{e}{}", if *asc { "" } else { " DESC" })).collect();
                    writeln!(f, "{}Sort [{}]", "  ".repeat(d), keys.join(", "))?;
                    d += 1;
                }
                match &s.scan {
                    Some(scan) => scan.fmt_tree(f, d),
                    None => writeln!(f, "{}Values (1 row)", "  ".repeat(d)),
                }
            }
            Plan::InsertSelect { insert, query, .. } => {
                writeln!(f, "{pad}Insert into {} (rows of a query) {}", insert.table.name, insert.call)?;
                writeln!(f, "{pad}  Query: {query}")
            }
            Plan::Insert(i) => {
                // The arbiters as PostgreSQL's EXPLAIN lists them ("Conflict Arbiter Indexes").
                let names = |a: &Arbiters| {
                    let key = a.key.then(|| format!("{}_pkey", i.table.name));
                    let names: Vec<String> = key.into_iter().chain(a.indexes.iter().map(|&x| i.table.indexes[x].name.clone())).collect();
                    format!(" ({})", names.join(", "))
                };
                let conflict = match &i.on_conflict {
                    OnConflict::Error => String::new(),
                    OnConflict::DoNothing { arbiters } => {
                        format!(" on conflict{} do nothing", arbiters.as_ref().map(names).unwrap_or_default())
                    }
                    OnConflict::DoUpdate { arbiters, .. } => format!(" on conflict{} do update", names(arbiters)),
                };
                writeln!(f, "{pad}Insert into {} ({} rows{conflict}) {}", i.table.name, i.rows.len(), i.call)
            }
            Plan::Update(u) => {
                let cols: Vec<String> = u.assignments.iter().map(|(c, e)| format!("{} = {e}", u.scan.table.column_name(*c))).collect();
                writeln!(f, "{pad}Update {} set {} {}", u.scan.table.name, cols.join(", "), u.call)?;
                u.scan.fmt_tree(f, depth + 1)
            }
            Plan::Delete(d) => {
                write!(f, "{pad}Delete from {}", d.scan.table.name)?;
                if let Some(v) = &d.version {
                    write!(f, " version={v}")?;
                }
                writeln!(f, " {}", WriteCall::ReadModifyWrite)?;
                d.scan.fmt_tree(f, depth + 1)
            }
            Plan::Joined(j) => {
                writeln!(f, "{pad}For each row of: {}", j.query)?;
                j.write.fmt_tree(f, depth + 1)
            }
            Plan::Explain { plan, .. } => plan.fmt_tree(f, depth),
            other => writeln!(f, "{pad}{}", utility_name(other)),
        }
    }
}

fn utility_name(p: &Plan) -> &'static str {
    match p {
        Plan::CreateTable(_) => "CreateTable",
        Plan::DropTable { .. } => "DropTable",
        Plan::Truncate { .. } => "Truncate",
        Plan::SetOptions { .. } => "AlterTableOptions",
        Plan::AddColumn { .. } => "AddColumn",
        Plan::DropColumn { .. } => "DropColumn",
        Plan::AddPrimaryKey { .. } => "AddPrimaryKey",
        Plan::RenameTable { .. } => "RenameTable",
        Plan::AlterOwner { .. } => "AlterOwner",
        Plan::CreateIndex { .. } => "CreateIndex",
        Plan::DropIndex { .. } => "DropIndex",
        Plan::DropConstraint { .. } => "DropConstraint",
        Plan::AddCheck { .. } => "AddCheck",
        Plan::AddForeignKey { .. } => "AddForeignKey",
        Plan::SetConstraints { .. } => "SetConstraints",
        Plan::Maintenance(Maintenance::Checkpoint) => "Checkpoint",
        Plan::Maintenance(Maintenance::Tables(m)) if m.vacuum => "Vacuum",
        Plan::Maintenance(Maintenance::Tables(_)) => "Analyze",
        Plan::Sequence(crate::sequences::parse::SequenceStatement::Create { .. }) => "CreateSequence",
        Plan::Sequence(crate::sequences::parse::SequenceStatement::Alter { .. }) => "AlterSequence",
        Plan::Sequence(crate::sequences::parse::SequenceStatement::AddIdentity { .. }) => "AddIdentity",
        Plan::DropSequence { .. } => "DropSequence",
        Plan::CreateView { .. } => "CreateView",
        Plan::DropView { .. } => "DropView",
        Plan::RenameIndex { .. } => "RenameIndex",
        Plan::RenameColumn { .. } => "RenameColumn",
        Plan::AlterColumn { .. } => "AlterColumn",
        Plan::AlterSchemaOwner { .. } => "AlterSchemaOwner",
        Plan::Begin => "Begin",
        Plan::LockShared { .. } => "Lock",
        Plan::Deallocate(_) => "Deallocate",
        Plan::DeclareCursor { .. } => "DeclareCursor",
        Plan::Fetch { .. } => "Fetch",
        Plan::CloseCursor(_) => "CloseCursor",
        Plan::PrepareStatement { .. } => "Prepare",
        Plan::SetConfig { .. } => "SetConfig",
        Plan::WithSubqueries { .. } => "WithSubqueries",
        Plan::ExecutePrepared { .. } => "Execute",
        Plan::Commit => "Commit",
        Plan::Rollback => "Rollback",
        Plan::SetVariable { .. } => "Set",
        Plan::ShowVariable { .. } => "Show",
        Plan::Reset { .. } => "Reset",
        Plan::Discard { .. } => "Discard",
        Plan::CopyFrom { .. } => "CopyFrom",
        Plan::CopyTo { .. } => "CopyTo",
        _ => "Statement",
    }
}

impl fmt::Display for WriteCall {
    /// What EXPLAIN says of an auto-commit write.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteCall::Single => "[one engine write]",
            WriteCall::Upsert => "[one engine upsert]",
            WriteCall::KeyUpdate => "[one conditional engine update]",
            WriteCall::ReadModifyWrite => "[read-modify-write]",
        })
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_tree(f, 0)
    }
}
