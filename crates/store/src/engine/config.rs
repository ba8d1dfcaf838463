//! How a store is opened: durability, clock, and the thresholds of partition maintenance and bulk loads.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Clock, SystemClock};

/// How commits reach the disk. Either way a committed write survives the process being killed; `Sync`
/// also survives the machine losing power at once, `Group` within `interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Durability {
    /// fsync the write-ahead log before every commit returns (concurrent commits share one fsync).
    Sync,
    /// Commits return once in the OS; a background thread fsyncs the log every `interval`.
    Group { interval: Duration },
}

#[derive(Clone)]
pub struct StoreConfig {
    pub durability: Durability,
    pub clock: Arc<dyn Clock>,
    /// A partition larger than this splits.
    pub split_bytes: i64,
    /// A partition taking more writes per second than this splits.
    pub split_write_rate: f64,
    /// Two neighbours smaller than this together, and idle, merge.
    pub merge_bytes: i64,
    /// Operations per second below which a partition counts as idle.
    pub idle_rate: f64,
    /// How often the maintenance thread looks at partitions (`None`: only when asked).
    pub maintenance_interval: Option<Duration>,
    /// Default byte budget of one `get_range` call.
    pub scan_budget_bytes: usize,
    /// Bytes of rows a bulk load holds in memory before it spills them, sorted, to a file.
    pub bulk_spill_bytes: usize,
    /// Bulk loads of at least this many bytes are written as table files and ingested, not as a write batch.
    pub bulk_ingest_bytes: usize,
    /// Rows of a streamed bulk load per table file: a file's filter holds a hash of each of its keys (8 bytes)
    /// until the file is finished, so one file for a load of 100M rows would hold 800 MB of them.
    pub bulk_file_rows: u64,
    /// A string or binary value longer than this, written by a transaction, is stored out of line under a
    /// key of its own (see `row`): a row's other writes then neither read nor rewrite it. 2 KiB, as
    /// PostgreSQL's TOAST threshold: a row of small cells stays one lookup.
    pub inline_value_bytes: usize,
    /// How often maintenance looks for what compactions left behind: values out of line without a row, index
    /// entries of expired values (tables with a ttl, or versions hidden by changed options, only).
    pub sweep_interval: Duration,
    /// The most a transaction limited by `Txn::limit_size` may write, in bytes of keys and values: a
    /// transaction holds its writes in memory until it commits. 64 MiB: TiKV's own limit on one
    /// transaction is 100 MB, and the engine's index of the writes about doubles what they take.
    pub max_transaction_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            durability: Durability::Sync,
            clock: Arc::new(SystemClock),
            split_bytes: 256 << 20,
            split_write_rate: 20_000.0,
            merge_bytes: 32 << 20,
            idle_rate: 10.0,
            maintenance_interval: Some(Duration::from_secs(1)),
            scan_budget_bytes: 4 << 20,
            bulk_spill_bytes: 64 << 20,
            bulk_ingest_bytes: 16 << 20,
            bulk_file_rows: 4 << 20,
            inline_value_bytes: 2048,
            sweep_interval: Duration::from_secs(600),
            max_transaction_bytes: 64 << 20,
        }
    }
}
