//! A soak: 64 connections of mixed load against the `tabula` binary, with no error allowed (a transaction's
//! 40001 serialization failure is the client's to retry, and counted), the server alive at the end, and its
//! resident memory flat once warm.
//!
//! Beside it, concurrent transactions that delete parents and insert their children, checked for orphans.
//!
//! The test command runs it for 20 seconds (`TABULA_SOAK_SECS`); `scripts/soak` runs it for 10 minutes.
//! Memory is sampled every second from the server's /proc status while the clients run. After the first
//! quarter of the run (caches and memtables filling), the later half of the samples may not rise more than
//! 10 % above the earlier half's peak, plus 16 MiB of slack for a short run's noise.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_postgres::error::SqlState;

mod common;

const CONNECTIONS: usize = 64;

/// The server's resident memory (kB).
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

/// One client's statements, chosen by a seeded sequence so that a failure reproduces.
async fn client_loop(
    client: tokio_postgres::Client,
    seed: u64,
    until: Instant,
    done: Arc<AtomicU64>,
    retried: Arc<AtomicU64>,
) -> Result<(), String> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let insert = client
        .prepare("INSERT INTO soak (k, v, n) VALUES ($1, $2, 0) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v")
        .await
        .map_err(|e| e.to_string())?;
    let get = client.prepare("SELECT v, n FROM soak WHERE k = $1").await.map_err(|e| e.to_string())?;
    let range = client.prepare("SELECT k, v FROM soak WHERE k >= $1 ORDER BY k LIMIT 20").await.map_err(|e| e.to_string())?;
    while Instant::now() < until {
        let k = (next() % 20_000) as i64;
        let r = match next() % 10 {
            0..=2 => client.execute(&insert, &[&k, &format!("value-{}", next() % 1000)]).await.map(|_| ()),
            3..=5 => client.query(&get, &[&k]).await.map(|_| ()),
            6 => client.query(&range, &[&k]).await.map(|_| ()),
            7 => client.execute("UPDATE soak SET n = n + 1 WHERE k = $1", &[&k]).await.map(|_| ()),
            8 => client.simple_query("SELECT n % 7 AS g, count(*), max(v) FROM soak GROUP BY 1 ORDER BY 1").await.map(|_| ()),
            _ => {
                let t = async {
                    client.batch_execute("BEGIN").await?;
                    client.execute("UPDATE soak SET n = n + 1 WHERE k = $1", &[&k]).await?;
                    client.execute(&insert, &[&(k + 1), &"in a transaction"]).await?;
                    client.batch_execute("COMMIT").await
                };
                match t.await {
                    Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
                        retried.fetch_add(1, Ordering::Relaxed);
                        let _ = client.batch_execute("ROLLBACK").await;
                        Ok(())
                    }
                    other => other,
                }
            }
        };
        match r {
            Ok(()) => {}
            Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) => {
                retried.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return Err(format!("client {seed}: {e:?}")),
        }
        done.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

#[test]
fn sixty_four_connections_of_mixed_load_with_no_error_and_flat_memory() {
    let secs: u64 = std::env::var("TABULA_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_tabula"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--listen", "127.0.0.1:0", "--block-cache-mb", "32", "--max-connections", "100", "--log-level", "warn"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tabula");
    let pid = server.id();
    let mut first = String::new();
    // Kept open for the server's life: it prints a second line, and a closed pipe would end it.
    let mut out = BufReader::new(server.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    let addr = first.rsplit_once(" on ").map(|(_, a)| a.trim().to_string()).expect("the server says where it listens");
    let (host, port) = addr.rsplit_once(':').unwrap();
    let conn = format!("host={host} port={port} user=tabula dbname=tabula");

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (outcome, samples, done, retried) = rt.block_on(async {
        let connect = || async {
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            client
        };
        let setup = connect().await;
        setup
            .batch_execute(
                "CREATE TABLE soak (k bigint PRIMARY KEY, v text, n bigint);
                 INSERT INTO soak SELECT g, 'initial', 0 FROM generate_series(0, 19999) g",
            )
            .await
            .unwrap();
        let until = Instant::now() + Duration::from_secs(secs);
        let (done, retried) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut clients = Vec::new();
        for seed in 0..CONNECTIONS as u64 {
            let client = connect().await;
            clients.push(tokio::spawn(client_loop(client, seed + 1, until, done.clone(), retried.clone())));
        }
        let mut samples = Vec::new();
        // Sampled while the clients run.
        while Instant::now() + Duration::from_secs(1) < until {
            tokio::time::sleep(Duration::from_secs(1)).await;
            samples.push(rss_kb(pid).expect("the server is alive"));
        }
        let mut outcome = Ok(());
        for c in clients {
            if let Err(e) = c.await.unwrap() {
                outcome = Err(e);
            }
        }
        // Still answering, and every row still there.
        let n: i64 = setup.query_one("SELECT count(*) FROM soak", &[]).await.unwrap().get(0);
        assert!(n >= 20_000, "rows were lost: {n}");
        (outcome, samples, done.load(Ordering::Relaxed), retried.load(Ordering::Relaxed))
    });
    let _ = server.kill();
    let _ = server.wait();
    drop(out);
    outcome.unwrap();
    eprintln!("soak: {secs} s, {done} statements, {retried} serialization failures retried, RSS samples (kB): {samples:?}");
    assert!(done > 1_000, "the clients ran ({done} statements)");
    // Growth is what a leak looks like: once warm, the later half of the samples may not rise more than 10 %
    // (and 16 MiB of slack for a short run's noise) above the earlier half's peak. Falling is allowed: the
    // allocator hands pages back as the load settles.
    let warm = &samples[samples.len() / 4..];
    let (early, late) = warm.split_at(warm.len() / 2);
    let peak = early.iter().copied().max().unwrap();
    let bound = peak + peak / 10 + 16 * 1024;
    for (i, s) in late.iter().enumerate() {
        assert!(
            *s <= bound,
            "resident memory at second {} is {s} kB, over 110 % of the earlier peak {peak} kB",
            i + 1 + samples.len() - late.len()
        );
    }
}

/// Transactions that empty a parent and delete it race with transactions that insert a child of it, each
/// pausing before its COMMIT so that the other commits in between, in both orders. Whatever fails must
/// fail with 23503 or 40001, and no child may be left without its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parents_deleted_while_children_are_inserted_leave_no_orphan() {
    const PARENTS: i64 = 40;
    let server = common::TestServer::start().await;
    let setup = server.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE p (id int PRIMARY KEY);
             CREATE TABLE c (id bigint PRIMARY KEY, p int REFERENCES p);
             CREATE INDEX c_p ON c (p);
             INSERT INTO p SELECT g FROM generate_series(0, 39) g",
        )
        .await
        .unwrap();
    let until = Instant::now() + Duration::from_secs(4);
    let committed = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    // The parent of each slot now: a deleted parent is replaced by a new one, never by itself, which would
    // give an orphan its parent back.
    let current: Arc<Vec<AtomicU64>> = Arc::new((0..PARENTS as u64).map(AtomicU64::new).collect());
    let mut tasks = Vec::new();
    for worker in 0..6u64 {
        let client = server.connect().await;
        let (committed, current) = (committed.clone(), current.clone());
        tasks.push(tokio::spawn(async move {
            let mut x = (worker + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut n = 0i64;
            while Instant::now() < until {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let slot = (x % PARENTS as u64) as usize;
                let parent = current[slot].load(Ordering::SeqCst) as i32;
                let deletes = worker < 2;
                let t = async {
                    client.batch_execute("BEGIN").await?;
                    if deletes {
                        client.execute("DELETE FROM c WHERE p = $1", &[&parent]).await?;
                        client.execute("DELETE FROM p WHERE id = $1", &[&parent]).await?;
                    } else {
                        n += 1;
                        client.execute("INSERT INTO c VALUES ($1, $2)", &[&((worker as i64) << 40 | n), &parent]).await?;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    client.batch_execute("COMMIT").await
                };
                match t.await {
                    Ok(()) => {
                        committed[deletes as usize].fetch_add(1, Ordering::Relaxed);
                        if deletes {
                            let next = parent + PARENTS as i32;
                            client.execute("INSERT INTO p VALUES ($1) ON CONFLICT DO NOTHING", &[&next]).await.unwrap();
                            let _ = current[slot].compare_exchange(parent as u64, next as u64, Ordering::SeqCst, Ordering::SeqCst);
                        }
                    }
                    Err(e) if [SqlState::T_R_SERIALIZATION_FAILURE, SqlState::FOREIGN_KEY_VIOLATION].contains(e.code().unwrap()) => {
                        client.batch_execute("ROLLBACK").await.unwrap();
                    }
                    Err(e) => panic!("worker {worker}: {e:?}"),
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let orphans: i64 =
        setup.query_one("SELECT count(*) FROM c WHERE NOT EXISTS (SELECT 1 FROM p WHERE p.id = c.p)", &[]).await.unwrap().get(0);
    let [children, deletes] = [0, 1].map(|i| committed[i].load(Ordering::Relaxed));
    eprintln!("{children} children inserted and {deletes} parents deleted, {orphans} orphans");
    assert_eq!(orphans, 0);
    assert!(children > 50 && deletes > 10, "the race ran: {children} children, {deletes} deletes");
    server.stop().await;
}
