//! The catalogs one statement reads through: the server's, except that the `public` tables' timestamptz
//! columns carry the session's `TimeZone`.
//!
//! Arrow labels a timestamp column with a zone, and DataFusion's functions compute in it: `date_trunc('day',
//! t)`, `extract(hour from t)`, `t::date` and `t::timestamp` of a column labelled UTC answered UTC's day
//! and hour in a session in Paris, where PostgreSQL answers Paris's. The label changes no value (a
//! timestamptz is an instant either way), so each statement sees the tables under its session's zone.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider};
use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchemaRef;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::functions::datetime::to_local_time;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, ScalarUDF};

use super::provider::PublicSchema;
use super::timestamp_text::TimestampText;
use crate::types::{Datum, SqlType, Zone};

#[derive(Debug)]
pub struct ZonedCatalogs {
    pub inner: Arc<dyn CatalogProviderList>,
    /// The zone as Arrow names it ([`crate::types::Zone::arrow_name`]).
    pub zone: Arc<str>,
}

impl CatalogProviderList for ZonedCatalogs {
    fn register_catalog(&self, name: String, catalog: Arc<dyn CatalogProvider>) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        self.inner.catalog_names()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        let inner = self.inner.catalog(name)?;
        Some(Arc::new(ZonedCatalog { inner, zone: self.zone.clone() }))
    }
}

#[derive(Debug)]
struct ZonedCatalog {
    inner: Arc<dyn CatalogProvider>,
    zone: Arc<str>,
}

impl CatalogProvider for ZonedCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let schema = self.inner.schema(name)?;
        match schema.downcast_ref::<PublicSchema>() {
            Some(public) => Some(Arc::new(PublicSchema { db: public.db.clone(), zone: self.zone.clone() })),
            None => Some(schema),
        }
    }

    fn register_schema(&self, name: &str, schema: Arc<dyn SchemaProvider>) -> Result<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }
}

/// Casts that involve the session's zone, made PostgreSQL's:
/// - A timestamptz cast to `timestamp` or `date` is its local time in the session's zone; Arrow's cast
///   keeps the UTC clock instead (Paris's 23:30 became 21:30). Such casts take DataFusion's `to_local_time`
///   first, which reads the column's label (the session's zone, above).
/// - A quoted literal cast to `timestamptz` or `timestamp` is read as the key-value route reads it
///   (`Datum::parse_in`): Arrow's reader wants seconds (`'2024-07-15 12:00'` failed), knows no zone
///   names, and moved a `timestamp` by the offset written in it, which PostgreSQL ignores.
/// - A `timestamp` or `date` compared with a timestamptz is the instant of that local time in the
///   session's zone, as PostgreSQL converts it; DataFusion compared the UTC clocks.
/// - `to_timestamp(...)` is a timestamptz (DataFusion's has no zone); `date_trunc(field, date)` too (the
///   date is its midnight in the session's zone); `date ± interval` is a timestamp (DataFusion's a date).
/// - A quoted literal compared with a timestamp (`t >= '2024-07-15 23:00'`, BETWEEN, IN) is read so too,
///   where DataFusion's coercion would give it to Arrow's reader.
/// - A timestamp's text (`t::text`, `t::varchar`, `t || 'x'`, `concat(t)`) is PostgreSQL's
///   ([`super::timestamp_text`]).
pub fn local_casts(plan: LogicalPlan, zone: Zone) -> Result<LogicalPlan> {
    let text_udf = Arc::new(ScalarUDF::new_from_impl(TimestampText::new(zone)));
    let is_timestamp = |e: &Expr, schema: &DFSchemaRef| matches!(e.get_type(schema.as_ref()), Ok(DataType::Timestamp(..)));
    let text = |e: Expr| Expr::ScalarFunction(ScalarFunction::new_udf(text_udf.clone(), vec![e]));
    super::plan_rewrite::rewrite_expressions(plan, |e, schema| {
        match &e {
            Expr::Cast(c)
                if matches!(c.field.data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
                    && is_timestamp(&c.expr, schema) =>
            {
                return Ok(Transformed::yes(text((*c.expr).clone())));
            }
            Expr::BinaryExpr(b) if b.op == Operator::StringConcat && (is_timestamp(&b.left, schema) || is_timestamp(&b.right, schema)) => {
                let side = |s: &Expr| if is_timestamp(s, schema) { Box::new(text(s.clone())) } else { Box::new(s.clone()) };
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr { left: side(&b.left), right: side(&b.right), op: b.op })));
            }
            // `x::text` (the rewrite's `pg_text`).
            Expr::ScalarFunction(f) if f.name() == "pg_text" && f.args.len() == 1 && is_timestamp(&f.args[0], schema) => {
                return Ok(Transformed::yes(text(f.args[0].clone())));
            }
            // `to_timestamp(...)` is a timestamptz, as in PostgreSQL: of a number, the instant that many seconds
            // after the epoch; of a text read with a template, a local time in the session's zone. DataFusion's
            // is a timestamp without a zone.
            Expr::ScalarFunction(f)
                if f.name() == "to_timestamp" && matches!(e.get_type(schema.as_ref()), Ok(DataType::Timestamp(_, None))) =>
            {
                let cast =
                    |e: Expr, tz: &str| Expr::Cast(Cast::new(Box::new(e), DataType::Timestamp(TimeUnit::Microsecond, Some(tz.into()))));
                let of_number = f.args.first().is_some_and(|a| a.get_type(schema.as_ref()).is_ok_and(|t| t.is_numeric()));
                let instant = if of_number { cast(e.clone(), "+00:00") } else { e.clone() };
                return Ok(Transformed::yes(cast(instant, &zone.arrow_name())));
            }
            // `date_trunc(field, date)` reads the date as a timestamptz (its midnight in the session's zone), as
            // PostgreSQL casts it, and answers a timestamptz.
            Expr::ScalarFunction(f)
                if f.name() == "date_trunc" && f.args.len() == 2 && matches!(f.args[1].get_type(schema.as_ref()), Ok(DataType::Date32)) =>
            {
                let midnight = Expr::Cast(Cast::new(Box::new(f.args[1].clone()), DataType::Timestamp(TimeUnit::Microsecond, None)));
                let instant =
                    Expr::Cast(Cast::new(Box::new(midnight), DataType::Timestamp(TimeUnit::Microsecond, Some(zone.arrow_name().into()))));
                let args = vec![f.args[0].clone(), instant];
                return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: f.func.clone(), args })));
            }
            // `date ± interval` is a timestamp, as in PostgreSQL (DataFusion's is a date).
            Expr::BinaryExpr(b)
                if matches!(b.op, Operator::Plus | Operator::Minus)
                    && matches!(
                        (b.left.get_type(schema.as_ref()), b.right.get_type(schema.as_ref())),
                        (Ok(DataType::Date32), Ok(DataType::Interval(_))) | (Ok(DataType::Interval(_)), Ok(DataType::Date32))
                    ) =>
            {
                let timestamp = |side: &Expr| match side.get_type(schema.as_ref()) {
                    Ok(DataType::Date32) => {
                        Box::new(Expr::Cast(Cast::new(Box::new(side.clone()), DataType::Timestamp(TimeUnit::Microsecond, None))))
                    }
                    _ => Box::new(side.clone()),
                };
                return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: timestamp(&b.left),
                    right: timestamp(&b.right),
                    op: b.op,
                })));
            }
            Expr::ScalarFunction(f) if f.name() == "concat" && f.args.iter().any(|a| is_timestamp(a, schema)) => {
                let args = f.args.iter().map(|a| if is_timestamp(a, schema) { text(a.clone()) } else { a.clone() }).collect();
                return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: f.func.clone(), args })));
            }
            _ => {}
        }
        match &e {
            Expr::BinaryExpr(b) if super::plan_rewrite::is_comparison(b.op) => {
                let (lt, rt) = (b.left.get_type(schema.as_ref())?, b.right.get_type(schema.as_ref())?);
                // An untyped literal compared with a timestamp is a timestamp, read as Tabula reads one.
                if let Some(r) = timestamp_literal(&b.right, &lt, &zone)? {
                    return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr { right: Box::new(r), ..b.clone() })));
                }
                if let Some(l) = timestamp_literal(&b.left, &rt, &zone)? {
                    return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr { left: Box::new(l), ..b.clone() })));
                }
                // A timestamp or date compared with a timestamptz is the instant of its local time in the zone.
                let instant = |side: &Expr, tz: &Arc<str>| {
                    let naive = Expr::Cast(Cast::new(Box::new(side.clone()), DataType::Timestamp(TimeUnit::Microsecond, None)));
                    Box::new(Expr::Cast(Cast::new(Box::new(naive), DataType::Timestamp(TimeUnit::Microsecond, Some(tz.clone())))))
                };
                let local = |t: &DataType| matches!(t, DataType::Timestamp(_, None) | DataType::Date32);
                match (&lt, &rt) {
                    (DataType::Timestamp(_, Some(tz)), r) if local(r) => {
                        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr { right: instant(&b.right, tz), ..b.clone() })))
                    }
                    (l, DataType::Timestamp(_, Some(tz))) if local(l) => {
                        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr { left: instant(&b.left, tz), ..b.clone() })))
                    }
                    _ => {}
                }
            }
            Expr::Between(between) => {
                let ty = between.expr.get_type(schema.as_ref())?;
                let (low, high) = (timestamp_literal(&between.low, &ty, &zone)?, timestamp_literal(&between.high, &ty, &zone)?);
                if low.is_some() || high.is_some() {
                    let mut between = between.clone();
                    between.low = Box::new(low.unwrap_or(*between.low));
                    between.high = Box::new(high.unwrap_or(*between.high));
                    return Ok(Transformed::yes(Expr::Between(between)));
                }
            }
            Expr::InList(list) => {
                let ty = list.expr.get_type(schema.as_ref())?;
                let read = list.list.iter().map(|x| timestamp_literal(x, &ty, &zone)).collect::<Result<Vec<_>>>()?;
                if read.iter().any(Option::is_some) {
                    let mut list = list.clone();
                    list.list = read.into_iter().zip(&list.list).map(|(r, x)| r.unwrap_or_else(|| x.clone())).collect();
                    return Ok(Transformed::yes(Expr::InList(list)));
                }
            }
            _ => {}
        }
        // A quoted literal cast to a timestamp type: of microseconds, as Tabula's (and PostgreSQL's)
        // timestamps are, where DataFusion's SQL types are of nanoseconds, which end in 2262
        // (`'9999-12-31'::timestamp + interval '1 day'` failed).
        if let Expr::Cast(Cast { expr, field }) = &e {
            if let Some(literal) = timestamp_literal(expr, field.data_type(), &zone)? {
                return Ok(Transformed::yes(literal));
            }
        }
        let (inner, to) = match &e {
            Expr::Cast(c) => (&c.expr, c.field.data_type()),
            Expr::TryCast(c) => (&c.expr, c.field.data_type()),
            _ => return Ok(Transformed::no(e)),
        };
        let zoned = matches!(inner.get_type(schema.as_ref()), Ok(DataType::Timestamp(_, Some(_))));
        if !zoned || !matches!(to, DataType::Timestamp(_, None) | DataType::Date32 | DataType::Date64) {
            return Ok(Transformed::no(e));
        }
        let local = |inner: Box<Expr>| Box::new(Expr::ScalarFunction(ScalarFunction::new_udf(to_local_time(), vec![*inner])));
        Ok(Transformed::yes(match e {
            Expr::Cast(c) => Expr::Cast(Cast { expr: local(c.expr), ..c }),
            Expr::TryCast(c) => Expr::TryCast(TryCast { expr: local(c.expr), ..c }),
            e => e,
        }))
    })
}

/// `e` read as a timestamp of type `ty` when it is a quoted literal and `ty` a timestamp type.
fn timestamp_literal(e: &Expr, ty: &DataType, zone: &Zone) -> Result<Option<Expr>> {
    let (
        Expr::Literal(ScalarValue::Utf8(Some(text)) | ScalarValue::Utf8View(Some(text)) | ScalarValue::LargeUtf8(Some(text)), _),
        DataType::Timestamp(_, tz),
    ) = (e, ty)
    else {
        return Ok(None);
    };
    let sql_type = if tz.is_some() { SqlType::Timestamptz } else { SqlType::Timestamp };
    match Datum::parse_in(sql_type, text, zone).map_err(|e| DataFusionError::External(Box::new(e)))? {
        Datum::Timestamp(us) => Ok(Some(Expr::Literal(ScalarValue::TimestampMicrosecond(Some(us), tz.clone()), None))),
        _ => Ok(None),
    }
}
