//! Bulk loads: spilled sorted runs, table files streamed in key order, ingestion, and their checks.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

fn bulk_rows(a: &str, keys: std::ops::Range<i64>, payload: usize) -> Vec<(Vec<PkValue>, Vec<CellWrite>)> {
    keys.map(|b| (vec![s(a), int(b)], vec![CellWrite::new("v", Value::String(format!("{b}:{}", "x".repeat(payload))))])).collect()
}

/// A store whose bulk loads spill past 64 KiB and are ingested past `ingest_bytes`, with table `t`.
fn bulk_store(ingest_bytes: usize) -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        maintenance_interval: None,
        bulk_spill_bytes: 64 << 10,
        bulk_ingest_bytes: ingest_bytes,
        ..StoreConfig::default()
    };
    let store = open_with(dir.path(), config);
    store.create_table(table("t", &[("a", PkType::String), ("b", PkType::Integer)], TableOptions::default())).unwrap();
    (dir, store)
}

/// Bulk loads' temporary files in `dir` whose names end with `ext`.
fn bulk_files(dir: &std::path::Path, ext: &str) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name().to_string_lossy().into_owned();
            name.starts_with("bulk-") && name.ends_with(ext)
        })
        .count()
}

#[test]
fn bulk_loads_larger_than_memory_spill_to_sorted_runs() {
    // It counts the table files and spilled runs in the data directory.
    if !on_disk() {
        return;
    }
    let (dir, store) = bulk_store(16 << 20);
    let leftovers = || bulk_files(dir.path(), "");

    // Rows added out of order across several runs come back in key order, all of them.
    let mut load = store.bulk_load("t").unwrap();
    for chunk in [(300..600), (0..300), (600..900)] {
        load.add(&bulk_rows("a", chunk, 500)).unwrap();
    }
    assert!(leftovers() >= 3, "the load spilled runs");
    load.commit().unwrap();
    assert_eq!(leftovers(), 0, "runs are removed at commit");
    let rows = store
        .get_range("t", &RangeRequest { limit: Some(2000), budget_bytes: Some(usize::MAX), ..RangeRequest::full(Direction::Forward) })
        .unwrap()
        .rows;
    assert_eq!(rows.iter().map(|r| r.pk[1].clone()).collect::<Vec<_>>(), (0..900).map(int).collect::<Vec<_>>());

    // A repeat in different runs, and a row already stored, each fail the load with the first offending
    // position, and nothing is written.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("b", 0..400, 500)).unwrap();
    load.add(&bulk_rows("b", 500..800, 500)).unwrap();
    load.add(&bulk_rows("b", 10..11, 500)).unwrap(); // position 700
    load.add(&bulk_rows("a", 899..900, 500)).unwrap(); // position 701, stored before
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(700))));
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("b", 0..400, 500)).unwrap();
    load.add(&bulk_rows("a", 5..6, 500)).unwrap(); // position 400, stored before
    load.add(&bulk_rows("b", 3..4, 500)).unwrap();
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(400))));
    assert!(store.get_row("t", &[s("b"), int(0)], &all()).unwrap().is_none());
    assert_eq!(leftovers(), 0, "a failed load leaves no files");

    // A load dropped without commit leaves nothing either.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("c", 0..400, 500)).unwrap();
    drop(load);
    assert_eq!(leftovers(), 0);
    assert!(store.get_row("t", &[s("c"), int(0)], &all()).unwrap().is_none());
}

/// A streamed load larger than `bulk_file_rows` is written as several table files, ingested together; a key
/// that repeats one streamed into an earlier file still fails the whole load.
#[test]
fn a_long_streamed_load_spans_several_table_files() {
    // It counts the table files and spilled runs in the data directory.
    if !on_disk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        clock: Arc::new(ManualClock::new(NOW)),
        maintenance_interval: None,
        bulk_ingest_bytes: 16 << 10,
        bulk_spill_bytes: 32 << 10,
        bulk_file_rows: 500,
        ..StoreConfig::default()
    };
    let store = open_with(dir.path(), config);
    store.create_table(table("t", &[("a", PkType::String), ("b", PkType::Integer)], TableOptions::default())).unwrap();
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("a", 0..1800, 100)).unwrap();
    assert_eq!(bulk_files(dir.path(), ".sst"), 4, "1,800 rows in files of 500");
    load.add(&bulk_rows("a", 10..11, 100)).unwrap(); // a repeat of a row of the first file
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(1800))));
    assert_eq!(bulk_files(dir.path(), ""), 0, "a failed load leaves no files");
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("a", 0..1800, 100)).unwrap();
    load.commit().unwrap();
    let rows = store.get_range("t", &RangeRequest { limit: None, ..RangeRequest::full(Direction::Forward) }).unwrap();
    let mut n = rows.rows.len();
    let mut next = rows.next_start;
    while let Some(start) = next {
        let r = store
            .get_range(
                "t",
                &RangeRequest { start: start.into_iter().map(PkBound::Value).collect(), ..RangeRequest::full(Direction::Forward) },
            )
            .unwrap();
        n += r.rows.len();
        next = r.next_start;
    }
    assert_eq!(n, 1800);
    assert_eq!(bulk_files(dir.path(), ""), 0, "the files were moved into the database, the key log removed");
    // Rows out of order are spilled and merged at commit, into files of 500 rows too.
    let mut load = store.bulk_load("t").unwrap();
    for b in (0..1800).rev() {
        load.add(&bulk_rows("b", b..b + 1, 100)).unwrap();
    }
    assert!(bulk_files(dir.path(), ".run") > 0, "spilled");
    load.commit().unwrap();
    for b in [0, 499, 500, 1799] {
        assert!(store.get_row("t", &[s("b"), int(b)], &all()).unwrap().is_some(), "row {b}");
    }
    assert_eq!(bulk_files(dir.path(), ""), 0);
}

#[test]
fn bulk_loads_in_key_order_stream_into_a_table_file() {
    // It counts the table files and spilled runs in the data directory.
    if !on_disk() {
        return;
    }
    let (dir, store) = bulk_store(64 << 10);
    let files = |ext: &str| bulk_files(dir.path(), ext);

    // Rows in key order, with a few out of order among them: ten times the spill threshold, yet one table
    // file and no run; every row lands, in key order.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("a", 0..600, 500)).unwrap();
    load.add(&bulk_rows("0", 0..5, 500)).unwrap();
    load.add(&bulk_rows("a", 600..1200, 500)).unwrap();
    load.add(&bulk_rows("a", 1100..1101, 500)).unwrap(); // a repeat of a streamed key, held
    assert_eq!((files(".sst"), files(".run")), (1, 0), "streamed, not spilled");
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(1205))));
    assert_eq!(files(""), 0, "a failed load leaves no files");
    assert!(store.get_row("t", &[s("a"), int(0)], &all()).unwrap().is_none());

    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("a", 0..600, 500)).unwrap();
    load.add(&bulk_rows("0", 0..5, 500)).unwrap();
    load.add(&bulk_rows("a", 600..1200, 500)).unwrap();
    load.commit().unwrap();
    assert_eq!(files(""), 0);
    let rows = store
        .get_range("t", &RangeRequest { limit: Some(2000), budget_bytes: Some(usize::MAX), ..RangeRequest::full(Direction::Forward) })
        .unwrap()
        .rows;
    let keys: Vec<Vec<PkValue>> = rows.iter().map(|r| r.pk.clone()).collect();
    let want: Vec<Vec<PkValue>> = (0..5).map(|b| vec![s("0"), int(b)]).chain((0..1200).map(|b| vec![s("a"), int(b)])).collect();
    assert_eq!(keys, want);
    assert!(matches!(rows[700].get("v"), Some(Value::String(v)) if v.starts_with("695:")));

    // Held rows between streamed ones: two table files over the same key span, ingested as one.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("m", 0..800, 500).into_iter().step_by(2).collect::<Vec<_>>()).unwrap();
    load.add(&bulk_rows("m", 0..800, 500).into_iter().skip(1).step_by(2).collect::<Vec<_>>()).unwrap();
    load.commit().unwrap();
    let rows = store
        .get_range(
            "t",
            &RangeRequest {
                start: vec![PkBound::Value(s("m")), PkBound::InfMin],
                end: vec![PkBound::Value(s("m")), PkBound::InfMax],
                limit: Some(2000),
                budget_bytes: Some(usize::MAX),
                ..RangeRequest::full(Direction::Forward)
            },
        )
        .unwrap()
        .rows;
    assert_eq!(rows.iter().map(|r| r.pk[1].clone()).collect::<Vec<_>>(), (0..800).map(int).collect::<Vec<_>>());
    for r in &rows {
        let (PkValue::Integer(b), Some(Value::String(v))) = (&r.pk[1], r.get("v")) else { panic!("{r:?}") };
        assert!(v.starts_with(&format!("{b}:")), "row {b} holds its own value");
    }

    // A streamed row over a stored one fails the load at its position; the stored row is untouched.
    put(&store, "d", 250, &[("v", Value::Integer(7))]).unwrap();
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("d", 0..400, 500)).unwrap();
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(250))));
    assert!(store.get_row("t", &[s("d"), int(0)], &all()).unwrap().is_none());
    assert_eq!(store.get_row("t", &[s("d"), int(250)], &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(7)));

    // Dropped while streaming: nothing written, nothing left behind.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("e", 0..400, 500)).unwrap();
    assert_eq!(files(".sst"), 1);
    drop(load);
    assert_eq!(files(""), 0);
    assert!(store.get_row("t", &[s("e"), int(0)], &all()).unwrap().is_none());
}

#[test]
fn bulk_loads_small_and_ingested_are_atomic_and_checked() {
    let (dir, _c, store) = setup_ab(TableOptions::default());
    put(&store, "p", 5, &[("v", Value::Integer(1))]).unwrap();

    // Small: one write batch. A key already stored fails the whole load at commit, naming the first
    // offending row; nothing of the load is written.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("p", 0..10, 10)).unwrap();
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(5))));
    assert!(store.get_row("t", &[s("p"), int(0)], &all()).unwrap().is_none());
    // A key twice in one load: the second occurrence is the duplicate.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("q", 0..3, 10)).unwrap();
    load.add(&bulk_rows("q", 1..2, 10)).unwrap();
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(3))));
    assert!(store.get_row("t", &[s("q"), int(0)], &all()).unwrap().is_none());

    // Large (over 16 MiB): written as a table file and ingested.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("r", 0..20_000, 1000)).unwrap();
    load.commit().unwrap();
    let row = store.get_row("t", &[s("r"), int(19_999)], &all()).unwrap().unwrap();
    assert!(matches!(row.get("v"), Some(Value::String(v)) if v.starts_with("19999:")));
    assert_eq!(
        store
            .get_range("t", &RangeRequest { limit: Some(30_000), budget_bytes: Some(usize::MAX), ..RangeRequest::full(Direction::Forward) })
            .unwrap()
            .rows
            .len(),
        20_001
    );

    // An ingested load over stored keys is refused like a small one.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("s", 0..20_000, 1000)).unwrap();
    load.add(&bulk_rows("r", 7..8, 1000)).unwrap();
    assert!(matches!(load.commit(), Err(BulkError::Duplicate(20_000))));
    assert!(store.get_row("t", &[s("s"), int(0)], &all()).unwrap().is_none());

    // A transaction that wrote while a load was ingested cannot know whether they collided: refused.
    let txn = store.begin();
    txn.put_row("t", &[Some(s("u")), Some(int(1))], &[CellWrite::new("v", Value::Integer(1))], &Condition::expect_not_exist()).unwrap();
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("u", 0..20_000, 1000)).unwrap();
    load.commit().unwrap();
    assert!(matches!(txn.commit(), Err(StoreError::Conflict)));
    // A read-only one is unaffected: its snapshot predates the load.
    let txn = store.begin();
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("w", 0..10, 10)).unwrap();
    load.commit().unwrap();
    assert!(txn.get_row("t", &[s("w"), int(0)], &all()).unwrap().is_none());
    txn.commit().unwrap();

    // Ingested rows survive a restart (of an engine that keeps them).
    if !on_disk() {
        return;
    }
    drop(store);
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    assert!(store.get_row("t", &[s("u"), int(12_345)], &all()).unwrap().is_some());
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("bulk-")));
}

#[test]
fn bulk_loads_count_each_row_in_the_partition_statistics() {
    let (_dir, store) = bulk_store(16 << 20);
    let mut load = store.bulk_load("t").unwrap();
    load.add(&bulk_rows("a", 0..1000, 10)).unwrap();
    load.commit().unwrap();
    let parts = store.partitions("t").unwrap();
    assert_eq!(parts.iter().map(|p| p.writes).sum::<u64>(), 1000, "an import looks as busy as it is: {parts:?}");
    assert_eq!(parts.iter().map(|p| p.approx_rows).sum::<i64>(), 1000);
}

/// The values of `v` in index `by_v`, and the rows they name, in index order.
fn through_by_v(store: &Store) -> Vec<(Option<Value>, i64)> {
    let (rows, next) = store.index_rows("t", "by_v", &IndexRange::default(), None, 100_000).unwrap();
    assert!(next.is_none());
    rows.iter().map(|r| (r.get("v").cloned(), if let PkValue::Integer(b) = r.pk[1] { b } else { panic!() })).collect()
}

/// A bulk load makes its rows' index entries and writes them with the rows, at once: as a batch and as
/// ingested files. A unique index refuses two rows of the load with the same values, and a row whose values
/// a stored row holds; nothing of a refused load is written.
#[test]
fn bulk_loads_write_index_entries_and_check_unique_ones() {
    for ingest_bytes in [usize::MAX, 16 << 10] {
        let (_dir, store) = bulk_store(ingest_bytes);
        store.create_index("t", IndexDef::new("by_v", &["v".into()], true, false)).unwrap();
        put(&store, "p", 0, &[("v", Value::String("stored".into()))]).unwrap();
        let mut load = store.bulk_load("t").unwrap();
        // Keys in order (streamed into a file when large), values in no order.
        load.add(
            &(1..3_000)
                .map(|b| (vec![s("p"), int(b)], vec![CellWrite::new("v", Value::String(format!("v{}", (b * 7919) % 3_000)))]))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        load.add(&[(vec![s("p"), int(3_000)], vec![])]).unwrap();
        load.commit().unwrap();
        let entries = through_by_v(&store);
        assert_eq!(entries.len(), 3_001, "one entry per row, NULLs included");
        assert_eq!(entries[0], (Some(Value::String("stored".into())), 0));
        assert_eq!(entries.last().unwrap(), &(None, 3_000), "NULLs last");
        let text = |v: &Option<Value>| match v {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let values: Vec<String> = entries.iter().filter_map(|(v, _)| text(v)).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "in index order, each value once");
        assert_eq!(store.index_partitions("t").unwrap()[0].1[0].approx_rows, 3_001, "the load's entries count");

        // Two rows of one load with the same value: the second is refused, by the index.
        let mut load = store.bulk_load("t").unwrap();
        load.add(&[(vec![s("q"), int(1)], vec![CellWrite::new("v", Value::String("dup".into()))])]).unwrap();
        load.add(&bulk_rows("q", 2..2_000, 100)).unwrap();
        load.add(&[(vec![s("q"), int(0)], vec![CellWrite::new("v", Value::String("dup".into()))])]).unwrap();
        match load.commit() {
            Err(BulkError::Store(StoreError::UniqueViolation { index, values, .. })) => {
                assert_eq!((index.as_str(), values), ("by_v", vec![Some(Value::String("dup".into()))]))
            }
            other => panic!("{other:?}"),
        }
        // A value a stored row holds.
        let mut load = store.bulk_load("t").unwrap();
        load.add(&bulk_rows("q", 2..2_000, 100)).unwrap();
        load.add(&[(vec![s("q"), int(1)], vec![CellWrite::new("v", Value::String("stored".into()))])]).unwrap();
        assert!(matches!(load.commit(), Err(BulkError::Store(StoreError::UniqueViolation { .. }))));
        // A stored key: the key's error, as without indexes.
        let mut load = store.bulk_load("t").unwrap();
        load.add(&bulk_rows("q", 2..5, 100)).unwrap();
        load.add(&[(vec![s("p"), int(7)], vec![CellWrite::new("v", Value::String("new".into()))])]).unwrap();
        assert!(matches!(load.commit(), Err(BulkError::Duplicate(3))));
        assert_eq!(through_by_v(&store).len(), 3_001, "nothing of the refused loads was written");
        assert!(store.get_row("t", &[s("q"), int(2)], &all()).unwrap().is_none());

        // A value whose row has since changed is free again.
        put(&store, "p", 0, &[("v", Value::String("moved".into()))]).unwrap();
        let mut load = store.bulk_load("t").unwrap();
        load.add(&[(vec![s("q"), int(1)], vec![CellWrite::new("v", Value::String("stored".into()))])]).unwrap();
        load.commit().unwrap();

        // An index made while a load was under way: the load's rows would have no entries.
        let mut load = store.bulk_load("t").unwrap();
        load.add(&bulk_rows("r", 0..10, 10)).unwrap();
        store.create_index("t", IndexDef::new("by_v2", &["v".into()], false, false)).unwrap();
        assert!(matches!(load.commit(), Err(BulkError::Store(StoreError::Conflict))));
    }
}
