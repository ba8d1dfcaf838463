//! The request and result types of the engine's operations.

use crate::error::Result;
use crate::row::{value_at, Cell, CellAt};
use crate::value::{PkBound, PkValue, TimeRange, Value, ValueRef};

/// A row as a read returns it: primary key and the selected columns' versions, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub pk: Vec<PkValue>,
    pub columns: Vec<(String, Vec<Cell>)>,
}

impl Row {
    /// The newest visible value of a column.
    pub fn get(&self, column: &str) -> Option<&Value> {
        self.cells(column).and_then(|c| c.first()).map(|c| &c.value)
    }

    /// All returned versions of a column, newest first.
    pub fn cells(&self, column: &str) -> Option<&[Cell]> {
        self.columns.iter().find(|(n, _)| n == column).map(|(_, c)| c.as_slice())
    }
}

/// What a read returns of each row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadSpec {
    /// Only these columns (all when `None`).
    pub columns: Option<Vec<String>>,
    /// Versions per column (1 when `None`).
    pub max_versions: Option<u32>,
    pub time_range: Option<TimeRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Direction {
    #[default]
    Forward,
    Backward,
}

/// A range read. Forward: `[start, end)`. Backward: from `start` (inclusive) down to `end` (exclusive),
/// so `start` is the larger key, as in Tablestore's GetRange.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeRequest {
    pub start: Vec<PkBound>,
    pub end: Vec<PkBound>,
    pub direction: Direction,
    pub limit: Option<usize>,
    pub read: ReadSpec,
    /// Stop after about this many bytes of row data (the engine's default budget when `None`).
    pub budget_bytes: Option<usize>,
}

impl RangeRequest {
    pub fn full(direction: Direction) -> Self {
        let (s, e) = match direction {
            Direction::Forward => (PkBound::InfMin, PkBound::InfMax),
            Direction::Backward => (PkBound::InfMax, PkBound::InfMin),
        };
        RangeRequest { start: vec![s], end: vec![e], direction, limit: None, read: ReadSpec::default(), budget_bytes: None }
    }
}

/// What a latest-value range read returns ([`crate::Access::get_range_latest`]): per row, its primary key
/// and the newest visible cell of each asked-for column, in the order asked (`None` where the column has
/// none). Rows lie flat, one after another, in `keys` (`key_len` values each) and `cells` (`width` each): no
/// names, no version lists and no allocation per row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatestRows {
    pub key_len: usize,
    pub width: usize,
    pub keys: Vec<PkValue>,
    pub cells: Vec<Option<Cell>>,
    /// Where to resume (as an inclusive start) when a limit or the budget cut the read short.
    pub next_start: Option<Vec<PkValue>>,
}

impl LatestRows {
    pub fn len(&self) -> usize {
        self.keys.len().checked_div(self.key_len).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Appends a lent row, its values copied out of the engine's buffer.
    pub(crate) fn push(&mut self, row: &LatestRow<'_>) -> Result<()> {
        self.keys.extend_from_slice(row.key);
        for i in 0..row.width() {
            let cell = row.value(i)?.map(|v| Cell { version: row.version(i).unwrap_or_default(), value: v.to_value() });
            self.cells.push(cell);
        }
        Ok(())
    }
}

/// One row of a latest-value range read, lent to the visitor of [`crate::Access::visit_range_latest`]: its
/// key, and the newest visible cell of each asked-for column still in the engine's buffer.
pub struct LatestRow<'a> {
    pub key: &'a [PkValue],
    raw: &'a [u8],
    cells: &'a [Option<CellAt>],
    /// The values of cells stored out of line, read for this row (empty when it has none).
    outside: &'a [Option<Value>],
}

impl<'a> LatestRow<'a> {
    pub(crate) fn new(key: &'a [PkValue], raw: &'a [u8], cells: &'a [Option<CellAt>], outside: &'a [Option<Value>]) -> Self {
        LatestRow { key, raw, cells, outside }
    }

    /// How many columns were asked for.
    pub fn width(&self) -> usize {
        self.cells.len()
    }

    /// The version of the `i`th asked-for column's newest cell; `None` where it has none.
    pub fn version(&self, i: usize) -> Option<i64> {
        self.cells[i].map(|c| c.version)
    }

    /// The value of the `i`th asked-for column's newest cell, borrowed; `None` where it has none.
    pub fn value(&self, i: usize) -> Result<Option<ValueRef<'a>>> {
        if let Some(Some(v)) = self.outside.get(i) {
            return Ok(Some(match v {
                Value::String(s) => ValueRef::String(s),
                Value::Binary(b) => ValueRef::Binary(b),
                _ => unreachable!("only strings and binaries are out of line"),
            }));
        }
        self.cells[i].map(|c| value_at(self.raw, c)).transpose()
    }
}

/// What a read of a secondary index covers: entries whose first columns equal `eq`, and whose next column
/// lies between `lower` and `upper` (value, inclusive) when either is given. A range covers values only:
/// NULLs, which sort after them, never lie in one. Read from the last entry back when `backward`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexRange {
    pub eq: Vec<Option<Value>>,
    pub lower: Option<(Value, bool)>,
    pub upper: Option<(Value, bool)>,
    pub backward: bool,
}

/// A page of row keys read from a secondary index, and the entry to resume after (`None`: the last page).
pub type IndexPage = (Vec<Vec<PkValue>>, Option<Vec<u8>>);

#[derive(Debug, Clone, PartialEq)]
pub struct RangeResult {
    pub rows: Vec<Row>,
    /// Where to resume (as an inclusive start) when a limit or the budget cut the read short.
    pub next_start: Option<Vec<PkValue>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RowExistence {
    #[default]
    Ignore,
    ExpectExist,
    ExpectNotExist,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A condition on a row's columns, checked before a write.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnCondition {
    Single {
        column: String,
        op: CompareOp,
        value: Value,
        /// Result when the column has no visible value.
        pass_if_missing: bool,
        /// Compare only the newest version; otherwise any version passing is enough.
        latest_version_only: bool,
    },
    And(Vec<ColumnCondition>),
    Or(Vec<ColumnCondition>),
    Not(Box<ColumnCondition>),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Condition {
    pub row: RowExistence,
    pub column: Option<ColumnCondition>,
}

impl Condition {
    pub fn ignore() -> Self {
        Condition::default()
    }
    pub fn expect_exist() -> Self {
        Condition { row: RowExistence::ExpectExist, column: None }
    }
    pub fn expect_not_exist() -> Self {
        Condition { row: RowExistence::ExpectNotExist, column: None }
    }
}

/// One cell of a `put_row`.
#[derive(Debug, Clone, PartialEq)]
pub struct CellWrite {
    pub column: String,
    pub value: Value,
    /// The version to write at; the server's clock when `None`.
    pub version: Option<i64>,
}

impl CellWrite {
    pub fn new(column: impl Into<String>, value: Value) -> Self {
        CellWrite { column: column.into(), value, version: None }
    }
}

/// One column change of an `update_row`.
#[derive(Debug, Clone, PartialEq)]
pub enum UpdateOp {
    Put {
        value: Value,
        version: Option<i64>,
    },
    DeleteVersion(i64),
    DeleteAll,
    /// Tablestore's increment: adds to the newest integer value (a missing value counts as 0); writes a
    /// new version.
    Increment(i64),
    /// SQL's `c = c + k`: as `Increment`, except that a missing value stays missing (NULL + k is NULL).
    Add(i64),
}

/// One row write of a `batch_write`.
#[derive(Debug, Clone, PartialEq)]
pub enum RowWrite {
    Put { pk: Vec<Option<PkValue>>, cells: Vec<CellWrite>, condition: Condition },
    Update { pk: Vec<PkValue>, ops: Vec<(String, UpdateOp)>, condition: Condition },
    Delete { pk: Vec<PkValue>, condition: Condition },
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct WriteOutcome {
    /// The written row's primary key, with generated auto-increment values filled in.
    pub pk: Vec<PkValue>,
    /// Whether the row was visible before the write.
    pub existed: bool,
    /// New values of incremented columns.
    pub increments: Vec<(String, i64)>,
    /// The version an update gave the cells it wrote without one of their own (0 for other writes).
    pub version: i64,
}
