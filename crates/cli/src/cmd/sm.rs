//! `rdmalab sm …`: run the Subnet Manager on a topology (owned by the SM work; see
//! crates/sm).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use fabric::format::{ReadOptions, read_file};
use sm::partitions::PartitionsConf;
use sm::routing::EngineKind;
use sm::run::{RunOptions, parse_guid_list, run};

use super::CliError;

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
    #[arg(long, required_unless_present = "umad")]
    topo: Option<PathBuf>,
    /// Manage the real fabric on a local InfiniBand port through libibumad (loaded at
    /// run time; Debian package libibumad3) instead of a topology file.
    #[arg(long, conflicts_with_all = ["topo", "direct", "guid2lid"])]
    umad: bool,
    /// With --umad: the CA to use (default: the first one).
    #[arg(long, requires = "umad")]
    ca: Option<String>,
    /// With --umad: the port number (default: the first active port).
    #[arg(long, requires = "umad", default_value_t = 0)]
    port: u8,
    /// With --umad: bring the subnet up (or find the master) once and exit (default).
    #[arg(long, requires = "umad", conflicts_with = "daemon")]
    once: bool,
    /// With --umad: keep running: light sweeps, traps, SMInfo polling and handover,
    /// until SIGINT or SIGTERM.
    #[arg(long, requires = "umad")]
    daemon: bool,
    /// With --umad: SMInfo priority (0-15); the highest SM is master.
    #[arg(long, requires = "umad", default_value_t = 0)]
    priority: u8,
    /// With --umad --daemon: milliseconds between light sweeps as master.
    #[arg(long, requires = "umad", default_value_t = 2000)]
    light_ms: u64,
    /// With --umad --daemon: milliseconds between polls of the master while standing by.
    #[arg(long, requires = "umad", default_value_t = 1000)]
    poll_ms: u64,
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
    /// Skip the SMP sweep: assign LIDs and route straight from the model.
    #[arg(long)]
    direct: bool,
    /// SMPs in flight during the sweep.
    #[arg(long, default_value_t = 64)]
    max_smps: usize,
    /// OpenSM partitions.conf: program P_Key tables by SMP on every CA port, switch
    /// port 0 and switch port facing a CA (OpenSM's layout and enforcement). With a
    /// topology, every GUID of the file must be in it.
    #[arg(long)]
    partitions: Option<PathBuf>,
}

fn read_guids(p: &Path) -> anyhow::Result<Vec<fabric::Guid>> {
    let text = std::fs::read_to_string(p).with_context(|| format!("failed to read {}", p.display()))?;
    parse_guid_list(&text, &p.display().to_string()).map_err(anyhow::Error::msg)
}

impl SmCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            SmCmd::Run(a) => a.exec(),
        }
    }
}

fn read_partitions(p: &Path) -> Result<Arc<PartitionsConf>, CliError> {
    let text = std::fs::read_to_string(p).with_context(|| format!("failed to read {}", p.display()))?;
    Ok(Arc::new(sm::partitions::parse(&text, &p.display().to_string())?))
}

impl RunArgs {
    fn exec(self) -> Result<(), CliError> {
        let engines = EngineKind::parse_list(&self.engine).map_err(anyhow::Error::msg)?;
        if self.lmc > 7 {
            return Err(CliError::bad_input(format!("--lmc {} is out of range (0-7)", self.lmc)));
        }
        let partitions = self.partitions.as_deref().map(read_partitions).transpose()?;
        if self.umad {
            return self.umad_run(engines, partitions);
        }
        let topo = self.topo.as_ref().expect("clap requires --topo without --umad");
        let (f, _) = read_file(topo, None, &ReadOptions::default())
            .with_context(|| format!("failed to read topology {}", topo.display()))?;
        // Every GUID of the file must be in the topology: say where it is not.
        let plan = match (&partitions, sm::lids::default_sm_port(&f)) {
            (Some(c), Some(sm_port)) => Some(sm::partitions::resolve(c, &f, sm_port)?),
            _ => None,
        };
        let mut o = RunOptions {
            engines,
            lmc: self.lmc,
            ..RunOptions::default()
        };
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
        if !self.direct {
            return self.sweep(f, o, partitions);
        }
        let (t, rep) = match run(&f, &o) {
            Ok(x) => x,
            Err(sm::run::RunError::Route(e)) => {
                eprintln!("rdmalab: routing failed: {e}");
                return Err(CliError::findings());
            }
            Err(e) => return Err(e.into()),
        };
        let sm_node = sm::lids::default_sm_port(&f).map(|p| p.0);
        if let Some(dir) = &self.dump {
            write_dumps(dir, &f, &t, sm_node, &rep.to_json(&f))?;
        }
        let ok = rep.validation.as_ref().is_none_or(|v| v.ok());
        if self.json {
            out!("{}", report::json(&rep.to_json(&f))?);
        } else {
            out!("{}", report::sm::summary_text(&f, &rep));
            if let Some(p) = &plan {
                out!("{}", report::sm::partitions_plan_text(p));
            }
        }
        if !ok {
            return Err(CliError::findings());
        }
        Ok(())
    }

    /// The SM on a real port (libibumad): mastership, sweeps, traps.
    fn umad_run(&self, engines: Vec<EngineKind>, partitions: Option<Arc<PartitionsConf>>) -> Result<(), CliError> {
        use sm::umad_daemon::{DaemonOptions, Event, install_stop_handler, run_umad, write_sweep_dumps};
        use std::sync::atomic::Ordering;
        if self.priority > 15 {
            return Err(CliError::bad_input(format!(
                "--priority {} is out of range (0-15)",
                self.priority
            )));
        }
        let mut route = sm::routing::RouteOptions {
            max_vls: self.max_vls,
            ..Default::default()
        };
        if let Some(p) = &self.root_guids {
            route.root_guids = read_guids(p)?;
        }
        if let Some(p) = &self.cn_guids {
            route.cn_guids = read_guids(p)?;
        }
        let opts = DaemonOptions {
            sweep: sm::sweep::SweepOptions {
                engines,
                lmc: self.lmc,
                route,
                max_in_flight: self.max_smps,
                partitions,
                ..Default::default()
            },
            priority: self.priority,
            once: !self.daemon,
            light_interval: std::time::Duration::from_millis(self.light_ms),
            poll_interval: std::time::Duration::from_millis(self.poll_ms),
            ..Default::default()
        };
        let umad = sm::umad::UmadOptions {
            ca: self.ca.clone(),
            port: self.port,
            ..Default::default()
        };
        let stop = install_stop_handler();
        let t0 = std::time::Instant::now();
        let mut dump_err: Option<anyhow::Error> = None;
        let mut last: Option<(serde_json::Value, bool)> = None;
        let json = self.json;
        let (out, _mgr) = run_umad(
            umad,
            &opts,
            &|| stop.load(Ordering::SeqCst),
            &mut |p| {
                if !json {
                    println!("{}", report::sm::umad_port_line(p));
                }
            },
            &mut |e| {
                if let Event::Sweep { report, sm } = &e {
                    if let Some(dir) = &self.dump
                        && let Err(err) = write_sweep_dumps(dir, sm, report)
                    {
                        dump_err = Some(anyhow::anyhow!("failed to write dumps to {}: {err}", dir.display()));
                    }
                    let ok = report.subnet_up
                        && report.issues.is_empty()
                        && report.validation.as_ref().is_none_or(|v| v.ok());
                    last = Some((report.to_json(sm.fabric.as_ref()), ok));
                }
                if !json {
                    println!("{}", report::sm::umad_event_line(t0.elapsed().as_secs_f64(), &e));
                }
            },
        )?;
        if let Some(e) = dump_err {
            return Err(e.into());
        }
        if json {
            let v = report::sm::umad_exit_json(&out, last.as_ref().map(|l| l.0.clone()));
            out!("{}", report::json(&v)?);
        } else {
            out!("{}", report::sm::umad_exit_text(&out));
        }
        // A standby SM has done its job; a master is judged by its last sweep.
        let ok = match last {
            Some((_, ok)) => ok,
            None => out.state == wire::mad::attr::SmState::Standby || self.daemon,
        };
        if !ok {
            return Err(CliError::findings());
        }
        Ok(())
    }

    /// The full heavy sweep through SMPs over the in-process fabric.
    fn sweep(&self, f: fabric::Fabric, o: RunOptions, partitions: Option<Arc<PartitionsConf>>) -> Result<(), CliError> {
        let sm_port = sm::lids::default_sm_port(&f).ok_or_else(|| anyhow::anyhow!("the topology has no nodes"))?;
        let opts = sm::sweep::SweepOptions {
            engines: o.engines,
            lmc: o.lmc,
            route: o.route,
            max_in_flight: self.max_smps,
            partitions,
            ..Default::default()
        };
        let mut mgr = sm::sweep::SubnetManager::new(opts, sm_port.1.max(1));
        if let Some(g) = o.guid2lid {
            mgr.guid2lid = g;
        }
        let mut fab = sm::sma::InProcess::new(f, sm_port);
        let rep = mgr.heavy_sweep(&mut fab);
        let model = mgr.fabric.as_ref();
        if let (Some(dir), Some(m), Some(t)) = (&self.dump, model, mgr.tables.as_ref()) {
            write_dumps(dir, m, t, Some(fabric::NodeId(0)), &rep.to_json(Some(m)))?;
        }
        if self.json {
            out!("{}", report::json(&rep.to_json(model))?);
        } else {
            out!("{}", report::sm::sweep_text(model, &rep));
        }
        let ok = rep.subnet_up && rep.issues.is_empty() && rep.validation.as_ref().is_none_or(|v| v.ok());
        if !ok {
            return Err(CliError::findings());
        }
        Ok(())
    }
}

fn write_dumps(
    dir: &Path,
    f: &fabric::Fabric,
    t: &sm::RoutingTables,
    sm_node: Option<fabric::NodeId>,
    sm_report: &serde_json::Value,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let files = [
        ("opensm-lfts.dump", sm::dump::lfts_dump(f, t)),
        ("opensm-subnet.lst", sm::dump::subnet_lst(f, t, sm_node)),
        ("guid2lid", sm::lids::Guid2Lid::from_tables(f, t).to_text()),
        ("opensm-sl2vl.dump", sm::dump::sl2vl_dump(f, t)),
        ("sm-report.json", report::json(sm_report)?),
    ];
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("failed to write {}", p.display()))?;
    }
    Ok(())
}
