//! Row value format and the version rules of Tablestore's data model: what a read may see and what compaction removes.
//!
//! ```text
//! row     = 0x01 marker:i64 ncols:u32 column*        (columns sorted by name)
//! marker  = version (ms) of the row's last write; keeps a row without attributes alive until its TTL
//! column  = name_len:u8 name nversions:u32 (version:i64 value)*     (newest first)
//! value   = 0x01 len:u32 utf8 | 0x02 i64 | 0x03 f64-bits | 0x04 u8 | 0x05 len:u32 bytes
//!         | 0x06 kind:u8 len:u32                     out of line: a string (kind 0x01) or binary (0x05) of
//!                                                    len bytes under `keys::outside_key(row, column, version)`
//! ```
//!
//! Values out of line are PostgreSQL's TOAST for a wide-column row: every write reads and rewrites its whole
//! row, so a row that kept five 2 MB cells inline rewrote 10 MB to change one integer (3.5 updates a
//! second). A value written past [`crate::StoreConfig::inline_value_bytes`] goes under a key of its own, and
//! the row keeps its kind and length: an update that leaves it alone neither reads nor writes it, and no
//! engine value grows past a cell's 2 MB (a distributed engine's values must stay small). A version's value
//! never changes under its key except by a write of the same version, in the same transaction as its row.

use crate::codec::{Reader, Writer};
use crate::error::{Result, StoreError};
use crate::value::{TimeRange, Value, ValueRef};

mod read;

pub use read::{fill_outside, locate_latest, outside_at, read_visible, value_at, CellAt, OutsideCell, ReadFilter};

const FORMAT: u8 = 1;
const TAG_OUTSIDE: u8 = 6;

/// One version of a cell: its value (`Value`), or as a stored row holds it (`Stored`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell<V = Value> {
    pub version: i64,
    pub value: V,
}

/// Columns with their versions, newest first, sorted by name.
pub type Columns = Vec<(String, Vec<Cell>)>;

/// A stored row: its columns with versions, newest first. Decoded, its cells are [`Stored`]: a value out
/// of line is only its kind and length until someone reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRow<V = Value> {
    pub marker: i64,
    pub columns: Vec<(String, Vec<Cell<V>>)>,
}

impl<V> Default for StoredRow<V> {
    fn default() -> Self {
        StoredRow { marker: 0, columns: Vec::new() }
    }
}

/// A cell's value as its row holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    Inline(Value),
    /// Under `keys::outside_key`: a string (`kind` 1) or binary (5) of `len` bytes.
    Outside {
        kind: u8,
        len: u32,
    },
}

impl Stored {
    pub fn type_name(&self) -> &'static str {
        match self {
            Stored::Inline(v) => v.type_name(),
            Stored::Outside { kind: 1, .. } => "String",
            Stored::Outside { .. } => "Binary",
        }
    }
}

fn write_stored(w: &mut Writer, v: &Stored) {
    match v {
        Stored::Inline(v) => encode_value(w, v),
        Stored::Outside { kind, len } => write_outside(w, *kind, *len),
    }
}

fn write_outside(w: &mut Writer, kind: u8, len: u32) {
    w.u8(TAG_OUTSIDE);
    w.u8(kind);
    w.u32(len);
}

/// The value of column `column`'s out-of-line cell of `kind`, from what its key holds (nothing there is a
/// damaged store, never an empty value).
pub fn outside_value(column: &str, kind: u8, found: Option<Vec<u8>>) -> Result<Value> {
    let bytes = found.ok_or_else(|| StoreError::Corrupt(format!("out-of-line value of {column} is missing")))?;
    match kind {
        1 => String::from_utf8(bytes).map(Value::String).map_err(|_| StoreError::Corrupt("bad utf-8".into())),
        5 => Ok(Value::Binary(bytes)),
        k => Err(StoreError::Corrupt(format!("unknown out-of-line kind {k}"))),
    }
}

/// The out-of-line cells a stored row refers to: column, version and length of each.
pub fn outside_cells(buf: &[u8]) -> Result<Vec<(String, i64, u32)>> {
    let mut r = Reader::new(buf);
    if r.u8()? != FORMAT {
        return Err(StoreError::Corrupt("unknown row format".into()));
    }
    r.i64()?;
    let n = r.u32()? as usize;
    let mut out = Vec::new();
    for _ in 0..n {
        let len = r.u8()? as usize;
        let name = r.take(len)?;
        let nv = r.u32()? as usize;
        for _ in 0..nv {
            let version = r.i64()?;
            if r.peek()? == TAG_OUTSIDE {
                r.u8()?;
                r.u8()?;
                let len = r.u32()?;
                let name = std::str::from_utf8(name).map_err(|_| StoreError::Corrupt("bad column name".into()))?;
                out.push((name.to_string(), version, len));
            } else {
                skip_value(&mut r)?;
            }
        }
    }
    Ok(out)
}

/// Table options that decide which versions exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRules {
    pub ttl_seconds: i64,
    pub max_versions: u32,
    /// Versions at or before this time (ms) are expired whatever the ttl: what an earlier, shorter ttl hid
    /// stays hidden when the ttl is raised (`i64::MIN`: none).
    pub hidden_before: i64,
}

impl VersionRules {
    pub fn new(ttl_seconds: i64, max_versions: u32) -> VersionRules {
        VersionRules { ttl_seconds, max_versions, hidden_before: i64::MIN }
    }

    /// A version is expired when `version/1000 + ttl` is not in the future (Tablestore's example: version
    /// 1468944000000 with ttl 86400 expires at exactly 2016-07-21 00:00:00 UTC), or when an earlier ttl had
    /// already expired it. Either way, the older a version, the sooner it expires.
    pub fn expired(&self, version: i64, now_ms: i64) -> bool {
        version <= self.hidden_before || (self.ttl_seconds >= 0 && version.saturating_add(self.ttl_seconds.saturating_mul(1000)) <= now_ms)
    }
}

impl<V> StoredRow<V> {
    fn encode_with(&self, mut cell: impl FnMut(&mut Writer, &str, i64, &V) -> Result<()>) -> Result<Vec<u8>> {
        let mut w = Writer::with_capacity(64);
        w.u8(FORMAT);
        w.i64(self.marker);
        w.u32(self.columns.len() as u32);
        for (name, cells) in &self.columns {
            w.u8(name.len() as u8);
            w.buf.extend_from_slice(name.as_bytes());
            w.u32(cells.len() as u32);
            for c in cells {
                w.i64(c.version);
                cell(&mut w, name, c.version, &c.value)?;
            }
        }
        Ok(w.buf)
    }
}

impl StoredRow<Stored> {
    /// The row's bytes, every value where it is now (inline, or out of line).
    pub fn encode(&self) -> Vec<u8> {
        self.encode_with(|w, _, _, v| {
            write_stored(w, v);
            Ok(())
        })
        .expect("writing to a vector does not fail")
    }

    /// The row's bytes with each inline string or binary longer than `inline_max` moved out of line:
    /// `spill(column, version, bytes)` writes its bytes under its own key.
    pub fn encode_spilling(&self, inline_max: usize, mut spill: impl FnMut(&str, i64, &[u8]) -> Result<()>) -> Result<Vec<u8>> {
        self.encode_with(|w, name, version, v| match v {
            Stored::Inline(value @ (Value::String(_) | Value::Binary(_))) if value.size() > inline_max => {
                let (kind, bytes) = match value {
                    Value::String(s) => (1, s.as_bytes()),
                    Value::Binary(b) => (5, b.as_slice()),
                    _ => unreachable!("matched above"),
                };
                spill(name, version, bytes)?;
                write_outside(w, kind, bytes.len() as u32);
                Ok(())
            }
            v => {
                write_stored(w, v);
                Ok(())
            }
        })
    }

    /// The row with every cell's value, out-of-line ones read by `fetch(column, version)`.
    pub fn resolve(self, mut fetch: impl FnMut(&str, i64) -> Result<Option<Vec<u8>>>) -> Result<StoredRow> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for (name, cells) in self.columns {
            let mut out = Vec::with_capacity(cells.len());
            for c in cells {
                let value = match c.value {
                    Stored::Inline(v) => v,
                    Stored::Outside { kind, .. } => outside_value(&name, kind, fetch(&name, c.version)?)?,
                };
                out.push(Cell { version: c.version, value });
            }
            columns.push((name, out));
        }
        Ok(StoredRow { marker: self.marker, columns })
    }

    /// Whether any cell is out of line.
    pub fn has_outside(&self) -> bool {
        self.columns.iter().any(|(_, cells)| cells.iter().any(|c| matches!(c.value, Stored::Outside { .. })))
    }
}

impl StoredRow {
    /// The row's bytes, every value inline.
    pub fn encode(&self) -> Vec<u8> {
        self.encode_with(|w, _, _, v| {
            encode_value(w, v);
            Ok(())
        })
        .expect("writing to a vector does not fail")
    }

    /// The row as a stored row holds it, every value inline (until it is encoded with spilling).
    pub fn into_stored(self) -> StoredRow<Stored> {
        StoredRow {
            marker: self.marker,
            columns: self
                .columns
                .into_iter()
                .map(|(n, cells)| (n, cells.into_iter().map(|c| Cell { version: c.version, value: Stored::Inline(c.value) }).collect()))
                .collect(),
        }
    }

    /// The encoding of a row whose columns hold one cell each, given sorted by name, each once: what
    /// building the `StoredRow` and calling `encode` gives, without the row's vectors and copied values.
    pub fn encode_one_cell_each<'a>(marker: i64, columns: impl ExactSizeIterator<Item = (&'a str, i64, &'a Value)>) -> Vec<u8> {
        let mut w = Writer::with_capacity(64);
        w.u8(FORMAT);
        w.i64(marker);
        w.u32(columns.len() as u32);
        for (name, version, value) in columns {
            w.u8(name.len() as u8);
            w.buf.extend_from_slice(name.as_bytes());
            w.u32(1);
            w.i64(version);
            encode_value(&mut w, value);
        }
        w.buf
    }
}

impl StoredRow<Stored> {
    pub fn decode(buf: &[u8]) -> Result<StoredRow<Stored>> {
        let mut r = Reader::new(buf);
        if r.u8()? != FORMAT {
            return Err(StoreError::Corrupt("unknown row format".into()));
        }
        let marker = r.i64()?;
        let n = r.u32()? as usize;
        // Counts come from the stored bytes: room is made only for what the bytes left could hold (a column
        // takes at least 5 bytes, a cell 9), or a damaged count would ask for gigabytes and abort the process.
        let mut columns = Vec::with_capacity(n.min(r.remaining() / 5));
        for _ in 0..n {
            let len = r.u8()? as usize;
            let name = r.take(len)?.to_vec();
            let name = String::from_utf8(name).map_err(|_| StoreError::Corrupt("bad column name".into()))?;
            let nv = r.u32()? as usize;
            let mut cells = Vec::with_capacity(nv.min(r.remaining() / 9));
            for _ in 0..nv {
                let version = r.i64()?;
                let value = if r.peek()? == TAG_OUTSIDE {
                    r.u8()?;
                    let kind = r.u8()?;
                    Stored::Outside { kind, len: r.u32()? }
                } else {
                    Stored::Inline(decode_value(&mut r)?)
                };
                cells.push(Cell { version, value });
            }
            columns.push((name, cells));
        }
        Ok(StoredRow { marker, columns })
    }
}

impl<V> StoredRow<V> {
    pub fn column(&self, name: &str) -> Option<&Vec<Cell<V>>> {
        self.columns.binary_search_by(|(n, _)| n.as_str().cmp(name)).ok().map(|i| &self.columns[i].1)
    }

    pub fn column_mut(&mut self, name: &str) -> &mut Vec<Cell<V>> {
        let i = match self.columns.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => i,
            Err(i) => {
                self.columns.insert(i, (name.to_string(), Vec::new()));
                i
            }
        };
        &mut self.columns[i].1
    }

    pub fn remove_empty_columns(&mut self) {
        self.columns.retain(|(_, cells)| !cells.is_empty());
    }

    /// What a read sees under the table's rules: at most `max_versions` newest versions per column, none
    /// expired. `None` when nothing of the row is visible (no live cell and an expired marker).
    pub fn visible(mut self, rules: VersionRules, now_ms: i64) -> Option<StoredRow<V>> {
        for (_, cells) in self.columns.iter_mut() {
            cells.truncate(rules.max_versions as usize);
            while cells.last().is_some_and(|c| rules.expired(c.version, now_ms)) {
                cells.pop();
            }
        }
        self.remove_empty_columns();
        if self.columns.is_empty() && rules.expired(self.marker, now_ms) {
            return None;
        }
        Some(self)
    }

    /// Applies a read's own column list, time range and version count to an already visible row.
    pub fn select(&mut self, columns: Option<&[String]>, max_versions: Option<u32>, time_range: Option<TimeRange>) {
        if let Some(cols) = columns {
            self.columns.retain(|(n, _)| cols.iter().any(|c| c == n));
        }
        for (_, cells) in self.columns.iter_mut() {
            if let Some(tr) = time_range {
                cells.retain(|c| tr.contains(c.version));
            }
            cells.truncate(max_versions.unwrap_or(1) as usize);
        }
        self.remove_empty_columns();
    }

    /// Inserts a version, replacing one with the same timestamp, keeping newest first.
    /// The version a write at `now` gets from the server: `now`, or past every version the row holds, so that
    /// writes in the same millisecond (or after one at a future version) never overwrite each other.
    pub fn next_version(&self, now: i64) -> i64 {
        let newest = self.columns.iter().filter_map(|(_, cells)| cells.first().map(|c| c.version)).max();
        newest.map_or(now, |v| now.max(v.saturating_add(1)))
    }

    pub fn put_cell(&mut self, name: &str, version: i64, value: V, max_versions: u32) {
        let cells = self.column_mut(name);
        match cells.binary_search_by(|c| version.cmp(&c.version)) {
            Ok(i) => cells[i].value = value,
            Err(i) => cells.insert(i, Cell { version, value }),
        }
        cells.truncate(max_versions as usize);
    }
}

/// Whether a stored row holds anything no read can see: surplus or expired versions, or an expired empty row.
fn has_hidden(buf: &[u8], rules: VersionRules, now_ms: i64) -> Result<bool> {
    let mut r = Reader::new(buf);
    if r.u8()? != FORMAT {
        return Ok(false);
    }
    let marker = r.i64()?;
    let n = r.u32()? as usize;
    if n == 0 {
        return Ok(rules.expired(marker, now_ms));
    }
    for _ in 0..n {
        let len = r.u8()? as usize;
        r.take(len)?;
        let nv = r.u32()? as usize;
        if nv > rules.max_versions as usize {
            return Ok(true);
        }
        for _ in 0..nv {
            if rules.expired(r.i64()?, now_ms) {
                return Ok(true);
            }
            skip_value(&mut r)?;
        }
    }
    Ok(false)
}

fn skip_value(r: &mut Reader) -> Result<()> {
    match r.u8()? {
        1 | 5 => {
            r.bytes()?;
        }
        2 | 3 => {
            r.take(8)?;
        }
        4 => {
            r.take(1)?;
        }
        TAG_OUTSIDE => {
            r.take(5)?;
        }
        t => return Err(StoreError::Corrupt(format!("unknown value tag {t}"))),
    }
    Ok(())
}

fn encode_value(w: &mut Writer, v: &Value) {
    match v {
        Value::String(s) => {
            w.u8(1);
            w.str(s);
        }
        Value::Integer(i) => {
            w.u8(2);
            w.i64(*i);
        }
        Value::Double(d) => {
            w.u8(3);
            w.u64(d.to_bits());
        }
        Value::Boolean(b) => {
            w.u8(4);
            w.u8(*b as u8);
        }
        Value::Binary(b) => {
            w.u8(5);
            w.bytes(b);
        }
    }
}

fn decode_value(r: &mut Reader) -> Result<Value> {
    Ok(match r.u8()? {
        1 => Value::String(r.string()?),
        2 => Value::Integer(r.i64()?),
        3 => Value::Double(f64::from_bits(r.u64()?)),
        4 => Value::Boolean(r.u8()? != 0),
        5 => Value::Binary(r.bytes()?.to_vec()),
        t => return Err(StoreError::Corrupt(format!("unknown value tag {t}"))),
    })
}

/// What compaction does to a stored row: drop what no read can see any more.
pub enum Compacted {
    Keep,
    Remove,
    Change(Vec<u8>),
}

pub fn compact(value: &[u8], rules: VersionRules, now_ms: i64) -> Compacted {
    // Most rows have nothing to drop: find that out without decoding (allocating) anything.
    if !has_hidden(value, rules, now_ms).unwrap_or(false) {
        return Compacted::Keep;
    }
    let Ok(row) = StoredRow::decode(value) else { return Compacted::Keep };
    let before: usize = row.columns.iter().map(|(_, c)| c.len()).sum();
    match row.visible(rules, now_ms) {
        None => Compacted::Remove,
        Some(r) if r.columns.iter().map(|(_, c)| c.len()).sum::<usize>() == before => Compacted::Keep,
        Some(r) => Compacted::Change(r.encode()),
    }
}

#[cfg(test)]
mod tests;
