//! Casts DataFusion makes otherwise than PostgreSQL: to text, to `varchar(n)` and to `char(n)`.

use sqlparser::ast::{CharacterLength, DataType, Expr, Value, ValueWithSpan};

use super::call;

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

/// `x::varchar(n)`: PostgreSQL's explicit cast keeps the first `n` characters (a column of that type
/// refuses longer values instead); Arrow's ignores the length. `left(x::varchar, n)`.
pub(super) fn varchar_length_cast(e: &mut Expr) {
    let Expr::Cast { expr, data_type, kind, format, array } = e else { return };
    let (DataType::Varchar(Some(CharacterLength::IntegerLength { length, .. }))
    | DataType::CharacterVarying(Some(CharacterLength::IntegerLength { length, .. }))
    | DataType::CharVarying(Some(CharacterLength::IntegerLength { length, .. }))) = data_type
    else {
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
