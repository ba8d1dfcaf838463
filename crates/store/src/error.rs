//! The engine's errors. Each variant knows the PostgreSQL SQLSTATE the SQL layer reports for it, so a
//! mistake made through the engine API and one made through SQL read the same.

use thiserror::Error;

use crate::value::Value;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum StoreError {
    #[error("table \"{0}\" does not exist")]
    UnknownTable(String),
    #[error("table \"{0}\" already exists")]
    TableExists(String),
    #[error("invalid name \"{name}\": {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("invalid table definition: {0}")]
    InvalidTableDefinition(String),
    #[error("invalid option: {0}")]
    InvalidOption(String),
    /// An index the table cannot have as defined (a local index not led by the partition key).
    #[error("{0}")]
    InvalidIndexDefinition(String),
    #[error("primary key column \"{0}\" is missing")]
    MissingPrimaryKey(String),
    #[error("primary key column \"{column}\" expects {expected}, got {got}")]
    PrimaryKeyType { column: String, expected: &'static str, got: &'static str },
    #[error("wrong number of primary key columns: expected {expected}, got {got}")]
    PrimaryKeyArity { expected: usize, got: usize },
    #[error("value of primary key column \"{column}\" is {len} bytes, the limit is 1024")]
    PrimaryKeyTooLong { column: String, len: usize },
    #[error("value of column \"{column}\" is {len} bytes, the limit is 2097152")]
    ValueTooLong { column: String, len: usize },
    #[error("version {version} of column \"{column}\" is outside the allowed window [{start}, {end})")]
    VersionOutOfWindow { column: String, version: i64, start: i64, end: i64 },
    #[error("cannot increment column \"{column}\": its value is {got}, not an integer")]
    IncrementNonInteger { column: String, got: &'static str },
    #[error("integer out of range: incrementing column \"{0}\" overflows")]
    IncrementOverflow(String),
    #[error("row condition failed: {0}")]
    ConditionFailed(String),
    #[error("duplicate key: the row already exists")]
    RowExists,
    #[error("the row does not exist")]
    RowNotFound,
    #[error("could not serialize access due to a concurrent update")]
    Conflict,
    #[error("invalid range: {0}")]
    InvalidRange(String),
    #[error("not supported: {0}")]
    NotSupported(String),
    #[error("storage error: {0}")]
    Storage(String),
    /// The disk holding the data directory is full (PostgreSQL's 53100 disk_full).
    #[error("could not write to the data directory: {0}")]
    DiskFull(String),
    /// A write to a table that ALTER TABLE is rebuilding (`Store::rebuild`; 55006).
    #[error("{0} is being rebuilt by ALTER TABLE: write again once it is done")]
    TableBeingRebuilt(String),
    /// DDL on a table another transaction has changed and not ended (PostgreSQL would wait on its lock).
    #[error("could not obtain lock on relation \"{0}\": another transaction has changed it and has not ended")]
    TableLocked(String),
    /// A write would give two rows the same values in a unique index's columns (23505): the table, the
    /// index, its columns and the values.
    #[error("duplicate key value violates unique constraint \"{index}\"")]
    UniqueViolation { table: String, index: String, columns: Vec<String>, values: Vec<Option<Value>> },
    #[error("index \"{0}\" does not exist")]
    UnknownIndex(String),
    /// A long operation (an index build) stopped because its caller asked (cancel, statement_timeout).
    #[error("canceling statement")]
    Interrupted,
    #[error("relation \"{0}\" already exists")]
    IndexExists(String),
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// A transaction that would hold more than its limit of written bytes (`Txn::limit_size`): its writes
    /// are held in memory until it commits.
    #[error("transaction is too large: it would write more than {limit} bytes")]
    TransactionTooLarge { limit: u64 },
}

impl StoreError {
    /// The PostgreSQL SQLSTATE of this error.
    pub fn sqlstate(&self) -> &'static str {
        use StoreError::*;
        match self {
            UnknownTable(_) => "42P01",
            TableExists(_) => "42P07",
            InvalidName { .. } => "42602",
            InvalidTableDefinition(_) => "42P16",
            InvalidOption(_) => "22023",
            InvalidIndexDefinition(_) => "42P17",
            MissingPrimaryKey(_) => "23502",
            PrimaryKeyType { .. } | PrimaryKeyArity { .. } => "42804",
            PrimaryKeyTooLong { .. } | ValueTooLong { .. } => "22001",
            VersionOutOfWindow { .. } => "22008",
            IncrementNonInteger { .. } => "42804",
            IncrementOverflow(_) => "22003",
            ConditionFailed(_) => "P0001",
            RowExists => "23505",
            RowNotFound => "P0002",
            Conflict => "40001",
            InvalidRange(_) => "22023",
            NotSupported(_) => "0A000",
            TableBeingRebuilt(_) => "55006",
            TableLocked(_) => "55P03",
            UnknownIndex(_) => "42704",
            Interrupted => "57014",
            UniqueViolation { .. } => "23505",
            IndexExists(_) => "42P07",
            Storage(_) => "58030",
            DiskFull(_) => "53100",
            Corrupt(_) => "XX001",
            TransactionTooLarge { .. } => "54000",
        }
    }

    /// Whether running the same operation again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Conflict)
    }
}

impl StoreError {
    /// An error of the disk or the files under the store: disk full (ENOSPC, as RocksDB and the OS word
    /// it) is told apart, for its SQLSTATE.
    pub fn storage(message: String) -> StoreError {
        tabula_kv::KvError::storage(message).into()
    }
}

impl From<tabula_kv::KvError> for StoreError {
    fn from(e: tabula_kv::KvError) -> Self {
        match e {
            tabula_kv::KvError::Conflict => StoreError::Conflict,
            tabula_kv::KvError::DiskFull(m) => StoreError::DiskFull(m),
            tabula_kv::KvError::Storage(m) => StoreError::Storage(m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_disk_is_53100_and_other_storage_errors_58030() {
        // RocksDB's wording, as a full tmpfs gave it.
        let full = "IO error: No space left on device: While appending to file: /d/000004.log: No space left on device";
        assert_eq!(StoreError::storage(full.into()).sqlstate(), "53100");
        assert_eq!(StoreError::storage("IO error: Permission denied".into()).sqlstate(), "58030");
        let io = std::io::Error::from_raw_os_error(28); // ENOSPC
        assert_eq!(StoreError::storage(format!("bulk load spill file: {io}")).sqlstate(), "53100");
    }
}
