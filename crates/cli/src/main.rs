//! The `rdmalab` binary: parses arguments, calls a library, maps errors to exit codes.
//!
//! Exit codes (mapped in one place, [`error`]): 0 success; 1 the command ran and
//! found errors (a failed check, a lint error); 2 bad input or usage (unreadable or
//! malformed files, bad flags); 3 an internal failure (a ledger that does not
//! balance). A closed stdout pipe ends the program quietly with 0.

/// `println!` that returns the write's error instead of panicking, so that a
/// closed stdout pipe ends the command quietly (see [`error::Kind::ClosedPipe`]).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*)?
    }};
}

/// `print!` that returns the write's error instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*)?
    }};
}

mod cmd;
mod error;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Build an AI cluster's fabric as InfiniBand and as RoCE, run it packet by packet,
/// and compare.
#[derive(Debug, Parser)]
#[command(name = "rdmalab", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate, inspect and convert cluster topologies.
    #[command(subcommand)]
    Topo(cmd::topo::TopoCmd),
    /// Lint configurations (RoCE: SONiC switch config plus NIC QoS/DCQCN state).
    #[command(subcommand)]
    Lint(cmd::lint::LintCmd),
    /// InfiniBand diagnostics on real dumps: ibdiagnet-style check, ibtracert-style trace.
    #[command(subcommand)]
    Diag(cmd::diag::DiagCmd),
    /// Run the InfiniBand Subnet Manager: LIDs, routing engines, validation, dumps.
    #[command(subcommand)]
    Sm(cmd::sm::SmCmd),
    /// Run the packet-level simulator: scenario files and perftest-like tests.
    #[command(subcommand)]
    Sim(cmd::sim::SimCmd),
    /// Explain, show and check comparison scenarios.
    #[command(subcommand)]
    Scenario(cmd::scenario::ScenarioCmd),
    /// Recommend InfiniBand or RoCEv2 from measured evidence, your answers and a TCO.
    Advise(cmd::advise::AdviseCmd),
    /// Decode, craft and summarise InfiniBand/RoCE packet captures (pcap, pcapng).
    #[command(subcommand)]
    Wire(cmd::wire::WireCmd),
    /// The main job: build the cluster every way, run AI collectives packet by packet, compare.
    Compare(cmd::compare::CompareCmd),
    /// Fit endpoint and collective parameters from perftest and nccl-tests output.
    Calibrate(cmd::calibrate::CalibrateCmd),
    /// One training iteration of a job on a scalable-unit cluster, priced on the fabric.
    Train(cmd::train::TrainCmd),
    /// Cut a spine link during a collective: stall, slowdown, NCCL timeout, GPU-hours, per variant.
    Failure(cmd::failure::FailureCmd),
    /// Design studies: any scenario field varied, one shard per point, resumable, merged.
    #[command(subcommand)]
    Sweep(cmd::sweep::SweepCmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Topo(c) => c.exec(),
        Command::Lint(c) => c.exec(),
        Command::Diag(c) => c.exec(),
        Command::Sm(c) => c.exec(),
        Command::Sim(c) => c.exec(),
        Command::Scenario(c) => c.exec(),
        Command::Advise(c) => c.exec(),
        Command::Wire(c) => c.exec(),
        Command::Compare(c) => c.exec(),
        Command::Calibrate(c) => c.exec(),
        Command::Train(c) => c.exec(),
        Command::Failure(c) => c.exec(),
        Command::Sweep(c) => c.exec(),
    };
    error::exit(result)
}
