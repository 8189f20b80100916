//! `leasehold`: the command line of the Leasehold server store.
//!
//! `serve` exits 0 after a clean shutdown (SIGTERM, SIGINT), 1 when the
//! server cannot start or fails, 2 for a bad command line or config file.
//! `hold` exits with its command's code or one of its own (see
//! `leasehold_server::commands::hold`); `ls` exits 0, or 1 when the store
//! could not be asked; `ui` exits 0 after SIGTERM or SIGINT, 1 when the
//! store could not be reached or the page not served.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use leasehold_server::commands;
use leasehold_server::commands::{hold::HoldArgs, ls::LsArgs, ui::UiArgs};
use leasehold_server::ServeArgs;

/// Leases and fenced locks: the server store.
#[derive(Debug, Parser)]
#[command(name = "leasehold", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the server store: accept connections and grant leases.
    Serve(ServeArgs),
    /// Run a command while holding a key; its fence is in LEASEHOLD_FENCE.
    Hold(HoldArgs),
    /// List the keys held now, with holder age and fence.
    Ls(LsArgs),
    /// Serve the live page of any store (etcd, PostgreSQL, a server store elsewhere).
    Ui(UiArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Hold(args) => client(commands::hold::run(args)),
        Command::Ls(args) => client(commands::ls::run(args)),
        Command::Ui(args) => client(commands::ui::run(args)),
    }
}

/// Runs a client command on a small runtime and exits with its code.
fn client(command: impl std::future::Future<Output = u8>) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => ExitCode::from(runtime.block_on(command)),
        Err(e) => {
            eprintln!("leasehold: cannot start the runtime: {e}");
            ExitCode::from(commands::hold::EXIT_FAILED)
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let config = match args.resolve() {
        Ok(config) => config,
        Err(e) => {
            eprintln!("leasehold: {e:#}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = leasehold_server::init_logging(&config.log) {
        eprintln!("leasehold: {e:#}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("leasehold-server")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leasehold: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(leasehold_server::serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("leasehold: {e:#}");
            ExitCode::from(1)
        }
    }
}
