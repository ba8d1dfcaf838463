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
