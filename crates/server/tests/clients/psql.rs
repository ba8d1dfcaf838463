//! psql against the server: scripts, `\\d`, COPY through files.

use std::process::Command;

use crate::common::TestServer;

/// psql as a subprocess against the test server: (succeeded, stdout, stderr).
fn run_psql(port: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", port, "-U", "tabula", "-d", "tabula", "-X", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .output()
        .expect("psql is installed");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_runs_scripts() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let psql = |args: &[&str]| run_psql(&port, args);
    let (ok, _, err) = psql(&["-c", "CREATE TABLE p (k text PRIMARY KEY, n bigint)", "-c", "INSERT INTO p VALUES ('a', 1), ('b', 2)"]);
    assert!(ok, "{err}");
    let (ok, out, err) = psql(&["-At", "-c", "SELECT k, n FROM p ORDER BY k DESC"]);
    assert!(ok, "{err}");
    assert_eq!(out, "b|2\na|1\n");
    let (ok, _, err) = psql(&["-c", "SELECT * FROM nothing_here"]);
    assert!(!ok);
    assert!(err.contains("relation \"nothing_here\" does not exist"), "{err}");
    // With FETCH_COUNT psql reads a result through a cursor, FETCH_COUNT rows at a time.
    let (ok, out, err) = psql(&["-At", "-v", "FETCH_COUNT=2", "-c", "SELECT k, n FROM p ORDER BY k", "-c", "SELECT k FROM p WHERE n > 5"]);
    assert!(ok, "{err}");
    assert_eq!(out, "a|1\nb|2\n");
    server.stop().await;
}

/// psql's describe commands run its own catalog queries (on DataFusion over the generated pg_catalog);
/// the output is what PostgreSQL 15 prints for the same table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_describes_tables_and_copies() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let psql = |args: &[&str]| {
        let (ok, out, err) = run_psql(&port, args);
        assert!(ok, "psql {args:?}: {err}");
        out
    };
    psql(&[
        "-c",
        "CREATE TABLE devices (site text, id bigint GENERATED ALWAYS AS IDENTITY, name varchar, temp double precision, \
         seen timestamptz, meta jsonb, active boolean DEFAULT true, PRIMARY KEY (site, id))",
    ]);
    let described = psql(&["-c", "\\d devices"]);
    let expected = r#"                                 Table "public.devices"
 Column |           Type           | Collation | Nullable |           Default            
--------+--------------------------+-----------+----------+------------------------------
 site   | text                     |           | not null | 
 id     | bigint                   |           | not null | generated always as identity
 name   | character varying        |           |          | 
 temp   | double precision         |           |          | 
 seen   | timestamp with time zone |           |          | 
 meta   | jsonb                    |           |          | 
 active | boolean                  |           |          | true
Indexes:
    "devices_pkey" PRIMARY KEY, btree (site, id)

"#;
    assert_eq!(described, expected);
    // `\d+` also asks for the options of the table's TOAST table, an unnest of an outer column in an ARRAY
    // subquery (rewrite/unnest_map.rs).
    let expected = r#"                                                            Table "public.devices"
 Column |           Type           | Collation | Nullable |           Default            | Storage  | Compression | Stats target | Description 
--------+--------------------------+-----------+----------+------------------------------+----------+-------------+--------------+-------------
 site   | text                     |           | not null |                              | extended |             |              | 
 id     | bigint                   |           | not null | generated always as identity | plain    |             |              | 
 name   | character varying        |           |          |                              | extended |             |              | 
 temp   | double precision         |           |          |                              | plain    |             |              | 
 seen   | timestamp with time zone |           |          |                              | plain    |             |              | 
 meta   | jsonb                    |           |          |                              | extended |             |              | 
 active | boolean                  |           |          | true                         | plain    |             |              | 
Indexes:
    "devices_pkey" PRIMARY KEY, btree (site, id)
Access method: heap

"#;
    assert_eq!(psql(&["-c", "\\d+ devices"]), expected);
    let tables = psql(&["-c", "\\dt"]);
    assert_eq!(
        tables,
        "         List of relations\n Schema |  Name   | Type  | Owner  \n--------+---------+-------+--------\n public | devices | table | tabula\n(1 row)\n\n"
    );
    let sized = psql(&["-At", "-c", "\\dt+"]);
    assert_eq!(sized, "public|devices|table|tabula|permanent|heap|0 bytes|\n");
    let schemas = psql(&["-At", "-c", "\\dn"]);
    assert_eq!(schemas, "public|tabula\ntabula|tabula\n");
    let databases = psql(&["-At", "-c", "\\l"]);
    assert!(databases.starts_with("tabula|tabula|UTF8|"), "{databases}");
    // `\df` and `\do`, as PostgreSQL 15 prints them: no function or operator of the user's, and a built-in
    // function's signature with its argument names and modes.
    assert_eq!(
        psql(&["-c", "\\df"]),
        "                       List of functions\n Schema | Name | Result data type | Argument data types | Type \n\
         --------+------+------------------+---------------------+------\n(0 rows)\n\n"
    );
    assert_eq!(
        psql(&["-At", "-c", "\\df pg_catalog.json_each"]),
        "pg_catalog|json_each|SETOF record|from_json json, OUT key text, OUT value json|func\n"
    );
    assert!(psql(&["-c", "\\do"]).ends_with("-------------\n(0 rows)\n\n"));
    // `\dp` lists what an unqualified name reaches: not information_schema's views (off the search path).
    assert_eq!(psql(&["-At", "-c", "\\dp"]), "public|devices|table|||\n");
    // `\l+` sizes the database with pg_database_size: what the engine's files hold, flushed or not yet.
    let sized = psql(&["-At", "-c", "\\l+"]);
    let fields: Vec<&str> = sized.trim_end().split('|').collect();
    assert_eq!(fields.len(), 11, "{sized}");
    assert_eq!((fields[0], fields[9]), ("tabula", "pg_default"), "{sized}");
    assert!(fields[8].ends_with(" bytes") || fields[8].ends_with(" kB") || fields[8].ends_with(" MB"), "{sized}");

    // \copy streams a local file through COPY FROM STDIN, and back out through COPY TO STDOUT.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "lab,Probe 1,21.5,true\nlab,Probe 2,19,false\n").unwrap();
    let load = format!("\\copy devices (site, name, temp, active) FROM '{}' WITH (FORMAT csv)", input.display());
    assert_eq!(psql(&["-c", &load]), "COPY 2\n");
    let output = dir.path().join("out.csv");
    let dump = format!("\\copy (SELECT id, name, temp FROM devices ORDER BY id) TO '{}' WITH (FORMAT csv)", output.display());
    assert_eq!(psql(&["-c", &dump]), "COPY 2\n");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "1,Probe 1,21.5\n2,Probe 2,19\n");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_copy_csv_from_a_file_and_back() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let csv = server.dir.path().join("in.csv");
    std::fs::write(&csv, "id,city,note\n1,Paris,\"a, quoted \"\"note\"\"\"\n2,Oslo,\n").unwrap();
    let psql = |cmd: &str| {
        let (ok, out, err) = run_psql(&port, &["-At", "-c", cmd]);
        assert!(ok, "{err}");
        out
    };
    psql("CREATE TABLE cities (id bigint PRIMARY KEY, city text, note text)");
    let out = psql(&format!("\\copy cities FROM '{}' WITH (FORMAT csv, HEADER true)", csv.display()));
    assert!(out.contains("COPY 2"), "{out}");
    assert_eq!(psql("SELECT id, city, note IS NULL FROM cities"), "1|Paris|f\n2|Oslo|t\n");
    assert_eq!(psql("\\copy cities TO STDOUT WITH (FORMAT csv)"), "1,Paris,\"a, quoted \"\"note\"\"\"\n2,Oslo,\n");
    server.stop().await;
}

/// An ORM's default key (`id serial PRIMARY KEY`): the NOTICE about the hash prefix Tabula chose reaches
/// psql, COPY draws the key's values (and moves past given ones), and PostgreSQL's "skipping" NOTICEs
/// come unless `client_min_messages` asks for fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_serial_keys_copy_and_notices() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let psql = |args: &[&str]| {
        let (ok, out, err) = run_psql(&port, args);
        assert!(ok, "psql {args:?}: {err}");
        (out, err)
    };
    let (_, err) = psql(&["-c", "CREATE TABLE users (id serial PRIMARY KEY, name text)"]);
    assert!(err.starts_with("NOTICE:  hash_prefix = 16 chosen for table \"users\""), "{err}");
    assert!(err.contains("HINT:  "), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let names = dir.path().join("names.txt");
    std::fs::write(&names, "ann\nbob\ncy\n").unwrap();
    let (out, _) = psql(&["-c", &format!("\\copy users (name) FROM '{}'", names.display())]);
    assert_eq!(out, "COPY 3\n");
    let given = dir.path().join("given.txt");
    std::fs::write(&given, "100\tdee\n").unwrap();
    psql(&["-c", &format!("\\copy users (id, name) FROM '{}'", given.display())]);
    let (out, _) = psql(&["-At", "-c", "INSERT INTO users (name) VALUES ('eve') RETURNING id"]);
    assert_eq!(out, "101\nINSERT 0 1\n");
    let (out, _) = psql(&["-At", "-c", "SELECT id, name FROM users ORDER BY id"]);
    assert_eq!(out, "1|ann\n2|bob\n3|cy\n100|dee\n101|eve\n");

    let (_, err) = psql(&["-c", "DROP TABLE IF EXISTS nosuch", "-c", "CREATE TABLE IF NOT EXISTS users (k text PRIMARY KEY)"]);
    assert_eq!(err, "NOTICE:  table \"nosuch\" does not exist, skipping\nNOTICE:  relation \"users\" already exists, skipping\n");
    let (_, err) = psql(&["-c", "SET client_min_messages = warning", "-c", "DROP TABLE IF EXISTS nosuch"]);
    assert_eq!(err, "");
    server.stop().await;
}

/// A temporary table as a psql script uses one: filled by `\copy`, joined to a permanent table, gone for
/// the next connection (the first one's end dropped it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_temporary_table_with_copy_is_gone_for_the_next_connection() {
    let server = TestServer::start().await;
    let port = server.port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ids.csv");
    std::fs::write(&csv, "1,one\n3,three\n").unwrap();
    let script = format!(
        "CREATE TABLE names (k int PRIMARY KEY, name text);\n\
         INSERT INTO names VALUES (1, 'uno'), (2, 'dos'), (3, 'tres');\n\
         CREATE TEMP TABLE wanted (k int PRIMARY KEY, english text);\n\
         \\copy wanted FROM '{}' WITH (FORMAT csv)\n\
         SELECT n.name, w.english FROM names n JOIN wanted w USING (k) ORDER BY k;\n",
        csv.display()
    );
    let file = dir.path().join("script.sql");
    std::fs::write(&file, script).unwrap();
    let (ok, out, err) = run_psql(&port, &["-At", "-q", "-f", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(out, "uno|one\ntres|three\n");
    let (ok, _, err) = run_psql(&port, &["-c", "SELECT * FROM wanted"]);
    assert!(!ok);
    assert!(err.contains("relation \"wanted\" does not exist"), "{err}");
    server.stop().await;
}
