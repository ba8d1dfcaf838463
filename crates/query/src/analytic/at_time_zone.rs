//! `ts AT TIME ZONE zone`, which is PostgreSQL's `timezone(zone, ts)`, on the analytic route.
//!
//! DataFusion plans `AT TIME ZONE` as a cast to a timestamp labelled with the zone, which changes no value.
//! PostgreSQL answers, of a `timestamptz`, its local time in the zone (a `timestamp`); of a `timestamp`,
//! the instant that is that local time in the zone (a `timestamptz`, shown in the session's zone). The
//! rewriter makes `AT TIME ZONE` a call of this function. As in PostgreSQL, a quoted literal or a `date` is
//! read as a `timestamptz` first.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, plan_err, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::QueryError;
use crate::types::{Zone, ZoneSetting};

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct AtTimeZone {
    signature: Signature,
    /// The session's zone as Arrow names it: the label of a `timestamptz` answer.
    session: Arc<str>,
}

impl AtTimeZone {
    pub fn new(session: Arc<str>) -> AtTimeZone {
        AtTimeZone { signature: Signature::user_defined(Volatility::Immutable), session }
    }
}

const US: TimeUnit = TimeUnit::Microsecond;

fn zone_of(name: &str) -> Result<Zone> {
    match Zone::named_or_posix(name) {
        ZoneSetting::Zone(z, _) => Ok(z),
        ZoneSetting::Unsupported => Err(DataFusionError::External(Box::new(QueryError::NotSupported(format!(
            "time zone \"{name}\": a POSIX time zone with daylight-saving rules"
        ))))),
        ZoneSetting::Invalid => {
            Err(DataFusionError::External(Box::new(QueryError::InvalidParameterValue(format!("time zone \"{name}\" not recognized")))))
        }
    }
}

impl ScalarUDFImpl for AtTimeZone {
    fn name(&self) -> &str {
        "timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [zone, ts] = arg_types else { return plan_err!("timezone(zone, timestamp) takes two arguments") };
        if !matches!(zone, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null) {
            return Err(DataFusionError::External(Box::new(QueryError::NotSupported(format!(
                "AT TIME ZONE with a zone of type {zone}: name the zone (an IANA name or a POSIX offset such as 'UTC+3')"
            )))));
        }
        let ts = match ts {
            DataType::Timestamp(_, None) => DataType::Timestamp(US, None),
            DataType::Timestamp(_, Some(tz)) => DataType::Timestamp(US, Some(tz.clone())),
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Date32 | DataType::Null => {
                DataType::Timestamp(US, Some(self.session.clone()))
            }
            other => return plan_err!("function timezone(text, {other}) does not exist"),
        };
        Ok(vec![DataType::Utf8, ts])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match arg_types.get(1) {
            Some(DataType::Timestamp(_, Some(_))) => DataType::Timestamp(US, None),
            _ => DataType::Timestamp(US, Some(self.session.clone())),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [zone, ts] = args.args.as_slice() else { return exec_err!("timezone(zone, timestamp) takes two arguments") };
        let rows = args.number_rows;
        let of_instant = matches!(ts.data_type(), DataType::Timestamp(_, Some(_)));
        let ts = cast(&ts.to_array(rows)?, &DataType::Timestamp(US, None))?;
        let ts = ts.as_primitive::<TimestampMicrosecondType>();
        let zones = cast(&zone.to_array(rows)?, &DataType::Utf8)?;
        let zones = zones.as_string::<i32>();
        // The zone is almost always one literal: read once per distinct name in a row.
        let mut last: Option<(String, Zone)> = None;
        let mut out = Vec::with_capacity(rows);
        for i in 0..rows {
            if ts.is_null(i) || zones.is_null(i) {
                out.push(None);
                continue;
            }
            let name = zones.value(i);
            let z = match &last {
                Some((n, z)) if n == name => *z,
                _ => {
                    let z = zone_of(name)?;
                    last = Some((name.to_string(), z));
                    z
                }
            };
            let v = ts.value(i);
            let converted = if of_instant {
                z.local_of(v).map(|l| l.and_utc().timestamp_micros())
            } else {
                chrono::DateTime::from_timestamp_micros(v).and_then(|d| z.instant_of(d.naive_utc()))
            };
            out.push(Some(
                converted
                    .ok_or_else(|| DataFusionError::External(Box::new(QueryError::NumericOutOfRange("timestamp out of range".into()))))?,
            ));
        }
        let array = TimestampMicrosecondArray::from(out);
        let array = if of_instant { array } else { array.with_timezone(self.session.clone()) };
        Ok(match (zone, &args.args[1]) {
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_)) => ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?),
            _ => ColumnarValue::Array(Arc::new(array)),
        })
    }
}
