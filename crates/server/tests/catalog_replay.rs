//! Replays the catalog queries DBeaver, Metabase and Grafana send (kept in `tests/catalog/*.sql`) against
//! a server holding a real table: every query must run in both protocols, and its rows must describe the
//! table (its name, columns, types, key and default).

mod common;

use common::TestServer;
use tokio_postgres::types::{ToSql, Type};

struct Replay {
    file: String,
    name: String,
    params: Vec<String>,
    expect: Vec<String>,
    sql: String,
}

fn load() -> Vec<Replay> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/catalog");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/catalog").map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "sql"));
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let mut r = Replay {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                name: String::new(),
                params: vec![],
                expect: vec![],
                sql: String::new(),
            };
            let list = |v: &str| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect::<Vec<_>>();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("-- name:") {
                    r.name = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("-- params:") {
                    r.params = list(v);
                } else if let Some(v) = line.strip_prefix("-- expect:") {
                    r.expect = list(v);
                } else {
                    r.sql.push_str(line);
                    r.sql.push('\n');
                }
            }
            out.push(r);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_catalog_queries_describe_real_tables() {
    let server = TestServer::start().await;
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE devices (site text, id bigint, name varchar NOT NULL, temp double precision, active boolean DEFAULT true, \
         PRIMARY KEY (site, id))",
    )
    .await
    .unwrap();
    let table_oid: i32 =
        c.query_one("SELECT oid FROM pg_catalog.pg_class WHERE relname = 'devices' AND relkind = 'r'", &[]).await.unwrap().get(0);
    let nsp_oid: i32 = c.query_one("SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'public'", &[]).await.unwrap().get(0);
    let value = |p: &str| -> (String, Box<dyn ToSql + Sync + Send>) {
        match p {
            "nsp" => (nsp_oid.to_string(), Box::new(nsp_oid)),
            "table" => (table_oid.to_string(), Box::new(table_oid)),
            "table_name" => ("'devices'".into(), Box::new("devices".to_string())),
            "schema_name" => ("'public'".into(), Box::new("public".to_string())),
            other => panic!("unknown parameter {other}"),
        }
    };
    let mut failures = Vec::new();
    let replays = load();
    assert!(replays.len() >= 15, "the replay files are read");
    for r in &replays {
        let label = format!("{} / {}", r.file, r.name);
        // Extended protocol, parameters bound as the tools bind them.
        let params: Vec<(String, Box<dyn ToSql + Sync + Send>)> = r.params.iter().map(|p| value(p)).collect();
        let extended = async {
            let stmt = c.prepare(&r.sql).await?;
            let mut bound: Vec<&(dyn ToSql + Sync)> = Vec::new();
            let mut ints = Vec::new();
            for (i, (_, v)) in params.iter().enumerate() {
                // A parameter the server typed int8 gets the OID as a bigint.
                if stmt.params().get(i) == Some(&Type::INT8) {
                    ints.push(i);
                }
                bound.push(v.as_ref() as &(dyn ToSql + Sync));
            }
            let wide: Vec<i64> = ints.iter().map(|&i| params[i].0.parse().unwrap_or_default()).collect();
            for (k, &i) in ints.iter().enumerate() {
                bound[i] = &wide[k];
            }
            c.query(&stmt, &bound).await.map(|rows| rows.len())
        }
        .await;
        // Simple protocol with the values written in, to read every cell as text.
        let mut sql = r.sql.clone();
        for (i, (text, _)) in params.iter().enumerate().rev() {
            sql = sql.replace(&format!("${}", i + 1), text);
        }
        let simple = c.simple_query(&sql).await;
        match (extended, simple) {
            (Err(e), _) => failures.push(format!("{label}: extended protocol: {e:?}")),
            (_, Err(e)) => failures.push(format!("{label}: simple protocol: {e:?}")),
            (Ok(n), Ok(messages)) => {
                let mut cells = Vec::new();
                for m in &messages {
                    if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
                        cells.extend((0..row.len()).filter_map(|i| row.get(i).map(|s| s.to_string())));
                    }
                }
                let rows = messages.iter().filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))).count();
                if rows != n {
                    failures.push(format!("{label}: {n} rows in the extended protocol, {rows} in the simple one"));
                }
                for want in &r.expect {
                    if !cells.iter().any(|cell| cell == want || cell.contains(want.as_str())) {
                        failures.push(format!("{label}: no cell shows {want:?} in {cells:?}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} replays failed:\n{}", failures.len(), replays.len(), failures.join("\n"));
    server.stop().await;
}
