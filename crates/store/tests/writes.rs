//! Writes whose answer SQL depends on: versions the server assigns, SQL's addition beside Tablestore's
//! increment, and generated keys after given ones.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

fn setup(options: TableOptions) -> (tempfile::TempDir, Arc<ManualClock>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let store = open(dir.path(), clock.clone());
    store.create_table(table("t", &[("k", PkType::Integer)], options)).unwrap();
    (dir, clock, store)
}

fn versions(store: &Store, pk: &[PkValue], column: &str) -> Vec<i64> {
    let spec = ReadSpec { max_versions: Some(100), ..ReadSpec::default() };
    let row = store.get_row("t", pk, &spec).unwrap().unwrap();
    row.cells(column).unwrap().iter().map(|c| c.version).collect()
}

#[test]
fn versions_the_server_assigns_increase_within_one_millisecond() {
    let (_d, clock, store) = setup(TableOptions { max_versions: 10, ..TableOptions::default() });
    let pk = [int(1)];
    let set = |v: i64| UpdateOp::Put { value: Value::Integer(v), version: None };
    for v in 0..3 {
        let out = store.update_row("t", &pk, &[("v".into(), set(v))], &Condition::ignore()).unwrap();
        assert_eq!(out.version, NOW + v, "the write's version is reported");
    }
    assert_eq!(versions(&store, &pk, "v"), vec![NOW + 2, NOW + 1, NOW], "three writes in one millisecond, three versions");
    // Every column of a row: a write of another column comes after them too.
    store.update_row("t", &pk, &[("w".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
    assert_eq!(versions(&store, &pk, "w"), vec![NOW + 3]);
    // Once the clock passes them, versions are the clock's again.
    clock.set(NOW + 100);
    store.update_row("t", &pk, &[("v".into(), set(9))], &Condition::ignore()).unwrap();
    assert_eq!(versions(&store, &pk, "v")[0], NOW + 100);
    // A given version is kept as given.
    store
        .update_row("t", &pk, &[("v".into(), UpdateOp::Put { value: Value::Integer(1), version: Some(NOW + 50) })], &Condition::ignore())
        .unwrap();
    assert!(versions(&store, &pk, "v").contains(&(NOW + 50)));
}

#[test]
fn sql_addition_leaves_a_missing_value_missing_where_the_increment_counts_it_as_zero() {
    let (_d, _c, store) = setup(TableOptions::default());
    let pk = [int(1)];
    store.put_row("t", &[Some(int(1))], &[CellWrite::new("other", Value::Integer(0))], &Condition::ignore()).unwrap();
    let out =
        store.update_row("t", &pk, &[("a".into(), UpdateOp::Add(5)), ("i".into(), UpdateOp::Increment(5))], &Condition::ignore()).unwrap();
    assert_eq!(out.increments, vec![("i".to_string(), 5)]);
    let row = store.get_row("t", &pk, &all()).unwrap().unwrap();
    assert_eq!(row.get("a"), None, "NULL + 5 is NULL");
    assert_eq!(row.get("i"), Some(&Value::Integer(5)));
    store.update_row("t", &pk, &[("i".into(), UpdateOp::Add(2)), ("i".into(), UpdateOp::Add(3))], &Condition::ignore()).unwrap();
    assert_eq!(store.get_row("t", &pk, &all()).unwrap().unwrap().get("i"), Some(&Value::Integer(10)));
    store
        .update_row("t", &pk, &[("i".into(), UpdateOp::Put { value: Value::Integer(i64::MAX), version: None })], &Condition::ignore())
        .unwrap();
    let e = store.update_row("t", &pk, &[("i".into(), UpdateOp::Add(1))], &Condition::ignore()).unwrap_err();
    assert_eq!(e.sqlstate(), "22003");
}

#[test]
fn a_given_value_for_a_generated_key_moves_its_counter_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    let mut def = table("g", &[("p", PkType::String), ("id", PkType::Integer)], TableOptions::default());
    def.primary_key[1].auto_increment = true;
    store.create_table(def).unwrap();
    let insert = |p: &str, id: Option<i64>| {
        store.put_row("g", &[Some(s(p)), id.map(int)], &[CellWrite::new("v", Value::Integer(0))], &Condition::expect_not_exist())
    };
    assert_eq!(insert("a", None).unwrap().pk[1], int(1));
    insert("a", Some(5)).unwrap();
    assert_eq!(insert("a", None).unwrap().pk[1], int(6), "past the given value");
    // A smaller given value leaves the counter where it is; each partition-key value counts on its own.
    insert("a", Some(3)).unwrap();
    assert_eq!(insert("a", None).unwrap().pk[1], int(7));
    assert_eq!(insert("b", None).unwrap().pk[1], int(1));
    // A duplicate fails, and does not hold generation back.
    assert!(matches!(insert("a", Some(7)), Err(StoreError::RowExists)));
    assert_eq!(insert("a", None).unwrap().pk[1], int(8));
}

/// A generated partition-key column (an ORM's `id bigserial PRIMARY KEY`) draws from one sequence per
/// table: unique across concurrent writers, increasing, moved past given values, never rolled back, and
/// above every value handed out before a reopen.
#[test]
fn a_generated_partition_key_draws_from_one_sequence_per_table() {
    let dir = tempfile::tempdir().unwrap();
    let define = |store: &Store| {
        let mut def = table("seq", &[("id", PkType::Integer)], TableOptions { hash_prefix: 4, ..TableOptions::default() });
        def.primary_key[0].auto_increment = true;
        store.create_table(def)
    };
    let last = {
        let store = Arc::new(open(dir.path(), Arc::new(ManualClock::new(NOW))));
        define(&store).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || {
                    (0..100)
                        .map(|_| store.put_row("seq", &[None], &[], &Condition::expect_not_exist()).unwrap().pk[0].clone())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut ids: Vec<PkValue> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        ids.sort();
        assert_eq!(ids, (1..=800).map(int).collect::<Vec<_>>(), "unique, and without gaps while nothing failed");

        // Many rows at once (a multi-row INSERT): drawn first, then written as one bulk load.
        let rows: Vec<(Vec<Option<PkValue>>, Vec<CellWrite>)> =
            vec![(vec![None], vec![]), (vec![Some(int(900))], vec![]), (vec![None], vec![])];
        assert_eq!(store.insert_rows("seq", &rows).unwrap(), vec![vec![int(801)], vec![int(900)], vec![int(901)]], "past the given 900");
        assert_eq!(store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0], int(902));

        // A given value far ahead of the reserved block; a smaller one moves nothing.
        store.put_row("seq", &[Some(int(100_000))], &[], &Condition::expect_not_exist()).unwrap();
        store.put_row("seq", &[Some(int(7_000))], &[], &Condition::expect_not_exist()).unwrap();
        assert_eq!(store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0], int(100_001));
        // A given value in a bulk load (complete keys) moves it too.
        store.insert_rows("seq", &[(vec![Some(int(200_000))], vec![]), (vec![Some(int(200_001))], vec![])]).unwrap();
        assert_eq!(store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0], int(200_002));

        // A value drawn by a transaction that rolls back is not handed out again, as with PostgreSQL's nextval.
        let txn = store.begin();
        assert_eq!(txn.put_row("seq", &[None], &[], &Condition::expect_not_exist()).unwrap().pk[0], int(200_003));
        txn.rollback().unwrap();
        // A duplicate given value fails and leaves the sequence going.
        assert!(matches!(store.put_row("seq", &[Some(int(5))], &[], &Condition::expect_not_exist()), Err(StoreError::RowExists)));
        let next = store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0].clone();
        assert_eq!(next, int(200_004));
        next
    };
    if on_disk() {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let after = store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0].clone();
        assert!(after > last, "after a reopen, above every value handed out before ({after:?} after {last:?})");
        // Dropped with its table: a new table of the name starts again at 1.
        store.drop_table("seq").unwrap();
        define(&store).unwrap();
        assert_eq!(store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0], int(1));
    }
}

/// `setval`: the next value drawn is the one set, below values handed out before if so asked, and what
/// was set holds across a reopen. A table without a generated partition-key column has no sequence.
#[test]
fn a_sequence_goes_on_from_where_it_is_set() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let mut def = table("seq", &[("id", PkType::Integer)], TableOptions::default());
        def.primary_key[0].auto_increment = true;
        store.create_table(def).unwrap();
        assert_eq!(store.sequence_next("seq").unwrap(), 1);
        assert_eq!(store.sequence_next("seq").unwrap(), 2);
        store.sequence_restart("seq", 1000, false).unwrap();
        assert_eq!(store.sequence_state("seq").unwrap(), (1000, false));
        assert_eq!(store.put_row("seq", &[None], &[], &Condition::ignore()).unwrap().pk[0], int(1000));
        store.sequence_restart("seq", 2, true).unwrap();
        assert_eq!(store.sequence_state("seq").unwrap(), (1, true), "1 counts as drawn");
        assert_eq!(store.sequence_next("seq").unwrap(), 2, "back below values handed out, when asked");
        store.create_table(table("plain", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
        assert_eq!(store.sequence_next("plain").unwrap_err().sqlstate(), "0A000");
        assert_eq!(store.sequence_restart("nosuch", 1, false).unwrap_err().sqlstate(), "42P01");
    }
    if on_disk() {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let next = store.sequence_next("seq").unwrap();
        assert!(next > 2 && next < 1000, "after the block reserved from 2 on, not after 1000: {next}");
        store.sequence_restart("seq", 500, false).unwrap();
    }
    if on_disk() {
        // Whether a value was drawn since the restart outlives the server.
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        assert_eq!(store.sequence_state("seq").unwrap(), (500, false));
        assert_eq!(store.sequence_next("seq").unwrap(), 500);
        assert_eq!(store.sequence_state("seq").unwrap(), (500, true));
    }
}

#[test]
fn a_limited_transaction_fails_past_its_size_and_a_savepoint_gives_the_room_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig { maintenance_interval: None, max_transaction_bytes: 10_000, ..StoreConfig::default() };
    let store = open_with(dir.path(), config);
    store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    let row = |txn: &Txn, k: i64| {
        let cells = [CellWrite::new("v", Value::String("x".repeat(100)))];
        txn.put_row("t", &[Some(int(k))], &cells, &Condition::ignore())
    };
    // Unlimited unless asked: a transaction of the store's own callers (a COPY into an indexed table).
    let txn = store.begin();
    for k in 0..200 {
        row(&txn, k).unwrap();
    }
    assert!(txn.written_bytes() > 10_000);
    txn.rollback().unwrap();

    let txn = store.begin();
    txn.limit_size();
    assert_eq!(txn.size_limit(), Some(10_000));
    for k in 0..10 {
        row(&txn, k).unwrap();
    }
    let after_ten = txn.written_bytes();
    assert!(after_ten > 1000 && after_ten < 10_000, "{after_ten}");
    txn.savepoint();
    let failed = (10..200).map(|k| row(&txn, k)).find_map(Result::err);
    assert!(matches!(failed, Some(StoreError::TransactionTooLarge { limit: 10_000 })), "{failed:?}");
    assert_eq!(failed.unwrap().sqlstate(), "54000");
    // Back to the savepoint: its writes and their bytes are gone, and the rows before it stay.
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(txn.written_bytes(), after_ten);
    row(&txn, 10).unwrap();
    txn.commit().unwrap();
    let keys: Vec<PkValue> =
        store.get_range("t", &RangeRequest::full(Direction::Forward)).unwrap().rows.into_iter().map(|r| r.pk[0].clone()).collect();
    assert_eq!(keys, (0..11).map(int).collect::<Vec<_>>());
}
