//! HPCC paper reproduction (SIGCOMM'19 §5; shared simulators reference §3.2):
//! the 320-host fat tree (`fat.txt`), WebSearch flow sizes, Poisson arrivals at
//! 30% load, DCQCN with the `run.py --cc dcqcn` settings of
//! `config_dcqcn_perm320.txt`; prints FCT slowdown percentiles per size bucket.
//!
//! `cargo run --release -p rdmalab-ns3 --example roce_websearch -- [ARRIVAL_MS] [LOAD] [SEED]`
//! (defaults 5 ms, 0.3, 1). Flows arrive for ARRIVAL_MS and the run continues for
//! as long again; only flows that finished count (as fct_analysis.py does).

use std::path::PathBuf;

use fabric::NodeKind;
use ns3::run::{HpccExperiment, SizeCdf, poisson_flows, slowdowns};
use sim::Time;
use sim::roce::net::RoceSim;

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ms: u64 = args.next().map_or(5, |s| s.parse().expect("milliseconds"));
    let load: f64 = args.next().map_or(0.3, |s| s.parse().expect("load"));
    let seed: u64 = args.next().map_or(1, |s| s.parse().expect("seed"));
    // The reference folder: $RDMALAB_REFERENCE_DIR, else `../shared` beside the
    // repository (its hpcc/ and workloads/ formats).
    let shared = std::env::var_os("RDMALAB_REFERENCE_DIR")
        .map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
            PathBuf::from,
        )
        .join("formats");
    if !shared.join("workloads/WebSearch_distribution.txt").exists() {
        eprintln!(
            "roce_websearch: {} has no workloads/WebSearch_distribution.txt; set RDMALAB_REFERENCE_DIR to the shared reference folder",
            shared.display()
        );
        std::process::exit(2);
    }
    let e = HpccExperiment::load(&shared.join("hpcc/config_dcqcn_perm320.txt")).expect("config");
    let cdf_text = std::fs::read_to_string(shared.join("workloads/WebSearch_distribution.txt")).expect("cdf");
    let cdf = SizeCdf::parse("WebSearch_distribution.txt", &cdf_text).expect("cdf");
    let hosts: Vec<_> = e
        .fabric
        .node_ids()
        .filter(|&n| e.fabric.node(n).kind == NodeKind::Ca)
        .collect();
    let start = Time::ms(2000);
    let flows = poisson_flows(&hosts, &cdf, load, 100_000_000_000, start, Time::ms(ms), seed);
    let mut sim = RoceSim::new(&e.fabric, e.roce.clone(), &flows).expect("build");
    let t0 = std::time::Instant::now();
    let st = sim.run(start + Time::ms(2 * ms));
    let wall = t0.elapsed().as_secs_f64();
    let sd = slowdowns(&e.fabric, &sim.fct, e.roce.nic.mtu);
    println!(
        "{} flows arrived in {ms} ms at load {load}; {} finished by {} ({st:?}); {} events, {} hops in {wall:.1} s; drops {:?}; pause transitions {}",
        flows.len(),
        sd.len(),
        sim.now(),
        sim.events,
        sim.hops(),
        sim.ledger.dropped,
        sim.pfc.len()
    );
    let buckets: [(&str, u64, u64); 4] = [
        ("< 3 KB", 0, 3_000),
        ("3-100 KB", 3_000, 100_000),
        ("100 KB-1 MB", 100_000, 1_000_000),
        (">= 1 MB", 1_000_000, u64::MAX),
    ];
    for (name, lo, hi) in buckets {
        let mut v: Vec<f64> = sd.iter().filter(|x| x.0 >= lo && x.0 < hi).map(|x| x.1).collect();
        let n = v.len();
        println!(
            "{name:>12}: {n:5} flows, slowdown p50 {:.2} p95 {:.2} p99 {:.2}",
            pct(&mut v, 0.5),
            pct(&mut v, 0.95),
            pct(&mut v, 0.99)
        );
    }
}
