//! Values: the five attribute types of Tablestore's data model and the three primary-key types.

use crate::error::{Result, StoreError};

/// Largest primary-key value (String or Binary), in bytes.
pub const MAX_PK_VALUE_BYTES: usize = 1024;
/// Largest attribute value, in bytes.
pub const MAX_VALUE_BYTES: usize = 2 * 1024 * 1024;
/// At most this many primary-key columns.
pub const MAX_PK_COLUMNS: usize = 4;

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(String),
    Integer(i64),
    Double(f64),
    Boolean(bool),
    Binary(Vec<u8>),
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::String(_) => "String",
            Value::Integer(_) => "Integer",
            Value::Double(_) => "Double",
            Value::Boolean(_) => "Boolean",
            Value::Binary(_) => "Binary",
        }
    }

    /// Payload size used for the 2 MB limit and statistics.
    pub fn size(&self) -> usize {
        match self {
            Value::String(s) => s.len(),
            Value::Binary(b) => b.len(),
            Value::Integer(_) | Value::Double(_) => 8,
            Value::Boolean(_) => 1,
        }
    }

    /// Compares two values of comparable types: numbers with numbers, otherwise same type only.
    pub fn compare(&self, other: &Value) -> Option<std::cmp::Ordering> {
        use Value::*;
        match (self, other) {
            (String(a), String(b)) => Some(a.cmp(b)),
            (Integer(a), Integer(b)) => Some(a.cmp(b)),
            (Double(a), Double(b)) => a.partial_cmp(b),
            (Integer(a), Double(b)) => (*a as f64).partial_cmp(b),
            (Double(a), Integer(b)) => a.partial_cmp(&(*b as f64)),
            (Boolean(a), Boolean(b)) => Some(a.cmp(b)),
            (Binary(a), Binary(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }
}

/// An attribute value borrowed from where it is stored: what a latest-value scan lends its visitor, so a
/// value on its way to the client is not copied into a `String` of its own first.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    String(&'a str),
    Integer(i64),
    Double(f64),
    Boolean(bool),
    Binary(&'a [u8]),
}

impl ValueRef<'_> {
    pub fn to_value(self) -> Value {
        match self {
            ValueRef::String(s) => Value::String(s.to_string()),
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Double(d) => Value::Double(d),
            ValueRef::Boolean(b) => Value::Boolean(b),
            ValueRef::Binary(b) => Value::Binary(b.to_vec()),
        }
    }
}

impl Value {
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::String(s) => ValueRef::String(s),
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Double(d) => ValueRef::Double(*d),
            Value::Boolean(b) => ValueRef::Boolean(*b),
            Value::Binary(b) => ValueRef::Binary(b),
        }
    }
}

/// The type of a primary-key column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PkType {
    String,
    Integer,
    Binary,
}

impl PkType {
    pub fn name(self) -> &'static str {
        match self {
            PkType::String => "String",
            PkType::Integer => "Integer",
            PkType::Binary => "Binary",
        }
    }
}

/// A primary-key value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PkValue {
    Integer(i64),
    String(String),
    Binary(Vec<u8>),
}

impl PkValue {
    pub fn pk_type(&self) -> PkType {
        match self {
            PkValue::String(_) => PkType::String,
            PkValue::Integer(_) => PkType::Integer,
            PkValue::Binary(_) => PkType::Binary,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            PkValue::String(s) => Value::String(s.clone()),
            PkValue::Integer(i) => Value::Integer(*i),
            PkValue::Binary(b) => Value::Binary(b.clone()),
        }
    }
}

/// One end of a range: a value, or the smallest/largest possible value of the column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PkBound {
    InfMin,
    Value(PkValue),
    InfMax,
}

/// The start of a private table's name: `"\0temp\0" + owner + "\0" + name`, where the owner is a number
/// its user gives (the SQL layer: a session's) and the name follows the naming rules. A NUL byte can be in
/// no SQL text, since the wire protocol cannot carry it, so no other session can name such a table;
/// [`crate::Store::table_names`] lists no name starting with a NUL byte, and the store drops every such
/// table when it opens, so a private table never outlives the process that made it.
pub const PRIVATE_PREFIX: &str = "\0temp\0";

/// The name of `owner`'s private table `name` (see [`PRIVATE_PREFIX`]).
pub fn private_table_name(owner: u64, name: &str) -> String {
    format!("{PRIVATE_PREFIX}{owner}\0{name}")
}

/// `name` as its owner wrote it: a private table's name without its prefix, any other name as it is.
pub fn public_part(name: &str) -> &str {
    match name.strip_prefix(PRIVATE_PREFIX).and_then(|r| r.split_once('\0')) {
        Some((owner, base)) if !owner.is_empty() && owner.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    }
}

/// Checks a table's name: the naming rules, or a private table's name whose own part follows them.
pub fn validate_table_name(name: &str) -> Result<()> {
    let base = public_part(name);
    validate_name(base)
}

/// Checks a name against Tablestore's naming rules: letters, digits and `_`, starting with a letter or `_`,
/// 1 to 255 characters, case-sensitive.
pub fn validate_name(name: &str) -> Result<()> {
    let invalid = |reason| Err(StoreError::InvalidName { name: name.to_string(), reason });
    if name.is_empty() || name.len() > 255 {
        return invalid("names are 1 to 255 characters long");
    }
    let first = name.as_bytes()[0];
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return invalid("names start with a letter or an underscore");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return invalid("names contain only letters, digits and underscores");
    }
    Ok(())
}

/// Time filter of a read: `[start, end)` in ms, or exactly one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeRange {
    Range { start: i64, end: i64 },
    Exact(i64),
}

impl TimeRange {
    pub fn contains(&self, version: i64) -> bool {
        match *self {
            TimeRange::Range { start, end } => version >= start && version < end,
            TimeRange::Exact(v) => version == v,
        }
    }
}
