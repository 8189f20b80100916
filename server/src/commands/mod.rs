//! The commands for people and scripts that talk to a running store:
//! `leasehold hold` and `leasehold ls`.

pub mod hold;
pub mod ls;

use std::path::PathBuf;

use anyhow::{Context, Result};
use leasehold::remote::ConnectOptions;
use leasehold::Store;

/// Where the store is and how to be admitted.
#[derive(Debug, Clone, clap::Args)]
pub struct StoreArgs {
    /// The store's URL (`leasehold://host:port`, `leaseholds://` for TLS).
    #[arg(
        long,
        env = "LEASEHOLD_STORE",
        default_value = "leasehold://127.0.0.1:7450"
    )]
    pub store: String,

    /// The token to present (see `serve --tokens`).
    #[arg(long, env = "LEASEHOLD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// PEM certificates to trust for `leaseholds://`.
    #[arg(long, env = "LEASEHOLD_CA", value_name = "PEM")]
    pub ca: Option<PathBuf>,
}

impl StoreArgs {
    /// Connects to the store.
    pub async fn connect(&self) -> Result<Store, leasehold::Error> {
        let mut options = ConnectOptions {
            token: self.token.clone(),
            ..ConnectOptions::default()
        };
        if let Some(path) = &self.ca {
            let pem = std::fs::read(path).map_err(|e| {
                leasehold::Error::new(
                    leasehold::ErrorKind::InvalidArgument,
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            options.ca_pem = Some(pem);
        }
        Store::connect(&self.store, options).await
    }
}

/// A duration from the command line: `30s`, `1m`, `250ms`.
pub fn parse_duration(text: &str) -> Result<std::time::Duration> {
    leasehold::duration::parse(text).with_context(|| format!("bad duration {text:?}"))
}
