//! `pg_sequence`: the options of each sequence made by CREATE SEQUENCE (pg_dump and psql's `\d` read them).

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgSequence;

impl Relation for PgSequence {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("seqrelid", Oid),
            ("seqtypid", Oid),
            ("seqstart", I64),
            ("seqincrement", I64),
            ("seqmax", I64),
            ("seqmin", I64),
            ("seqcache", I64),
            ("seqcycle", Bool),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let rows = s.rels.iter().filter_map(|r| {
            let d = r.sequence.as_ref()?;
            Some(vec![
                r.oid.into(),
                (d.ty.oid() as i32).into(),
                d.start.into(),
                d.increment.into(),
                d.max.into(),
                d.min.into(),
                d.cache.into(),
                d.cycle.into(),
            ])
        });
        Ok(rows.collect())
    }
}

/// `pg_sequences`: the same with names, and each sequence's last value (NULL until one is drawn).
#[derive(Debug)]
pub struct PgSequences;

impl Relation for PgSequences {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("schemaname", Text),
            ("sequencename", Text),
            ("sequenceowner", Text),
            ("data_type", Text),
            ("start_value", I64),
            ("min_value", I64),
            ("max_value", I64),
            ("increment_by", I64),
            ("cycle", Bool),
            ("cache_size", I64),
            ("last_value", I64),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        for r in &s.rels {
            let Some(d) = r.sequence.as_ref() else { continue };
            let owner = s.db.sequences().relations().map_err(df_err)?.into_iter().find(|t| t.name == r.name).map(|t| t.owner.clone());
            let last = match s.db.store().sequence_state(&r.name) {
                Ok((n, true)) => Cell::from(d.shown_value(n)),
                _ => Cell::Null,
            };
            out.push(vec![
                r.schema.clone().into(),
                r.name.clone().into(),
                owner.unwrap_or_default().into(),
                d.ty.pg_name().into(),
                d.start.into(),
                d.min.into(),
                d.max.into(),
                d.increment.into(),
                d.cycle.into(),
                d.cache.into(),
                last,
            ]);
        }
        Ok(out)
    }
}
