//! The read half of [`Access`]: one implementation for every source of reads (the store, a transaction, a
//! read view), each naming where it reads in [`ReadSource`].

use std::sync::Arc;

use tabula_kv::Read;

use super::{Inner, ReadView, Store, Table, Txn};
use crate::error::Result;

/// The read half of [`Access`], the same for every source of reads: each type names its source in
/// `ReadSource`.
macro_rules! access_reads {
    () => {
        fn get_row(&self, table: &str, pk: &[PkValue], read: &ReadSpec) -> Result<Option<Row>> {
            let (inner, src) = self.read_source();
            inner.get_row(src, &*self.source_table(table)?, pk, read)
        }
        fn batch_get(&self, table: &str, pks: &[Vec<PkValue>], read: &ReadSpec) -> Result<Vec<Option<Row>>> {
            let (inner, src) = self.read_source();
            inner.batch_get(src, &*self.source_table(table)?, pks, read)
        }
        fn get_range(&self, table: &str, req: &RangeRequest) -> Result<RangeResult> {
            let (inner, src) = self.read_source();
            inner.get_range(src, &*self.source_table(table)?, req)
        }
        fn get_range_latest(&self, table: &str, req: &RangeRequest) -> Result<LatestRows> {
            let (inner, src) = self.read_source();
            inner.get_range_latest(src, &*self.source_table(table)?, req)
        }
        fn visit_range_latest(
            &self,
            table: &str,
            req: &RangeRequest,
            visit: &mut dyn FnMut(&LatestRow<'_>) -> bool,
        ) -> Result<Option<Vec<PkValue>>> {
            let (inner, src) = self.read_source();
            inner.visit_range_latest(src, &*self.source_table(table)?, req, visit)
        }
        fn index_pks(&self, table: &str, index: &str, range: &IndexRange, after: Option<&[u8]>, limit: usize) -> Result<IndexPage> {
            let (inner, src) = self.read_source();
            inner.index_pks(src, &*self.source_table(table)?, index, range, after, limit)
        }
        fn index_latest(
            &self,
            table: &str,
            index: &str,
            range: &IndexRange,
            after: Option<&[u8]>,
            limit: usize,
            read: &ReadSpec,
        ) -> Result<(LatestRows, Option<Vec<u8>>)> {
            let t = self.source_table(table)?;
            self.read_at_one_point(|inner, src| {
                let (pks, next) = inner.index_pks(src, &t, index, range, after, limit)?;
                Ok((inner.batch_get_latest(src, &t, pks, read)?, next))
            })
        }
        fn index_rows(
            &self,
            table: &str,
            index: &str,
            range: &IndexRange,
            after: Option<&[u8]>,
            limit: usize,
        ) -> Result<(Vec<Row>, Option<Vec<u8>>)> {
            let (inner, src) = self.read_source();
            inner.index_rows(src, &*self.source_table(table)?, index, range, after, limit)
        }
    };
}

/// Where an [`Access`] implementation reads from.
pub(super) trait ReadSource {
    fn read_source(&self) -> (&Inner, &dyn Read);

    /// Runs `f` over a source whose reads all see one point in time: a transaction and a read view are
    /// one already; the store's latest commit is pinned as a snapshot first.
    fn read_at_one_point<R>(&self, f: impl FnOnce(&Inner, &dyn Read) -> Result<R>) -> Result<R> {
        let (inner, src) = self.read_source();
        f(inner, src)
    }

    /// The table a read names.
    fn source_table(&self, name: &str) -> Result<Arc<Table>> {
        self.read_source().0.usable_table(name)
    }
}

impl ReadSource for Store {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, self.inner.reader())
    }

    fn read_at_one_point<R>(&self, f: impl FnOnce(&Inner, &dyn Read) -> Result<R>) -> Result<R> {
        let snap = self.inner.kv.snapshot()?;
        f(&self.inner, &*snap)
    }
}

impl ReadSource for Txn {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, self.kv())
    }

    fn source_table(&self, name: &str) -> Result<Arc<Table>> {
        self.table(name)
    }
}

impl ReadSource for ReadView {
    fn read_source(&self) -> (&Inner, &dyn Read) {
        (&self.inner, &*self.snap)
    }
}
