//! Values stored out of line: long strings and binaries live under keys of their own, every read path
//! brings them back, a write that leaves them alone does not touch them, and a write, a delete, an expiry,
//! a TRUNCATE or a DROP that ends them takes them away.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

const BIG: usize = 5000;

fn big(c: char) -> Value {
    Value::String(c.to_string().repeat(BIG))
}

fn bin(b: u8) -> Value {
    Value::Binary(vec![b; BIG])
}

fn store(options: TableOptions) -> (tempfile::TempDir, Arc<ManualClock>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let config = StoreConfig { clock: clock.clone(), maintenance_interval: None, inline_value_bytes: 100, ..StoreConfig::default() };
    let store = open_with(dir.path(), config);
    store.create_table(table("t", &[("a", PkType::String), ("b", PkType::Integer)], options)).unwrap();
    (dir, clock, store)
}

fn row(a: &dyn Access, b: i64) -> Option<Row> {
    a.get_row("t", &[s("k"), int(b)], &ReadSpec { max_versions: Some(10), ..ReadSpec::default() }).unwrap()
}

fn set(column: &str, value: Value) -> (String, UpdateOp) {
    (column.into(), UpdateOp::Put { value, version: None })
}

#[test]
fn every_read_path_brings_values_back() {
    let (_dir, clock, store) = store(TableOptions { max_versions: 3, ..TableOptions::default() });
    put(&store, "k", 1, &[("doc", big('a')), ("blob", bin(1)), ("n", Value::Integer(1)), ("short", Value::String("s".into()))]).unwrap();
    clock.advance(1);
    store.update_row("t", &[s("k"), int(1)], &[set("doc", big('b'))], &Condition::ignore()).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 3, "two versions of doc and one of blob");

    let r = row(&store, 1).unwrap();
    assert_eq!(
        r.columns.iter().find(|(c, _)| c == "doc").unwrap().1.iter().map(|c| c.value.clone()).collect::<Vec<_>>(),
        [big('b'), big('a')]
    );
    assert_eq!(r.get("blob"), Some(&bin(1)));
    assert_eq!(r.get("short"), Some(&Value::String("s".into())));
    let batch = store.batch_get("t", &[vec![s("k"), int(1)], vec![s("k"), int(2)]], &all()).unwrap();
    assert_eq!(batch[0].as_ref().unwrap().get("doc"), Some(&big('b')));
    assert!(batch[1].is_none());
    let range = store.get_range("t", &RangeRequest::full(Direction::Forward)).unwrap();
    assert_eq!(range.rows[0].get("blob"), Some(&bin(1)));
    let mut req = RangeRequest::full(Direction::Backward);
    req.read.columns = Some(vec!["n".into(), "doc".into(), "blob".into()]);
    let latest = store.get_range_latest("t", &req).unwrap();
    let values: Vec<Option<Value>> = latest.cells.into_iter().map(|c| c.map(|c| c.value)).collect();
    assert_eq!(values, [Some(Value::Integer(1)), Some(big('b')), Some(bin(1))]);

    // Inside a transaction: its own long values, and its snapshot's.
    let txn = store.begin_with_view();
    txn.put_row("t", &[Some(s("k")), Some(int(2))], &[CellWrite::new("doc", big('c'))], &Condition::ignore()).unwrap();
    assert_eq!(row(&txn, 2).unwrap().get("doc"), Some(&big('c')));
    store.update_row("t", &[s("k"), int(1)], &[set("doc", big('d'))], &Condition::ignore()).unwrap();
    assert_eq!(row(&txn, 1).unwrap().get("doc"), Some(&big('b')), "the snapshot's value, not the newer one");
    txn.rollback().unwrap();
    assert!(row(&store, 2).is_none());
    assert_eq!(store.outside_values("t").unwrap(), 4, "the rolled-back value is not there; doc keeps three versions");
}

#[test]
fn writes_keep_only_the_values_rows_refer_to() {
    let (_dir, clock, store) = store(TableOptions { max_versions: 2, ..TableOptions::default() });
    put(&store, "k", 1, &[("doc", big('a')), ("n", Value::Integer(0))]).unwrap();
    for i in 1..=5 {
        clock.advance(1);
        store.update_row("t", &[s("k"), int(1)], &[("n".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
        assert_eq!(row(&store, 1).unwrap().get("n"), Some(&Value::Integer(i)));
    }
    assert_eq!(store.outside_values("t").unwrap(), 1, "updates of other cells leave the long value where it is");
    assert!(store.raw_row("t", &[s("k"), int(1)]).unwrap().unwrap().has_outside());

    // max_versions = 2: the third version of doc pushes the first out, and its value with it.
    for c in ['b', 'c'] {
        clock.advance(1);
        store.update_row("t", &[s("k"), int(1)], &[set("doc", big(c))], &Condition::ignore()).unwrap();
    }
    assert_eq!(store.outside_values("t").unwrap(), 2);
    // A short value in its place, and the column deleted.
    clock.advance(1);
    store.update_row("t", &[s("k"), int(1)], &[set("doc", Value::String("short".into()))], &Condition::ignore()).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 1, "the version still kept (c) stays");
    store.update_row("t", &[s("k"), int(1)], &[("doc".into(), UpdateOp::DeleteAll)], &Condition::ignore()).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 0);

    // A put over the row replaces it whole; a delete takes everything.
    put(&store, "k", 1, &[("doc", big('e')), ("blob", bin(2))]).unwrap();
    put(&store, "k", 1, &[("blob", bin(3))]).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 1);
    assert_eq!(row(&store, 1).unwrap().get("blob"), Some(&bin(3)));
    store.delete_row("t", &[s("k"), int(1)], &Condition::ignore()).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 0);

    // A multi-row insert writes them too; TRUNCATE and DROP take them away.
    store.insert_rows("t", &[(vec![Some(s("k")), Some(int(7))], vec![CellWrite::new("doc", big('f'))])]).unwrap();
    assert_eq!(row(&store, 7).unwrap().get("doc"), Some(&big('f')));
    assert_eq!(store.outside_values("t").unwrap(), 1);
    store.truncate_table("t").unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 0);
    put(&store, "k", 1, &[("doc", big('g'))]).unwrap();
    store.drop_table("t").unwrap();
    store.create_table(table("t", &[("a", PkType::String), ("b", PkType::Integer)], TableOptions::default())).unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 0);
}

#[test]
fn expired_values_are_removed_by_compaction() {
    let (_dir, clock, store) = store(TableOptions { ttl: 10, ..TableOptions::default() });
    put(&store, "k", 1, &[("doc", big('a'))]).unwrap();
    clock.advance(5_000);
    put(&store, "k", 2, &[("doc", big('b'))]).unwrap();
    clock.advance(6_000);
    assert!(row(&store, 1).is_none(), "expired");
    assert_eq!(row(&store, 2).unwrap().get("doc"), Some(&big('b')));
    store.compact().unwrap();
    assert_eq!(store.outside_values("t").unwrap(), 1, "the expired version's value is gone, the live one stays");
    assert_eq!(row(&store, 2).unwrap().get("doc"), Some(&big('b')));
}

#[test]
fn conditions_indexes_and_rebuilds_read_values_out_of_line() {
    let (_dir, _clock, store) = store(TableOptions::default());
    put(&store, "k", 1, &[("doc", big('a'))]).unwrap();
    let cond = |v: Value| Condition {
        row: RowExistence::Ignore,
        column: Some(ColumnCondition::Single {
            column: "doc".into(),
            op: CompareOp::Eq,
            value: v,
            pass_if_missing: false,
            latest_version_only: true,
        }),
    };
    assert!(matches!(
        store.update_row("t", &[s("k"), int(1)], &[set("n", Value::Integer(1))], &cond(big('z'))),
        Err(StoreError::ConditionFailed(_))
    ));
    store.update_row("t", &[s("k"), int(1)], &[set("n", Value::Integer(1))], &cond(big('a'))).unwrap();

    // An index built over a long value, then kept in step; a second row with it is a duplicate.
    store.create_index("t", IndexDef::new("by_doc", &["doc".into()], true, false)).unwrap();
    let lookup = |v: Value| store.index_pks("t", "by_doc", &IndexRange { eq: vec![Some(v)], ..IndexRange::default() }, None, 10).unwrap().0;
    assert_eq!(lookup(big('a')), vec![vec![s("k"), int(1)]]);
    assert!(matches!(put(&store, "k", 2, &[("doc", big('a'))]), Err(StoreError::UniqueViolation { .. })));
    store.update_row("t", &[s("k"), int(1)], &[set("n", Value::Integer(2))], &Condition::ignore()).unwrap();
    assert_eq!(lookup(big('a')), vec![vec![s("k"), int(1)]], "an update of another cell keeps the entry");
    store.update_row("t", &[s("k"), int(1)], &[set("doc", big('b'))], &Condition::ignore()).unwrap();
    assert!(lookup(big('a')).is_empty());
    assert_eq!(lookup(big('b')), vec![vec![s("k"), int(1)]]);

    // A rebuild (a renamed column) carries the values to the new table.
    let mut def = store.table("t").unwrap();
    def.indexes.clear();
    store.drop_index("t", "by_doc").unwrap();
    store.rebuild(def, &[("doc".into(), Some("body".into()))]).unwrap();
    let r = row(&store, 1).unwrap();
    assert_eq!((r.get("body"), r.get("doc")), (Some(&big('b')), None));
    store.update_row("t", &[s("k"), int(1)], &[set("n", Value::Integer(3))], &Condition::ignore()).unwrap();
    store.update_row("t", &[s("k"), int(1)], &[set("body", big('c'))], &Condition::ignore()).unwrap();
    assert_eq!(row(&store, 1).unwrap().get("body"), Some(&big('c')));
    assert_eq!(store.outside_values("t").unwrap(), 1);
}
