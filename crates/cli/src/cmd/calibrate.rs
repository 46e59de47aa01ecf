//! `rdmalab calibrate`: perftest and nccl-tests outputs in, a calibration file out.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use super::CliError;

/// Fit endpoint and collective parameters per fabric (InfiniBand, RoCE) from
/// perftest (ib_write_bw, ib_write_lat, ib_send_lat, ib_read_lat) and nccl-tests
/// (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf)
/// output, and write them with their units, sources and fit residuals to a
/// calibration file that `rdmalab compare --calibration` reads.
#[derive(Debug, Args)]
pub struct CalibrateCmd {
    /// perftest and nccl-tests outputs, as saved from their stdout (one test per
    /// file; perftest's Link type says the fabric).
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The calibration file to write (TOML). An existing file is kept unless
    /// --force is given.
    #[arg(long, short, default_value = "calibration.toml")]
    out: PathBuf,
    /// Replace --out if it exists.
    #[arg(long)]
    force: bool,
    /// Print the calibration and the check of every measured row as JSON
    /// instead of the summary (the file is written either way).
    #[arg(long)]
    json: bool,
    /// The fabric of nccl-tests outputs that do not say theirs (without
    /// NCCL_DEBUG=INFO there is no "NET/IB : Using …/IB|/RoCE" line).
    #[arg(long, value_enum)]
    fabric: Option<FabricArg>,
    /// One-way time of the perftest path's cables and switches, ns, taken off
    /// the measured latency (the simulated fabric adds its own). 0: back to back
    /// on a short cable.
    #[arg(long, default_value_t = 0.0, value_name = "NS")]
    path_ns: f64,
    /// An ib_write_lat or ib_send_lat output measured through one switch (the
    /// other FILEs: back to back): the pair gives the switch's port-to-port
    /// latency, which `compare --calibration` applies to every switch of that
    /// fabric. Repeat for each fabric.
    #[arg(long, value_name = "FILE")]
    one_hop: Vec<PathBuf>,
    /// What the one-hop path adds besides the switch (its second cable, about
    /// 5 ns per metre), ns.
    #[arg(long, default_value_t = 0.0, value_name = "NS")]
    one_hop_extra_ns: f64,
    /// nccl-tests rows below this size are left out of the α–β fits (NCCL's
    /// small-message protocols follow another line).
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    nccl_min_bytes: u64,
}

/// `--fabric`'s values.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum FabricArg {
    Infiniband,
    Roce,
}

impl CalibrateCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        if self.out.exists() && !self.force {
            return Err(CliError::bad_input(format!(
                "{} exists; give --force to replace it, or another --out",
                self.out.display()
            )));
        }
        if !(self.path_ns.is_finite() && self.path_ns >= 0.0) {
            return Err(CliError::bad_input(format!(
                "--path-ns {} is not a time: give nanoseconds, 0 or more",
                self.path_ns
            )));
        }
        if !(self.one_hop_extra_ns.is_finite() && self.one_hop_extra_ns >= 0.0) {
            return Err(CliError::bad_input(format!(
                "--one-hop-extra-ns {} is not a time: give nanoseconds, 0 or more",
                self.one_hop_extra_ns
            )));
        }
        let mut inputs = Vec::with_capacity(self.files.len() + self.one_hop.len());
        for p in self.files.iter().chain(&self.one_hop) {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            inputs.push(calibrate::parse(&p.display().to_string(), &text)?);
        }
        let cal = calibrate::calibrate(
            &inputs,
            &calibrate::Options {
                path_ns: self.path_ns,
                nccl_min_bytes: self.nccl_min_bytes,
                fabric: self.fabric.map(|f| match f {
                    FabricArg::Infiniband => calibrate::Fabric::Infiniband,
                    FabricArg::Roce => calibrate::Fabric::Roce,
                }),
                one_hop: self.one_hop.iter().map(|p| p.display().to_string()).collect(),
                one_hop_extra_ns: self.one_hop_extra_ns,
            },
        )?;
        write_file(&self.out, &cal.calibration.to_toml(), self.force)?;
        if self.json {
            out!("{}", report::json(&cal)?);
        } else {
            out!("{}", report::calibrate::summary(&cal, &self.out));
        }
        Ok(())
    }
}

/// Write `text` to `path`: without `force` only if no file is there (checked
/// by the create itself, so a file that appeared meanwhile is kept); with it,
/// through a temporary file beside it and a rename, so a failed write never
/// leaves half a file.
fn write_file(path: &Path, text: &str, force: bool) -> Result<(), CliError> {
    if !force {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => CliError::bad_input(format!(
                    "{} exists; give --force to replace it, or another --out",
                    path.display()
                )),
                _ => CliError::from(anyhow::Error::new(e).context(format!("creating {}", path.display()))),
            })?;
        f.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        return Ok(());
    }
    let name = path
        .file_name()
        .map_or_else(|| "calibration".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}
