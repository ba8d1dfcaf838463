//! The scalar functions the key-value route evaluates itself ([`Func`]).

use super::*;

pub(super) fn call(func: Func, vals: Vec<Datum>, args: &[Expr], ctx: &EvalCtx) -> Result<Datum> {
    use Func::*;
    let text = |i: usize| -> Option<String> { vals.get(i).and_then(|v| v.text_in(args[i].ty().unpadded(), &ctx.zone)) };
    let null_in = vals.iter().any(|v| v.is_null());
    Ok(match func {
        MoreThanOneRow => {
            return Err(QueryError::CardinalityViolation("more than one row returned by a subquery used as an expression".into()))
        }
        NumericFit(p, scale) => match &vals[0] {
            Datum::Numeric(d) => Datum::Numeric(crate::types::fit_numeric(*d, (p, scale))?),
            other => other.clone(),
        },
        Coalesce => vals.into_iter().find(|v| !v.is_null()).unwrap_or(Datum::Null),
        NullIf => {
            if vals[0].sql_cmp(&vals[1]) == Some(std::cmp::Ordering::Equal) {
                Datum::Null
            } else {
                vals[0].clone()
            }
        }
        Greatest | Least => {
            let mut best: Option<Datum> = None;
            for v in vals.into_iter().filter(|v| !v.is_null()) {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let o = v.sort_cmp(&b);
                        if (func == Greatest && o.is_gt()) || (func == Least && o.is_lt()) {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.unwrap_or(Datum::Null)
        }
        Sequence(call) => {
            let Some((src, session)) = ctx.sequences else {
                return Err(QueryError::NotSupported(format!("{}() in this statement", call.name())));
            };
            let name = text(0);
            let value = vals.get(1).and_then(|v| v.as_int());
            let is_called = match vals.get(2) {
                Some(Datum::Bool(b)) => Some(*b),
                Some(_) => None,
                None => Some(true),
            };
            crate::sequences::call(src, session, call, name.as_deref(), value, is_called)?.map_or(Datum::Null, Datum::Int)
        }
        Now => Datum::Timestamp(ctx.now_us),
        CurrentDate => Datum::Timestamp(ctx.now_us).cast_in(SqlType::Timestamptz, SqlType::Date, &ctx.zone)?,
        LocalTimestamp => Datum::Timestamp(ctx.now_us).cast_in(SqlType::Timestamptz, SqlType::Timestamp, &ctx.zone)?,
        GenRandomUuid => Datum::Uuid(random_uuid()?),
        Version => Datum::Text(version_string()),
        CurrentSchema => Datum::Text("public".into()),
        CurrentDatabase => Datum::Text(ctx.database.into()),
        CurrentUser => Datum::Text(ctx.user.into()),
        SessionUser => Datum::Text(ctx.session_user.into()),
        Concat => Datum::Text(vals.iter().zip(args).filter_map(|(v, a)| v.text_in(a.ty(), &ctx.zone)).collect()),
        _ if null_in => Datum::Null,
        NumericMath(f) => super::math::eval(f, &vals)?,
        Lower => Datum::Text(crate::types::letter_case::lower(&text(0).unwrap_or_default())),
        Upper => Datum::Text(crate::types::letter_case::upper(&text(0).unwrap_or_default())),
        // 32 hex digits, leading zeros included.
        Md5 => Datum::Text(format!("{:032x}", md5_digest(text(0).unwrap_or_default().as_bytes()))),
        Length => Datum::Int(match &vals[0] {
            Datum::Bytes(b) => b.len() as i64,
            _ => text(0).unwrap_or_default().chars().count() as i64,
        }),
        Substr => {
            let s: Vec<char> = text(0).unwrap_or_default().chars().collect();
            let start = vals.get(1).and_then(|v| v.clone().cast(SqlType::Int8).ok()).and_then(|v| v.as_int()).unwrap_or(1);
            let len = vals.get(2).map(|v| v.clone().cast(SqlType::Int8)).transpose()?.and_then(|v| v.as_int());
            let from = (start - 1).max(0) as usize;
            let to = match len {
                Some(l) if l < 0 => return Err(QueryError::InvalidParameterValue("negative substring length not allowed".into())),
                Some(l) => ((start - 1 + l).max(0) as usize).min(s.len()),
                None => s.len(),
            };
            Datum::Text(if from < to { s[from..to].iter().collect() } else { String::new() })
        }
        // -1, 0 or 1 in the argument's type (a numeric's without places, as PostgreSQL's numeric_sign).
        Sign => match &vals[0] {
            Datum::Int(i) => Datum::Int(i.signum()),
            Datum::Float(f) => Datum::Float(if *f == 0.0 || f.is_nan() { *f } else { f.signum() }),
            Datum::Numeric(d) => Datum::Numeric(rust_decimal::Decimal::from(d.cmp(&rust_decimal::Decimal::ZERO) as i8)),
            d => return Err(QueryError::UndefinedFunction(format!("sign({})", d.natural_type()))),
        },
        Abs => match &vals[0] {
            Datum::Int(i) => Datum::Int(i.checked_abs().ok_or_else(|| out_of_range(args[0].ty()))?),
            Datum::Float(f) => Datum::Float(f.abs()),
            Datum::Numeric(d) => Datum::Numeric(d.abs()),
            d => return Err(QueryError::UndefinedFunction(format!("abs({})", d.natural_type()))),
        },
        Round | Trunc | Floor | Ceil => {
            // The digits argument may come typed as the value is (numeric): read it as an integer.
            let digits = vals.get(1).map(|v| v.clone().cast(SqlType::Int8)).transpose()?.and_then(|v| v.as_int()).unwrap_or(0);
            match &vals[0] {
                Datum::Int(i) => Datum::Int(*i),
                Datum::Float(f) => {
                    if func == Round && vals.len() > 1 {
                        return Err(QueryError::UndefinedFunction("round(double precision, integer)".into()));
                    }
                    Datum::Float(match func {
                        // PostgreSQL's round(double precision) is rint: ties to even, round(0.5) is 0.
                        Round => f.round_ties_even(),
                        Trunc => f.trunc(),
                        Floor => f.floor(),
                        _ => f.ceil(),
                    })
                }
                Datum::Numeric(d) => Datum::Numeric(match func {
                    // Negative digits round left of the point, as PostgreSQL's round(1234.5, -2) is 1200.
                    Round if digits < 0 => {
                        let m =
                            rust_decimal::Decimal::from(10i64.checked_pow((-digits) as u32).ok_or_else(|| out_of_range(SqlType::Numeric))?);
                        (d / m).round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero) * m
                    }
                    // The result has exactly `digits` decimals, as PostgreSQL's round(4.5, 2) is 4.50.
                    Round => {
                        let mut r = d.round_dp_with_strategy(digits as u32, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
                        r.rescale(digits as u32);
                        r
                    }
                    // Toward zero, to `digits` places (left of the point when negative), as PostgreSQL's trunc.
                    Trunc => {
                        let places = digits.clamp(0, 28) as u32;
                        let mut r = if digits < 0 {
                            let m = rust_decimal::Decimal::from(
                                10i64.checked_pow((-digits) as u32).ok_or_else(|| out_of_range(SqlType::Numeric))?,
                            );
                            (d / m).trunc() * m
                        } else {
                            d.trunc_with_scale(places)
                        };
                        r.rescale(places);
                        r
                    }
                    Floor => d.floor(),
                    _ => d.ceil(),
                }),
                d => return Err(QueryError::UndefinedFunction(format!("{}({})", func.name(), d.natural_type()))),
            }
        }
    })
}

/// A version 4 (random) UUID from the operating system's random source, as PostgreSQL's gen_random_uuid().
pub(crate) fn random_uuid() -> Result<u128> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b).map_err(|e| QueryError::Internal(format!("no random bytes: {e}")))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    Ok(u128::from_be_bytes(b))
}

pub(super) fn md5_digest(b: &[u8]) -> u128 {
    // Small and dependency-free is not worth it: md5 is used by the engine already.
    u128::from_be_bytes(tabula_store::keys::md5_bytes(b))
}

/// SQL LIKE with `%` and `_` and backslash escapes.
pub(super) fn like(s: &str, p: &str) -> bool {
    fn go(s: &[char], p: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('%') => (0..=s.len()).any(|i| go(&s[i..], &p[1..])),
            Some('_') => !s.is_empty() && go(&s[1..], &p[1..]),
            Some('\\') if p.len() > 1 => s.first() == Some(&p[1]) && go(&s[1..], &p[2..]),
            Some(c) => s.first() == Some(c) && go(&s[1..], &p[1..]),
        }
    }
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = p.chars().collect();
    go(&s, &p)
}
