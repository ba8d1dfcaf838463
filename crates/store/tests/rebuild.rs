//! Moving a table's rows under a key of their own columns (`Store::rebuild`, SQL's `ALTER TABLE ... ADD
//! PRIMARY KEY` on a table created without one).

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

/// A table keyed by a generated row id, as the SQL layer makes one without a primary key: `id` then the
/// attribute cells `name` (text) and `n` (integer).
fn keyless(store: &Store) {
    let mut def = table("t", &[("id", PkType::Integer)], TableOptions { hash_prefix: 4, max_versions: 3, ..TableOptions::default() });
    def.primary_key[0].auto_increment = true;
    def.user_meta = b"before".to_vec();
    store.create_table(def).unwrap();
}

fn insert(store: &Store, name: Option<&str>, n: i64, version: i64) {
    let mut cells = vec![CellWrite { column: "n".into(), value: Value::Integer(n), version: Some(version) }];
    if let Some(name) = name {
        cells.push(CellWrite { column: "name".into(), value: Value::String(name.into()), version: Some(version) });
    }
    store.put_row("t", &[None], &cells, &Condition::ignore()).unwrap();
}

fn keyed_by_name() -> TableDef {
    let mut def = table("t", &[("name", PkType::String)], TableOptions { max_versions: 3, ..TableOptions::default() });
    def.user_meta = b"after".to_vec();
    def
}

fn all_rows(store: &Store) -> Vec<Row> {
    let req = RangeRequest { read: ReadSpec { max_versions: Some(10), ..ReadSpec::default() }, ..RangeRequest::full(Direction::Forward) };
    store.get_range("t", &req).unwrap().rows
}

#[test]
fn rows_move_under_their_own_key_with_their_versions() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("b"), 1, NOW - 10);
    insert(&store, Some("a"), 2, NOW - 20);
    // A second version of b's n.
    let b = all_rows(&store).into_iter().find(|r| r.cells("name").unwrap()[0].value == Value::String("b".into())).unwrap();
    store
        .update_row("t", &b.pk, &[("n".into(), UpdateOp::Put { value: Value::Integer(3), version: Some(NOW - 5) })], &Condition::ignore())
        .unwrap();

    store.rebuild(keyed_by_name(), &[]).unwrap();
    let def = store.table("t").unwrap();
    assert_eq!((def.primary_key[0].name.as_str(), def.user_meta.as_slice(), def.options.hash_prefix), ("name", &b"after"[..], 0));
    let rows = all_rows(&store);
    assert_eq!(rows.iter().map(|r| r.pk.clone()).collect::<Vec<_>>(), vec![vec![s("a")], vec![s("b")]], "in the new key's order");
    assert!(rows.iter().all(|r| r.cells("name").is_none()), "the key's column left the cells");
    let versions: Vec<(i64, Value)> = rows[1].cells("n").unwrap().iter().map(|c| (c.version, c.value.clone())).collect();
    assert_eq!(versions, vec![(NOW - 5, Value::Integer(3)), (NOW - 10, Value::Integer(1))], "every version kept");
    // The table takes writes under its new key; no temporary table is left.
    store.put_row("t", &[Some(s("c"))], &[CellWrite::new("n", Value::Integer(9))], &Condition::expect_not_exist()).unwrap();
    assert_eq!(store.table_names(), vec!["t".to_string()]);
}

#[test]
fn a_duplicate_or_a_missing_value_leaves_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("a"), 1, NOW);
    insert(&store, None, 2, NOW);
    insert(&store, Some("a"), 3, NOW);
    // Both: the duplicate is reported, as PostgreSQL builds the index before it checks NOT NULL.
    assert!(matches!(store.rebuild(keyed_by_name(), &[]), Err(RebuildError::Duplicate(k)) if k == vec![s("a")]));
    assert_eq!(all_rows(&store).len(), 3);
    assert_eq!(store.table("t").unwrap().user_meta, b"before");
    let rows = all_rows(&store);
    store
        .delete_row("t", &rows.iter().find(|r| r.cells("n").unwrap()[0].value == Value::Integer(3)).unwrap().pk, &Condition::ignore())
        .unwrap();
    assert!(matches!(store.rebuild(keyed_by_name(), &[]), Err(RebuildError::Null(c)) if c == "name"));
    assert_eq!(all_rows(&store).len(), 2);
    // Still the keyless table, taking writes; no temporary table is left.
    insert(&store, Some("z"), 4, NOW);
    assert_eq!(store.table_names(), vec!["t".to_string()]);
}

/// A transaction that wrote the table before its rows moved cannot commit into the old rows (55006).
#[test]
fn a_write_to_the_old_rows_cannot_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("a"), 1, NOW);
    let txn = store.begin();
    txn.put_row("t", &[None], &[CellWrite::new("name", Value::String("late".into()))], &Condition::ignore()).unwrap();
    store.rebuild(keyed_by_name(), &[]).unwrap();
    assert_eq!(txn.commit().unwrap_err().sqlstate(), "55006");
    assert_eq!(all_rows(&store).iter().map(|r| r.pk.clone()).collect::<Vec<_>>(), vec![vec![s("a")]]);
}

/// Under the same key: a column's cells left out (a dropped column's, before its name is used again), and
/// the generated keys' counters carried over.
#[test]
fn a_rebuild_under_the_same_key_drops_cells_and_keeps_counters() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("a"), 1, NOW);
    insert(&store, Some("b"), 2, NOW);
    let def = TableDef { user_meta: b"rebuilt".to_vec(), ..store.table("t").unwrap() };
    store.rebuild(def, &[("name".to_string(), None)]).unwrap();
    let rows = all_rows(&store);
    assert_eq!(rows.iter().map(|r| r.pk.clone()).collect::<Vec<_>>(), vec![vec![int(1)], vec![int(2)]], "the same keys");
    assert!(rows.iter().all(|r| r.cells("name").is_none() && r.cells("n").is_some()));
    let next = store.put_row("t", &[None], &[], &Condition::expect_not_exist()).unwrap().pk[0].clone();
    assert!(next > int(2), "the row id's sequence goes on: {next:?}");
}

#[test]
fn the_indexes_are_built_again_on_the_moved_rows_under_their_columns_new_names() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("b"), 1, NOW - 10);
    insert(&store, Some("a"), 1, NOW - 20);
    store.create_index("t", IndexDef::new("by_n", &["n".into()], false, false)).unwrap();
    store.create_index("t", IndexDef::new("t_name_key", &["name".into()], true, true)).unwrap();
    let mut def = keyed_by_name();
    def.user_meta = b"renamed".to_vec();
    store.rebuild(def, &[("n".into(), Some("m".into()))]).unwrap();
    let indexes = store.table("t").unwrap().indexes;
    let shape: Vec<(&str, Vec<String>, bool, bool)> =
        indexes.iter().map(|i| (i.name.as_str(), i.columns.clone(), i.unique, i.ready && i.constraint == i.unique)).collect();
    assert_eq!(shape, vec![("by_n", vec!["m".to_string()], false, true), ("t_name_key", vec!["name".to_string()], true, true)]);
    let (pks, _) =
        store.index_pks("t", "by_n", &IndexRange { eq: vec![Some(Value::Integer(1))], ..IndexRange::default() }, None, 10).unwrap();
    assert_eq!(pks, vec![vec![s("a")], vec![s("b")]], "entries of the moved rows, under their new keys");
}

/// One column's cells converted, every version; a value the conversion refuses stops the rebuild with the
/// caller's error and leaves the table as it was.
#[test]
fn a_converting_rebuild_converts_every_version_or_leaves_the_table_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("a"), 1, NOW - 10);
    let a = all_rows(&store)[0].pk.clone();
    store
        .update_row("t", &a, &[("n".into(), UpdateOp::Put { value: Value::Integer(2), version: Some(NOW - 5) })], &Condition::ignore())
        .unwrap();
    insert(&store, Some("b"), -1, NOW);
    let as_text = |v: &Value, _: &dyn Fn(&str) -> Option<Value>| -> Result<Option<Value>, Box<dyn std::error::Error + Send + Sync>> {
        match v {
            Value::Integer(i) if *i < 0 => Err("negative".into()),
            Value::Integer(i) => Ok(Some(Value::String(format!("#{i}")))),
            other => Ok(Some(other.clone())),
        }
    };
    let def = TableDef { user_meta: b"converted".to_vec(), ..store.table("t").unwrap() };
    let e = store.rebuild_converting(def.clone(), &Convert { column: "n", f: &as_text }).unwrap_err();
    assert!(matches!(&e, RebuildError::Convert(c) if c.to_string() == "negative"), "{e}");
    assert_eq!(store.table("t").unwrap().user_meta, b"before".to_vec(), "the table is as it was");
    assert_eq!(all_rows(&store).len(), 2);

    let b = all_rows(&store).into_iter().find(|r| r.cells("name").unwrap()[0].value == Value::String("b".into())).unwrap();
    store.delete_row("t", &b.pk, &Condition::ignore()).unwrap();
    store.rebuild_converting(def, &Convert { column: "n", f: &as_text }).unwrap();
    let rows = all_rows(&store);
    let versions: Vec<&Value> = rows[0].cells("n").unwrap().iter().map(|c| &c.value).collect();
    assert_eq!(versions, vec![&Value::String("#2".into()), &Value::String("#1".into())], "every version, newest first");
    assert_eq!(store.table("t").unwrap().user_meta, b"converted".to_vec());
}

/// A rebuilt table's indexes keep their columns' directions and their NULLS NOT DISTINCT.
#[test]
fn a_rebuild_keeps_an_index_s_directions_and_nulls_not_distinct() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    keyless(&store);
    insert(&store, Some("a"), 1, NOW);
    let ix =
        IndexDef::new("by_n", &["n".into(), "name".into()], true, false).with_descending(vec![true, false]).with_nulls_not_distinct(true);
    store.create_index("t", ix).unwrap();
    let def = TableDef { user_meta: b"rebuilt".to_vec(), ..store.table("t").unwrap() };
    store.rebuild(def, &[]).unwrap();
    let ix = &store.table("t").unwrap().indexes[0];
    assert_eq!((ix.descending.clone(), ix.nulls_not_distinct, ix.unique), (vec![true, false], true, true));
}
