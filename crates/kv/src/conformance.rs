//! The suite every engine passes: what the store relies on, checked through the traits alone.
//!
//! Each case takes a fresh, empty engine. An engine's crate runs them all from its tests:
//! ```text
//! for (name, case) in tabula_kv::conformance::CASES {
//!     let engine = open_fresh_engine();
//!     case(&*engine); // panics with the case's name in the message on failure
//! }
//! ```
//! Capabilities an engine lacks ([`Engine::ingest`], [`Engine::compaction_hook`]) make their cases
//! return at once; [`capabilities`] says which an engine has, for the runner to print.

use std::sync::Arc;

use crate::{Batch, CompactionFilter, CompactionFilterFactory, Decision, Engine, KvError, Read, Space};

/// One case of the suite.
pub type Case = fn(&dyn Engine);

/// Every case, by name.
pub const CASES: &[(&str, Case)] = &[
    ("point_reads_and_the_two_spaces", point_reads_and_the_two_spaces),
    ("empty_keys_and_values_and_large_values", empty_keys_and_values_and_large_values),
    ("scans_in_both_directions_within_bounds", scans_in_both_directions_within_bounds),
    ("a_snapshot_reads_the_past_and_outlives_its_transaction", a_snapshot_reads_the_past_and_outlives_its_transaction),
    ("a_snapshot_alone_holds_its_point", a_snapshot_alone_holds_its_point),
    ("a_transaction_reads_its_own_writes_in_gets_and_scans", a_transaction_reads_its_own_writes_in_gets_and_scans),
    ("no_lost_update_the_second_committer_conflicts", no_lost_update_the_second_committer_conflicts),
    ("write_skew_is_allowed_as_snapshot_isolation_allows", write_skew_is_allowed_as_snapshot_isolation_allows),
    ("without_a_snapshot_a_key_conflicts_from_its_first_touch", without_a_snapshot_a_key_conflicts_from_its_first_touch),
    ("a_conflict_on_a_catalog_key_and_a_deleted_key", a_conflict_on_a_catalog_key_and_a_deleted_key),
    ("savepoints_and_rollback_write_nothing_undone", savepoints_and_rollback_write_nothing_undone),
    ("batches_and_catalog_writes_with_range_deletions", batches_and_catalog_writes_with_range_deletions),
    ("concurrent_writers_lose_no_increment", concurrent_writers_lose_no_increment),
    ("ingested_files_arrive_whole", ingested_files_arrive_whole),
    ("the_compaction_hook_sees_every_value", the_compaction_hook_sees_every_value),
    ("sizes_of_key_ranges_follow_their_data", sizes_of_key_ranges_follow_their_data),
];

/// The capabilities an engine offers, by name.
pub fn capabilities(e: &dyn Engine) -> Vec<&'static str> {
    let mut out = Vec::new();
    if e.ingest().is_some() {
        out.push("ingest");
    }
    if e.compaction_hook().is_some() {
        out.push("compaction hook");
    }
    if e.size_stats().is_some() {
        out.push("size stats");
    }
    out
}

fn put(e: &dyn Engine, pairs: &[(&[u8], &[u8])]) {
    let mut b = Batch::default();
    for (k, v) in pairs {
        b.put(k, v);
    }
    e.write(b).unwrap();
}

fn get(r: &dyn Read, key: &[u8]) -> Option<Vec<u8>> {
    r.get(key).unwrap()
}

/// Every key and value of `[lower, upper)`, walked forward or backward.
fn walk(r: &dyn Read, lower: &[u8], upper: &[u8], backward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut c = r.scan(lower.to_vec(), upper.to_vec(), true);
    if backward {
        c.seek_to_last()
    } else {
        c.seek_to_first()
    }
    let mut out = Vec::new();
    while c.valid() {
        out.push((c.key().to_vec(), c.value().to_vec()));
        c.advance(backward);
    }
    c.status().unwrap();
    out
}

fn keys(rows: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<Vec<u8>> {
    rows.into_iter().map(|r| r.0).collect()
}

fn point_reads_and_the_two_spaces(e: &dyn Engine) {
    put(e, &[(b"a", b"1"), (b"b", b"2")]);
    e.meta_write(&[(b"a".to_vec(), Some(b"meta".to_vec()))], &[]).unwrap();
    assert_eq!(get(e, b"a"), Some(b"1".to_vec()));
    assert_eq!(get(e, b"zz"), None);
    assert_eq!(e.meta_get(b"a").unwrap(), Some(b"meta".to_vec()), "the catalog space is apart from the data");
    assert_eq!(e.meta_get(b"b").unwrap(), None);
    let got = e.multi_get(&[b"b", b"missing", b"a"]).unwrap();
    assert_eq!(got, vec![Some(b"2".to_vec()), None, Some(b"1".to_vec())], "multi_get answers in the order asked");
    e.meta_write(&[(b"p/1".to_vec(), Some(b"x".to_vec())), (b"p/2".to_vec(), Some(b"y".to_vec())), (b"q".to_vec(), Some(vec![]))], &[])
        .unwrap();
    let scanned = e.meta_scan(b"p/").unwrap();
    assert_eq!(scanned, vec![(b"p/1".to_vec(), b"x".to_vec()), (b"p/2".to_vec(), b"y".to_vec())]);
    e.meta_write(&[(b"p/1".to_vec(), None)], &[]).unwrap();
    assert_eq!(e.meta_scan(b"p/").unwrap().len(), 1, "a catalog record written as None is deleted");
}

fn empty_keys_and_values_and_large_values(e: &dyn Engine) {
    let big: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 251) as u8).collect();
    put(e, &[(b"", b"empty key"), (b"e", b""), (b"big", &big)]);
    assert_eq!(get(e, b""), Some(b"empty key".to_vec()));
    assert_eq!(get(e, b"e"), Some(vec![]), "an empty value is a value, not an absence");
    assert_eq!(get(e, b"big").as_deref(), Some(big.as_slice()));
    let txn = e.begin(true);
    txn.put(Space::Data, b"big2", &big).unwrap();
    assert_eq!(get(&*txn, b"big2").map(|v| v.len()), Some(big.len()));
    txn.commit().unwrap();
    assert_eq!(get(e, b"big2").as_deref(), Some(big.as_slice()));
    assert_eq!(keys(walk(e, b"", b"\xff", false)), vec![b"".to_vec(), b"big".to_vec(), b"big2".to_vec(), b"e".to_vec()]);
}

fn scans_in_both_directions_within_bounds(e: &dyn Engine) {
    let all: Vec<Vec<u8>> = (0..50u8).map(|i| vec![b'k', i]).collect();
    let pairs: Vec<(&[u8], &[u8])> = all.iter().map(|k| (k.as_slice(), k.as_slice())).collect();
    put(e, &pairs);
    let fwd = keys(walk(e, &[b'k', 10], &[b'k', 20], false));
    assert_eq!(fwd, all[10..20].to_vec(), "lower bound included, upper excluded");
    let back = keys(walk(e, &[b'k', 10], &[b'k', 20], true));
    assert_eq!(back, all[10..20].iter().rev().cloned().collect::<Vec<_>>());
    assert!(walk(e, &[b'k', 20], &[b'k', 20], false).is_empty(), "an empty range");
    assert!(walk(e, b"a", b"b", true).is_empty(), "a range with no keys");
    // A limit is the reader's: it stops early and drops the cursor.
    let mut c = e.scan(b"k".to_vec(), b"l".to_vec(), false);
    c.seek_to_first();
    for want in &all[..3] {
        assert!(c.valid());
        assert_eq!(c.key(), want.as_slice());
        assert_eq!(c.value(), want.as_slice());
        c.advance(false);
    }
    // Turning around mid-walk.
    c.advance(true);
    assert_eq!(c.key(), all[2].as_slice());
}

fn a_snapshot_reads_the_past_and_outlives_its_transaction(e: &dyn Engine) {
    put(e, &[(b"a", b"old"), (b"gone", b"here")]);
    let Some((txn, snap)) = e.begin_with_snapshot() else { panic!("an idle engine takes a transaction with its snapshot") };
    let other = e.begin(true);
    other.put(Space::Data, b"a", b"new").unwrap();
    other.put(Space::Data, b"b", b"born").unwrap();
    other.delete(Space::Data, b"gone").unwrap();
    other.commit().unwrap();
    for r in [&*txn as &dyn Read, &*snap] {
        assert_eq!(get(r, b"a"), Some(b"old".to_vec()), "no non-repeatable read");
        assert_eq!(get(r, b"b"), None, "no phantom");
        assert_eq!(get(r, b"gone"), Some(b"here".to_vec()));
        assert_eq!(keys(walk(r, b"", b"z", false)), vec![b"a".to_vec(), b"gone".to_vec()]);
    }
    txn.rollback().unwrap();
    assert_eq!(get(&*snap, b"a"), Some(b"old".to_vec()), "the snapshot outlives its transaction");
    assert_eq!(snap.multi_get(&[b"a", b"b"]).unwrap(), vec![Some(b"old".to_vec()), None]);
    assert_eq!(get(e, b"a"), Some(b"new".to_vec()));
    // An uncommitted write is seen by no one else.
    let writer = e.begin(true);
    writer.put(Space::Data, b"dirty", b"x").unwrap();
    assert_eq!(get(e, b"dirty"), None, "no dirty read");
    drop(writer);
    assert_eq!(get(e, b"dirty"), None, "a transaction dropped unfinished rolls back");
}

fn a_snapshot_alone_holds_its_point(e: &dyn Engine) {
    put(e, &[(b"a", b"old"), (b"gone", b"here")]);
    let snap = e.snapshot().unwrap();
    let other = e.begin(true);
    other.put(Space::Data, b"a", b"new").unwrap();
    other.put(Space::Data, b"b", b"born").unwrap();
    other.delete(Space::Data, b"gone").unwrap();
    other.commit().unwrap();
    put(e, &[(b"c", b"batched")]);
    assert_eq!(snap.multi_get(&[b"a", b"b", b"gone", b"c"]).unwrap(), vec![Some(b"old".to_vec()), None, Some(b"here".to_vec()), None]);
    assert_eq!(keys(walk(&*snap, b"", b"z", false)), vec![b"a".to_vec(), b"gone".to_vec()]);
    assert_eq!(get(e, b"a"), Some(b"new".to_vec()), "the engine itself reads the latest commit");
    let later = e.snapshot().unwrap();
    assert_eq!(keys(walk(&*later, b"", b"z", false)), vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
}

fn a_transaction_reads_its_own_writes_in_gets_and_scans(e: &dyn Engine) {
    put(e, &[(b"a", b"1"), (b"c", b"3"), (b"e", b"5")]);
    let txn = e.begin(true);
    txn.put(Space::Data, b"b", b"2").unwrap();
    txn.put(Space::Data, b"c", b"33").unwrap();
    txn.delete(Space::Data, b"e").unwrap();
    txn.put(Space::Meta, b"counter", b"7").unwrap();
    assert_eq!(get(&*txn, b"c"), Some(b"33".to_vec()));
    assert_eq!(get(&*txn, b"e"), None);
    assert_eq!(get(&*txn, b"counter"), None, "a catalog write is not in the data space");
    assert_eq!(txn.get_for_update(Space::Meta, b"counter").unwrap(), Some(b"7".to_vec()));
    let seen = walk(&*txn, b"a", b"z", false);
    assert_eq!(seen, vec![(b"a".to_vec(), b"1".to_vec()), (b"b".to_vec(), b"2".to_vec()), (b"c".to_vec(), b"33".to_vec())]);
    assert_eq!(keys(walk(&*txn, b"a", b"z", true)), vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    assert_eq!(txn.multi_get(&[b"e", b"b"]).unwrap(), vec![None, Some(b"2".to_vec())]);
    txn.commit().unwrap();
    assert_eq!(keys(walk(e, b"a", b"z", false)), vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(e.meta_get(b"counter").unwrap(), Some(b"7".to_vec()));
}

fn no_lost_update_the_second_committer_conflicts(e: &dyn Engine) {
    put(e, &[(b"n", b"0")]);
    let (t1, t2) = (e.begin(true), e.begin(true));
    for t in [&t1, &t2] {
        assert_eq!(t.get_for_update(Space::Data, b"n").unwrap(), Some(b"0".to_vec()));
        t.put(Space::Data, b"n", b"1").unwrap();
    }
    t1.commit().unwrap();
    assert_eq!(t2.commit(), Err(KvError::Conflict));
    // A key only read for update, not written, conflicts too.
    let t3 = e.begin(true);
    t3.get_for_update(Space::Data, b"n").unwrap();
    t3.put(Space::Data, b"other", b"x").unwrap();
    put(e, &[(b"n", b"2")]);
    assert_eq!(t3.commit(), Err(KvError::Conflict));
    assert_eq!(get(e, b"other"), None, "a failed commit writes nothing");
    // Blind writes of the same key conflict as well.
    let (t4, t5) = (e.begin(true), e.begin(true));
    t4.put(Space::Data, b"blind", b"4").unwrap();
    t5.put(Space::Data, b"blind", b"5").unwrap();
    t5.commit().unwrap();
    assert_eq!(t4.commit(), Err(KvError::Conflict));
    assert_eq!(get(e, b"blind"), Some(b"5".to_vec()));
}

fn write_skew_is_allowed_as_snapshot_isolation_allows(e: &dyn Engine) {
    put(e, &[(b"x", b"on"), (b"y", b"on")]);
    let (t1, t2) = (e.begin(true), e.begin(true));
    // Each reads both (plain reads) and turns off the other's key.
    for t in [&t1, &t2] {
        assert_eq!((get(&**t, b"x"), get(&**t, b"y")), (Some(b"on".to_vec()), Some(b"on".to_vec())));
    }
    t1.put(Space::Data, b"y", b"off").unwrap();
    t2.put(Space::Data, b"x", b"off").unwrap();
    t1.commit().unwrap();
    t2.commit().unwrap();
    assert_eq!((get(e, b"x"), get(e, b"y")), (Some(b"off".to_vec()), Some(b"off".to_vec())));
}

fn without_a_snapshot_a_key_conflicts_from_its_first_touch(e: &dyn Engine) {
    put(e, &[(b"k", b"0")]);
    let t = e.begin(false);
    // A commit before the transaction touches the key is no conflict: it reads the latest.
    put(e, &[(b"k", b"1")]);
    assert_eq!(t.get_for_update(Space::Data, b"k").unwrap(), Some(b"1".to_vec()));
    t.put(Space::Data, b"k", b"2").unwrap();
    t.commit().unwrap();
    let t = e.begin(false);
    t.get_for_update(Space::Data, b"k").unwrap();
    put(e, &[(b"k", b"3")]);
    t.put(Space::Data, b"k", b"4").unwrap();
    assert_eq!(t.commit(), Err(KvError::Conflict), "a commit after the first touch conflicts");
    assert_eq!(get(e, b"k"), Some(b"3".to_vec()));
}

fn a_conflict_on_a_catalog_key_and_a_deleted_key(e: &dyn Engine) {
    // Identity counters live in the catalog space and are bumped inside row transactions.
    let (t1, t2) = (e.begin(true), e.begin(true));
    for t in [&t1, &t2] {
        assert_eq!(t.get_for_update(Space::Meta, b"seq").unwrap(), None);
        t.put(Space::Meta, b"seq", b"1").unwrap();
    }
    t1.commit().unwrap();
    assert_eq!(t2.commit(), Err(KvError::Conflict));
    // A deletion committed after a read for update is a change like any other.
    put(e, &[(b"d", b"x")]);
    let t = e.begin(true);
    t.get_for_update(Space::Data, b"d").unwrap();
    let deleter = e.begin(true);
    deleter.delete(Space::Data, b"d").unwrap();
    deleter.commit().unwrap();
    t.put(Space::Data, b"d", b"y").unwrap();
    assert_eq!(t.commit(), Err(KvError::Conflict));
    assert_eq!(get(e, b"d"), None);
}

fn savepoints_and_rollback_write_nothing_undone(e: &dyn Engine) {
    let t = e.begin(true);
    t.put(Space::Data, b"a", b"1").unwrap();
    t.set_savepoint();
    t.put(Space::Data, b"b", b"2").unwrap();
    t.put(Space::Data, b"a", b"changed").unwrap();
    t.set_savepoint();
    t.put(Space::Data, b"c", b"3").unwrap();
    t.rollback_to_savepoint().unwrap();
    assert_eq!(get(&*t, b"c"), None);
    assert_eq!(get(&*t, b"b"), Some(b"2".to_vec()), "savepoints nest: the inner one only undoes its own");
    t.rollback_to_savepoint().unwrap();
    assert_eq!(get(&*t, b"a"), Some(b"1".to_vec()));
    assert_eq!(get(&*t, b"b"), None);
    t.commit().unwrap();
    assert_eq!(keys(walk(e, b"", b"z", false)), vec![b"a".to_vec()]);
    let t = e.begin(true);
    t.put(Space::Data, b"z0", b"x").unwrap();
    t.rollback().unwrap();
    assert_eq!(get(e, b"z0"), None);
}

fn batches_and_catalog_writes_with_range_deletions(e: &dyn Engine) {
    let rows: Vec<Vec<u8>> = ["t1/a", "t1/b", "t2/a", "t2/b", "t3/a"].iter().map(|k| k.as_bytes().to_vec()).collect();
    put(e, &rows.iter().map(|k| (k.as_slice(), b"v".as_slice())).collect::<Vec<_>>());
    assert_eq!(walk(e, b"", b"z", false).len(), 5, "a batch lands whole");
    e.meta_write(&[(b"table/t2".to_vec(), None)], &[(b"t2/".to_vec(), b"t20".to_vec())]).unwrap();
    assert_eq!(keys(walk(e, b"", b"z", false)), [&rows[..2], &rows[4..]].concat(), "the range deletion went with the catalog write");
    e.meta_write(&[], &[(b"t1/".to_vec(), b"t10".to_vec()), (b"t3/".to_vec(), b"t30".to_vec())]).unwrap();
    assert!(walk(e, b"", b"z", false).is_empty());
    e.sync_log().unwrap();
    e.flush().unwrap();
    e.compact(None).unwrap();
    e.compact(Some((b"a", b"b"))).unwrap();
}

fn concurrent_writers_lose_no_increment(e: &dyn Engine) {
    const THREADS: u64 = 4;
    const EACH: u64 = 100;
    put(e, &[(b"counter", &0u64.to_be_bytes())]);
    let conflicts = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..EACH {
                    loop {
                        let t = e.begin(true);
                        let v = t.get_for_update(Space::Data, b"counter").unwrap().unwrap();
                        let n = u64::from_be_bytes(v.try_into().unwrap());
                        t.put(Space::Data, b"counter", &(n + 1).to_be_bytes()).unwrap();
                        match t.commit() {
                            Ok(()) => break,
                            Err(KvError::Conflict) => conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                            Err(other) => panic!("{other}"),
                        };
                    }
                }
            });
        }
    });
    let n = u64::from_be_bytes(get(e, b"counter").unwrap().try_into().unwrap());
    assert_eq!(n, THREADS * EACH, "every committed increment counted ({} conflicts retried)", conflicts.into_inner());
}

fn ingested_files_arrive_whole(e: &dyn Engine) {
    let Some(ingest) = e.ingest() else { return };
    put(e, &[(b"b", b"old")]);
    let mut first = ingest.file().unwrap();
    let mut second = ingest.file().unwrap();
    for k in [b"a", b"b", b"c"] {
        first.put(k, b"new").unwrap();
    }
    second.put(b"bb", b"2").unwrap();
    second.put(b"d", b"2").unwrap();
    assert_eq!((first.rows(), second.rows()), (3, 2));
    first.finish().unwrap();
    let snap = e.begin_with_snapshot().map(|(_, s)| s);
    ingest.ingest(vec![first, second]).unwrap();
    let all = walk(e, b"", b"z", false);
    assert_eq!(keys(all.clone()), [&b"a"[..], b"b", b"bb", b"c", b"d"].map(|k| k.to_vec()).to_vec());
    assert_eq!(all[1].1, b"new", "an ingested key replaces the stored one");
    if let Some(snap) = snap {
        assert_eq!(get(&*snap, b"a"), None, "a snapshot from before the ingestion does not see it");
    }
    // A file dropped unfinished is simply gone.
    let mut dropped = ingest.file().unwrap();
    dropped.put(b"x", b"x").unwrap();
    drop(dropped);
    assert_eq!(get(e, b"x"), None);
}

struct DropValuesNamed(Vec<u8>);

impl CompactionFilterFactory for DropValuesNamed {
    fn create(&self) -> CompactionFilter {
        let victim = self.0.clone();
        Box::new(move |key, value| match value {
            v if v == victim.as_slice() => Decision::Remove,
            b"shrink me" => Decision::Change(key.to_vec()),
            _ => Decision::Keep,
        })
    }
}

fn the_compaction_hook_sees_every_value(e: &dyn Engine) {
    let Some(hook) = e.compaction_hook() else { return };
    put(e, &[(b"a", b"keep"), (b"b", b"drop me"), (b"c", b"shrink me"), (b"d", b"drop me")]);
    e.flush().unwrap();
    hook.set_filter(Arc::new(DropValuesNamed(b"drop me".to_vec())));
    // A range compaction reaches at least its range (RocksDB compacts whole files, so maybe more).
    e.compact(Some((b"a", b"c"))).unwrap();
    assert_eq!(get(e, b"b"), None, "removed by the filter");
    e.compact(None).unwrap();
    assert_eq!(keys(walk(e, b"", b"z", false)), vec![b"a".to_vec(), b"c".to_vec()]);
    assert_eq!(get(e, b"c"), Some(b"c".to_vec()), "changed by the filter");
}

/// A range holding 1 MB (made to be stored, flushed and compacted) weighs more than an empty one, and about
/// what it holds; a range whose keys were deleted and compacted away weighs nothing again.
fn sizes_of_key_ranges_follow_their_data(e: &dyn Engine) {
    let Some(stats) = e.size_stats() else { return };
    // Values that no compression shrinks much, so that file sizes stay near the data's.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut noise = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x.to_le_bytes()
    };
    let mut b = Batch::default();
    for i in 0..1000u32 {
        let value: Vec<u8> = (0..128).flat_map(|_| noise()).collect();
        b.put(format!("s/{i:04}").as_bytes(), &value);
    }
    e.write(b).unwrap();
    e.flush().unwrap();
    e.compact(None).unwrap();
    let sizes = stats.approximate_sizes(&[(b"s/", b"s0"), (b"t/", b"t0"), (b"s/0500", b"s0")]).unwrap();
    assert!((900_000..2_000_000).contains(&sizes[0]), "1 MB of data, stored as {} bytes", sizes[0]);
    assert_eq!(sizes[1], 0, "an empty range");
    assert!(sizes[2] < sizes[0], "half of the keys weigh less than all of them: {sizes:?}");
    e.meta_write(&[], &[(b"s/".to_vec(), b"s0".to_vec())]).unwrap();
    e.flush().unwrap();
    e.compact(None).unwrap();
    let after = stats.approximate_sizes(&[(b"s/", b"s0")]).unwrap();
    assert!(after[0] < 10_000, "deleted and compacted away, yet {} bytes", after[0]);
}
