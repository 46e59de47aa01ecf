//! Speed run of the RoCE model on an ns-3 HPCC experiment: the config's
//! topology and flows, DCQCN + PFC + ECN, for a slice of simulated time.
//!
//! `cargo run --release -p rdmalab-ns3 --example roce_hpcc -- CONFIG [US]`
//! (`RDMALAB_THREADS=N` splits the run over N threads: same results)
//! (default: the copy of `../shared/formats/hpcc/config_dcqcn_perm320.txt` in
//! `crates/ns3/testdata/hpcc`, 500 µs after the
//! first flow starts). Prints the report as JSON plus the speed figures; outputs
//! go to a temporary directory, or to `OUTDIR` (kept) when a third argument names one.
//!
//! Besides the event-trace hash it prints a digest of every result the model
//! reports (fct and pfc records, the ledger, ECN marks, CNPs, and per flow the
//! bytes delivered, the requester counters and the current rate): a speed change
//! that reorders events on purpose must leave this digest unchanged.

use std::path::PathBuf;

use ns3::run::HpccExperiment;
use sim::Time;

fn main() {
    let mut args = std::env::args().skip(1);
    let cfg = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/testdata/hpcc/config_dcqcn_perm320.txt"
        ))
    });
    let us: u64 = match args.next().map(|s| s.parse::<u64>()) {
        None => 500,
        Some(Ok(us)) => us,
        Some(Err(err)) => {
            eprintln!("roce_hpcc: the second argument is the simulated time in microseconds (a whole number): {err}");
            std::process::exit(2);
        }
    };
    let mut e = match HpccExperiment::load(&cfg) {
        Ok(e) => e,
        Err(err) => {
            eprintln!("roce_hpcc: {err}");
            std::process::exit(2);
        }
    };
    e.threads = match std::env::var("RDMALAB_THREADS") {
        Err(_) => 1,
        Ok(v) => match v.parse::<usize>() {
            Ok(n) if n >= 1 => n,
            _ => {
                eprintln!("roce_hpcc: RDMALAB_THREADS is a number of threads, 1 or more (got {v:?})");
                std::process::exit(2);
            }
        },
    };
    let first = e.flows.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
    let keep = args.next().map(PathBuf::from);
    let out = keep
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("rdmalab-roce-hpcc-{}", std::process::id())));
    let (r, sim) = e.run(Some(first + Time::us(us)), Some(&out)).expect("run");
    println!("{}", serde_json::to_string_pretty(&r).expect("json"));
    println!(
        "simulated {:.1} µs in {:.2} s wall: {:.1} µs/s, {:.2} M events/s, {:.2} M hops/s; ledger balances: {}; trace {:016x}",
        r.simulated_us,
        r.wall_s,
        r.simulated_us / r.wall_s,
        r.events as f64 / r.wall_s / 1e6,
        r.hops as f64 / r.wall_s / 1e6,
        sim.ledger_balances(),
        sim.trace_hash()
    );
    println!("results {:016x}", results_digest(&sim, e.flows.len()));
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// FNV-1a over the model's reported results (see the module doc).
fn results_digest(sim: &sim::roce::net::RoceSim, flows: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut put = |w: u64| {
        for b in w.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    put(sim.ledger.created);
    put(sim.ledger.delivered);
    sim.ledger
        .dropped
        .iter()
        .chain(&sim.ledger.dropped_lossless)
        .for_each(|&d| put(d));
    put(sim.ecn_marks);
    put(sim.cnps_sent);
    put(sim.in_flight());
    for r in &sim.fct {
        put(u64::from(r.sip));
        put(u64::from(r.dip));
        put(r.fct_ns);
    }
    for r in &sim.pfc {
        put(r.time_ns);
        put(u64::from(r.node));
        put(u64::from(r.if_index));
        put(u64::from(r.pause));
    }
    for k in 0..flows {
        let c = sim.flow_counters(k);
        put(sim.flow_delivered(k));
        put(c.sent);
        put(c.retransmitted);
        put(c.naks);
        put(c.timeouts);
        put(c.completed);
        put(sim.flow_rate(k).map_or(0, f64::to_bits));
    }
    put(sim.hops());
    h
}
