//! Run an ns-3 HPCC config as it is: its TOPOLOGY_FILE, FLOW_FILE, CC_MODE and
//! the other keys, on the RoCE world ([`RoceSim`]); write `fct.txt` and
//! `pfc.txt` in ns-3's layout where the config names them.
//!
//! Paths in the config are resolved against the config file's directory (ns-3
//! resolves them against its working directory, which is where its configs
//! live). Keys rdmalab does not model come back as named warnings.

use std::path::{Path, PathBuf};

use fabric::{Fabric, NodeId, NodeKind};

use sim::engine::Time;
use sim::roce::dcqcn::Red;

use crate::hpcc::{FctRecord, HpccConfig, HpccError, HpccFlow, Warning, read_flows, standalone_fct_ns};
use sim::roce::net::{CongestionControl, FlowSpec, ROCEV2_HEADERS, RoceConfig, RoceSim, RoceStatus};
use sim::roce::pfc::PauseMode;
use sim::roce::transport::Recovery;

/// The largest host-pair base RTT, as third.cc computes HPCC's T with
/// `GLOBAL_T 1`: a BFS from every host gives each pair's one-way propagation
/// delay `d` and the serialisation `s` of one payload on each hop; RTT = 2d + s
/// (third.cc `CalculateRoute`, `pairRtt`). Costs one BFS per host.
pub fn max_rtt(fabric: &Fabric, payload: u32) -> Time {
    let n = fabric.nodes.len();
    let mut adj: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for (i, l) in fabric.links.iter().enumerate() {
        adj[l.a.node.idx()].push((l.b.node.idx(), i));
        adj[l.b.node.idx()].push((l.a.node.idx(), i));
    }
    let mut best = 0u64;
    let mut seen = vec![u32::MAX; n];
    let (mut delay, mut tx) = (vec![0u64; n], vec![0u64; n]);
    let mut queue = std::collections::VecDeque::new();
    for src in (0..n).filter(|&i| fabric.nodes[i].kind == NodeKind::Ca) {
        seen[src] = src as u32;
        delay[src] = 0;
        tx[src] = 0;
        queue.push_back(src);
        while let Some(u) = queue.pop_front() {
            for &(v, li) in &adj[u] {
                if seen[v] == src as u32 {
                    continue;
                }
                seen[v] = src as u32;
                let l = &fabric.links[li];
                delay[v] = delay[u] + l.delay_ps;
                tx[v] = tx[u] + sim::engine::time::serialization_ps(u64::from(payload), l.rate.data_bps().max(1));
                if fabric.nodes[v].kind == NodeKind::Ca {
                    best = best.max(2 * delay[v] + tx[v]);
                } else {
                    // Hosts do not forward (third.cc routes through switches only).
                    queue.push_back(v);
                }
            }
        }
    }
    Time(best)
}

/// Errors of an HPCC run.
#[derive(Debug, thiserror::Error)]
pub enum HpccRunError {
    /// A file could not be read or written.
    #[error("{what} {path}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The config, flow or trace file is malformed.
    #[error(transparent)]
    Parse(#[from] HpccError),
    /// The topology file is malformed.
    #[error(transparent)]
    Topology(#[from] fabric::ParseError),
    /// A required key is missing.
    #[error("read {file}: the key {key} is required")]
    Missing { file: String, key: &'static str },
    /// The world could not be built.
    #[error(transparent)]
    Build(#[from] sim::roce::net::RoceError),
}

/// What a run did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HpccReport {
    /// Flows in the flow file.
    pub flows: usize,
    /// Flows finished by the stop time.
    pub finished: usize,
    /// Packet transmissions over links (hops).
    pub hops: u64,
    /// Events processed.
    pub events: u64,
    /// Simulated time covered, µs (from the first flow start to the end).
    pub simulated_us: f64,
    /// Wall-clock seconds.
    pub wall_s: f64,
    /// Threads the run was split over (1: not split; see
    /// [`RoceSim::run_threads`]).
    pub threads: usize,
    /// Drops by reason.
    pub dropped: Vec<(String, u64)>,
    /// PFC pause transitions recorded.
    pub pause_events: usize,
    /// How the run ended.
    pub status: String,
    /// Warnings: unknown and unsupported keys, extra flow lines.
    pub warnings: Vec<String>,
    /// Output files written.
    pub wrote: Vec<String>,
}

fn read(what: &'static str, p: &Path) -> Result<String, HpccRunError> {
    std::fs::read_to_string(p).map_err(|source| HpccRunError::Io {
        what,
        path: p.display().to_string(),
        source,
    })
}

/// A parsed HPCC experiment, ready to run.
#[derive(Debug)]
pub struct HpccExperiment {
    /// The config.
    pub config: HpccConfig,
    /// The topology.
    pub fabric: Fabric,
    /// The flows.
    pub flows: Vec<HpccFlow>,
    /// The RoCE settings derived from the config.
    pub roce: RoceConfig,
    /// Warnings.
    pub warnings: Vec<Warning>,
    /// Threads to split the run over ([`RoceSim::run_threads`]; 1 by default).
    /// The results are the same for any number.
    pub threads: usize,
    dir: PathBuf,
}

impl HpccExperiment {
    /// Load a config and the files it names.
    pub fn load(config: &Path) -> Result<HpccExperiment, HpccRunError> {
        let text = read("read config", config)?;
        let name = config.display().to_string();
        let c = HpccConfig::parse(&name, &text)?;
        let dir = config.parent().map(Path::to_path_buf).unwrap_or_default();
        let topo = c.topology_file.clone().ok_or(HpccRunError::Missing {
            file: name.clone(),
            key: "TOPOLOGY_FILE",
        })?;
        let flowf = c.flow_file.clone().ok_or(HpccRunError::Missing {
            file: name.clone(),
            key: "FLOW_FILE",
        })?;
        let tp = dir.join(&topo);
        let fabric = fabric::format::read_hpcc(&tp.display().to_string(), &read("read topology", &tp)?)?;
        let fp = dir.join(&flowf);
        let (flows, mut warnings) = read_flows(
            &fp.display().to_string(),
            &read("read flows", &fp)?,
            fabric.nodes.len() as u32,
        )?;
        let mut rates: Vec<u64> = fabric.links.iter().map(|l| l.rate.data_bps()).collect();
        rates.sort_unstable();
        rates.dedup();
        c.check_maps(&rates)?;
        let mut w = c.unsupported();
        w.append(&mut warnings);
        if c.l2_back_to_zero == Some(true) {
            w.push(Warning {
                at: c.at("L2_BACK_TO_ZERO"),
                key: "L2_BACK_TO_ZERO".into(),
                why: "1 (go back to the chunk boundary) runs as go-back-0 on whole messages".into(),
            });
        }
        if c.l2_chunk_size.is_some_and(|x| x > 0) {
            w.push(Warning {
                at: c.at("L2_CHUNK_SIZE"),
                key: "L2_CHUNK_SIZE".into(),
                why: "chunked ACKs are not modelled; ACKs follow L2_ACK_INTERVAL".into(),
            });
        }
        let nic_bps = fabric
            .links
            .iter()
            .filter(|l| fabric.node(l.a.node).kind == NodeKind::Ca || fabric.node(l.b.node).kind == NodeKind::Ca)
            .map(|l| l.rate.data_bps())
            .min()
            .unwrap_or(100_000_000_000);
        let red: Vec<(u64, Red)> = rates.iter().filter_map(|&r| c.red(r).map(|x| (r, x))).collect();
        let roce = RoceConfig {
            nic: sim::roce::net::NicConfig {
                mtu: c.packet_payload_size.unwrap_or(1000),
                cc: match c.cc_mode.unwrap_or(1) {
                    1 => CongestionControl::Dcqcn(c.dcqcn(nic_bps)),
                    8 => CongestionControl::Dctcp(c.dctcp(nic_bps)),
                    3 => CongestionControl::Hpcc(
                        c.hpcc(nic_bps, max_rtt(&fabric, c.packet_payload_size.unwrap_or(1000))),
                    ),
                    // Unmodelled modes run at line rate; `unsupported` names them.
                    _ => CongestionControl::None,
                },
                recovery: if c.l2_back_to_zero == Some(true) {
                    Recovery::GoBack0
                } else {
                    Recovery::GoBackN
                },
                ack_every: c.l2_ack_interval.unwrap_or(1).max(1),
                ack_high_prio: c.ack_high_prio.unwrap_or(false),
                ..Default::default()
            },
            switch: sim::roce::net::SwitchConfig {
                ecn: c.enable_qcn.unwrap_or(true),
                red,
                buffer_bytes: c.buffer_size_mb.unwrap_or(16) << 20,
                ..Default::default()
            },
            pfc: sim::roce::net::PfcConfig {
                enabled: true,
                pause_mode: PauseMode::UntilXon,
                ..Default::default()
            },
            routing: sim::roce::net::RoutingConfig {
                // third.cc `TakeDownLink` recomputes every node's routes at the moment
                // the link goes down: no convergence delay.
                ecmp_convergence: Time::ZERO,
                ..Default::default()
            },
            ..RoceConfig::default()
        };
        Ok(HpccExperiment {
            config: c,
            fabric,
            flows,
            roce,
            warnings: w,
            threads: 1,
            dir,
        })
    }

    /// The flows as RoCE flow specs: source ports per (src, dst) pair start at
    /// 10000 and count up, as third.cc numbers them.
    pub fn flow_specs(&self) -> Vec<FlowSpec> {
        let mut next: std::collections::BTreeMap<(u32, u32), u16> = std::collections::BTreeMap::new();
        self.flows
            .iter()
            .map(|f| {
                let p = next.entry((f.src, f.dst)).or_insert(10000);
                let sport = *p;
                *p = p.wrapping_add(1);
                FlowSpec {
                    src: NodeId(f.src),
                    dst: NodeId(f.dst),
                    size: f.size,
                    messages: 1,
                    start: f.start,
                    sport,
                    dport: f.dport,
                }
            })
            .collect()
    }

    /// Run to the config's stop time (or `until` if earlier); write the outputs
    /// the config names under `out_dir` (default: the config's directory).
    pub fn run(&self, until: Option<Time>, out_dir: Option<&Path>) -> Result<(HpccReport, RoceSim), HpccRunError> {
        let specs = self.flow_specs();
        let mut sim = RoceSim::new(&self.fabric, self.roce.clone(), &specs)?;
        // LINK_DOWN t a b: the link a–b fails at 2 s + t µs (third.cc), and every
        // route is recomputed at that moment (`ecmp_convergence` 0, as TakeDownLink).
        if let Some((t, a, b)) = self.config.link_down.filter(|l| *l != (0, 0, 0)) {
            let link = self
                .fabric
                .links
                .iter()
                .position(|l| (l.a.node.0, l.b.node.0) == (a, b) || (l.a.node.0, l.b.node.0) == (b, a));
            let Some(li) = link else {
                return Err(HpccRunError::Parse(HpccError {
                    file: self.config.file.clone(),
                    line: self
                        .config
                        .at("LINK_DOWN")
                        .rsplit(':')
                        .next()
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(0),
                    what: format!("LINK_DOWN names nodes {a} and {b}, which no link joins"),
                }));
            };
            sim.fail_link_at(fabric::LinkId(li as u32), Time::ms(2000) + Time::us(t));
        }
        let stop = until.map_or(self.config.stop_time(), |u| u.min(self.config.stop_time()));
        let t0 = std::time::Instant::now();
        let status = sim.run_threads(stop, self.threads);
        let wall = t0.elapsed().as_secs_f64();
        let first = specs.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
        // Standalone FCT: base RTT and bottleneck along a shortest path.
        let flat = self.fabric.freeze();
        let mut fct: Vec<FctRecord> = sim.fct.clone();
        for r in &mut fct {
            let (s, d) = (node_of_ip(r.sip), node_of_ip(r.dip));
            let (rtt_ns, bottleneck) = path_props(&self.fabric, &flat, s, d, self.roce.nic.mtu);
            r.standalone_ns = standalone_fct_ns(r.size, self.roce.nic.mtu, ROCEV2_HEADERS, rtt_ns, bottleneck).max(1);
        }
        let mut wrote = Vec::new();
        let out = out_dir.map_or_else(|| self.dir.clone(), Path::to_path_buf);
        let mut write = |key: &Option<String>, default: &str, body: String| -> Result<(), HpccRunError> {
            let rel = key.clone().unwrap_or_else(|| default.to_string());
            let p = out.join(rel);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).map_err(|source| HpccRunError::Io {
                    what: "create directory",
                    path: d.display().to_string(),
                    source,
                })?;
            }
            std::fs::write(&p, body).map_err(|source| HpccRunError::Io {
                what: "write",
                path: p.display().to_string(),
                source,
            })?;
            wrote.push(p.display().to_string());
            Ok(())
        };
        write(&self.config.fct_output_file, "fct.txt", crate::hpcc::write_fct(&fct))?;
        write(
            &self.config.pfc_output_file,
            "pfc.txt",
            crate::hpcc::write_pfc(&sim.pfc),
        )?;
        let status = match status {
            RoceStatus::Done => "done".to_string(),
            RoceStatus::TimeLimit => "stop time".to_string(),
            RoceStatus::Stuck => "stuck".to_string(),
            RoceStatus::Delivered => "delivered".to_string(),
            RoceStatus::Deadlock(d) => d.to_string(),
        };
        let report = HpccReport {
            flows: specs.len(),
            finished: fct.len(),
            hops: sim.hops(),
            events: sim.events,
            simulated_us: sim.now().saturating_sub(first).as_us_f64(),
            wall_s: wall,
            threads: sim.last_threads(),
            dropped: sim::roce::net::RoceDrop::ALL
                .iter()
                .zip(sim.ledger.dropped)
                .filter(|x| x.1 > 0)
                .map(|(r, n)| (format!("{r:?}"), n))
                .collect(),
            pause_events: sim.pfc.len(),
            status,
            warnings: self
                .warnings
                .iter()
                .map(ToString::to_string)
                .chain(
                    sim.why_one_thread()
                        .map(|why| format!("{} threads asked, the run used one: {why}", self.threads)),
                )
                .collect(),
            wrote,
        };
        Ok((report, sim))
    }
}

/// A flow-size CDF as traffic_gen reads it: `size cumulative_percent` lines.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf(pub Vec<(f64, f64)>);

impl SizeCdf {
    /// Parse `size percent` lines (percent rising to 100).
    pub fn parse(file: &str, text: &str) -> Result<SizeCdf, HpccError> {
        let mut v: Vec<(f64, f64)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let mut it = line.split_whitespace();
            let (Some(a), Some(b)) = (it.next(), it.next()) else {
                continue;
            };
            let err = |what: &str| HpccError {
                file: file.into(),
                line: i + 1,
                what: what.into(),
            };
            let size: f64 = a.parse().map_err(|_| err("expected a size in bytes"))?;
            let pct: f64 = b.parse().map_err(|_| err("expected a cumulative percent"))?;
            if v.last().is_some_and(|l| pct < l.1 || size < l.0) || !(0.0..=100.0).contains(&pct) {
                return Err(err(
                    "expected sizes and percents that never decrease, percents within 0..=100",
                ));
            }
            v.push((size, pct));
        }
        if v.last().is_none_or(|l| l.1 != 100.0) {
            return Err(HpccError {
                file: file.into(),
                line: text.lines().count().max(1),
                what: "expected the CDF to end at 100".into(),
            });
        }
        Ok(SizeCdf(v))
    }

    /// A size for the uniform draw `u` in [0, 1), interpolating linearly between
    /// points (traffic_gen's `customRand`).
    pub fn sample(&self, u: f64) -> u64 {
        let x = u * 100.0;
        let mut prev = (0.0, 0.0);
        for &(s, p) in &self.0 {
            if x <= p {
                if p == prev.1 {
                    return s.max(1.0) as u64;
                }
                return (prev.0 + (s - prev.0) * (x - prev.1) / (p - prev.1)).max(1.0) as u64;
            }
            prev = (s, p);
        }
        prev.0.max(1.0) as u64
    }

    /// Mean size, bytes (piecewise linear).
    pub fn mean(&self) -> f64 {
        let mut m = 0.0;
        let mut prev = (0.0, 0.0);
        for &(s, p) in &self.0 {
            m += (p - prev.1) / 100.0 * (s + prev.0) / 2.0;
            prev = (s, p);
        }
        m
    }
}

/// Poisson flow arrivals as HPCC's `traffic_gen.py` makes them: each host starts
/// flows with exponential gaps so that its offered load is `load` of `host_bps`,
/// to a uniformly random other host, sizes from `cdf`, from `start` for
/// `duration`. Deterministic in `seed`; sorted by start time; source ports per
/// (src, dst) pair count up from 10000.
pub fn poisson_flows(
    hosts: &[NodeId],
    cdf: &SizeCdf,
    load: f64,
    host_bps: u64,
    start: Time,
    duration: Time,
    seed: u64,
) -> Vec<FlowSpec> {
    use rand::{RngCore, SeedableRng};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mean_gap_s = cdf.mean() * 8.0 / (load * host_bps as f64);
    let mut flows = Vec::new();
    for (i, &src) in hosts.iter().enumerate() {
        let mut t = 0.0f64;
        loop {
            let u = sim::roce::dcqcn::unit(&mut rng);
            t += -(1.0 - u).ln() * mean_gap_s;
            let at = Time((t * 1e12) as u64);
            if at >= duration {
                break;
            }
            let mut j = (rng.next_u64() % (hosts.len() as u64 - 1)) as usize;
            if j >= i {
                j += 1;
            }
            let size = cdf.sample(sim::roce::dcqcn::unit(&mut rng));
            flows.push(FlowSpec {
                src,
                dst: hosts[j],
                size,
                messages: 1,
                start: start + at,
                sport: 0,
                dport: 100,
            });
        }
    }
    flows.sort_by_key(|f| (f.start, f.src, f.dst));
    let mut next: std::collections::BTreeMap<(u32, u32), u16> = std::collections::BTreeMap::new();
    for f in &mut flows {
        let p = next.entry((f.src.0, f.dst.0)).or_insert(10000);
        f.sport = *p;
        *p = p.wrapping_add(1);
    }
    flows
}

/// Slowdown (FCT over ns-3's standalone FCT, at least 1) of each finished flow,
/// with its size.
pub fn slowdowns(fabric: &Fabric, fct: &[FctRecord], mtu: u32) -> Vec<(u64, f64)> {
    let flat = fabric.freeze();
    fct.iter()
        .map(|r| {
            let (rtt, bn) = path_props(fabric, &flat, node_of_ip(r.sip), node_of_ip(r.dip), mtu);
            let ideal = standalone_fct_ns(r.size, mtu, ROCEV2_HEADERS, rtt, bn).max(1);
            (r.size, (r.fct_ns as f64 / ideal as f64).max(1.0))
        })
        .collect()
}

/// Inverse of [`ethcp::host_ip`].
fn node_of_ip(ip: u32) -> u32 {
    let x = ip - 0x0b00_0001;
    (x >> 16) * 256 + ((x >> 8) & 0xff)
}

/// Round-trip propagation plus one data packet's serialization per hop each way
/// (ns-3's pair RTT), and the slowest link, along a shortest path.
fn path_props(fab: &Fabric, flat: &fabric::FlatFabric, s: u32, d: u32, mtu: u32) -> (u64, u64) {
    let dist = flat.bfs_hops(NodeId(d));
    let mut x = NodeId(s);
    let (mut rtt_ps, mut bottleneck) = (0u64, u64::MAX);
    let mut guard = 0;
    while x.0 != d && guard < 64 {
        guard += 1;
        let Some(a) = flat.neighbors(x).iter().find(|a| dist[a.peer.idx()] < dist[x.idx()]) else {
            break;
        };
        let l = fab.link(a.link);
        let bps = l.rate.data_bps();
        bottleneck = bottleneck.min(bps);
        rtt_ps += 2 * l.delay_ps
            + sim::engine::time::serialization_ps(u64::from(mtu + ROCEV2_HEADERS), bps)
            + sim::engine::time::serialization_ps(u64::from(sim::roce::net::ACK_BYTES), bps);
        x = a.peer;
    }
    (rtt_ps / 1000, if bottleneck == u64::MAX { 1 } else { bottleneck })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/hpcc").join(name)
    }

    /// ns-3's small example copied into a fresh temp dir (`config.txt` beside
    /// `mix/topology.txt` and `mix/flow.txt`, as the config names them), its config
    /// text passed through `edit`. Returns the config's path.
    fn small_example(tag: &str, edit: impl Fn(String) -> String) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("mix")).unwrap();
        for f in ["topology.txt", "flow.txt"] {
            std::fs::copy(testdata(f), dir.join("mix").join(f)).unwrap();
        }
        let cfg = edit(std::fs::read_to_string(testdata("config.txt")).unwrap());
        std::fs::write(dir.join("config.txt"), cfg).unwrap();
        dir.join("config.txt")
    }

    #[test]
    fn websearch_cdf_and_poisson_arrivals() {
        let text = "0 0\n10000 15\n20000 20\n30000 30\n50000 40\n80000 53\n200000 60\n1000000 70\n2000000 80\n5000000 90\n10000000 97\n30000000 100\n";
        let cdf = SizeCdf::parse("ws", text).unwrap();
        assert_eq!(cdf.sample(0.15 - 1e-12), 9_999);
        assert_eq!(cdf.sample(0.075), 5_000);
        let m = cdf.mean();
        // Σ over segments of (share × midpoint) = 1,711,250 B.
        assert!((m - 1_711_250.0).abs() < 1.0, "{m}");
        let hosts: Vec<NodeId> = (0..8).map(NodeId).collect();
        let f = poisson_flows(&hosts, &cdf, 0.3, 100_000_000_000, Time::ZERO, Time::ms(100), 1);
        let bytes: u64 = f.iter().map(|x| x.size).sum();
        let offered = bytes as f64 * 8.0 / 0.1 / (8.0 * 100e9);
        assert!((offered - 0.3).abs() < 0.1, "offered load {offered}");
        assert!(f.windows(2).all(|w| w[0].start <= w[1].start));
        assert!(f.iter().all(|x| x.src != x.dst));
        assert!(SizeCdf::parse("bad", "0 0\n10 50\n").is_err());
    }

    #[test]
    fn ip_numbering_round_trips() {
        for id in [0u32, 5, 255, 256, 319, 1000] {
            assert_eq!(node_of_ip(ethcp::host_ip(id)), id);
        }
    }

    /// The shared 320-host permutation config loads; a 20 µs slice runs with
    /// DCQCN + PFC + ECN and writes both outputs in ns-3's layout.
    #[test]
    fn perm320_config_runs_a_slice_and_writes_outputs() {
        let e = HpccExperiment::load(&testdata("config_dcqcn_perm320.txt")).unwrap();
        assert_eq!(e.fabric.nodes.len(), 376);
        assert_eq!(e.flows.len(), 320);
        assert!(e.warnings.iter().any(|w| w.key == "QLEN_MON_FILE"));
        let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-{}", std::process::id()));
        let (r, sim) = e.run(Some(Time(2_000_020_000_000)), Some(&dir)).unwrap();
        assert_eq!(r.status, "stop time");
        assert!(r.hops > 100_000, "{r:?}");
        assert!(sim.ledger_balances());
        assert_eq!(sim.ledger.lossless_faults(), 0);
        assert!(
            r.wrote.iter().any(|p| p.ends_with("out_fct.txt")) && r.wrote.iter().any(|p| p.ends_with("out_pfc.txt"))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// LINK_DOWN fails the named link at 2 s + t µs; a bad pair is named.
    #[test]
    fn link_down_key_fails_the_link() {
        // Node 1 (the receiver) hangs off switch 0 by link 0–1: fail it 100 µs in.
        let cfg = small_example("ld", |c| {
            c.replace("CC_MODE 3", "CC_MODE 1")
                .replace("LINK_DOWN 0 0 0", "LINK_DOWN 100 0 1")
                .replace("SIMULATOR_STOP_TIME 4.00", "SIMULATOR_STOP_TIME 2.001")
        });
        let dir = cfg.parent().unwrap().to_path_buf();
        let e = HpccExperiment::load(&cfg).unwrap();
        let (r, sim) = e.run(None, None).unwrap();
        assert!(r.dropped.iter().any(|(k, n)| k == "LinkDown" && *n > 0), "{r:?}");
        assert!(sim.ledger_balances());
        let cfg = small_example("ld", |c| {
            c.replace("CC_MODE 3", "CC_MODE 1")
                .replace("LINK_DOWN 0 0 0", "LINK_DOWN 100 2 3")
        });
        let e = HpccExperiment::load(&cfg).unwrap();
        let err = e.run(None, None).unwrap_err().to_string();
        assert!(
            err.contains("LINK_DOWN names nodes 2 and 3") && err.contains("config.txt:"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `CC_MODE 8` runs DCTCP (HPCC ns-3 `HandleAckDctcp`): on ns-3's small
    /// example (two 200 MB flows into one 100G receiver, K 400 KB–1.6 MB at 100G,
    /// EWMA_GAIN 1/256, DCTCP_RATE_AI 1 Gb/s) the receivers' ACKs echo CE, both
    /// senders cut their rates, they share the link evenly, and nothing is
    /// named unsupported about CC_MODE.
    #[test]
    fn cc_mode_8_runs_dctcp() {
        let cfg = small_example("dctcp", |c| {
            c.replace("CC_MODE 3", "CC_MODE 8")
                .replace("SIMULATOR_STOP_TIME 4.00", "SIMULATOR_STOP_TIME 2.003")
        });
        let dir = cfg.parent().unwrap().to_path_buf();
        let e = HpccExperiment::load(&cfg).unwrap();
        assert!(!e.warnings.iter().any(|w| w.key == "CC_MODE"), "{:?}", e.warnings);
        assert!(matches!(e.roce.nic.cc, CongestionControl::Dctcp(_)));
        let (r, sim) = e.run(None, None).unwrap();
        assert_eq!(r.status, "stop time", "{r:?}");
        let c: Vec<_> = (0..2).map(|k| sim.flow_dctcp(k).unwrap()).collect();
        let rate: Vec<f64> = (0..2).map(|k| sim.flow_rate(k).unwrap()).collect();
        let got: Vec<f64> = (0..2).map(|k| sim.flow_delivered(k) as f64).collect();
        let jain = (got[0] + got[1]).powi(2) / (2.0 * (got[0] * got[0] + got[1] * got[1]));
        eprintln!("DCTCP 2:1 at 100G over 3 ms: {c:?}, rates {rate:?} b/s, delivered {got:?} B, Jain {jain:.4}");
        for k in 0..2 {
            assert!(c[k].echoes > 0 && c[k].cuts > 0 && c[k].windows > 0, "{c:?}");
            assert!(rate[k] < 100e9, "{rate:?}");
        }
        assert!(jain > 0.95, "{jain}");
        // Together they keep the receiver's link busy: > 90% of 3 ms at 100G.
        assert!(got[0] + got[1] > 0.9 * 100e9 / 8.0 * 3e-3, "{got:?}");
        assert!(sim.ledger_balances());
        assert_eq!(sim.ledger.lossless_faults(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// ns-3's small example under `mode`, stopped at 2.003 s: (mean queue at the
    /// bottleneck (switch 0 → host 1) sampled every µs over 2.0005–2.003 s,
    /// bottleneck utilisation then, bytes delivered per flow then, the sim).
    fn small_2to1(mode: &str, tag: &str) -> (f64, f64, [f64; 2], RoceSim, Vec<Warning>) {
        let cfg = small_example(tag, |c| c.replace("CC_MODE 3", mode));
        let e = HpccExperiment::load(&cfg).unwrap();
        let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
        let mut sim = RoceSim::new(&e.fabric, e.roce.clone(), &e.flow_specs()).unwrap();
        let l = e.fabric.links.iter().find(|l| l.b.node.0 == 1).expect("link 0-1");
        let (sw, port) = (l.a.node, l.a.port);
        let t0 = Time(2_000_500_000_000);
        let t1 = Time(2_003_000_000_000);
        sim.run(t0);
        let (tx0, d0) = (sim.tx_bytes(sw, port), [sim.flow_delivered(0), sim.flow_delivered(1)]);
        let (mut sum, mut n) = (0u64, 0u64);
        let mut t = t0;
        while t < t1 {
            t += Time::us(1);
            sim.run(t);
            sum += sim.egress_queue_bytes(sw, port);
            n += 1;
        }
        let util = (sim.tx_bytes(sw, port) - tx0) as f64 * 8.0 / (100e9 * (t1 - t0).0 as f64 * 1e-12);
        let got = [0, 1].map(|k| (sim.flow_delivered(k) - d0[k]) as f64);
        (sum as f64 / n as f64, util, got, sim, e.warnings)
    }

    /// `CC_MODE 3` runs HPCC (INT at switch egress, ns-3 `HandleAckHp`): on
    /// ns-3's small example (two 200 MB flows into one 100G receiver) the
    /// bottleneck queue stays near empty — far below DCQCN's on the same run —
    /// while the link stays ≥ 90% busy and the two flows share it evenly.
    #[test]
    fn cc_mode_3_runs_hpcc_with_near_empty_queues() {
        let (q_hp, u_hp, got, sim, w) = small_2to1("CC_MODE 3", "hp");
        let (q_dc, u_dc, _, _, _) = small_2to1("CC_MODE 1", "dc");
        let c: Vec<_> = (0..2).map(|k| sim.flow_hpcc(k).unwrap()).collect();
        let rate: Vec<f64> = (0..2).map(|k| sim.flow_rate(k).unwrap()).collect();
        let jain = (got[0] + got[1]).powi(2) / (2.0 * (got[0] * got[0] + got[1] * got[1]));
        eprintln!(
            "2:1 at 100G, 2.0005-2.003 s: HPCC mean queue {q_hp:.0} B, util {u_hp:.4}, Jain {jain:.4}, \
             rates {rate:?}, {c:?}; DCQCN mean queue {q_dc:.0} B, util {u_dc:.4}"
        );
        assert!(!w.iter().any(|w| w.key == "CC_MODE"), "{w:?}");
        assert!(!w.iter().any(|w| w.key == "HAS_WIN" || w.key == "VAR_WIN"), "{w:?}");
        for k in 0..2 {
            assert!(
                c[k].updates > 100 && c[k].fast > 100 && c[k].multiplicative > 0,
                "{c:?}"
            );
            assert!(rate[k] < 100e9, "{rate:?}");
        }
        assert!(q_hp * 10.0 < q_dc, "HPCC {q_hp} B vs DCQCN {q_dc} B");
        assert!(q_hp < 50_000.0, "{q_hp}");
        assert!(u_hp >= 0.9, "{u_hp}");
        assert!(jain > 0.95, "{jain}");
        assert!(sim.ledger_balances());
        assert_eq!(sim.ledger.lossless_faults(), 0);
        assert_eq!(sim.int_overflow(), 0);
        // Every INT header belongs to a packet still in flight.
        assert!(
            sim.int_live() as u64 <= sim.in_flight(),
            "{} > {}",
            sim.int_live(),
            sim.in_flight()
        );
    }

    /// The start of the same run, every 25 µs from 2.000 s (the table in
    /// docs/VALIDATION.md §7): both flows start at line rate; HPCC's first
    /// full-RTT updates cut them by the measured utilisation, so at every sample
    /// the queue holds at most two packets, where DCQCN's (which waits for ECN
    /// marks past Kmin = 400 KB) peaks above 500 KB before its cuts drain it.
    #[test]
    fn hpcc_start_drains_the_incast_queue() {
        let mut series = Vec::new();
        for mode in ["CC_MODE 3", "CC_MODE 1"] {
            let cfg = small_example(&format!("ser{}", &mode[8..]), |c| c.replace("CC_MODE 3", mode));
            let e = HpccExperiment::load(&cfg).unwrap();
            let _ = std::fs::remove_dir_all(cfg.parent().unwrap());
            let mut sim = RoceSim::new(&e.fabric, e.roce.clone(), &e.flow_specs()).unwrap();
            let l = e.fabric.links.iter().find(|l| l.b.node.0 == 1).expect("link 0-1");
            let mut rows = Vec::new();
            for k in 1..=20u64 {
                sim.run(Time(2_000_000_000_000 + k * 25_000_000));
                rows.push((
                    k * 25,
                    sim.egress_queue_bytes(l.a.node, l.a.port),
                    sim.flow_rate(0).unwrap_or(0.0) / 1e9,
                    sim.flow_rate(1).unwrap_or(0.0) / 1e9,
                ));
            }
            series.push(rows);
        }
        eprintln!("| µs after 2 s | HPCC queue (B) | HPCC rates (Gb/s) | DCQCN queue (B) | DCQCN rates (Gb/s) |");
        for (h, d) in series[0].iter().zip(&series[1]) {
            eprintln!(
                "| {} | {} | {:.1} / {:.1} | {} | {:.1} / {:.1} |",
                h.0, h.1, h.2, h.3, d.1, d.2, d.3
            );
        }
        let peak = |s: &Vec<(u64, u64, f64, f64)>| s.iter().map(|r| r.1).max().unwrap();
        assert!(peak(&series[0]) <= 2 * 1104, "{:?}", series[0]);
        assert!(peak(&series[1]) > 500_000, "{:?}", series[1]);
        // HPCC settles near η = 0.95 of the link from the first samples on (the
        // pacing rates; the windows hold what is in flight to the BDP).
        for r in &series[0] {
            assert!((85.0..=105.0).contains(&(r.2 + r.3)), "{r:?}");
        }
    }

    /// A late flow converges to a fair share: flow 2 → 1 holds the link alone for
    /// 500 µs, flow 3 → 1 joins at line rate; over the last millisecond of 3
    /// the shares are even to Jain > 0.99 (measured 0.997: 5.09 vs 5.68 MB, the
    /// gap closing at R_AI = 50 Mb/s per RTT), the link stays ≥ 90% busy, and
    /// the queue peaks at about one BDP when the new flow joins (56 KB).
    #[test]
    fn hpcc_late_flow_converges_to_fair_share() {
        let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-late-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("mix")).unwrap();
        std::fs::copy(testdata("topology.txt"), dir.join("mix/topology.txt")).unwrap();
        std::fs::write(
            dir.join("mix/flow.txt"),
            "2\n2 1 3 100 200000000 2\n3 1 3 100 200000000 2.0005\n",
        )
        .unwrap();
        std::fs::copy(testdata("config.txt"), dir.join("config.txt")).unwrap();
        let e = HpccExperiment::load(&dir.join("config.txt")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let mut sim = RoceSim::new(&e.fabric, e.roce.clone(), &e.flow_specs()).unwrap();
        let l = e.fabric.links.iter().find(|l| l.b.node.0 == 1).expect("link 0-1");
        let mut peak = 0;
        let mut t = Time(2_000_000_000_000);
        let mut mark = None;
        while t < Time(2_003_000_000_000) {
            t += Time::us(1);
            sim.run(t);
            peak = peak.max(sim.egress_queue_bytes(l.a.node, l.a.port));
            if t == Time(2_002_000_000_000) {
                mark = Some(([0, 1].map(|k| sim.flow_delivered(k)), sim.tx_bytes(l.a.node, l.a.port)));
            }
        }
        let (d0, tx0) = mark.unwrap();
        let got = [0, 1].map(|k| (sim.flow_delivered(k) - d0[k]) as f64);
        let util = (sim.tx_bytes(l.a.node, l.a.port) - tx0) as f64 * 8.0 / (100e9 * 1e-3);
        let jain = (got[0] + got[1]).powi(2) / (2.0 * (got[0] * got[0] + got[1] * got[1]));
        eprintln!("late flow, 2.002-2.003 s: delivered {got:?} B, Jain {jain:.4}, util {util:.4}, peak queue {peak} B");
        assert!(jain > 0.99, "{jain} {got:?}");
        assert!(util >= 0.9, "{util}");
        assert!(peak < 200_000, "{peak}");
        assert!(sim.ledger_balances());
    }

    /// On the paper's fat tree the INT header holds exactly the data path's
    /// switches: 1 under one ToR, 5 across the core (ToR, agg, core, agg, ToR);
    /// the ACK's reverse path adds and overwrites nothing (`HpccRp::on_ack`
    /// checks, in debug builds, that the records are in path order).
    #[test]
    fn int_records_the_data_path_only() {
        let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-int-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(testdata("fat.txt"), dir.join("fat.txt")).unwrap();
        std::fs::write(
            dir.join("flow_perm320.txt"),
            "2\n0 1 3 100 1000000 2\n2 319 3 100 1000000 2\n",
        )
        .unwrap();
        let cfg = std::fs::read_to_string(testdata("config_dcqcn_perm320.txt"))
            .unwrap()
            .replace("CC_MODE 1", "CC_MODE 3");
        std::fs::write(dir.join("c.txt"), cfg).unwrap();
        let e = HpccExperiment::load(&dir.join("c.txt")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let mut sim = RoceSim::new(&e.fabric, e.roce.clone(), &e.flow_specs()).unwrap();
        sim.run(Time(2_000_030_000_000));
        let c: Vec<_> = (0..2).map(|k| sim.flow_hpcc(k).unwrap()).collect();
        assert_eq!((c[0].hops, c[1].hops), (1, 5), "{c:?}");
        assert!(c[0].updates > 0 && c[1].updates > 0, "{c:?}");
        assert!(sim.ledger_balances());
    }

    /// Asked for threads on a run the split does not cover yet (a LINK_DOWN),
    /// the experiment runs on one thread and its report says why.
    #[test]
    fn threads_on_a_run_the_split_does_not_cover_are_named() {
        let dir = std::env::temp_dir().join(format!("rdmalab-hpcc-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(testdata("fat.txt"), dir.join("fat.txt")).unwrap();
        std::fs::write(dir.join("flow_perm320.txt"), "1\n0 1 3 100 1000000 2\n").unwrap();
        let cfg = std::fs::read_to_string(testdata("config_dcqcn_perm320.txt"))
            .unwrap()
            .replace("LINK_DOWN 0 0 0", "LINK_DOWN 1000 0 320");
        std::fs::write(dir.join("c.txt"), cfg).unwrap();
        let mut e = HpccExperiment::load(&dir.join("c.txt")).unwrap();
        e.threads = 2;
        let (r, sim) = e.run(Some(Time(2_000_010_000_000)), Some(&dir)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(r.threads, 1);
        assert_eq!(sim.why_one_thread(), Some("the split does not cover link failures yet"));
        assert!(
            r.warnings
                .iter()
                .any(|w| w == "2 threads asked, the run used one: the split does not cover link failures yet"),
            "{:?}",
            r.warnings
        );
    }

    /// HPCC runs repeat: the same config gives the same event trace.
    #[test]
    fn hpcc_is_deterministic() {
        let a = small_2to1("CC_MODE 3", "det1").3;
        let b = small_2to1("CC_MODE 3", "det2").3;
        assert_eq!(a.trace_hash(), b.trace_hash());
        assert_eq!(a.events, b.events);
    }

    /// third.cc's T for the small example: 2 × 2 µs of cable + 2 × 80 ns (1000
    /// bytes at 100G).
    #[test]
    fn base_rtt_is_third_cc_max_pair_rtt() {
        let f = fabric::format::read_hpcc("t", &std::fs::read_to_string(testdata("topology.txt")).unwrap()).unwrap();
        assert_eq!(max_rtt(&f, 1000), Time(4_000_000 + 160_000));
    }

    /// ns-3's own small example (`mix/topology.txt`, `mix/flow.txt`): its flow
    /// file declares 2 flows and has 4 lines (warned), it runs to completion under
    /// DCQCN, and fct.txt has ns-3's 8 columns.
    #[test]
    fn small_example_runs_to_completion_and_fct_is_ns3_shaped() {
        // config.txt itself names mix/… paths: the error names the missing file.
        let e = HpccExperiment::load(&testdata("config.txt")).unwrap_err();
        assert!(e.to_string().contains("mix/topology.txt"), "{e}");
        let cfg = small_example("small", |c| c.replace("CC_MODE 3", "CC_MODE 1"));
        let dir = cfg.parent().unwrap().to_path_buf();
        let e = HpccExperiment::load(&cfg).unwrap();
        assert!(e.warnings.iter().any(|w| w.key == "flow count"), "{:?}", e.warnings);
        let (r, sim) = e.run(None, None).unwrap();
        assert_eq!(r.status, "done", "{r:?}");
        assert_eq!(r.finished, 2);
        let fct = std::fs::read_to_string(dir.join("mix/fct.txt")).unwrap();
        for line in fct.lines() {
            let cols: Vec<&str> = line.split(' ').collect();
            assert_eq!(cols.len(), 8, "{line}");
            assert_eq!(cols[0].len(), 8);
            let (fct_ns, ideal): (u64, u64) = (cols[6].parse().unwrap(), cols[7].parse().unwrap());
            assert!(fct_ns >= ideal && ideal > 0, "{line}");
        }
        assert!(sim.ledger_balances());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
