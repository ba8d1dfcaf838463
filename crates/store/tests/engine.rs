//! Engine behaviour: operations, conditions, versions, TTL, errors, ranges, transactions.

mod common;

/// In memory here; `tabula-kv-rocks` runs this suite again on RocksDB (its `tests/store.rs`).
#[allow(dead_code)]
const ENGINE: common::EngineChoice = common::MEMORY;

use std::sync::Arc;

use common::*;
use tabula_store::*;

#[test]
fn put_get_update_delete() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    put(&store, "x", 1, &[("v", Value::Integer(5)), ("s", Value::String("hi".into()))]).unwrap();
    let row = store.get_row("t", &[s("x"), int(1)], &all()).unwrap().unwrap();
    assert_eq!(row.get("v"), Some(&Value::Integer(5)));
    assert_eq!(row.get("s"), Some(&Value::String("hi".into())));
    assert_eq!(row.cells("v").unwrap()[0].version, NOW);

    // put_row replaces the row.
    put(&store, "x", 1, &[("w", Value::Boolean(true))]).unwrap();
    let row = store.get_row("t", &[s("x"), int(1)], &all()).unwrap().unwrap();
    assert_eq!(row.get("v"), None);
    assert_eq!(row.get("w"), Some(&Value::Boolean(true)));

    let out = store
        .update_row(
            "t",
            &[s("x"), int(1)],
            &[("n".into(), UpdateOp::Increment(3)), ("w".into(), UpdateOp::DeleteAll)],
            &Condition::expect_exist(),
        )
        .unwrap();
    assert!(out.existed);
    assert_eq!(out.increments, vec![("n".to_string(), 3)]);
    let row = store.get_row("t", &[s("x"), int(1)], &all()).unwrap().unwrap();
    assert_eq!(row.get("n"), Some(&Value::Integer(3)));
    assert_eq!(row.get("w"), None);

    let out = store.delete_row("t", &[s("x"), int(1)], &Condition::ignore()).unwrap();
    assert!(out.existed);
    assert!(store.get_row("t", &[s("x"), int(1)], &all()).unwrap().is_none());
}

#[test]
fn row_conditions() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    let pk = [Some(s("x")), Some(int(1))];
    let cells = [CellWrite::new("v", Value::Integer(1))];
    store.put_row("t", &pk, &cells, &Condition::expect_not_exist()).unwrap();
    assert_eq!(store.put_row("t", &pk, &cells, &Condition::expect_not_exist()).unwrap_err(), StoreError::RowExists);
    assert_eq!(
        store.update_row("t", &[s("y"), int(1)], &[("v".into(), UpdateOp::Increment(1))], &Condition::expect_exist()).unwrap_err(),
        StoreError::RowNotFound
    );
    assert!(store.get_row("t", &[s("y"), int(1)], &all()).unwrap().is_none(), "a failed condition writes nothing");

    let cond = |op, v, pass_if_missing| Condition {
        row: RowExistence::ExpectExist,
        column: Some(ColumnCondition::Single {
            column: "v".into(),
            op,
            value: Value::Integer(v),
            pass_if_missing,
            latest_version_only: true,
        }),
    };
    let set = |v: i64| vec![("v".to_string(), UpdateOp::Put { value: Value::Integer(v), version: None })];
    let pk = [s("x"), int(1)];
    assert!(matches!(store.update_row("t", &pk, &set(2), &cond(CompareOp::Gt, 5, false)), Err(StoreError::ConditionFailed(_))));
    store.update_row("t", &pk, &set(2), &cond(CompareOp::Eq, 1, false)).unwrap();
    // AND / OR / NOT and a missing column.
    let complex = Condition {
        row: RowExistence::Ignore,
        column: Some(ColumnCondition::And(vec![
            ColumnCondition::Not(Box::new(ColumnCondition::Single {
                column: "v".into(),
                op: CompareOp::Lt,
                value: Value::Integer(2),
                pass_if_missing: false,
                latest_version_only: true,
            })),
            ColumnCondition::Or(vec![
                ColumnCondition::Single {
                    column: "missing".into(),
                    op: CompareOp::Eq,
                    value: Value::Integer(0),
                    pass_if_missing: true,
                    latest_version_only: true,
                },
                ColumnCondition::Single {
                    column: "v".into(),
                    op: CompareOp::Eq,
                    value: Value::Integer(100),
                    pass_if_missing: false,
                    latest_version_only: true,
                },
            ]),
        ])),
    };
    store.update_row("t", &pk, &set(3), &complex).unwrap();
    assert_eq!(store.get_row("t", &pk, &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(3)));
}

#[test]
fn versions_and_max_versions() {
    let (_d, clock, store) = setup_ab(TableOptions { max_versions: 2, ..TableOptions::default() });
    let pk = [s("x"), int(1)];
    for (i, v) in [10, 20, 30].iter().enumerate() {
        clock.advance(1);
        store
            .update_row("t", &pk, &[("v".into(), UpdateOp::Put { value: Value::Integer(*v), version: None })], &Condition::ignore())
            .unwrap();
        let _ = i;
    }
    let spec = ReadSpec { max_versions: Some(10), ..ReadSpec::default() };
    let row = store.get_row("t", &pk, &spec).unwrap().unwrap();
    let versions: Vec<i64> = row.cells("v").unwrap().iter().map(|c| c.version).collect();
    assert_eq!(versions, vec![NOW + 3, NOW + 2], "only max_versions newest versions are kept");

    // Explicit versions, exact-version and time-range reads.
    store.set_options("t", TableOptions { max_versions: 5, ..TableOptions::default() }).unwrap();
    store
        .update_row("t", &pk, &[("v".into(), UpdateOp::Put { value: Value::Integer(1), version: Some(NOW - 1000) })], &Condition::ignore())
        .unwrap();
    let exact = ReadSpec { time_range: Some(TimeRange::Exact(NOW - 1000)), max_versions: Some(5), ..ReadSpec::default() };
    assert_eq!(store.get_row("t", &pk, &exact).unwrap().unwrap().get("v"), Some(&Value::Integer(1)));
    let range = ReadSpec { time_range: Some(TimeRange::Range { start: NOW, end: NOW + 3 }), max_versions: Some(5), ..ReadSpec::default() };
    let got: Vec<i64> = store.get_row("t", &pk, &range).unwrap().unwrap().cells("v").unwrap().iter().map(|c| c.version).collect();
    assert_eq!(got, vec![NOW + 2]);
    // Lowering max_versions hides versions at once.
    store.set_options("t", TableOptions { max_versions: 1, ..TableOptions::default() }).unwrap();
    assert_eq!(store.get_row("t", &pk, &spec).unwrap().unwrap().cells("v").unwrap().len(), 1);
    // Deleting the visible version does not bring back the ones max_versions hid, nor does raising it again.
    store.update_row("t", &pk, &[("v".into(), UpdateOp::DeleteVersion(NOW + 3))], &Condition::ignore()).unwrap();
    assert_eq!(store.get_row("t", &pk, &spec).unwrap().unwrap().cells("v"), None);
    store.set_options("t", TableOptions { max_versions: 5, ..TableOptions::default() }).unwrap();
    assert_eq!(store.get_row("t", &pk, &spec).unwrap().unwrap().cells("v"), None);
}

#[test]
fn hidden_data_stays_hidden_when_ttl_or_max_versions_is_raised() {
    let (_d, clock, store) = setup_ab(TableOptions { ttl: 10, max_versions: 3, ..TableOptions::default() });
    let versions = |pk: &[PkValue]| -> Vec<i64> {
        let spec = ReadSpec { max_versions: Some(10), ..ReadSpec::default() };
        store.get_row("t", pk, &spec).unwrap().map_or(vec![], |r| r.cells("v").map_or(vec![], |c| c.iter().map(|c| c.version).collect()))
    };
    let (a, b) = ([s("a"), int(1)], [s("b"), int(1)]);
    for i in 0..3 {
        clock.advance(1000);
        for pk in [&a, &b] {
            store
                .update_row("t", pk, &[("v".into(), UpdateOp::Put { value: Value::Integer(i), version: None })], &Condition::ignore())
                .unwrap();
        }
    }
    // Lowered then raised max_versions: still one version, before and after a compaction.
    store.set_options("t", TableOptions { ttl: 10, max_versions: 1, ..TableOptions::default() }).unwrap();
    assert_eq!(versions(&a), vec![NOW + 3000]);
    assert_eq!(store.raw_row("t", &a).unwrap().unwrap().column("v").unwrap().len(), 3, "hidden, still stored");
    store.set_options("t", TableOptions { ttl: 10, max_versions: 3, ..TableOptions::default() }).unwrap();
    assert_eq!(versions(&a), vec![NOW + 3000]);
    store.compact().unwrap();
    assert_eq!(versions(&a), vec![NOW + 3000]);
    clock.advance(1);
    store.update_row("t", &a, &[("v".into(), UpdateOp::Put { value: Value::Integer(7), version: None })], &Condition::ignore()).unwrap();
    assert_eq!(versions(&a), vec![NOW + 3001, NOW + 3000], "versions written since are kept up to the new count");

    // Expired under ttl 10, then the ttl raised to an hour: still expired, and so is the row of b.
    clock.advance(10_000);
    assert_eq!(versions(&a), vec![]);
    assert!(store.get_row("t", &b, &all()).unwrap().is_none());
    store.set_options("t", TableOptions { ttl: 3600, max_versions: 3, ..TableOptions::default() }).unwrap();
    assert!(store.get_row("t", &b, &all()).unwrap().is_none());
    assert!(store.raw_row("t", &b).unwrap().is_some(), "hidden, still stored");
    // A version the old ttl had expired cannot be written either.
    let old = [CellWrite { column: "v".into(), value: Value::Integer(1), version: Some(NOW + 3000) }];
    assert!(matches!(
        store.put_row("t", &[Some(s("c")), Some(int(1))], &old, &Condition::ignore()),
        Err(StoreError::VersionOutOfWindow { .. })
    ));
    store.compact().unwrap();
    assert!(store.raw_row("t", &b).unwrap().is_none(), "compaction removed it");
    // ... while what is written now lives an hour.
    store.update_row("t", &b, &[("v".into(), UpdateOp::Put { value: Value::Integer(1), version: None })], &Condition::ignore()).unwrap();
    clock.advance(60_000);
    assert_eq!(versions(&b).len(), 1);
    let def = store.table("t").unwrap();
    assert_eq!((def.options.hidden_before, def.options.stored_versions), (NOW + 3001, 3));
}

#[test]
fn a_row_written_with_explicit_versions_expires_with_them() {
    let (_d, clock, store) = setup_ab(TableOptions { ttl: 10, max_version_offset: 60, ..TableOptions::default() });
    let cells = [CellWrite { column: "v".into(), value: Value::Integer(1), version: Some(NOW - 8000) }];
    store.put_row("t", &[Some(s("a")), Some(int(1))], &cells, &Condition::ignore()).unwrap();
    store
        .update_row(
            "t",
            &[s("b"), int(1)],
            &[("v".into(), UpdateOp::Put { value: Value::Integer(1), version: Some(NOW - 8000) })],
            &Condition::ignore(),
        )
        .unwrap();
    // A row of key columns only lives a ttl from its write.
    store.put_row("t", &[Some(s("c")), Some(int(1))], &[], &Condition::ignore()).unwrap();
    clock.advance(1999);
    for k in ["a", "b", "c"] {
        assert!(store.get_row("t", &[s(k), int(1)], &all()).unwrap().is_some(), "{k}");
    }
    clock.advance(1);
    assert!(store.get_row("t", &[s("a"), int(1)], &all()).unwrap().is_none(), "its only cell expired: so did the row");
    assert!(store.get_row("t", &[s("b"), int(1)], &all()).unwrap().is_none());
    assert!(store.get_row("t", &[s("c"), int(1)], &all()).unwrap().is_some());
    clock.advance(8000);
    assert!(store.get_row("t", &[s("c"), int(1)], &all()).unwrap().is_none());
}

#[test]
fn ttl_example_rejects_an_expired_version() {
    // ttl one day; at 2016-07-21 00:00:00 UTC a version of 2016-07-20 00:00:00 UTC is already expired.
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_469_059_200_000));
    let store = open(dir.path(), clock.clone());
    let opts = TableOptions { ttl: 86400, max_version_offset: 10 * 86400, ..TableOptions::default() };
    store.create_table(table("t", &[("k", PkType::String)], opts)).unwrap();
    let cells = [CellWrite { column: "v".into(), value: Value::Integer(1), version: Some(1_468_944_000_000) }];
    let err = store.put_row("t", &[Some(s("a"))], &cells, &Condition::ignore()).unwrap_err();
    assert!(matches!(err, StoreError::VersionOutOfWindow { .. }), "{err:?}");
    assert_eq!(err.sqlstate(), "22008");
    assert!(err.to_string().contains("[1468972800001, 1469923200000)"), "the error names the window: {err}");
    assert!(store.get_row("t", &[s("a")], &all()).unwrap().is_none());
    // One millisecond inside the window is accepted; it expires exactly a day after its version.
    let cells = [CellWrite { column: "v".into(), value: Value::Integer(1), version: Some(1_468_972_800_001) }];
    store.put_row("t", &[Some(s("a"))], &cells, &Condition::ignore()).unwrap();
    assert!(store.get_row("t", &[s("a")], &all()).unwrap().unwrap().get("v").is_some());
    clock.set(1_468_972_800_001 + 86_400_000);
    assert!(store.get_row("t", &[s("a")], &all()).unwrap().map(|r| r.columns.is_empty()).unwrap_or(true));
}

#[test]
fn max_version_offset_window() {
    let (_d, _c, store) = setup_ab(TableOptions { max_version_offset: 60, ..TableOptions::default() });
    let w = |v| {
        store.put_row(
            "t",
            &[Some(s("x")), Some(int(1))],
            &[CellWrite { column: "v".into(), value: Value::Integer(1), version: Some(v) }],
            &Condition::ignore(),
        )
    };
    assert!(w(NOW - 60_000).is_ok());
    assert!(matches!(w(NOW - 60_001), Err(StoreError::VersionOutOfWindow { .. })));
    assert!(w(NOW + 59_999).is_ok());
    assert!(matches!(w(NOW + 60_000), Err(StoreError::VersionOutOfWindow { .. })));
}

#[test]
fn ttl_and_max_versions_before_and_after_compaction() {
    let (_d, clock, store) = setup_ab(TableOptions { ttl: 10, max_versions: 3, ..TableOptions::default() });
    let pk = [s("x"), int(1)];
    for i in 0..3 {
        clock.advance(1000);
        store
            .update_row("t", &pk, &[("v".into(), UpdateOp::Put { value: Value::Integer(i), version: None })], &Condition::ignore())
            .unwrap();
    }
    put(&store, "y", 1, &[("v", Value::Integer(9))]).unwrap();
    // Lower max_versions: hidden at once, still on disk until compaction.
    store.set_options("t", TableOptions { ttl: 10, max_versions: 1, ..TableOptions::default() }).unwrap();
    let spec = ReadSpec { max_versions: Some(10), ..ReadSpec::default() };
    assert_eq!(store.get_row("t", &pk, &spec).unwrap().unwrap().cells("v").unwrap().len(), 1);
    assert_eq!(store.raw_row("t", &pk).unwrap().unwrap().column("v").unwrap().len(), 3);
    store.compact().unwrap();
    assert_eq!(store.raw_row("t", &pk).unwrap().unwrap().column("v").unwrap().len(), 1, "compaction removed surplus versions");

    // Expire everything: invisible at once, then physically gone.
    clock.advance(11_000);
    assert!(store.get_row("t", &pk, &all()).unwrap().is_none());
    assert!(store.get_range("t", &RangeRequest::full(Direction::Forward)).unwrap().rows.is_empty());
    assert!(store.raw_row("t", &pk).unwrap().is_some());
    store.compact().unwrap();
    assert!(store.raw_row("t", &pk).unwrap().is_none(), "compaction removed the expired row");
    assert!(store.raw_row("t", &[s("y"), int(1)]).unwrap().is_none());
}

#[test]
fn bad_input_is_rejected_and_writes_nothing() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    let five: Vec<PkColumn> = (0..5).map(|i| PkColumn { name: format!("k{i}"), ty: PkType::Integer, auto_increment: false }).collect();
    let e = store.create_table(TableDef { primary_key: five, ..table("t5", &[], TableOptions::default()) }).unwrap_err();
    assert_eq!(e.sqlstate(), "42P16");
    assert_eq!(store.create_table(table("1bad", &[("k", PkType::Integer)], TableOptions::default())).unwrap_err().sqlstate(), "42602");
    assert_eq!(store.create_table(table("ok", &[("bad-name", PkType::Integer)], TableOptions::default())).unwrap_err().sqlstate(), "42602");
    assert_eq!(store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap_err().sqlstate(), "42P07");
    let mut auto = table("auto", &[("k", PkType::String)], TableOptions::default());
    auto.primary_key[0].auto_increment = true;
    assert_eq!(store.create_table(auto).unwrap_err().sqlstate(), "42P16", "a generated key column is an integer");

    let v = [CellWrite::new("v", Value::Integer(1))];
    let check = |r: Result<WriteOutcome>, code: &str| assert_eq!(r.unwrap_err().sqlstate(), code);
    check(store.put_row("t", &[Some(s("x"))], &v, &Condition::ignore()), "42804");
    check(store.put_row("t", &[Some(s("x")), None], &v, &Condition::ignore()), "23502");
    check(store.put_row("t", &[Some(int(1)), Some(int(1))], &v, &Condition::ignore()), "42804");
    check(store.put_row("t", &[Some(s(&"k".repeat(1025))), Some(int(1))], &v, &Condition::ignore()), "22001");
    let big = [CellWrite::new("v", Value::Binary(vec![0; 2 * 1024 * 1024 + 1]))];
    check(store.put_row("t", &[Some(s("x")), Some(int(1))], &big, &Condition::ignore()), "22001");
    let bad = [CellWrite::new("no good", Value::Integer(1))];
    check(store.put_row("t", &[Some(s("x")), Some(int(1))], &bad, &Condition::ignore()), "42602");
    check(store.put_row("nope", &[Some(s("x")), Some(int(1))], &v, &Condition::ignore()), "42P01");
    assert!(store.get_range("t", &RangeRequest::full(Direction::Forward)).unwrap().rows.is_empty(), "nothing was written");

    put(&store, "x", 1, &[("s", Value::String("a".into())), ("n", Value::Integer(i64::MAX))]).unwrap();
    let inc = |c: &str, d| store.update_row("t", &[s("x"), int(1)], &[(c.to_string(), UpdateOp::Increment(d))], &Condition::ignore());
    check(inc("s", 1), "42804");
    check(inc("n", 1), "22003");
    assert_eq!(store.get_row("t", &[s("x"), int(1)], &all()).unwrap().unwrap().get("n"), Some(&Value::Integer(i64::MAX)));
    // A bad cell late in a write leaves the earlier ones unwritten too.
    let mixed = [CellWrite::new("ok", Value::Integer(1)), CellWrite::new("9bad", Value::Integer(2))];
    check(store.put_row("t", &[Some(s("x")), Some(int(1))], &mixed, &Condition::ignore()), "42602");
    assert!(store.get_row("t", &[s("x"), int(1)], &all()).unwrap().unwrap().get("ok").is_none());
}

#[test]
fn ranges_limits_resume_and_directions() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    for a in ["a", "b", "c"] {
        for b in -2..3 {
            put(&store, a, b, &[("v", Value::Integer(b))]).unwrap();
        }
    }
    let keys = |rows: &[Row]| rows.iter().map(|r| format!("{:?}{:?}", r.pk[0], r.pk[1])).collect::<Vec<_>>();
    let req = |start: Vec<PkBound>, end: Vec<PkBound>, direction, limit| RangeRequest {
        start,
        end,
        direction,
        limit,
        read: ReadSpec::default(),
        budget_bytes: None,
    };
    let v = |p: PkValue| PkBound::Value(p);
    // All of "b", forward, in pages of 2, resuming exactly where each page stopped.
    let mut start = vec![v(s("b")), PkBound::InfMin];
    let mut got = Vec::new();
    loop {
        let r = store.get_range("t", &req(start.clone(), vec![v(s("b")), PkBound::InfMax], Direction::Forward, Some(2))).unwrap();
        got.extend(r.rows.iter().map(|r| r.pk[1].clone()));
        match r.next_start {
            Some(n) => start = n.into_iter().map(PkBound::Value).collect(),
            None => break,
        }
    }
    assert_eq!(got, (-2..3).map(int).collect::<Vec<_>>());
    // Backward from ("c", 0) inclusive down to ("a", 2) exclusive.
    let r = store.get_range("t", &req(vec![v(s("c")), v(int(0))], vec![v(s("a")), v(int(2))], Direction::Backward, None)).unwrap();
    assert_eq!(keys(&r.rows).len(), 8);
    assert_eq!(r.rows[0].pk, vec![s("c"), int(0)]);
    assert_eq!(r.rows.last().unwrap().pk, vec![s("b"), int(-2)]);
    // A byte budget cuts the read and says where to resume.
    let mut small = req(vec![PkBound::InfMin], vec![PkBound::InfMax], Direction::Forward, None);
    small.budget_bytes = Some(1);
    let r = store.get_range("t", &small).unwrap();
    assert_eq!(r.rows.len(), 1);
    assert_eq!(r.next_start, Some(vec![s("a"), int(-1)]));
    // The latest-value read walks the same rows and stops at the same places, its rows lying flat.
    let latest = |mut q: RangeRequest| {
        q.read = ReadSpec { columns: Some(vec!["w".into(), "v".into()]), ..ReadSpec::default() };
        store.get_range_latest("t", &q).unwrap()
    };
    let page = latest(small.clone());
    assert_eq!((page.len(), page.next_start.clone()), (1, Some(vec![s("a"), int(-1)])));
    let back = req(vec![v(s("c")), v(int(0))], vec![v(s("a")), v(int(2))], Direction::Backward, None);
    let page = latest(back.clone());
    let rows = store.get_range("t", &back).unwrap().rows;
    assert_eq!(page.keys, rows.iter().flat_map(|r| r.pk.clone()).collect::<Vec<_>>());
    assert_eq!(page.cells, rows.iter().flat_map(|r| [None, r.cells("v").map(|c| c[0].clone())]).collect::<Vec<_>>());
    let mut all_versions = back.clone();
    all_versions.read.max_versions = Some(2);
    all_versions.read.columns = Some(vec!["v".into()]);
    assert!(matches!(store.get_range_latest("t", &all_versions), Err(StoreError::NotSupported(_))));
    // The visiting read lends the same rows, and stops when its visitor says so.
    let mut lent = Vec::new();
    let mut q = back.clone();
    q.read = ReadSpec { columns: Some(vec!["v".into()]), ..ReadSpec::default() };
    let next = store
        .visit_range_latest("t", &q, &mut |row| {
            lent.push((row.key.to_vec(), row.version(0).is_some(), row.value(0).unwrap().map(|v| v.to_value())));
            lent.len() < 3
        })
        .unwrap();
    assert_eq!(next, None);
    let want: Vec<_> = rows.iter().take(3).map(|r| (r.pk.clone(), true, r.get("v").cloned())).collect();
    assert_eq!(lent, want);
    assert!(matches!(store.visit_range_latest("t", &all_versions, &mut |_| true), Err(StoreError::NotSupported(_))));
    // A forward range whose start is after its end is an error.
    assert!(matches!(
        store.get_range("t", &req(vec![v(s("c"))], vec![v(s("a"))], Direction::Forward, None)),
        Err(StoreError::InvalidRange(_))
    ));
    // batch_get in request order, missing keys as None.
    let got = store.batch_get("t", &[vec![s("c"), int(2)], vec![s("zz"), int(0)], vec![s("a"), int(-2)]], &all()).unwrap();
    assert_eq!(
        got.iter().map(|r| r.as_ref().map(|r| r.pk.clone())).collect::<Vec<_>>(),
        vec![Some(vec![s("c"), int(2)]), None, Some(vec![s("a"), int(-2)])]
    );
}

#[test]
fn hash_prefixed_table_keeps_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    store.create_table(table("h", &[("n", PkType::Integer)], TableOptions { hash_prefix: 4, ..TableOptions::default() })).unwrap();
    for n in 0..50 {
        store.put_row("h", &[Some(int(n))], &[CellWrite::new("v", Value::Integer(n))], &Condition::ignore()).unwrap();
    }
    let fwd = store.get_range("h", &RangeRequest::full(Direction::Forward)).unwrap();
    assert_eq!(fwd.rows.iter().map(|r| r.pk[0].clone()).collect::<Vec<_>>(), (0..50).map(int).collect::<Vec<_>>());
    let bwd = store.get_range("h", &RangeRequest::full(Direction::Backward)).unwrap();
    assert_eq!(bwd.rows.iter().map(|r| r.pk[0].clone()).collect::<Vec<_>>(), (0..50).rev().map(int).collect::<Vec<_>>());
    assert_eq!(store.get_row("h", &[int(7)], &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(7)));
}

#[test]
fn transactions_snapshot_read_your_writes_conflicts() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    put(&store, "x", 1, &[("v", Value::Integer(1))]).unwrap();
    let t1 = store.begin();
    let t2 = store.begin();
    let pk = [s("x"), int(1)];
    t1.update_row("t", &pk, &[("v".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
    assert_eq!(t1.get_row("t", &pk, &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(2)), "read your writes");
    assert_eq!(store.get_row("t", &pk, &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(1)), "uncommitted is invisible");
    t2.update_row("t", &pk, &[("v".into(), UpdateOp::Increment(10))], &Condition::ignore()).unwrap();
    t1.commit().unwrap();
    assert_eq!(t2.commit().unwrap_err(), StoreError::Conflict, "second writer of the row loses");
    assert_eq!(store.get_row("t", &pk, &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(2)));
    // Snapshot: a transaction does not see commits made after it began.
    let t3 = store.begin();
    put(&store, "new", 1, &[]).unwrap();
    assert!(t3.get_row("t", &[s("new"), int(1)], &all()).unwrap().is_none());
    t3.rollback().unwrap();
}

#[test]
fn batch_write_atomic_within_one_partition_key() {
    let (_d, _c, store) = setup_ab(TableOptions::default());
    put(&store, "p", 2, &[]).unwrap();
    let w = |b: i64| RowWrite::Put {
        pk: vec![Some(s("p")), Some(int(b))],
        cells: vec![CellWrite::new("v", Value::Integer(b))],
        condition: Condition::expect_not_exist(),
    };
    // Same partition key: all or nothing.
    let err = store.batch_write("t", &[w(1), w(2), w(3)]).unwrap_err();
    assert_eq!(err, StoreError::RowExists);
    assert!(store.get_row("t", &[s("p"), int(1)], &all()).unwrap().is_none());
    // Different partition keys: each row alone.
    let other = RowWrite::Put { pk: vec![Some(s("q")), Some(int(1))], cells: vec![], condition: Condition::expect_not_exist() };
    let res = store.batch_write("t", &[w(1), w(2), other]).unwrap();
    assert!(res[0].is_ok() && res[1].is_err() && res[2].is_ok());
}

#[test]
fn concurrent_increments_and_auto_increment() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path(), Arc::new(ManualClock::new(NOW))));
    store.create_table(table("c", &[("k", PkType::String)], TableOptions::default())).unwrap();
    let mut auto = table("a", &[("g", PkType::String), ("id", PkType::Integer)], TableOptions::default());
    auto.primary_key[1].auto_increment = true;
    store.create_table(auto).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for _ in 0..100 {
                    store.update_row("c", &[s("k")], &[("n".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
                    let out = store.put_row("a", &[Some(s("g")), None], &[], &Condition::expect_not_exist()).unwrap();
                    ids.push(out.pk[1].clone());
                }
                ids
            })
        })
        .collect();
    let mut ids: Vec<PkValue> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    assert_eq!(store.get_row("c", &[s("k")], &all()).unwrap().unwrap().get("n"), Some(&Value::Integer(800)));
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 800, "auto-increment values are unique");
    assert_eq!(ids.last(), Some(&int(800)));
    // Another partition-key value counts on its own.
    let out = store.put_row("a", &[Some(s("other")), None], &[], &Condition::ignore()).unwrap();
    assert_eq!(out.pk[1], int(1));
}

#[test]
fn catalog_survives_reopen() {
    if !on_disk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let mut def = table("r", &[("k", PkType::Integer)], TableOptions { ttl: 100, max_versions: 4, ..TableOptions::default() });
        def.user_meta = b"meta".to_vec();
        store.create_table(def).unwrap();
        store.put_row("r", &[Some(int(1))], &[CellWrite::new("v", Value::Integer(1))], &Condition::ignore()).unwrap();
        // What the engine keeps of earlier options: what the ttl of 100 s hid, and the 4 versions rows may hold.
        store.set_options("r", TableOptions { ttl: 200, max_versions: 2, ..TableOptions::default() }).unwrap();
        store.create_table(table("gone", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
        store.drop_table("gone").unwrap();
    }
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    let def = store.table("r").unwrap();
    assert_eq!((def.options.ttl, def.options.max_versions), (200, 2));
    assert_eq!((def.options.hidden_before, def.options.stored_versions), (NOW - 100_000, 4));
    assert_eq!(def.user_meta, b"meta");
    assert_eq!(store.table_names(), vec!["r".to_string()]);
    assert!(store.get_row("r", &[int(1)], &all()).unwrap().is_some());
    assert_eq!(store.partitions("r").unwrap().len(), 1);
}

#[test]
fn data_survives_reopen_with_compactions_at_open() {
    // Regression: a compaction RocksDB ran while opening, before the catalog was loaded, removed rows.
    if !on_disk() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let value = Value::Binary(vec![7; 200]);
    {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        store.create_table(table("r", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
        for batch in 0..3 {
            for k in 0..2000 {
                store.put_row("r", &[Some(int(batch * 2000 + k))], &[CellWrite::new("v", value.clone())], &Condition::ignore()).unwrap();
            }
            store.flush().unwrap();
        }
        // The last batch stays in the write-ahead log: reopening flushes it, a fourth level-0 file.
        for k in 6000..8000 {
            store.put_row("r", &[Some(int(k))], &[CellWrite::new("v", value.clone())], &Condition::ignore()).unwrap();
        }
    }
    for _ in 0..3 {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        store.compact().unwrap();
        let mut n = 0;
        let mut req = RangeRequest::full(Direction::Forward);
        loop {
            let r = store.get_range("r", &req).unwrap();
            n += r.rows.len();
            match r.next_start {
                Some(next) => req.start = next.into_iter().map(PkBound::Value).collect(),
                None => break,
            }
        }
        assert_eq!(n, 8000, "every row is still there after reopening");
    }
}
