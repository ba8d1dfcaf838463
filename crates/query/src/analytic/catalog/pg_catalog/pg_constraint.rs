//! `pg_constraint`: each table's primary-key constraint, UNIQUE constraints, CHECK constraints and FOREIGN
//! KEYs.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgConstraint;

impl Relation for PgConstraint {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("oid", Oid),
            ("conname", Text),
            ("connamespace", Oid),
            ("contype", Text),
            ("condeferrable", Bool),
            ("condeferred", Bool),
            ("convalidated", Bool),
            ("conrelid", Oid),
            ("contypid", Oid),
            ("conindid", Oid),
            ("conparentid", Oid),
            ("confrelid", Oid),
            ("confupdtype", Text),
            ("confdeltype", Text),
            ("confmatchtype", Text),
            ("conislocal", Bool),
            ("coninhcount", I32),
            ("connoinherit", Bool),
            ("conkey", I16s),
            ("confkey", I16s),
            ("conpfeqop", Oids),
            ("conppeqop", Oids),
            ("conffeqop", Oids),
            ("confdelsetcols", I16s),
            ("conexclop", Oids),
            ("conbin", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (r, t, _) in s.keyed() {
            out.push(vec![
                (r.oid + 2).into(),
                format!("{}_pkey", t.name).into(),
                PUBLIC_NSP.into(),
                "p".into(),
                false.into(),
                false.into(),
                true.into(),
                r.oid.into(),
                0.into(),
                (r.oid + 1).into(),
                0.into(),
                0.into(),
                " ".into(),
                " ".into(),
                " ".into(),
                true.into(),
                0.into(),
                true.into(),
                Cell::Ints(pk_attnums(t)),
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
            ]);
        }
        for (r, t, id) in s.tabula() {
            for ix in t.indexes.iter().filter(|i| i.constraint) {
                let oid = table_oid(ix.id);
                let mut row: Vec<Cell> = vec![(oid + 2).into(), ix.name.clone().into(), PUBLIC_NSP.into(), "u".into()];
                row.extend([false, false, true].map(Cell::from));
                row.extend([r.oid, 0, oid, 0, 0].map(Cell::from));
                row.extend([" ", " ", " "].map(Cell::from));
                row.extend([Cell::from(true), 0.into(), true.into()]);
                row.push(Cell::Ints(ix.columns.iter().map(|&c| c as i64 + 1).collect()));
                row.extend(std::iter::repeat_n(Cell::Null, 7));
                out.push(row);
            }
            for (i, c) in t.checks.iter().enumerate() {
                let mut row: Vec<Cell> = vec![check_oid(id, i).into(), c.name.clone().into(), PUBLIC_NSP.into(), "c".into()];
                row.extend([false, false, true].map(Cell::from));
                row.extend([r.oid, 0, 0, 0, 0].map(Cell::from));
                row.extend([" ", " ", " "].map(Cell::from));
                row.extend([Cell::from(true), 0.into(), false.into()]);
                let reads = t.visible().iter().enumerate().filter(|(_, col)| c.reads(&col.name)).map(|(i, _)| i as i64 + 1);
                row.push(Cell::Ints(reads.collect()));
                row.extend(std::iter::repeat_n(Cell::Null, 6));
                row.push(c.expr.clone().into());
                out.push(row);
            }
            for (i, fk) in t.foreign_keys.iter().enumerate() {
                let Some(parent) = s.tabula().find(|(_, p, _)| p.name == fk.parent) else { continue };
                let attnums = |t: &TableSchema, cols: &[String]| -> Cell {
                    Cell::Ints(cols.iter().filter_map(|c| t.column_index(c)).map(|i| i as i64 + 1).collect())
                };
                // The parent's index that makes the key unique: its primary key's, or a UNIQUE index's.
                let pcols: Vec<usize> = fk.parent_columns.iter().filter_map(|c| parent.1.column_index(c)).collect();
                let same = |a: &[usize]| a.len() == pcols.len() && a.iter().all(|c| pcols.contains(c));
                let index = if same(&parent.1.pk) {
                    parent.0.oid + 1
                } else {
                    parent.1.indexes.iter().find(|x| x.unique && same(&x.columns)).map_or(0, |x| table_oid(x.id))
                };
                let oid = check_oid(id, FOREIGN_KEY_OIDS + i);
                let mut row: Vec<Cell> = vec![oid.into(), fk.name.clone().into(), PUBLIC_NSP.into(), "f".into()];
                row.extend([fk.deferrable, fk.initially_deferred, true].map(Cell::from));
                row.extend([r.oid, 0, index, 0, parent.0.oid].map(Cell::from));
                let matching = if fk.match_full { "f" } else { "s" };
                row.extend([fk.on_update.letter().to_string(), fk.on_delete.letter().to_string(), matching.to_string()].map(Cell::from));
                row.extend([Cell::from(true), 0.into(), true.into()]);
                row.push(attnums(t, &fk.columns));
                row.push(attnums(parent.1, &fk.parent_columns));
                row.extend(std::iter::repeat_n(Cell::Null, 6));
                out.push(row);
            }
        }
        Ok(out)
    }
}
