//! `rdmalab sweep`: design studies over any scenario field, one shard per point,
//! run on this machine, resumable, merged into one table.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;

/// Run, inspect, resume and merge design studies.
#[derive(Debug, Subcommand)]
pub enum SweepCmd {
    /// Lay a study out in its folder and run every shard.
    Run(RunArgs),
    /// Done, failed and missing shards of a study folder.
    Status(OutArgs),
    /// Run the shards of a study folder that are missing or failed once.
    Resume(ResumeArgs),
    /// One table over a study folder: merged.json and merged.csv.
    Merge(OutArgs),
    /// Run one shard of a laid-out study (what a batch task runs).
    Shard(ShardArgs),
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The study file.
    study: PathBuf,
    /// Output folder (default: sweep-NAME beside the current directory).
    #[arg(long, short)]
    out: Option<PathBuf>,
    #[command(flatten)]
    backend: Backend,
}

/// Where the shards run: threads here, or a Slurm job array.
#[derive(Debug, Args)]
pub struct Backend {
    /// Shards to run at once on this machine.
    #[arg(long, default_value_t = 1)]
    local: usize,
    /// Submit the shards to Slurm as a job array instead (SLURM_CONF names the cluster).
    #[arg(long, conflicts_with = "local")]
    slurm: bool,
    /// Array tasks running at once under Slurm.
    #[arg(long, default_value_t = 8)]
    throttle: usize,
    /// Shards per Slurm task (a task runs them one after the other).
    #[arg(long, default_value_t = 1)]
    per_task: usize,
}

impl Backend {
    /// Run or submit the study's pending shards.
    fn run(&self, study: &sweep::Study, out: &std::path::Path) -> Result<(), CliError> {
        if self.slurm {
            submit_pending(study, out, self.throttle, self.per_task)
        } else {
            run_pending(study, out, self.local)
        }
    }
}

#[derive(Debug, Args)]
pub struct OutArgs {
    /// A study folder written by `sweep run`.
    out: PathBuf,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// A study folder written by `sweep run`.
    out: PathBuf,
    #[command(flatten)]
    backend: Backend,
}

#[derive(Debug, Args)]
pub struct ShardArgs {
    /// A study folder written by `sweep run`.
    out: PathBuf,
    /// The shard's index (with --batches: the task's line in that file).
    index: usize,
    /// A batch file written by `sweep run --slurm --per-task K`.
    #[arg(long)]
    batches: Option<PathBuf>,
}

fn run_pending(study: &sweep::Study, out: &std::path::Path, local: usize) -> Result<(), CliError> {
    let todo = sweep::pending(study, out);
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} shards {msg}")
                .expect("static template"),
        );
        b
    });
    let tick = |_: usize, ok: bool| {
        if let Some(b) = &bar {
            b.inc(1);
            if !ok {
                b.set_message("(a shard failed)");
            }
        }
    };
    let (ok, failed) = sweep::run_local(out, &todo, local, &tick)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let text = format!(
        "sweep: {} shards run ({ok} done, {failed} failed) in {}; {} shards in the study\n",
        todo.len(),
        out.display(),
        study.shards.len()
    );
    std::io::stdout().write_all(text.as_bytes())?;
    if failed > 0 {
        return Err(CliError::findings());
    }
    Ok(())
}

/// Submit the pending shards as a job array: the first is run here to measure
/// a task's time and memory, the rest go to Slurm.
fn submit_pending(
    study: &sweep::Study,
    out: &std::path::Path,
    throttle: usize,
    per_task: usize,
) -> Result<(), CliError> {
    // shards Slurm still has are not submitted twice
    let queued = sweep::slurm::queued(out)?;
    let mut todo: Vec<usize> = sweep::pending(study, out)
        .into_iter()
        .filter(|i| !queued.contains_key(i))
        .collect();
    if todo.is_empty() {
        let text = format!(
            "sweep: nothing to submit in {} ({} queued in Slurm)\n",
            out.display(),
            queued.len()
        );
        std::io::stdout().write_all(text.as_bytes())?;
        return Ok(());
    }
    let t = std::time::Instant::now();
    let first = todo.remove(0);
    sweep::run_shard(out, first)?;
    let limits = sweep::slurm::TaskLimits::from_measured(t.elapsed().as_secs_f64(), sweep::slurm::peak_mb(), throttle);
    let mut text = format!("sweep: shard {first} run here ({:.2} s)", t.elapsed().as_secs_f64());
    if !todo.is_empty() {
        let bin = std::env::current_exe()?;
        let id = sweep::slurm::submit(&study.name, out, &bin, &todo, per_task, limits)?;
        text += &format!(
            "; {} shards submitted as Slurm job array {id} ({} per task, at most {} tasks at once, {} min and {} MiB per task)",
            todo.len(),
            per_task.max(1),
            limits.throttle,
            limits.minutes,
            limits.mem_mb
        );
    }
    text.push('\n');
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

impl SweepCmd {
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            SweepCmd::Run(a) => {
                let study = sweep::Study::load(&a.study)?;
                let out = a.out.unwrap_or_else(|| PathBuf::from(format!("sweep-{}", study.name)));
                sweep::prepare(&study, &out)?;
                a.backend.run(&study, &out)
            }
            SweepCmd::Resume(a) => {
                let study = sweep::Study::from_out(&a.out)?;
                a.backend.run(&study, &a.out)
            }
            SweepCmd::Shard(a) => {
                let study = sweep::Study::from_out(&a.out)?;
                let shards = match &a.batches {
                    Some(b) => sweep::slurm::batch(b, a.index).map_err(CliError::bad_input)?,
                    None => vec![a.index],
                };
                let mut ok = true;
                for i in shards {
                    if i >= study.shards.len() {
                        return Err(CliError::bad_input(format!(
                            "{}: shard {i} does not exist (the study has {})",
                            a.out.display(),
                            study.shards.len()
                        )));
                    }
                    ok &= sweep::run_shard(&a.out, i)?;
                }
                if ok { Ok(()) } else { Err(CliError::findings()) }
            }
            SweepCmd::Status(a) => {
                let study = sweep::Study::from_out(&a.out)?;
                let m = sweep::merge(&study, &a.out);
                let queued = if sweep::slurm::jobs(&a.out).is_empty() {
                    Default::default()
                } else {
                    sweep::slurm::queued(&a.out)?
                };
                let text = if a.json {
                    report::json(&m)?
                } else {
                    report::sweep::status(&m) + &report::sweep::queued(&queued)
                };
                std::io::stdout().write_all(text.as_bytes())?;
                Ok(())
            }
            SweepCmd::Merge(a) => {
                let study = sweep::Study::from_out(&a.out)?;
                let m = sweep::merge(&study, &a.out);
                sweep::run::write_atomic(&a.out.join("merged.json"), report::json(&m)?.as_bytes())?;
                sweep::run::write_atomic(&a.out.join("merged.csv"), sweep::csv(&m).as_bytes())?;
                sweep::run::write_atomic(&a.out.join("report.html"), report::sweep::html(&m).as_bytes())?;
                let text = if a.json {
                    report::json(&m)?
                } else {
                    report::sweep::merged(&m, &a.out)
                };
                std::io::stdout().write_all(text.as_bytes())?;
                Ok(())
            }
        }
    }
}
