//! The speed benchmark: `examples/sim/ft432-permutation-ib.toml` as `rdmalab sim
//! run` runs it — a 432-host 3-tier fat tree (k = 12) at 100 Gb/s, routed by the
//! SM's ftree engine, running htsim's 432-host permutation connection matrix
//! (examples/sim/perm_432.cm) for 10 ms of simulated time, as
//! `htsim_roce -nodes 432 -tm perm_432.cm -linkspeed 100000 -end 10000`.
//!
//! `cargo bench -p rdmalab-sim --bench ft432 [-- END_US]` prints packet-link hops
//! per wall second and per CPU second of the simulating thread, events per
//! second, the trace hash and peak memory (VmHWM). `FT432_SCENARIO=path.toml`
//! runs another scenario with an htsim or permutation workload; `FT432_WATCHDOG_PS=0`
//! turns the periodic deadlock check off (it still runs if the event queue drains
//! with packets buffered).

use std::time::Instant;

use sim::scenario::{FabricSpec, Scenario, WorkloadSpec};
use sm::run::{RunOptions, run};

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time of this thread in nanoseconds (/proc/thread-self/schedstat, field 1):
/// on a shared machine the wall clock also counts time other processes took.
fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() {
    let end_us: Option<u64> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok());
    let path = std::env::var("FT432_SCENARIO").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/sim/ft432-permutation-ib.toml"
        )
        .to_string()
    });
    let mut sc = Scenario::load(std::path::Path::new(&path)).expect("scenario");
    if let Some(e) = end_us {
        match &mut sc.workload {
            WorkloadSpec::Htsim { end_us, .. } | WorkloadSpec::Permutation { end_us, .. } => *end_us = e,
            _ => panic!("{path}: the bench takes htsim or permutation workloads"),
        }
    }
    if let Some(v) = std::env::var("FT432_WATCHDOG_PS").ok().and_then(|v| v.parse().ok()) {
        sc.engine.deadlock_check_ps = v;
    }
    let FabricSpec::FatTree3 {
        radix,
        pods,
        hosts_per_leaf,
        rate,
        cable_m,
    } = &sc.fabric
    else {
        panic!("{path}: the bench takes a fat-tree3 fabric");
    };
    let f = fabric::fat_tree3(&fabric::FatTree3Params {
        radix: *radix,
        pods: *pods,
        hosts_per_leaf: *hosts_per_leaf,
        rate: sc.link_rate_of(rate).expect("rate"),
        cabling: cable_m.map_or_else(fabric::Cabling::default, |c| fabric::Cabling {
            host_leaf_m: c.host_leaf,
            leaf_spine_m: c.leaf_spine,
            spine_core_m: c.spine_core,
        }),
    })
    .expect("fat tree");
    let ro = RunOptions {
        engines: sc.routing.engines.clone(),
        lmc: sc.routing.lmc,
        validate: false,
        ..RunOptions::default()
    };
    let (tables, _) = run(&f, &ro).expect("routes");
    let cpu0 = thread_cpu_ns().unwrap_or(0);
    let wall = Instant::now();
    let (out, sim) = sim::scenario::run(&sc, &f, &tables, None, &mut |_| {}).expect("run");
    let secs = wall.elapsed().as_secs_f64();
    let cpu = (thread_cpu_ns().unwrap_or(0) - cpu0) as f64 / 1e9;
    let s = &out.summary;
    sim.check_ledger().expect("ledger");
    let audit = sim.audit();
    assert!(audit.is_empty(), "{audit:?}");
    println!(
        "{}, {} us simulated",
        sc.display_name(),
        sc.end().map_or(0, |t| t.as_ps() / 1_000_000)
    );
    println!("  wall time            {secs:.3} s");
    println!(
        "  packet-link hops     {}  ({:.2} M/s)",
        s.packet_link_hops,
        s.packet_link_hops as f64 / secs / 1e6
    );
    println!(
        "  events               {}  ({:.2} M/s, {:.3} per hop)",
        s.events,
        s.events as f64 / secs / 1e6,
        s.events as f64 / s.packet_link_hops.max(1) as f64
    );
    println!(
        "  cpu time             {cpu:.3} s  ({:.2} M hops/cpu-s, {:.2} M events/cpu-s)",
        s.packet_link_hops as f64 / cpu / 1e6,
        s.events as f64 / cpu / 1e6
    );
    println!("  payload delivered    {} bytes", s.payload_delivered_bytes);
    println!("  stale wakes {}  idle looks {}", s.stale_wakes, s.idle_looks);
    println!("  drops                {}", s.packets_dropped);
    println!("  trace hash           {}", s.trace_hash);
    println!("  peak packets         {}", s.peak_packets_in_flight);
    println!("  peak RSS             {} KiB", peak_rss_kib().unwrap_or(0));
}
