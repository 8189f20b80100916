//! What the PostgreSQL store's tests share: the URL of the PostgreSQL that
//! `make postgres` runs, a schema of their own for each store they open,
//! servers of their own for faults ([`server`]), and a pooler in
//! transaction mode ([`pooler`]).

use rand::Rng;

pub mod pooler;
pub mod server;

/// The URL of the test PostgreSQL: `LEASEHOLD_POSTGRES_URL`, or the file
/// `make postgres` writes under the cargo target dir.
pub fn url() -> String {
    if let Ok(url) = std::env::var("LEASEHOLD_POSTGRES_URL") {
        if !url.is_empty() {
            return url;
        }
    }
    let dir = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| format!("{}/../target", env!("CARGO_MANIFEST_DIR")));
    let file = format!("{dir}/postgres/url");
    match std::fs::read_to_string(&file) {
        Ok(url) => url.trim().to_owned(),
        Err(e) => panic!(
            "no PostgreSQL URL in LEASEHOLD_POSTGRES_URL or {file} ({e}): run `make postgres`"
        ),
    }
}

/// A schema name no other test uses, starting with `prefix`.
pub fn fresh_schema(prefix: &str) -> String {
    format!("{prefix}_{:016x}", rand::thread_rng().gen::<u64>())
}

/// The test PostgreSQL's URL with `?schema=` set to `schema`, and `extra`
/// parameters (`name=value&…`) if any.
pub fn url_with(schema: &str, extra: &str) -> String {
    let base = url();
    let sep = if base.contains('?') { '&' } else { '?' };
    let extra = if extra.is_empty() {
        String::new()
    } else {
        format!("&{extra}")
    };
    format!("{base}{sep}schema={schema}{extra}")
}

/// Runs `sql` on the test PostgreSQL as its own connection (to look at or
/// change what the store wrote).
pub async fn sql(statement: &str) -> Vec<tokio_postgres::Row> {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    let driving = tokio::spawn(connection);
    let rows = client.query(statement, &[]).await.expect("run SQL");
    drop(client);
    let _ = driving.await;
    rows
}

/// Runs `script` (statements separated by semicolons) on the test
/// PostgreSQL as its own connection.
pub async fn sql_script(script: &str) {
    let (client, connection) = tokio_postgres::connect(&url(), tokio_postgres::NoTls)
        .await
        .expect("connect to the test PostgreSQL");
    let driving = tokio::spawn(connection);
    client
        .batch_execute(script)
        .await
        .expect("run the SQL script");
    drop(client);
    let _ = driving.await;
}

/// Drops the schemas whose names start with `prefix` (what earlier runs left).
pub async fn drop_schemas(prefix: &str) {
    let rows = sql(&format!(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE '{prefix}\\_%'"
    ))
    .await;
    for row in rows {
        let name: String = row.get(0);
        sql(&format!("DROP SCHEMA \"{name}\" CASCADE")).await;
    }
}
