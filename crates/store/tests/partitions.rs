//! Partitions split when large and merge when small and idle, without blocking, losing or duplicating
//! reads and writes that run meanwhile.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::*;
use tabula_store::*;

#[test]
fn split_and_merge_under_concurrent_reads_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        split_bytes: 16 * 1024,
        merge_bytes: 8 * 1024,
        idle_rate: f64::MAX,
        split_write_rate: f64::MAX,
        maintenance_interval: Some(std::time::Duration::from_millis(5)),
        ..StoreConfig::default()
    };
    let store = Arc::new(open_with(dir.path(), config));
    store.create_table(table("p", &[("g", PkType::Integer), ("i", PkType::Integer)], TableOptions::default())).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Readers: a full scan always sees each written row exactly once, in order.
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, stop) = (store.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut scans = 0;
                while !stop.load(Ordering::Relaxed) {
                    let rows = store.get_range("p", &RangeRequest::full(Direction::Forward)).unwrap().rows;
                    let keys: Vec<_> = rows.iter().map(|r| r.pk.clone()).collect();
                    let mut sorted = keys.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(keys, sorted, "no duplicates, key order kept");
                    scans += 1;
                }
                scans
            })
        })
        .collect();
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || {
                for n in 0..600i64 {
                    let g = (n % 40) * 2 + w;
                    store
                        .put_row(
                            "p",
                            &[Some(int(g)), Some(int(n))],
                            &[CellWrite::new("v", Value::Binary(vec![7; 100]))],
                            &Condition::expect_not_exist(),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    store.run_maintenance().unwrap();
    let parts = store.partitions("p").unwrap();
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert!(parts.len() > 1, "the table split: {} partitions", parts.len());
    // Partitions cover the table without gaps or overlaps; splits fall between partition-key values.
    for pair in parts.windows(2) {
        assert_eq!(pair[0].end, pair[1].start);
    }
    // Statistics are approximate: a write racing a split may count on the partition it replaced.
    let total_rows: i64 = parts.iter().map(|p| p.approx_rows).sum();
    assert!((1140..=1260).contains(&total_rows), "approximate row count {total_rows} of 1200");
    let rows = store.get_range("p", &RangeRequest { limit: None, ..RangeRequest::full(Direction::Forward) }).unwrap();
    let mut all = rows.rows.len();
    let mut next = rows.next_start;
    while let Some(n) = next {
        let r = store
            .get_range("p", &RangeRequest { start: n.into_iter().map(PkBound::Value).collect(), ..RangeRequest::full(Direction::Forward) })
            .unwrap();
        all += r.rows.len();
        next = r.next_start;
    }
    assert_eq!(all, 1200, "every write is readable exactly once");
    // Each partition key value sits in exactly one partition.
    for p in &parts {
        if let Some(bound) = store.partition_bound("p", &p.start).unwrap() {
            assert_eq!(bound.len(), 1, "split points are partition-key values");
        }
    }
    let largest = store.largest_partition_keys("p", 3).unwrap();
    assert_eq!(largest.len(), 3);
    assert!(largest[0].1 >= largest[2].1);

    // Delete almost everything: the small idle neighbours merge back.
    for g in 0..80 {
        let rows = store
            .get_range(
                "p",
                &RangeRequest {
                    start: vec![PkBound::Value(int(g)), PkBound::InfMin],
                    end: vec![PkBound::Value(int(g)), PkBound::InfMax],
                    ..RangeRequest::full(Direction::Forward)
                },
            )
            .unwrap()
            .rows;
        for r in rows {
            store.delete_row("p", &r.pk, &Condition::ignore()).unwrap();
        }
    }
    store.run_maintenance().unwrap();
    assert_eq!(store.partitions("p").unwrap().len(), 1, "merged back to one partition");
}

#[test]
fn one_partition_key_value_is_never_split() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        split_bytes: 4 * 1024,
        merge_bytes: 0,
        maintenance_interval: None,
        ..StoreConfig::default()
    };
    let store = open_with(dir.path(), config);
    store.create_table(table("one", &[("g", PkType::String), ("i", PkType::Integer)], TableOptions::default())).unwrap();
    for i in 0..200 {
        store
            .put_row("one", &[Some(s("only")), Some(int(i))], &[CellWrite::new("v", Value::Binary(vec![1; 100]))], &Condition::ignore())
            .unwrap();
    }
    store.run_maintenance().unwrap();
    let parts = store.partitions("one").unwrap();
    assert_eq!(parts.len(), 1);
    assert!(parts[0].single_value, "{parts:?}");
    let scans = parts[0].split_scans;
    assert!(scans > 0);
    // Nothing written: later rounds read nothing of it again.
    for _ in 0..5 {
        store.run_maintenance().unwrap();
    }
    assert_eq!(store.partitions("one").unwrap()[0].split_scans, scans, "an unchanged partition is not scanned again");
    // Writes under the same value: two seeks show it is still one value, no scan.
    for i in 200..220 {
        store
            .put_row("one", &[Some(s("only")), Some(int(i))], &[CellWrite::new("v", Value::Binary(vec![1; 100]))], &Condition::ignore())
            .unwrap();
    }
    store.run_maintenance().unwrap();
    assert_eq!(store.partitions("one").unwrap()[0].split_scans, scans, "more rows of the same value: no scan");
    // A second partition-key value: now it splits.
    for i in 0..200 {
        store
            .put_row("one", &[Some(s("other")), Some(int(i))], &[CellWrite::new("v", Value::Binary(vec![1; 100]))], &Condition::ignore())
            .unwrap();
    }
    store.run_maintenance().unwrap();
    let parts = store.partitions("one").unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert!(parts.iter().all(|p| !p.single_value), "{parts:?}");
}

#[test]
fn a_hot_partition_splits_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        split_bytes: i64::MAX,
        split_write_rate: 100.0,
        idle_rate: 0.0,
        maintenance_interval: None,
        ..StoreConfig::default()
    };
    let store = open_with(dir.path(), config);
    store.create_table(table("hot", &[("g", PkType::Integer)], TableOptions::default())).unwrap();
    for g in 0..500 {
        store.put_row("hot", &[Some(int(g))], &[CellWrite::new("v", Value::Integer(g))], &Condition::ignore()).unwrap();
    }
    store.run_maintenance().unwrap();
    let parts = store.partitions("hot").unwrap();
    assert!(parts.len() >= 2, "a partition taking more writes per second than the threshold split: {parts:?}");
    assert!(parts.iter().all(|p| p.writes > 0 || p.approx_rows > 0));
    assert_eq!(store.get_range("hot", &RangeRequest::full(Direction::Forward)).unwrap().rows.len(), 500);
}

#[test]
fn a_split_falls_at_the_middle_of_the_bytes_on_a_partition_key_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        split_bytes: 40 * 1024,
        merge_bytes: 0,
        maintenance_interval: None,
        ..StoreConfig::default()
    };
    let store = open_with(dir.path(), config);
    store.create_table(table("m", &[("g", PkType::Integer), ("i", PkType::Integer)], TableOptions::default())).unwrap();
    // Partition-key values 0..10 with 20 rows each, then value 10 with 200 rows: half of the bytes lies
    // inside value 10's group, whose middle is past the half, so the right half starts at 10.
    let put = |g: i64, i: i64| {
        store
            .put_row("m", &[Some(int(g)), Some(int(i))], &[CellWrite::new("v", Value::Binary(vec![1; 200]))], &Condition::ignore())
            .unwrap();
    };
    for g in 0..10 {
        (0..20).for_each(|i| put(g, i));
    }
    (0..200).for_each(|i| put(10, i));
    store.run_maintenance().unwrap();
    let parts = store.partitions("m").unwrap();
    assert_eq!(parts.len(), 2, "{parts:?}");
    let mut ten = Vec::new();
    keys::encode_pk_value(&mut ten, &int(10));
    assert!(parts[1].start.ends_with(&ten), "the right half starts at partition-key value 10: {parts:?}");
    assert_eq!((parts[0].approx_rows, parts[1].approx_rows), (200, 200), "left: values 0..10, right: value 10");
}

/// A partition shows the bytes the engine stores for its rows, where the engine can tell: about the
/// size of 200 incompressible rows of 1 kB once they are flushed, on RocksDB and in memory alike.
#[test]
fn partitions_show_the_bytes_the_engine_stores() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    store.create_table(table("sized", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for k in 0..200 {
        let value: Vec<u8> = (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        store.put_row("sized", &[Some(int(k))], &[CellWrite::new("v", Value::Binary(value))], &Condition::ignore()).unwrap();
    }
    store.flush().unwrap();
    let parts = store.partitions_with_stored_bytes("sized").unwrap();
    let stored = parts[0].stored_bytes.expect("both engines tell their sizes");
    assert!((180_000..400_000).contains(&stored), "200 kB of rows stored as {stored} bytes");
}

/// The rows of `t` whose `v` is `value`, read through index `by_v` a page at a time.
fn through_index(store: &Store, value: &str) -> usize {
    let (mut n, mut after) = (0, None);
    loop {
        let range = IndexRange { eq: vec![Some(Value::String(value.into()))], ..IndexRange::default() };
        let (pks, next) = store.index_pks("t", "by_v", &range, after.as_deref(), 7).unwrap();
        n += pks.len();
        match next {
            Some(k) => after = Some(k),
            None => return n,
        }
    }
}

#[test]
fn a_global_index_splits_and_merges_in_partitions_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let config = || StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        split_bytes: 8 * 1024,
        merge_bytes: 4 * 1024,
        idle_rate: f64::MAX,
        split_write_rate: f64::MAX,
        maintenance_interval: None,
        ..StoreConfig::default()
    };
    let mut store = open_with(dir.path(), config());
    store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    for k in 0..200 {
        store
            .put_row("t", &[Some(int(k))], &[CellWrite::new("v", Value::String(format!("v{:03}", k % 50)))], &Condition::ignore())
            .unwrap();
    }
    // Built on rows already there, then written with its rows.
    store.create_index("t", IndexDef::new("by_v", &["v".into()], false, false)).unwrap();
    for k in 200..600 {
        store
            .put_row("t", &[Some(int(k))], &[CellWrite::new("v", Value::String(format!("v{:03}", k % 50)))], &Condition::ignore())
            .unwrap();
    }
    assert_eq!(store.partitions("t").unwrap().len(), 1);
    let index_parts = |store: &Store| {
        let mut all = store.index_partitions("t").unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].0, "by_v");
        all.remove(0).1
    };
    let before = index_parts(&store);
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].approx_rows, 600, "the build's entries and the writers' count");
    store.run_maintenance().unwrap();
    let parts = index_parts(&store);
    assert!(parts.len() > 1, "the index split: {} partitions", parts.len());
    assert_eq!(parts.iter().map(|p| p.approx_rows).sum::<i64>(), 600);
    for pair in parts.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap");
        // A bound is an entry: the indexed value, then the row's key.
        let (values, row) = store.index_partition_bound("t", "by_v", &pair[1].start).unwrap();
        match (&values[..], &row[..]) {
            ([Some(Value::String(v))], [PkValue::Integer(k)]) => assert_eq!(*v, format!("v{:03}", k % 50)),
            other => panic!("bound {other:?}"),
        }
    }
    assert_eq!(through_index(&store, "v007"), 12, "reads go on across the split");

    if on_disk() {
        drop(store);
        store = open_with(dir.path(), config());
        let shape = |ps: &[PartitionInfo]| ps.iter().map(|p| (p.id, p.start.clone(), p.end.clone(), p.approx_rows)).collect::<Vec<_>>();
        assert_eq!(shape(&index_parts(&store)), shape(&parts), "the partitions are kept across a restart");
    }

    // Deletes take their entries out of the counts; small idle neighbours merge back.
    for k in 0..560 {
        store.delete_row("t", &[int(k)], &Condition::ignore()).unwrap();
    }
    store.run_maintenance().unwrap();
    let parts = index_parts(&store);
    assert_eq!(parts.len(), 1, "merged back");
    assert_eq!(parts[0].approx_rows, 40);

    store.truncate_table("t").unwrap();
    assert_eq!(index_parts(&store)[0].approx_rows, 0, "a TRUNCATE empties them");
    store.drop_index("t", "by_v").unwrap();
    assert!(store.index_partitions("t").unwrap().is_empty());
}

#[test]
fn a_local_index_counts_in_its_rows_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    store.create_table(table("t", &[("g", PkType::Integer), ("k", PkType::Integer)], TableOptions::default())).unwrap();
    let put = |k: i64| {
        let cells = [CellWrite::new("v", Value::String(format!("v{k}")))];
        store.put_row("t", &[Some(int(k % 3)), Some(int(k))], &cells, &Condition::ignore()).unwrap();
    };
    (0..30).for_each(put);
    let local =
        |columns: &[&str]| IndexDef::new("by_v", &columns.iter().map(|c| c.to_string()).collect::<Vec<_>>(), false, false).with_local(true);
    let e = store.create_index("t", local(&["v"])).unwrap_err();
    assert_eq!((e.sqlstate(), e.to_string().contains("must start with the partition key")), ("42P17", true), "{e}");
    let rows_only = store.partitions("t").unwrap()[0].clone();
    store.create_index("t", local(&["g", "v"])).unwrap();
    (30..40).for_each(put);
    let with_entries = store.partitions("t").unwrap()[0].clone();
    assert_eq!(with_entries.approx_rows, 40, "entries are no rows");
    assert!(with_entries.approx_bytes > rows_only.approx_bytes * 40 / 30 + 40 * 8, "{with_entries:?} against {rows_only:?}");
    assert!(store.index_partitions("t").unwrap().is_empty(), "a local index has no partitions of its own");
    let range = IndexRange { eq: vec![Some(Value::Integer(1)), Some(Value::String("v31".into()))], ..IndexRange::default() };
    let (pks, _) = store.index_pks("t", "by_v", &range, None, 10).unwrap();
    assert_eq!(pks, vec![vec![int(1), int(31)]]);
}
