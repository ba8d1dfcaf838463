//! `numeric(p, s)`: the precision and scale a column declares, and a value fitted to them as PostgreSQL
//! fits it (rounded half away from zero to `s` decimals, printed with exactly `s`; 22003 when it then
//! needs more than `p - s` digits before the point).

use rust_decimal::{Decimal, RoundingStrategy};
use sqlparser::ast;

use crate::error::{QueryError, Result};

/// The most decimals a value holds here (rust_decimal's 28 significant digits).
pub(crate) const MAX_SCALE: u32 = 28;

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

/// The arithmetic operators of `numeric`, each with the display scale PostgreSQL gives its result:
/// the larger operand scale for `+`, `-` and `%`, their sum for `*`, and for `/` at least 16
/// significant digits ([`quotient`]). A result this type cannot hold with that scale (more than 28
/// significant digits) is 22003, where rust_decimal would round it silently.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum NumericOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

pub fn arithmetic(op: NumericOp, a: Decimal, b: Decimal) -> Result<Decimal> {
    let too_wide = || QueryError::NumericOutOfRange("value overflows numeric format".into());
    // Exact integer arithmetic on the mantissas brought to one scale.
    let aligned = |d: Decimal, scale: u32| 10i128.checked_pow(scale - d.scale()).and_then(|p| d.mantissa().checked_mul(p));
    let common = a.scale().max(b.scale());
    let (scale, mantissa) = match op {
        NumericOp::Div => return quotient(a, b),
        NumericOp::Mul => (a.scale() + b.scale(), a.mantissa().checked_mul(b.mantissa())),
        NumericOp::Mod if b.is_zero() => return Err(QueryError::DivisionByZero),
        _ => {
            let (x, y) = (aligned(a, common).ok_or_else(too_wide)?, aligned(b, common).ok_or_else(too_wide)?);
            // `%` truncates toward zero and takes the dividend's sign, as PostgreSQL's `mod` does.
            (
                common,
                if op == NumericOp::Add {
                    x.checked_add(y)
                } else if op == NumericOp::Sub {
                    x.checked_sub(y)
                } else {
                    x.checked_rem(y)
                },
            )
        }
    };
    Decimal::try_from_i128_with_scale(mantissa.ok_or_else(too_wide)?, scale).map_err(|_| too_wide())
}

/// `a / b` as PostgreSQL's `numeric_div` gives it: rounded half away from zero to [`div_scale`]'s scale.
pub fn quotient(a: Decimal, b: Decimal) -> Result<Decimal> {
    if b.is_zero() {
        return Err(QueryError::DivisionByZero);
    }
    let (a, b) = (Fixed { mantissa: a.mantissa(), scale: a.scale() }, Fixed { mantissa: b.mantissa(), scale: b.scale() });
    let rscale = div_scale(a, b);
    if rscale > MAX_SCALE {
        return Err(QueryError::NumericOutOfRange(format!(
            "the quotient needs {rscale} decimal places; Tabula's numeric holds {MAX_SCALE}"
        )));
    }
    let overflow = || QueryError::NumericOutOfRange("value overflows numeric format".into());
    let q = divide(a, b, rscale).ok_or_else(overflow)?;
    Decimal::try_from_i128_with_scale(q, rscale).map_err(|_| overflow())
}

/// A decimal number as a mantissa and the count of its decimal places (`1.50` is 150 and 2): the form
/// both rust_decimal's values and Arrow's Decimal128 arrays give.
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    pub mantissa: i128,
    pub scale: u32,
}

/// PostgreSQL's `select_div_scale`: the scale of `a / b`, which keeps at least 16 significant digits
/// (NUMERIC_MIN_SIG_DIGITS) and no fewer decimals than either operand shows. The quotient's weight is
/// estimated, as PostgreSQL does, from the operands' weights and first digits in base 10,000 (its
/// NBASE), so `1 / 3` has 20 decimals and `10 / 7` 16.
pub fn div_scale(a: Fixed, b: Fixed) -> u32 {
    scale_of_quotient((base_10000_lead(a), a.scale), (base_10000_lead(b), b.scale))
}

/// `select_div_scale` from each operand's base-10,000 lead ([`base_10000_lead`]) and scale.
pub fn scale_of_quotient(((w1, d1), s1): ((i64, u128), u32), ((w2, d2), s2): ((i64, u128), u32)) -> u32 {
    let qweight = w1 - w2 - i64::from(d1 <= d2);
    (16 - qweight * 4).max(i64::from(s1)).max(i64::from(s2)).clamp(0, 1000) as u32
}

/// `a / b` (`b` not zero) rounded half away from zero to `rscale` decimals, as the mantissa of that
/// scale; `None` when it does not fit an i128.
pub fn divide(a: Fixed, b: Fixed, rscale: u32) -> Option<i128> {
    // |a| / |b| * 10^rscale = ma * 10^k / mb (k >= 0 when rscale >= a's scale; else the dividend's
    // extra places are rounded away first), by long division one decimal digit at a time.
    let (ma, mb) = (a.mantissa.unsigned_abs(), b.mantissa.unsigned_abs());
    let k = i64::from(rscale) + i64::from(b.scale) - i64::from(a.scale);
    let (mut q, mut r, mb) = if k >= 0 {
        (ma / mb, ma % mb, mb)
    } else {
        let mb = mb.checked_mul(10u128.checked_pow((-k) as u32)?)?;
        (ma / mb, ma % mb, mb)
    };
    for _ in 0..k.max(0) {
        r = r.checked_mul(10)?;
        q = q.checked_mul(10)?.checked_add(r / mb)?;
        r %= mb;
    }
    if r >= mb - r {
        q += 1;
    }
    let q = i128::try_from(q).ok()?;
    Some(if (a.mantissa < 0) != (b.mantissa < 0) { -q } else { q })
}

/// The weight of `v`'s first nonzero base-10,000 digit and that digit ((0, 0) for zero), as PostgreSQL's
/// `select_div_scale` reads them from its NumericVar.
pub fn base_10000_lead(v: Fixed) -> (i64, u128) {
    let m = v.mantissa.unsigned_abs();
    if m == 0 {
        return (0, 0);
    }
    // The power of ten of the leading decimal digit, and the base-10,000 group holding it.
    let exponent = m.ilog10() as i64 - i64::from(v.scale);
    let weight = exponent.div_euclid(4);
    // That group's digit: |v| / 10^(4 * weight) = m / 10^(scale + 4 * weight), truncated.
    let shift = i64::from(v.scale) + weight * 4;
    let lead = if shift >= 0 { m / 10u128.pow(shift as u32) } else { m * 10u128.pow((-shift) as u32) };
    (weight, lead)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn fit(v: &str, spec: (u32, u32)) -> Result<String> {
        fit_numeric(Decimal::from_str(v).unwrap(), spec).map(|d| d.to_string())
    }

    fn op(op: NumericOp, a: &str, b: &str) -> String {
        arithmetic(op, Decimal::from_str(a).unwrap(), Decimal::from_str(b).unwrap())
            .map(|d| d.to_string())
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn results_have_postgresql_display_scale() {
        // Each expected value is PostgreSQL 15's answer.
        assert_eq!(op(NumericOp::Add, "1.50", "1"), "2.50");
        assert_eq!(op(NumericOp::Sub, "1.50", "1.50"), "0.00");
        assert_eq!(op(NumericOp::Mul, "2.000", "3"), "6.000");
        assert_eq!(op(NumericOp::Mul, "1.50", "0.125"), "0.18750");
        assert_eq!(op(NumericOp::Mod, "10.5", "3"), "1.5");
        assert_eq!(op(NumericOp::Mod, "-7", "2.00"), "-1.00");
        assert_eq!(op(NumericOp::Div, "1", "3"), "0.33333333333333333333");
        assert_eq!(op(NumericOp::Div, "10", "7"), "1.4285714285714286");
        assert_eq!(op(NumericOp::Div, "100000000000", "7"), "14285714285.71428571");
        assert_eq!(op(NumericOp::Div, "2.000", "1"), "2.0000000000000000");
        assert_eq!(op(NumericOp::Div, "3", "3"), "1.00000000000000000000");
        assert_eq!(op(NumericOp::Div, "15000", "10000"), "1.50000000000000000000");
        assert_eq!(op(NumericOp::Div, "3", "2"), "1.5000000000000000");
        assert_eq!(op(NumericOp::Div, "-2", "3"), "-0.66666666666666666667");
        assert_eq!(op(NumericOp::Div, "1.5", "0.125"), "12.0000000000000000");
        assert_eq!(op(NumericOp::Div, "0", "7"), "0.00000000000000000000");
        assert_eq!(op(NumericOp::Div, "1", "30000"), "0.000033333333333333333333");
        assert_eq!(op(NumericOp::Div, "1", "0"), "division by zero");
        assert_eq!(op(NumericOp::Div, "1", "300000000000"), "0.0000000000033333333333333333");
        assert!(op(NumericOp::Div, "1", "3000000000000000").contains("decimal places"));
        assert!(op(NumericOp::Mul, "0.00000000000001", "0.000000000000001").contains("overflows"));
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
