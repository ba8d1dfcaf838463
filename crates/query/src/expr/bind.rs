//! Binding: sqlparser's expressions resolved against a [`Scope`] of tables, typed, with parameters'
//! types inferred where they are used.

use super::*;

/// The names an expression can refer to.
pub struct Scope<'a> {
    /// (table, name it is referred by, index of its first column in the row)
    pub tables: Vec<(&'a TableSchema, String, usize)>,
}

impl<'a> Scope<'a> {
    pub fn empty() -> Self {
        Scope { tables: Vec::new() }
    }

    pub fn table(t: &'a TableSchema, alias: Option<&str>) -> Self {
        Scope { tables: vec![(t, alias.unwrap_or(tabula_store::value::public_part(&t.name)).to_string(), 0)] }
    }

    fn resolve(&self, qualifier: Option<&str>, name: &str) -> Result<Expr> {
        let mut found = None;
        for (t, tname, offset) in &self.tables {
            if let Some(q) = qualifier {
                if q != tname {
                    continue;
                }
            } else if tname == "excluded" {
                continue;
            }
            if let Some(i) = t.column_index(name) {
                if found.is_some() {
                    return Err(QueryError::AmbiguousColumn(name.to_string()));
                }
                found = Some(Expr::Column { index: offset + i, ty: t.column_type(i), name: name.to_string() });
            }
        }
        if let (Some(q), None) = (qualifier, &found) {
            if !self.tables.iter().any(|(_, n, _)| n == q) {
                return Err(QueryError::UndefinedTableReference(format!("missing FROM-clause entry for table \"{q}\"")));
            }
        }
        found.ok_or_else(|| match qualifier {
            Some(q) => QueryError::UndefinedColumnOf { qualifier: q.to_string(), column: name.to_string() },
            None => QueryError::UndefinedColumn(name.to_string()),
        })
    }
}

/// Binds sqlparser expressions; collects the types parameters must have.
pub struct Binder<'a, 's> {
    pub scope: &'a Scope<'s>,
    pub params: &'a mut Vec<SqlType>,
    /// The session's `TimeZone`, in which `timestamptz` literals are read.
    pub zone: crate::types::Zone,
}

impl Binder<'_, '_> {
    fn param(&mut self, s: &str) -> Result<Expr> {
        let n: usize = s.trim_start_matches('$').parse().map_err(|_| QueryError::Syntax(format!("bad parameter {s}")))?;
        if n == 0 || n > 65535 {
            return Err(QueryError::Syntax(format!("there is no parameter ${n}")));
        }
        if self.params.len() < n {
            self.params.resize(n, SqlType::Unknown);
        }
        Ok(Expr::Param { index: n - 1, ty: self.params[n - 1] })
    }

    /// Gives an untyped operand (a quoted literal or parameter) the type the other side expects.
    pub fn coerce(&mut self, e: Expr, ty: SqlType) -> Result<Expr> {
        if ty == SqlType::Unknown {
            return Ok(e);
        }
        Ok(match e {
            Expr::Param { index, ty: SqlType::Unknown } => {
                self.params[index] = ty;
                Expr::Param { index, ty }
            }
            Expr::Literal(d @ Datum::Text(_), SqlType::Unknown) => Expr::Literal(d.cast_in(SqlType::Unknown, ty, &self.zone)?, ty),
            Expr::Literal(Datum::Null, _) => Expr::Literal(Datum::Null, ty),
            // An integer literal against a float or numeric column: convert now.
            Expr::Literal(d @ Datum::Int(_), t) if t.is_integer() && matches!(ty, SqlType::Float4 | SqlType::Float8 | SqlType::Numeric) => {
                Expr::Literal(d.cast(ty)?, ty)
            }
            e => e,
        })
    }

    pub fn bind(&mut self, e: &ast::Expr) -> Result<Expr> {
        crate::depth::with_stack(|| self.bind_here(e))
    }

    fn bind_here(&mut self, e: &ast::Expr) -> Result<Expr> {
        use ast::Expr as E;
        Ok(match e {
            // Keywords in PostgreSQL, never columns when unquoted; sqlparser reads them as names.
            E::Identifier(id) if id.quote_style.is_none() && ["current_role", "user"].iter().any(|k| id.value.eq_ignore_ascii_case(k)) => {
                Expr::Func { func: Func::CurrentUser, args: vec![] }
            }
            E::Identifier(id) => self.scope.resolve(None, &ident_name(id)).map_err(|e| e.at(id))?,
            E::CompoundIdentifier(ids) => {
                let names: Vec<String> = ids.iter().map(ident_name).collect();
                let resolved = match names.as_slice() {
                    [q, c] => self.scope.resolve(Some(q), c),
                    [_, q, c] => self.scope.resolve(Some(q), c),
                    _ => Err(QueryError::UndefinedColumn(names.join("."))),
                };
                resolved.map_err(|e| e.at(&ids[0]))?
            }
            E::Value(v) => self.value(&v.value)?,
            E::Nested(e) => self.bind(e)?,
            E::BinaryOp { left, op, right } => {
                let op = match op {
                    ast::BinaryOperator::Plus => BinOp::Add,
                    ast::BinaryOperator::Minus => BinOp::Sub,
                    ast::BinaryOperator::Multiply => BinOp::Mul,
                    ast::BinaryOperator::Divide => BinOp::Div,
                    ast::BinaryOperator::Modulo => BinOp::Mod,
                    ast::BinaryOperator::Eq => BinOp::Eq,
                    ast::BinaryOperator::NotEq => BinOp::NotEq,
                    ast::BinaryOperator::Lt => BinOp::Lt,
                    ast::BinaryOperator::LtEq => BinOp::LtEq,
                    ast::BinaryOperator::Gt => BinOp::Gt,
                    ast::BinaryOperator::GtEq => BinOp::GtEq,
                    ast::BinaryOperator::And => BinOp::And,
                    ast::BinaryOperator::Or => BinOp::Or,
                    ast::BinaryOperator::StringConcat => BinOp::Concat,
                    ast::BinaryOperator::Arrow => BinOp::JsonGet,
                    ast::BinaryOperator::LongArrow => BinOp::JsonGetText,
                    ast::BinaryOperator::AtArrow => BinOp::JsonContains,
                    ast::BinaryOperator::ArrowAt => BinOp::JsonContainedBy,
                    ast::BinaryOperator::BitwiseAnd => BinOp::BitAnd,
                    ast::BinaryOperator::BitwiseOr => BinOp::BitOr,
                    ast::BinaryOperator::PGBitwiseXor => BinOp::BitXor,
                    ast::BinaryOperator::PGBitwiseShiftLeft => BinOp::ShiftLeft,
                    ast::BinaryOperator::PGBitwiseShiftRight => BinOp::ShiftRight,
                    other => return Err(QueryError::NotSupported(format!("operator {other} is not supported"))),
                };
                // Row comparisons `(a, b) > (x, y)` expand to their lexicographic meaning.
                if let (E::Tuple(ls), E::Tuple(rs)) = (strip(left), strip(right)) {
                    return self.bind_tuple_cmp(op, ls, rs);
                }
                let l = self.bind(left)?;
                let r = self.bind(right)?;
                self.binary(op, l, r)?
            }
            E::UnaryOp { op, expr } => {
                let inner = self.bind(expr)?;
                match op {
                    ast::UnaryOperator::Not => Expr::Not(Box::new(self.coerce(inner, SqlType::Bool)?)),
                    ast::UnaryOperator::Minus => match inner {
                        Expr::Literal(Datum::Int(i), t) => Expr::Literal(Datum::Int(-i), t),
                        Expr::Literal(Datum::Float(f), t) => Expr::Literal(Datum::Float(-f), t),
                        Expr::Literal(Datum::Numeric(d), t) => Expr::Literal(Datum::Numeric(-d), t),
                        e => Expr::Neg(Box::new(e)),
                    },
                    ast::UnaryOperator::Plus => inner,
                    // `~x` flips every bit: `x # -1`, the smallint all-ones widening to x's type.
                    ast::UnaryOperator::BitwiseNot => self.binary(BinOp::BitXor, inner, Expr::Literal(Datum::Int(-1), SqlType::Int2))?,
                    other => return Err(QueryError::NotSupported(format!("operator {other} is not supported"))),
                }
            }
            E::IsNull(e) => Expr::IsNull { expr: Box::new(self.bind(e)?), negated: false },
            E::IsNotNull(e) => Expr::IsNull { expr: Box::new(self.bind(e)?), negated: true },
            E::IsTrue(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: true, negated: false },
            E::IsNotTrue(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: true, negated: true },
            E::IsFalse(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: false, negated: false },
            E::IsNotFalse(e) => Expr::IsBool { expr: Box::new(self.bind(e)?), value: false, negated: true },
            E::InList { expr, list, negated } => {
                let inner = self.bind(expr)?;
                let ty = inner.ty();
                let list = list
                    .iter()
                    .map(|e| {
                        let b = self.bind(e)?;
                        self.coerce(b, ty)
                    })
                    .collect::<Result<Vec<_>>>()?;
                let ty =
                    if ty == SqlType::Unknown { list.iter().map(|e| e.ty()).find(|t| *t != SqlType::Unknown).unwrap_or(ty) } else { ty };
                Expr::InList { expr: Box::new(self.coerce(inner, ty)?), list, negated: *negated }
            }
            E::Between { expr, negated, low, high } => {
                let inner = self.bind(expr)?;
                let ty = inner.ty();
                let low = self.bind(low)?;
                let low = self.coerce(low, ty)?;
                let high = self.bind(high)?;
                let high = self.coerce(high, ty)?;
                Expr::Between { expr: Box::new(inner), low: Box::new(low), high: Box::new(high), negated: *negated }
            }
            E::Like { negated, expr, pattern, .. } | E::ILike { negated, expr, pattern, .. } => {
                let ci = matches!(e, E::ILike { .. });
                let p = self.bind(pattern)?;
                Expr::Like {
                    expr: Box::new(self.bind(expr)?),
                    pattern: Box::new(self.coerce(p, SqlType::Text)?),
                    negated: *negated,
                    case_insensitive: ci,
                }
            }
            E::Cast { expr, data_type, .. } => {
                let ty = sql_type(data_type)?;
                // `x::varchar(n)` keeps the first n characters: the analytic route's rewrite does that.
                if varchar_length(data_type)?.is_some() {
                    return Err(QueryError::Analytic("a cast to varchar(n)".into()));
                }
                // A number cast to a float is read as one: `1e300::float8` is past numeric's range here.
                if let (Some(n), SqlType::Float4 | SqlType::Float8) = (signed_number(expr), ty) {
                    return Ok(Expr::Literal(Datum::parse(ty, &n)?, ty));
                }
                let inner = self.bind(expr)?;
                // `x::numeric(p, s)`: the numeric, fitted to the precision and scale.
                if let Some((p, s)) = crate::types::numeric_spec(data_type)? {
                    let value = match inner {
                        Expr::Param { index, ty: SqlType::Unknown } => self.coerce(Expr::Param { index, ty: SqlType::Unknown }, ty)?,
                        Expr::Literal(d, from) => Expr::Literal(d.cast_explicit_in(from, ty, &self.zone)?, ty),
                        e => Expr::Cast { expr: Box::new(e), ty },
                    };
                    return Ok(match value {
                        Expr::Literal(Datum::Numeric(d), ty) => Expr::Literal(Datum::Numeric(crate::types::fit_numeric(d, (p, s))?), ty),
                        e => Expr::Func { func: Func::NumericFit(p, s), args: vec![e] },
                    });
                }
                match inner {
                    Expr::Param { index, ty: SqlType::Unknown } => self.coerce(Expr::Param { index, ty: SqlType::Unknown }, ty)?,
                    // A real spells itself as a real (`'3.4e38'::real::text` is 3.4e+38), as `eval` does.
                    Expr::Literal(d @ Datum::Float(_), SqlType::Float4) if ty.is_text() => {
                        Expr::Literal(d.to_pg_text(SqlType::Float4).map_or(Datum::Null, Datum::Text).cast_explicit(ty)?, ty)
                    }
                    Expr::Literal(d, from) => Expr::Literal(d.cast_explicit_in(from, ty, &self.zone)?, ty),
                    e => Expr::Cast { expr: Box::new(e), ty },
                }
            }
            E::TypedString(ts) => {
                let ty = sql_type(&ts.data_type)?;
                let s = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                Expr::Literal(Datum::parse_in(ty, &s, &self.zone)?, ty)
            }
            E::Function(f) => self.function(f)?,
            E::Case { operand, conditions, else_result, .. } => {
                let operand = operand.as_ref().map(|o| self.bind(o)).transpose()?;
                let whens = conditions.iter().map(|w| Ok((self.bind(&w.condition)?, self.bind(&w.result)?))).collect::<Result<Vec<_>>>()?;
                let otherwise = else_result.as_ref().map(|e| self.bind(e)).transpose()?;
                Expr::Case { operand: operand.map(Box::new), whens, otherwise: otherwise.map(Box::new) }
            }
            E::Substring { expr, substring_from, substring_for, .. } => {
                let mut args = vec![self.bind(expr)?];
                args.push(match substring_from {
                    Some(f) => self.bind(f)?,
                    None => Expr::literal(Datum::Int(1)),
                });
                if let Some(n) = substring_for {
                    args.push(self.bind(n)?);
                }
                Expr::Func { func: Func::Substr, args }
            }
            // TRIM([BOTH | LEADING | TRAILING] [chars FROM] s): btrim, ltrim or rtrim.
            E::Trim { expr, trim_where, trim_what, trim_characters: None } => {
                let name = match trim_where {
                    Some(ast::TrimWhereField::Leading) => "ltrim",
                    Some(ast::TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let mut args = vec![self.bind(expr)?];
                if let Some(what) = trim_what {
                    args.push(self.bind(what)?);
                }
                let udf = super::udf::lookup(name).ok_or_else(|| QueryError::UndefinedFunction(format!("{name}()")))?;
                self.udf_call(udf, args)?
            }
            E::Floor { expr, .. } => Expr::Func { func: Func::Floor, args: vec![self.bind(expr)?] },
            E::Ceil { expr, .. } => Expr::Func { func: Func::Ceil, args: vec![self.bind(expr)?] },
            E::Tuple(_) => return Err(QueryError::NotSupported("row values are only supported in comparisons".into())),
            E::Subquery(_) | E::InSubquery { .. } | E::Exists { .. } => {
                return Err(QueryError::NotSupported("subqueries are not supported yet".into()))
            }
            other => return Err(QueryError::NotSupported(format!("expression {other} is not supported"))),
        })
    }

    /// A binary operation, with untyped operands given the other side's type.
    pub fn binary(&mut self, op: BinOp, l: Expr, r: Expr) -> Result<Expr> {
        let (lt, rt) = (l.ty(), r.ty());
        let (l, r) = if matches!(op, BinOp::And | BinOp::Or) {
            (self.coerce(l, SqlType::Bool)?, self.coerce(r, SqlType::Bool)?)
        } else if op == BinOp::Concat {
            (self.coerce(l, SqlType::Text)?, self.coerce(r, SqlType::Text)?)
        } else if let Some(r_ty) = json_operand(op, rt) {
            // jsonb operators: `json` (kept as written) has no field access here, as its text is not normalized.
            if lt == SqlType::Json {
                return Err(QueryError::NotSupported(format!("the operator {} on json (it is on jsonb)", op.symbol())));
            }
            if lt != SqlType::Jsonb && lt != SqlType::Unknown {
                return Err(QueryError::UndefinedOperator(format!("{lt} {} {rt}", op.symbol())));
            }
            (self.coerce(l, SqlType::Jsonb)?, self.coerce(r, r_ty)?)
        } else {
            let l = self.coerce(l, rt)?;
            let r = self.coerce(r, lt)?;
            (l, r)
        };
        if op.is_comparison() {
            let (lt, rt) = (l.ty(), r.ty());
            let comparable = lt == rt
                || lt == SqlType::Unknown
                || rt == SqlType::Unknown
                || (lt.is_numeric() && rt.is_numeric())
                || (lt.is_text() && rt.is_text())
                || (matches!(lt, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date)
                    && matches!(rt, SqlType::Timestamp | SqlType::Timestamptz | SqlType::Date))
                || (matches!(lt, SqlType::Json | SqlType::Jsonb) && rt.is_text());
            if !comparable {
                return Err(QueryError::UndefinedOperator(format!("{lt} {} {rt}", op.symbol())));
            }
            // A timestamp or date compared with a timestamptz is the instant of that local time in the
            // session's zone, as PostgreSQL converts it.
            let local = |t: SqlType| matches!(t, SqlType::Timestamp | SqlType::Date);
            let instant = |e: Expr| Box::new(Expr::Cast { expr: Box::new(e), ty: SqlType::Timestamptz });
            if lt == SqlType::Timestamptz && local(rt) {
                return Ok(Expr::Binary { op, left: Box::new(l), right: instant(r) });
            }
            if local(lt) && rt == SqlType::Timestamptz {
                return Ok(Expr::Binary { op, left: instant(l), right: Box::new(r) });
            }
        }
        if op.is_bitwise() && !(l.ty().is_integer() && r.ty().is_integer()) {
            return Err(QueryError::UndefinedOperator(format!("{lt} {} {rt}", op.symbol())));
        }
        // The difference of two timestamps is an interval, a type the key-value executor does not have.
        let instant = |t: SqlType| matches!(t, SqlType::Timestamp | SqlType::Timestamptz);
        if op == BinOp::Sub && instant(l.ty()) && instant(r.ty()) {
            return Err(QueryError::Analytic("a difference of timestamps (an interval)".into()));
        }
        Ok(Expr::Binary { op, left: Box::new(l), right: Box::new(r) })
    }

    fn value(&mut self, v: &ast::Value) -> Result<Expr> {
        use ast::Value as V;
        Ok(match v {
            V::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    Expr::Literal(Datum::Int(i), if i32::try_from(i).is_ok() { SqlType::Int4 } else { SqlType::Int8 })
                } else {
                    Expr::Literal(Datum::parse(SqlType::Numeric, n)?, SqlType::Numeric)
                }
            }
            V::SingleQuotedString(s) | V::EscapedStringLiteral(s) | V::DollarQuotedString(ast::DollarQuotedString { value: s, .. }) => {
                Expr::Literal(Datum::Text(s.clone()), SqlType::Unknown)
            }
            V::HexStringLiteral(h) => Expr::Literal(Datum::parse(SqlType::Bytea, &format!("\\x{h}"))?, SqlType::Bytea),
            V::Boolean(b) => Expr::Literal(Datum::Bool(*b), SqlType::Bool),
            V::Null => Expr::Literal(Datum::Null, SqlType::Unknown),
            V::Placeholder(p) => self.param(p)?,
            other => return Err(QueryError::NotSupported(format!("literal {other} is not supported"))),
        })
    }

    fn function(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = f.name.0.last().and_then(|p| p.as_ident()).map(ident_name).unwrap_or_default();
        // `pg_typeof(x)`: the name of x's type, as format_type prints it, known here (x is not evaluated).
        if name == "pg_typeof" {
            let args = self.function_args(f)?;
            let [arg] = args.as_slice() else {
                return Err(QueryError::UndefinedFunction(format!("pg_typeof with {} arguments", args.len())));
            };
            return Ok(Expr::Literal(Datum::Text(arg.ty().pg_name().into()), SqlType::Text));
        }
        // `mod(a, b)` is `a % b`: the operator keeps a numeric's scale, where a call through DataFusion's
        // decimals would not.
        if name == "mod" {
            let [a, b] = <[Expr; 2]>::try_from(self.function_args(f)?)
                .map_err(|a| QueryError::UndefinedFunction(format!("mod with {} arguments", a.len())))?;
            return self.binary(BinOp::Mod, a, b);
        }
        if crate::types::numeric_math::MathFn::has(&name) {
            let args = self.function_args(f)?;
            return self.math_call(&name, args);
        }
        let Some(func) = Func::lookup(&name) else {
            let udf = super::udf::lookup(&name).ok_or_else(|| QueryError::UndefinedFunction(format!("{name}()")))?;
            let args = self.function_args(f)?;
            return self.udf_call(udf, args);
        };
        let args = match func {
            Func::Sequence(_) => self.sequence_args(f)?,
            _ => self.function_args(f)?,
        };
        let arity_ok = match func {
            Func::Sequence(crate::sequences::Call::Lastval) => args.is_empty(),
            Func::Sequence(crate::sequences::Call::Setval) => (2..=3).contains(&args.len()),
            Func::Coalesce | Func::Concat | Func::Greatest | Func::Least => !args.is_empty(),
            Func::NullIf => args.len() == 2,
            Func::Now
            | Func::CurrentDate
            | Func::LocalTimestamp
            | Func::Version
            | Func::CurrentSchema
            | Func::CurrentDatabase
            | Func::CurrentUser
            | Func::SessionUser
            | Func::GenRandomUuid => args.is_empty(),
            Func::Substr => (2..=3).contains(&args.len()),
            Func::Round | Func::Trunc => (1..=2).contains(&args.len()),
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(QueryError::UndefinedFunction(format!("{name} with {} arguments", args.len())));
        }
        // Untyped arguments of text functions are text; of the variadic ones, the first typed argument's type.
        if let Func::Sequence(_) = func {
            let types = [SqlType::Text, SqlType::Int8, SqlType::Bool];
            let args = args.into_iter().zip(types).map(|(a, t)| self.coerce(a, t)).collect::<Result<Vec<_>>>()?;
            return Ok(Expr::Func { func, args });
        }
        let target = match func {
            Func::Lower | Func::Upper | Func::Length | Func::Md5 | Func::Concat => SqlType::Text,
            _ => args.iter().map(|a| a.ty()).find(|t| *t != SqlType::Unknown).unwrap_or(SqlType::Unknown),
        };
        let args = args.into_iter().map(|a| self.coerce(a, target)).collect::<Result<Vec<_>>>()?;
        Ok(Expr::Func { func, args })
    }

    /// A sequence function's arguments: the first, the sequence, as its name (`'s'::regclass` is `'s'`:
    /// the name finds the sequence as PostgreSQL's regclass input would).
    fn sequence_args(&mut self, f: &ast::Function) -> Result<Vec<Expr>> {
        let ast::FunctionArguments::List(list) = &f.args else { return self.function_args(f) };
        let mut args = Vec::new();
        for (i, a) in list.args.iter().enumerate() {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(mut e)) = a.clone() else {
                return Err(QueryError::NotSupported(format!("function argument {a} is not supported")));
            };
            if i == 0 {
                while let ast::Expr::Cast { expr, data_type, .. } = &e {
                    let regclass = match data_type {
                        ast::DataType::Regclass => true,
                        ast::DataType::Custom(ty, _) => ty.to_string().eq_ignore_ascii_case("regclass"),
                        _ => false,
                    };
                    if !regclass {
                        break;
                    }
                    e = (**expr).clone();
                }
            }
            args.push(self.bind(&e)?);
        }
        Ok(args)
    }

    fn function_args(&mut self, f: &ast::Function) -> Result<Vec<Expr>> {
        let mut args = Vec::new();
        match &f.args {
            ast::FunctionArguments::None => {}
            ast::FunctionArguments::List(list) => {
                for a in &list.args {
                    match a {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => args.push(self.bind(e)?),
                        other => return Err(QueryError::NotSupported(format!("function argument {other} is not supported"))),
                    }
                }
            }
            ast::FunctionArguments::Subquery(_) => return Err(QueryError::NotSupported("subqueries are not supported yet".into())),
        }
        Ok(args)
    }
}

pub(super) fn strip(e: &ast::Expr) -> &ast::Expr {
    match e {
        ast::Expr::Nested(inner) => strip(inner),
        e => e,
    }
}

/// `varchar(n)`'s `n`, checked as PostgreSQL checks it (22023); `None` for any other type.
pub fn varchar_length(dt: &ast::DataType) -> Result<Option<u32>> {
    use ast::{CharacterLength, DataType as D};
    let (D::Varchar(Some(l)) | D::CharacterVarying(Some(l)) | D::CharVarying(Some(l))) = dt else { return Ok(None) };
    match l {
        CharacterLength::IntegerLength { length: 0, .. } => {
            Err(QueryError::InvalidParameterValue("length for type varchar must be at least 1".into()))
        }
        CharacterLength::IntegerLength { length, .. } if *length > 10_485_760 => {
            Err(QueryError::InvalidParameterValue("length for type varchar cannot exceed 10485760".into()))
        }
        CharacterLength::IntegerLength { length, .. } => Ok(Some(*length as u32)),
        CharacterLength::Max => Err(QueryError::Syntax("varchar(max) is not PostgreSQL's: give a length, or none".into())),
    }
}

/// `character(n)`'s `n`, checked as PostgreSQL checks it (22023); 1 when none is given, as in PostgreSQL.
fn char_length(l: Option<&ast::CharacterLength>) -> Result<u32> {
    use ast::CharacterLength;
    match l {
        None => Ok(1),
        Some(CharacterLength::IntegerLength { length: 0, .. }) => {
            Err(QueryError::InvalidParameterValue("length for type char must be at least 1".into()))
        }
        Some(CharacterLength::IntegerLength { length, .. }) if *length > 10_485_760 => {
            Err(QueryError::InvalidParameterValue("length for type char cannot exceed 10485760".into()))
        }
        Some(CharacterLength::IntegerLength { length, .. }) => Ok(*length as u32),
        Some(CharacterLength::Max) => Err(QueryError::Syntax("char(max) is not PostgreSQL's: give a length, or none".into())),
    }
}

/// The type of a table column declared as `dt`, with its length (`varchar(n)`, `character(n)`).
pub fn column_type(dt: &ast::DataType) -> Result<(SqlType, Option<u32>)> {
    match sql_type(dt)? {
        // Its values keep their trailing spaces in PostgreSQL (they are not padded to any length), where
        // Tabula holds a bpchar without them.
        SqlType::Bpchar(0) => {
            Err(QueryError::NotSupported("a column of type bpchar without a length is not supported; use char(n), varchar or text".into()))
        }
        SqlType::Bpchar(n) => Ok((SqlType::Bpchar(n), Some(n))),
        ty => Ok((ty, varchar_length(dt)?)),
    }
}

/// Maps a SQL data type to Tabula's.
/// A number literal as written, with its sign (`-1.5e-300`).
fn signed_number(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => {
            signed_number(expr).map(|n| n.strip_prefix('-').map_or_else(|| format!("-{n}"), str::to_string))
        }
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } => signed_number(expr),
        ast::Expr::Nested(e) => signed_number(e),
        _ => None,
    }
}

pub fn sql_type(dt: &ast::DataType) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match dt {
        D::Boolean | D::Bool => SqlType::Bool,
        D::SmallInt(_) | D::Int2(_) => SqlType::Int2,
        D::Int(_) | D::Integer(_) | D::Int4(_) => SqlType::Int4,
        D::BigInt(_) | D::Int8(_) => SqlType::Int8,
        D::Real | D::Float4 => SqlType::Float4,
        D::DoublePrecision | D::Float8 | D::Double(_) | D::Float(_) => SqlType::Float8,
        D::Numeric(_) | D::Decimal(_) | D::Dec(_) => SqlType::Numeric,
        D::Text | D::String(_) => SqlType::Text,
        D::Varchar(_) | D::CharacterVarying(_) | D::CharVarying(_) => SqlType::Varchar,
        D::Char(l) | D::Character(l) => SqlType::Bpchar(char_length(l.as_ref())?),
        D::Bytea => SqlType::Bytea,
        D::Timestamp(_, tz) => match tz {
            ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz => SqlType::Timestamptz,
            _ => SqlType::Timestamp,
        },
        D::Date => SqlType::Date,
        D::JSON => SqlType::Json,
        D::JSONB => SqlType::Jsonb,
        D::Uuid => SqlType::Uuid,
        D::Custom(name, _) => {
            let n = name.to_string().to_lowercase();
            SqlType::parse(n.strip_prefix("pg_catalog.").unwrap_or(&n))
                .ok_or_else(|| QueryError::NotSupported(format!("type \"{n}\" is not supported")))?
        }
        other => return Err(QueryError::NotSupported(format!("type {other} is not supported"))),
    })
}
