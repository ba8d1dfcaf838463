//! Bulk loads as RocksDB table files, written beside the database and moved in.

use std::sync::Arc;

use rocksdb::Options;
use tabula_kv::{Ingest, KvError, Result, SortedFile};

use crate::{err, RocksEngine};

impl Ingest for RocksEngine {
    /// A table file of sorted, distinct data keys, to be moved into the database by [`Ingest::ingest`]:
    /// atomic, durable, and past the memtable and the log (the way RocksDB takes bulk loads).
    fn file(&self) -> Result<Box<dyn SortedFile>> {
        let opts = self.kv.sst_opts.clone();
        // SAFETY: the writer refers to the options it was made from; `SstFile` holds them (`_opts`, dropped
        // after `writer`) for as long as the writer lives.
        let writer = rocksdb::SstFileWriter::create(unsafe { &*Arc::as_ptr(&opts) });
        let path = self.kv.temp_path("sst");
        // SAFETY: `open` asks for its receiver for the options' lifetime, but keeps no reference to it.
        unsafe { &*(&writer as *const rocksdb::SstFileWriter<'static>) }.open(&path).map_err(err)?;
        Ok(Box::new(SstFile { writer, _opts: opts, path, rows: 0, finished: false }))
    }

    /// Moves finished table files into the database, all or none. Files may overlap, but must not share a key.
    ///
    /// Every column family is flushed first, because logs are recycled. An ingestion takes a sequence number
    /// that no log record carries. Recovery replays a recycled log up to the first record left over from its
    /// previous use. It goes on into the next log only when that log's first sequence number follows the last
    /// one replayed: a gap is taken for lost records, and the logs after it are dropped. An ingestion that comes
    /// after a switch of logs, before the new log's first write and before the old log's flush has ended,
    /// makes exactly that gap. A crash then would lose every acknowledged commit in the new log. RocksDB's
    /// crash test turned recycling off on finding this (RocksDB PR 12918). After a flush that waited, no older
    /// log is live: the current one is the first that recovery reads, and a gap inside a log is harmless. A
    /// switch between the flush and the ingestion would need a memtable to fill in that moment. The flush
    /// writes what the memtables hold, once per ingested load (only loads over `bulk_ingest_bytes` ingest);
    /// durable commits keep their recycled logs. The store's `crash.rs` kills writers that mix durable commits,
    /// ingestions and switches of logs; the race is too narrow for it to have shown a loss without the flush.
    fn ingest(&self, files: Vec<Box<dyn SortedFile>>) -> Result<()> {
        let mut files: Vec<Box<SstFile>> = files
            .into_iter()
            .map(|f| f.into_any().downcast::<SstFile>().map_err(|_| KvError::Storage("a sorted file of another engine".into())))
            .collect::<Result<_>>()?;
        for f in &mut files {
            f.finish()?;
        }
        self.kv.flush()?;
        let mut o = rocksdb::IngestExternalFileOptions::default();
        o.set_move_files(true);
        self.kv.db.ingest_external_file_opts(&o, files.iter().map(|f| &f.path).collect()).map_err(err)
    }
}

/// A table file being written. It owns what it needs, so a bulk load can keep one open across calls; dropped
/// without being ingested, it is deleted.
struct SstFile {
    writer: rocksdb::SstFileWriter<'static>,
    _opts: Arc<Options>,
    path: std::path::PathBuf,
    rows: u64,
    finished: bool,
}

impl SortedFile for SstFile {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.rows += 1;
        self.writer.put(key, value).map_err(err)
    }

    fn rows(&self) -> u64 {
        self.rows
    }

    fn finish(&mut self) -> Result<()> {
        if !self.finished {
            self.writer.finish().map_err(err)?;
            self.finished = true;
        }
        Ok(())
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}

impl Drop for SstFile {
    fn drop(&mut self) {
        // Moved into the database by a successful ingest; otherwise a leftover.
        let _ = std::fs::remove_file(&self.path);
    }
}
