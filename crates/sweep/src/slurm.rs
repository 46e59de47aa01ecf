//! A study's shards as a Slurm job array: one task per shard, a throttle, the
//! task's time and memory from one shard measured on this machine; Slurm's own
//! queue (`squeue`) for what is pending or running.
//!
//! A task runs `rdmalab sweep shard OUT INDEX`, which writes the shard's results
//! atomically, so a task killed mid-run leaves the shard missing and `resume`
//! submits it again (../shared/reference/failures-isolation-sweeps.md §4.5–4.7).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why Slurm could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// A Slurm command could not be started (not installed, not on PATH).
    #[error("cannot run `{cmd}`: {source} (is Slurm installed and SLURM_CONF set?)")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    /// A Slurm command failed (the controller unreachable, a refused job).
    #[error("`{cmd}` failed: {stderr}")]
    Failed { cmd: String, stderr: String },
    /// The study folder.
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
}

fn run(cmd: &str, args: &[&str]) -> Result<String, SlurmError> {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|source| SlurmError::Spawn {
            cmd: cmd.into(),
            source,
        })?;
    if !o.status.success() {
        return Err(SlurmError::Failed {
            cmd: format!("{cmd} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Indices as Slurm's array list: `0-5,7,9-20`.
pub fn array_list(indices: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let mut j = i;
        while j + 1 < indices.len() && indices[j + 1] == indices[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            indices[i].to_string()
        } else {
            format!("{}-{}", indices[i], indices[j])
        });
        i = j + 1;
    }
    out.join(",")
}

/// What a task asks Slurm for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskLimits {
    /// Minutes of wall time.
    pub minutes: u64,
    /// Memory, MiB.
    pub mem_mb: u64,
    /// Tasks running at once.
    pub throttle: usize,
}

impl TaskLimits {
    /// Limits from one shard measured here: ten times its wall time (at least a
    /// minute) and twice this process's peak memory (at least 256 MiB).
    pub fn from_measured(wall_s: f64, peak_mb: u64, throttle: usize) -> TaskLimits {
        TaskLimits {
            minutes: ((wall_s * 10.0) / 60.0).ceil().max(1.0) as u64,
            mem_mb: (2 * peak_mb).max(256),
            throttle: throttle.max(1),
        }
    }
}

/// This process's peak resident memory, MiB (Linux `VmHWM`; 0 elsewhere).
pub fn peak_mb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        })
        .map_or(0, |kb| kb.div_ceil(1024))
}

/// The sbatch script for the tasks of `batches` (task `i` runs the shards of
/// line `i` of that file), or, without a batch file, one task per shard of
/// `indices`; run by `bin` on the study in `out`.
pub fn script(name: &str, out: &Path, bin: &Path, tasks: &str, batches: Option<&Path>, l: TaskLimits) -> String {
    let batch = batches.map_or(String::new(), |b| format!(" --batches '{}'", b.display()));
    format!(
        "#!/bin/sh\n\
         #SBATCH --job-name=rdmalab-sweep-{name}\n\
         #SBATCH --array={tasks}%{}\n\
         #SBATCH --output={}/slurm/%A_%a.out\n\
         #SBATCH --time={}\n\
         #SBATCH --mem={}M\n\
         #SBATCH --ntasks=1\n\
         exec '{}' sweep shard '{}'{batch} \"$SLURM_ARRAY_TASK_ID\"\n",
        l.throttle,
        out.display(),
        l.minutes,
        l.mem_mb,
        bin.display(),
        out.display()
    )
}

/// Write the script into `out` and submit it, `per_task` shards to a task;
/// the array's job id, recorded in `out/slurm-jobs.txt`.
pub fn submit(
    name: &str,
    out: &Path,
    bin: &Path,
    indices: &[usize],
    per_task: usize,
    l: TaskLimits,
) -> Result<String, SlurmError> {
    std::fs::create_dir_all(out.join("slurm")).map_err(|source| crate::run::RunError::Io {
        path: out.join("slurm").display().to_string(),
        source,
    })?;
    let n = jobs(out).len();
    let (tasks, batches) = if per_task > 1 {
        let bp = out.join(format!("sweep-{n}.batches"));
        let lines: Vec<String> = indices
            .chunks(per_task)
            .map(|c| c.iter().map(usize::to_string).collect::<Vec<_>>().join(" "))
            .collect();
        crate::run::write_atomic(&bp, format!("{}\n", lines.join("\n")).as_bytes())?;
        (format!("0-{}", lines.len() - 1), Some(bp))
    } else {
        (array_list(indices), None)
    };
    // a batch's time is the sum of its shards'
    let l = TaskLimits {
        minutes: l.minutes * per_task.max(1) as u64,
        ..l
    };
    let p: PathBuf = out.join(format!("sweep-{n}.sbatch"));
    crate::run::write_atomic(&p, script(name, out, bin, &tasks, batches.as_deref(), l).as_bytes())?;
    let id = run("sbatch", &["--parsable", &p.display().to_string()])?
        .trim()
        .split(';')
        .next()
        .unwrap_or("")
        .to_string();
    let mut all = jobs(out);
    all.push(id.clone());
    crate::run::write_atomic(&out.join("slurm-jobs.txt"), format!("{}\n", all.join("\n")).as_bytes())?;
    Ok(id)
}

/// The shards of task `task` of a batch file.
pub fn batch(batches: &Path, task: usize) -> Result<Vec<usize>, String> {
    let text = std::fs::read_to_string(batches).map_err(|e| format!("{}: {e}", batches.display()))?;
    let line = text
        .lines()
        .nth(task)
        .ok_or_else(|| format!("{}: no task {task}", batches.display()))?;
    line.split_whitespace()
        .map(|x| {
            x.parse()
                .map_err(|_| format!("{}:{}: `{x}` is not a shard index", batches.display(), task + 1))
        })
        .collect()
}

/// The array jobs submitted for the study in `out`.
pub fn jobs(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("slurm-jobs.txt"))
        .map(|t| t.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

/// Shard index → Slurm state (`PENDING`, `RUNNING`, …) of the study's tasks
/// still in Slurm's queue (a batch task's state stands for each of its shards).
pub fn queued(out: &Path) -> Result<BTreeMap<usize, String>, SlurmError> {
    let jobs = jobs(out);
    let mut m = BTreeMap::new();
    if jobs.is_empty() {
        return Ok(m);
    }
    let text = run("squeue", &["-h", "-r", "-j", &jobs.join(","), "-o", "%F %K %T"])?;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(job), Some(k), Some(st)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(k) = k.parse::<usize>() else { continue };
        let n = jobs.iter().position(|j| j == job);
        let bp = n.map(|n| out.join(format!("sweep-{n}.batches")));
        match bp.filter(|p| p.exists()) {
            Some(p) => {
                for i in batch(&p, k).unwrap_or_default() {
                    m.insert(i, st.to_string());
                }
            }
            None => {
                m.insert(k, st.to_string());
            }
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_fold_into_slurm_ranges() {
        assert_eq!(array_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(array_list(&[4]), "4");
        assert_eq!(array_list(&[]), "");
    }

    #[test]
    fn limits_come_from_the_measured_shard() {
        let l = TaskLimits::from_measured(0.03, 40, 8);
        assert_eq!((l.minutes, l.mem_mb, l.throttle), (1, 256, 8));
        let l = TaskLimits::from_measured(90.0, 3000, 0);
        assert_eq!((l.minutes, l.mem_mb, l.throttle), (15, 6000, 1));
    }
}
