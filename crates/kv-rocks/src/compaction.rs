//! The compaction hook: a RocksDB compaction filter on the data column family that asks the factory the
//! store has set ([`CompactionHook::set_filter`]) what to do with each value.

use std::sync::Arc;

use parking_lot::RwLock;
use rocksdb::CompactionDecision;
use tabula_kv::{CompactionFilter, CompactionFilterFactory, CompactionHook, Decision};

use crate::RocksEngine;

/// The factory the store set, if it has. The database is opened before the store exists (and may compact
/// at once), so the filter is installed at open and looks its factory up at each compaction's start.
#[derive(Default)]
pub(crate) struct FilterSlot(RwLock<Option<Arc<dyn CompactionFilterFactory>>>);

impl CompactionHook for RocksEngine {
    fn set_filter(&self, factory: Arc<dyn CompactionFilterFactory>) {
        *self.kv.filter.0.write() = Some(factory);
    }
}

pub(crate) struct Factory(pub Arc<FilterSlot>);

pub(crate) struct Filtering {
    /// `None` before the store has set a factory: everything is kept.
    filter: Option<CompactionFilter>,
    /// The last changed value, which RocksDB reads after `filter` returns.
    buf: Vec<u8>,
}

impl rocksdb::compaction_filter::CompactionFilter for Filtering {
    fn filter(&mut self, _level: u32, key: &[u8], value: &[u8]) -> CompactionDecision {
        let Some(filter) = &mut self.filter else { return CompactionDecision::Keep };
        match filter(key, value) {
            Decision::Keep => CompactionDecision::Keep,
            Decision::Remove => CompactionDecision::Remove,
            Decision::Change(v) => {
                self.buf = v;
                // SAFETY: RocksDB copies the new value before calling the filter again, and `buf` lives
                // until then; the 'static is only what the binding's signature asks for.
                CompactionDecision::Change(unsafe { std::mem::transmute::<&[u8], &'static [u8]>(self.buf.as_slice()) })
            }
        }
    }
    fn name(&self) -> &std::ffi::CStr {
        c"tabula-versions"
    }
}

impl rocksdb::compaction_filter_factory::CompactionFilterFactory for Factory {
    type Filter = Filtering;
    fn create(&mut self, _: rocksdb::compaction_filter_factory::CompactionFilterContext) -> Filtering {
        Filtering { filter: self.0 .0.read().as_ref().map(|f| f.create()), buf: Vec::new() }
    }
    fn name(&self) -> &std::ffi::CStr {
        c"tabula-versions-factory"
    }
}
