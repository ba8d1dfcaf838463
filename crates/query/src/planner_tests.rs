//! The planner's access-path choice for every WHERE shape.

use std::sync::Arc;

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;
use tabula_store::{Direction, TableOptions};

use crate::error::{QueryError, Result};
use crate::plan::{AccessPath, KeyBound, Plan, WriteCall};
use crate::planner::{Catalog, Planner};
use crate::schema::{ColumnDef, TableSchema};
use crate::types::SqlType;

struct Tables(Vec<Arc<TableSchema>>);

impl Catalog for Tables {
    fn table(&self, name: &str) -> Result<Arc<TableSchema>> {
        self.0.iter().find(|t| t.name == name).cloned().ok_or_else(|| QueryError::UndefinedTable(name.into()))
    }
}

fn col(name: &str, ty: SqlType) -> ColumnDef {
    ColumnDef::plain(name, ty)
}

/// t(a text, b bigint, c bigint, v text) PRIMARY KEY (a, b, c)
fn catalog() -> Tables {
    let columns = vec![col("a", SqlType::Text), col("b", SqlType::Int8), col("c", SqlType::Int8), col("v", SqlType::Text)];
    Tables(vec![Arc::new(TableSchema::new("t", columns, (vec![0, 1, 2], 1), TableOptions::default(), "tabula"))])
}

fn plan(sql: &str) -> Plan {
    let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().pop().unwrap();
    let cat = catalog();
    Planner::new(&cat, vec![]).plan(&stmt).unwrap()
}

fn access(sql: &str) -> (AccessPath, bool) {
    match plan(sql) {
        Plan::Select(s) => {
            let scan = s.scan.unwrap();
            (scan.access, scan.filter.is_some())
        }
        Plan::Update(u) => (u.scan.access, u.scan.filter.is_some()),
        Plan::Delete(d) => (d.scan.access, d.scan.filter.is_some()),
        other => panic!("not a read: {other}"),
    }
}

fn shown(sql: &str) -> String {
    plan(sql).to_string()
}

#[test]
fn full_key_equality_is_a_point_get() {
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' AND b = 1 AND c = 2"), (AccessPath::PointGet { .. }, false)));
    assert!(matches!(access("SELECT * FROM t WHERE c = 2 AND 1 = b AND a = 'x'"), (AccessPath::PointGet { .. }, false)));
    assert!(matches!(access("SELECT * FROM t WHERE a = $1 AND b = $2 AND c = $3"), (AccessPath::PointGet { .. }, false)));
    // A further predicate stays as a filter on the fetched row.
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' AND b = 1 AND c = 2 AND v = 'q'"), (AccessPath::PointGet { .. }, true)));
    assert!(matches!(access("UPDATE t SET v = 'n' WHERE a = 'x' AND b = 1 AND c = 2"), (AccessPath::PointGet { .. }, false)));
    assert!(matches!(access("DELETE FROM t WHERE a = 'x' AND b = 1 AND c = 2"), (AccessPath::PointGet { .. }, false)));
}

#[test]
fn in_lists_and_ors_of_keys_are_batch_gets() {
    match access("SELECT * FROM t WHERE a IN ('x', 'y') AND b = 1 AND c IN (1, 2, 3)") {
        (AccessPath::BatchGet { keys }, false) => assert_eq!(keys.len(), 6),
        other => panic!("{other:?}"),
    }
    match access("SELECT * FROM t WHERE (a = 'x' AND b = 1 AND c = 1) OR (a = 'y' AND b = 2 AND c = 2)") {
        (AccessPath::BatchGet { keys }, false) => assert_eq!(keys.len(), 2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn prefix_equality_and_range_is_a_range_scan() {
    match access("SELECT * FROM t WHERE a = 'x' AND b >= 5 AND b < 10") {
        (AccessPath::RangeScan { start, end, direction: Direction::Forward }, false) => {
            assert_eq!(start.len(), 3);
            assert!(matches!(start[2], KeyBound::InfMin));
            assert!(matches!(end[2], KeyBound::InfMin));
        }
        other => panic!("{other:?}"),
    }
    // Prefix equality alone.
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x'"), (AccessPath::RangeScan { .. }, false)));
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' AND b = 2"), (AccessPath::RangeScan { .. }, false)));
    // A range on the partition key itself.
    assert!(matches!(access("SELECT * FROM t WHERE a > 'm'"), (AccessPath::RangeScan { .. }, false)));
    assert!(matches!(access("SELECT * FROM t WHERE a BETWEEN 'a' AND 'f'"), (AccessPath::RangeScan { .. }, false)));
    // Keyset pagination.
    match access("SELECT * FROM t WHERE a = 'x' AND (b, c) > (3, 4)") {
        (AccessPath::RangeScan { start, .. }, false) => {
            assert_eq!(start.len(), 4);
            assert!(matches!(start[3], KeyBound::InfMax));
        }
        other => panic!("{other:?}"),
    }
    // A range on a later column with a gap in the prefix is only a prefix range plus a filter.
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' AND c > 3"), (AccessPath::RangeScan { .. }, true)));
}

#[test]
fn anything_else_is_a_full_scan() {
    assert!(matches!(access("SELECT * FROM t"), (AccessPath::FullScan { .. }, false)));
    assert!(matches!(access("SELECT * FROM t WHERE v = 'x'"), (AccessPath::FullScan { .. }, true)));
    assert!(matches!(access("SELECT * FROM t WHERE b = 1 AND c = 2"), (AccessPath::FullScan { .. }, true)));
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' OR v = 'y'"), (AccessPath::FullScan { .. }, true)));
    assert!(matches!(access("SELECT * FROM t WHERE a <> 'x'"), (AccessPath::FullScan { .. }, true)));
    // A constant of another type than the key column cannot become a key.
    assert!(matches!(access("SELECT * FROM t WHERE a = 'x' AND b = 1.5 AND c = 1"), (AccessPath::RangeScan { .. }, true)));
}

#[test]
fn order_by_key_is_the_scan_direction() {
    assert!(matches!(
        access("SELECT * FROM t WHERE a = 'x' ORDER BY b DESC, c DESC"),
        (AccessPath::RangeScan { direction: Direction::Backward, .. }, _)
    ));
    assert!(matches!(access("SELECT * FROM t ORDER BY a DESC"), (AccessPath::FullScan { direction: Direction::Backward }, _)));
    let Plan::Select(s) = plan("SELECT * FROM t WHERE a = 'x' ORDER BY b, c") else { panic!() };
    assert!(s.sort.is_empty(), "no sort needed");
    let Plan::Select(s) = plan("SELECT * FROM t ORDER BY v") else { panic!() };
    assert_eq!(s.sort.len(), 1, "a non-key order sorts");
    let Plan::Select(s) = plan("SELECT * FROM t WHERE a = 'x' ORDER BY b, c DESC") else { panic!() };
    assert_eq!(s.sort.len(), 2, "mixed directions sort");
}

#[test]
fn limit_is_pushed_into_the_scan_only_when_safe() {
    let Plan::Select(s) = plan("SELECT * FROM t WHERE a = 'x' LIMIT 5") else { panic!() };
    assert!(s.scan.unwrap().limit.is_some());
    let Plan::Select(s) = plan("SELECT * FROM t WHERE v = 'x' LIMIT 5") else { panic!() };
    assert!(s.scan.unwrap().limit.is_none(), "a filter drops rows after the scan's limit");
}

#[test]
fn explain_prints_the_tree() {
    let text = shown("SELECT v FROM t WHERE a = 'x' AND b >= 5 AND v <> 'z' LIMIT 3");
    assert_eq!(text, "Project [v] streamed\n  Limit 3\n    RangeScan [('x', 5, -inf) .. ('x', +inf)) forward on t filter=(v <> 'z')\n");
    assert_eq!(shown("SELECT * FROM t WHERE a = 'x' AND b = 1 AND c = 2"), "Project [a, b, c, v]\n  PointGet key=('x', 1, 2) on t\n");
}

#[test]
fn parameters_take_their_types_from_where_they_are_used() {
    let stmt =
        Parser::parse_sql(&PostgreSqlDialect {}, "SELECT v FROM t WHERE a = $1 AND b = $2 AND c > $3 LIMIT $4").unwrap().pop().unwrap();
    let cat = catalog();
    let mut p = Planner::new(&cat, vec![]);
    p.plan(&stmt).unwrap();
    assert_eq!(p.params, vec![SqlType::Text, SqlType::Int8, SqlType::Int8, SqlType::Int8]);
    let stmt = Parser::parse_sql(&PostgreSqlDialect {}, "INSERT INTO t VALUES ($1, $2, $3, $4)").unwrap().pop().unwrap();
    let mut p = Planner::new(&cat, vec![]);
    p.plan(&stmt).unwrap();
    assert_eq!(p.params, vec![SqlType::Text, SqlType::Int8, SqlType::Int8, SqlType::Text]);
}

#[test]
fn table_definition_errors() {
    let cat = catalog();
    let err = |sql: &str| {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().pop().unwrap();
        Planner::new(&cat, vec![]).plan(&stmt).unwrap_err().sqlstate()
    };
    assert_eq!(err("CREATE TABLE x (a bigint, b bigint, c bigint, d bigint, e bigint, PRIMARY KEY (a, b, c, d, e))"), "42P16");
    assert_eq!(err("CREATE TABLE x (a double precision PRIMARY KEY)"), "42P16");
    assert_eq!(err("CREATE TABLE x (a boolean PRIMARY KEY)"), "42P16");
    assert_eq!(err("CREATE TABLE x (a text GENERATED ALWAYS AS IDENTITY PRIMARY KEY)"), "22023");
    assert_eq!(err("CREATE TABLE x (a bigint, PRIMARY KEY (b))"), "42703");
    assert_eq!(err("CREATE TABLE x (a bigint PRIMARY KEY) WITH (ttl = 'soon')"), "22023");
    assert_eq!(err("CREATE TABLE x (a bigint PRIMARY KEY) WITH (max_versions = 0)"), "22023");
    assert_eq!(err("CREATE TABLE x (a bigint PRIMARY KEY) WITH (flavour = 1)"), "22023");
    assert_eq!(err("SELECT nope FROM t"), "42703");
    assert_eq!(err("SELECT * FROM nope"), "42P01");
    assert_eq!(err("INSERT INTO t (a, nope) VALUES ('x', 1)"), "42703");
    assert_eq!(err("INSERT INTO t (a, b, c, v) VALUES ('x', 'y', 1, 'v')"), "22P02");
    assert_eq!(err("INSERT INTO t (a, b, c, v) VALUES ('x', true, 1, 'v')"), "42804");
    assert_eq!(err("SELECT count(*) FROM t"), "0A000");
}

#[test]
fn locking_reads() {
    let Plan::Select(s) = plan("SELECT v FROM t WHERE a = 'x' FOR UPDATE") else { panic!() };
    assert!(s.lock);
    let Plan::Select(s) = plan("SELECT v FROM t WHERE a = 'x'") else { panic!() };
    assert!(!s.lock);
    let stmt =
        Parser::parse_sql(&PostgreSqlDialect {}, "SELECT v FROM t WHERE v = 'new' LIMIT 1 FOR UPDATE SKIP LOCKED").unwrap().pop().unwrap();
    let e = Planner::new(&catalog(), vec![]).plan(&stmt).unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
}

/// Each way an auto-commit write can reach the engine, chosen from the statement's shape.
#[test]
fn write_calls() {
    let call = |sql: &str| match plan(sql) {
        Plan::Insert(i) => i.call,
        Plan::InsertSelect { insert, .. } => insert.call,
        Plan::Update(u) => u.call,
        p => panic!("not a write: {p:?}"),
    };
    assert_eq!(call("INSERT INTO t VALUES ('x', 1, 2, 'v'), ('y', 1, 2, 'w')"), WriteCall::Single);
    assert_eq!(call("INSERT INTO t VALUES ('x', 1, 2, 'v') ON CONFLICT DO NOTHING"), WriteCall::Single);
    assert_eq!(call("INSERT INTO t VALUES ('x', 1, 2, 'v'), ('y', 1, 2, 'w') ON CONFLICT DO NOTHING"), WriteCall::ReadModifyWrite);
    // A query's rows are not counted when the statement is planned.
    assert_eq!(call("INSERT INTO t SELECT * FROM t ON CONFLICT DO NOTHING"), WriteCall::ReadModifyWrite);
    let upsert = "INSERT INTO t VALUES ('x', 1, 2, 'v') ON CONFLICT (a, b, c) DO UPDATE SET v = ";
    assert_eq!(call(&format!("{upsert}excluded.v")), WriteCall::Upsert);
    // Reading the stored row, a condition or RETURNING needs the read.
    assert_eq!(call(&format!("{upsert}t.v || excluded.v")), WriteCall::ReadModifyWrite);
    assert_eq!(call(&format!("{upsert}excluded.v WHERE t.v <> 'z'")), WriteCall::ReadModifyWrite);
    assert_eq!(call(&format!("{upsert}excluded.v RETURNING v")), WriteCall::ReadModifyWrite);
    assert_eq!(call("UPDATE t SET v = 'n' WHERE a = 'x' AND b = 1 AND c = 2"), WriteCall::KeyUpdate);
    assert_eq!(call("UPDATE t SET v = 'n' WHERE a = 'x' AND b = 1 AND c = 2 AND v = 'o'"), WriteCall::KeyUpdate);
    // Not one row by key, a value computed from the row, a condition the engine cannot check.
    assert_eq!(call("UPDATE t SET v = 'n' WHERE a = 'x'"), WriteCall::ReadModifyWrite);
    assert_eq!(call("UPDATE t SET v = v || 'n' WHERE a = 'x' AND b = 1 AND c = 2"), WriteCall::ReadModifyWrite);
    assert_eq!(call("UPDATE t SET v = 'n' WHERE a = 'x' AND b = 1 AND c = 2 AND v LIKE 'o%'"), WriteCall::ReadModifyWrite);
}

/// Rows stream when the scan gives them in the output's order, latest values only.
#[test]
fn which_reads_stream() {
    let streams = |sql: &str| match plan(sql) {
        Plan::Select(s) => s.stream,
        p => panic!("not a read: {p:?}"),
    };
    assert!(streams("SELECT * FROM t WHERE a = 'x'"));
    assert!(streams("SELECT * FROM t WHERE v = 'x'"));
    assert!(streams("SELECT * FROM t WHERE a = 'x' ORDER BY b DESC"));
    assert!(!streams("SELECT * FROM t ORDER BY v"));
    assert!(!streams("SELECT * FROM t WHERE a = 'x' AND b = 1 AND c = 2"));
    assert!(!streams("SELECT * FROM t(latest_n => 2) WHERE a = 'x'"));
    assert!(!streams("SELECT 1"));
}
