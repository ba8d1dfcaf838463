//! TiKV behind Tabula's key-value traits: the engine for a database that has outgrown one machine.
//!
//! TiKV is a distributed, transactional key-value store: its keys are range-partitioned into regions that
//! split and merge on their own, each region is replicated by Raft, and transactions are snapshot-isolated
//! (Percolator: a start timestamp from PD, prewrite, commit). Tabula builds none of that itself; this crate
//! maps the traits of `tabula-kv` onto the official client, `tikv-client`:
//!
//! - **Keys.** One TiKV cluster may hold several Tabula databases, each under a keyspace prefix of its own
//!   (`tikv://pd:2379/prefix`). TiKV's transactional API has no column families, so the two spaces are one
//!   more byte:
//!   ```text
//!   +----------------+------+-------+----------------+
//!   | prefix (bytes) | 0x00 | space | the store's key |    space: b'd' data, b'm' catalog
//!   +----------------+------+-------+----------------+
//!   ```
//!   A prefix may not hold a 0x00 byte, so no database's keys fall inside another's.
//! - **Transactions** are optimistic (the client's default is pessimistic), their writes kept here until
//!   commit, so that savepoints (which TiKV does not have) are a matter of this buffer ([`txn`]).
//! - **Reads** go through TiKV snapshots at a timestamp; scans page through the range, because TiKV's scans
//!   take a limit ([`cursor`]).
//! - **The runtime.** The client is async and needs a multi-threaded tokio runtime; the traits are
//!   synchronous and are called from the server's own runtimes. The engine keeps a runtime of its own and
//!   each call waits for a task on it ([`Shared::run`]): blocking inside another runtime would panic.
//! - **No capabilities.** TiKV runs no Tabula compaction filter and ingests no Tabula files: hidden versions
//!   are never returned and are removed by the store's own sweeps, and a bulk load is a transaction.
//! - **One frontend** per keyspace for now: the store keeps its catalog in memory, so a second server over
//!   the same keyspace would not see the first one's DDL. The first server holds a lease ([`lease`]); a
//!   second is refused with a clear error until several frontends are built.

mod cursor;
mod lease;
mod txn;

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tabula_kv::{Batch, Cursor, Engine, KvError, Read, Result, Snapshot, Space, Transaction};
use tikv_client::{CheckLevel, Timestamp, TransactionClient, TransactionOptions};

use cursor::PagedCursor;
use txn::TikvTxn;

/// Where a TiKV store is: its PD endpoints and the keyspace prefix of this database.
#[derive(Debug, Clone, PartialEq)]
pub struct TikvAddress {
    pub pd: Vec<String>,
    pub prefix: Vec<u8>,
}

impl TikvAddress {
    /// Parses `tikv://host:port[,host:port...][/prefix]`. The prefix defaults to `tabula`.
    pub fn parse(url: &str) -> std::result::Result<TikvAddress, String> {
        let rest =
            url.strip_prefix("tikv://").ok_or_else(|| format!("a TiKV store is named tikv://pd-host:port[,...][/prefix], not {url:?}"))?;
        let (hosts, prefix) = rest.split_once('/').unwrap_or((rest, "tabula"));
        let pd: Vec<String> = hosts.split(',').map(str::trim).filter(|h| !h.is_empty()).map(String::from).collect();
        if pd.is_empty() {
            return Err(format!("{url:?} names no PD endpoint"));
        }
        if prefix.is_empty() || prefix.contains('\0') {
            return Err(format!("the keyspace prefix of {url:?} must be non-empty and hold no NUL byte"));
        }
        Ok(TikvAddress { pd, prefix: prefix.as_bytes().to_vec() })
    }
}

/// A Tabula database kept in a TiKV cluster.
pub struct TikvEngine {
    shared: Arc<Shared>,
    _lease: lease::Lease,
}

pub(crate) struct Shared {
    client: TransactionClient,
    runtime: OwnRuntime,
    /// `prefix ++ 0x00`: every key of this database starts with it.
    root: Vec<u8>,
    temp_dir: PathBuf,
    temp_seq: AtomicU64,
    /// Set when this server's lease on the keyspace was lost: no commit may land then.
    lost: Arc<AtomicBool>,
}

/// Rows per page of a scan at first; each further page of the same cursor doubles, up to [`MAX_PAGE`]. A
/// cursor the store stops after a row or two (a LIMIT, a point range) fetches little.
pub(crate) const FIRST_PAGE: u32 = 64;
pub(crate) const MAX_PAGE: u32 = 4096;

/// How long opening waits for PD to answer.
const CONNECT: std::time::Duration = std::time::Duration::from_secs(20);

pub(crate) fn options() -> TransactionOptions {
    // Optimistic, as the traits promise (a commit fails on a conflict); dropped unfinished, a transaction
    // is simply forgotten: its writes are still in this process and TiKV holds nothing of it.
    TransactionOptions::new_optimistic().drop_check(CheckLevel::None)
}

impl Shared {
    /// Runs `f` on the engine's runtime and waits for it, from any thread, inside another runtime or not.
    /// `f` must not hold the `Shared` itself: dropped on the runtime's thread, the last one would stop the
    /// runtime from inside.
    pub(crate) fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.0.as_ref().expect("the engine's runtime lives as long as the engine").spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().expect("a task of the TiKV engine's runtime panicked")
    }

    /// The TiKV key of `key` in `space`.
    pub(crate) fn key(&self, space: Space, key: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.root.len() + 1 + key.len());
        k.extend_from_slice(&self.root);
        k.push(space_byte(space));
        k.extend_from_slice(key);
        k
    }

    /// The store's key of a TiKV key of this database.
    pub(crate) fn strip(&self, key: Vec<u8>) -> Vec<u8> {
        key[self.root.len() + 1..].to_vec()
    }

    /// The TiKV range of `[lower, upper)` in `space`; an empty `upper` means the end of the space.
    pub(crate) fn range(&self, space: Space, lower: &[u8], upper: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let end = if upper.is_empty() {
            let mut e = self.root.clone();
            e.push(space_byte(space) + 1);
            e
        } else {
            self.key(space, upper)
        };
        (self.key(space, lower), end)
    }

    /// The current timestamp: a read at it sees every commit acknowledged before.
    pub(crate) fn now(self: &Arc<Self>) -> Result<Timestamp> {
        let client = self.client.clone();
        self.run(async move { client.current_timestamp().await.map_err(error) })
    }
}

fn space_byte(space: Space) -> u8 {
    match space {
        Space::Data => b'd',
        Space::Meta => b'm',
    }
}

/// TiKV's error as the store needs it: a write conflict (or a lock left by a transaction still under way
/// that could not be resolved in time) is a retryable conflict; the rest is a storage error.
pub(crate) fn error(e: tikv_client::Error) -> KvError {
    if is_conflict(&e) {
        KvError::Conflict
    } else {
        KvError::Storage(format!("TiKV: {e}"))
    }
}

fn is_conflict(e: &tikv_client::Error) -> bool {
    use tikv_client::Error as E;
    match e {
        E::KeyError(k) => k.conflict.is_some() || !k.retryable.is_empty() || k.locked.is_some(),
        E::ResolveLockError(_) => true,
        E::MultipleKeyErrors(es) | E::ExtractedErrors(es) => es.iter().any(is_conflict),
        _ => false,
    }
}

impl TikvEngine {
    /// Connects to the cluster at `address` and takes the keyspace's lease (see [`lease`]).
    pub fn open(address: &TikvAddress) -> Result<TikvEngine> {
        let runtime = OwnRuntime(Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("tabula-tikv")
                .enable_all()
                .build()
                .map_err(|e| KvError::Storage(format!("cannot start the TiKV client's runtime: {e}")))?,
        ));
        // Spawned and waited for, not `block_on`: the caller may be inside a runtime of its own.
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let pd = address.pd.clone();
        runtime.0.as_ref().expect("just built").spawn(async move {
            let _ = tx.send(tokio::time::timeout(CONNECT, TransactionClient::new(pd)).await);
        });
        let endpoints = address.pd.join(",");
        let client = match rx.recv() {
            Ok(Ok(Ok(client))) => client,
            Ok(Ok(Err(e))) => return Err(KvError::Storage(format!("cannot reach TiKV through PD at {endpoints}: {e}"))),
            _ => {
                return Err(KvError::Storage(format!("cannot reach TiKV through PD at {endpoints}: no answer in {} s", CONNECT.as_secs())))
            }
        };
        let mut root = address.prefix.clone();
        root.push(0);
        let temp_dir = std::env::temp_dir().join(format!("tabula-tikv-{}", std::process::id()));
        remove_leftovers(&temp_dir);
        std::fs::create_dir_all(&temp_dir).map_err(|e| KvError::storage(format!("cannot create {}: {e}", temp_dir.display())))?;
        let shared = Arc::new(Shared { client, runtime, root, temp_dir, temp_seq: AtomicU64::new(0), lost: Arc::default() });
        let lease = lease::Lease::take(&shared)?;
        Ok(TikvEngine { shared, _lease: lease })
    }

    fn latest(&self) -> Result<ReadAt> {
        Ok(ReadAt { shared: self.shared.clone(), ts: self.shared.now()? })
    }

    fn write_all(&self, puts: Vec<(Vec<u8>, Option<Vec<u8>>)>, delete_data: Vec<(Vec<u8>, Vec<u8>)>) -> Result<()> {
        lease::check(&self.shared)?;
        // A blind write conflicts only with a commit to the same key after its start: it is retried, as a
        // batch on RocksDB simply applies.
        for _ in 0..100 {
            let (puts, ranges, client) = (puts.clone(), delete_data.clone(), self.shared.client.clone());
            let done = self.shared.run(async move {
                let mut t = client.begin_with_options(options()).await?;
                for (lower, upper) in ranges {
                    delete_range(&mut t, lower, upper).await?;
                }
                for (k, v) in puts {
                    match v {
                        Some(v) => t.put(k, v).await?,
                        None => t.delete(k).await?,
                    }
                }
                t.commit().await.map(|_| ())
            });
            match done.map_err(error) {
                Err(KvError::Conflict) => continue,
                other => return other,
            }
        }
        Err(KvError::Storage("TiKV: a write kept conflicting with other commits 100 times".into()))
    }
}

/// Deletes every key of the TiKV range `[lower, upper)` in transaction `t`, a page of keys at a time.
async fn delete_range(t: &mut tikv_client::Transaction, lower: Vec<u8>, upper: Vec<u8>) -> tikv_client::Result<()> {
    let mut from = lower;
    loop {
        let keys: Vec<tikv_client::Key> = t.scan_keys(from.clone()..upper.clone(), MAX_PAGE).await?.collect();
        let full = keys.len() == MAX_PAGE as usize;
        let Some(last) = keys.last().cloned() else { return Ok(()) };
        for k in keys {
            t.delete(k).await?;
        }
        if !full {
            return Ok(());
        }
        from = Vec::from(last);
        from.push(0);
    }
}

/// Removes the spill directories of engines whose process is gone.
fn remove_leftovers(mine: &std::path::Path) {
    let Some(parent) = mine.parent() else { return };
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix("tabula-tikv-").and_then(|p| p.parse::<u32>().ok()) {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() || e.path() == mine {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.temp_dir);
    }
}

/// The engine's runtime, stopped without waiting when dropped: dropping a runtime inside another one (the
/// server's) panics otherwise. Every task that mattered has been waited for by then.
pub(crate) struct OwnRuntime(pub(crate) Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Reads at one timestamp, with a transaction's own writes laid over them when there are some.
#[derive(Clone)]
pub(crate) struct ReadAt {
    pub(crate) shared: Arc<Shared>,
    pub(crate) ts: Timestamp,
}

impl ReadAt {
    pub(crate) fn get(&self, space: Space, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let (client, ts, key) = (self.shared.client.clone(), self.ts.clone(), self.shared.key(space, key));
        self.shared.run(async move { client.snapshot(ts, options()).get(key).await.map_err(error) })
    }

    pub(crate) fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let full: Vec<Vec<u8>> = keys.iter().map(|k| self.shared.key(Space::Data, k)).collect();
        let (client, ts, wanted) = (self.shared.client.clone(), self.ts.clone(), full.clone());
        let found: Vec<(Vec<u8>, Vec<u8>)> = self.shared.run(async move {
            let pairs = client.snapshot(ts, options()).batch_get(wanted).await.map_err(error)?;
            Ok::<_, KvError>(pairs.map(|p| (Vec::from(p.key().clone()), p.into_value())).collect())
        })?;
        let found: std::collections::HashMap<Vec<u8>, Vec<u8>> = found.into_iter().collect();
        Ok(full.iter().map(|k| found.get(k).cloned()).collect())
    }

    /// Up to `limit` pairs of `[lower, upper)` (the store's keys, in `space`), from the lower end or, with
    /// `reverse`, from the upper one (then in descending order).
    pub(crate) fn page(&self, space: Space, lower: &[u8], upper: &[u8], limit: u32, reverse: bool) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let (lo, hi) = self.shared.range(space, lower, upper);
        if lo >= hi {
            return Ok(Vec::new());
        }
        let (client, ts) = (self.shared.client.clone(), self.ts.clone());
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = self.shared.run(async move {
            let mut snap = client.snapshot(ts, options());
            let pairs: Vec<tikv_client::KvPair> = if reverse {
                snap.scan_reverse(lo..hi, limit).await.map_err(error)?.collect()
            } else {
                snap.scan(lo..hi, limit).await.map_err(error)?.collect()
            };
            Ok::<_, KvError>(pairs.into_iter().map(|p| (Vec::from(p.key().clone()), p.into_value())).collect())
        })?;
        Ok(pairs.into_iter().map(|(k, v)| (self.shared.strip(k), v)).collect())
    }
}

impl Read for TikvEngine {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.latest()?.get(Space::Data, key)?.map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.latest()?.multi_get(keys)
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        match self.latest() {
            Ok(at) => Box::new(PagedCursor::new(at, lower, upper, Default::default())),
            Err(e) => Box::new(PagedCursor::failed(e)),
        }
    }
}

/// The committed data at one timestamp: TiKV keeps every version a reader may need (until its GC safe
/// point, which runs minutes behind by default).
struct TikvSnapshot(ReadAt);

impl Read for TikvSnapshot {
    fn get_with(&self, key: &[u8], f: &mut dyn FnMut(&[u8])) -> Result<bool> {
        Ok(self.0.get(Space::Data, key)?.map(|v| f(&v)).is_some())
    }
    fn multi_get(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        self.0.multi_get(keys)
    }
    fn scan(&self, lower: Vec<u8>, upper: Vec<u8>, _fill_cache: bool) -> Box<dyn Cursor + '_> {
        Box::new(PagedCursor::new(self.0.clone(), lower, upper, Default::default()))
    }
}

impl Snapshot for TikvSnapshot {}

impl Engine for TikvEngine {
    fn begin(&self, snapshot: bool) -> Box<dyn Transaction> {
        Box::new(TikvTxn::begin(self.shared.clone(), snapshot))
    }

    fn begin_with_snapshot(&self) -> Option<(Box<dyn Transaction>, Arc<dyn Snapshot>)> {
        let t = TikvTxn::begin(self.shared.clone(), true);
        let ts = t.start_ts().ok()?;
        Some((Box::new(t), Arc::new(TikvSnapshot(ReadAt { shared: self.shared.clone(), ts }))))
    }

    fn snapshot(&self) -> Result<Arc<dyn Snapshot>> {
        Ok(Arc::new(TikvSnapshot(self.latest()?)))
    }

    fn write(&self, batch: Batch) -> Result<()> {
        if batch.puts.is_empty() {
            return Ok(());
        }
        let puts = batch.puts.into_iter().map(|(k, v)| (self.shared.key(Space::Data, &k), Some(v))).collect();
        self.write_all(puts, Vec::new())
    }

    fn meta_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.latest()?.get(Space::Meta, key)
    }

    fn meta_scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let at = self.latest()?;
        let upper = prefix_end(prefix);
        let mut out = Vec::new();
        let mut from = prefix.to_vec();
        loop {
            let page = at.page(Space::Meta, &from, &upper, MAX_PAGE, false)?;
            let full = page.len() == MAX_PAGE as usize;
            if let Some((last, _)) = page.last() {
                from = last.clone();
                from.push(0);
            }
            out.extend(page);
            if !full {
                return Ok(out);
            }
        }
    }

    fn meta_write(&self, puts: &[(Vec<u8>, Option<Vec<u8>>)], delete_data: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
        let puts = puts.iter().map(|(k, v)| (self.shared.key(Space::Meta, k), v.clone())).collect();
        let ranges = delete_data.iter().map(|(lo, hi)| self.shared.range(Space::Data, lo, hi)).filter(|(lo, hi)| lo < hi).collect();
        self.write_all(puts, ranges)
    }

    fn sync_log(&self) -> Result<()> {
        // A commit TiKV acknowledged is in a majority of its replicas' Raft logs already.
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn compact(&self, _range: Option<(&[u8], &[u8])>) -> Result<()> {
        // TiKV compacts its own RocksDB instances; there is no Tabula filter to run through them.
        Ok(())
    }

    fn temp_path(&self, ext: &str) -> PathBuf {
        let n = self.shared.temp_seq.fetch_add(1, Ordering::Relaxed);
        self.shared.temp_dir.join(format!("{n}.{ext}"))
    }
}

/// The first key after every key that starts with `prefix` (empty: no end within the space).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let a = TikvAddress::parse("tikv://pd1:2379, pd2:2379/shop").unwrap();
        assert_eq!(a, TikvAddress { pd: vec!["pd1:2379".into(), "pd2:2379".into()], prefix: b"shop".to_vec() });
        assert_eq!(TikvAddress::parse("tikv://127.0.0.1:2379").unwrap().prefix, b"tabula");
        assert!(TikvAddress::parse("tikv:///x").is_err());
        assert!(TikvAddress::parse("pd1:2379").is_err());
        assert!(TikvAddress::parse("tikv://pd:1/").is_err());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), b"ac");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff"), b"");
        assert_eq!(prefix_end(b""), b"");
    }
}
