//! Reads of stored rows: straight into what a read returns, or the newest cells of named columns, in one
//! pass over the bytes; out-of-line values are left to the caller, who can read the engine.

use super::*;

/// A cell of a read's answer whose value is out of line: where it sits in the answer (column and cell
/// index), and what to fetch. Its slot holds an empty value until [`fill_outside`] puts the value there.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideCell {
    pub column: usize,
    pub cell: usize,
    pub version: i64,
    pub kind: u8,
}

/// Puts the out-of-line values of a read's answer in their slots; `fetch(column, version)` reads one.
pub fn fill_outside(
    columns: &mut Columns,
    outside: &[OutsideCell],
    mut fetch: impl FnMut(&str, i64) -> Result<Option<Vec<u8>>>,
) -> Result<()> {
    for o in outside {
        let (name, cells) = &mut columns[o.column];
        cells[o.cell].value = outside_value(name, o.kind, fetch(name, o.version)?)?;
    }
    Ok(())
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
///
/// An out-of-line cell's slot holds an empty value, and `outside` (cleared first) says where it is:
/// [`fill_outside`] reads those after.
pub fn read_visible(buf: &[u8], f: &ReadFilter, outside: &mut Vec<OutsideCell>) -> Result<Option<Columns>> {
    outside.clear();
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
                if r.peek()? == TAG_OUTSIDE {
                    r.u8()?;
                    let kind = r.u8()?;
                    r.u32()?;
                    outside.push(OutsideCell { column: out.len(), cell: cells.len(), version, kind });
                    cells.push(Cell { version, value: Value::Binary(Vec::new()) });
                } else {
                    cells.push(Cell { version, value: decode_value(&mut r)? });
                }
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

/// The kind of the value a [`CellAt`] of `buf` points at when it is out of line (`value_at` cannot lend it).
pub fn outside_at(buf: &[u8], cell: CellAt) -> Option<u8> {
    match buf.get(cell.at as usize..cell.at as usize + 2) {
        Some([TAG_OUTSIDE, kind]) => Some(*kind),
        _ => None,
    }
}

/// The value a [`CellAt`] of `buf` points at (inline: see [`outside_at`]).
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
