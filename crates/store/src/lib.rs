//! Tabula's storage engine: a partitioned wide-column store, modelled on Alibaba Tablestore, over any
//! ordered transactional key-value engine ([`tabula_kv::Engine`]: RocksDB in `tabula-kv-rocks`, or in memory).
//!
//! No SQL and no async here: the SQL layer (`tabula-query`) drives this crate through [`Access`].
//!
//! # The data model (Tablestore's)
//! A table has 1 to 4 primary-key columns (String, Integer or Binary); the first — or the first few, for a
//! spliced partition key — form the partition key. Attribute columns are not declared: any row may carry
//! any names, with String, Integer, Double, Boolean or Binary values. Every attribute cell keeps versions
//! (ms since the epoch, newest first). Table options `ttl`, `max_versions` and `max_version_offset` decide
//! which versions exist; reads apply them at once, compaction removes what they hide.
//!
//! # The life of a write
//! 1. [`Access::update_row`] on the [`Store`] finds the table and encodes the row's key ([`keys`]).
//! 2. It takes the key's lock stripe, so writers of one row in this process queue instead of conflicting.
//! 3. It opens an optimistic transaction of the key-value engine and reads the stored row with `get_for_update`.
//! 4. It applies the table's version rules to see what is visible ([`row::StoredRow::visible`]) and checks
//!    the write's condition against that: row existence, then the column condition.
//! 5. It applies the column operations to the stored row (puts at a version, deletes, increments),
//!    trims each column to `max_versions`, and writes the whole row back under the same key.
//! 6. It commits. A concurrent SQL transaction that committed a change to the row first makes the commit
//!    fail with `Busy`; the write is retried from step 3. The commit's durability follows [`Durability`].
//! 7. The partition holding the key adds the write's byte and row deltas to its statistics; the
//!    maintenance thread later splits or merges partitions from them.
//!
//! # The life of a read
//! A point get is one engine `get` of one key (RocksDB: bloom filters skip files without it), then step 4's
//! visibility rules, then the read's own column list, time range and version count. A range read walks an
//! iterator (one per hash bucket, merged) and stops at its limit or byte budget, returning where to resume.
//! A read of latest values only ([`Access::visit_range_latest`], what SQL scans use) finds in each row just the
//! newest visible cell of each column it names and lends the row, values still in the engine's buffer, to a
//! visitor (the wire encoder, in the end): no names, version lists, copies or allocations per row.
//! [`Access::get_range_latest`] copies the same rows into a flat page, for readers on other threads.

pub mod catalog;
pub mod clock;
mod codec;
mod engine;
pub mod error;
pub mod keys;
pub mod ops;
pub mod partition;
pub mod retry;
pub mod row;
mod runs;
pub mod value;

pub use catalog::{IndexDef, PkColumn, TableDef, TableOptions};
pub use clock::{Clock, ManualClock, SystemClock};
pub use engine::{
    Access, BuildPhase, BuildWatch, BulkError, BulkLoad, Convert, Ddl, Durability, ReadView, RebuildError, Store, StoreConfig, Txn,
};
pub use error::{Result, StoreError};
pub use ops::*;
pub use partition::PartitionInfo;
pub use row::Cell;
pub use value::{PkBound, PkType, PkValue, TimeRange, Value, ValueRef};
