//! Model-based test of secondary indexes through SQL: random inserts, upserts, updates (increments,
//! `SET c = NULL`, updates and deletes found through an index), versioned writes, TTL expiry on a manual
//! clock, COPY, and transactions that commit, roll back or fail, from two sessions whose writes interleave.
//! After every step, in each session (inside its open transaction too), every query the planner answers
//! through an index returns exactly what the same query answers by a full scan, in the same order where
//! it reads the index in order. The full scan is the model: it reads the table itself, so the index may
//! never add, lose or misplace a row. The table has a ttl or none (only then are indexes read in order,
//! and reads the entries cover answered from them alone, INCLUDE columns among them).

use std::sync::Arc;

use proptest::prelude::*;
use tabula_kv::memory::MemoryEngine;
use tabula_query::{Database, Output, Session};
use tabula_store::{Clock, ManualClock, Store, StoreConfig};

const NOW: i64 = 1_700_000_000_000;

#[derive(Debug, Clone)]
enum Op {
    Insert {
        k: i64,
        a: Option<i64>,
        b: Option<u8>,
        c: Option<i64>,
        upsert: bool,
    },
    AddA {
        k: i64,
        d: i64,
    },
    NullA {
        k: i64,
    },
    SetB {
        k: i64,
        b: Option<u8>,
    },
    SetC {
        k: i64,
        c: Option<i64>,
    },
    /// An update that finds its rows through the index on `a` and moves them within it.
    AddWhereA {
        a: i64,
        d: i64,
    },
    Versioned {
        k: i64,
        a: i64,
        ms_ago: i64,
    },
    Delete {
        k: i64,
    },
    DeleteWhereA {
        lo: i64,
        hi: i64,
    },
    Copy {
        rows: Vec<(i64, Option<i64>, Option<i64>)>,
    },
    Begin,
    Commit,
    Rollback,
    /// A statement that fails: the open transaction, if any, is aborted.
    Fail,
    Advance(i64),
}

fn op() -> impl Strategy<Value = (u8, Op)> {
    let val = || proptest::option::weighted(0.8, -3i64..4);
    let text = || proptest::option::weighted(0.8, 0u8..3);
    let op = prop_oneof![
        4 => (0i64..8, val(), text(), proptest::option::weighted(0.5, 0i64..6), any::<bool>())
            .prop_map(|(k, a, b, c, upsert)| Op::Insert { k, a, b, c, upsert }),
        3 => (0i64..8, -2i64..3).prop_map(|(k, d)| Op::AddA { k, d }),
        1 => (0i64..8).prop_map(|k| Op::NullA { k }),
        2 => (0i64..8, text()).prop_map(|(k, b)| Op::SetB { k, b }),
        2 => (0i64..8, proptest::option::of(0i64..6)).prop_map(|(k, c)| Op::SetC { k, c }),
        2 => (-3i64..4, -1i64..2).prop_map(|(a, d)| Op::AddWhereA { a, d }),
        2 => (0i64..8, -3i64..4, 0i64..5000).prop_map(|(k, a, ms_ago)| Op::Versioned { k, a, ms_ago }),
        2 => (0i64..8).prop_map(|k| Op::Delete { k }),
        1 => (-3i64..4, 0i64..3).prop_map(|(lo, w)| Op::DeleteWhereA { lo, hi: lo + w }),
        1 => proptest::collection::vec((8i64..14, val(), proptest::option::of(6i64..9)), 1..4).prop_map(|rows| Op::Copy { rows }),
        2 => Just(Op::Begin),
        2 => Just(Op::Commit),
        1 => Just(Op::Rollback),
        1 => Just(Op::Fail),
        2 => (0i64..4000).prop_map(Op::Advance),
    ];
    (0u8..2, op)
}

fn lit(v: Option<i64>) -> String {
    v.map_or("NULL".into(), |v| v.to_string())
}

fn text(b: Option<u8>) -> String {
    b.map_or("NULL".into(), |b| format!("'t{b}'"))
}

/// The rows (as their Debug text, sorted unless `ordered`) or the SQLSTATE of a query.
fn query(s: &mut Session, sql: &str, ordered: bool) -> Result<Vec<String>, String> {
    let out = s.execute_sql(sql).into_iter().last().unwrap();
    let rows = match out.map_err(|e| e.sqlstate().to_string())? {
        Output::Rows { rows, .. } => rows,
        Output::Stream { cursor, .. } => cursor.collect::<tabula_query::Result<Vec<_>>>().map_err(|e| e.sqlstate().to_string())?,
        other => panic!("{sql}: no rows: {other:?}"),
    };
    let mut rows: Vec<String> = rows.iter().map(|r| format!("{r:?}")).collect();
    if !ordered {
        rows.sort();
    }
    Ok(rows)
}

fn run(s: &mut Session, sql: &str) {
    // Errors (a duplicate key, a conflict with the other session, a version outside the window) are part
    // of the game: whatever the statement did or did not do, the index must agree with the table.
    let _ = s.execute_sql(sql);
}

fn apply(s: &mut Session, clock: &ManualClock, op: &Op) {
    let now = clock.now_ms();
    match op {
        Op::Insert { k, a, b, c, upsert } => {
            let conflict = if *upsert { " ON CONFLICT (k) DO UPDATE SET a = excluded.a, b = excluded.b, c = excluded.c" } else { "" };
            run(s, &format!("INSERT INTO t VALUES ({k}, {}, {}, {}){conflict}", lit(*a), text(*b), lit(*c)));
        }
        Op::AddA { k, d } => run(s, &format!("UPDATE t SET a = a + {d} WHERE k = {k}")),
        Op::NullA { k } => run(s, &format!("UPDATE t SET a = NULL WHERE k = {k}")),
        Op::SetB { k, b } => run(s, &format!("UPDATE t SET b = {} WHERE k = {k}", text(*b))),
        Op::SetC { k, c } => run(s, &format!("UPDATE t SET c = {} WHERE k = {k}", lit(*c))),
        Op::AddWhereA { a, d } => run(s, &format!("UPDATE t SET a = a + {d} WHERE a = {a}")),
        Op::Versioned { k, a, ms_ago } => run(s, &format!("INSERT INTO t (k, a, _version) VALUES ({k}, {a}, {})", now - ms_ago)),
        Op::Delete { k } => run(s, &format!("DELETE FROM t WHERE k = {k}")),
        Op::DeleteWhereA { lo, hi } => run(s, &format!("DELETE FROM t WHERE a BETWEEN {lo} AND {hi}")),
        Op::Copy { rows } => {
            if !matches!(s.execute_sql("COPY t (k, a, c) FROM STDIN").pop(), Some(Ok(Output::CopyIn { .. }))) {
                return;
            }
            let null = |v: &Option<i64>| v.map_or("\\N".to_string(), |v| v.to_string());
            let data: String = rows.iter().map(|(k, a, c)| format!("{k}\t{}\t{}\n", null(a), null(c))).collect();
            s.copy_data(data.as_bytes());
            let _ = s.copy_done();
        }
        Op::Begin => run(s, "BEGIN"),
        Op::Commit => run(s, "COMMIT"),
        Op::Rollback => run(s, "ROLLBACK"),
        Op::Fail => run(s, "SELECT 1 / 0"),
        Op::Advance(ms) => clock.advance(*ms),
    }
}

/// A query the planner answers through an index, the same query that it cannot, and whether their rows
/// come in an order to compare. Ties come in key order from a sort (it is stable, over a scan in key
/// order) and from an index read forward, in reverse from one read backward (only without a ttl). The
/// index on `a` is descending, so its ranges and reads run the other way.
fn pairs(ttl: i64) -> Vec<(String, String, bool)> {
    let tie = if ttl < 0 { "k DESC" } else { "k" };
    // `t_a` is descending: ORDER BY a reads it backward, ORDER BY a DESC forward.
    let tie_a = tie;
    let mut out = Vec::new();
    let mut pair = |indexed: String, scanned: String, ordered: bool| out.push((indexed, scanned, ordered));
    for v in -3..5 {
        pair(format!("SELECT * FROM t WHERE a = {v}"), format!("SELECT * FROM t WHERE a + 0 = {v}"), false);
        pair(format!("SELECT k FROM t WHERE c = {v}"), format!("SELECT k FROM t WHERE c + 0 = {v}"), false);
        pair(format!("SELECT k, b FROM t WHERE a = {v}"), format!("SELECT k, b FROM t WHERE a + 0 = {v}"), false);
        pair(format!("SELECT k, a FROM t WHERE a > {v}"), format!("SELECT k, a FROM t WHERE a + 0 > {v}"), false);
    }
    for b in 0..3 {
        pair(format!("SELECT k FROM t WHERE b = 't{b}'"), format!("SELECT k FROM t WHERE b || '' = 't{b}'"), false);
        pair(
            format!("SELECT k, a FROM t WHERE b = 't{b}' AND a BETWEEN -1 AND 2"),
            format!("SELECT k, a FROM t WHERE b || '' = 't{b}' AND a + 0 BETWEEN -1 AND 2"),
            false,
        );
        pair(
            format!("SELECT k, a FROM t WHERE b = 't{b}' ORDER BY a DESC"),
            format!("SELECT k, a FROM t WHERE b || '' = 't{b}' ORDER BY a + 0 DESC, {tie}"),
            true,
        );
    }
    pair("SELECT k, a FROM t WHERE a IN (-2, 0, 3)".into(), "SELECT k, a FROM t WHERE a + 0 IN (-2, 0, 3)".into(), false);
    pair(
        "SELECT k FROM t WHERE b IN ('t0', 't2') AND a = 1".into(),
        "SELECT k FROM t WHERE b || '' IN ('t0', 't2') AND a + 0 = 1".into(),
        false,
    );
    pair(
        "SELECT k FROM t WHERE a = 1 OR a = -1 OR (a = 1 AND k > 2)".into(),
        "SELECT k FROM t WHERE a + 0 = 1 OR a + 0 = -1".into(),
        false,
    );
    pair("SELECT k, a FROM t ORDER BY a LIMIT 4".into(), format!("SELECT k, a FROM t ORDER BY a + 0, {tie_a} LIMIT 4"), true);
    pair("SELECT k, a FROM t ORDER BY a DESC LIMIT 4".into(), "SELECT k, a FROM t ORDER BY a + 0 DESC, k LIMIT 4".into(), true);
    pair("SELECT k, c FROM t ORDER BY c LIMIT 3 OFFSET 1".into(), "SELECT k, c FROM t ORDER BY c + 0, k LIMIT 3 OFFSET 1".into(), true);
    pair(
        "SELECT k, b, a FROM t WHERE b > 't0' ORDER BY b, a LIMIT 5".into(),
        "SELECT k, b, a FROM t WHERE b || '' > 't0' ORDER BY b || '', a + 0, k LIMIT 5".into(),
        true,
    );
    out
}

fn plan(s: &mut Session, sql: &str) -> String {
    query(s, &format!("EXPLAIN {sql}"), true).unwrap().join("\n")
}

/// Two sessions on table `t`, with a ttl of 6 s or none.
fn setup(ttl: i64) -> (Arc<ManualClock>, Vec<Session>) {
    let clock = Arc::new(ManualClock::new(NOW));
    let config = StoreConfig { clock: clock.clone(), maintenance_interval: None, ..StoreConfig::default() };
    let store = Arc::new(Store::open(Arc::new(MemoryEngine::new()), config).unwrap());
    let db = Database::new(store).unwrap();
    let mut s = Session::new(&db, "tabula", "tabula");
    let create = format!(
        "CREATE TABLE t (k bigint PRIMARY KEY, a bigint, b text, c bigint) WITH (ttl = {ttl}, max_versions = 2, max_version_offset = 3600)"
    );
    for sql in
        [create.as_str(), "CREATE INDEX t_a ON t (a DESC) INCLUDE (b)", "CREATE INDEX t_ba ON t (b, a)", "CREATE UNIQUE INDEX t_c ON t (c)"]
    {
        for r in s.execute_sql(sql) {
            r.unwrap();
        }
    }
    let other = Session::new(&db, "tabula", "tabula");
    (clock, vec![s, other])
}

#[test]
fn the_pairs_take_an_index_and_a_full_scan() {
    for ttl in [6, -1] {
        let (_clock, mut sessions) = setup(ttl);
        let s = &mut sessions[0];
        let mut index_only = 0;
        for (indexed, scanned, ordered) in pairs(ttl) {
            // With a ttl, an ORDER BY sorts what it reads (an index's entries may hold expired values), so
            // the index is read only for a WHERE.
            let by_index = !ordered || ttl < 0 || indexed.contains("WHERE");
            let p = plan(s, &indexed);
            assert_eq!(p.contains("IndexScan") || p.contains("IndexOnlyScan"), by_index, "{indexed}: {p}");
            index_only += p.contains("IndexOnlyScan") as usize;
            assert!(!plan(s, &scanned).contains("Index"), "{scanned}: {}", plan(s, &scanned));
            if ordered && ttl < 0 {
                assert!(!plan(s, &indexed).contains("Sort"), "{indexed}: {}", plan(s, &indexed));
            }
        }
        // Without a ttl most pairs are answered from the entries alone (the key, indexed and INCLUDE
        // columns); with one, never.
        assert_eq!(index_only > 10, ttl < 0, "{index_only} index-only plans with ttl {ttl}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]
    #[test]
    fn index_scans_agree_with_full_scans(forever in any::<bool>(), ops in proptest::collection::vec(op(), 1..40)) {
        let ttl = if forever { -1 } else { 6 };
        let (clock, mut sessions) = setup(ttl);
        let pairs = pairs(ttl);
        for (step, (who, op)) in ops.iter().enumerate() {
            apply(&mut sessions[*who as usize], &clock, op);
            for (n, s) in sessions.iter_mut().enumerate() {
                for (indexed, scanned, ordered) in &pairs {
                    prop_assert_eq!(query(s, indexed, *ordered), query(s, scanned, *ordered), "step {} ({:?}), session {}: {}", step, op, n, indexed);
                }
            }
        }
        // What the sessions leave open is decided one way or the other, and the indexes still agree.
        for s in sessions.iter_mut() {
            run(s, "COMMIT");
        }
        for (indexed, scanned, ordered) in &pairs {
            prop_assert_eq!(query(&mut sessions[0], indexed, *ordered), query(&mut sessions[0], scanned, *ordered), "after the end: {}", indexed);
        }
    }
}
