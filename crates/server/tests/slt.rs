//! Runs every `sql/**/*.slt` file against a real Tabula server over the wire, once with the simple query
//! protocol and once with the extended protocol (prepared statements, binary results).

mod common;

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use libtest_mimic::{Arguments, Failed, Trial};
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};
use tabula_query::types::Zone;
use tabula_query::{Datum, SqlType};
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};

#[derive(Clone, Copy, Debug)]
enum Protocol {
    Simple,
    Extended,
}

/// A driver error that shows the server's message and keeps its SQLSTATE.
#[derive(Debug)]
struct PgError(tokio_postgres::Error);

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_db_error() {
            Some(db) => write!(f, "{}: {}", db.code().code(), db.message()),
            None => write!(f, "{}", self.0),
        }
    }
}

impl std::error::Error for PgError {}

impl From<tokio_postgres::Error> for PgError {
    fn from(e: tokio_postgres::Error) -> Self {
        PgError(e)
    }
}

struct Db {
    client: Client,
    protocol: Protocol,
}

/// Any value, as the raw bytes the server sent.
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::from("\\x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// A binary result value in PostgreSQL's text form, decoded by tokio-postgres' own decoders; a timestamptz
/// as local time and offset in `zone`, the session's TimeZone, as a client shows it.
fn text_of(row: &tokio_postgres::Row, i: usize, zone: &Zone) -> Result<Option<String>, tokio_postgres::Error> {
    let ty = row.columns()[i].type_().clone();
    Ok(match ty {
        Type::BOOL => row.try_get::<_, Option<bool>>(i)?.map(|b| if b { "t" } else { "f" }.to_string()),
        Type::INT2 => row.try_get::<_, Option<i16>>(i)?.map(|v| v.to_string()),
        Type::INT4 => row.try_get::<_, Option<i32>>(i)?.map(|v| v.to_string()),
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(|v| v.to_string()),
        Type::FLOAT4 => row.try_get::<_, Option<f32>>(i)?.map(|v| tabula_query::types::format_float(v as f64, true)),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(|v| tabula_query::types::format_float(v, false)),
        Type::NUMERIC => row.try_get::<_, Option<rust_decimal::Decimal>>(i)?.map(|v| v.to_string()),
        Type::BYTEA => row.try_get::<_, Option<Vec<u8>>>(i)?.map(|v| hex(&v)),
        // Printed as the server prints them (a year before 1 as BC).
        Type::TIMESTAMP => row
            .try_get::<_, Option<chrono::NaiveDateTime>>(i)?
            .and_then(|v| Datum::Timestamp(v.and_utc().timestamp_micros()).text_in(SqlType::Timestamp, zone)),
        Type::TIMESTAMPTZ => row
            .try_get::<_, Option<chrono::DateTime<chrono::Utc>>>(i)?
            .and_then(|v| Datum::Timestamp(v.timestamp_micros()).text_in(SqlType::Timestamptz, zone)),
        Type::DATE => row.try_get::<_, Option<chrono::NaiveDate>>(i)?.and_then(|v| {
            let days = (v - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days() as i32;
            Datum::Date(days).text_in(SqlType::Date, zone)
        }),
        Type::UUID => row.try_get::<_, Option<Raw>>(i)?.map(|r| {
            let h: String = r.0.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
        }),
        Type::JSONB => row.try_get::<_, Option<Raw>>(i)?.map(|r| String::from_utf8_lossy(&r.0[1..]).into_owned()),
        // Decoded by tokio-postgres from the binary array format, printed as PostgreSQL's text form.
        Type::TEXT_ARRAY => row.try_get::<_, Option<Vec<Option<String>>>>(i)?.map(|v| {
            let elements: Vec<String> =
                v.into_iter().map(|e| e.map_or_else(|| "NULL".into(), |e| tabula_query::types::quote_array_element(&e))).collect();
            format!("{{{}}}", elements.join(","))
        }),
        // interval_send: microseconds, days, months.
        Type::INTERVAL => row.try_get::<_, Option<Raw>>(i)?.map(|r| {
            let b = &r.0;
            let us = i64::from_be_bytes(b[0..8].try_into().unwrap());
            let days = i32::from_be_bytes(b[8..12].try_into().unwrap());
            let months = i32::from_be_bytes(b[12..16].try_into().unwrap());
            tabula_query::types::interval_text(months, days, us)
        }),
        _ => row.try_get::<_, Option<Raw>>(i)?.map(|r| String::from_utf8_lossy(&r.0).into_owned()),
    })
}

fn cell(v: Option<String>) -> String {
    match v {
        None => "NULL".into(),
        Some(s) if s.is_empty() => "(empty)".into(),
        Some(s) => s,
    }
}

#[async_trait]
impl AsyncDB for Db {
    type Error = PgError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, Self::Error> {
        match self.protocol {
            Protocol::Simple => {
                let msgs = self.client.simple_query(sql).await?;
                let mut rows = Vec::new();
                let mut has_rows = false;
                let mut count = 0;
                for m in msgs {
                    match m {
                        SimpleQueryMessage::Row(r) => {
                            rows.push((0..r.len()).map(|i| cell(r.get(i).map(|s| s.to_string()))).collect::<Vec<_>>());
                        }
                        SimpleQueryMessage::RowDescription(_) => has_rows = true,
                        SimpleQueryMessage::CommandComplete(n) => count = n,
                        _ => {}
                    }
                }
                if has_rows {
                    let n = rows.first().map(|r: &Vec<String>| r.len()).unwrap_or(0);
                    Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; n], rows })
                } else {
                    Ok(DBOutput::StatementComplete(count))
                }
            }
            Protocol::Extended => {
                let stmt = self.client.prepare(sql).await?;
                if stmt.columns().is_empty() {
                    return Ok(DBOutput::StatementComplete(self.client.execute(&stmt, &[]).await?));
                }
                let result = self.client.query(&stmt, &[]).await?;
                let zone = match stmt.columns().iter().any(|c| c.type_() == &Type::TIMESTAMPTZ) {
                    true => Zone::of_setting(self.client.query_one("SHOW TimeZone", &[]).await?.get(0)),
                    false => Zone::UTC,
                };
                let mut rows = Vec::new();
                for r in &result {
                    rows.push((0..r.len()).map(|i| text_of(r, i, &zone).map(cell)).collect::<Result<Vec<_>, _>>()?);
                }
                Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; stmt.columns().len()], rows })
            }
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        match self.protocol {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
        }
    }

    fn error_sql_state(err: &Self::Error) -> Option<String> {
        err.0.code().map(|c| c.code().to_string())
    }
}

fn run_file(path: &Path, protocol: Protocol) -> Result<(), Failed> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let server = common::TestServer::start().await;
        let conn = server.conn_string();
        let mut runner = sqllogictest::Runner::new(move || {
            let conn = conn.clone();
            async move {
                let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.map_err(PgError)?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(Db { client, protocol })
            }
        });
        runner.with_column_validator(|_, _| true);
        runner.add_label(match protocol {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
        });
        let result = runner.run_file_async(path).await;
        drop(runner);
        server.stop().await;
        result.map_err(|e| Failed::from(e.display(true).to_string()))
    })
}

fn slt_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            slt_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "slt") {
            out.push(p);
        }
    }
}

fn main() {
    let args = Arguments::from_args();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sql");
    let mut files = Vec::new();
    slt_files(&root, &mut files);
    files.sort();
    let mut trials = Vec::new();
    for f in files {
        let name = f.strip_prefix(&root).unwrap().display().to_string();
        for protocol in [Protocol::Simple, Protocol::Extended] {
            let path = f.clone();
            let label = format!("{}::{name}", format!("{protocol:?}").to_lowercase());
            trials.push(Trial::test(label, move || run_file(&path, protocol)));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
