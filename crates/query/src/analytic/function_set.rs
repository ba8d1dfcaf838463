//! The analytic engine's scalar functions beyond DataFusion's defaults, which the key-value route's
//! evaluator takes its own from too (`expr::udf`): one function set for both routes.

use std::sync::Arc;

use datafusion::logical_expr::ScalarUDF;

use super::{format, guarded, justify, letter_case, limits, make_time, math, width_bucket};

/// DataFusion's functions that Tabula replaces by ones checked as PostgreSQL checks them: results over
/// PostgreSQL's size limit (`limits`), math without a real result (`math`), and case mappings that change
/// a text's length (`letter_case`), `abs`, whose result keeps a quotient's display scale (`guarded`); and
/// `format`, which DataFusion does not have.
pub(super) fn checked_udfs() -> Vec<ScalarUDF> {
    let format = ScalarUDF::new_from_impl(format::Format::new());
    let abs = guarded::Guarded::wrap(datafusion::functions::math::abs(), guarded::Check::KeepsScale);
    limits::checked_udfs().into_iter().chain(math::checked_udfs()).chain(letter_case::udfs()).chain([format, abs]).collect()
}

/// DataFusion's own scalar functions as the analytic route has them, checked ones in place (what the
/// key-value route's evaluator takes its functions beyond its own from, `expr::udf`).
pub fn scalar_functions() -> Vec<Arc<ScalarUDF>> {
    let ours: Vec<Arc<ScalarUDF>> = checked_udfs().into_iter().chain(pg_functions()).map(Arc::new).collect();
    let mut all: Vec<Arc<ScalarUDF>> =
        datafusion::functions::all_default_functions().into_iter().filter(|f| !ours.iter().any(|c| c.name() == f.name())).collect();
    all.extend(ours);
    all
}

/// PostgreSQL's functions that DataFusion lacks or answers otherwise, written here (`make_date`'s
/// replaces DataFusion's).
pub(super) fn pg_functions() -> Vec<ScalarUDF> {
    let mut udfs = vec![
        ScalarUDF::new_from_impl(make_time::MakeTime::date()),
        ScalarUDF::new_from_impl(make_time::MakeTime::timestamp()),
        ScalarUDF::new_from_impl(justify::NumNulls::new(false)),
        ScalarUDF::new_from_impl(justify::NumNulls::new(true)),
        ScalarUDF::new_from_impl(width_bucket::WidthBucket::new()),
    ];
    for kind in [justify::Justify::Days, justify::Justify::Hours, justify::Justify::Interval] {
        udfs.push(ScalarUDF::new_from_impl(justify::JustifyUdf::new(kind)));
    }
    udfs
}
