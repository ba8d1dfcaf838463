//! `numeric(p, s)`: the precision and scale a column declares, and a value fitted to them as PostgreSQL
//! fits it (rounded half away from zero to `s` decimals, printed with exactly `s`; 22003 when it then
//! needs more than `p - s` digits before the point).

use rust_decimal::{Decimal, RoundingStrategy};
use sqlparser::ast;

use crate::error::{QueryError, Result};

/// The most decimals a value holds here (rust_decimal's 28 significant digits).
const MAX_SCALE: u32 = 28;

/// `numeric(p, s)`'s `(p, s)` (`numeric(p)` is `(p, 0)`), checked as PostgreSQL 15 checks them (22023);
/// `None` for a numeric without them, or another type.
pub fn numeric_spec(dt: &ast::DataType) -> Result<Option<(u32, u32)>> {
    use ast::{DataType as D, ExactNumberInfo as E};
    let (D::Numeric(info) | D::Decimal(info) | D::Dec(info)) = dt else { return Ok(None) };
    let (p, s) = match info {
        E::None => return Ok(None),
        E::Precision(p) => (*p as i64, 0),
        E::PrecisionAndScale(p, s) => (*p as i64, *s),
    };
    if !(1..=1000).contains(&p) {
        return Err(QueryError::InvalidParameterValue(format!("NUMERIC precision {p} must be between 1 and 1000")));
    }
    if !(-1000..=1000).contains(&s) {
        return Err(QueryError::InvalidParameterValue(format!("NUMERIC scale {s} must be between -1000 and 1000")));
    }
    if s < 0 || s > MAX_SCALE as i64 {
        return Err(QueryError::NotSupported(format!("NUMERIC scale {s}: scales from 0 to {MAX_SCALE} are supported")));
    }
    Ok(Some((p as u32, s as u32)))
}

/// `d` as a `numeric(p, s)` column holds it.
pub fn fit_numeric(d: Decimal, (p, s): (u32, u32)) -> Result<Decimal> {
    let mut r = d.round_dp_with_strategy(s, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(s);
    // The value must round to an absolute value below 10^(p - s).
    let digits = p as i64 - s as i64;
    let limit = match digits {
        d if d > MAX_SCALE as i64 => None,
        d if d >= 0 => Some(Decimal::from_i128_with_scale(10i128.pow(d as u32), 0)),
        d => Some(Decimal::new(1, (-d) as u32)),
    };
    if limit.is_some_and(|l| r.abs() >= l) {
        return Err(QueryError::NumericOutOfRange("numeric field overflow".into()).with_message(format!(
            "A field with precision {p}, scale {s} must round to an absolute value less than {}.",
            if digits == 0 { "1".to_string() } else { format!("10^{digits}") }
        )));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn fit(v: &str, spec: (u32, u32)) -> Result<String> {
        fit_numeric(Decimal::from_str(v).unwrap(), spec).map(|d| d.to_string())
    }

    #[test]
    fn values_are_rounded_to_the_scale_and_bounded_by_the_precision() {
        assert_eq!(fit("5", (10, 2)).unwrap(), "5.00");
        assert_eq!(fit("1.235", (10, 2)).unwrap(), "1.24");
        assert_eq!(fit("-1.235", (10, 2)).unwrap(), "-1.24");
        assert_eq!(fit("99999999.994", (10, 2)).unwrap(), "99999999.99");
        let e = fit("99999999.995", (10, 2)).unwrap_err();
        assert_eq!((e.sqlstate(), e.to_string()), ("22003", "numeric field overflow".to_string()));
        assert_eq!(e.detail().unwrap(), "A field with precision 10, scale 2 must round to an absolute value less than 10^8.");
        assert_eq!(fit("0.5", (1, 0)).unwrap(), "1");
        assert_eq!(fit("0.04", (2, 3)).unwrap(), "0.040");
        assert!(fit("0.1", (2, 3)).is_err());
    }
}
