//! Values lent out as they lie, for encoding a row without copying.

use super::Datum;

/// A value lent to whoever encodes a row: text and integers borrowed from where they lie (the engine's
/// buffer), anything else as a datum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DatumRef<'a> {
    Null,
    Int(i64),
    Text(&'a str),
    Datum(&'a Datum),
}

impl<'a> From<&'a Datum> for DatumRef<'a> {
    fn from(d: &'a Datum) -> Self {
        match d {
            Datum::Null => DatumRef::Null,
            Datum::Int(i) => DatumRef::Int(*i),
            Datum::Text(s) => DatumRef::Text(s),
            d => DatumRef::Datum(d),
        }
    }
}

impl DatumRef<'_> {
    pub fn to_datum(self) -> Datum {
        match self {
            DatumRef::Null => Datum::Null,
            DatumRef::Int(i) => Datum::Int(i),
            DatumRef::Text(s) => Datum::Text(s.to_string()),
            DatumRef::Datum(d) => d.clone(),
        }
    }
}

/// A value on its way out: lent as it is when it needs no conversion, else converted.
#[derive(Debug, Clone, PartialEq)]
pub enum Lent<'a> {
    Ref(DatumRef<'a>),
    Owned(Datum),
}

impl Lent<'_> {
    pub fn as_ref(&self) -> DatumRef<'_> {
        match self {
            Lent::Ref(r) => *r,
            Lent::Owned(d) => DatumRef::from(d),
        }
    }
}
