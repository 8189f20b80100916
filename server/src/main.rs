//! `leasehold`: the command line of the Leasehold server store.
//!
//! Exit codes: 0 after a clean shutdown (SIGTERM, SIGINT); 1 when the server
//! cannot start or fails; 2 for a bad command line or config file.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
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
