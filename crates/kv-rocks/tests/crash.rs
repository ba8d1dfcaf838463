//! Durability: a child process writes and acknowledges rows, is killed with SIGKILL mid-stream, and after
//! reopening every acknowledged write is there, and nothing older comes back over a newer write.

#[path = "../../store/tests/common/mod.rs"]
mod common;
mod support;

/// RocksDB: a crash needs a disk.
const ENGINE: common::EngineChoice = support::ROCKS;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;

use common::*;
use tabula_store::*;

const CHILD_ENV: &str = "TABULA_CRASH_CHILD_DIR";

/// The child: writes rows forever, printing each key once its write returned.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let durability = match std::env::var("TABULA_CRASH_DURABILITY").as_deref() {
        Ok("group") => Durability::Group { interval: std::time::Duration::from_millis(5) },
        _ => Durability::Sync,
    };
    let config = StoreConfig { durability, maintenance_interval: None, ..StoreConfig::default() };
    let store = open_with(dir.as_ref(), config);
    let _ = store.create_table(table("c", &[("k", PkType::Integer)], TableOptions::default()));
    let recycle = std::env::var("TABULA_CRASH_RECYCLE").is_ok();
    let mut out = std::io::stdout().lock();
    for i in 0.. {
        // Each flush starts a new log and frees the last; from the second on, new logs reuse freed files. The
        // first log holds 150 rows and its reuse only 40, so the log being written when the child dies is a
        // recycled file with older records after the new ones.
        if recycle && (i == 150 || (i > 150 && i % 40 == 0)) {
            store.flush().unwrap();
        }
        store.put_row("c", &[Some(int(i))], &[CellWrite::new("v", Value::Integer(i * 7))], &Condition::ignore()).unwrap();
        store.update_row("c", &[int(0)], &[("n".into(), UpdateOp::Increment(1))], &Condition::ignore()).unwrap();
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
    }
}

/// The child of the ingestion crash test: from row `TABULA_CRASH_START` on, durable writes into `c`, a bulk
/// load of 20 rows into `b` every 25 writes (each ingested as a table file), and a flush every 40 (each
/// switches to a recycled log). It prints `c i` once row i's write returned and `b i` once load i committed.
#[test]
fn crash_child_ingesting() {
    let Ok(dir) = std::env::var("TABULA_CRASH_INGEST_DIR") else { return };
    let start: i64 = std::env::var("TABULA_CRASH_START").unwrap().parse().unwrap();
    let config = StoreConfig { durability: Durability::Sync, maintenance_interval: None, bulk_ingest_bytes: 0, ..StoreConfig::default() };
    let store = open_with(dir.as_ref(), config);
    let _ = store.create_table(table("c", &[("k", PkType::Integer)], TableOptions::default()));
    let _ = store.create_table(table("b", &[("k", PkType::Integer)], TableOptions::default()));
    let mut out = std::io::stdout().lock();
    for i in start.. {
        if i % 25 == 0 {
            let mut load = store.bulk_load("b").unwrap();
            for j in 0..20 {
                load.add_row(&[int(i * 100 + j)], &[CellWrite::new("v", Value::Integer(i))]).unwrap();
            }
            // A load the last child committed after its last acknowledged write is there already: the
            // parent starts this child from that write, and the last child may have gone past it before
            // the kill reached it (more likely when other tests load the machine).
            match load.commit() {
                Ok(()) | Err(BulkError::Duplicate(_)) => {}
                Err(e) => panic!("load {i}: {e:?}"),
            }
            writeln!(out, "b {i}").unwrap();
        }
        if i % 40 == 0 {
            store.flush().unwrap();
        }
        store.put_row("c", &[Some(int(i))], &[CellWrite::new("v", Value::Integer(i * 7))], &Condition::ignore()).unwrap();
        writeln!(out, "c {i}").unwrap();
        out.flush().unwrap();
    }
}

/// Bulk loads ingest table files, which take sequence numbers no log record has, while commits go to recycled
/// logs: across many kills, every acknowledged write and every committed load is there after reopening.
#[test]
fn acknowledged_writes_and_bulk_loads_survive_sigkill_with_recycled_logs() {
    let dir = tempfile::tempdir().unwrap();
    let (mut next, mut loads) = (0i64, Vec::new());
    for cycle in 0..8 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child_ingesting", "--nocapture", "--test-threads=1"])
            .env("TABULA_CRASH_INGEST_DIR", dir.path())
            .env("TABULA_CRASH_START", next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed at a different point of the write, load and flush pattern in each cycle.
        let stop = next + 150 + cycle * 17;
        let mut acked = next - 1;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while let Some(Ok(line)) = lines.next() {
            match line.trim().split_once(' ') {
                Some(("c", i)) => acked = i.parse().unwrap(),
                Some(("b", i)) => loads.push(i.parse::<i64>().unwrap()),
                _ => continue,
            }
            if acked >= stop {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(acked >= stop, "cycle {cycle}: the child acknowledged writes before it was killed");
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        for i in 0..=acked {
            let row = store.get_row("c", &[int(i)], &ReadSpec::default()).unwrap();
            assert_eq!(row.and_then(|r| r.get("v").cloned()), Some(Value::Integer(i * 7)), "cycle {cycle}: acknowledged row {i}");
        }
        for &l in &loads {
            for j in [0, 19] {
                let row = store.get_row("b", &[int(l * 100 + j)], &ReadSpec::default()).unwrap();
                assert_eq!(row.and_then(|r| r.get("v").cloned()), Some(Value::Integer(l)), "cycle {cycle}: committed load {l}");
            }
        }
        drop(store);
        next = acked + 1;
    }
    // RocksDB's own logs of the runs (LOG and the LOG.old files of earlier opens) say whether logs were reused.
    let reused = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("LOG"))
        .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("reusing log")));
    assert!(reused, "the children wrote into recycled logs");
}

/// The child of the split crash test: durable writes from row `TABULA_CRASH_START` on into a table whose
/// partitions split at 16 KiB, with maintenance every 5 ms, so that splits run while it writes and dies.
#[test]
fn crash_child_splitting() {
    let Ok(dir) = std::env::var("TABULA_CRASH_SPLIT_DIR") else { return };
    let start: i64 = std::env::var("TABULA_CRASH_START").unwrap().parse().unwrap();
    let store = open_with(dir.as_ref(), split_config(Some(std::time::Duration::from_millis(5))));
    let _ = store.create_table(table("p", &[("g", PkType::Integer), ("i", PkType::Integer)], TableOptions::default()));
    let mut out = std::io::stdout().lock();
    for i in start.. {
        store
            .put_row("p", &[Some(int(i % 50)), Some(int(i))], &[CellWrite::new("v", Value::Binary(vec![7; 200]))], &Condition::ignore())
            .unwrap();
        writeln!(out, "{i}").unwrap();
        out.flush().unwrap();
    }
}

fn split_config(maintenance_interval: Option<std::time::Duration>) -> StoreConfig {
    StoreConfig {
        durability: Durability::Sync,
        split_bytes: 16 * 1024,
        merge_bytes: 4 * 1024,
        idle_rate: f64::MAX,
        split_write_rate: f64::MAX,
        maintenance_interval,
        ..StoreConfig::default()
    }
}

/// Partitions split while durable writes go on, and the writer is killed: after reopening, every
/// acknowledged row is there exactly once, and the partitions still cover the table without gap or overlap.
#[test]
fn acknowledged_writes_survive_sigkill_during_partition_splits() {
    let dir = tempfile::tempdir().unwrap();
    let mut next = 0i64;
    for cycle in 0..5 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child_splitting", "--nocapture", "--test-threads=1"])
            .env("TABULA_CRASH_SPLIT_DIR", dir.path())
            .env("TABULA_CRASH_START", next.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stop = next + 300 + cycle * 37;
        let mut acked = next - 1;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while let Some(Ok(line)) = lines.next() {
            if let Ok(i) = line.trim().parse::<i64>() {
                acked = i;
                if acked >= stop {
                    break;
                }
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(acked >= stop, "cycle {cycle}: the child acknowledged writes before it was killed");
        let store = open_with(dir.path(), split_config(None));
        let parts = store.partitions("p").unwrap();
        for pair in parts.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "cycle {cycle}: partitions meet");
        }
        let mut seen = Vec::new();
        let mut req = RangeRequest::full(Direction::Forward);
        loop {
            let r = store.get_range("p", &req).unwrap();
            seen.extend(r.rows.iter().map(|row| row.pk.clone()));
            match r.next_start {
                Some(n) => {
                    req = RangeRequest { start: n.into_iter().map(PkBound::Value).collect(), ..RangeRequest::full(Direction::Forward) }
                }
                None => break,
            }
        }
        let mut sorted = seen.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(seen, sorted, "cycle {cycle}: every row once, in key order");
        // Writes were sequential and durable: what is there is a prefix of them, with no hole, covering at least
        // every acknowledged one (the child may have written a few more before the kill reached it).
        let mut written: Vec<i64> = seen
            .iter()
            .map(|pk| match pk[1] {
                PkValue::Integer(i) => i,
                _ => panic!("an integer key"),
            })
            .collect();
        written.sort_unstable();
        assert!(written.iter().copied().eq(0..written.len() as i64), "cycle {cycle}: the rows written are a prefix, without holes");
        assert!(written.len() as i64 > acked, "cycle {cycle}: {} rows, {} acknowledged", written.len(), acked + 1);
        for i in 0..=acked {
            let row = store.get_row("p", &[int(i % 50), int(i)], &ReadSpec::default()).unwrap();
            assert!(row.is_some(), "cycle {cycle}: acknowledged row {i} survived");
        }
        if cycle == 4 {
            assert!(parts.len() > 1, "the table split: {} partitions", parts.len());
        }
        drop(store);
        next = acked + 1;
    }
}

fn crash_and_check(durability: &str, recycle: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .env("TABULA_CRASH_DURABILITY", durability)
        .envs(recycle.then_some(("TABULA_CRASH_RECYCLE", "1")))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = -1i64;
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while let Some(Ok(line)) = lines.next() {
        if let Ok(i) = line.trim().parse::<i64>() {
            acked = i;
            if acked >= 300 {
                break;
            }
        }
    }
    // SIGKILL: no destructor, no flush.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(acked >= 300, "the child acknowledged writes before it was killed");
    if recycle {
        // RocksDB's own log of the child's run says whether a log file was reused.
        let info = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
        assert!(info.contains("reusing log"), "the child wrote into a recycled log");
    }
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    for i in 0..=acked {
        let row = store.get_row("c", &[int(i)], &ReadSpec::default()).unwrap();
        assert_eq!(row.and_then(|r| r.get("v").cloned()), Some(Value::Integer(i * 7)), "acknowledged row {i} survived");
    }
    let n = store.get_row("c", &[int(0)], &ReadSpec::default()).unwrap().unwrap().get("n").cloned();
    match n {
        Some(Value::Integer(n)) => assert!(n > acked, "every acknowledged increment survived ({n} > {acked})"),
        other => panic!("counter lost: {other:?}"),
    }
}

#[test]
fn acknowledged_writes_survive_sigkill_sync() {
    crash_and_check("sync", false);
}

#[test]
fn acknowledged_writes_survive_sigkill_group_commit() {
    crash_and_check("group", false);
}

#[test]
fn acknowledged_writes_survive_sigkill_in_a_recycled_log_sync() {
    crash_and_check("sync", true);
}

#[test]
fn acknowledged_writes_survive_sigkill_in_a_recycled_log_group_commit() {
    crash_and_check("group", true);
}

/// A COPY killed mid-way leaves its temporary table files and spilled runs in the data directory; the next
/// open removes them (they held 101 MB after 8 killed COPYs), and leaves the store's own files alone.
#[test]
fn leftover_files_of_a_killed_bulk_load_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(NOW));
    let store = open(dir.path(), clock.clone());
    store.create_table(table("c", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    store.put_row("c", &[Some(int(1))], &[CellWrite::new("v", Value::Integer(1))], &Condition::ignore()).unwrap();
    drop(store);
    let leftovers = ["bulk-4242-0.sst", "bulk-4242-1.run", "bulk-4242-2.keys"];
    for f in leftovers {
        std::fs::write(dir.path().join(f), vec![0u8; 4096]).unwrap();
    }
    let store = open(dir.path(), clock);
    for f in leftovers {
        assert!(!dir.path().join(f).exists(), "{f} is removed");
    }
    assert_eq!(store.get_row("c", &[int(1)], &all()).unwrap().unwrap().get("v"), Some(&Value::Integer(1)));
}

/// The child of the DDL crash test: one transaction's DDL committed, then another's left open, until killed.
#[test]
fn crash_child_ddl() {
    let Ok(dir) = std::env::var("TABULA_CRASH_DDL_DIR") else { return };
    let store = open_with(dir.as_ref(), StoreConfig { durability: Durability::Sync, maintenance_interval: None, ..StoreConfig::default() });
    let pk = |n: &str| table(n, &[("k", PkType::Integer)], TableOptions::default());
    store.create_table(pk("t")).unwrap();
    store.create_table(pk("gone")).unwrap();
    store.put_row("t", &[Some(int(1))], &[CellWrite::new("v", Value::Integer(10))], &Condition::ignore()).unwrap();
    let mut done = store.begin_with_view();
    store.ddl(Some(&mut done)).drop_table("gone").unwrap();
    store.ddl(Some(&mut done)).create_table(pk("made")).unwrap();
    done.commit().unwrap();
    let mut open = store.begin_with_view();
    store.ddl(Some(&mut open)).truncate_table("t").unwrap();
    store.ddl(Some(&mut open)).drop_table("t").unwrap();
    store.ddl(Some(&mut open)).create_table(table("t", &[("other", PkType::String)], TableOptions::default())).unwrap();
    store.ddl(Some(&mut open)).rename_table("made", "renamed").unwrap();
    store.ddl(Some(&mut open)).set_user_meta("renamed", b"x".to_vec()).unwrap();
    println!("ready");
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// A process killed inside a transaction that changed the catalog: the next open undoes that DDL, and keeps
/// the DDL a transaction committed before (the table it dropped stays dropped).
#[test]
fn ddl_of_a_transaction_killed_unended_is_undone_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child_ddl", "--nocapture", "--test-threads=1"])
        .env("TABULA_CRASH_DDL_DIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ready = BufReader::new(child.stdout.take().unwrap()).lines().any(|l| l.is_ok_and(|l| l.trim_end().ends_with("ready")));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(ready, "the child made its DDL");
    let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
    assert_eq!(store.table_names(), vec!["made".to_string(), "t".to_string()]);
    assert_eq!(store.table("t").unwrap().primary_key[0].name, "k");
    assert_eq!(store.table("made").unwrap().user_meta, b"");
    let row = store.get_row("t", &[int(1)], &ReadSpec::default()).unwrap();
    assert_eq!(row.and_then(|r| r.get("v").cloned()), Some(Value::Integer(10)), "the truncated and dropped table's row is back");
}

/// The child of the index-build crash test: 60,000 rows, then an index built over them until killed.
#[test]
fn crash_child_index_build() {
    let Ok(dir) = std::env::var("TABULA_CRASH_INDEX_DIR") else { return };
    let store = open_with(dir.as_ref(), StoreConfig { durability: Durability::Sync, maintenance_interval: None, ..StoreConfig::default() });
    if store.table("t").is_err() {
        store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
        let mut load = store.bulk_load("t").unwrap();
        for k in 0..60_000 {
            load.add_row(&[int(k)], &[CellWrite::new("card", Value::Integer(k % 7))]).unwrap();
        }
        load.commit().unwrap();
    }
    println!("building");
    store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
    println!("built");
    std::thread::sleep(std::time::Duration::from_secs(600));
}

/// Killed while it builds an index (at a time that varies from run to run): after reopening, the index is
/// either gone or complete, never a part of it that reads would trust.
#[test]
fn an_index_build_killed_part_way_leaves_no_partial_index() {
    let dir = tempfile::tempdir().unwrap();
    for delay_ms in [0u64, 30, 400] {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child_index_build", "--nocapture", "--test-threads=1"])
            .env("TABULA_CRASH_INDEX_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let building = BufReader::new(child.stdout.take().unwrap()).lines().any(|l| l.is_ok_and(|l| l.trim_end().ends_with("building")));
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(building, "the child started the build");
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let indexes = store.table("t").unwrap().indexes;
        assert!(indexes.iter().all(|i| i.ready), "an index left is a complete one: {indexes:?}");
        if !indexes.is_empty() {
            let (pks, _) = store
                .index_pks("t", "by_card", &IndexRange { eq: vec![Some(Value::Integer(3))], ..IndexRange::default() }, None, 100_000)
                .unwrap();
            assert_eq!(pks.len(), (0..60_000).filter(|k| k % 7 == 3).count(), "every row with card 3 has its entry");
            store.drop_index("t", "by_card").unwrap();
        }
    }
}

/// The child of the next test: durable writes from row `TABULA_CRASH_START` on (each row's `card` is its
/// key modulo 97, and every tenth write moves an older row to another card) while the main thread builds
/// index `by_card`, drops it and builds it again, over and over; or, with `TABULA_CRASH_KEEP_INDEX`, builds
/// it once and keeps it.
#[test]
fn crash_child_writing_while_indexing() {
    let Ok(dir) = std::env::var("TABULA_CRASH_WRITE_INDEX_DIR") else { return };
    let start: i64 = std::env::var("TABULA_CRASH_START").unwrap().parse().unwrap();
    let store = Arc::new(open_with(
        dir.as_ref(),
        StoreConfig { durability: Durability::Sync, maintenance_interval: None, ..StoreConfig::default() },
    ));
    let writer = store.clone();
    std::thread::spawn(move || {
        for i in start.. {
            let card = |k: i64| CellWrite::new("card", Value::Integer(k % 97));
            writer.put_row("t", &[Some(int(i))], &[card(i)], &Condition::ignore()).unwrap();
            if i % 10 == 0 {
                let moved = CellWrite::new("card", Value::Integer(i % 89 + 1000));
                writer.put_row("t", &[Some(int(i / 2))], &[moved], &Condition::ignore()).unwrap();
            }
            // Locked for each line only: the main thread prints too.
            let mut out = std::io::stdout().lock();
            writeln!(out, "{i}").unwrap();
            out.flush().unwrap();
        }
    });
    let keep = std::env::var("TABULA_CRASH_KEEP_INDEX").is_ok();
    loop {
        store.create_index("t", IndexDef::new("by_card", &["card".into()], false, false)).unwrap();
        if keep {
            println!("built");
            std::thread::sleep(std::time::Duration::from_secs(600));
        }
        store.drop_index("t", "by_card").unwrap();
    }
}

/// The keys index `by_card` of `t` gives for one card value.
fn by_card(store: &Store, card: i64) -> Vec<i64> {
    let range = IndexRange { eq: vec![Some(Value::Integer(card))], ..IndexRange::default() };
    let (pks, next) = store.index_pks("t", "by_card", &range, None, usize::MAX).unwrap();
    assert!(next.is_none(), "one page holds every entry");
    pks.iter()
        .map(|pk| match pk[0] {
            PkValue::Integer(k) => k,
            _ => panic!("an integer key"),
        })
        .collect()
}

/// Durable writers run while an index is built, dropped and built again, and the process is killed: after
/// reopening, every acknowledged write is there, and an index that is left finds every row under its current
/// value, once (the entries its build wrote and those the writers' commits wrote agree; an entry the build
/// wrote for a row changed meanwhile is stale, and passed over as reads pass over it, until a vacuum removes it).
#[test]
fn acknowledged_writes_and_an_index_agree_after_sigkill_during_builds() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        store.create_table(table("t", &[("k", PkType::Integer)], TableOptions::default())).unwrap();
    }
    let mut next = 0i64;
    let mut found = [0, 0];
    for cycle in 0..6 {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", "crash_child_writing_while_indexing", "--nocapture", "--test-threads=1"])
            .env("TABULA_CRASH_WRITE_INDEX_DIR", dir.path())
            .env("TABULA_CRASH_START", next.to_string());
        // Every other child keeps the index it built, so that writes after a build meet its entries.
        let keep = cycle % 2 == 1;
        if keep {
            child.env("TABULA_CRASH_KEEP_INDEX", "1");
        }
        let mut child = child.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let stop = next + 200 + cycle * 53;
        let (mut acked, mut built) = (next - 1, false);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        while let Some(Ok(line)) = lines.next() {
            built |= line.trim_end().ends_with("built");
            if let Some(i) = line.split_whitespace().last().and_then(|w| w.parse::<i64>().ok()) {
                acked = i;
            }
            if acked >= stop && (built || !keep) {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(acked >= stop, "cycle {cycle}: the child acknowledged writes before it was killed");
        let store = open(dir.path(), Arc::new(ManualClock::new(NOW)));
        let mut rows = std::collections::HashMap::new();
        for row in store
            .get_range("t", &RangeRequest { limit: None, budget_bytes: Some(usize::MAX), ..RangeRequest::full(Direction::Forward) })
            .unwrap()
            .rows
        {
            let (PkValue::Integer(k), Some(Value::Integer(card))) =
                (&row.pk[0], row.cells("card").and_then(|c| c.first()).map(|c| &c.value))
            else {
                panic!("a row with an integer key and card: {row:?}")
            };
            rows.insert(*k, *card);
        }
        for i in 0..=acked {
            assert!(rows.contains_key(&i), "cycle {cycle}: acknowledged row {i} survived");
        }
        let indexes = store.table("t").unwrap().indexes;
        assert!(indexes.iter().all(|i| i.ready), "cycle {cycle}: an index left is a complete one: {indexes:?}");
        found[indexes.len().min(1)] += 1;
        assert!(!keep || !indexes.is_empty(), "cycle {cycle}: the index built before the kill is there");
        if !indexes.is_empty() {
            let mut cards: Vec<i64> = rows.values().copied().collect();
            cards.sort_unstable();
            cards.dedup();
            for c in cards {
                let mut want: Vec<i64> = rows.iter().filter(|(_, v)| **v == c).map(|(k, _)| *k).collect();
                want.sort_unstable();
                // An entry the build wrote for a row a writer had changed meanwhile stays behind, under the
                // old value; reads check each entry against its row and pass over such ones, as here.
                let found: Vec<i64> = by_card(&store, c).into_iter().filter(|k| rows.get(k) == Some(&c)).collect();
                assert_eq!(found, want, "cycle {cycle}: the rows with card {c}, in key order");
            }
            // VACUUM removes such stale entries: one entry per row is left.
            store.vacuum("t").unwrap();
            assert_eq!(store.index_entries("t", "by_card").unwrap(), rows.len(), "cycle {cycle}: entries after a vacuum");
            store.drop_index("t", "by_card").unwrap();
        }
        drop(store);
        next = acked + 1;
    }
    println!("indexes found complete after {} kills, absent after {}", found[1], found[0]);
}
