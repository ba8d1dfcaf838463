//! Values as the engine stores them: its five value types for cells, its three for primary-key columns,
//! and back to the declared SQL type.

use tabula_store::{PkType, PkValue, Value, ValueRef};

use super::{Datum, DatumRef, Lent, SqlType};
use crate::error::Result;

impl Datum {
    /// The engine value a column of type `ty` stores.
    pub fn to_value(&self) -> Option<Value> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(b) => Value::Boolean(*b),
            Datum::Int(i) => Value::Integer(*i),
            Datum::Float(f) => Value::Double(*f),
            Datum::Text(s) => Value::String(s.clone()),
            Datum::Numeric(d) => Value::String(d.to_string()),
            Datum::Bytes(b) => Value::Binary(b.clone()),
            Datum::Timestamp(t) => Value::Integer(*t),
            Datum::Date(d) => Value::Integer(*d as i64),
            Datum::Uuid(u) => Value::Binary(u.to_be_bytes().to_vec()),
        })
    }

    /// Reads an engine value back as the declared type.
    pub fn from_value(v: &Value, ty: SqlType) -> Result<Datum> {
        use SqlType::*;
        Ok(match (v, ty) {
            (Value::Integer(i), Timestamp | Timestamptz) => Datum::Timestamp(*i),
            (Value::Integer(i), Date) => Datum::Date(*i as i32),
            (Value::Binary(b), Uuid) if b.len() == 16 => Datum::Uuid(u128::from_be_bytes(b.as_slice().try_into().unwrap())),
            (Value::Boolean(b), _) => Datum::Bool(*b).cast(ty)?,
            (Value::Integer(i), _) => Datum::Int(*i).cast(ty)?,
            (Value::Double(f), _) => Datum::Float(*f).cast(ty)?,
            (Value::String(s), _) => Datum::Text(s.clone()).cast(ty)?,
            (Value::Binary(b), Bytea) => Datum::Bytes(b.clone()),
            (Value::Binary(b), t) => Datum::Text(String::from_utf8_lossy(b).into_owned()).cast(t)?,
        })
    }

    /// `from_value` for a value the caller gives up: strings and bytes move instead of being copied.
    pub fn from_owned_value(v: Value, ty: SqlType) -> Result<Datum> {
        match (v, ty) {
            (Value::String(s), t) if t.is_text() => Ok(Datum::Text(s)),
            (Value::String(s), t) => Datum::Text(s).cast(t),
            (Value::Binary(b), SqlType::Bytea) => Ok(Datum::Bytes(b)),
            (v, t) => Datum::from_value(&v, t),
        }
    }

    /// `from_value` of a borrowed value: text for a text column and an integer that fits its integer column
    /// are lent as they are; anything else is converted.
    pub fn lend_value(v: ValueRef<'_>, ty: SqlType) -> Result<Lent<'_>> {
        let fits = |i: i64| match ty {
            SqlType::Int8 => true,
            SqlType::Int4 => i32::try_from(i).is_ok(),
            SqlType::Int2 => i16::try_from(i).is_ok(),
            _ => false,
        };
        Ok(match v {
            ValueRef::String(s) if ty.is_text() => Lent::Ref(DatumRef::Text(s)),
            ValueRef::Integer(i) if fits(i) => Lent::Ref(DatumRef::Int(i)),
            v => Lent::Owned(Datum::from_owned_value(v.to_value(), ty)?),
        })
    }

    /// `from_owned_pk` of a borrowed key value.
    pub fn lend_pk(v: &PkValue) -> Lent<'_> {
        match v {
            PkValue::Integer(i) => Lent::Ref(DatumRef::Int(*i)),
            PkValue::String(s) => Lent::Ref(DatumRef::Text(s)),
            PkValue::Binary(b) => Lent::Owned(Datum::Bytes(b.clone())),
        }
    }

    pub fn to_pk(&self, ty: SqlType) -> Option<PkValue> {
        match (self, ty.pk_type()?) {
            (Datum::Int(i), PkType::Integer) => Some(PkValue::Integer(*i)),
            (Datum::Text(s), PkType::String) => Some(PkValue::String(s.clone())),
            (Datum::Bytes(b), PkType::Binary) => Some(PkValue::Binary(b.clone())),
            _ => None,
        }
    }

    pub fn from_owned_pk(v: PkValue) -> Datum {
        match v {
            PkValue::Integer(i) => Datum::Int(i),
            PkValue::String(s) => Datum::Text(s),
            PkValue::Binary(b) => Datum::Bytes(b),
        }
    }

    pub fn from_pk(v: &PkValue) -> Datum {
        match v {
            PkValue::Integer(i) => Datum::Int(*i),
            PkValue::String(s) => Datum::Text(s.clone()),
            PkValue::Binary(b) => Datum::Bytes(b.clone()),
        }
    }
}
