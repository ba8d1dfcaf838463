//! Partitions: contiguous key ranges of one key space (a table's rows, or a global index's entries), with
//! the statistics that drive splits and merges.
//!
//! All of a table's rows live in one key space of the engine, and each global index's entries in one of
//! their own, so a split or a merge only rewrites this metadata: no row moves, and reads and writes carry on
//! through it. Statistics are approximate: writes add their byte and row deltas to the partition that held
//! the key when they committed.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::codec::{Reader, Writer};
use crate::error::Result;

pub struct Partition {
    pub id: u64,
    /// Inclusive start key (full data key, table prefix included).
    pub start: Vec<u8>,
    /// Exclusive end key.
    pub end: Vec<u8>,
    pub bytes: AtomicI64,
    pub rows: AtomicI64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
    /// Operations per second, smoothed, updated by the maintenance thread (bits of an f64).
    read_rate: AtomicU64,
    write_rate: AtomicU64,
    last_reads: AtomicU64,
    last_writes: AtomicU64,
    /// Set when a split found one partition-key value filling the whole partition (the smallest unit: it is
    /// never split inside): that value's key prefix and the write count then. The next rounds do not scan the
    /// partition again while no write came, and while its first and last rows still share that value.
    pub single_value: Mutex<Option<(Vec<u8>, u64)>>,
    /// Full scans a split made of this partition (each reads all its bytes).
    pub split_scans: AtomicU64,
}

/// A copy of one partition's state for callers outside the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionInfo {
    pub id: u64,
    pub start: Vec<u8>,
    pub end: Vec<u8>,
    pub approx_bytes: i64,
    pub approx_rows: i64,
    /// The bytes the engine's files take for the partition's rows, when the engine can tell
    /// (`tabula_kv::SizeStats`): compressed, and without what is not flushed yet. Filled in by
    /// `Store::partitions_with_stored_bytes` only.
    pub stored_bytes: Option<i64>,
    pub reads: u64,
    pub writes: u64,
    pub read_rate: f64,
    pub write_rate: f64,
    /// The whole partition is one partition-key value, too big to split (see `Partition::single_value`).
    pub single_value: bool,
    pub split_scans: u64,
}

impl Partition {
    pub fn new(id: u64, start: Vec<u8>, end: Vec<u8>, bytes: i64, rows: i64) -> Self {
        Partition {
            id,
            start,
            end,
            bytes: AtomicI64::new(bytes),
            rows: AtomicI64::new(rows),
            reads: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            read_rate: AtomicU64::new(0f64.to_bits()),
            write_rate: AtomicU64::new(0f64.to_bits()),
            last_reads: AtomicU64::new(0),
            last_writes: AtomicU64::new(0),
            single_value: Mutex::new(None),
            split_scans: AtomicU64::new(0),
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && key < self.end.as_slice()
    }

    pub fn info(&self) -> PartitionInfo {
        PartitionInfo {
            id: self.id,
            start: self.start.clone(),
            end: self.end.clone(),
            approx_bytes: self.bytes.load(Ordering::Relaxed).max(0),
            approx_rows: self.rows.load(Ordering::Relaxed).max(0),
            stored_bytes: None,
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            read_rate: self.read_rate(),
            write_rate: self.write_rate(),
            single_value: self.single_value.lock().is_some(),
            split_scans: self.split_scans.load(Ordering::Relaxed),
        }
    }

    pub fn read_rate(&self) -> f64 {
        f64::from_bits(self.read_rate.load(Ordering::Relaxed))
    }

    pub fn write_rate(&self) -> f64 {
        f64::from_bits(self.write_rate.load(Ordering::Relaxed))
    }

    /// Folds the operations since the last tick into the smoothed rates.
    pub fn tick(&self, elapsed_secs: f64) {
        let smooth = |counter: &AtomicU64, last: &AtomicU64, rate: &AtomicU64| {
            let now = counter.load(Ordering::Relaxed);
            let before = last.swap(now, Ordering::Relaxed);
            let instant = (now.saturating_sub(before)) as f64 / elapsed_secs.max(1e-3);
            let old = f64::from_bits(rate.load(Ordering::Relaxed));
            rate.store((old * 0.5 + instant * 0.5).to_bits(), Ordering::Relaxed);
        };
        smooth(&self.reads, &self.last_reads, &self.read_rate);
        smooth(&self.writes, &self.last_writes, &self.write_rate);
    }

    pub fn add(&self, bytes: i64, rows: i64, writes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.rows.fetch_add(rows, Ordering::Relaxed);
        self.writes.fetch_add(writes, Ordering::Relaxed);
    }
}

/// The partitions of one key space, in key order and without gaps, and the record of them maintenance
/// last wrote to the catalog (written again only when it changed: an idle server writes nothing).
pub(crate) struct Partitions {
    pub list: RwLock<Vec<Arc<Partition>>>,
    pub next_id: AtomicU64,
    pub persisted: Mutex<Vec<u8>>,
}

impl Partitions {
    pub fn new(next_id: u64, parts: Vec<Partition>) -> Self {
        Partitions {
            list: RwLock::new(parts.into_iter().map(Arc::new).collect()),
            next_id: AtomicU64::new(next_id),
            persisted: Mutex::new(Vec::new()),
        }
    }

    /// One empty partition over the whole key space `[start, end)`.
    pub fn whole(start: Vec<u8>, end: Vec<u8>) -> Self {
        Partitions::new(2, vec![Partition::new(1, start, end, 0, 0)])
    }

    /// The partitions a catalog record holds.
    pub fn decode(record: &[u8]) -> Result<Self> {
        let (next_id, parts) = decode_all(record)?;
        Ok(Partitions::new(next_id, parts))
    }

    /// The catalog record of the partitions now.
    pub fn record(&self) -> Vec<u8> {
        encode_all(self.next_id.load(Ordering::SeqCst), &self.list.read())
    }

    /// The partition holding `key`.
    pub fn locate(&self, key: &[u8]) -> Arc<Partition> {
        locate(&self.list.read(), key).clone()
    }

    pub fn infos(&self) -> Vec<PartitionInfo> {
        self.list.read().iter().map(|p| p.info()).collect()
    }

    /// Starts again with one empty partition (a new id) over `[start, end)`, and returns its record.
    pub fn reset(&self, start: Vec<u8>, end: Vec<u8>) -> Vec<u8> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        *self.list.write() = vec![Arc::new(Partition::new(id, start, end, 0, 0))];
        self.record()
    }
}

/// Finds the partition holding `key` in a sorted, gap-free list.
pub fn locate<'a, P: std::ops::Deref<Target = Partition>>(parts: &'a [P], key: &[u8]) -> &'a P {
    let i = parts.partition_point(|p| p.start.as_slice() <= key);
    &parts[i.saturating_sub(1)]
}

pub fn encode_all<P: std::ops::Deref<Target = Partition>>(next_id: u64, parts: &[P]) -> Vec<u8> {
    let mut w = Writer::default();
    w.u64(next_id);
    w.u32(parts.len() as u32);
    for p in parts {
        w.u64(p.id);
        w.bytes(&p.start);
        w.bytes(&p.end);
        w.i64(p.bytes.load(Ordering::Relaxed));
        w.i64(p.rows.load(Ordering::Relaxed));
    }
    w.buf
}

pub fn decode_all(buf: &[u8]) -> Result<(u64, Vec<Partition>)> {
    let mut r = Reader::new(buf);
    let next_id = r.u64()?;
    let n = r.u32()?;
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let id = r.u64()?;
        let start = r.bytes()?.to_vec();
        let end = r.bytes()?.to_vec();
        let bytes = r.i64()?;
        let rows = r.i64()?;
        out.push(Partition::new(id, start, end, bytes, rows));
    }
    Ok((next_id, out))
}
