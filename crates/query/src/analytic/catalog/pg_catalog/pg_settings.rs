//! `pg_settings`: the session's settings.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct PgSettings;

impl Relation for PgSettings {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("name", Text),
            ("setting", Text),
            ("unit", Text),
            ("category", Text),
            ("short_desc", Text),
            ("extra_desc", Text),
            ("context", Text),
            ("vartype", Text),
            ("source", Text),
            ("min_val", Text),
            ("max_val", Text),
            ("enumvals", Texts),
            ("boot_val", Text),
            ("reset_val", Text),
            ("sourcefile", Text),
            ("sourceline", I32),
            ("pending_restart", Bool),
        ]
    }

    fn reads_relations(&self) -> bool {
        false
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for (name, value) in s.settings.iter() {
            let boolean = matches!(value.as_str(), "on" | "off");
            out.push(vec![
                crate::settings::display_setting_name(name).into(),
                value.clone().into(),
                Cell::Null,
                Cell::Null,
                Cell::Null,
                Cell::Null,
                "user".into(),
                if boolean { "bool" } else { "string" }.into(),
                "default".into(),
                Cell::Null,
                Cell::Null,
                Cell::Null,
                value.clone().into(),
                value.clone().into(),
                Cell::Null,
                Cell::Null,
                false.into(),
            ]);
        }
        Ok(out)
    }
}
