//! Sizes of key ranges: RocksDB's estimate of the bytes its table files take for each range.

use rocksdb::Range;
use tabula_kv::{Result, SizeStats};

use crate::RocksEngine;

/// Only what has been flushed counts (the C API this crate reaches gives no memtable share per range), so
/// a table's newest writes show once the memtable holding them is flushed, after 16 MiB of writes.
impl SizeStats for RocksEngine {
    fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        let ranges: Vec<Range> = ranges.iter().map(|&(start, end)| Range::new(start, end)).collect();
        Ok(self.kv.db.get_approximate_sizes_cf(self.kv.data_cf(), &ranges))
    }
}
