//! PostgreSQL as the oracle: `tests/oracle/oracle.py` runs seeded random statements on Tabula and on a
//! throwaway PostgreSQL side by side, and fails on any difference (see its docstring). The README's test
//! command runs a bounded slice with fixed seeds; `scripts/oracle` runs a longer one.
//!
//! TABULA_ORACLE_STATEMENTS (statements per seed, default 2000) and TABULA_ORACLE_SEEDS (comma-separated,
//! default 1,2,3) choose the slice.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::TestServer;

/// A PostgreSQL server in a temporary directory, stopped and removed on drop. As root, it runs as the
/// `postgres` system user (initdb and postgres refuse root).
struct Postgres {
    child: Child,
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    as_root: bool,
}

impl Postgres {
    fn start() -> Postgres {
        let bin = postgres_bin();
        let dir = tempfile::tempdir().unwrap();
        let as_root = unsafe { libc::geteuid() } == 0;
        let user = if as_root { "postgres".to_string() } else { std::env::var("USER").unwrap_or_else(|_| "postgres".into()) };
        if as_root {
            assert!(Command::new("chown").arg("postgres").arg(dir.path()).status().unwrap().success(), "chown of the data directory");
        }
        let data = dir.path().join("data");
        let initdb = command(as_root, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", &user, "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdout(Stdio::null())
            .output()
            .expect("initdb runs");
        assert!(initdb.status.success(), "initdb: {}", String::from_utf8_lossy(&initdb.stderr));
        let port = free_port();
        let child = command(as_root, &bin.join("postgres"))
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .arg("-k")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("postgres starts");
        let pg = Postgres { child, bin, dir, port, user, as_root };
        let started = Instant::now();
        while !pg.ready() {
            assert!(started.elapsed() < Duration::from_secs(60), "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(200));
        }
        pg
    }

    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = command(self.as_root, &self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["stop", "-m", "immediate"])
            .stdout(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

fn command(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// The newest PostgreSQL installed from Debian's packages (`scripts/test` installs it).
fn postgres_bin() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/test installs it)")
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("postgres").exists())
        .collect();
    found.sort();
    found.pop().expect("a PostgreSQL server binary under /usr/lib/postgresql")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn python() -> PathBuf {
    std::env::var_os("TABULA_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/tabula/venv/bin/python"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tabula_answers_as_postgresql_does() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let statements = std::env::var("TABULA_ORACLE_STATEMENTS").unwrap_or_else(|_| "2000".into());
    let seeds = std::env::var("TABULA_ORACLE_SEEDS").unwrap_or_else(|_| "1,2,3".into());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/oracle/oracle.py");
    for seed in seeds.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        // A fresh Tabula per seed, as PostgreSQL's tables are dropped and made again.
        let server = TestServer::start().await;
        let mut cmd = Command::new(python());
        cmd.arg(&script)
            .args(["--tabula", &server.port().to_string(), "--postgres", &pg.port.to_string(), "--postgres-user", &pg.user])
            .args(["--seed", seed, "--statements", &statements]);
        let out = tokio::task::block_in_place(|| cmd.output().expect("the oracle runs"));
        let report = String::from_utf8_lossy(&out.stdout);
        println!("{report}");
        assert!(out.status.success(), "differences from PostgreSQL:\n{report}\n{}", String::from_utf8_lossy(&out.stderr));
        server.stop().await;
    }
}

/// psql of the PostgreSQL package, against `port` as `user`: (succeeded, stdout, stderr). `input` is
/// given on stdin (`-f -`) when there is one.
fn psql(bin: &Path, port: u16, user: &str, db: &str, args: &[&str], input: Option<&str>) -> (bool, String, String) {
    use std::io::Write;
    let mut child = Command::new(bin.join("psql"))
        .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string(), "-U", user, "-d", db, "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .env("PGTZ", "UTC")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("psql runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.unwrap_or("").as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// A dump of the Tabula database served at `port`, by PostgreSQL 15's pg_dump.
fn pg_dump(bin: &Path, port: u16) -> String {
    pg_dump_of(bin, port, "tabula", "tabula", &[])
}

fn pg_dump_of(bin: &Path, port: u16, user: &str, db: &str, args: &[&str]) -> String {
    let dump = Command::new(bin.join("pg_dump"))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", user, "--no-password"])
        .args(args)
        .arg(db)
        .output()
        .expect("pg_dump runs");
    assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
    String::from_utf8(dump.stdout).unwrap()
}

/// Runs each query with psql on two servers (port, user, database): they must answer alike.
fn same_answers(bin: &Path, servers: [(u16, &str, &str); 2], queries: &[&str], what: &str) {
    for query in queries {
        let answers = tokio::task::block_in_place(|| servers.map(|(p, u, db)| psql(bin, p, u, db, &["-At", "-c", query], None)));
        assert!(answers[0].0 && answers[1].0, "{query}: {} / {}", answers[0].2, answers[1].2);
        assert_eq!(answers[0].1, answers[1].1, "{query}: {what}");
    }
}

/// A backup with the standard tool: PostgreSQL 15's own pg_dump dumps a Tabula database, the dump loads
/// into PostgreSQL with psql, and both then answer the same for every table; a dump with Tabula's table
/// options loads into a new Tabula (psql stopping at the first error), which then answers as the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pg_dump_of_tabula_loads_into_postgresql_and_into_tabula() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let server = TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute(
        r#"CREATE TABLE devices (id bigint PRIMARY KEY, name text NOT NULL, seen timestamptz, score double precision,
               online boolean, note varchar DEFAULT 'none', doc jsonb, raw bytea, uid uuid, born date,
               price numeric, small smallint, mid integer, at timestamp, ratio real);
           INSERT INTO devices VALUES
               (1, E'tab\there', '2026-01-02 03:04:05.678+00', 1.5, true, E'quote '' and \\ backslash',
                '{"k": [1, 2]}', '\x00ff', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '2020-02-29', 12.340, -3, 7,
                '1999-12-31 23:59:59', 0.25),
               (2, E'line\nbreak', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
               (3, 'ünïcødé \N', '1970-01-01 00:00:00+00', -0.0, false, '', 'null', '', NULL, '0001-01-01',
                -0.5, 32767, -2147483648, NULL, -1e-3);
           CREATE TABLE readings (device varchar(8), at bigint, value double precision, PRIMARY KEY (device, at));
           INSERT INTO readings VALUES ('d1', 1, 0.5), ('d1', 2, NULL), ('d2', 1, -1e10);
           CREATE TABLE "MixedCase" ("Key" text PRIMARY KEY, "select" integer);
           INSERT INTO "MixedCase" VALUES ('x', 1), ('Y', NULL);
           CREATE TABLE empty_one (k bytea PRIMARY KEY, v text);
           CREATE TABLE events (device text, what text);
           INSERT INTO events VALUES ('d1', 'boot'), ('d1', 'boot'), (NULL, 'orphan');
           CREATE SEQUENCE ticket_no START 100 INCREMENT 5;
           CREATE TABLE tickets (no bigint PRIMARY KEY DEFAULT nextval('ticket_no'), device bigint REFERENCES devices(id),
               price numeric(8,2));
           INSERT INTO tickets (device, price) VALUES (1, 9.999), (2, 1);
           CREATE VIEW ticketed AS SELECT d.name, t.no FROM tickets t JOIN devices d ON d.id = t.device;
           CREATE VIEW cheap_tickets AS SELECT no, price FROM tickets WHERE price < 5 WITH LOCAL CHECK OPTION;"#,
    )
    .await
    .unwrap();
    let dump = tokio::task::block_in_place(|| pg_dump(&pg.bin, server.port()));
    // The user's tables, and none of Tabula's own views (the `tabula` extension's members).
    assert!(dump.contains("CREATE TABLE public.devices"), "{dump}");
    assert!(!dump.contains("tabula.partitions") && !dump.contains("CREATE SCHEMA"), "{dump}");

    let (bin, port, user) = (pg.bin.clone(), pg.port, pg.user.clone());
    let (ok, _, err) = psql(&bin, port, &user, "postgres", &["-c", "CREATE ROLE tabula"], None);
    assert!(ok, "{err}");
    let (ok, _, err) = tokio::task::block_in_place(|| psql(&bin, port, &user, "postgres", &["-q", "-f", "-"], Some(&dump)));
    assert!(ok, "the dump does not load into PostgreSQL: {err}\n{dump}");
    let queries = [
        "SELECT * FROM devices ORDER BY id",
        "SELECT * FROM readings ORDER BY device, at",
        r#"SELECT * FROM "MixedCase" ORDER BY "Key""#,
        "SELECT count(*) FROM empty_one",
        "SELECT * FROM events ORDER BY device, what",
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'readings'::regclass",
        "SELECT conname, contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'devices'::regclass ORDER BY conname",
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
        "SELECT id FROM devices WHERE name = 'ünïcødé \\N'",
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default \
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
        "SELECT * FROM tickets ORDER BY no",
        "SELECT last_value, is_called FROM ticket_no",
        "INSERT INTO tickets (device) VALUES (3) RETURNING no",
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'tickets'::regclass ORDER BY conname",
        "SELECT * FROM ticketed ORDER BY no",
        "SELECT table_name, check_option, is_updatable FROM information_schema.views WHERE table_schema = 'public' ORDER BY 1",
        "SELECT * FROM cheap_tickets ORDER BY no",
    ];
    same_answers(
        &bin,
        [(server.port(), "tabula", "tabula"), (port, &user, "postgres")],
        &queries,
        "Tabula, then PostgreSQL after the restore",
    );

    // The same database, with Tabula's own table options, dumped and restored into a new Tabula: tables
    // are made without their keys, loaded with COPY, and keyed by ALTER TABLE ... ADD PRIMARY KEY.
    c.batch_execute(
        "CREATE TABLE spread (k bigint PRIMARY KEY, v text) WITH (hash_prefix = 4, ttl = '30 days', max_versions = 3);
         INSERT INTO spread VALUES (1, 'a'), (2, 'b');
         CREATE TABLE spread_rows (v text) WITH (hash_prefix = 8);
         INSERT INTO spread_rows VALUES ('x'), ('x');",
    )
    .await
    .unwrap();
    let dump = tokio::task::block_in_place(|| pg_dump(&pg.bin, server.port()));
    let restored = TestServer::start().await;
    let (ok, _, err) = tokio::task::block_in_place(|| {
        psql(&bin, restored.port(), "tabula", "tabula", &["-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], Some(&dump))
    });
    assert!(ok, "the dump does not load into Tabula: {err}\n{dump}");
    let queries = [
        "SELECT * FROM devices ORDER BY id",
        "SELECT * FROM readings ORDER BY device, at",
        r#"SELECT * FROM "MixedCase" ORDER BY "Key""#,
        "SELECT * FROM events ORDER BY device, what",
        "SELECT * FROM spread ORDER BY k",
        "SELECT * FROM spread_rows",
        "SELECT * FROM tickets ORDER BY no",
        "SELECT last_value, is_called FROM ticket_no",
        "SELECT * FROM ticketed ORDER BY no",
        "SELECT table_name, check_option FROM information_schema.views WHERE table_schema = 'public' ORDER BY 1",
        "SELECT * FROM tabula.tables ORDER BY table_name",
        "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint ORDER BY conname",
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname",
        "SELECT device, what FROM events WHERE device = 'd1'",
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default \
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position",
    ];
    same_answers(
        &bin,
        [(server.port(), "tabula", "tabula"), (restored.port(), "tabula", "tabula")],
        &queries,
        "Tabula, then Tabula after the restore",
    );
    restored.stop().await;
    server.stop().await;
}

/// A PostgreSQL 15 database, dumped by its pg_dump with the defaults a move to another server takes
/// (`--no-owner`: the roles are not the same), loads into Tabula with psql stopping at the first error:
/// serial and identity keys (a sequence each, OWNED BY its column, its value set by `setval`), a sequence
/// of its own with START and INCREMENT, foreign keys, CHECK, UNIQUE, defaults, an index and a view. Both
/// then answer alike, and go on drawing the same keys. Dumped as INSERTs, it loads in one transaction too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgresql_dump_with_sequences_loads_into_tabula() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let (bin, port, user) = (pg.bin.clone(), pg.port, pg.user.clone());
    let schema = "CREATE TABLE authors (id serial PRIMARY KEY, name text NOT NULL UNIQUE, born date DEFAULT '1900-01-01');
        CREATE TABLE books (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            author_id integer REFERENCES authors(id) ON DELETE CASCADE, title varchar(200) NOT NULL,
            price numeric(10,2) DEFAULT 0 CHECK (price >= 0));
        CREATE INDEX books_title ON books (title);
        CREATE SEQUENCE invoice_no START 1000 INCREMENT 10;
        CREATE TABLE invoices (no integer PRIMARY KEY DEFAULT nextval('invoice_no'), book_id bigint REFERENCES books);
        INSERT INTO authors (name) VALUES ('Ann'), ('Bob');
        INSERT INTO books (author_id, title, price) VALUES (1, 'A', 10), (2, 'B', 20), (2, 'C', 5);
        INSERT INTO invoices (book_id) VALUES (1), (2);
        CREATE VIEW cheap AS SELECT b.title, a.name FROM books b JOIN authors a ON a.id = b.author_id WHERE b.price < 15;";
    let (ok, _, err) = psql(&bin, port, &user, "postgres", &["-q", "-c", schema], None);
    assert!(ok, "{err}");
    let dump = tokio::task::block_in_place(|| pg_dump_of(&bin, port, &user, "postgres", &["--no-owner"]));
    assert!(dump.contains("CREATE SEQUENCE public.invoice_no") && dump.contains("ADD GENERATED BY DEFAULT AS IDENTITY"), "{dump}");
    assert!(dump.contains("CREATE VIEW public.cheap"), "{dump}");
    let server = TestServer::start().await;
    let (ok, _, err) = tokio::task::block_in_place(|| psql(&bin, server.port(), "tabula", "tabula", &["-q", "-f", "-"], Some(&dump)));
    assert!(ok, "the dump does not load into Tabula: {err}\n{dump}");
    let queries = [
        "SELECT * FROM authors ORDER BY id",
        "SELECT * FROM books ORDER BY id",
        "SELECT * FROM invoices ORDER BY no",
        "SELECT last_value, is_called FROM invoice_no",
        "SELECT * FROM cheap ORDER BY title",
        "SELECT sequencename, data_type, start_value, increment_by, last_value FROM pg_sequences ORDER BY 1",
        "SELECT pg_get_serial_sequence('authors', 'id'), pg_get_serial_sequence('books', 'id')",
        "INSERT INTO authors (name) VALUES ('Cy') RETURNING id, born",
        "INSERT INTO books (author_id, title) VALUES (3, 'D') RETURNING id, price",
        "INSERT INTO invoices (book_id) VALUES (4) RETURNING no",
        "SELECT conname, contype FROM pg_constraint WHERE conrelid = 'books'::regclass ORDER BY conname",
        "DELETE FROM invoices WHERE book_id = 2",
        "DELETE FROM authors WHERE id = 2",
        "SELECT id, title FROM books ORDER BY id",
    ];
    // The same database dumped as INSERTs and restored in one transaction (`psql --single-transaction`):
    // each key is added after its table's rows, in the transaction that wrote them.
    let inserts = tokio::task::block_in_place(|| pg_dump_of(&bin, port, &user, "postgres", &["--no-owner", "--inserts"]));
    let single = TestServer::start().await;
    let (ok, _, err) = tokio::task::block_in_place(|| {
        psql(&bin, single.port(), "tabula", "tabula", &["-q", "--single-transaction", "-f", "-"], Some(&inserts))
    });
    assert!(ok, "the dump does not load into Tabula in one transaction: {err}\n{inserts}");
    same_answers(
        &bin,
        [(single.port(), "tabula", "tabula"), (port, &user, "postgres")],
        &queries[..7],
        "Tabula after a restore in one transaction",
    );
    single.stop().await;
    same_answers(
        &bin,
        [(server.port(), "tabula", "tabula"), (port, &user, "postgres")],
        &queries,
        "Tabula after the restore, then PostgreSQL",
    );
    let (ok, _, err) =
        psql(&bin, server.port(), "tabula", "tabula", &["-c", "INSERT INTO books (author_id, title) VALUES (99, 'X')"], None);
    assert!(!ok && err.contains("violates foreign key constraint"), "{err}");
    server.stop().await;
}

/// PostgreSQL's own benchmark tool with its defaults. `pgbench -i` (char(n) fillers, `fillfactor`,
/// `COPY ... WITH (FREEZE ON)`, `VACUUM ANALYZE`, primary keys added to loaded tables) makes tables that
/// answer as PostgreSQL's do, char(n) padding included; then a TPC-B-like run, its serialization
/// failures retried as pgbench retries them, leaves every balance in step with the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initializes_and_runs_on_tabula() {
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let server = TestServer::start().await;
    let pgbench = |port: u16, user: &str, db: &str, args: &[&str]| {
        let out = Command::new(pg.bin.join("pgbench"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", user])
            .args(args)
            .arg(db)
            .output()
            .expect("pgbench runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "pgbench {args:?}: {text}");
        text
    };
    let servers = [(server.port(), "tabula", "tabula"), (pg.port, pg.user.as_str(), "postgres")];
    for (port, user, db) in servers {
        tokio::task::block_in_place(|| pgbench(port, user, db, &["-i", "-s", "1", "-q"]));
    }
    let queries = [
        "SELECT count(*), sum(abalance), count(filler), min(length(filler)), max(octet_length(filler)) FROM pgbench_accounts",
        "SELECT * FROM pgbench_branches ORDER BY bid",
        "SELECT tid, bid, tbalance, filler IS NULL FROM pgbench_tellers ORDER BY tid",
        "SELECT aid, bid, '[' || filler || ']', replace(concat(filler, '|'), ' ', '_') FROM pgbench_accounts WHERE aid IN (1, 50000, 100000) ORDER BY aid",
        "SELECT count(*) FROM pgbench_accounts WHERE filler = '' AND bid = 1",
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable FROM information_schema.columns \
         WHERE table_name LIKE 'pgbench%' ORDER BY table_name, ordinal_position",
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'pgbench%' ORDER BY indexname",
    ];
    same_answers(&pg.bin, servers, &queries, "Tabula, then PostgreSQL, after pgbench -i");

    let report =
        tokio::task::block_in_place(|| pgbench(server.port(), "tabula", "tabula", &["-c", "2", "-t", "50", "--max-tries", "1000"]));
    assert!(report.contains("number of transactions actually processed: 100/100"), "{report}");
    assert!(report.contains("number of failed transactions: 0"), "{report}");
    let (ok, sums, err) = tokio::task::block_in_place(|| {
        psql(
            &pg.bin,
            server.port(),
            "tabula",
            "tabula",
            &[
                "-At",
                "-c",
                "SELECT (SELECT count(*) FROM pgbench_history), (SELECT sum(delta) FROM pgbench_history), \
                 (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(bbalance) FROM pgbench_branches), \
                 (SELECT sum(tbalance) FROM pgbench_tellers)",
            ],
            None,
        )
    });
    assert!(ok, "{err}");
    let sums: Vec<&str> = sums.trim().split('|').collect();
    assert_eq!(sums[0], "100", "{sums:?}");
    assert!(sums[1..].iter().all(|s| *s == sums[1]), "balances out of step with the history: {sums:?}");
    server.stop().await;
}
