//! Casts DataFusion makes otherwise than PostgreSQL: to text, to `varchar(n)` and to `char(n)`.

use std::ops::ControlFlow;

use sqlparser::ast::{CharacterLength, DataType, Expr, Ident, Query, SelectItem, SetExpr, Value, ValueWithSpan};

use super::{call, oid_alias};

/// `x::text` as PostgreSQL spells floats and arrays (`1000`, `1e+20`, `{a,"b c"}`), where Arrow's cast
/// prints `1000.0`, `1e20` and `[a, b c]`: `pg_text(x)`, which casts every other type as Arrow does.
/// Literals and parameters keep their cast, which types them.
pub(super) fn float_text_cast(e: &mut Expr) {
    let Expr::Cast { expr, data_type, .. } = e else { return };
    if !matches!(data_type, DataType::Text) || matches!(expr.as_ref(), Expr::Value(_)) {
        return;
    }
    *e = call("pg_text", vec![expr.as_ref().clone()], vec![]);
}

/// `x::float` is a `double precision` in PostgreSQL (and `float(p)` a `real` up to 24 bits of precision);
/// DataFusion's `FLOAT` is a 32-bit float, which answered `10::float / 3` with `3.3333333`.
pub(super) fn float_cast(e: &mut Expr) {
    let Expr::Cast { data_type, .. } = e else { return };
    if let DataType::Float(info) = data_type {
        let real = matches!(info, sqlparser::ast::ExactNumberInfo::Precision(p) if *p <= 24);
        *data_type = if real { DataType::Real } else { DataType::DoublePrecision };
    }
}

/// `$1::T[]`, `('{a,b}')::T[]` (Django's `bulk_create` binds its arrays so): the parameter's or the
/// literal's array text parsed into a list first (`analytic::array_in`), which the cast turns into the
/// array type.
pub(super) fn parameter_array_cast(e: &mut Expr) {
    let Expr::Cast { expr, data_type: DataType::Array(_), .. } = e else { return };
    let mut inner = expr.as_ref();
    while let Expr::Nested(n) = inner {
        inner = n;
    }
    if matches!(inner, Expr::Value(v) if matches!(v.value, Value::Placeholder(_) | Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_)))
    {
        **expr = call("tabula_array_in", vec![inner.clone()], vec![]);
    }
}

/// `x = ANY($1)`, `x <> ALL($1)`: PostgreSQL types the parameter as an array of `x`'s type; DataFusion, which
/// would plan `array_has($1, x)`, cannot infer it and refuses. The parameter is read as `$1::text[]`, whose
/// elements DataFusion then compares with `x` as it compares a text array literal (`x = ANY('{1,2}')`).
/// Drivers send such a list as an array's text form (psycopg 3, postgres.js, pgx).
pub(super) fn any_parameter(e: &mut Expr) {
    let (Expr::AnyOp { right, .. } | Expr::AllOp { right, .. }) = e else { return };
    let mut inner = right.as_ref();
    while let Expr::Nested(n) = inner {
        inner = n;
    }
    if matches!(inner, Expr::Value(v) if matches!(v.value, Value::Placeholder(_))) {
        let text = DataType::Text;
        **right = Expr::Cast {
            kind: sqlparser::ast::CastKind::DoubleColon,
            expr: Box::new(inner.clone()),
            data_type: DataType::Array(sqlparser::ast::ArrayElemTypeDef::SquareBracket(Box::new(text), None)),
            array: false,
            format: None,
        };
    }
}

/// `x = ANY(ARRAY['a', 'b'])`: an ARRAY of quoted literals is `text[]` to PostgreSQL, so x must be text;
/// DataFusion would cast the literals to x's type and compare. x is checked by `tabula_text_operand`.
pub(super) fn any_text_array(e: &mut Expr) {
    let (Expr::AnyOp { left, right, compare_op, .. } | Expr::AllOp { left, right, compare_op }) = e else { return };
    let mut inner = right.as_ref();
    while let Expr::Nested(n) = inner {
        inner = n;
    }
    let Expr::Array(array) = inner else { return };
    let quoted = |x: &Expr| matches!(x, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)));
    if array.elem.is_empty() || !array.elem.iter().all(quoted) {
        return;
    }
    let op = Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(compare_op.to_string())));
    **left = call(crate::analytic::text_operand::NAME, vec![(**left).clone(), op], vec![]);
}

/// `x::varchar(n)`: PostgreSQL's explicit cast keeps the first `n` characters (a column of that type
/// refuses longer values instead); Arrow's ignores the length. `left(x::varchar, n)`.
pub(super) fn varchar_length_cast(e: &mut Expr) {
    let Expr::Cast { expr, data_type, kind, format, array } = e else { return };
    let length = match data_type {
        DataType::Varchar(n) | DataType::CharacterVarying(n) | DataType::CharVarying(n) => *n,
        _ => return,
    };
    let Some(CharacterLength::IntegerLength { length, .. }) = length else {
        // `character varying` is DataFusion's `varchar`.
        *data_type = DataType::Varchar(None);
        return;
    };
    let n = Expr::Value(ValueWithSpan::from(Value::Number(length.to_string(), false)));
    let whole =
        Expr::Cast { expr: expr.clone(), data_type: DataType::Varchar(None), kind: kind.clone(), format: format.clone(), array: *array };
    *e = call("left", vec![whole, n], vec![]);
}

/// A cast to `char(n)`, which Tabula refuses: PostgreSQL pads its values with spaces and ignores them in
/// comparisons, which no type here does.
pub(super) fn char_cast(e: &Expr) -> Option<String> {
    match e {
        Expr::Cast { data_type: t @ (DataType::Char(_) | DataType::Character(_)), .. } => {
            crate::expr::sql_type(t).err().map(|e| e.to_string())
        }
        _ => None,
    }
}

/// `SELECT 'devices'::regclass` prints the relation's name, as PostgreSQL prints a regclass; elsewhere
/// (`WHERE attrelid = 'devices'::regclass`) the cast stays the OID it compares as. A select-list item that
/// is such a cast becomes `regclass_name(...)`, named `regclass` as PostgreSQL names the column. It runs
/// before the rules that turn the cast into an OID.
pub(super) struct RegclassOutput;

impl crate::walk::WalkerMut for RegclassOutput {
    fn pre_visit_query(&mut self, q: &mut Query) -> ControlFlow<()> {
        let SetExpr::Select(select) = q.body.as_mut() else { return ControlFlow::Continue(()) };
        for item in &mut select.projection {
            let (SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }) = item else { continue };
            let literal = matches!(e, Expr::Cast { expr, data_type, .. }
                if oid_alias(data_type) == Some("regclass") && matches!(expr.as_ref(), Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_))));
            if !literal {
                continue;
            }
            let named = call("regclass_name", vec![e.clone()], vec![]);
            *item = match item {
                SelectItem::ExprWithAlias { alias, .. } => SelectItem::ExprWithAlias { expr: named, alias: alias.clone() },
                _ => SelectItem::ExprWithAlias { expr: named, alias: Ident::new("regclass") },
            };
        }
        ControlFlow::Continue(())
    }
}

/// `'name'::regclass` as `tabula_regclass('name'::regclass, 'name')`, which raises 42P01 where no relation
/// has that name (the library's rule turns the cast into a lookup that gives NULL). A number written as a
/// string is an OID already, and is left alone. After the children are visited, so the new call is not
/// visited again.
pub(super) struct RegclassExists;

impl crate::walk::WalkerMut for RegclassExists {
    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let Expr::Cast { expr, data_type, .. } = e else { return ControlFlow::Continue(()) };
        let Expr::Value(v) = expr.as_ref() else { return ControlFlow::Continue(()) };
        let Value::SingleQuotedString(name) = &v.value else { return ControlFlow::Continue(()) };
        if oid_alias(data_type) != Some("regclass") || name.bytes().all(|b| b.is_ascii_digit()) {
            return ControlFlow::Continue(());
        }
        let name = Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(name.clone())));
        *e = call("tabula_regclass", vec![e.clone(), name], vec![]);
        ControlFlow::Continue(())
    }
}
