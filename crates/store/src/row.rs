//! Row value format and the version rules of Tablestore's data model: what a read may see and what compaction removes.
//!
//! ```text
//! row     = 0x01 marker:i64 ncols:u32 column*        (columns sorted by name)
//! marker  = version (ms) of the row's last write; keeps a row without attributes alive until its TTL
//! column  = name_len:u8 name nversions:u32 (version:i64 value)*     (newest first)
//! value   = 0x01 len:u32 utf8 | 0x02 i64 | 0x03 f64-bits | 0x04 u8 | 0x05 len:u32 bytes
//! ```

use crate::codec::{Reader, Writer};
use crate::error::{Result, StoreError};
use crate::value::{TimeRange, Value, ValueRef};

const FORMAT: u8 = 1;

/// One version of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub version: i64,
    pub value: Value,
}

/// Columns with their versions, newest first, sorted by name.
pub type Columns = Vec<(String, Vec<Cell>)>;

/// A stored row: its columns with versions, newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StoredRow {
    pub marker: i64,
    pub columns: Vec<(String, Vec<Cell>)>,
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

impl StoredRow {
    pub fn encode(&self) -> Vec<u8> {
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
                encode_value(&mut w, &c.value);
            }
        }
        w.buf
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

    pub fn decode(buf: &[u8]) -> Result<StoredRow> {
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
            let mut name = vec![0; len];
            for b in name.iter_mut() {
                *b = r.u8()?;
            }
            let name = String::from_utf8(name).map_err(|_| StoreError::Corrupt("bad column name".into()))?;
            let nv = r.u32()? as usize;
            let mut cells = Vec::with_capacity(nv.min(r.remaining() / 9));
            for _ in 0..nv {
                let version = r.i64()?;
                cells.push(Cell { version, value: decode_value(&mut r)? });
            }
            columns.push((name, cells));
        }
        Ok(StoredRow { marker, columns })
    }

    pub fn column(&self, name: &str) -> Option<&Vec<Cell>> {
        self.columns.binary_search_by(|(n, _)| n.as_str().cmp(name)).ok().map(|i| &self.columns[i].1)
    }

    pub fn column_mut(&mut self, name: &str) -> &mut Vec<Cell> {
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
    pub fn visible(mut self, rules: VersionRules, now_ms: i64) -> Option<StoredRow> {
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

    pub fn put_cell(&mut self, name: &str, version: i64, value: Value, max_versions: u32) {
        let cells = self.column_mut(name);
        match cells.binary_search_by(|c| version.cmp(&c.version)) {
            Ok(i) => cells[i].value = value,
            Err(i) => cells.insert(i, Cell { version, value }),
        }
        cells.truncate(max_versions as usize);
    }

    pub fn encoded_size_hint(&self) -> usize {
        13 + self.columns.iter().map(|(n, c)| 5 + n.len() + c.iter().map(|c| 13 + c.value.size()).sum::<usize>()).sum::<usize>()
    }
}

/// What one read wants of each stored row (the engine's `ReadSpec` with the table's rules applied).
pub struct ReadFilter<'a> {
    pub rules: VersionRules,
    pub now_ms: i64,
    /// Only these columns (all when `None`).
    pub columns: Option<&'a [String]>,
    /// Versions per column the read returns.
    pub max_versions: u32,
    pub time_range: Option<TimeRange>,
}

/// Reads a stored row straight into what a read returns: the same answer as `decode`, `visible` and
/// `select` in turn, in one pass that decodes (and allocates) only the cells it returns. `None` when nothing
/// of the row is visible.
///
/// Versions are stored newest first and expiry only depends on a version's age, so a column's visible cells
/// are the unexpired prefix of its first `max_versions`; a row is alive while any column's newest cell is.
pub fn read_visible(buf: &[u8], f: &ReadFilter) -> Result<Option<Columns>> {
    let mut r = Reader::new(buf);
    if r.u8()? != FORMAT {
        return Err(StoreError::Corrupt("unknown row format".into()));
    }
    let marker = r.i64()?;
    let n = r.u32()? as usize;
    let mut out = Vec::with_capacity(f.columns.map_or(n, |c| c.len().min(n)).min(r.remaining() / 5));
    let mut alive = false;
    for _ in 0..n {
        let len = r.u8()? as usize;
        let name = r.take(len)?;
        let wanted = f.columns.is_none_or(|cols| cols.iter().any(|c| c.as_bytes() == name));
        let nv = r.u32()? as usize;
        let mut cells = Vec::new();
        let mut visible = true;
        for i in 0..nv {
            let version = r.i64()?;
            visible = visible && i < f.rules.max_versions as usize && !f.rules.expired(version, f.now_ms);
            alive |= visible;
            if wanted && visible && cells.len() < f.max_versions as usize && f.time_range.is_none_or(|tr| tr.contains(version)) {
                cells.push(Cell { version, value: decode_value(&mut r)? });
            } else {
                skip_value(&mut r)?;
            }
        }
        if !cells.is_empty() {
            let name = std::str::from_utf8(name).map_err(|_| StoreError::Corrupt("bad column name".into()))?;
            out.push((name.to_string(), cells));
        }
    }
    if !alive && f.rules.expired(marker, f.now_ms) {
        return Ok(None);
    }
    Ok(Some(out))
}

/// Where the newest visible cell of a column lies in a stored row: its version, and the offset of its
/// encoded value ([`value_at`] reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellAt {
    pub version: i64,
    at: u32,
}

/// Finds the newest visible cell of each of `columns`, in their order, into `out` (cleared first): what
/// `read_visible` returns for one version per column, without column names, per-column vectors or copies of
/// the values. A scan of latest values calls this per row. `false` when nothing of the row is visible.
pub fn locate_latest(buf: &[u8], rules: VersionRules, now_ms: i64, columns: &[String], out: &mut Vec<Option<CellAt>>) -> Result<bool> {
    out.clear();
    out.resize(columns.len(), None);
    let mut r = Reader::new(buf);
    if r.u8()? != FORMAT {
        return Err(StoreError::Corrupt("unknown row format".into()));
    }
    let marker = r.i64()?;
    let n = r.u32()? as usize;
    let mut alive = false;
    for _ in 0..n {
        let len = r.u8()? as usize;
        let name = r.take(len)?;
        let slot = columns.iter().position(|c| c.as_bytes() == name);
        let nv = r.u32()? as usize;
        for i in 0..nv {
            let version = r.i64()?;
            // Versions are newest first: only the first can be the newest visible one.
            if i == 0 && rules.max_versions > 0 && !rules.expired(version, now_ms) {
                alive = true;
                if let Some(s) = slot {
                    out[s] = Some(CellAt { version, at: (buf.len() - r.remaining()) as u32 });
                }
            }
            skip_value(&mut r)?;
        }
    }
    Ok(alive || !rules.expired(marker, now_ms))
}

/// The value a [`CellAt`] of `buf` points at.
pub fn value_at(buf: &[u8], cell: CellAt) -> Result<ValueRef<'_>> {
    let mut r = Reader::new(buf.get(cell.at as usize..).ok_or_else(|| StoreError::Corrupt("cell offset past its row".into()))?);
    Ok(match r.u8()? {
        1 => ValueRef::String(std::str::from_utf8(r.bytes()?).map_err(|_| StoreError::Corrupt("bad utf-8".into()))?),
        2 => ValueRef::Integer(r.i64()?),
        3 => ValueRef::Double(f64::from_bits(r.u64()?)),
        4 => ValueRef::Boolean(r.u8()? != 0),
        5 => ValueRef::Binary(r.bytes()?),
        t => return Err(StoreError::Corrupt(format!("unknown value tag {t}"))),
    })
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
mod tests {
    use super::*;

    #[test]
    fn tablestore_ttl_example() {
        // ttl 86400, version 2016-07-20 00:00:00 UTC: expired exactly at 2016-07-21 00:00:00 UTC.
        let rules = VersionRules::new(86400, 1);
        assert!(!rules.expired(1468944000000, 1469030399999));
        assert!(rules.expired(1468944000000, 1469030400000));
        let forever = VersionRules::new(-1, 1);
        assert!(!forever.expired(0, i64::MAX));
    }

    #[test]
    fn read_visible_equals_decode_visible_select() {
        let mut row = StoredRow { marker: 50, columns: vec![] };
        for (col, versions) in [("a", vec![10, 20, 30, 40]), ("b", vec![5, 60]), ("c", vec![70]), ("d", vec![1])] {
            for v in versions {
                row.put_cell(col, v, Value::String(format!("{col}{v}")), 10);
            }
        }
        let raw = row.encode();
        let names = ["a".to_string(), "c".to_string(), "z".to_string()];
        let reversed = ["c".to_string(), "a".to_string()];
        for ttl_ms in [-1000, 0, 15, 35, 45, 55, 65, 75, 1000] {
            for table_max in [1, 2, 3] {
                for cols in [None, Some(&names[..]), Some(&names[2..]), Some(&reversed[..])] {
                    for read_max in [1, 2, 5] {
                        for tr in [None, Some(TimeRange::Range { start: 20, end: 61 })] {
                            let rules = VersionRules::new(if ttl_ms < 0 { -1 } else { 1 }, table_max);
                            let now = 1000 + ttl_ms;
                            let expected = StoredRow::decode(&raw).unwrap().visible(rules, now).map(|mut r| {
                                r.select(cols, Some(read_max), tr);
                                r.columns
                            });
                            let full = StoredRow::decode(&raw).unwrap().visible(rules, now);
                            let kept = full.as_ref().is_some_and(|r| r.columns.iter().map(|(_, c)| c.len()).sum::<usize>() == 8);
                            assert_eq!(!has_hidden(&raw, rules, now).unwrap(), kept, "ttl {ttl_ms} max {table_max}");
                            let f = ReadFilter { rules, now_ms: now, columns: cols, max_versions: read_max, time_range: tr };
                            assert_eq!(
                                read_visible(&raw, &f).unwrap(),
                                expected,
                                "ttl {ttl_ms} max {table_max} cols {cols:?} read {read_max} {tr:?}"
                            );
                            // The latest-cells read is the one-version read, slotted by the asked order.
                            if let (Some(cols), 1, None) = (cols, read_max, tr) {
                                let mut at = Vec::new();
                                let alive = locate_latest(&raw, rules, now, cols, &mut at).unwrap();
                                let slots: Vec<Option<Cell>> = at
                                    .iter()
                                    .map(|c| c.map(|c| Cell { version: c.version, value: value_at(&raw, c).unwrap().to_value() }))
                                    .collect();
                                let want = expected.as_ref().map(|found| {
                                    cols.iter()
                                        .map(|c| found.iter().find(|(n, _)| n == c).map(|(_, cells)| cells[0].clone()))
                                        .collect::<Vec<_>>()
                                });
                                assert_eq!(alive.then_some(slots), want, "latest: ttl {ttl_ms} max {table_max} cols {cols:?}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn encode_round_trip_and_visibility() {
        let mut row = StoredRow { marker: 10, columns: vec![] };
        row.put_cell("b", 5, Value::Integer(1), 3);
        row.put_cell("b", 7, Value::Integer(2), 3);
        row.put_cell("b", 6, Value::Double(1.5), 3);
        row.put_cell("b", 4, Value::Boolean(true), 3);
        row.put_cell("a", 9, Value::Binary(vec![0, 1]), 3);
        row.put_cell("a", 9, Value::String("x".into()), 3);
        let decoded = StoredRow::decode(&row.encode()).unwrap();
        assert_eq!(decoded, row);
        assert_eq!(row.column("b").unwrap().iter().map(|c| c.version).collect::<Vec<_>>(), vec![7, 6, 5]);
        assert_eq!(row.column("a").unwrap().len(), 1);
        let vis = row.clone().visible(VersionRules::new(1, 2), 1006).unwrap();
        assert_eq!(vis.column("b").unwrap().iter().map(|c| c.version).collect::<Vec<_>>(), vec![7]);
        assert!(vis.column("a").is_some());
        assert!(row.visible(VersionRules::new(0, 2), 100).is_none());
    }
}
