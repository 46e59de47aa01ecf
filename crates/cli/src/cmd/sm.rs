//! `rdmalab sm …`: run the Subnet Manager on a topology (owned by the SM work; see
//! crates/sm).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use fabric::format::{ReadOptions, read_file};
use sm::routing::EngineKind;
use sm::run::{RunOptions, parse_guid_list, run};

/// Subnet Manager subcommands.
#[derive(Debug, Subcommand)]
pub enum SmCmd {
    /// Assign LIDs, route and validate a topology; print a sweep summary.
    Run(RunArgs),
}

/// Options of `rdmalab sm run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Topology file (ibnetdiscover, ibsim net, HPCC topology.txt or rdmalab JSON).
    #[arg(long)]
    topo: PathBuf,
    /// Routing engines to try in order, comma-separated: minhop, updn, ftree, dfsssp.
    #[arg(long, default_value = "minhop")]
    engine: String,
    /// LID mask control (0-7): 2^LMC LIDs per CA port.
    #[arg(long, default_value_t = 0)]
    lmc: u8,
    /// Root switch GUIDs for updn/ftree, one per line.
    #[arg(long)]
    root_guids: Option<PathBuf>,
    /// Compute-node port GUIDs for ftree, one per line.
    #[arg(long)]
    cn_guids: Option<PathBuf>,
    /// A guid2lid cache to honour (OpenSM format); LIDs are kept where possible.
    #[arg(long)]
    guid2lid: Option<PathBuf>,
    /// Data VLs the deadlock-free engine may use.
    #[arg(long, default_value_t = 8)]
    max_vls: u8,
    /// Write opensm-lfts.dump, opensm-subnet.lst, guid2lid, opensm-sl2vl.dump and
    /// sm-report.json into this directory.
    #[arg(long)]
    dump: Option<PathBuf>,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

fn read_guids(p: &Path) -> anyhow::Result<Vec<fabric::Guid>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("failed to read {}", p.display()))?;
    parse_guid_list(&text, &p.display().to_string()).map_err(anyhow::Error::msg)
}

impl SmCmd {
    pub fn exec(self) -> anyhow::Result<ExitCode> {
        match self {
            SmCmd::Run(a) => a.exec(),
        }
    }
}

impl RunArgs {
    fn exec(self) -> anyhow::Result<ExitCode> {
        let engines = EngineKind::parse_list(&self.engine).map_err(anyhow::Error::msg)?;
        if self.lmc > 7 {
            anyhow::bail!("--lmc {} is out of range (0-7)", self.lmc);
        }
        let (f, _) = read_file(&self.topo, None, &ReadOptions::default())
            .with_context(|| format!("failed to read topology {}", self.topo.display()))?;
        let mut o = RunOptions { engines, lmc: self.lmc, ..RunOptions::default() };
        o.route.max_vls = self.max_vls;
        if let Some(p) = &self.root_guids {
            o.route.root_guids = read_guids(p)?;
        }
        if let Some(p) = &self.cn_guids {
            o.route.cn_guids = read_guids(p)?;
        }
        if let Some(p) = &self.guid2lid {
            let text = std::fs::read_to_string(p).with_context(|| format!("failed to read {}", p.display()))?;
            o.guid2lid = Some(sm::lids::Guid2Lid::parse(&text, &p.display().to_string())?);
        }
        let (t, rep) = match run(&f, &o) {
            Ok(x) => x,
            Err(sm::run::RunError::Route(e)) => {
                eprintln!("rdmalab: routing failed: {e}");
                return Ok(ExitCode::from(super::FOUND_ERRORS));
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(dir) = &self.dump {
            std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
            let sm_node = o.sm_port.map(|p| p.0).or_else(|| sm::lids::default_sm_port(&f).map(|p| p.0));
            let files = [
                ("opensm-lfts.dump", sm::dump::lfts_dump(&f, &t)),
                ("opensm-subnet.lst", sm::dump::subnet_lst(&f, &t, sm_node)),
                ("guid2lid", sm::lids::Guid2Lid::from_tables(&f, &t).to_text()),
                ("opensm-sl2vl.dump", sm::dump::sl2vl_dump(&f, &t)),
                ("sm-report.json", serde_json::to_string_pretty(&rep.to_json(&f))? + "\n"),
            ];
            for (name, text) in files {
                let p = dir.join(name);
                std::fs::write(&p, text).with_context(|| format!("failed to write {}", p.display()))?;
            }
        }
        let ok = rep.validation.as_ref().is_none_or(|v| v.ok());
        if self.json {
            println!("{}", serde_json::to_string_pretty(&rep.to_json(&f))?);
        } else {
            print_summary(&f, &rep);
        }
        Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(super::FOUND_ERRORS) })
    }
}

fn print_summary(f: &fabric::Fabric, rep: &sm::run::RunReport) {
    let sw = f.count(fabric::NodeKind::Switch);
    let ca = f.count(fabric::NodeKind::Ca);
    println!("fabric: {sw} switches, {ca} CAs, {} links", f.links.len());
    for p in &rep.phases {
        println!("  phase {:<10} {:>10.3} ms", p.name, p.micros as f64 / 1000.0);
    }
    println!(
        "lids: {} ports, max LID {}, {} kept from guid2lid, {} moved",
        rep.lids.ports, rep.lids.max_lid, rep.lids.kept, rep.lids.moved
    );
    for (e, why) in &rep.outcome.fallbacks {
        println!("engine {e} failed, falling back: {why}");
    }
    println!("engine: {} ({} VL{})", rep.outcome.engine, rep.vls_used, if rep.vls_used == 1 { "" } else { "s" });
    if let Some(v) = &rep.validation {
        let r = &v.routes;
        println!(
            "reachability: {} of {} CA-to-CA pairs arrive; {} non-minimal; max hops {}",
            r.pairs - r.unreachable,
            r.pairs,
            r.non_minimal,
            r.max_hops
        );
        for x in &r.failures {
            println!("  unreachable: {}", x.describe(f));
        }
        match v.credit_loops.describe(f) {
            Some(c) => println!("credit loops: FOUND {c}"),
            None => println!(
                "credit loops: none ({} channels, {} dependencies, {} VLs)",
                v.credit_loops.channels, v.credit_loops.dependencies, v.credit_loops.vls_used
            ),
        }
        let busiest = v
            .loads
            .busiest_isl
            .map(|(n, p)| format!(" at {}/P{p}", f.nodes[n.idx()].name))
            .unwrap_or_default();
        println!("balance: max {} routes on one switch-to-switch port{busiest}", v.loads.max_routes_isl);
        println!("validation: {}", if v.ok() { "ok" } else { "FAILED" });
    }
}
