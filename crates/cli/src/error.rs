//! How a command ends, in one place: the binary's one error type, [`CliError`],
//! and the one function that maps a command's result to the exit codes the README
//! documents, [`exit_code`].
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; also a closed stdout pipe (`rdmalab … \| head`) |
//! | 1 | the command ran and found errors: a failed check, a lint error, a deadlock or a drop on lossless InfiniBand |
//! | 2 | bad input or usage: an unreadable or malformed file, a bad flag or field |
//! | 3 | an internal failure: a conservation ledger that does not balance, a model fault |
//!
//! Commands return `Result<(), CliError>`. They say what they know where they know
//! it — [`CliError::findings`] after printing a report that shows errors,
//! [`CliError::bad_input`] for a flag they reject, [`CliError::internal`] for a
//! fault they detect in a run's counts — and every other error comes through `?`
//! from a library, classified by [`Kind::of`] from the typed causes in its chain:
//! the libraries' errors that can be model faults answer `is_internal()`.

use std::process::ExitCode;

/// The classes of a failed command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// stdout was closed under us: the command ends quietly (exit 0).
    ClosedPipe,
    /// The command ran and its report, already printed, shows errors (exit 1).
    Findings,
    /// Unreadable or malformed input, a bad flag (exit 2).
    BadInput,
    /// A fault of the model or of rdmalab, not of the input (exit 3).
    Internal,
}

/// Why a command did not succeed: its [`Kind`] and, unless the command already
/// said it in its report, the error chain to print.
#[derive(Debug)]
pub struct CliError {
    kind: Kind,
    error: Option<anyhow::Error>,
}

impl CliError {
    /// The command's report shows errors (a failed check, a lint error, a deadlock).
    pub fn findings() -> CliError {
        CliError {
            kind: Kind::Findings,
            error: None,
        }
    }

    /// Input the command itself rejects (a flag out of range, a missing argument).
    pub fn bad_input(message: String) -> CliError {
        CliError {
            kind: Kind::BadInput,
            error: Some(anyhow::Error::msg(message)),
        }
    }

    /// A model fault the command itself finds, such as a ledger that does not
    /// balance in a run's summary.
    pub fn internal(error: anyhow::Error) -> CliError {
        CliError {
            kind: Kind::Internal,
            error: Some(error),
        }
    }

    /// The class of this failure.
    pub fn kind(&self) -> Kind {
        self.kind
    }
}

/// Any library or I/O error, classified by the typed causes in its chain.
impl<E: Into<anyhow::Error>> From<E> for CliError {
    fn from(e: E) -> CliError {
        let error = e.into();
        CliError {
            kind: Kind::of(&error),
            error: Some(error),
        }
    }
}

impl Kind {
    /// The class of an error that came through `?`: a closed pipe if an I/O cause
    /// is `BrokenPipe`, internal if a cause is a library error that says it is a
    /// model fault, bad input otherwise.
    pub fn of(e: &anyhow::Error) -> Kind {
        let mut kind = Kind::BadInput;
        for cause in e.chain() {
            if let Some(io) = cause.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return Kind::ClosedPipe;
            }
            if is_internal(cause) {
                kind = Kind::Internal;
            }
        }
        kind
    }
}

/// Whether `cause` is one of the libraries' errors and says it is a model fault.
/// Each type answers for its own causes, so a cause a `#[error(transparent)]`
/// wrapper hides from the chain is still seen.
fn is_internal(cause: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = cause.downcast_ref::<lab::compare::CompareError>() {
        e.is_internal()
    } else if let Some(e) = cause.downcast_ref::<lab::runner::RunError>() {
        e.is_internal()
    } else if let Some(e) = cause.downcast_ref::<lab::ScenarioError>() {
        e.is_internal()
    } else if let Some(e) = cause.downcast_ref::<sim::scenario::ScenarioError>() {
        e.is_internal()
    } else if let Some(e) = cause.downcast_ref::<sim::workload::WorkloadError>() {
        e.is_internal()
    } else if let Some(e) = cause.downcast_ref::<sim::SimError>() {
        e.is_internal()
    } else {
        cause.downcast_ref::<sim::engine::LedgerError>().is_some()
    }
}

/// The exit code of a command's result: 0 success or a closed pipe, 1 findings,
/// 2 bad input, 3 internal.
pub fn exit_code(result: &Result<(), CliError>) -> u8 {
    match result {
        Ok(()) => 0,
        Err(e) => match e.kind() {
            Kind::ClosedPipe => 0,
            Kind::Findings => 1,
            Kind::BadInput => 2,
            Kind::Internal => 3,
        },
    }
}

/// End the process: print the error with its chain (unless the pipe closed or
/// the command's report already said it) and give the exit code.
pub fn exit(result: Result<(), CliError>) -> ExitCode {
    if let Err(CliError {
        kind: Kind::BadInput | Kind::Internal,
        error: Some(e),
    }) = &result
    {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        eprintln!("rdmalab: error: {e:#}");
    }
    ExitCode::from(exit_code(&result))
}

/// A conservation ledger that does not balance in the counts of a run the binary
/// drove itself: a model fault, with the numbers.
pub fn ledger_fault(world: &str, ledger: sim::engine::LedgerError) -> CliError {
    CliError::internal(
        anyhow::Error::new(ledger).context(format!("internal error: the {world} ledger does not balance")),
    )
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::*;

    fn ledger() -> sim::engine::LedgerError {
        sim::engine::LedgerError {
            created: 10,
            delivered: 7,
            dropped: 1,
            in_flight: 1,
        }
    }

    fn code(e: impl Into<CliError>) -> u8 {
        exit_code(&Err(e.into()))
    }

    #[test]
    fn success_is_0() {
        assert_eq!(exit_code(&Ok(())), 0);
    }

    #[test]
    fn findings_are_1() {
        assert_eq!(CliError::findings().kind(), Kind::Findings);
        assert_eq!(code(CliError::findings()), 1);
    }

    #[test]
    fn bad_input_is_2() {
        assert_eq!(code(CliError::bad_input("--lmc 9 is out of range (0-7)".into())), 2);
        let e = lab::compare::CompareError::Variant {
            variant: "roce".into(),
            message: "lossy_hops names \"x\"".into(),
        };
        assert_eq!(code(e), 2);
        let e = lab::compare::CompareError::Run {
            variant: "roce".into(),
            source: lab::runner::RunError::Topology(lab::runner::TopologyError::NoServers),
        };
        assert_eq!(code(e), 2);
        let e = lab::ScenarioError::Parse {
            path: "s.toml".into(),
            message: "line 3".into(),
        };
        assert_eq!(code(anyhow::Error::new(e).context("load the scenario")), 2);
        let e = sim::SimError::NoNode(7);
        assert_eq!(code(e), 2);
        // A run that went idle with transfers left is not counted a model fault.
        let e = lab::runner::RunError::Stalled(3);
        assert_eq!(code(e), 2);
    }

    #[test]
    fn a_ledger_imbalance_inside_compare_is_3() {
        // As lab::compare wraps a world's error, and the CLI adds its context.
        let e = lab::compare::CompareError::Run {
            variant: "roce-tuned".into(),
            source: lab::runner::RunError::Ledger {
                world: "RoCE",
                source: ledger(),
            },
        };
        let e = CliError::from(anyhow::Error::new(e).context("run the comparison"));
        assert_eq!(e.kind(), Kind::Internal);
        assert_eq!(exit_code(&Err(e)), 3);
        // The InfiniBand world's imbalance comes through the simulator's error.
        let e = lab::compare::CompareError::Run {
            variant: "ib".into(),
            source: lab::runner::RunError::Sim(sim::SimError::Ledger(ledger())),
        };
        assert_eq!(code(e), 3);
    }

    #[test]
    fn a_ledger_imbalance_in_sim_is_3() {
        // sim perftest: the simulator's check, with the CLI's context.
        let e: anyhow::Result<()> = Err(sim::SimError::Ledger(ledger())).context("check the ledger");
        assert_eq!(code(e.unwrap_err()), 3);
        // sim run: the scenario runner's error hides the simulator's from the chain
        // (`#[error(transparent)]`), so it answers for it.
        let e = sim::scenario::ScenarioError::Sim(sim::SimError::Ledger(ledger()));
        assert_eq!(code(e), 3);
        let e =
            sim::scenario::ScenarioError::Workload(sim::workload::WorkloadError::Sim(sim::SimError::Ledger(ledger())));
        assert_eq!(code(e), 3);
        // sim run's and sim hpcc's own check of the run's counts.
        let e = ledger_fault("RoCE", ledger());
        assert_eq!(e.kind(), Kind::Internal);
        assert_eq!(
            format!("{:#}", e.error.as_ref().unwrap()),
            "internal error: the RoCE ledger does not balance: \
             balance packets: created 10 != delivered 7 + dropped 1 + in flight 1"
        );
        assert_eq!(exit_code(&Err(e)), 3);
    }

    #[test]
    fn a_closed_pipe_is_0() {
        let pipe = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "closed");
        let e = CliError::from(anyhow::Error::new(pipe).context("write the table"));
        assert_eq!(e.kind(), Kind::ClosedPipe);
        assert_eq!(exit_code(&Err(e)), 0);
    }
}
