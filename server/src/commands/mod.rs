//! The commands for people and scripts that talk to a running store:
//! `leasehold hold`, `leasehold ls` and `leasehold ui`.

pub mod hold;
pub mod ls;
pub mod ui;

use std::path::PathBuf;

use anyhow::{Context, Result};
use leasehold::remote::ConnectOptions;
use leasehold::Store;

/// Where the store is and how to be admitted.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The store's URL: `leasehold://host:port` (`leaseholds://` for TLS),
    /// etcd's `etcd://h1:2379,h2:2379/PREFIX` (`etcds://` for TLS), or
    /// PostgreSQL's `postgres://user@h1,h2/db` (docs/postgres.md).
    #[arg(
        long,
        env = "LEASEHOLD_STORE",
        default_value = "leasehold://127.0.0.1:7450"
    )]
    pub store: String,

    /// The token to present (see `serve --tokens`).
    #[arg(long, env = "LEASEHOLD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// PEM certificates to trust for `leaseholds://` and `etcds://`.
    #[arg(long, env = "LEASEHOLD_CA", value_name = "PEM")]
    pub ca: Option<PathBuf>,

    /// The etcd or PostgreSQL user (with `--password`).
    #[arg(long, env = "LEASEHOLD_USER")]
    pub user: Option<String>,

    /// The etcd or PostgreSQL user's password (better given in the environment).
    #[arg(long, env = "LEASEHOLD_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,

    /// A PEM client certificate to present to etcd over TLS (with `--client-key`).
    #[arg(
        long,
        env = "LEASEHOLD_CLIENT_CERT",
        value_name = "PEM",
        requires = "client_key"
    )]
    pub client_cert: Option<PathBuf>,

    /// The PEM private key of `--client-cert`.
    #[arg(
        long,
        env = "LEASEHOLD_CLIENT_KEY",
        value_name = "PEM",
        requires = "client_cert"
    )]
    pub client_key: Option<PathBuf>,

    /// Open an etcd older than the releases that fixed the bugs the leases
    /// depend on (refused otherwise; docs/etcd.md).
    #[arg(long, env = "LEASEHOLD_ACCEPT_OLD_ETCD")]
    pub accept_old_etcd: bool,

    /// Who this command is, as the store shows its leases (default
    /// `hostname:pid`).
    #[arg(long, env = "LEASEHOLD_IDENTITY")]
    pub identity: Option<String>,
}

/// The contents of the PEM file at `path`, if given.
fn read_pem(path: Option<&PathBuf>) -> Result<Option<Vec<u8>>, leasehold::Error> {
    path.map(|path| {
        std::fs::read(path).map_err(|e| {
            leasehold::Error::new(
                leasehold::ErrorKind::InvalidArgument,
                format!("cannot read {}: {e}", path.display()),
            )
        })
    })
    .transpose()
}

impl StoreArgs {
    /// Connects to the store.
    pub async fn connect(&self) -> Result<Store, leasehold::Error> {
        let options = ConnectOptions {
            token: self.token.clone(),
            ca_pem: read_pem(self.ca.as_ref())?,
            user: self.user.clone(),
            password: self.password.clone(),
            client_cert_pem: read_pem(self.client_cert.as_ref())?,
            client_key_pem: read_pem(self.client_key.as_ref())?,
            accept_old_etcd: self.accept_old_etcd,
            identity: self.identity.clone(),
            ..ConnectOptions::default()
        };
        Store::connect(&self.store, options).await
    }
}

/// A duration from the command line: `30s`, `1m`, `250ms`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration> {
    leasehold::duration::parse(text).with_context(|| format!("bad duration {text:?}"))
}
