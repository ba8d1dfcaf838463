//! Secondary indexes: entries written with their rows on every write path, built for rows already there,
//! read a page at a time, gone with the table's rows, and never missing a row a read could find.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

fn put(a: &dyn Access, k: i64, card: Option<i64>) {
    let mut cells = vec![CellWrite::new("v", Value::Integer(k))];
    if let Some(c) = card {
        cells.push(CellWrite::new("card", Value::Integer(c)));
    }
    a.put_row("t", &[Some(int(k))], &cells, &Condition::ignore()).unwrap();
}

fn by_card(a: &dyn Access, card: Option<i64>) -> Vec<i64> {
    let mut out = Vec::new();
    let mut after = None;
    loop {
        let (pks, next) = a
            .index_pks("t", "by_card", &IndexRange { eq: vec![card.map(Value::Integer)], ..IndexRange::default() }, after.as_deref(), 2)
            .unwrap();
        out.extend(pks.iter().map(|pk| match pk[0] {
            PkValue::Integer(i) => i,
            _ => unreachable!(),
        }));
        match next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

fn store(dir: &std::path::Path, clock: Arc<ManualClock>, options: TableOptions) -> Store {
    let store = open(dir, clock);
    store.create_table(table("t", &[("k", PkType::Integer)], options)).unwrap();
    store
}

#[test]
fn every_write_path_keeps_the_entries_in_step() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    put(&store, 1, Some(10));
    put(&store, 2, Some(20));
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![1], "rows there before are indexed");

    put(&store, 3, Some(10));
    store.insert_rows("t", &[(vec![Some(int(4))], vec![CellWrite::new("card", Value::Integer(10))])]).unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![1, 3, 4], "in index order: the row keys after the value");
    store
        .update_row("t", &[int(1)], &[("card".into(), UpdateOp::Put { value: Value::Integer(20), version: None })], &Condition::ignore())
        .unwrap();
    store.update_row("t", &[int(2)], &[("card".into(), UpdateOp::Increment(5))], &Condition::ignore()).unwrap();
    store.delete_row("t", &[int(3)], &Condition::ignore()).unwrap();
    store.update_row("t", &[int(4)], &[("card".into(), UpdateOp::DeleteAll)], &Condition::ignore()).unwrap();
    assert_eq!(by_card(&store, Some(10)), Vec::<i64>::new());
    assert_eq!(by_card(&store, Some(20)), vec![1]);
    assert_eq!(by_card(&store, Some(25)), vec![2]);
    assert_eq!(by_card(&store, None), vec![4], "a row without the column is under NULL");

    // In a transaction: its own entries are read, and a rollback takes them away with the rows.
    let txn = store.begin_with_view();
    put(&txn, 5, Some(30));
    assert_eq!(by_card(&txn, Some(30)), vec![5]);
    txn.rollback().unwrap();
    assert_eq!(by_card(&store, Some(30)), Vec::<i64>::new());

    // TRUNCATE and DROP take the entries along.
    store.truncate_table("t").unwrap();
    assert_eq!(by_card(&store, Some(20)), Vec::<i64>::new());
    put(&store, 6, Some(20));
    assert_eq!(by_card(&store, Some(20)), vec![6]);
    store.drop_index("t", "by_card").unwrap();
    assert_eq!(store.index_pks("t", "by_card", &IndexRange::default(), None, 10).unwrap_err().sqlstate(), "42704");
    assert!(store.table("t").unwrap().indexes.is_empty());
}

#[test]
fn entries_cover_rows_whose_newest_versions_expire() {
    // Versions expire from the oldest up, so the newest stored value is the one a read sees while any is:
    // an entry may outlive its value, never the other way round.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let store = store(dir.path(), clock.clone(), TableOptions { ttl: 60, max_versions: 3, ..TableOptions::default() });
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    let at = |k: i64, card: i64, version: i64| {
        let put = UpdateOp::Put { value: Value::Integer(card), version: Some(version) };
        store.update_row("t", &[int(k)], &[("card".into(), put)], &Condition::ignore()).unwrap();
    };
    at(1, 10, NOW - 30_000);
    at(1, 11, NOW - 10_000);
    // An older version written after a newer one does not become the newest.
    at(1, 9, NOW - 50_000);
    assert_eq!(by_card(&store, Some(11)), vec![1]);
    assert_eq!(by_card(&store, Some(10)), Vec::<i64>::new());
    // Deleting the newest version shows the one before it, and the entry follows.
    at(2, 20, NOW - 20_000);
    at(2, 21, NOW - 5_000);
    store.update_row("t", &[int(2)], &[("card".into(), UpdateOp::DeleteVersion(NOW - 5_000))], &Condition::ignore()).unwrap();
    assert_eq!((by_card(&store, Some(20)), by_card(&store, Some(21))), (vec![2], vec![]));
    clock.advance(45_000);
    // Every version has expired but the newest: still under it.
    assert_eq!(by_card(&store, Some(11)), vec![1]);
    let row = store.get_row("t", &[int(1)], &ReadSpec::default()).unwrap().unwrap();
    assert_eq!(row.get("card"), Some(&Value::Integer(11)));
}

#[test]
fn a_transaction_that_wrote_before_an_index_was_made_cannot_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    let txn = store.begin_with_view();
    put(&txn, 1, Some(10));
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    // Its row would have no entry.
    assert!(matches!(txn.commit(), Err(StoreError::Conflict)));
    // A transaction begun after writes its entries.
    let txn = store.begin_with_view();
    put(&txn, 2, Some(10));
    txn.commit().unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![2]);
    // A bulk load writes its rows' entries with them (bulk.rs has its own tests), as insert_rows does.
    let mut load = store.bulk_load("t").unwrap();
    load.add(&[(vec![int(4)], vec![CellWrite::new("card", Value::Integer(10))])]).unwrap();
    load.commit().unwrap();
    store.insert_rows("t", &[(vec![Some(int(3))], vec![CellWrite::new("card", Value::Integer(10))])]).unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![2, 3, 4]);
}

#[test]
fn index_ddl_in_a_transaction_is_undone_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    put(&store, 1, Some(10));
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).create_index("t", IndexDef::new("by_card", &["card".into()], false, false), &|| false).unwrap();
    // Read at a snapshot that holds the entries the build wrote.
    assert_eq!(by_card(&txn, Some(10)), vec![1]);
    txn.rollback().unwrap();
    assert!(store.table("t").unwrap().indexes.is_empty());

    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).drop_index("t", "by_card").unwrap();
    txn.rollback().unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![1], "a rolled-back DROP INDEX keeps its entries");
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).truncate_table("t").unwrap();
    put(&txn, 2, Some(10));
    assert_eq!(by_card(&txn, Some(10)), vec![2], "a TRUNCATE's new table has the indexes, empty");
    txn.commit().unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![2]);
}

fn unique_store(dir: &std::path::Path) -> Store {
    let store = store(dir, Arc::new(ManualClock::new(NOW)), TableOptions::default());
    store.create_index("t", IndexDef::new("by_card", &["card".into()], true, false)).unwrap();
    store
}

fn refused(r: Result<WriteOutcome>) -> bool {
    matches!(r, Err(StoreError::UniqueViolation { ref index, ref values, .. }) if index == "by_card" && values == &[Some(Value::Integer(10))])
}

#[test]
fn a_unique_index_refuses_a_second_row_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = unique_store(dir.path());
    put(&store, 1, Some(10));
    let cells = [CellWrite::new("card", Value::Integer(10))];
    assert!(refused(store.put_row("t", &[Some(int(2))], &cells, &Condition::ignore())));
    assert!(store.get_row("t", &[int(2)], &ReadSpec::default()).unwrap().is_none(), "nothing written");
    // NULLs never collide; the row itself may write its value again.
    put(&store, 3, None);
    put(&store, 4, None);
    put(&store, 1, Some(10));
    // A value left by a row is free for another; a row's stale entry does not hold it.
    store
        .update_row("t", &[int(1)], &[("card".into(), UpdateOp::Put { value: Value::Integer(11), version: None })], &Condition::ignore())
        .unwrap();
    put(&store, 2, Some(10));
    assert_eq!(by_card(&store, Some(10)), vec![2]);
    assert_eq!(by_card(&store, None), vec![3, 4]);
    // Within one multi-row insert.
    let rows = vec![
        (vec![Some(int(5))], vec![CellWrite::new("card", Value::Integer(12))]),
        (vec![Some(int(6))], vec![CellWrite::new("card", Value::Integer(12))]),
    ];
    assert!(matches!(store.insert_rows("t", &rows), Err(StoreError::UniqueViolation { .. })));
    assert_eq!(by_card(&store, Some(12)), Vec::<i64>::new());
}

#[test]
fn concurrent_writers_of_one_unique_value_do_not_both_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = unique_store(dir.path());
    let (a, b) = (store.begin_with_view(), store.begin_with_view());
    put(&a, 1, Some(10));
    put(&b, 2, Some(10));
    a.commit().unwrap();
    assert!(matches!(b.commit(), Err(StoreError::Conflict)));
    assert_eq!(by_card(&store, Some(10)), vec![1]);
    // Retried, the second finds the first's value.
    let cells = [CellWrite::new("card", Value::Integer(10))];
    assert!(refused(store.put_row("t", &[Some(int(2))], &cells, &Condition::ignore())));
}

#[test]
fn building_a_unique_index_over_duplicates_fails_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    put(&store, 1, Some(10));
    put(&store, 2, None);
    put(&store, 3, None);
    put(&store, 4, Some(10));
    let err = store.create_index("t", IndexDef::new("by_card", &["card".into()], true, false)).unwrap_err();
    assert!(matches!(err, StoreError::UniqueViolation { ref values, .. } if values == &[Some(Value::Integer(10))]), "{err}");
    assert!(store.table("t").unwrap().indexes.is_empty());
    store.delete_row("t", &[int(4)], &Condition::ignore()).unwrap();
    store.create_index("t", IndexDef::new("by_card", &["card".into()], true, false)).unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![1]);
}

#[test]
fn a_range_of_the_next_column_after_equal_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    store.create_index("t", IndexDef::new("by_v_card", &["v".into(), "card".into()], false, false)).unwrap();
    for k in 0..10 {
        let cells = [CellWrite::new("v", Value::Integer(k % 2)), CellWrite::new("card", Value::Integer(k))];
        store.put_row("t", &[Some(int(k))], &cells, &Condition::ignore()).unwrap();
    }
    store.put_row("t", &[Some(int(10))], &[CellWrite::new("v", Value::Integer(0))], &Condition::ignore()).unwrap();
    // Each range read forward and backward, two entries a page.
    let read = |lower: Option<(i64, bool)>, upper: Option<(i64, bool)>| -> Vec<i64> {
        let mut both = [false, true].map(|backward| {
            let range = IndexRange {
                eq: vec![Some(Value::Integer(0))],
                lower: lower.map(|(v, i)| (Value::Integer(v), i)),
                upper: upper.map(|(v, i)| (Value::Integer(v), i)),
                backward,
            };
            let (mut out, mut after) = (Vec::new(), None);
            loop {
                let (pks, next) = store.index_pks("t", "by_v_card", &range, after.as_deref(), 2).unwrap();
                out.extend(pks.iter().map(|pk| if let PkValue::Integer(i) = pk[0] { i } else { unreachable!() }));
                match next {
                    Some(n) => after = Some(n),
                    None => return out,
                }
            }
        });
        both[1].reverse();
        assert_eq!(both[0], both[1], "backward reads the same entries in the opposite order");
        both[0].clone()
    };
    assert_eq!(read(Some((2, true)), Some((6, false))), vec![2, 4]);
    assert_eq!(read(Some((2, false)), Some((6, true))), vec![4, 6]);
    // Open ends cover values only: row 10, with no card, is in neither.
    assert_eq!(read(Some((5, false)), None), vec![6, 8]);
    assert_eq!(read(None, Some((2, true))), vec![0, 2]);
    assert_eq!(read(None, None), vec![0, 2, 4, 6, 8, 10], "equality alone: NULLs too");
    assert_eq!(read(Some((7, true)), Some((3, true))), Vec::<i64>::new());
}

/// A table of 2,500 rows, each with a card of 0, 1 or 2, not indexed yet.
fn carded(dir: &std::path::Path) -> Store {
    let store = store(dir, Arc::new(ManualClock::new(NOW)), TableOptions::default());
    for k in 0..2_500 {
        put(&store, k, Some(k % 3));
    }
    store
}

#[test]
fn a_build_asked_to_stop_leaves_no_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = carded(dir.path());
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() == 3
    };
    let err = store.create_index_until("t", IndexDef::new("by_card", &["card".into()], false, false), &stop).unwrap_err();
    assert_eq!((err.sqlstate(), asked.get()), ("57014", 3), "asked before rows 0, 1000 and 2000");
    assert!(store.table("t").unwrap().indexes.is_empty());
    assert_eq!(store.index_pks("t", "by_card", &IndexRange::default(), None, 10).unwrap_err().sqlstate(), "42704");
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    assert_eq!(by_card(&store, Some(1)).len(), 833);
}

/// A row a writer changes during a build, after the build's snapshot and before the build reaches it, gets
/// an entry from the build under its old value. The build saw the write, so it sweeps its index before
/// the index is ready: the row is found under its new value only, and one entry per row is left.
#[test]
fn a_build_racing_a_writer_leaves_no_stale_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = carded(dir.path());
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        if asked.get() == 2 {
            // Asked after 1,000 rows: row 2,400 is still ahead, to be read at the build's snapshot (card 0).
            put(&store, 2_400, Some(7));
        }
        false
    };
    store.create_index_until("t", IndexDef::new("by_card", &["card".into()], false, false), &stop).unwrap();
    assert_eq!(by_card(&store, Some(7)), vec![2_400]);
    assert!(!by_card(&store, Some(0)).contains(&2_400));
    assert_eq!(store.index_entries("t", "by_card").unwrap(), 2_500, "one entry per row, none stale");
}

/// The same race on an INCLUDE column alone: the build's entry for the row is under the right key but holds
/// the old value; the sweep writes it again, so a read of the entries alone finds what the row holds.
#[test]
fn a_build_racing_a_writer_of_an_included_column_leaves_its_new_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = carded(dir.path());
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        if asked.get() == 2 {
            let cells = [CellWrite::new("v", Value::Integer(-1)), CellWrite::new("card", Value::Integer(0))];
            store.put_row("t", &[Some(int(2_400))], &cells, &Condition::ignore()).unwrap();
        }
        false
    };
    let spec = IndexDef::new("by_card", &["card".into()], false, false).with_include(vec!["v".into()]);
    store.create_index_until("t", spec, &stop).unwrap();
    let range = IndexRange { eq: vec![Some(Value::Integer(0))], ..IndexRange::default() };
    let (rows, next) = store.index_rows("t", "by_card", &range, None, 10_000).unwrap();
    assert!(next.is_none());
    assert_eq!(rows.len(), 834);
    for r in &rows {
        let PkValue::Integer(k) = r.pk[0] else { panic!() };
        let want = if k == 2_400 { -1 } else { k };
        assert_eq!((r.get("card"), r.get("v")), (Some(&Value::Integer(0)), Some(&Value::Integer(want))), "row {k}");
    }
}

/// A writer that inserts a unique index's values after the build checked them for a row it read, and
/// before the build wrote that row's entry: the table then holds them twice, and the build fails, as a
/// build over duplicates does. Before, the build's entry replaced the writer's, the build succeeded, and
/// the index missed the writer's row.
#[test]
fn a_writer_of_values_a_unique_build_has_checked_fails_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    for k in 0..2_500 {
        put(&store, k, Some(k));
    }
    let asked = std::cell::Cell::new(0);
    let stop = || {
        asked.set(asked.get() + 1);
        if asked.get() == 2 {
            // Asked after 1,000 rows: row 10's entry is checked and not yet written.
            put(&store, 5_000, Some(10));
        }
        false
    };
    let e = store.create_index_until("t", IndexDef::new("by_card", &["card".into()], true, false), &stop).unwrap_err();
    assert!(matches!(&e, StoreError::UniqueViolation { values, .. } if values == &vec![Some(Value::Integer(10))]), "{e:?}");
    assert!(store.table("t").unwrap().indexes.is_empty(), "no index left behind");
}

/// A build tells its watch where it is: scanning the rows (every 1,000, of about as many as the table's
/// statistics count), then, as a row was written meanwhile, validating its entries.
#[test]
fn a_build_reports_its_progress() {
    struct Watch<'a> {
        store: &'a Store,
        asked: std::cell::Cell<usize>,
        seen: std::cell::RefCell<Vec<(BuildPhase, u64, u64)>>,
    }
    impl BuildWatch for Watch<'_> {
        fn stop(&self) -> bool {
            self.asked.set(self.asked.get() + 1);
            if self.asked.get() == 2 {
                put(self.store, 2_400, Some(7));
            }
            false
        }
        fn progress(&self, phase: BuildPhase, done: u64, total: u64) {
            self.seen.borrow_mut().push((phase, done, total));
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let store = carded(dir.path());
    let watch = Watch { store: &store, asked: Default::default(), seen: Default::default() };
    store.create_index_until("t", IndexDef::new("by_card", &["card".into()], false, false), &watch).unwrap();
    use BuildPhase::*;
    assert_eq!(
        watch.seen.into_inner(),
        vec![(Scanning, 0, 2_500), (Scanning, 1_000, 2_500), (Scanning, 2_000, 2_500), (Validating, 2_500, 2_500)]
    );
    assert_eq!(Scanning.name(), "building index: scanning table");
}

/// A migration tool runs several migrations, and writes its version table, in one transaction: an index
/// made after those writes is built (from the committed rows), the transaction commits, and until then it
/// reads the table without the index, whose entries its snapshot does not hold. After rows of the table
/// itself were written in it, the rows move through the transaction to a table that has the index: it
/// reads through the index at once, and other transactions may not use the table until it ends.
#[test]
fn an_index_made_in_a_transaction_after_writes_to_other_tables() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    store.create_table(table("versions", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    put(&store, 1, Some(7));
    let mut txn = store.begin_with_view();
    txn.put_row("versions", &[Some(int(1))], &[], &Condition::ignore()).unwrap();
    store.ddl(Some(&mut txn)).create_index("t", IndexDef::new("by_card", &["card".into()], false, false), &|| false).unwrap();
    assert!(!txn.index_readable("t", "by_card"), "built after the transaction's snapshot");
    assert!(store.index_readable("t", "by_card"));
    put(&txn, 2, Some(7));
    txn.commit().unwrap();
    assert_eq!(by_card(&store, Some(7)), vec![1, 2], "the committed row's entry, and the transaction's");

    for commit in [false, true] {
        let mut txn = store.begin_with_view();
        put(&txn, 3, Some(8));
        store.ddl(Some(&mut txn)).create_index("t", IndexDef::new("by_c", &["card".into()], false, false), &|| false).unwrap();
        assert!(txn.index_readable("t", "by_c"));
        let eights = txn.index_pks("t", "by_c", &IndexRange { eq: vec![Some(Value::Integer(8))], ..IndexRange::default() }, None, 10);
        assert_eq!(eights.unwrap().0, vec![vec![int(3)]], "the transaction's own row, through the index");
        let other = store.get_row("t", &[int(1)], &ReadSpec::default()).unwrap_err();
        assert_eq!(other.sqlstate(), "55P03", "the table holds rows only the transaction sees");
        match commit {
            true => txn.commit().unwrap(),
            false => txn.rollback().unwrap(),
        }
        let pks = store.index_pks("t", "by_c", &IndexRange { eq: vec![Some(Value::Integer(7))], ..IndexRange::default() }, None, 10);
        match commit {
            true => assert_eq!(pks.unwrap().0.len(), 2, "rows 1 and 2, each with its entry"),
            false => assert!(pks.is_err(), "the index was rolled back with the rows"),
        }
        assert_eq!(by_card(&store, Some(7)), vec![1, 2]);
        assert_eq!(store.get_row("t", &[int(3)], &ReadSpec::default()).unwrap().is_some(), commit);
    }
}

/// A descending column: its entries run from the largest value down, NULLs first; ranges cover the same
/// values as on an ascending one.
#[test]
fn ranges_of_a_descending_column() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), Arc::new(ManualClock::new(NOW)), TableOptions::default());
    let ix = IndexDef::new("by_card_desc", &["card".into()], false, false).with_descending(vec![true]);
    store.create_index("t", ix).unwrap();
    for k in 0..6 {
        put(&store, k, (k != 3).then_some(k * 10));
    }
    let read = |lower: Option<(i64, bool)>, upper: Option<(i64, bool)>, backward: bool| -> Vec<i64> {
        let range = IndexRange {
            eq: vec![],
            lower: lower.map(|(v, i)| (Value::Integer(v), i)),
            upper: upper.map(|(v, i)| (Value::Integer(v), i)),
            backward,
        };
        let (pks, _) = store.index_pks("t", "by_card_desc", &range, None, 100).unwrap();
        pks.iter().map(|pk| if let PkValue::Integer(i) = pk[0] { i } else { unreachable!() }).collect()
    };
    assert_eq!(read(None, None, false), vec![3, 5, 4, 2, 1, 0], "NULL first, then the largest value down");
    assert_eq!(read(None, None, true), vec![0, 1, 2, 4, 5, 3]);
    assert_eq!(read(Some((10, true)), Some((40, false)), false), vec![2, 1]);
    assert_eq!(read(Some((10, false)), None, false), vec![5, 4, 2]);
    assert_eq!(read(None, Some((20, true)), true), vec![0, 1, 2]);
    assert_eq!(read(Some((25, true)), Some((25, true)), false), Vec::<i64>::new());
    let eq = IndexRange { eq: vec![Some(Value::Integer(40))], ..IndexRange::default() };
    assert_eq!(store.index_pks("t", "by_card_desc", &eq, None, 10).unwrap().0, vec![vec![int(4)]]);
}

#[test]
fn entries_of_expired_rows_go_with_the_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let store = store(dir.path(), clock.clone(), TableOptions { ttl: 10, ..TableOptions::default() });
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    put(&store, 1, Some(10));
    clock.advance(5_000);
    put(&store, 2, Some(10));
    clock.advance(6_000);
    // Row 1 expired: its entry is still there (a read checks the row), until a compaction drops the row.
    assert_eq!(by_card(&store, Some(10)), vec![1, 2]);
    store.compact().unwrap();
    assert_eq!(by_card(&store, Some(10)), vec![2], "the expired row's entry is gone, the live one stays");
    assert!(store.get_row("t", &[int(2)], &all()).unwrap().is_some());
}
