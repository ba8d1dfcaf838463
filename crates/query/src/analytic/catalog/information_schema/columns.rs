//! `information_schema.columns`.

use crate::analytic::catalog::*;

#[derive(Debug)]
pub struct Columns;

impl Relation for Columns {
    fn columns(&self) -> Vec<(&'static str, K)> {
        use K::*;
        vec![
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("column_name", Text),
            ("ordinal_position", I32),
            ("column_default", Text),
            ("is_nullable", Text),
            ("data_type", Text),
            ("character_maximum_length", I32),
            ("character_octet_length", I32),
            ("numeric_precision", I32),
            ("numeric_precision_radix", I32),
            ("numeric_scale", I32),
            ("datetime_precision", I32),
            ("interval_type", Text),
            ("interval_precision", I32),
            ("character_set_catalog", Text),
            ("character_set_schema", Text),
            ("character_set_name", Text),
            ("collation_catalog", Text),
            ("collation_schema", Text),
            ("collation_name", Text),
            ("domain_catalog", Text),
            ("domain_schema", Text),
            ("domain_name", Text),
            ("udt_catalog", Text),
            ("udt_schema", Text),
            ("udt_name", Text),
            ("scope_catalog", Text),
            ("scope_schema", Text),
            ("scope_name", Text),
            ("maximum_cardinality", I32),
            ("dtd_identifier", Text),
            ("is_self_referencing", Text),
            ("is_identity", Text),
            ("identity_generation", Text),
            ("identity_start", Text),
            ("identity_increment", Text),
            ("identity_maximum", Text),
            ("identity_minimum", Text),
            ("identity_cycle", Text),
            ("is_generated", Text),
            ("generation_expression", Text),
            ("is_updatable", Text),
        ]
    }

    fn rows(&self, s: &Snapshot) -> DfResult<Vec<Vec<Cell>>> {
        let mut out: Vec<Vec<Cell>> = Vec::new();
        for r in s.rels.iter().filter(|r| r.kind != "S" && s.sees(r, false)) {
            let writable = super::views::Writable(s.db.as_ref());
            let updatable = r.view.as_ref().and_then(|v| crate::view_writes::updatable_columns(&r.name, v, &writable));
            for (i, (name, ty, not_null)) in r.columns.iter().enumerate() {
                let col = r.tabula.as_ref().map(|(t, _)| &t.columns[i]);
                let identity = col.is_some_and(|c| c.identity);
                let max_chars = col.and_then(|c| c.max_chars).map(|n| n as i32);
                let generation = col.filter(|c| c.identity).map(|c| if c.always { "ALWAYS" } else { "BY DEFAULT" });
                let (precision, radix, scale) = match ty {
                    SqlType::Int2 => (Some(16), Some(2), Some(0)),
                    SqlType::Int4 => (Some(32), Some(2), Some(0)),
                    SqlType::Int8 => (Some(64), Some(2), Some(0)),
                    SqlType::Float4 => (Some(24), Some(2), None),
                    SqlType::Float8 => (Some(53), Some(2), None),
                    SqlType::Numeric => match col.and_then(|c| c.numeric) {
                        Some((p, s)) => (Some(p as i32), Some(10), Some(s as i32)),
                        None => (None, Some(10), None),
                    },
                    _ => (None, None, None),
                };
                let dt_precision =
                    matches!(ty, SqlType::Timestamp | SqlType::Timestamptz).then_some(6).or(matches!(ty, SqlType::Date).then_some(0));
                let mut row: Vec<Cell> = vec![
                    CATALOG.into(),
                    r.schema.clone().into(),
                    r.name.clone().into(),
                    name.clone().into(),
                    (i as i32 + 1).into(),
                    col.and_then(|c| c.default.as_deref().map(|d| shown_default(d, c.ty))).into(),
                    if *not_null { "NO" } else { "YES" }.into(),
                    ty.pg_name().into(),
                    // varchar(n): n characters of up to 4 bytes in UTF-8, as PostgreSQL counts them.
                    max_chars.into(),
                    match max_chars {
                        Some(n) => Some(n * 4),
                        None => ty.is_text().then_some(1073741824),
                    }
                    .into(),
                    precision.into(),
                    radix.into(),
                    scale.into(),
                    dt_precision.into(),
                    Cell::Null,
                    Cell::Null,
                ];
                row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null, Cell::Null, Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                row.extend([CATALOG.into(), "pg_catalog".into(), ty.typname().into()]);
                row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                row.push((i as i32 + 1).to_string().into());
                row.push("NO".into());
                row.push(if identity { "YES" } else { "NO" }.into());
                row.push(generation.into());
                row.extend([Cell::Null, Cell::Null, Cell::Null, Cell::Null]);
                row.push(if identity { Some("NO") } else { None }.into());
                row.push("NEVER".into());
                row.push(Cell::Null);
                let writable = r.tabula.is_some() || updatable.as_ref().is_some_and(|u| u.get(i).copied().unwrap_or(false));
                row.push(if writable { "YES" } else { "NO" }.into());
                out.push(row);
            }
        }
        Ok(out)
    }
}
