//! Speed run of the RoCE model on an ns-3 HPCC experiment: the config's
//! topology and flows, DCQCN + PFC + ECN, for a slice of simulated time.
//!
//! `cargo run --release -p rdmalab-sim --example roce_hpcc -- CONFIG [US]`
//! (default: the copy of `../shared/formats/hpcc/config_dcqcn_perm320.txt` in
//! `src/roce/testdata/hpcc`, 500 µs after the
//! first flow starts). Prints the report as JSON plus the speed figures; outputs
//! go to a temporary directory.

use std::path::PathBuf;

use sim::Time;
use sim::roce::hpcc_run::HpccExperiment;

fn main() {
    let mut args = std::env::args().skip(1);
    let cfg = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/roce/testdata/hpcc/config_dcqcn_perm320.txt"
        ))
    });
    let us: u64 = args.next().map_or(500, |s| s.parse().expect("microseconds"));
    let e = match HpccExperiment::load(&cfg) {
        Ok(e) => e,
        Err(err) => {
            eprintln!("roce_hpcc: {err}");
            std::process::exit(2);
        }
    };
    let first = e.flows.iter().map(|f| f.start).min().unwrap_or(Time::ZERO);
    let out = std::env::temp_dir().join(format!("rdmalab-roce-hpcc-{}", std::process::id()));
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
    let _ = std::fs::remove_dir_all(&out);
}
