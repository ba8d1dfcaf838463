//! PostgreSQL's `numeric` square root, exponential, logarithms and power (`sqrt`, `exp`, `ln`, `log`,
//! `log10`, `power` of a numeric), with the scale PostgreSQL 15 chooses for each result and its digits.
//!
//! PostgreSQL keeps at least 16 significant digits (NUMERIC_MIN_SIG_DIGITS) and no fewer decimals than
//! an argument shows, estimating the result's weight before computing it: `sqrt(2.0)` is
//! `1.414213562373095`, `ln(2.0)` `0.6931471805599453`, `exp(1.0)` `2.7182818284590452`, `power(2.0, 3)`
//! `8.0000000000000000`. Each rule below is `numeric.c`'s, named after its function there.
//!
//! The value is computed in fixed point on big integers with [`GUARD`] decimals more than the result
//! keeps, then rounded half away from zero, as PostgreSQL rounds: a square root exactly (an integer square
//! root), the others correct unless the exact value lies within 10^-60 of a rounding boundary.

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};

use super::numeric::{base_10000_lead, Fixed, MAX_SCALE};
use crate::error::{QueryError, Result};

/// Decimals computed beyond the result's scale.
const GUARD: u32 = 60;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS.
const MIN_SIG_DIGITS: i64 = 16;
/// PostgreSQL's NUMERIC_MAX_DISPLAY_SCALE.
const MAX_DISPLAY_SCALE: i64 = 1000;
/// log10(e) as `numeric.c` writes it, one digit short of the f64 constant: the result scales are
/// truncations of products with it, so PostgreSQL's value decides them at the boundaries.
#[allow(clippy::approx_constant)]
const LOG10_E: f64 = 0.434294481903252;

/// The functions of this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    Exp,
    Ln,
    /// `log(x)` and `log10(x)`: `log(10, x)` in PostgreSQL.
    Log10,
    /// `log(b, x)`.
    Log,
    Power,
}

/// What an argument is, for choosing between a function's `double precision` and `numeric` forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Float,
    Numeric,
    /// An integer, or an untyped literal: either form takes it.
    Other,
}

impl MathFn {
    /// The function called `name` with `arity` arguments, if it is one of these.
    /// Whether `name` is one of these functions, by any number of arguments.
    pub fn has(name: &str) -> bool {
        (1..=2).any(|arity| MathFn::lookup(name, arity).is_some())
    }

    pub fn lookup(name: &str, arity: usize) -> Option<MathFn> {
        Some(match (name, arity) {
            ("sqrt", 1) => MathFn::Sqrt,
            ("exp", 1) => MathFn::Exp,
            ("ln", 1) => MathFn::Ln,
            ("log" | "log10", 1) => MathFn::Log10,
            ("log", 2) => MathFn::Log,
            ("power" | "pow", 2) => MathFn::Power,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MathFn::Sqrt => "sqrt",
            MathFn::Exp => "exp",
            MathFn::Ln => "ln",
            MathFn::Log10 => "log",
            MathFn::Log => "log",
            MathFn::Power => "power",
        }
    }

    /// Whether PostgreSQL resolves a call with these arguments to the numeric form: when one is a
    /// numeric and none a float (an exact match beats a float8's, which is preferred among implicit
    /// casts); `log(b, x)` has only that form. `None` where no form takes them (`log(float8, x)`).
    pub fn numeric_form(self, args: &[ArgKind]) -> Option<bool> {
        let float = args.contains(&ArgKind::Float);
        match self {
            MathFn::Log if float => None,
            MathFn::Log => Some(true),
            _ => Some(!float && args.contains(&ArgKind::Numeric)),
        }
    }
}

/// A result: `mantissa` of `scale` decimals (PostgreSQL's display scale).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exact {
    pub mantissa: BigInt,
    pub scale: u32,
}

impl Exact {
    /// As a `rust_decimal` value of its scale: 22003 past 28 decimals or significant digits.
    pub fn to_decimal(&self) -> Result<rust_decimal::Decimal> {
        if self.scale > MAX_SCALE {
            return Err(QueryError::NumericOutOfRange(format!(
                "the result needs {} decimal places; Tabula's numeric holds {MAX_SCALE}",
                self.scale
            )));
        }
        self.mantissa.to_i128().and_then(|m| rust_decimal::Decimal::try_from_i128_with_scale(m, self.scale).ok()).ok_or_else(overflow)
    }

    /// The mantissa at `scale` decimals, rounded half away from zero when that is fewer than its own.
    pub fn at_scale(&self, scale: u32) -> BigInt {
        if scale >= self.scale {
            &self.mantissa * pow10(scale - self.scale)
        } else {
            round(&self.mantissa, self.scale - scale)
        }
    }
}

fn overflow() -> QueryError {
    QueryError::NumericOutOfRange("value overflows numeric format".into())
}

fn refuse(sqlstate: &'static str, message: &str) -> QueryError {
    QueryError::Engine { sqlstate, message: message.to_string() }
}

/// Calls `f` on its arguments.
pub fn call(f: MathFn, args: &[Fixed]) -> Result<Exact> {
    match (f, args) {
        (MathFn::Sqrt, [x]) => sqrt(*x),
        (MathFn::Exp, [x]) => exp(*x),
        (MathFn::Ln, [x]) => ln(*x),
        (MathFn::Log10, [x]) => log(Fixed { mantissa: 10, scale: 0 }, *x),
        (MathFn::Log, [b, x]) => log(*b, *x),
        (MathFn::Power, [a, b]) => power(*a, *b),
        _ => Err(QueryError::UndefinedFunction(format!("{} with {} arguments", f.name(), args.len()))),
    }
}

fn pow10(n: u32) -> BigInt {
    num_traits::pow(BigInt::from(10), n as usize)
}

/// `m`, of `drop` more decimals than wanted, rounded half away from zero to the wanted ones.
fn round(m: &BigInt, drop: u32) -> BigInt {
    if drop == 0 {
        return m.clone();
    }
    let d = pow10(drop);
    let (q, r) = (m / &d, m % &d);
    if r.abs() * 2 >= d {
        q + m.signum()
    } else {
        q
    }
}

/// `x` in fixed point of `w` decimals (`w` at least its scale).
fn fixed(x: Fixed, w: u32) -> BigInt {
    BigInt::from(x.mantissa) * pow10(w.saturating_sub(x.scale))
}

/// A fixed-point value of `w` decimals rounded to `rscale`.
fn result(v: &BigInt, w: u32, rscale: i64) -> Exact {
    let scale = rscale.clamp(0, MAX_DISPLAY_SCALE) as u32;
    Exact { mantissa: round(v, w - scale), scale }
}

fn clamp_scale(rscale: i64) -> i64 {
    rscale.clamp(0, MAX_DISPLAY_SCALE)
}

/// The working scale for a result of `rscale` decimals whose magnitude may reach 10^`digits`.
fn working(rscale: i64, digits: i64) -> u32 {
    (clamp_scale(rscale) + i64::from(GUARD) + digits.max(0)) as u32
}

fn sign(x: Fixed) -> i32 {
    x.mantissa.signum() as i32
}

fn to_f64(x: Fixed) -> f64 {
    x.mantissa as f64 / 10f64.powi(x.scale as i32)
}

fn is_integral(x: Fixed) -> bool {
    x.mantissa % 10i128.pow(x.scale.min(38)) == 0 || x.mantissa == 0
}

// Fixed-point arithmetic on values of `w` decimals, truncating.
fn mul(a: &BigInt, b: &BigInt, w: u32) -> BigInt {
    a * b / pow10(w)
}

fn div(a: &BigInt, b: &BigInt, w: u32) -> BigInt {
    a * pow10(w) / b
}

fn sqrt_fixed(a: &BigInt, w: u32) -> BigInt {
    (a * pow10(w)).sqrt()
}

/// e^x for x in fixed point of `w` decimals (|x| below a few hundred).
fn exp_fixed(x: &BigInt, w: u32) -> BigInt {
    let one = pow10(w);
    if x.is_negative() {
        return div(&one, &exp_fixed(&-x, w), w);
    }
    // e^x = (e^(x / 2^n))^(2^n), with x / 2^n below 0.01 so that the series converges fast.
    let mut n = 0u32;
    while (x.clone() * 100) >> n > one {
        n += 1;
    }
    let y = x >> n;
    let (mut sum, mut term, mut k) = (one.clone(), one, 1u32);
    loop {
        term = mul(&term, &y, w) / k;
        if term.is_zero() {
            break;
        }
        sum += &term;
        k += 1;
    }
    for _ in 0..n {
        sum = mul(&sum, &sum, w);
    }
    sum
}

/// ln(x) for x > 0 in fixed point of `w` decimals: square roots bring x within 10% of 1, where
/// ln(x) = 2 atanh((x - 1) / (x + 1)) converges fast, as PostgreSQL's ln_var does.
fn ln_fixed(x: &BigInt, w: u32) -> BigInt {
    let one = pow10(w);
    let (low, high) = (&one * 9 / 10, &one * 11 / 10);
    let mut x = x.clone();
    let mut k = 0u32;
    while x > high || x < low {
        x = sqrt_fixed(&x, w);
        k += 1;
    }
    let z = div(&(&x - &one), &(&x + &one), w);
    let z2 = mul(&z, &z, w);
    let (mut sum, mut power, mut i) = (z.clone(), z, 1u32);
    loop {
        power = mul(&power, &z2, w);
        let t = &power / (2 * i + 1);
        if t.is_zero() {
            break;
        }
        sum += t;
        i += 1;
    }
    (sum * 2) << k
}

/// PostgreSQL's `estimate_ln_dweight`: the decimal weight of ln(x), x > 0, from its first base-10,000
/// digits (or, within 10% of 1, from x - 1, as ln(1 + y) is about y).
fn estimate_ln_dweight(x: Fixed) -> i64 {
    if x.mantissa <= 0 {
        return 0;
    }
    let (m, one) = (BigInt::from(x.mantissa), pow10(x.scale));
    if &m * 10 >= &one * 9 && &m * 10 <= &one * 11 {
        let y = (m - one).abs();
        // The decimal exponent of y's leading digit (0 for ln(1) = 0 exactly).
        return if y.is_zero() { 0 } else { y.to_string().len() as i64 - 1 - i64::from(x.scale) };
    }
    let (weight, lead) = base_10000_lead(x);
    // The digits after the first base-10,000 one, if any is not zero.
    let shift = i64::from(x.scale) + weight * 4;
    let rest = if shift > 0 { x.mantissa.unsigned_abs() % 10u128.pow(shift as u32) } else { 0 };
    let (digits, dweight) = if rest == 0 {
        (lead as f64, weight * 4)
    } else {
        let next = if shift >= 4 { rest / 10u128.pow(shift as u32 - 4) } else { rest * 10u128.pow(4 - shift as u32) };
        ((lead * 10_000 + next) as f64, weight * 4 - 4)
    };
    let ln = digits.ln() + dweight as f64 * std::f64::consts::LN_10;
    ln.abs().log10() as i64
}

fn check_log_argument(x: Fixed) -> Result<()> {
    match sign(x) {
        0 => Err(refuse("2201E", "cannot take logarithm of zero")),
        -1 => Err(refuse("2201E", "cannot take logarithm of a negative number")),
        _ => Ok(()),
    }
}

/// `numeric_sqrt`: 16 significant digits from the argument's base-10,000 weight.
pub fn sqrt(x: Fixed) -> Result<Exact> {
    if x.mantissa < 0 {
        return Err(refuse("2201F", "cannot take square root of a negative number"));
    }
    let (weight, _) = base_10000_lead(x);
    let sweight = (weight + 1) * 4 / 2 - 1;
    let rscale = clamp_scale((MIN_SIG_DIGITS - sweight).max(i64::from(x.scale)));
    // The integer square root at one decimal more, truncated; rounding that is rounding the exact root,
    // as the half-way point is a number of that many decimals.
    let w = (rscale as u32 + 1).max(x.scale.div_ceil(2));
    let root = (BigInt::from(x.mantissa) * pow10(2 * w - x.scale)).sqrt();
    Ok(result(&root, w, rscale))
}

/// `numeric_exp`: 16 significant digits from the result's estimated weight, x * log10(e).
pub fn exp(x: Fixed) -> Result<Exact> {
    let val = (to_f64(x) * LOG10_E).clamp(-2000.0, 2000.0);
    // Past 10^29 nothing fits Tabula's numeric.
    if val > 29.0 {
        return Err(overflow());
    }
    let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(i64::from(x.scale)));
    let w = working(rscale, 30);
    Ok(result(&exp_fixed(&fixed(x, w), w), w, rscale))
}

/// `numeric_ln`: 16 significant digits from the estimated weight of the logarithm.
pub fn ln(x: Fixed) -> Result<Exact> {
    check_log_argument(x)?;
    let rscale = clamp_scale((MIN_SIG_DIGITS - estimate_ln_dweight(x)).max(i64::from(x.scale)));
    let w = working(rscale, 0);
    Ok(result(&ln_fixed(&fixed(x, w), w), w, rscale))
}

/// `log_var`: log(b, x) = ln(x) / ln(b), of 16 significant digits from both estimated weights.
pub fn log(b: Fixed, x: Fixed) -> Result<Exact> {
    check_log_argument(b)?;
    check_log_argument(x)?;
    let dweight = estimate_ln_dweight(x) - estimate_ln_dweight(b);
    let rscale = clamp_scale((MIN_SIG_DIGITS - dweight).max(i64::from(b.scale)).max(i64::from(x.scale)));
    // ln(b) may be as small as 10^-28: the quotient needs that many more decimals.
    let w = working(rscale, 60);
    let ln_b = ln_fixed(&fixed(b, w), w);
    if ln_b.is_zero() {
        return Err(QueryError::DivisionByZero);
    }
    Ok(result(&div(&ln_fixed(&fixed(x, w), w), &ln_b, w), w, rscale))
}

/// `numeric_power` and `power_var`: an integral exponent multiplies (16 significant digits at least),
/// another goes through exp(b * ln(a)) with the scale its estimated weight gives.
pub fn power(a: Fixed, b: Fixed) -> Result<Exact> {
    if sign(a) == 0 && sign(b) < 0 {
        return Err(refuse("2201F", "zero raised to a negative power is undefined"));
    }
    if sign(a) < 0 && !is_integral(b) {
        return Err(refuse("2201F", "a negative number raised to a non-integer power yields a complex result"));
    }
    if is_integral(b) {
        let e = b.mantissa / 10i128.pow(b.scale.min(38));
        if let Ok(e) = i32::try_from(e) {
            return power_int(a, e);
        }
    }
    if sign(a) == 0 {
        return Ok(Exact { mantissa: BigInt::zero(), scale: MIN_SIG_DIGITS as u32 });
    }
    // A negative base has an integral exponent here: the sign is the exponent's parity's.
    let negative = sign(a) < 0 && (b.mantissa / 10i128.pow(b.scale.min(38))) % 2 != 0;
    let abs_a = Fixed { mantissa: a.mantissa.abs(), scale: a.scale };
    let ln_num = to_f64(abs_a).ln() * to_f64(b);
    if ln_num * LOG10_E > 29.0 {
        return Err(overflow());
    }
    let val = (ln_num * LOG10_E).clamp(-2000.0, 2000.0);
    let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(i64::from(a.scale)).max(i64::from(b.scale)));
    // The product b * ln(a) is wanted to w decimals: ln(a) needs as many more as b has digits.
    let b_digits = to_f64(b).abs().log10().ceil() as i64;
    let w = working(rscale, 30 + b_digits.max(0));
    let product = ln_fixed(&fixed(abs_a, w), w) * BigInt::from(b.mantissa) / pow10(b.scale);
    let value = exp_fixed(&product, w);
    let value = if negative { -value } else { value };
    Ok(result(&value, w, rscale))
}

/// `power_var_int`: a^e, rounded to at least 16 decimals (more if a has more).
fn power_int(a: Fixed, e: i32) -> Result<Exact> {
    let rscale = clamp_scale(MIN_SIG_DIGITS.max(i64::from(a.scale)));
    if e == 0 {
        return Ok(Exact { mantissa: pow10(rscale as u32), scale: rscale as u32 });
    }
    if a.mantissa == 0 {
        return Ok(Exact { mantissa: BigInt::zero(), scale: rscale as u32 });
    }
    // The result's decimal weight, to refuse what cannot fit before computing it, and to answer zero
    // for what rounds to zero.
    let f = f64::from(e) * to_f64(a).abs().log10();
    if f > 29.0 {
        return Err(overflow());
    }
    if f + 1.0 < -(rscale as f64) {
        return Ok(Exact { mantissa: BigInt::zero(), scale: rscale as u32 });
    }
    // Intermediate products of a base below 1 raised to a negative power may be far smaller than the
    // result: as many more decimals as the result has digits before the point.
    let w = working(rscale, 30 + f.abs().ceil() as i64);
    let base = fixed(a, w);
    let (mut acc, mut sq, mut n) = (pow10(w), base, e.unsigned_abs());
    while n > 0 {
        if n & 1 == 1 {
            acc = mul(&acc, &sq, w);
        }
        n >>= 1;
        if n > 0 {
            sq = mul(&sq, &sq, w);
        }
    }
    if e < 0 {
        if acc.is_zero() {
            return Err(overflow());
        }
        acc = div(&pow10(w), &acc, w);
    }
    Ok(result(&acc, w, rscale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn run(f: MathFn, args: &[&str]) -> String {
        let args: Vec<Fixed> = args
            .iter()
            .map(|a| {
                let d = rust_decimal::Decimal::from_str(a).unwrap();
                Fixed { mantissa: d.mantissa(), scale: d.scale() }
            })
            .collect();
        match call(f, &args).and_then(|r| r.to_decimal()) {
            Ok(d) => d.to_string(),
            Err(e) => format!("{}: {e}", e.sqlstate()),
        }
    }

    #[test]
    fn results_are_postgresql_digits_and_scales() {
        // Each expected value is PostgreSQL 15's answer.
        assert_eq!(run(MathFn::Sqrt, &["2"]), "1.414213562373095");
        assert_eq!(run(MathFn::Sqrt, &["100"]), "10.000000000000000");
        assert_eq!(run(MathFn::Sqrt, &["0.0001"]), "0.01000000000000000");
        assert_eq!(run(MathFn::Sqrt, &["0.0"]), "0.000000000000000");
        assert_eq!(run(MathFn::Sqrt, &["1e-20"]), "0.0000000001000000000000000");
        assert_eq!(run(MathFn::Sqrt, &["2.00000000000000000000000"]), "1.41421356237309504880169");
        assert_eq!(run(MathFn::Ln, &["2.0"]), "0.6931471805599453");
        assert_eq!(run(MathFn::Ln, &["10.0"]), "2.3025850929940457");
        assert_eq!(run(MathFn::Ln, &["1.0001"]), "0.00009999500033330834");
        assert_eq!(run(MathFn::Ln, &["1.0"]), "0.0000000000000000");
        assert_eq!(run(MathFn::Exp, &["1.0"]), "2.7182818284590452");
        assert_eq!(run(MathFn::Exp, &["1.00000"]), "2.7182818284590452");
        assert_eq!(run(MathFn::Exp, &["10.0"]), "22026.465794806717");
        assert_eq!(run(MathFn::Exp, &["-10.0"]), "0.00004539992976248485");
        assert_eq!(run(MathFn::Exp, &["0.0"]), "1.0000000000000000");
        assert_eq!(run(MathFn::Log10, &["100"]), "2.0000000000000000");
        assert_eq!(run(MathFn::Log10, &["1000.0"]), "3.0000000000000000");
        assert_eq!(run(MathFn::Log, &["2", "8"]), "3.0000000000000000");
        assert_eq!(run(MathFn::Log, &["1.1", "2.5"]), "9.613776133413367");
        assert_eq!(run(MathFn::Power, &["2.0", "0.5"]), "1.4142135623730950");
        assert_eq!(run(MathFn::Power, &["2", "0.50"]), "1.4142135623730950");
        assert_eq!(run(MathFn::Power, &["2.0", "3"]), "8.0000000000000000");
        assert_eq!(run(MathFn::Power, &["10.0", "-3"]), "0.0010000000000000");
        assert_eq!(run(MathFn::Power, &["2.5", "2"]), "6.2500000000000000");
        assert_eq!(run(MathFn::Power, &["1.5", "3"]), "3.3750000000000000");
        assert_eq!(run(MathFn::Power, &["-2.0", "3"]), "-8.0000000000000000");
        assert_eq!(run(MathFn::Power, &["0.0", "0.5"]), "0.0000000000000000");
        assert_eq!(run(MathFn::Power, &["0", "0.0"]), "1.0000000000000000");
        assert_eq!(run(MathFn::Power, &["1.0000001", "1e7"]), "2.7182816925449663");
    }

    #[test]
    fn arguments_without_a_result_are_postgresql_errors() {
        assert_eq!(run(MathFn::Sqrt, &["-1"]), "2201F: cannot take square root of a negative number");
        assert_eq!(run(MathFn::Ln, &["0"]), "2201E: cannot take logarithm of zero");
        assert_eq!(run(MathFn::Log, &["-2", "8"]), "2201E: cannot take logarithm of a negative number");
        assert_eq!(run(MathFn::Log, &["1", "8"]), "22012: division by zero");
        assert_eq!(run(MathFn::Power, &["0", "-1"]), "2201F: zero raised to a negative power is undefined");
        assert_eq!(run(MathFn::Power, &["-8.0", "0.5"]), "2201F: a negative number raised to a non-integer power yields a complex result");
        assert_eq!(run(MathFn::Exp, &["100.0"]), "22003: value overflows numeric format");
        assert!(run(MathFn::Exp, &["-50.0"]).starts_with("22003: the result needs 37 decimal places"));
    }
}
