//! `rdmalab diag …`: ibdiagnet/ibtracert-style diagnostics (owned by the diag work; see
//! crates/diag).

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::CliError;

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
    /// Judge an OpenSM partitions.conf against the tenants it must isolate: hosts of
    /// one tenant that cannot talk, tenants that can talk to each other, hosts in a
    /// tenant's partition that no tenant lists. Exit 1 when an error is found.
    Partitions(PartitionsArgs),
    /// Trace a RoCEv2 flow through an Ethernet fabric's ECMP groups (the path the
    /// simulator's RoCE model takes), with each hop's PFC/ECN settings from SONiC
    /// config_db files.
    RoceTrace(RoceTraceArgs),
}

/// Options of `rdmalab diag roce-trace`.
#[derive(Debug, Args)]
pub struct RoceTraceArgs {
    /// Source host (node name or description).
    pub src: String,
    /// Destination host.
    pub dst: String,
    /// Topology file (any format `rdmalab topo` reads).
    #[arg(long)]
    pub topo: PathBuf,
    /// UDP source port of the flow (RoCEv2 entropy).
    #[arg(long, conflicts_with = "qp")]
    pub sport: Option<u16>,
    /// Local and remote QPN, "LQPN,RQPN": the source port the Linux RDMA core derives.
    #[arg(long)]
    pub qp: Option<String>,
    /// DSCP of the flow (default 26, ToS 106).
    #[arg(long, default_value_t = 26, value_parser = clap::value_parser!(u8).range(0..64))]
    pub dscp: u8,
    /// A switch's config_db.json as SWITCH=FILE, or FILE for every switch (repeatable).
    #[arg(long = "config")]
    pub configs: Vec<String>,
    /// Lanes per port in SONiC port names: fabric port p is Ethernet<(p-1)*step>.
    #[arg(long, default_value_t = 4)]
    pub port_step: u32,
    /// ECMP hash function: murmur3 (the simulator's default) or crc32.
    #[arg(long, default_value = "murmur3")]
    pub hash: String,
    /// ECMP hash seed (xor-ed with each switch's node id).
    #[arg(long, default_value_t = 0)]
    pub hash_seed: u32,
    /// Print the path as JSON.
    #[arg(long)]
    pub json: bool,
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
    /// Path SLs of a layered engine, `0x<src node GUID> <dlid> <sl>` lines (ibdmchk -c).
    #[arg(long)]
    pub path_sl: Option<PathBuf>,
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
            path_sl: self.path_sl.as_deref(),
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
    /// Also validate the cabling as a rail-optimized design: one rail per leaf,
    /// each rail of a scalable unit on one leaf, one leaf per NIC of a server,
    /// non-blocking leaves.
    #[arg(long)]
    pub rails: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `rdmalab diag partitions`.
#[derive(Debug, Args)]
pub struct PartitionsArgs {
    /// Topology file (ibnetdiscover, ibsim net or rdmalab JSON).
    #[arg(long)]
    pub topo: PathBuf,
    /// OpenSM partitions.conf.
    #[arg(long)]
    pub partitions: PathBuf,
    /// Tenant file: `tenant NAME: host ...` / `shared NAME: host ...` lines; hosts by
    /// node name, name/port or port GUID.
    #[arg(long)]
    pub tenants: PathBuf,
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
    let i = s.find(|c: char| c.is_ascii_alphabetic() && c != 'x').unwrap_or(s.len());
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
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        let mut out = std::io::stdout();
        match self {
            DiagCmd::Check(a) => {
                let expect = a.expect_rate.as_deref().map(parse_rate).transpose()?;
                let l = a.files.load()?;
                let opts = diag::ib::CheckOptions {
                    expect,
                    rails: a.rails,
                    ..Default::default()
                };
                let r = diag::ib::check(&l.fabric, &l.tables, l.inputs, l.findings, &opts);
                let text = report::diag::check(&r, form(a.json));
                out.write_all(text.as_bytes())?;
                if r.has_errors() {
                    return Err(CliError::findings());
                }
                Ok(())
            }
            DiagCmd::RoceTrace(a) => {
                use diag::roce::trace::{HopConfigs, default_hash, trace_roce};
                let (f, _) = fabric::format::read_file(&a.topo, None, &fabric::format::ReadOptions::default())?;
                let sport = match (a.sport, a.qp.as_deref()) {
                    (Some(p), _) => p,
                    (None, Some(qp)) => {
                        let (l, r) = qp
                            .split_once(',')
                            .ok_or_else(|| anyhow::anyhow!("--qp {qp:?}: expected LQPN,RQPN"))?;
                        let l: u32 = l
                            .trim()
                            .parse()
                            .map_err(|_| anyhow::anyhow!("--qp {qp:?}: bad local QPN"))?;
                        let r: u32 = r
                            .trim()
                            .parse()
                            .map_err(|_| anyhow::anyhow!("--qp {qp:?}: bad remote QPN"))?;
                        ethcp::roce_udp_sport(l, r)
                    }
                    (None, None) => {
                        return Err(CliError::bad_input("give the flow's --sport or --qp LQPN,RQPN".into()));
                    }
                };
                let mut hash = default_hash();
                hash.seed = a.hash_seed;
                hash.func = match a.hash.as_str() {
                    "murmur3" => ethcp::HashFn::Murmur3,
                    "crc32" => ethcp::HashFn::Crc32,
                    other => {
                        return Err(CliError::bad_input(format!(
                            "--hash {other:?}: expected murmur3 or crc32"
                        )));
                    }
                };
                let mut cfg = HopConfigs {
                    configs: Vec::new(),
                    port_step: a.port_step,
                };
                for c in &a.configs {
                    let (name, file) = match c.split_once('=') {
                        Some((n, f)) => (Some(n.to_string()), f.to_string()),
                        None => (None, c.clone()),
                    };
                    let text = std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("read {file}: {e}"))?;
                    let db = diag::roce::sonic::ConfigDb::parse(&file, &text)?;
                    cfg.configs.push((name, file, db));
                }
                let t = trace_roce(&f, &a.src, &a.dst, sport, a.dscp, hash, &cfg)?;
                let text = report::diag::roce_trace(&t, form(a.json))?;
                out.write_all(text.as_bytes())?;
                let lossy = t.hops.iter().any(|h| h.qos.as_ref().is_some_and(|q| !q.lossless));
                if !t.arrived || lossy {
                    return Err(CliError::findings());
                }
                Ok(())
            }
            DiagCmd::Partitions(a) => {
                let (f, _) = fabric::format::read_file(&a.topo, None, &fabric::format::ReadOptions::default())?;
                let r = diag::ib::partitions::check_files(&f, &a.partitions, &a.tenants, None)?;
                out.write_all(report::diag::partitions(&r, form(a.json)).as_bytes())?;
                if r.has_errors() {
                    return Err(CliError::findings());
                }
                Ok(())
            }
            DiagCmd::Trace(a) => {
                let l = a.files.load()?;
                let t = diag::ib::trace(&l.fabric, &l.tables, &a.src, &a.dst)?;
                let text = report::diag::trace(&t, form(a.json))?;
                out.write_all(text.as_bytes())?;
                if !t.arrived {
                    return Err(CliError::findings());
                }
                Ok(())
            }
        }
    }
}

/// The output form a `--json` flag asks for.
fn form(json: bool) -> report::Form {
    if json { report::Form::Json } else { report::Form::Text }
}
