//! The speed benchmark: a 432-host 3-tier fat tree (k = 12) at 100 Gb/s running
//! htsim's 432-host permutation connection matrix (examples/sim/perm_432.cm) for
//! 10 ms of simulated time, as `htsim_roce -nodes 432 -tm perm_432.cm -end 10000`.
//!
//! `cargo bench -p rdmalab-sim --bench ft432 [-- END_US]` prints packet-link hops
//! per wall second, events per second and peak memory (VmHWM).

use std::time::Instant;

use fabric::{FatTree3Params, LinkRate, fat_tree3};
use sim::testutil::{Tie, bfs_routes, cas};
use sim::workload::{parse_connection_matrix, run_matrix};
use sim::{EngineConfig, IbConfig, Sim, Time};

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
    let end_us: u64 = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/sim/perm_432.cm");
    let text = std::fs::read_to_string(root).expect("examples/sim/perm_432.cm");
    let m = parse_connection_matrix(&text, root).expect("connection matrix");
    let f = fat_tree3(&FatTree3Params {
        radix: 12,
        rate: LinkRate::EDR_4X,
        ..FatTree3Params::default()
    })
    .expect("fat tree");
    let t = bfs_routes(&f, Tie::SpreadByLid);
    let hosts = cas(&f);
    assert_eq!(hosts.len(), 432);
    // FT432_WATCHDOG_PS=0 turns the periodic deadlock check off (it still runs if
    // the event queue drains with packets buffered).
    let mut eng = EngineConfig::default();
    if let Some(v) = std::env::var("FT432_WATCHDOG_PS").ok().and_then(|v| v.parse().ok()) {
        eng.deadlock_check_ps = v;
    }
    let mut sim = Sim::new(&f, &t, IbConfig::default(), eng).expect("sim");
    let cpu0 = thread_cpu_ns().unwrap_or(0);
    let wall = Instant::now();
    let r = run_matrix(&mut sim, &hosts, &m, Time::us(end_us), &mut |_| {}).expect("run");
    let secs = wall.elapsed().as_secs_f64();
    let cpu = (thread_cpu_ns().unwrap_or(0) - cpu0) as f64 / 1e9;
    let s = sim.summary();
    sim.check_ledger().expect("ledger");
    let audit = sim.audit();
    assert!(audit.is_empty(), "{audit:?}");
    println!("ft432 permutation, {end_us} us simulated");
    println!("  wall time            {secs:.3} s");
    println!(
        "  packet-link hops     {}  ({:.2} M/s)",
        s.packet_link_hops,
        s.packet_link_hops as f64 / secs / 1e6
    );
    println!(
        "  events               {}  ({:.2} M/s)",
        s.events,
        s.events as f64 / secs / 1e6
    );
    println!(
        "  cpu time             {cpu:.3} s  ({:.2} M hops/cpu-s, {:.2} M events/cpu-s)",
        s.packet_link_hops as f64 / cpu / 1e6,
        s.events as f64 / cpu / 1e6
    );
    println!(
        "  payload delivered    {} bytes, aggregate goodput {:.1} Gb/s",
        s.payload_delivered_bytes,
        r.aggregate_goodput_bps / 1e9
    );
    println!("  stale wakes {}  idle looks {}", s.stale_wakes, s.idle_looks);
    println!("  drops                {}", s.packets_dropped);
    println!("  trace hash           {}", s.trace_hash);
    println!("  peak packets         {}", s.peak_packets_in_flight);
    if std::env::var_os("FT432_PORTS").is_some() {
        let mut hist = [0u32; 11];
        for p in sim.port_reports() {
            hist[(p.utilisation * 10.0) as usize] += 1;
        }
        println!("  port utilisation deciles {hist:?}");
        let g: Vec<f64> = r.flows.iter().map(|f| f.goodput_bps / 1e9).collect();
        let mut gs = g.clone();
        gs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "  flow goodput Gb/s min {:.1} p50 {:.1} max {:.1}",
            gs[0],
            gs[gs.len() / 2],
            gs[gs.len() - 1]
        );
    }
    println!("  peak RSS             {} KiB", peak_rss_kib().unwrap_or(0));
}
