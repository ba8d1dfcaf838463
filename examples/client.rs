//! A Postgres client talking to Tabula: starts a server in-process and connects with tokio-postgres.
//! `cargo run --example client`

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = tabula_server::ServerConfig { data_dir: dir.path().join("data"), listen: "127.0.0.1:0".into(), ..Default::default() };
    let server = tabula_server::start(config).await?;
    let (client, conn) =
        tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=tabula", server.addr.port()), tokio_postgres::NoTls).await?;
    tokio::spawn(conn);
    client.batch_execute("CREATE TABLE kv (k text PRIMARY KEY, v bigint)").await?;
    let put = client.prepare("INSERT INTO kv VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v").await?;
    for (k, v) in [("a", 1i64), ("b", 2), ("a", 3)] {
        client.execute(&put, &[&k, &v]).await?;
    }
    for row in client.query("SELECT k, v FROM kv WHERE k >= $1", &[&"a"]).await? {
        println!("{} = {}", row.get::<_, String>(0), row.get::<_, i64>(1));
    }
    for row in client.query("EXPLAIN SELECT v FROM kv WHERE k = 'a'", &[]).await? {
        println!("{}", row.get::<_, String>(0));
    }
    drop(client);
    server.shutdown().await
}
