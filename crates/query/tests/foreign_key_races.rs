//! Foreign keys between concurrent transactions: whichever commits first, no child is left without its
//! parent. Where PostgreSQL's row locks would make the second transaction wait, Tabula's fails with 40001
//! (the transactions here are interleaved by hand, in one thread).

use std::sync::Arc;

use tabula_kv::memory::MemoryEngine;
use tabula_query::{Database, Output, Session};
use tabula_store::{Store, StoreConfig};

fn database() -> Arc<Database> {
    let config = StoreConfig { maintenance_interval: None, ..StoreConfig::default() };
    Database::new(Arc::new(Store::open(Arc::new(MemoryEngine::new()), config).unwrap())).unwrap()
}

fn run(s: &mut Session, sql: &str) -> tabula_query::Result<()> {
    s.execute_sql(sql).into_iter().try_for_each(|r| r.map(|_| ()))
}

fn ints(s: &mut Session, sql: &str) -> Vec<i64> {
    let rows = match s.execute_sql(sql).into_iter().last().unwrap().unwrap() {
        Output::Rows { rows, .. } => rows,
        Output::Stream { cursor, .. } => cursor.collect::<tabula_query::Result<Vec<_>>>().unwrap(),
        other => panic!("no rows: {other:?}"),
    };
    rows.iter().map(|r| r[0].as_int().unwrap()).collect()
}

/// Parent `p` with rows 1 and 2, child `c` referencing it with `action`, and two sessions.
fn setup(action: &str) -> (Arc<Database>, Session, Session) {
    let db = database();
    let mut a = Session::new(&db, "tabula", "tabula");
    let b = Session::new(&db, "tabula", "tabula");
    for sql in [
        "CREATE TABLE p (id int PRIMARY KEY, name text)",
        &format!("CREATE TABLE c (id int PRIMARY KEY, p int REFERENCES p {action})"),
        "INSERT INTO p VALUES (1, 'one'), (2, 'two')",
    ] {
        run(&mut a, sql).unwrap();
    }
    (db, a, b)
}

fn serialization_failure(r: tabula_query::Result<()>) {
    let e = r.unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
}

/// The child's transaction commits after the parent's delete did: the child's check read the parent for
/// update, so its commit fails.
#[test]
fn a_child_insert_fails_to_commit_after_its_parent_was_deleted() {
    let (_db, mut child, mut parent) = setup("");
    run(&mut child, "BEGIN").unwrap();
    run(&mut child, "INSERT INTO c VALUES (1, 1)").unwrap();
    for sql in ["BEGIN", "DELETE FROM p WHERE id = 1", "COMMIT"] {
        run(&mut parent, sql).unwrap();
    }
    serialization_failure(run(&mut child, "COMMIT"));
    assert!(ints(&mut parent, "SELECT id FROM c").is_empty());
}

/// The other order: the child commits first, while the parent's delete, whose snapshot found no child,
/// is still open. Its commit fails, where it used to leave the child an orphan.
#[test]
fn a_parent_delete_fails_to_commit_after_a_child_committed_since_it_began() {
    let (_db, mut child, mut parent) = setup("");
    for sql in ["BEGIN", "DELETE FROM p WHERE id = 1"] {
        run(&mut parent, sql).unwrap();
    }
    for sql in ["BEGIN", "INSERT INTO c VALUES (1, 1)", "COMMIT"] {
        run(&mut child, sql).unwrap();
    }
    serialization_failure(run(&mut parent, "COMMIT"));
    assert_eq!(ints(&mut child, "SELECT id FROM p ORDER BY id"), vec![1, 2]);
    assert_eq!(ints(&mut child, "SELECT p FROM c"), vec![1]);
    // Begun after the child's commit, the delete sees the child: 23503, as in PostgreSQL.
    let e = run(&mut parent, "DELETE FROM p WHERE id = 1").unwrap_err();
    assert_eq!(e.sqlstate(), "23503", "{e}");
}

/// The same with the child added by an UPDATE, and with a key update of the parent instead of a delete.
#[test]
fn a_parent_key_update_fails_to_commit_after_a_child_update_committed() {
    let (_db, mut child, mut parent) = setup("");
    run(&mut child, "INSERT INTO c VALUES (1, NULL)").unwrap();
    for sql in ["BEGIN", "UPDATE p SET id = 10 WHERE id = 1"] {
        run(&mut parent, sql).unwrap();
    }
    run(&mut child, "UPDATE c SET p = 1 WHERE id = 1").unwrap();
    serialization_failure(run(&mut parent, "COMMIT"));
    assert_eq!(ints(&mut child, "SELECT id FROM p ORDER BY id"), vec![1, 2]);
}

/// ON DELETE CASCADE deletes the children its snapshot holds; one committed since would be left behind,
/// so the delete fails to commit instead.
#[test]
fn a_cascading_delete_fails_to_commit_after_a_new_child_committed() {
    let (_db, mut child, mut parent) = setup("ON DELETE CASCADE");
    run(&mut child, "INSERT INTO c VALUES (1, 1)").unwrap();
    for sql in ["BEGIN", "DELETE FROM p WHERE id = 1"] {
        run(&mut parent, sql).unwrap();
    }
    run(&mut child, "INSERT INTO c VALUES (2, 1)").unwrap();
    serialization_failure(run(&mut parent, "COMMIT"));
    assert_eq!(ints(&mut child, "SELECT id FROM c ORDER BY id"), vec![1, 2]);
    // Retried, the delete takes both children with it.
    run(&mut parent, "DELETE FROM p WHERE id = 1").unwrap();
    assert!(ints(&mut child, "SELECT id FROM c").is_empty());
}

/// What must not conflict: children of one parent committed side by side, a delete of another parent, and
/// a delete undone by a rollback to a savepoint.
#[test]
fn unrelated_and_later_transactions_commit() {
    let (db, mut a, mut b) = setup("");
    let mut c = Session::new(&db, "tabula", "tabula");
    for sql in ["BEGIN", "INSERT INTO c VALUES (1, 1)"] {
        run(&mut a, sql).unwrap();
    }
    for sql in ["BEGIN", "INSERT INTO c VALUES (2, 1)"] {
        run(&mut b, sql).unwrap();
    }
    for sql in ["BEGIN", "DELETE FROM p WHERE id = 2"] {
        run(&mut c, sql).unwrap();
    }
    run(&mut a, "COMMIT").unwrap();
    run(&mut b, "COMMIT").unwrap();
    run(&mut c, "COMMIT").unwrap();
    assert_eq!(ints(&mut a, "SELECT id FROM c ORDER BY id"), vec![1, 2]);
    assert_eq!(ints(&mut a, "SELECT id FROM p"), vec![1]);
    // A transaction that removed a parent in a statement it rolled back keeps no guard on it.
    for sql in ["BEGIN", "SAVEPOINT s", "DELETE FROM c", "DELETE FROM p WHERE id = 1", "ROLLBACK TO SAVEPOINT s"] {
        run(&mut c, sql).unwrap();
    }
    run(&mut a, "INSERT INTO c VALUES (3, 1)").unwrap();
    run(&mut c, "COMMIT").unwrap();
    assert_eq!(ints(&mut c, "SELECT id FROM c ORDER BY id"), vec![1, 2, 3]);
    assert_eq!(ints(&mut b, "SELECT count(*) FROM c WHERE p = 1"), vec![3]);
}
