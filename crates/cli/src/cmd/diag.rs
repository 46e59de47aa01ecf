//! `rdmalab diag …`: ibdiagnet/ibtracert-style diagnostics (owned by the diag work; see
//! crates/diag).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

/// Diagnostics subcommands.
#[derive(Debug, Subcommand)]
pub enum DiagCmd {
    /// Check a subnet like ibdiagnet: CA-to-CA reachability, minimal paths, credit
    /// loops per VL (SL2VL aware), duplicate GUIDs/LIDs, degraded links, routes-per-port
    /// balance, isolated nodes. Exit 1 when an error is found.
    Check(CheckArgs),
    /// Trace the path from SRC to DST through the LFTs, printed like ibtracert.
    /// SRC/DST: a LID (6 or 0x6), a node or port GUID, or a node name/description.
    Trace(TraceArgs),
}

/// The files that describe an InfiniBand subnet.
#[derive(Debug, Args)]
pub struct SubnetFiles {
    /// Topology: ibnetdiscover output, ibsim net file or rdmalab JSON.
    #[arg(long)]
    pub topo: Option<PathBuf>,
    /// LFTs: opensm-lfts.dump, ibroute or dump_fts output.
    #[arg(long, required_unless_present = "sm", conflicts_with = "sm")]
    pub lfts: Option<PathBuf>,
    /// Instead of --lfts: bring the fabric up with rdmalab's SM, trying these engines
    /// in order (minhop, updn, ftree, dfsssp; comma-separated).
    #[arg(long, value_name = "ENGINES")]
    pub sm: Option<String>,
    /// LMC for --sm.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=7))]
    pub lmc: u8,
    /// opensm-subnet.lst (used as the topology when --topo is not given).
    #[arg(long)]
    pub subnet_lst: Option<PathBuf>,
    /// opensm-sl2vl.dump.
    #[arg(long)]
    pub sl2vl: Option<PathBuf>,
    /// OpenSM guid2lid cache file (port GUID -> LID range).
    #[arg(long)]
    pub guid2lid: Option<PathBuf>,
}

impl SubnetFiles {
    fn load(&self) -> anyhow::Result<diag::ib::Loaded> {
        let engines = self
            .sm
            .as_deref()
            .map(sm::routing::EngineKind::parse_list)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--sm: {e}"))?;
        Ok(diag::ib::load(&diag::ib::Files {
            topo: self.topo.as_deref(),
            lfts: self.lfts.as_deref(),
            sm: engines.as_deref().map(|e| (e, self.lmc)),
            subnet_lst: self.subnet_lst.as_deref(),
            sl2vl: self.sl2vl.as_deref(),
            guid2lid: self.guid2lid.as_deref(),
        })?)
    }
}

/// Options of `rdmalab diag check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub files: SubnetFiles,
    /// Expected link rate, e.g. 4xNDR (default: the best width and speed in the fabric).
    #[arg(long)]
    pub expect_rate: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `rdmalab diag trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Source: LID, GUID or node name.
    pub src: String,
    /// Destination: LID, GUID or node name.
    pub dst: String,
    #[command(flatten)]
    pub files: SubnetFiles,
    /// Print the path as JSON.
    #[arg(long)]
    pub json: bool,
}

fn parse_rate(s: &str) -> anyhow::Result<(fabric::IbWidth, fabric::IbSpeed)> {
    let i = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'x')
        .unwrap_or(s.len());
    let (w, sp) = s.split_at(i);
    let w: fabric::IbWidth = w
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--expect-rate {s:?}: {e}"))?;
    let sp: fabric::IbSpeed = sp
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--expect-rate {s:?}: {e}"))?;
    Ok((w, sp))
}

impl DiagCmd {
    pub fn exec(self) -> anyhow::Result<ExitCode> {
        let mut out = std::io::stdout();
        match self {
            DiagCmd::Check(a) => {
                let expect = a.expect_rate.as_deref().map(parse_rate).transpose()?;
                let l = a.files.load()?;
                let opts = diag::ib::CheckOptions {
                    expect,
                    ..Default::default()
                };
                let r = diag::ib::check(&l.fabric, &l.tables, l.inputs, l.findings, &opts);
                let text = if a.json {
                    r.render_json() + "\n"
                } else {
                    r.render_text()
                };
                out.write_all(text.as_bytes())?;
                Ok(if r.has_errors() {
                    ExitCode::from(super::FOUND_ERRORS)
                } else {
                    ExitCode::SUCCESS
                })
            }
            DiagCmd::Trace(a) => {
                let l = a.files.load()?;
                let t = diag::ib::trace(&l.fabric, &l.tables, &a.src, &a.dst)?;
                let text = if a.json {
                    serde_json::to_string_pretty(&t)? + "\n"
                } else {
                    t.text.clone()
                };
                out.write_all(text.as_bytes())?;
                Ok(if t.arrived {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(super::FOUND_ERRORS)
                })
            }
        }
    }
}
