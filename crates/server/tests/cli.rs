//! The `tabula` binary's settings, as a user passes them: flags and the configuration file.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn tabula() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tabula"))
}

/// Runs the binary to its exit and returns what it wrote to stderr; it must fail.
fn refused(cmd: &mut Command) -> String {
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().expect("run tabula");
    assert!(!out.status.success(), "tabula should have refused to start");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_block_cache_of_zero_is_refused_from_the_flag_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let err = refused(tabula().arg("--data-dir").arg(&data).args(["--listen", "127.0.0.1:0", "--block-cache-mb", "0"]));
    assert!(err.contains("--block-cache-mb must be at least 1"), "{err}");

    let file = dir.path().join("tabula.toml");
    std::fs::write(&file, "block_cache_mb = 0\nlisten = \"127.0.0.1:0\"\n").unwrap();
    let err = refused(tabula().arg("--data-dir").arg(&data).arg("--config").arg(&file));
    assert!(err.contains("--block-cache-mb must be at least 1"), "{err}");

    let err = refused(tabula().arg("--data-dir").arg(&data).args(["--listen", "127.0.0.1:0", "--block-cache-mb", "lots"]));
    assert!(err.contains("--block-cache-mb"), "{err}");
}

/// `--store` names a TiKV cluster; a malformed address, and a cluster that cannot be reached, are refused
/// at start with what was wrong (the runs against a real cluster are `tabula-kv-tikv`'s, with
/// `TABULA_TIKV_PD`).
#[test]
fn a_tikv_store_that_is_malformed_or_unreachable_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let err = refused(tabula().arg("--data-dir").arg(dir.path()).args(["--listen", "127.0.0.1:0", "--store", "pd1:2379"]));
    assert!(err.contains("--store: a TiKV store is named tikv://pd-host:port[,...][/prefix]"), "{err}");
    let file = dir.path().join("tabula.toml");
    std::fs::write(&file, "store = \"tikv://127.0.0.1:9/shop\"\nlisten = \"127.0.0.1:0\"\n").unwrap();
    let err = refused(tabula().arg("--config").arg(&file));
    assert!(err.contains("cannot reach TiKV through PD at 127.0.0.1:9"), "{err}");
    let err = refused(tabula().env("TABULA_STORE", "tikv:///x").args(["--listen", "127.0.0.1:0"]));
    assert!(err.contains("names no PD endpoint"), "{err}");
}

#[test]
fn a_server_starts_with_the_block_cache_it_is_given_and_shows_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = tabula()
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--listen", "127.0.0.1:0", "--block-cache-mb", "64", "--wal-prefill-mb", "0", "--busy-poll-us", "250"])
        .args(["--max-connections", "7"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tabula");
    let mut first = String::new();
    // Kept open while the server runs: it prints a second line, and a closed pipe would end it.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    let shown = first.rsplit_once(" on ").map(|(_, addr)| addr.trim().to_string()).and_then(|addr| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (host, port) = addr.rsplit_once(':')?;
            let conn = format!("host={host} port={port} user=tabula dbname=tabula");
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.ok()?;
            tokio::spawn(connection);
            let mut shown = Vec::new();
            for name in ["tabula.block_cache_size", "tabula.wal_prefill_size", "tabula.busy_poll", "max_connections"] {
                let row = client.query_one(&format!("SHOW {name}"), &[]).await.ok()?;
                shown.push(row.get::<_, String>(0));
            }
            Some(shown)
        })
    });
    let _ = child.kill();
    let _ = child.wait();
    drop(out);
    assert!(first.contains("serving"), "the server did not start: {first:?}");
    assert_eq!(shown.expect("SHOW over a connection"), ["64MB", "0", "250us", "7"]);
}

/// The log, as an operator reads it from a file: a failed statement at ERROR with its text (as
/// PostgreSQL's `log_min_error_statement`), a slow result timed to the end of its stream and a slow COPY
/// FROM STDIN to its end, and no colour codes where stderr is no terminal.
#[test]
fn the_log_has_failed_statements_and_slow_streams_in_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("tabula.log");
    let mut child = tabula()
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--listen", "127.0.0.1:0", "--wal-prefill-mb", "0", "--slow-statement-ms", "200"])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start tabula");
    let mut first = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    let addr = first.rsplit_once(" on ").map(|(_, addr)| addr.trim().to_string()).expect("the address");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        use futures::SinkExt;
        let (host, port) = addr.rsplit_once(':').unwrap();
        let conn = format!("host={host} port={port} user=tabula dbname=tabula");
        let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client.simple_query("SELECT * FROM nothing_here").await.expect_err("no such table");
        client.batch_execute("CREATE TABLE s (k bigint PRIMARY KEY)").await.unwrap();
        // The statement returns its stream at once; the rows take 300 ms to come.
        client.simple_query("SELECT pg_sleep(0.1) FROM generate_series(1, 3)").await.unwrap();
        let sink = client.copy_in::<_, bytes::Bytes>("COPY s FROM STDIN").await.unwrap();
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from_static(b"100\n")).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        sink.send(bytes::Bytes::from_static(b"101\n")).await.unwrap();
        assert_eq!(sink.finish().await.unwrap(), 2);
    });
    let _ = child.kill();
    let _ = child.wait();
    drop(out);
    let text = std::fs::read_to_string(&log).unwrap();
    let line = |needle: &str| text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no {needle:?} in the log:\n{text}"));
    let failed = line("relation \"nothing_here\" does not exist");
    assert!(
        failed.contains("ERROR") && failed.contains("statement=\"SELECT * FROM nothing_here\"") && failed.contains("42P01"),
        "{failed}"
    );
    assert!(line("sql=\"SELECT pg_sleep(0.1) FROM generate_series(1, 3)\"").contains("slow statement"), "{text}");
    assert!(line("sql=\"COPY s FROM STDIN\"").contains("slow statement"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in a file: {text}");
}
