//! `leasehold-chaos`: the harness (`run`), one Rust holder (`holder`, which
//! the harness starts), and the checker of a run's histories (`check`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use leasehold_chaos::{check, harness, history, holder};

#[derive(Parser)]
#[command(
    about = "Holders against a real store under random faults, and the checker of their histories"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the harness: a store, a fault proxy, holders, faults from a seed; then checks.
    Run(harness::RunArgs),
    /// Runs one Rust holder until SIGTERM (the harness starts these).
    Holder(holder::HolderArgs),
    /// Checks the histories (`*.jsonl`) in a directory.
    Check {
        /// The directory.
        dir: PathBuf,
        /// The store the run was on (on etcd, a call that failed while a
        /// quorum was within reach is a violation too).
        #[arg(long, value_enum, default_value_t = harness::StoreKind::Server)]
        store: harness::StoreKind,
    },
}

fn verdict(report: &check::Report) -> ExitCode {
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<ExitCode> {
    match Cli::parse().command {
        Command::Run(args) => {
            let report = harness::run(args.clone()).await?;
            print!("{report}");
            let store = format!("{:?}", args.store).to_lowercase();
            println!(
                "store {store}, seed {} (replay: leasehold-chaos run --store {store} --seed {} --seconds {} --holders {} --python-holders {} --go-holders {} --node-holders {} --keys {} --fault-every-ms {})",
                args.seed,
                args.seed,
                args.seconds,
                args.holders,
                args.python_holders,
                args.go_holders,
                args.node_holders,
                args.keys,
                args.fault_every_ms
            );
            Ok(verdict(&report))
        }
        Command::Holder(args) => {
            holder::run(args).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { dir, store } => {
            let report = check::check(&history::read_dir(&dir)?, &store.check_options());
            print!("{report}");
            Ok(verdict(&report))
        }
    }
}
