//! A study's output folder and its shards run on this machine.
//!
//! ```text
//! OUT/study.toml                 the study as given (a folder holds one study)
//! OUT/base.toml                  the base scenario it varies
//! OUT/shards/00017/scenario.toml the exact scenario shard 17 runs
//! OUT/shards/00017/results.json  `compare`'s results, written atomically
//! OUT/shards/00017/error.txt     the last failure, one line per attempt
//! ```
//!
//! A shard is done when its results.json exists: it is written to a temporary
//! file in the same folder, synced and renamed, so a killed run leaves either
//! the whole file or none. A shard that has failed [`MAX_ATTEMPTS`] times is not
//! run again; its error stays for the report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::study::{Study, describe};

/// Attempts before a shard is left failed.
pub const MAX_ATTEMPTS: usize = 2;

/// Why a study folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Reading or writing the folder.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The folder holds another study.
    #[error("{path} holds another study (its study.toml differs); give a new --out folder")]
    OtherStudy { path: String },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// A shard's folder.
pub fn shard_dir(out: &Path, index: usize) -> PathBuf {
    out.join("shards").join(format!("{index:05}"))
}

/// Write `bytes` to `path` atomically: a temporary file beside it, synced, renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(io(path))
}

/// The state of one shard, read from its folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardState {
    /// results.json is there.
    Done,
    /// Failed this many times (the last error's line).
    Failed { attempts: usize, last: String },
    /// Never run, or its run was cut short.
    Missing,
}

/// Read a shard's state.
pub fn state(out: &Path, index: usize) -> ShardState {
    let d = shard_dir(out, index);
    if d.join("results.json").is_file() {
        return ShardState::Done;
    }
    match std::fs::read_to_string(d.join("error.txt")) {
        Ok(t) if !t.trim().is_empty() => ShardState::Failed {
            attempts: t.lines().count(),
            last: t.lines().last().unwrap_or("").to_string(),
        },
        _ => ShardState::Missing,
    }
}

/// Lay the study out in `out`: study.toml and every shard's scenario.toml.
/// A folder that already holds this study is kept as it is (a resume); one that
/// holds another is refused.
pub fn prepare(study: &Study, out: &Path) -> Result<(), RunError> {
    let marker = out.join("study.toml");
    if marker.exists() {
        let old = std::fs::read_to_string(&marker).map_err(io(&marker))?;
        if old != study.text {
            return Err(RunError::OtherStudy {
                path: out.display().to_string(),
            });
        }
    } else {
        std::fs::create_dir_all(out).map_err(io(out))?;
        write_atomic(&out.join("base.toml"), study.base.to_toml().as_bytes())?;
        write_atomic(&marker, study.text.as_bytes())?;
    }
    for s in &study.shards {
        let d = shard_dir(out, s.index);
        std::fs::create_dir_all(&d).map_err(io(&d))?;
        let p = d.join("scenario.toml");
        if !p.exists() {
            let text = format!("# shard {}: {}\n{}", s.index, describe(&s.point), s.scenario.to_toml());
            write_atomic(&p, text.as_bytes())?;
        }
    }
    Ok(())
}

/// Run one shard now: its scenario.toml through `compare`; results.json on
/// success, a line in error.txt on failure.
pub fn run_shard(out: &Path, index: usize) -> Result<bool, RunError> {
    let d = shard_dir(out, index);
    let sp = d.join("scenario.toml");
    let outcome = lab::Scenario::load(&sp)
        .map_err(|e| e.to_string())
        .and_then(|s| lab::compare::run(&s, &mut |_| {}).map_err(|e| error_chain(&e)))
        .and_then(|r| serde_json::to_string_pretty(&r).map_err(|e| e.to_string()));
    match outcome {
        Ok(json) => {
            write_atomic(&d.join("results.json"), json.as_bytes())?;
            Ok(true)
        }
        Err(e) => {
            let p = d.join("error.txt");
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .map_err(io(&p))?;
            writeln!(f, "{}", e.replace('\n', " ")).map_err(io(&p))?;
            Ok(false)
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut c = e.source();
    while let Some(x) = c {
        s.push_str(": ");
        s.push_str(&x.to_string());
        c = x.source();
    }
    s
}

/// Shards still to run: missing, or failed fewer than [`MAX_ATTEMPTS`] times.
pub fn pending(study: &Study, out: &Path) -> Vec<usize> {
    study
        .shards
        .iter()
        .map(|s| s.index)
        .filter(|&i| match state(out, i) {
            ShardState::Done => false,
            ShardState::Failed { attempts, .. } => attempts < MAX_ATTEMPTS,
            ShardState::Missing => true,
        })
        .collect()
}

/// Run `todo` on `threads` threads; `tick(done, ok)` after each shard.
pub fn run_local(
    out: &Path,
    todo: &[usize],
    threads: usize,
    tick: &(dyn Fn(usize, bool) + Sync),
) -> Result<(usize, usize), RunError> {
    let next = AtomicUsize::new(0);
    let counts = Mutex::new((0usize, 0usize));
    let first_error: Mutex<Option<RunError>> = Mutex::new(None);
    std::thread::scope(|sc| {
        for _ in 0..threads.max(1) {
            sc.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = todo.get(k) else { break };
                    match run_shard(out, i) {
                        Ok(ok) => {
                            let mut c = counts.lock().expect("no thread panics holding it");
                            if ok {
                                c.0 += 1
                            } else {
                                c.1 += 1
                            }
                            tick(c.0 + c.1, ok);
                        }
                        Err(e) => {
                            first_error
                                .lock()
                                .expect("no thread panics holding it")
                                .get_or_insert(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().expect("threads are done") {
        return Err(e);
    }
    Ok(counts.into_inner().expect("threads are done"))
}
