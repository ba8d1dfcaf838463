//! DDL inside a transaction (`Store::ddl` with a `Txn`): undone by a rollback, a rollback to a savepoint, a
//! transaction dropped unended and a crash; kept by a commit; other transactions' DDL on the names it
//! touched refused.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`), and its crash
/// tests kill a process in the middle of such a transaction.
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

fn store(dir: &std::path::Path) -> Store {
    let store = open(dir, Arc::new(ManualClock::new(NOW)));
    store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    put(&store, "t", 1);
    store
}

fn put(a: &dyn Access, table: &str, k: i64) {
    a.put_row(table, &[Some(int(k))], &[CellWrite::new("v", Value::Integer(k * 10))], &Condition::ignore()).unwrap();
}

fn keys(store: &Store, table: &str) -> Vec<i64> {
    store
        .get_range(table, &RangeRequest::full(Direction::Forward))
        .unwrap()
        .rows
        .iter()
        .map(|r| match r.pk[0] {
            PkValue::Integer(i) => i,
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn a_rollback_undoes_every_kind_of_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).create_table(table("new", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    put(&txn, "new", 5);
    store.ddl(Some(&mut txn)).set_user_meta("t", b"changed".to_vec()).unwrap();
    store.ddl(Some(&mut txn)).set_options("t", TableOptions { max_versions: 4, ..TableOptions::default() }).unwrap();
    store.ddl(Some(&mut txn)).rename_table("t", "u").unwrap();
    store.ddl(Some(&mut txn)).truncate_table("u").unwrap();
    put(&txn, "u", 2);
    store.ddl(Some(&mut txn)).drop_table("u").unwrap();
    assert_eq!(store.table_names(), vec!["new".to_string()], "a table set aside is in no list");
    assert!(txn.did_ddl());
    txn.rollback().unwrap();

    assert_eq!(store.table_names(), vec!["t".to_string()]);
    let def = store.table("t").unwrap();
    assert_eq!((def.user_meta.as_slice(), def.options.max_versions), (&b""[..], 1));
    assert_eq!(keys(&store, "t"), vec![1]);
    // The table works as before, and its name is free for anyone's DDL again.
    put(&store, "t", 3);
    store.ddl(None).set_user_meta("t", b"after".to_vec()).unwrap();
    assert_eq!(keys(&store, "t"), vec![1, 3]);
}

#[test]
fn a_commit_keeps_the_changes_and_drops_what_was_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    store.create_table(table("gone", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    let mut txn = store.begin_with_view();
    put(&txn, "t", 7);
    store.ddl(Some(&mut txn)).truncate_table("t").unwrap();
    put(&txn, "t", 8);
    store.ddl(Some(&mut txn)).drop_table("gone").unwrap();
    store.ddl(Some(&mut txn)).create_table(table("gone", &[("id", PkType::String)], TableOptions::default())).unwrap();
    txn.commit().unwrap();
    assert_eq!(keys(&store, "t"), vec![8], "rows before the TRUNCATE, the transaction's own too, are gone");
    assert_eq!(store.table("gone").unwrap().primary_key[0].name, "id");
    assert_eq!(store.table_names(), vec!["gone".to_string(), "t".to_string()]);
}

#[test]
fn a_rollback_to_a_savepoint_undoes_the_changes_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).create_table(table("a", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    txn.savepoint();
    store.ddl(Some(&mut txn)).rename_table("a", "b").unwrap();
    store.ddl(Some(&mut txn)).drop_table("t").unwrap();
    txn.rollback_to_savepoint().unwrap();
    assert_eq!(store.table_names(), vec!["a".to_string(), "t".to_string()]);
    txn.commit().unwrap();
    assert_eq!(store.table_names(), vec!["a".to_string(), "t".to_string()]);
    assert_eq!(keys(&store, "t"), vec![1]);
}

#[test]
fn another_transactions_ddl_on_a_claimed_name_is_refused_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let mut txn = store.begin_with_view();
    store.ddl(Some(&mut txn)).drop_table("t").unwrap();
    let err = store.ddl(None).create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap_err();
    assert_eq!(err.sqlstate(), "55P03", "{err}");
    let mut other = store.begin_with_view();
    assert_eq!(store.ddl(Some(&mut other)).drop_table("t").unwrap_err().sqlstate(), "55P03");
    // A transaction dropped unended (its connection gone) is rolled back, its DDL too.
    drop(txn);
    assert_eq!(keys(&store, "t"), vec![1]);
    store.ddl(Some(&mut other)).drop_table("t").unwrap();
    other.commit().unwrap();
    assert!(store.table_names().is_empty());
}

#[test]
fn a_rebuild_in_a_transaction_is_undone_and_reads_its_moved_rows() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    put(&store, "t", 2);
    let mut txn = store.begin_with_view();
    let def = TableDef { user_meta: b"rebuilt".to_vec(), ..store.table("t").unwrap() };
    store.ddl(Some(&mut txn)).rebuild(def.clone(), &[("v".into(), Some("w".into()))]).unwrap();
    // The transaction reads at a snapshot taken after the rows moved.
    let row = txn.get_row("t", &[int(2)], &ReadSpec::default()).unwrap().unwrap();
    assert!(row.cells("w").is_some());
    txn.rollback().unwrap();
    assert_eq!(store.table("t").unwrap().user_meta, b"");
    assert_eq!(keys(&store, "t"), vec![1, 2]);
    put(&store, "t", 3);

    // After rows were written in the transaction, the rows move through it, its own included; other
    // transactions may not use the table until it ends.
    let mut txn = store.begin_with_view();
    put(&txn, "t", 4);
    store.ddl(Some(&mut txn)).rebuild(def.clone(), &[("v".into(), Some("w".into()))]).unwrap();
    let row = txn.get_row("t", &[int(4)], &ReadSpec::default()).unwrap().unwrap();
    assert_eq!(row.get("w"), Some(&Value::Integer(40)));
    assert_eq!(store.get_row("t", &[int(1)], &ReadSpec::default()).unwrap_err().sqlstate(), "55P03");
    let other = store.begin_with_view();
    assert_eq!(other.put_row("t", &[Some(int(9))], &[], &Condition::ignore()).unwrap_err().sqlstate(), "55P03");
    other.rollback().unwrap();
    txn.commit().unwrap();
    assert_eq!(keys(&store, "t"), vec![1, 2, 3, 4]);
    assert_eq!(store.get_row("t", &[int(3)], &ReadSpec::default()).unwrap().unwrap().get("w"), Some(&Value::Integer(30)));
    assert_eq!(store.table("t").unwrap().user_meta, b"rebuilt");

    // A row another transaction committed after the snapshot would be missed: a conflict, nothing changed.
    let mut txn = store.begin_with_view();
    put(&txn, "t", 5);
    put(&store, "t", 6);
    let err = store.ddl(Some(&mut txn)).rebuild(def, &[("w".into(), Some("v".into()))]).unwrap_err();
    assert!(matches!(err, RebuildError::Store(StoreError::Conflict)), "{err}");
    txn.rollback().unwrap();
    assert_eq!(keys(&store, "t"), vec![1, 2, 3, 4, 6]);
    assert!(store.get_row("t", &[int(4)], &ReadSpec::default()).unwrap().unwrap().get("w").is_some(), "the old table is back");
}

/// A crash in the middle of a transaction (its journal left, no `Drop` run): the next open undoes its DDL.
/// In memory, a second store opened over the same engine stands for the restart; on disk, the crash tests
/// of `tabula-kv-rocks` kill a process.
#[test]
fn the_next_open_undoes_an_unended_transactions_ddl_and_finishes_a_committed_one() {
    if on_disk() {
        return;
    }
    let kv: Arc<dyn tabula_kv::Engine> = Arc::new(tabula_kv::memory::MemoryEngine::new());
    let config = || StoreConfig { maintenance_interval: None, ..StoreConfig::default() };
    let first = Store::open(kv.clone(), config()).unwrap();
    first.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    first.create_table(table("dropped", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    put(&first, "t", 1);
    let mut committed = first.begin_with_view();
    first.ddl(Some(&mut committed)).drop_table("dropped").unwrap();
    committed.commit().unwrap();
    let mut txn = first.begin_with_view();
    first.ddl(Some(&mut txn)).drop_table("t").unwrap();
    first.ddl(Some(&mut txn)).create_table(table("t", &[("other", PkType::String)], TableOptions::default())).unwrap();
    first.ddl(Some(&mut txn)).create_table(table("extra", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    std::mem::forget(txn);
    std::mem::forget(first);

    let second = Store::open(kv, config()).unwrap();
    assert_eq!(second.table_names(), vec!["t".to_string()]);
    assert_eq!(second.table("t").unwrap().primary_key[0].name, "k");
    assert_eq!(keys(&second, "t"), vec![1]);
}

/// A private table (a SQL session's temporary table) is an ordinary table under a name no SQL text can
/// hold: read and written as any table, listed nowhere, and gone when the store next opens (its session
/// cannot outlive the process).
#[test]
fn a_private_table_is_listed_nowhere_and_gone_at_the_next_open() {
    if on_disk() {
        return;
    }
    let kv: Arc<dyn tabula_kv::Engine> = Arc::new(tabula_kv::memory::MemoryEngine::new());
    let config = || StoreConfig { maintenance_interval: None, ..StoreConfig::default() };
    let first = Store::open(kv.clone(), config()).unwrap();
    let private = value::private_table_name(3, "t");
    first.create_table(table(&private, &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    first.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    put(&first, &private, 7);
    assert_eq!(keys(&first, &private), vec![7]);
    assert_eq!(keys(&first, "t"), Vec::<i64>::new(), "the public table of the same name is another table");
    assert_eq!(first.table_names(), vec!["t".to_string()]);
    assert_eq!(value::public_part(&private), "t");
    let renamed = value::private_table_name(3, "u");
    first.rename_table(&private, &renamed).unwrap();
    assert!(first.create_table(table(&format!("{}x", value::PRIVATE_PREFIX), &[("k", PkType::Integer)], TableOptions::default())).is_err());
    std::mem::forget(first);

    let second = Store::open(kv, config()).unwrap();
    assert!(second.table(&renamed).is_err(), "a private table does not outlive its process");
    assert_eq!(second.table_names(), vec!["t".to_string()]);
}
