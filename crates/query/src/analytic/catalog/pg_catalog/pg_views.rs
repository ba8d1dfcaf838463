//! `pg_views`: the users' views (`crate::views`) with their queries.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgViews;

impl Relation for PgViews {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![("schemaname", Text), ("viewname", Text), ("viewowner", Text), ("definition", Text)]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out = Vec::new();
        for r in &s.rels {
            let Some(v) = r.view.as_ref() else { continue };
            let owner = s.db.view(&r.name).map(|t| t.owner.clone()).unwrap_or_default();
            out.push(vec![r.schema.clone().into(), r.name.clone().into(), owner.into(), v.definition(false).into()]);
        }
        Ok(out)
    }
}
