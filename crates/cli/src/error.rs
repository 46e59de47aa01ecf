//! How a command ends, in one place: the exit codes the README documents and the
//! one function that maps an error to them.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success; also a closed stdout pipe (`rdmalab … \| head`) |
//! | 1 | the command ran and found errors: a failed check, a lint error, a deadlock or a drop on lossless InfiniBand |
//! | 2 | bad input or usage: an unreadable or malformed file, a bad flag or field |
//! | 3 | an internal failure: a conservation ledger that does not balance, a model fault |
//!
//! Commands return `Ok(ExitCode)` (0 or [`FOUND_ERRORS`]) or an error. An error is
//! internal when one of its causes says so: the libraries' typed errors answer
//! `is_internal()` ([`sim::SimError`], [`lab::runner::RunError`],
//! [`lab::compare::CompareError`]), a [`sim::engine::LedgerError`] always is, and so
//! is the binary's own [`Internal`]. Everything else is bad input.

use std::process::ExitCode;

/// Exit code for "the command ran and found errors".
pub const FOUND_ERRORS: u8 = 1;

/// The classes of a failed command, each with its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Ended quietly: stdout was closed under us. Exit 0.
    ClosedPipe,
    /// Unreadable or malformed input, a bad flag. Exit 2.
    BadInput,
    /// A fault of the model or of rdmalab. Exit 3.
    Internal,
}

impl Failure {
    /// The class of `e`, from the typed errors in its chain.
    pub fn of(e: &anyhow::Error) -> Failure {
        let mut class = Failure::BadInput;
        for cause in e.chain() {
            if let Some(io) = cause.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return Failure::ClosedPipe;
            }
            let internal = cause.downcast_ref::<Internal>().is_some()
                || cause.downcast_ref::<sim::engine::LedgerError>().is_some()
                || cause
                    .downcast_ref::<sim::SimError>()
                    .is_some_and(sim::SimError::is_internal)
                || cause
                    .downcast_ref::<lab::runner::RunError>()
                    .is_some_and(lab::runner::RunError::is_internal)
                || cause
                    .downcast_ref::<lab::compare::CompareError>()
                    .is_some_and(lab::compare::CompareError::is_internal);
            if internal {
                class = Failure::Internal;
            }
        }
        class
    }

    /// The process exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            Failure::ClosedPipe => 0,
            Failure::BadInput => 2,
            Failure::Internal => 3,
        }
    }
}

/// A failure the binary itself detects and that is rdmalab's fault, not the
/// input's (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("internal error: {0}")]
pub struct Internal(pub String);

/// Print `e` with its chain (unless the pipe closed) and give its exit code.
pub fn report(e: &anyhow::Error) -> ExitCode {
    let class = Failure::of(e);
    if class != Failure::ClosedPipe {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        eprintln!("rdmalab: error: {e:#}");
    }
    ExitCode::from(class.exit_code())
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

    #[test]
    fn a_ledger_imbalance_inside_compare_is_internal() {
        // As lab::compare wraps a world's error, and the CLI adds its context.
        let e = lab::compare::CompareError::Run {
            variant: "roce-tuned".into(),
            source: lab::runner::RunError::Ledger {
                world: "RoCE",
                source: ledger(),
            },
        };
        let e = anyhow::Error::new(e).context("run the comparison");
        assert_eq!(Failure::of(&e), Failure::Internal);
        assert_eq!(Failure::of(&e).exit_code(), 3);
        // The InfiniBand world's imbalance comes through the simulator's error.
        let e = lab::compare::CompareError::Run {
            variant: "ib".into(),
            source: lab::runner::RunError::Sim(sim::SimError::Ledger(ledger())),
        };
        assert_eq!(Failure::of(&anyhow::Error::new(e)).exit_code(), 3);
        let e: anyhow::Result<()> = Err(sim::SimError::Ledger(ledger())).context("sim perftest");
        assert_eq!(Failure::of(&e.unwrap_err()).exit_code(), 3);
        assert_eq!(Failure::of(&anyhow::Error::new(Internal("x".into()))).exit_code(), 3);
    }

    #[test]
    fn bad_input_is_two_and_a_closed_pipe_is_zero() {
        let e = lab::compare::CompareError::Variant {
            variant: "roce".into(),
            message: "lossy_hops names \"x\"".into(),
        };
        assert_eq!(Failure::of(&anyhow::Error::new(e)).exit_code(), 2);
        let e = lab::compare::CompareError::Run {
            variant: "roce".into(),
            source: lab::runner::RunError::Topology("no NIC".into()),
        };
        assert_eq!(Failure::of(&anyhow::Error::new(e)).exit_code(), 2);
        let e = lab::ScenarioError::Parse {
            path: "s.toml".into(),
            message: "line 3".into(),
        };
        assert_eq!(Failure::of(&anyhow::Error::new(e)).exit_code(), 2);
        let pipe = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "closed");
        let e = anyhow::Error::new(pipe).context("write the table");
        assert_eq!(Failure::of(&e), Failure::ClosedPipe);
        assert_eq!(Failure::of(&e).exit_code(), 0);
    }
}
