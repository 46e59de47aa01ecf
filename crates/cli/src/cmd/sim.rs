//! `rdmalab sim …`: run the packet-level simulator (owned by the simulator work;
//! see crates/sim).
//!
//! Exit codes: 0 the run finished; 1 it ran and found a problem (a credit
//! deadlock, a dropped packet on lossless InfiniBand); 2 bad input; 3 the
//! conservation ledger did not balance (a simulator bug).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use fabric::{Fabric, LinkRate, NodeId};
use report::sim::Perftest;
use sm::run::{RunOptions, run};

use super::CliError;
use crate::error::ledger_fault;

/// Simulator subcommands.
#[derive(Debug, Subcommand)]
pub enum SimCmd {
    /// Run a scenario file: build the fabric, run the SM, simulate the workload.
    Run(RunArgs),
    /// A perftest-like test between two hosts on one switch.
    Perftest(PerftestArgs),
    /// Run an ns-3 HPCC config as it is on the RoCE model; writes fct.txt / pfc.txt.
    Hpcc(super::sim_hpcc::HpccArgs),
}

/// Options of `rdmalab sim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario (TOML).
    scenario: PathBuf,
    /// Print the result as JSON (with the counts behind the speed figures).
    #[arg(long)]
    json: bool,
    /// Write ports.csv and flows.csv into this directory.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Capture one port's packets: NODE:PORT (node name as in the fabric).
    #[arg(long, requires = "output")]
    capture: Option<String>,
    /// The pcap file for --capture.
    #[arg(short = 'o', long = "output", requires = "capture")]
    output: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    seed: Option<u64>,
    /// `packet` (default): every packet simulated; `flow`: each flow of the traffic
    /// at its max-min fair rate on the same routes (no per-packet counters,
    /// capture or CSV; perftest workloads need packets); `auto`: flow level for
    /// traffic on more hosts than the packet level runs quickly (256), where
    /// nothing asked needs packets, else packet level.
    #[arg(long, value_enum, default_value = "packet")]
    engine: SimEngine,
}

/// `sim run --engine`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SimEngine {
    /// Packet level.
    Packet,
    /// Flow level.
    Flow,
    /// Flow level past 256 hosts where the run needs no packets, else packet level.
    Auto,
}

/// The perftest-like tests.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PerfTest {
    /// ib_write_bw.
    WriteBw,
    /// ib_write_lat.
    WriteLat,
    /// ib_send_lat.
    SendLat,
    /// ib_read_lat.
    ReadLat,
}

/// `sim perftest --nic`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PerftestNic {
    /// The published InfiniBand HCA (`lab::endpoints::IB_HCA`).
    Published,
    /// No NIC time and no payload ceiling: the fabric alone.
    Ideal,
}

/// Options of `rdmalab sim perftest`.
#[derive(Debug, Args)]
pub struct PerftestArgs {
    /// Which test.
    test: PerfTest,
    /// Message size in bytes.
    #[arg(short = 's', long, default_value_t = 65_536)]
    size: u64,
    /// Iterations.
    #[arg(short = 'n', long, default_value_t = 5_000)]
    iters: u64,
    /// Outstanding work requests (bandwidth test).
    #[arg(short = 't', long, default_value_t = 128)]
    tx_depth: u64,
    /// Link rate, e.g. 4xEDR, 4xHDR, 4xNDR.
    #[arg(long, default_value = "4xNDR")]
    rate: String,
    /// Path MTU in bytes.
    #[arg(short = 'm', long, default_value_t = 4096)]
    mtu: u32,
    /// Cable length in metres.
    #[arg(long, default_value_t = 2.0)]
    cable_m: f64,
    /// Switch latency in nanoseconds.
    #[arg(long, default_value_t = 130)]
    switch_latency_ns: u64,
    /// Forward store-and-forward instead of cut-through.
    #[arg(long)]
    store_and_forward: bool,
    /// Cable the two hosts to each other, without a switch (how NIC vendors
    /// quote latency).
    #[arg(long)]
    back_to_back: bool,
    /// The HCAs: `published` (the latency and payload ceiling of rdmalab's
    /// published NIC model, lab::endpoints) or `ideal` (no NIC time, line rate).
    #[arg(long, value_enum, default_value_t = PerftestNic::Published)]
    nic: PerftestNic,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl SimCmd {
    /// Run it.
    pub fn exec(self) -> Result<(), CliError> {
        match self {
            SimCmd::Run(a) => a.exec(),
            SimCmd::Perftest(a) => a.exec(),
            SimCmd::Hpcc(a) => a.exec(),
        }
    }
}

/// Peak resident memory of this process (VmHWM), bytes.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// CPU time of this thread, ns (/proc/thread-self/schedstat).
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn parse_capture(f: &Fabric, spec: &str) -> anyhow::Result<(NodeId, u8)> {
    let (name, port) = spec
        .rsplit_once(':')
        .with_context(|| format!("--capture {spec:?}: expected NODE:PORT, e.g. leaf03:1"))?;
    let node = f
        .by_name(name)
        .with_context(|| format!("--capture {spec:?}: no node named {name:?} in the fabric"))?;
    let port: u8 = port
        .parse()
        .with_context(|| format!("--capture {spec:?}: port {port:?} is not a number"))?;
    Ok((node, port))
}

impl RunArgs {
    fn exec(self) -> Result<(), CliError> {
        let mut sc = lab::ScenarioFile::load(&self.scenario)?.packet_run(&self.scenario)?;
        if let Some(seed) = self.seed {
            sc.engine.seed = seed;
        }
        let f = sc.build_fabric()?;
        let (tables, rep) = sc.route(&f)?;
        let hosts: Vec<NodeId> = f.nodes_of(fabric::NodeKind::Ca).collect();
        let flow = match self.engine {
            SimEngine::Packet => false,
            SimEngine::Flow => true,
            SimEngine::Auto => {
                let max = lab::scenario::AUTO_PACKET_MAX_ENDPOINTS as usize;
                let needs_packets = if self.capture.is_some() || self.csv.is_some() {
                    Some("--capture and --csv need packets")
                } else if sim::scenario::traffic_matrix(&sc, hosts.len() as u32)?.is_none() {
                    Some("a perftest workload needs packets")
                } else {
                    None
                };
                let (flow, why) = match needs_packets {
                    Some(why) => (false, format!("{why}: packet level")),
                    None if hosts.len() > max => (true, format!("{} hosts, more than {max}: flow level", hosts.len())),
                    None => (false, format!("{} hosts, at most {max}: packet level", hosts.len())),
                };
                eprintln!("engine auto: {why}");
                flow
            }
        };
        if flow {
            if self.capture.is_some() || self.csv.is_some() {
                return Err(CliError::bad_input(
                    "--capture and --csv need packets: run without --engine flow".into(),
                ));
            }
            let m = sim::scenario::traffic_matrix(&sc, hosts.len() as u32)?.ok_or_else(|| {
                CliError::bad_input(format!(
                    "{}: a perftest workload measures per-message latency and bandwidth, which needs packets: run without --engine flow",
                    self.scenario.display()
                ))
            })?;
            let end = sc.end().map_or(u64::MAX, |t| t.as_ps());
            let wall = Instant::now();
            let (report, counters) = lab::flow_world::run_matrix_flow(&f, &tables, &sc.ib, &hosts, &m, end)
                .context("run the traffic at flow level")?;
            let speed = report::sim::Speed {
                wall_s: wall.elapsed().as_secs_f64(),
                cpu_s: None,
                peak_memory_bytes: peak_rss(),
            };
            let name = sc.display_name();
            let engine = rep.outcome.engine.name();
            if self.json {
                out!(
                    "{}",
                    report::json(&report::sim::flow_run_json(&name, engine, &report, &counters, &speed)?)?
                );
            } else {
                out!(
                    "{}",
                    report::sim::flow_run_text(&name, engine, &report, &counters, &speed)
                );
            }
            return Ok(());
        }
        let capture = self.capture.as_deref().map(|c| parse_capture(&f, c)).transpose()?;

        let bar = (std::io::stderr().is_terminal() && !self.json).then(|| {
            let end = sc.end().map_or(0, |t| t.as_ps() / 1_000_000);
            let b = indicatif::ProgressBar::new(end);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} simulated {pos}/{len} us [{bar:30}] {elapsed_precise}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
        let cpu0 = thread_cpu_ns();
        let wall = Instant::now();
        let (out, sim) = sim::scenario::run(&sc, &f, &tables, capture, &mut |t| {
            if let Some(b) = &bar {
                b.set_position(t.as_ps() / 1_000_000);
            }
        })?;
        let wall_s = wall.elapsed().as_secs_f64();
        let cpu_s = match (cpu0, thread_cpu_ns()) {
            (Some(a), Some(b)) => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        if let (Some(path), Some(_)) = (&self.output, capture) {
            sim::capture::write_pcap(path, sim.captured())?;
        }
        if let Some(dir) = &self.csv {
            std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
            std::fs::write(dir.join("ports.csv"), sim.port_csv())?;
            if let Some(m) = &out.matrix {
                std::fs::write(dir.join("flows.csv"), m.csv())?;
            }
        }
        let speed = report::sim::Speed {
            wall_s,
            cpu_s,
            peak_memory_bytes: peak_rss(),
        };
        let engine = rep.outcome.engine.name();
        if self.json {
            out!("{}", report::json(&report::sim::run_json(&out, engine, &speed)?)?);
        } else {
            out!("{}", report::sim::run_text(&out, engine, &speed));
        }
        let s = &out.summary;
        if !s.ledger_balanced {
            return Err(ledger_fault(
                "packet",
                sim::engine::LedgerError {
                    created: s.packets_created,
                    delivered: s.packets_delivered,
                    dropped: s.packets_dropped,
                    in_flight: s.packets_in_flight,
                },
            ));
        }
        if out.deadlock.is_some() || s.packets_dropped > 0 {
            return Err(CliError::findings());
        }
        Ok(())
    }
}

impl PerftestArgs {
    fn exec(self) -> Result<(), CliError> {
        let rate: LinkRate = self.rate.parse().map_err(anyhow::Error::msg).context("--rate")?;
        if !rate.is_ib() {
            return Err(CliError::bad_input(format!(
                "--rate {}: an InfiniBand rate is needed, e.g. 4xNDR",
                self.rate
            )));
        }
        let mut f = Fabric::new();
        let mut hosts = Vec::new();
        for h in 0..2u8 {
            hosts.push(f.add_node(fabric::NodeSpec::ca(
                format!("host{h}"),
                fabric::Guid(0x0002_c903_0010_0000 + 16 * u64::from(h)),
                1,
            ))?);
        }
        if self.back_to_back {
            f.connect(hosts[0], 1, hosts[1], 1, rate, self.cable_m)?;
        } else {
            let sw = f.add_node(fabric::NodeSpec::switch("sw0", fabric::Guid(0x0002_c903_0000_1000), 8))?;
            for (h, &c) in hosts.iter().enumerate() {
                f.connect(sw, h as u8 + 1, c, 1, rate, self.cable_m)?;
            }
        }
        let nic = match self.nic {
            PerftestNic::Published => lab::endpoints::IB_HCA,
            PerftestNic::Ideal => lab::endpoints::NicModel {
                latency: lab::results::NicLatency { tx_ps: 0, rx_ps: 0 },
                payload_ppm: 0,
                ..lab::endpoints::IB_HCA
            },
        };
        let (tables, _) = run(
            &f,
            &RunOptions {
                validate: false,
                ..RunOptions::default()
            },
        )?;
        let ib = sim::IbConfig {
            mtu: self.mtu,
            switch_latency_ps: self.switch_latency_ns * 1_000,
            forwarding: if self.store_and_forward {
                sim::Forwarding::StoreAndForward
            } else {
                sim::Forwarding::CutThrough
            },
            hca_tx_latency_ps: nic.latency.tx_ps,
            hca_rx_latency_ps: nic.latency.rx_ps,
            hca_payload_ppm: nic.payload_ppm,
            ..sim::IbConfig::default()
        };
        let mut s = sim::Sim::new(&f, &tables, ib, sim::EngineConfig::default())?;
        let (a, b) = (hosts[0], hosts[1]);
        let r = match self.test {
            PerfTest::WriteBw => Perftest::Bandwidth(sim::workload::perftest::write_bw(
                &mut s,
                a,
                b,
                self.size,
                self.iters,
                self.tx_depth,
            )?),
            PerfTest::WriteLat => {
                Perftest::Latency(sim::workload::perftest::write_lat(&mut s, a, b, self.size, self.iters)?)
            }
            PerfTest::SendLat => {
                Perftest::Latency(sim::workload::perftest::send_lat(&mut s, a, b, self.size, self.iters)?)
            }
            PerfTest::ReadLat => {
                Perftest::Latency(sim::workload::perftest::read_lat(&mut s, a, b, self.size, self.iters)?)
            }
        };
        s.check_ledger().context("internal error")?;
        if self.json {
            out!(
                "{}",
                report::json(&report::sim::perftest_json(
                    &rate.to_string(),
                    self.mtu,
                    &r,
                    &s.summary()
                )?)?
            );
        } else {
            out!("{}", report::sim::perftest_text(&r));
        }
        Ok(())
    }
}
