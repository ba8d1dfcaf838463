//! EXPLAIN [ANALYZE] of a key-value plan, and DataFusion's EXPLAIN rows as PostgreSQL prints them.

use std::time::Instant;

use super::Session;
use crate::error::Result;
use crate::output::Output;
use crate::plan::{OutputColumn, Plan, SelectPlan};
use crate::types::SqlRow;
use crate::types::{Datum, SqlType};

impl Session {
    pub(super) fn explain(&mut self, plan: &Plan, analyze: bool, params: &[Datum]) -> Result<Output> {
        // ANALYZE gathers the rows to count them: what runs does not stream.
        let shown = match plan {
            Plan::Select(s) if analyze && s.stream => Plan::Select(SelectPlan { stream: false, ..s.clone() }),
            _ => plan.clone(),
        };
        let mut lines: Vec<String> = shown.to_string().lines().map(|l| l.to_string()).collect();
        if analyze {
            let started = Instant::now();
            let (out, stats) = match plan {
                Plan::Joined(j) => (self.run_joined(j, params)?, None),
                _ => self.run_dml(plan, params, false)?,
            };
            let rows = match &out {
                Output::Rows { rows, .. } => rows.len(),
                _ => 0,
            };
            if let Some(stats) = stats {
                if let Some(i) = lines.iter().position(|l| l.contains(" on ")) {
                    lines[i].push_str(&format!(
                        " (actual rows={} examined={} engine_calls={} time={:.3} ms)",
                        stats.returned,
                        stats.examined,
                        stats.engine_calls,
                        stats.micros as f64 / 1000.0
                    ));
                }
            }
            if let Some(first) = lines.first_mut() {
                first.push_str(&format!(" (actual rows={rows})"));
            }
            if let Some(stats) = stats.filter(|s| s.batches > 1) {
                lines.push(format!(
                    "Batches: {} (outside a transaction block, each of at most {} rows committed on its own)",
                    stats.batches,
                    super::batches::BATCH_ROWS
                ));
            }
            lines.push(format!("Execution Time: {:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
        }
        Ok(Output::Rows {
            columns: vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }],
            rows: lines.into_iter().map(|l| vec![Datum::Text(crate::temp::visible(&l))]).collect(),
            tag: "EXPLAIN".into(),
        })
    }
}

/// DataFusion's EXPLAIN rows (plan type, plan) as PostgreSQL's: one `QUERY PLAN` line per row, the
/// physical plan (with its metrics under ANALYZE), whose scans name Tabula's access paths. The first line
/// says why the query took this route: what the key-value planner handed on.
pub(super) fn explain_rows(reason: &str, rows: Vec<SqlRow>) -> Output {
    let text = |d: &Datum| match d {
        Datum::Text(s) => s.clone(),
        _ => String::new(),
    };
    let physical: Vec<&SqlRow> =
        rows.iter().filter(|r| matches!(text(&r[0]).as_str(), "physical_plan" | "Plan with Metrics" | "Plan with Full Metrics")).collect();
    let chosen: Vec<&SqlRow> = if physical.is_empty() { rows.iter().collect() } else { physical };
    let route = format!("Analytic route (DataFusion): {reason}");
    let lines: Vec<SqlRow> = std::iter::once(route)
        .chain(
            chosen
                .iter()
                .flat_map(|r| r.get(1).map(text).unwrap_or_default().lines().map(|l| l.trim_end().to_string()).collect::<Vec<_>>()),
        )
        .filter(|l| !l.is_empty())
        .map(|l| vec![Datum::Text(crate::temp::visible(&l))])
        .collect();
    Output::Rows {
        columns: vec![OutputColumn { name: "QUERY PLAN".into(), ty: SqlType::Text, source: None }],
        rows: lines,
        tag: "EXPLAIN".into(),
    }
}
